package perf

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// neighborlyStats are the extender's own figures for one workload (all of it:
// init pods and measured pods), read from its /metrics once the scheduler
// stopped, plus the CPU time of the extender and of the simulated fleet.
type neighborlyStats struct {
	Requests                  map[string]float64    // "filter/200", "placement Filter/OK" -> count
	Durations                 map[string]*histogram // "filter", "placement Filter" -> server-side time
	DecisionsWithoutTelemetry float64               // HTTP verbs only: the placement service does not count it
	Telemetry                 map[string]float64    // nodes by telemetry state at the end: fresh, aging, stale (nil: not exported)
	ReportsAccepted           float64
	ExtenderCPUSeconds        float64
	FleetCPUSeconds           float64
	// scheduler_perf's own process (kube-scheduler, the API server, the
	// harness) over the workload; -1: unknown.
	ProcessCPUSeconds float64
	FleetNodes        int
	// The plugin's streamed verdict tables: refreshes by kind (full,
	// incremental) and the nodes they decided (nil: not exported).
	VerdictRefreshes map[string]float64
	VerdictNodes     float64
	VerdictNodesWhy  map[string]float64 // changed, expired, regiven
}

// histogram is one Prometheus histogram: cumulative counts by upper bound.
type histogram struct {
	Bounds []float64 // ascending, +Inf last
	Counts []float64 // cumulative
	Sum    float64
	Count  float64
}

// quantile interpolates linearly within the bucket holding q, as
// Prometheus's histogram_quantile does; the +Inf bucket answers with the
// largest finite bound.
func (h *histogram) quantile(q float64) float64 {
	if h == nil || h.Count == 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for i, bound := range h.Bounds {
		if h.Counts[i] >= rank {
			if math.IsInf(bound, 1) {
				return lower
			}
			inBucket := h.Counts[i] - below
			if inBucket == 0 {
				return bound
			}
			return lower + (bound-lower)*(rank-below)/inBucket
		}
		lower, below = bound, h.Counts[i]
	}
	return lower
}

func (h *histogram) mean() float64 {
	if h == nil || h.Count == 0 {
		return math.NaN()
	}
	return h.Sum / h.Count
}

var sample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// parseExtenderMetrics reads the families the report uses from the
// extender's Prometheus text exposition.
func parseExtenderMetrics(text string) (*neighborlyStats, error) {
	s := &neighborlyStats{Requests: map[string]float64{}, Durations: map[string]*histogram{}}
	hist := func(verb string) *histogram {
		if s.Durations[verb] == nil {
			s.Durations[verb] = &histogram{}
		}
		return s.Durations[verb]
	}
	seen := false
	for _, line := range strings.Split(text, "\n") {
		m := sample.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		value, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			labels[p[1]] = p[2]
		}
		// The HTTP pair's names since issue 16 (docs/metrics.md, "Renamed"),
		// and before it, for extenders built earlier (NEIGHBORLY_EXTENDER).
		switch name := m[1]; name {
		case "neighborly_extender_http_requests_total", "neighborly_extender_requests_total":
			s.Requests[labels["verb"]+"/"+labels["code"]] += value
			seen = true
		case "neighborly_extender_http_request_duration_seconds_bucket", "neighborly_http_request_duration_seconds_bucket":
			bound, err := strconv.ParseFloat(labels["le"], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: le=%q", name, labels["le"])
			}
			h := hist(labels["verb"])
			h.Bounds = append(h.Bounds, bound)
			h.Counts = append(h.Counts, value)
		case "neighborly_extender_http_request_duration_seconds_sum", "neighborly_http_request_duration_seconds_sum":
			hist(labels["verb"]).Sum = value
		case "neighborly_extender_http_request_duration_seconds_count", "neighborly_http_request_duration_seconds_count":
			hist(labels["verb"]).Count = value
		case "neighborly_fleet_nodes":
			if s.Telemetry == nil {
				s.Telemetry = map[string]float64{}
			}
			s.Telemetry[labels["telemetry"]] = value
		case "neighborly_placement_requests_total":
			s.Requests["placement "+labels["method"]+"/"+labels["code"]] += value
		case "neighborly_placement_request_duration_seconds_bucket":
			bound, err := strconv.ParseFloat(labels["le"], 64)
			if err != nil {
				return nil, fmt.Errorf("neighborly_placement_request_duration_seconds_bucket: le=%q", labels["le"])
			}
			h := hist("placement " + labels["method"])
			h.Bounds = append(h.Bounds, bound)
			h.Counts = append(h.Counts, value)
		case "neighborly_placement_request_duration_seconds_sum":
			hist("placement " + labels["method"]).Sum = value
		case "neighborly_placement_request_duration_seconds_count":
			hist("placement " + labels["method"]).Count = value
		case "neighborly_decisions_without_telemetry_total":
			s.DecisionsWithoutTelemetry += value
		case "neighborly_placement_verdict_refreshes_total":
			if s.VerdictRefreshes == nil {
				s.VerdictRefreshes = map[string]float64{}
			}
			s.VerdictRefreshes[labels["kind"]] += value
		case "neighborly_placement_verdict_nodes_total":
			// by why since 2026-12-03 (changed, expired, regiven); unlabelled before
			s.VerdictNodes += value
			if w := labels["why"]; w != "" {
				if s.VerdictNodesWhy == nil {
					s.VerdictNodesWhy = map[string]float64{}
				}
				s.VerdictNodesWhy[w] += value
			}
		case "neighborly_ingest_reports_total":
			if labels["result"] == "accepted" {
				s.ReportsAccepted += value
			}
		}
	}
	if !seen {
		return nil, fmt.Errorf("no neighborly_extender_http_requests_total in the extender's /metrics")
	}
	for verb, h := range s.Durations {
		if !sort.Float64sAreSorted(h.Bounds) || len(h.Bounds) != len(h.Counts) {
			return nil, fmt.Errorf("neighborly_http_request_duration_seconds{verb=%q}: buckets out of order", verb)
		}
	}
	return s, nil
}

