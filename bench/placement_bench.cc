// The placement benchmark (make bench-placement; docs/placement-benchmark.md):
// seeded fleets placed by kube-scheduler's default scoring alone ("default")
// and combined with the real extender fed by the real agent simulator
// ("neighborly"), judged by a ground-truth interference model of the
// benchmark's own. Prints per fleet and mode the latency-critical pods slowed
// more than 1.2x and 1.5x, their p99 and worst slowdown, batch slowdown, pods
// left Pending, TopologyAffinityErrors and CPU requested.
//
//   build/default/bench/placement_bench                  # fleets of seeds 1, 2, 3
//   build/default/bench/placement_bench --fleets 5 --seed 10 --report-interval 1
//   build/default/bench/placement_bench --perturb        # conclusions under moved parameters
//   build/default/bench/placement_bench --json
//   build/default/bench/placement_bench --extender-config my-extender.yaml   # another model config
//   build/default/bench/placement_bench --pods       # every pod, where each mode put it
//   build/default/bench/placement_bench --oracle     # also the ground truth as the extender
//   build/default/bench/placement_bench --calibrate  # the extender's predictions against the truth
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/fleet/fleet_sim.h"

namespace neighborly::fleet {
namespace {

struct Flags {
  int fleets = 3;
  uint64_t seed = 1;
  int arrivals = 0;  // 0: per fleet, 210..300
  bool scale_ups = false;  // MixOptions::scale_ups
  double report_interval_s = 5;
  double measurement_noise = 0.05;
  bool perturb = false;
  bool json = false;
  bool pods = false;    // also every pod's outcome
  bool oracle = false;  // also the ground truth as the extender
  bool calibrate = false;  // the extender's per-candidate predictions against the truth
  bool diagnose = false;   // where each mode's victims come from
  // Fleets sized so that this share of their CPU is requested at the end.
  double cpu_target_min = 0.7, cpu_target_max = 0.9;
  std::string extender_config;
  WhatIf what_if;            // --what-if: the Neighborly mode with parts of the truth
  std::string what_if_text;  // as given, for the header
};

// --what-if's comma-separated levers into `w`; the error, or empty.
std::string ParseWhatIf(const std::string& text, WhatIf& w) {
  if (text.empty()) return "--what-if needs a lever";
  for (const std::string& lever : std::vector<std::string>(absl::StrSplit(text, ','))) {
    if (lever == "oracle-filter") {
      w.oracle_filter = OracleFilter::kAll;
    } else if (lever == "oracle-filter-annotated") {
      w.oracle_filter = OracleFilter::kAnnotated;
    } else if (lever == "oracle-filter-residents") {
      w.oracle_filter = OracleFilter::kResidents;
    } else if (lever == "oracle-filter-incoming") {
      w.oracle_filter = OracleFilter::kIncoming;
    } else if (lever == "oracle-scores") {
      w.oracle_scores = true;
    } else if (lever == "exact-bookings") {
      w.exact_bookings = true;
    } else if (lever == "instant-telemetry") {
      w.instant_telemetry = true;
    } else if (lever == "true-footprints") {
      w.true_footprints = true;
    } else if (lever == "blind-incoming") {
      w.blind_incoming = true;
    } else {
      return absl::StrCat("--what-if: unknown lever \"", lever, "\"");
    }
  }
  if (w.blind_incoming && w.oracle_filter == OracleFilter::kNone && !w.oracle_scores) {
    return "--what-if: blind-incoming changes the oracle levers: name oracle-filter or oracle-scores too";
  }
  return std::string();
}

int Usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "placement_bench: %s\n", error.c_str());
  std::fprintf(stderr,
               "usage: placement_bench [--fleets N] [--seed S] [--arrivals N] "
               "[--report-interval SECONDS] [--measurement-noise SHARE] [--perturb] [--json] "
               "[--pods] [--oracle] [--calibrate] [--diagnose] [--cpu-target LO-HI] "
               "[--extender-config FILE] [--what-if LEVER[,LEVER...]] [--scale-ups]\n"
               "  levers (the Neighborly mode with one part taken from the ground truth):\n"
               "  oracle-filter, oracle-filter-annotated, oracle-filter-residents,\n"
               "  oracle-filter-incoming, oracle-scores, exact-bookings, instant-telemetry,\n"
               "  true-footprints, blind-incoming (with the oracle levers)\n");
  return 2;
}

