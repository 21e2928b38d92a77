#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-scheduler: kube-scheduler's own throughput benchmark
# (scheduler_perf of the release pinned in scheduler/go.mod) on its
# SchedulingBasic workload and on a mixed-shape one (SchedulingMixed) at 500
# and 5,000 nodes, without Neighborly, with Neighborly running but not
# consulted (the fair baseline), with the chart's HTTP extender entry and
# with the Neighborly framework plugin, each round in an order of its own;
# prints the tables docs/performance.md records ("What it costs the real
# scheduler"; docs/scheduler-perf.md). About 2.5 minutes per workload and
# mode on a 2-core VM: 5 rounds of all 16 take over 3 hours; select with
# -test.bench (docs/scheduler-perf.md).
# Usage: scripts/bench-scheduler.sh [BUILD_DIR [-- extra test flags]]
#   BENCH_FILTER=smoke  five nodes per mode, for checking the harness (half a minute)
#   BENCH_ROUNDS=N      run every mode N times, round by round (default 5); the
#                       ratios compare modes within a round, the targets the
#                       means over the rounds, the spread is reported
#   BENCH_SEED=N        the seed of the rounds' orders (default: the time; printed)
#   BENCH_OUT=DIR       configs, logs, scheduler_perf's result files, results.md
#                       (default build/bench-scheduler/<UTC time>)
#   BENCH_NO_BUILD=1    use build/go/bin's etcd and scheduler-perf.test as they are
#                       (no rebuild; for repeated runs of the same code)
#   NEIGHBORLY_BENCH_CPUPROFILE=1  CPU and allocation profiles of the test process per workload
#                       (cpu.pprof; allocs-start.pprof and allocs.pprof, read with -base)
#   NEIGHBORLY_EXTENDER=PATH  another neighborly-extender binary (default: BUILD_DIR's)
#   NEIGHBORLY_PLUGIN_STREAMED=0  the plugin with streamedVerdicts: false, the calls in every cycle (1: true, the default)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(realpath "${1:-${root}/build/default}")"
shift $(( $# > 0 ? 1 : 0 ))
[[ "${1:-}" == "--" ]] && shift
export GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
filter="${BENCH_FILTER:-performance}"
rounds="${BENCH_ROUNDS:-5}"
out="${BENCH_OUT:-${root}/build/bench-scheduler/$(date -u +%Y%m%dT%H%M%SZ)}"
# Absolute: the run below works from scheduler/perf, where a relative
# BENCH_OUT would land (and the harness could not create its logs there).
out="$(realpath -m "${out}")"

if ! command -v go >/dev/null 2>&1; then
  echo "bench-scheduler: Go is needed (go 1.26 or newer in PATH)" >&2
  exit 1
fi
for bin in "${NEIGHBORLY_EXTENDER:-${build}/extender/neighborly-extender}" "${build}/node-agent/neighborly-agent"; do
  if [[ ! -x "${bin}" ]]; then
    echo "bench-scheduler: ${bin} is missing (make build)" >&2
    exit 1
  fi
done
helm="$("${root}/scripts/helm.sh")"

cd "${root}/scheduler"
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
etcd_version="$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
start=${SECONDS}
echo "bench-scheduler: building etcd ${etcd_version} and scheduler_perf of k8s.io/kubernetes ${k8s} (Go build cache: $(go env GOCACHE))"
mkdir -p "${root}/build/go/bin"
# scheduler_perf starts a fresh etcd per workload from PATH
# (test/integration/framework.StartEtcd); go.mod's tool line pins it.
[[ -n "${BENCH_NO_BUILD:-}" ]] || nice -n 10 go build -o "${root}/build/go/bin/etcd" go.etcd.io/etcd/server/v3
[[ -n "${BENCH_NO_BUILD:-}" ]] || nice -n 10 go test -c -o "${root}/build/go/bin/scheduler-perf.test" ./perf
echo "bench-scheduler: built in $((SECONDS - start)) s"

mkdir -p "${out}/logs"
cd "${root}/scheduler/perf"
cmd=("${root}/build/go/bin/scheduler-perf.test" -test.run='^$' -test.bench=BenchmarkPerfScheduling
  -test.benchtime=1ns -test.timeout=120m
  -perf-scheduling-label-filter="${filter}" -data-items-dir="${out}" "$@")
echo "bench-scheduler: ${cmd[*]}"
start=${SECONDS}
ARTIFACTS="${out}/logs" PATH="${root}/build/go/bin:${PATH}" NEIGHBORLY_BUILD_DIR="${build}" NEIGHBORLY_HELM="${helm}" \
  NEIGHBORLY_BENCH_OUT="${out}" NEIGHBORLY_BENCH_ROUNDS="${rounds}" NEIGHBORLY_BENCH_SEED="${BENCH_SEED:-}" "${cmd[@]}" 2>&1 | tee "${out}/bench.log" | grep -v '^\s*[IWE][0-9]\{4\} '
rc=${PIPESTATUS[0]}
echo "bench-scheduler: ran in $((SECONDS - start)) s; results in ${out}/results.md, full log ${out}/bench.log"
exit "${rc}"