// dataItem is one entry of scheduler_perf's result file
// (BenchmarkPerfScheduling_benchmark_<topic>_<time>.json).
type dataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

var resultFile = regexp.MustCompile(`^BenchmarkPerfScheduling_round([1-9][0-9]*)_benchmark_neighborly_.*\.json$`)

// readRounds reads scheduler_perf's result files in dir, one per round
// (BenchmarkPerfScheduling_round<N>_benchmark_neighborly_<time>.json), by
// round number; for a round with several files (an earlier run in the same
// directory), the newest.
func readRounds(dir string) (map[int][]dataItem, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	newest := map[int]string{}
	for _, e := range entries {
		m := resultFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		round, _ := strconv.Atoi(m[1])
		if e.Name() > newest[round] { // the names end in an RFC 3339 time
			newest[round] = e.Name()
		}
	}
	if len(newest) == 0 {
		return nil, nil, fmt.Errorf("no scheduler_perf result file (BenchmarkPerfScheduling_round<N>_benchmark_neighborly_*.json) in %s", dir)
	}
	rounds := map[int][]dataItem{}
	var files []string
	for round, name := range newest {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		var file struct {
			DataItems []dataItem `json:"dataItems"`
		}
		if err := json.Unmarshal(data, &file); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		rounds[round] = file.DataItems
		files = append(files, path)
	}
	sort.Strings(files)
	return rounds, files, nil
}

// find returns the data item of metric for the workload, whose items are
// named "…/<test case>/<workload>/…", with the extra labels.
func find(items []dataItem, testCase, workload, metric string, labels map[string]string) *dataItem {
	for i := range items {
		it := &items[i]
		if it.Labels["Metric"] != metric || !strings.Contains(it.Labels["Name"]+"/", "/"+testCase+"/"+workload+"/") {
			continue
		}
		match := true
		for k, v := range labels {
			if it.Labels[k] != v {
				match = false
			}
		}
		if match {
			return it
		}
	}
	return nil
}