// A ground-truth variation of --perturb.
struct Variant {
  std::string name;
  GroundTruthParams params;
};

std::vector<Variant> Variants(bool perturb) {
  std::vector<Variant> out = {{"base", {}}};
  if (!perturb) return out;
  auto add = [&](std::string name, auto change) {
    GroundTruthParams p;
    change(p);
    out.push_back({std::move(name), p});
  };
  add("sensitivity x0.7", [](GroundTruthParams& p) { p.sensitivity_scale = 0.7; });
  add("sensitivity x1.3", [](GroundTruthParams& p) { p.sensitivity_scale = 1.3; });
  add("latency flatter", [](GroundTruthParams& p) {
    p.latency_a = 0.3;
    p.latency_b = 3;
  });
  add("latency steeper", [](GroundTruthParams& p) {
    p.latency_a = 1.2;
    p.latency_b = 1.5;
  });
  add("working sets x0.8", [](GroundTruthParams& p) { p.working_set_scale = 0.8; });
  add("working sets x1.2", [](GroundTruthParams& p) { p.working_set_scale = 1.2; });
  return out;
}

struct Row {
  std::string variant;
  uint64_t seed;
  int nodes;
  int pods;
  std::string mode;
  FleetSummary s;
  VictimAttribution victims;
  int pending_default_ran = 0;
  uint64_t refused_all = 0;
};

std::string RowJson(const Row& r) {
  const FleetSummary& s = r.s;
  return absl::StrFormat(
      R"({"variant":"%s","seed":%d,"nodes":%d,"pods":%d,"mode":"%s","lc_pods":%d,)"
      R"("lc_running_end":%d,"lc_over_1_2":%d,"lc_over_1_5":%d,"lc_p99":%.3f,"lc_worst":%.3f,)"
      R"("lc_time_average_mean":%.3f,"lc_time_average_over_1_2":%d,"batch_mean_slowdown":%.3f,)"
      R"("pending_end":%d,"ever_pending":%d,"pending_that_default_ran":%d,)"
      R"("topology_affinity_errors":%d,"cpu_requested_end":%.3f,"extender_refused_all":%d})",
      r.variant, r.seed, r.nodes, r.pods, r.mode, s.lc_pods, s.lc_running_end, s.lc_over_1_2,
      s.lc_over_1_5, s.lc_p99, s.lc_worst, s.lc_mean_time_average, s.lc_time_average_over_1_2,
      s.batch_mean_slowdown, s.pending_end, s.ever_pending, r.pending_default_ran,
      s.topology_affinity_errors, s.cpu_requested_fraction_end, r.refused_all);
}

void PrintHeader() {
  std::printf("%-18s %4s %5s %4s %-10s %6s %6s %6s %6s %7s %7s %7s %7s %8s %5s %7s\n",
              "ground truth", "seed", "nodes", "pods", "mode", "LC>1.2", "LC>1.5", "LCp99", "LCmax",
              "LCtavg", "tavg>1.2", "batch", "pending", "pend(d.ran)", "TAE", "cpu req");
}

void PrintRow(const Row& r) {
  const FleetSummary& s = r.s;
  std::printf(
      "%-18s %4d %5d %4d %-10s %3d/%-2d %6d %6.2f %6.2f %7.3f %8d %7.3f %7d %11d %5d %6.1f%%\n",
      r.variant.c_str(), static_cast<int>(r.seed), r.nodes, r.pods, r.mode.c_str(), s.lc_over_1_2,
      s.lc_running_end, s.lc_over_1_5, s.lc_p99, s.lc_worst, s.lc_mean_time_average,
      s.lc_time_average_over_1_2, s.batch_mean_slowdown, s.pending_end, r.pending_default_ran,
      s.topology_affinity_errors, 100 * s.cpu_requested_fraction_end);
}

void PrintVictims(const Row& r) {
  const VictimAttribution& v = r.victims;
  std::printf(
      "%-18s %4d %5s %4s %-10s victims: %d past 1.2x from the start, %d made so later; without "
      "the node's batch pods %d still past, %d not\n",
      "", static_cast<int>(r.seed), "", "", r.mode.c_str(), v.already_at_start, v.made_later,
      v.without_batch_still, v.batch_caused);
}

