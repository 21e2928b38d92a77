#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-placement: the placement fleet benchmark (docs/placement-benchmark.md).
# Seeded fleets placed by kube-scheduler's default scoring alone and combined
# with the real extender (weight 2) fed by the real agent simulator, judged by
# the benchmark's own interference ground truth; then the same fleets under
# moved ground-truth parameters (--perturb), each also with the ground truth
# itself as the extender (--oracle, the yardstick). Prints the tables
# docs/performance.md records ("Placement quality"). About 35 s on the 2-core
# VM (3 fleets x 7 ground truths x 3 modes).
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
exec "${bin}" --perturb --oracle "$@"
