#!/usr/bin/env bash
# Runs every benchmark briefly and prints what each measured (called by
# `make bench` with the build directory). The numbers in docs/performance.md
# come from the longer runs listed there; these short runs show that each
# benchmark works and give a first reading.
#   scripts/bench.sh [BUILD_DIR=build/default]
set -uo pipefail
build=${1:-build/default}
bench_dir="$build/bench"
if [[ ! -d "$bench_dir" ]]; then
  echo "bench.sh: no $bench_dir (build with NEIGHBORLY_BUILD_BENCHMARKS=ON first)" >&2
  exit 1
fi

status=0
run() {
  local name=$1
  shift
  local binary="$bench_dir/$name"
  echo
  echo "=== $name $*"
  if [[ ! -x "$binary" ]]; then
    echo "(not built: $binary)"
    return
  fi
  if ! "$binary" "$@"; then
    echo "bench.sh: $name failed" >&2
    status=1
  fi
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
short=(--benchmark_min_time=0.05)
# Decision core alone: EvaluateNode and ExtenderCore::Filter/Prioritize, 500/5,000/15,000 names.
run model_bench "${short[@]}"
# Server side of one scheduler request (decode + decide + encode), full-Node ratio at the end.
run http_codec_bench "${short[@]}"
# HTTP round trip on loopback, keep-alive, alternating filter/prioritize, 500 names.
run http_roundtrip_bench 1000
# Placement service (the scheduler plugin's gRPC calls) per pod at 5,000 nodes.
run placement_roundtrip_bench 300
# Ingest of 50-pod reports: Ingest() from 1 and 2 threads, then gRPC on loopback.
NEIGHBORLY_BENCH_QUICK=1 run ingest_bench --benchmark_min_time=0.2
# The extender's /metrics for 100 and 5,000 nodes, per-node series on and off.
run metrics_bench "${short[@]}"
# The agent's CPU time and RSS per window with 100 pods (built with the host agent).
run agent_window_bench 100 5
# Load (short mode): the real extender with 5,000 simulated nodes of 50 pods
# streaming at 1 Hz while filter + prioritize run at 200 pods/s with 500 names.
if [[ -x "$build/extender/neighborly-extender" ]]; then
  run soak_load --extender "$build/extender/neighborly-extender" --duration 20s --print-every 10s
  # The tail of a latency-critical Guaranteed pod refused on most of 500
  # streaming nodes (issue 25, part 6): 700 requests/s, p99 <= 1 ms the target.
  run soak_load --extender "$build/extender/neighborly-extender" --case lc-refused \
    --duration 20s --print-every 10s
fi
exit $status