const char* PhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kStarting:
      return "Starting";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
  }
  return "?";
}

// --calibrate: per true kind, how the extender's per-candidate predictions
// rank the candidates against the ground truth (bench/fleet/calibration.h).
void PrintCalibration(const std::string& variant, const std::vector<CalibrationDecision>& all) {
  std::printf(
      "%-18s calibration (neighborly's cycles with 2+ candidates; rank correlations within a "
      "cycle, averaged):\n"
      "  %-16s %5s %8s %8s %8s %7s %7s %9s  %s\n",
      variant.c_str(), "true kind", "cycles", "incoming", "resident", "score", "top-tie", "forced",
      "avoidable", "extender's class");
  for (WorkloadKind kind :
       {WorkloadKind::kLatencyCritical, WorkloadKind::kStandard, WorkloadKind::kBatch}) {
    const CalibrationSummary s = SummariseCalibration(all, kind);
    std::printf("  %-16s %5d %8.2f %8.2f %8.2f %6.0f%% %7d %9d  %s\n", KindName(kind), s.decisions,
                s.incoming_rank_correlation, s.resident_rank_correlation,
                s.score_rank_correlation, 100 * s.top_score_share, s.forced,
                s.avoidable_violations, s.extender_classes.c_str());
    std::printf("  %-16s predicted incoming slowdown by true one:", "");
    for (size_t b = 0; b < s.count_by_true_bin.size(); ++b) {
      if (s.count_by_true_bin[b] == 0) continue;
      std::printf(" %s%.1f:%.2f(%d)", b + 1 == s.count_by_true_bin.size() ? ">=" : "",
                  1 + 0.1 * static_cast<double>(b), s.predicted_by_true_bin[b],
                  s.count_by_true_bin[b]);
    }
    std::printf("\n");
  }
  std::printf(
      "  (incoming: predicted vs true slowdown of the pod; resident: harm to residents vs the "
      "worst LC resident's true added slowdown;\n   score: -score vs true added harm; top-tie: "
      "candidates tied at the best score; forced: cycles where no node keeps every LC pod within "
      "1.2x;\n   avoidable: of the others, cycles whose chosen node does not)\n\n");
}

// One line per pod: its workload's traits and where each mode put it.
void PrintPods(const FleetSpec& fleet, const FleetResult& a, const FleetResult& b) {
  for (size_t i = 0; i < a.pods.size(); ++i) {
    const Workload& w = fleet.workloads[static_cast<size_t>(a.pods[i].workload)];
    std::printf("  %-44s %-16s %s%s%s%s |", a.pods[i].name.c_str(), KindName(w.kind),
                w.annotated_latency_critical ? "annotated " : "",
                w.labelled_batch ? "labelled " : "", w.cache_sensitive ? "cache-sensitive " : "",
                w.streaming ? "streaming " : "");
    for (const PodResult* p : {&a.pods[i], &b.pods[i]}) {
      std::printf(" %-8s %-9s %s end %.2f mean %.2f |", p->node.c_str(), PhaseName(p->phase),
                  p->pinned ? "pinned" : "shared", p->slowdown_end, p->slowdown_mean);
    }
    std::printf("\n");
  }
}

