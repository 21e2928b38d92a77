#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-placement: the placement fleet benchmark (docs/placement-benchmark.md).
# Seeded fleets placed by kube-scheduler's default scoring alone and combined
# with the real extender (weight 2) fed by the real agent simulator, judged by
# the benchmark's own interference ground truth; then the same fleets under
# moved ground-truth parameters (--perturb), each also with the ground truth
# itself as the extender (--oracle, the yardstick). Prints the tables
# docs/performance.md records ("Placement quality"); then roomier fleets with
# where each mode's victims come from (--diagnose). About 80 s on the 2-core
# VM (3 fleets x 7 ground truths x 3 modes, then 3 x 3).
# Usage: scripts/bench-placement.sh [BUILD_DIR [placement_bench flags]]
#   e.g. scripts/bench-placement.sh build/default --fleets 5 --seed 10
#   BENCH_PERTURB=0   the base ground truth only
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(realpath "${1:-${root}/build/default}")"
shift $(( $# > 0 ? 1 : 0 ))
bin="${build}/bench/placement_bench"
if [[ ! -x "${bin}" ]]; then
  echo "bench-placement: ${bin} is missing (make build)" >&2
  exit 1
fi
echo "bench-placement: $(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo '?'), ${bin}"
if [[ "${BENCH_PERTURB:-1}" == 0 ]]; then
  exec "${bin}" --oracle "$@"
fi
"${bin}" --perturb --oracle "$@"
# Roomier fleets (40-60 % of their CPU requested at the end, 41-47 nodes):
# closer to issue 22's own fleets, whose default scheduler left 14-22 % of
# the pods slowed where the fleets above leave 26-29 %.
echo
echo "bench-placement: roomier fleets (--cpu-target 0.4-0.6), base ground truth"
exec "${bin}" --oracle --diagnose --cpu-target 0.4-0.6 "$@"