// report prints the comparison of the modes per workload (and writes it to
// results.md in the output directory).
func (h *benchHarness) report(out io.Writer) error {
	dir := h.outDir
	if f := flag.Lookup("data-items-dir"); f != nil && f.Value.String() != "" {
		dir = f.Value.String()
	}
	rounds, files, err := readRounds(dir)
	if err != nil {
		return err
	}
	table := renderTables(h.workloads, rounds)
	var order strings.Builder
	fmt.Fprintf(&order, "\nOrder of the test cases (NEIGHBORLY_BENCH_SEED=%d):\n\n", h.seed)
	for round := 1; round <= h.rounds; round++ {
		if o, ok := h.orders[round]; ok {
			fmt.Fprintf(&order, "- round %d: %s\n", round, strings.Join(o, ", "))
		}
	}
	table += order.String()
	fmt.Fprintf(out, "\nscheduler_perf results (%s):\n\n%s", strings.Join(files, ", "), table)
	return os.WriteFile(filepath.Join(h.outDir, "results.md"), []byte(table), 0o644)
}

// cyclePoints are the extension points of a scheduling cycle, which
// kube-scheduler runs one pod at a time: their mean times per pod, summed,
// set its pods/s (about 1,000 / (the sum in ms + 0.2) at 5,000 nodes on a
// 2-core VM, docs/performance.md), and a plugin's cost in the cycle is its
// sum less the fair baseline's.
var cyclePoints = []string{"PreFilter", "Filter", "PreScore", "Score", "Reserve"}

// extensionPoints is the report's cell of a run's mean extension point
// times per pod (point: that point's data item, nil when not measured):
// PreFilter / Filter / Score, then all of cyclePoints summed, in ms; "-"
// when none was measured.
func extensionPoints(point func(string) *dataItem) string {
	shown := map[string]string{"PreFilter": "-", "Filter": "-", "Score": "-"}
	all, measured := 0.0, false
	for _, p := range cyclePoints {
		if it := point(p); it != nil {
			v := it.Data["Average"]
			all, measured = all+v, true
			if _, ok := shown[p]; ok {
				shown[p] = fmt.Sprintf("%.2f", v)
			}
		}
	}
	if !measured {
		return "-"
	}
	return fmt.Sprintf("%s / %s / %s, %.2f", shown["PreFilter"], shown["Filter"], shown["Score"], all)
}