int Run(const Flags& flags) {
  // A configuration that does not load is the user's error: say so and stop
  // before the first fleet (the simulation treats it as an invariant).
  if (absl::Status s = CheckExtenderConfig(flags.extender_config); !s.ok()) {
    std::fprintf(stderr, "placement_bench: --extender-config: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  MixOptions mix;
  mix.arrivals = flags.arrivals;
  mix.scale_ups = flags.scale_ups;
  mix.target_cpu_requested_min = flags.cpu_target_min;
  mix.target_cpu_requested_max = flags.cpu_target_max;
  std::vector<Row> rows;
  if (!flags.json) {
    std::printf(
        "placement benchmark: %d fleet(s) from seed %d, reports every %.1f s, extender weight 2\n"
        "LC>1.2 / LC>1.5 / LCp99 / LCmax: latency-critical pods running at the end of the run, by "
        "their slowdown then;\nLCtavg, tavg>1.2: each LC pod's slowdown averaged over the time it "
        "ran; batch: mean time-averaged slowdown of batch pods;\npending: pods never placed by the "
        "end (retried every 10 s); pend(d.ran): of them, placed by the default scheduler;\nTAE: "
        "TopologyAffinityErrors (kubelet refused, not retried); cpu req: requested / allocatable "
        "at the end\nfleets sized for %.0f-%.0f %% of their CPU requested at the end\n\n",
        flags.fleets, static_cast<int>(flags.seed), flags.report_interval_s,
        100 * flags.cpu_target_min, 100 * flags.cpu_target_max);
    if (flags.what_if.any()) {
      std::printf("what-if: the neighborly rows take %s from the ground truth (not a product)\n\n",
                  flags.what_if_text.c_str());
    }
  }
  int holds = 0, fewer = 0, variants_run = 0;
  for (const Variant& v : Variants(flags.perturb)) {
    if (!flags.json) PrintHeader();
    int lc_default = 0, lc_neighborly = 0, pending_neighborly = 0, pending_default = 0;
    int lc_oracle = 0, pending_oracle = 0;
    std::vector<CalibrationDecision> calibration;
    for (int f = 0; f < flags.fleets; ++f) {
      const uint64_t seed = flags.seed + static_cast<uint64_t>(f);
      const FleetSpec fleet = GenerateFleet(seed, mix);
      SimOptions options;
      options.report_interval_s = flags.report_interval_s;
      options.measurement_noise = flags.measurement_noise;
      options.truth = v.params;
      options.extender_config_file = flags.extender_config;
      options.scorer = Scorer::kDefault;
      const FleetResult by_default = SimulateFleet(fleet, options);
      options.scorer = Scorer::kNeighborly;
      options.calibrate = flags.calibrate;
      options.what_if = flags.what_if;
      const FleetResult by_neighborly = SimulateFleet(fleet, options);
      options.calibrate = false;
      options.what_if = WhatIf{};
      calibration.insert(calibration.end(), by_neighborly.calibration.begin(),
                         by_neighborly.calibration.end());
      const int pods = static_cast<int>(fleet.arrivals.size());
      const int nodes = static_cast<int>(fleet.nodes.size());
      Row d{v.name, seed, nodes, pods, "default", Summarise(by_default), by_default.victims,
            0,      0};
      Row n{v.name,
            seed,
            nodes,
            pods,
            "neighborly",
            Summarise(by_neighborly),
            by_neighborly.victims,
            PendingThatReferenceRan(by_neighborly, by_default),
            by_neighborly.extender_refused_all};
      lc_default += d.s.lc_over_1_2;
      lc_neighborly += n.s.lc_over_1_2;
      pending_default += d.s.pending_end;
      pending_neighborly += n.s.pending_end;
      std::vector<Row> fleet_rows = {d, n};
      if (flags.oracle) {
        options.scorer = Scorer::kOracle;
        const FleetResult by_oracle = SimulateFleet(fleet, options);
        fleet_rows.push_back(Row{v.name, seed, nodes, pods, "oracle", Summarise(by_oracle),
                                 by_oracle.victims, PendingThatReferenceRan(by_oracle, by_default),
                                 0});
        lc_oracle += fleet_rows.back().s.lc_over_1_2;
        pending_oracle += fleet_rows.back().s.pending_end;
      }
      for (const Row& r : fleet_rows) {
        if (flags.json) {
          std::printf("%s\n", RowJson(r).c_str());
        } else {
          PrintRow(r);
        }
        if (flags.diagnose && !flags.json) PrintVictims(r);
        std::fflush(stdout);
        rows.push_back(r);
      }
      if (flags.pods) PrintPods(fleet, by_default, by_neighborly);
    }
    // The issue's bar (issue 22, "Done when"): at most half the default's
    // victims, with at most 1 % more pods left Pending.
    const int pods_total = [&] {
      int t = 0;
      for (const Row& r : rows) {
        if (r.variant == v.name && r.mode == "default") t += r.pods;
      }
      return t;
    }();
    const bool fewer_victims = 2 * lc_neighborly <= lc_default;
    const bool no_stranding = (pending_neighborly - pending_default) * 100 <= pods_total;
    ++variants_run;
    holds += fewer_victims && no_stranding ? 1 : 0;
    fewer += lc_neighborly < lc_default ? 1 : 0;
    if (!flags.json) {
      std::printf(
          "%-18s summed: LC>1.2 default %d, neighborly %d (%s, %s); Pending default %d, "
          "neighborly %d (%s)\n\n",
          v.name.c_str(), lc_default, lc_neighborly,
          lc_neighborly < lc_default ? "fewer" : "not fewer",
          fewer_victims ? "<= 0.5x: yes" : "<= 0.5x: no", pending_default, pending_neighborly,
          no_stranding ? "within 1 %: yes" : "within 1 %: no");
      if (flags.oracle) {
        std::printf("%-18s oracle (the ground truth as extender): LC>1.2 %d, Pending %d\n\n",
                    v.name.c_str(), lc_oracle, pending_oracle);
      }
      if (flags.calibrate) PrintCalibration(v.name, calibration);
    }
  }
  if (!flags.json) {
    std::printf(
        "neighborly left fewer LC pods > 1.2x than default under %d of %d ground truth(s); issue "
        "22's bar (LC>1.2 <= 0.5x default, Pending within 1 %% of pods) met under %d\n",
        fewer, variants_run, holds);
  }
  return 0;
}

}  // namespace
}  // namespace neighborly::fleet

