#include "extender/src/api/readiness.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

size_t Needed(size_t nodes_in_state, double share) {
  if (nodes_in_state == 0) return 0;
  const double needed =
      std::ceil(static_cast<double>(nodes_in_state) * std::clamp(share, 0.0, 1.0));
  return std::max<size_t>(1, static_cast<size_t>(needed));
}

}  // namespace

Readiness::Readiness(ReadinessRule rule, size_t nodes_in_state, const Clock& clock)
    : rule_(rule),
      nodes_in_state_(nodes_in_state),
      nodes_needed_(Needed(nodes_in_state, rule.known_node_share)),
      clock_(clock),
      start_(clock.Monotonic()) {}

std::string Readiness::Check(size_t nodes_reported) const {
  if (ready_.load(std::memory_order_acquire)) return "";
  const absl::Duration waited = clock_.Monotonic() - start_;
  std::string why;
  if (nodes_needed_ > 0) {
    if (nodes_reported >= nodes_needed_) {
      why = absl::StrCat(nodes_reported, " node(s) reported, of ", nodes_in_state_,
                         " in the state file");
    } else if (waited >= rule_.max_wait) {
      why = absl::StrCat("readiness.maxWait (", absl::FormatDuration(rule_.max_wait),
                         ") passed with ", nodes_reported, " of the ", nodes_needed_,
                         " node(s) awaited from the state file");
    } else {
      return absl::StrCat("waiting for telemetry: ", nodes_reported, " node(s) reported, ",
                          nodes_needed_, " awaited (", rule_.known_node_share * 100, " % of the ",
                          nodes_in_state_, " in the state file), or readiness.maxWait in ",
                          absl::FormatDuration(rule_.max_wait - waited));
    }
  } else {
    const absl::Duration wanted = rule_.report_interval + rule_.grace;
    if (waited < wanted) {
      return absl::StrCat("waiting for telemetry: ", nodes_reported,
                          " node(s) reported; no state file knew the fleet, so ready ",
                          absl::FormatDuration(wanted - waited),
                          " from now (readiness.reportInterval + readiness.grace)");
    }
    why = absl::StrCat(nodes_reported, " node(s) reported in ", absl::FormatDuration(wanted),
                       " (readiness.reportInterval + readiness.grace; no state file knew the "
                       "fleet)");
  }
  if (!ready_.exchange(true, std::memory_order_acq_rel)) {
    spdlog::info("ready after {}: {}",
                 absl::FormatDuration(absl::Trunc(waited, absl::Milliseconds(1))), why);
  }
  return "";
}

}  // namespace neighborly::extender
