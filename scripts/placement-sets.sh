#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The four fleet sets a model change is judged on (docs/placement-benchmark.md,
# "Judging a model change"): placement_bench's base ground truth on
#   A  6 roomier fleets   (--fleets 6 --cpu-target 0.4-0.6)
#   B  6 default fleets   (--fleets 6)
#   C  4 held-out fleets  (--fleets 4 --seed 31)
#   D  4 roomier held-out (--fleets 4 --seed 41 --cpu-target 0.4-0.6)
# two at a time, then one line: latency-critical pods past 1.2x, Neighborly
# over the default scheduler, per set and summed; the pods Neighborly left
# Pending that the default ran; TopologyAffinityErrors; the fleets whose
# worst LC slowdown is above the default's; batch mean slowdown against the
# default's. About 50 s on the 2-core VM.
# Usage: scripts/placement-sets.sh [BUILD_DIR] [EXTENDER_CONFIG.yaml|-] [placement_bench flags...]
#   e.g. scripts/placement-sets.sh build/default /tmp/probe.yaml
#   (a YAML file as neighborly-extender --config reads it, e.g.
#    "model: {interference: {maxSlowdown: 1.15}}"; "-": the defaults)
#   e.g. scripts/placement-sets.sh build/default - --what-if oracle-filter
#   (further flags go to every set's run: docs/placement-benchmark.md,
#    "Where the gap is")
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(realpath "${1:-${root}/build/default}")"
bin="${build}/bench/placement_bench"
if [[ ! -x "${bin}" ]]; then
  echo "placement-sets: ${bin} is missing (make build)" >&2
  exit 1
fi
config=()
if [[ $# -ge 2 && "$2" != "-" ]]; then
  [[ -r "$2" ]] || { echo "placement-sets: cannot read $2" >&2; exit 1; }
  config=(--extender-config "$(realpath "$2")")
fi
shift $(( $# < 2 ? $# : 2 ))
config+=("$@")
out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT
run() {
  local set=$1
  shift
  if ! "${bin}" "${config[@]}" --json "$@" >"${out}/${set}.json" 2>"${out}/${set}.err"; then
    echo "placement-sets: set ${set} failed: $(head -1 "${out}/${set}.err")" >&2
    return 1
  fi
}
failed=0
run A --fleets 6 --cpu-target 0.4-0.6 & a=$!
run B --fleets 6 & b=$!
wait "${a}" || failed=1
wait "${b}" || failed=1
(( failed == 0 )) || exit 1
run C --fleets 4 --seed 31 & c=$!
run D --fleets 4 --seed 41 --cpu-target 0.4-0.6 & d=$!
wait "${c}" || failed=1
wait "${d}" || failed=1
(( failed == 0 )) || exit 1
python3 - "${out}" <<'PY'
import json, sys
out = sys.argv[1]
parts, total_n, total_d = [], 0, 0
for s in "ABCD":
    rows = [json.loads(l) for l in open(f"{out}/{s}.json") if l.startswith("{")]
    by = {(r["seed"], r["mode"]): r for r in rows if r["variant"] == "base"}
    n = d = pend = tae = worse = fleets = 0
    batch_d = batch_n = 0.0
    for (seed, mode), r in sorted(by.items()):
        if mode != "neighborly":
            continue
        base = by[(seed, "default")]
        fleets += 1
        d += base["lc_over_1_2"]
        n += r["lc_over_1_2"]
        pend += r["pending_that_default_ran"]
        tae += r["topology_affinity_errors"]
        worse += r["lc_worst"] > base["lc_worst"]
        batch_d += base["batch_mean_slowdown"]
        batch_n += r["batch_mean_slowdown"]
    total_n += n
    total_d += d
    parts.append(f"{s} {n}/{d} = {n / max(d, 1):.2f}x, pending {pend}, TAE {tae}, "
                 f"worst above default {worse}/{fleets}, batch {100 * (batch_n / max(batch_d, 1e-9) - 1):+.1f} %")
print(f"LC > 1.2x, neighborly/default: {total_n}/{total_d} = {total_n / max(total_d, 1):.3f}x")
for p in parts:
    print("  " + p)
PY