int main(int argc, char** argv) {
  using neighborly::fleet::Usage;
  neighborly::fleet::Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (!value.empty()) return value;
      if (i + 1 < argc) return argv[++i];
      return std::string();
    };
    if (arg == "--pods") {
      flags.pods = true;
    } else if (arg == "--extender-config") {
      flags.extender_config = next();
      if (flags.extender_config.empty()) return Usage("--extender-config needs a file");
    } else if (arg == "--what-if") {
      flags.what_if_text = next();
      if (const std::string error = neighborly::fleet::ParseWhatIf(flags.what_if_text, flags.what_if);
          !error.empty()) {
        return Usage(error);
      }
    } else if (arg == "--oracle") {
      flags.oracle = true;
    } else if (arg == "--calibrate") {
      flags.calibrate = true;
    } else if (arg == "--diagnose") {
      flags.diagnose = true;
    } else if (arg == "--cpu-target") {
      const std::string range = next();
      const size_t dash = range.find('-');
      if (dash == std::string::npos ||
          !absl::SimpleAtod(range.substr(0, dash), &flags.cpu_target_min) ||
          !absl::SimpleAtod(range.substr(dash + 1), &flags.cpu_target_max) ||
          flags.cpu_target_min <= 0 || flags.cpu_target_max > 1 ||
          flags.cpu_target_min > flags.cpu_target_max) {
        return Usage("--cpu-target needs LO-HI, shares with 0 < LO <= HI <= 1 (e.g. 0.4-0.6)");
      }
    } else if (arg == "--scale-ups") {
      flags.scale_ups = true;
    } else if (arg == "--perturb") {
      flags.perturb = true;
    } else if (arg == "--json") {
      flags.json = true;
    } else if (arg == "--fleets") {
      if (!absl::SimpleAtoi(next(), &flags.fleets) || flags.fleets < 1) {
        return Usage("--fleets needs a positive integer");
      }
    } else if (arg == "--seed") {
      if (!absl::SimpleAtoi(next(), &flags.seed)) return Usage("--seed needs an integer");
    } else if (arg == "--arrivals") {
      if (!absl::SimpleAtoi(next(), &flags.arrivals) || flags.arrivals < 1) {
        return Usage("--arrivals needs a positive integer");
      }
    } else if (arg == "--measurement-noise") {
      if (!absl::SimpleAtod(next(), &flags.measurement_noise) || flags.measurement_noise < 0 ||
          flags.measurement_noise >= 1) {
        return Usage("--measurement-noise needs a share in [0, 1)");
      }
    } else if (arg == "--report-interval") {
      if (!absl::SimpleAtod(next(), &flags.report_interval_s) || flags.report_interval_s <= 0) {
        return Usage("--report-interval needs seconds > 0");
      }
    } else if (arg == "--help" || arg == "-h") {
      Usage("");
      return 0;
    } else {
      return Usage(absl::StrCat("unknown flag ", arg));
    }
  }
  return neighborly::fleet::Run(flags);
}