// renderTables prints the throughput and latency table (one row per workload,
// mode and round, with the ratios to the fair baseline and to no extender of
// the same workload and round), the extender's own figures, the spread over
// the rounds, and the targets at 5,000 nodes (the ratio of the mean averages
// over the rounds, against the fair baseline). rounds[n] holds round n's data
// items.
func renderTables(runs []*workloadRun, rounds map[int][]dataItem) string {
	var b strings.Builder
	type group struct{ family, workload string }
	type key struct {
		group
		mode mode
	}
	byKey := map[key][]*workloadRun{}
	var groups []group
	seen := map[group]bool{}
	for _, r := range runs {
		g := group{r.family, r.workload}
		if g.family == "" { // runs of an older harness (tests)
			g.family, _, _ = strings.Cut(r.testCase, "_")
		}
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
		k := key{g, r.mode}
		byKey[k] = append(byKey[k], r)
	}
	// Families by name, workloads by size (the order of the runs is random).
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].family != groups[j].family {
			return groups[i].family < groups[j].family
		}
		return leadingInt(groups[i].workload) < leadingInt(groups[j].workload)
	})
	for _, rs := range byKey {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].round < rs[j].round })
	}
	groupOf := func(r *workloadRun) group {
		g := group{r.family, r.workload}
		if g.family == "" {
			g.family, _, _ = strings.Cut(r.testCase, "_")
		}
		return g
	}
	get := func(r *workloadRun, metric string, labels map[string]string) *dataItem {
		if r == nil {
			return nil
		}
		return find(rounds[r.round], r.testCase, r.workload, metric, labels)
	}
	// sameRound is the run of mode m of r's workload in r's round.
	sameRound := func(r *workloadRun, m mode) *workloadRun {
		for _, o := range byKey[key{groupOf(r), m}] {
			if o.round == r.round {
				return o
			}
		}
		return nil
	}
	throughput := func(r *workloadRun) *dataItem { return get(r, "SchedulingThroughput", nil) }
	average := func(r *workloadRun) (float64, bool) {
		tp := throughput(r)
		if tp == nil {
			return 0, false
		}
		return tp.Data["Average"], true
	}
	// ratio is r's average pods/s as a share of mode m's in the same round.
	ratio := func(r *workloadRun, m mode) (float64, bool) {
		got, ok := average(r)
		base, okBase := average(sameRound(r, m))
		if !ok || !okBase || base <= 0 {
			return 0, false
		}
		return got / base, true
	}
	percent := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.0f %%", 100*v)
	}
	ms := func(it *dataItem, key string) string {
		if it == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", it.Data[key])
	}
	// meanAverage is the mean over the rounds of a mode's average pods/s.
	meanAverage := func(g group, m mode) (float64, int) {
		sum, n := 0.0, 0
		for _, r := range byKey[key{g, m}] {
			if v, ok := average(r); ok {
				sum += v
				n++
			}
		}
		if n == 0 {
			return 0, 0
		}
		return sum / float64(n), n
	}

	b.WriteString("| family | workload | mode | round | position in round | pods/s avg | p50 | p90 | p99 | avg vs fair baseline | avg vs no extender | algorithm mean / p99 ms | plugin RPC Filter / Score / Reserve mean ms, waits for acks PreFilter / Filter / PreScore / Reserve mean ms | attempt (scheduled) p50 / p99 ms | pod SLI p50 / p99 ms | extension points PreFilter / Filter / Score, all, mean ms a pod |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, m := range modes {
			for _, r := range byKey[key{g, m}] {
				position := "-"
				if r.position > 0 {
					position = strconv.Itoa(r.position)
				}
				if r.skipped != "" {
					fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | not run: %s | | | | | | | | | | |\n", g.family, g.workload, m, r.round, position, r.skipped)
					continue
				}
				tp := throughput(r)
				attempt := get(r, "scheduler_scheduling_attempt_duration_seconds", map[string]string{"result": "scheduled"})
				sli := get(r, "scheduler_pod_scheduling_sli_duration_seconds", nil)
				algorithm := get(r, "scheduler_scheduling_algorithm_duration_seconds", nil)
				rpc := "-"
				if m == modePlugin {
					rpc = ""
					for i, method := range []string{"Filter", "Score", "Reserve"} {
						if i > 0 {
							rpc += " / "
						}
						rpc += ms(get(r, "neighborly_plugin_rpc_duration_seconds", map[string]string{"method": method}), "Average")
					}
					rpc += ", waits"
					// The points that wait for acks (Score reads pending
					// nodes as their tables stand, docs/placement.md).
					for i, point := range []string{"PreFilter", "Filter", "PreScore", "Reserve"} {
						if i > 0 {
							rpc += " /"
						}
						rpc += " " + ms(get(r, "neighborly_plugin_ack_wait_seconds", map[string]string{"extension_point": point, "result": "acked"}), "Average")
					}
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s / %s | %s / %s | %s |\n",
					g.family, g.workload, m, r.round, position,
					ms(tp, "Average"), ms(tp, "Perc50"), ms(tp, "Perc90"), ms(tp, "Perc99"),
					percent(ratio(r, modeBaseline)), percent(ratio(r, modeNone)),
					ms(algorithm, "Average"), ms(algorithm, "Perc99"), rpc,
					ms(attempt, "Perc50"), ms(attempt, "Perc99"), ms(sli, "Perc50"), ms(sli, "Perc99"),
					extensionPoints(func(point string) *dataItem {
						return get(r, "scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": point})
					}))
			}
		}
	}

	b.WriteString("\nNeighborly's side (whole workload: init and measured pods; HTTP extender: /filter and /prioritize, plugin: the placement service's Filter, Score, Reserve; fair baseline: asked nothing):\n\n")
	b.WriteString("| family | workload | mode | round | nodes streamed | filter / score calls answered | reserve calls | other answers | server-side filter mean / p99 ms | score mean / p99 ms | verdicts without telemetry (HTTP) | telemetry at the end: fresh / aging / stale | reports accepted | verdict refreshes: full / incremental, nodes decided per refresh (why) | extender CPU s | fleet CPU s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, m := range []mode{modeBaseline, modeExtender, modePlugin} {
			filter, score, reserve, ok := "filter", "prioritize", "", "200"
			if m == modePlugin {
				filter, score, reserve, ok = "placement Filter", "placement Score", "placement Reserve", "OK"
			}
			for _, r := range byKey[key{g, m}] {
				if r.stats == nil {
					continue
				}
				s := r.stats
				other := 0.0
				for k, v := range s.Requests {
					if !strings.HasSuffix(k, "/"+ok) {
						other += v
					}
				}
				reserves := "-"
				if reserve != "" {
					reserves = fmt.Sprintf("%.0f", s.Requests[reserve+"/"+ok])
				}
				telemetry := "-"
				if s.Telemetry != nil {
					telemetry = fmt.Sprintf("%.0f / %.0f / %.0f", s.Telemetry["fresh"], s.Telemetry["aging"], s.Telemetry["stale"])
				}
				withoutTelemetry := "-"
				if m == modeExtender {
					withoutTelemetry = fmt.Sprintf("%.0f", s.DecisionsWithoutTelemetry)
				}
				refreshes := "-"
				if m == modePlugin && s.VerdictRefreshes != nil {
					n := s.VerdictRefreshes["full"] + s.VerdictRefreshes["incremental"]
					per := 0.0
					if n > 0 {
						per = s.VerdictNodes / n
					}
					refreshes = fmt.Sprintf("%.0f / %.0f, %.1f", s.VerdictRefreshes["full"], s.VerdictRefreshes["incremental"], per)
					if w := s.VerdictNodesWhy; w != nil && n > 0 {
						refreshes += fmt.Sprintf(" (changed %.1f, expired %.1f, regiven %.1f)", w["changed"]/n, w["expired"]/n, w["regiven"]/n)
					}
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.0f / %.0f | %s | %.0f | %.3f / %.3f | %.3f / %.3f | %s | %s | %.0f | %s | %.1f | %.1f |\n",
					g.family, g.workload, m, r.round, s.FleetNodes, s.Requests[filter+"/"+ok], s.Requests[score+"/"+ok], reserves, other,
					1e3*s.Durations[filter].mean(), 1e3*s.Durations[filter].quantile(0.99),
					1e3*s.Durations[score].mean(), 1e3*s.Durations[score].quantile(0.99),
					withoutTelemetry, telemetry, s.ReportsAccepted, refreshes, s.ExtenderCPUSeconds, s.FleetCPUSeconds)
			}
		}
	}

	// The CPU of a whole workload (the same pods and nodes in every mode):
	// on cores the round keeps busy, pods/s go as its inverse, so the fair
	// baseline's total over a mode's is the throughput ratio the CPU alone
	// allows, far steadier than pods/s on a shared machine.
	totalCPU := func(r *workloadRun) (float64, bool) {
		if r == nil || r.stats == nil || r.stats.ProcessCPUSeconds < 0 || r.stats.ExtenderCPUSeconds < 0 || r.stats.FleetCPUSeconds < 0 {
			return 0, false
		}
		total := r.stats.ProcessCPUSeconds + r.stats.ExtenderCPUSeconds + r.stats.FleetCPUSeconds
		return total, total > 0
	}
	b.WriteString("\nCPU of the whole workload (scheduler_perf's process: kube-scheduler, the API server and the harness; the extender; the simulated fleet), and the fair baseline's total over the mode's in the same round (what the CPU alone allows of the baseline's pods/s):\n\n")
	b.WriteString("| family | workload | mode | round | process CPU s | extender CPU s | fleet CPU s | total CPU s | fair baseline's total / this |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, m := range []mode{modeBaseline, modeExtender, modePlugin} {
			var ratios []float64
			for _, r := range byKey[key{g, m}] {
				total, ok := totalCPU(r)
				if !ok {
					continue
				}
				of := "-"
				if base, okBase := totalCPU(sameRound(r, modeBaseline)); okBase {
					ratios = append(ratios, base/total)
					of = fmt.Sprintf("%.0f %%", 100*base/total)
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %s |\n", g.family, g.workload, m, r.round,
					r.stats.ProcessCPUSeconds, r.stats.ExtenderCPUSeconds, r.stats.FleetCPUSeconds, total, of)
			}
			if m != modeBaseline && len(ratios) > 1 {
				mean, lo, hi, sd := spread(ratios)
				fmt.Fprintf(&b, "| %s | %s | %s | all %d | | | | | %.0f %% (%.0f-%.0f %%, std dev %.0f points) |\n",
					g.family, g.workload, m, len(ratios), 100*mean, 100*lo, 100*hi, 100*sd)
			}
		}
	}

	b.WriteString("\nSpread over the rounds (pods/s: mean and min-max of the rounds' averages; the per-round ratios compare modes within a round; ratio of means: the mean of the mode's rounds over the fair baseline's):\n\n")
	b.WriteString("| family | workload | mode | rounds | pods/s mean | pods/s min-max | vs fair baseline per round: mean | min-max | std dev | ratio of means vs fair baseline | vs no extender per round: min-max |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, m := range modes {
			var avgs, fair, none []float64
			for _, r := range byKey[key{g, m}] {
				if v, ok := average(r); ok {
					avgs = append(avgs, v)
				}
				if v, ok := ratio(r, modeBaseline); ok {
					fair = append(fair, v)
				}
				if v, ok := ratio(r, modeNone); ok {
					none = append(none, v)
				}
			}
			if len(avgs) == 0 {
				continue
			}
			mean, lo, hi, _ := spread(avgs)
			fairMean, fairLo, fairHi, fairSD := spread(fair)
			_, noneLo, noneHi, _ := spread(none)
			got, _ := meanAverage(g, m)
			base, nBase := meanAverage(g, modeBaseline)
			of := "-"
			if nBase > 0 && base > 0 {
				of = fmt.Sprintf("%.0f %%", 100*got/base)
			}
			pct := func(v float64, n int) string {
				if n == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f %%", 100*v)
			}
			rangePct := func(lo, hi float64, n int) string {
				if n == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f-%.0f %%", 100*lo, 100*hi)
			}
			sd := "-"
			if len(fair) > 1 {
				sd = fmt.Sprintf("%.0f points", 100*fairSD)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %.1f | %.1f-%.1f | %s | %s | %s | %s | %s |\n",
				g.family, g.workload, m, len(avgs), mean, lo, hi,
				pct(fairMean, len(fair)), rangePct(fairLo, fairHi, len(fair)), sd, of, rangePct(noneLo, noneHi, len(none)))
		}
	}

	b.WriteString("\nTargets (average pods/s at 5,000 nodes as a share of the fair baseline's, each the mean of its rounds):\n\n")
	for _, g := range groups {
		if g.workload != "5000Nodes" {
			continue
		}
		for _, t := range []struct {
			m      mode
			target float64
		}{{modePlugin, 95}, {modeExtender, 75}} {
			got, n := meanAverage(g, t.m)
			base, nBase := meanAverage(g, modeBaseline)
			if n == 0 || nBase == 0 || base == 0 {
				why := ""
				if rs := byKey[key{g, t.m}]; len(rs) > 0 && rs[0].skipped != "" {
					why = " (" + rs[0].skipped + ")"
				} else if nBase == 0 {
					why = " (no fair baseline in this run)"
				}
				fmt.Fprintf(&b, "- %s, %s >= %.0f %%: not measured in this run%s\n", g.family, t.m, t.target, why)
				continue
			}
			r := 100 * got / base
			verdict := "met"
			if r < t.target {
				verdict = fmt.Sprintf("MISSED by %.0f points", t.target-r)
			}
			fmt.Fprintf(&b, "- %s, %s >= %.0f %%: %.0f %% (%.1f vs %.1f pods/s, %d and %d rounds), %s\n",
				g.family, t.m, t.target, r, got, base, n, nBase, verdict)
		}
	}
	return b.String()
}

// spread is the mean, least, greatest and (sample) standard deviation of
// values; zeros for none.
func spread(values []float64) (mean, lo, hi, sd float64) {
	if len(values) == 0 {
		return 0, 0, 0, 0
	}
	lo, hi = values[0], values[0]
	for _, v := range values {
		mean += v
		lo = math.Min(lo, v)
		hi = math.Max(hi, v)
	}
	mean /= float64(len(values))
	if len(values) > 1 {
		for _, v := range values {
			sd += (v - mean) * (v - mean)
		}
		sd = math.Sqrt(sd / float64(len(values)-1))
	}
	return mean, lo, hi, sd
}

// leadingInt is the number a workload's name starts with ("5000Nodes": 5000).
func leadingInt(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = 10*n + int(c-'0')
	}
	return n
}
