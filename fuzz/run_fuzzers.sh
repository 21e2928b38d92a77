#!/usr/bin/env bash
# Runs each libFuzzer target of a `fuzz` preset build, one at a time and at
# the lowest CPU priority, for at most SECONDS or RUNS inputs, whichever comes
# first; records one line per run in BUILD/fuzz/runs.tsv and prints it.
#
#   fuzz/run_fuzzers.sh build/fuzz 600 10000000                 # every target
#   fuzz/run_fuzzers.sh build/fuzz 60 10000000 cpu_list_fuzzer  # one
#
# A unit slower than FUZZ_UNIT_TIMEOUT seconds (60: this runs at nice 19 on
# shared machines, where a starved process sees 40 ms units take 13 s of wall
# time) is a finding; re-run the input alone before believing it.
#
# -max_len per target where the real inputs are small enough that longer
# inputs only slow the fuzzer down (docs/fuzzing.md, "Speed"): scenario files
# up to 4 KiB reach every key, anchor and merge rule of the format, and
# yaml-cpp's cost grows with the input (4 KiB: 2.5x the inputs per second of
# the 12 KiB content-platform.yaml the corpus would otherwise allow). The two
# config files, 2 KiB: a full extender.yaml with every key is 1.3 KiB, and
# at 4 KiB the inputs grow until the rate halves within ten minutes.
#
# Corpora grow in BUILD/fuzz/corpus/<target>/ (seeded from the fixtures by
# seed_corpus.py, plus fuzz/regressions/<target>/); a crash lands in
# BUILD/fuzz/artifacts/<target>/ and makes the exit status 1. Copy it into
# fuzz/regressions/<target>/ once fixed.
set -uo pipefail

build=${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS] [RUNS] [TARGET...]}
seconds=${2:-60}
runs=${3:-10000000}
shift $(( $# < 3 ? $# : 3 ))
src=$(cd "$(dirname "$0")/.." && pwd)
out="$build/fuzz"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(sed -n 's/^neighborly_add_fuzzer(\([a-z_0-9]*\).*/\1/p' "$src/fuzz/CMakeLists.txt")
fi

report_seeds=()
[ -x "$out/neighborly_fuzz_report_seeds" ] && report_seeds=(--report-seeds "$out/neighborly_fuzz_report_seeds")
python3 "$src/fuzz/seed_corpus.py" --source "$src" --out "$out/seeds" "${report_seeds[@]}" >/dev/null ||
  exit 1

# ASan records the allocation stack of every malloc in a depot that only
# grows; in multi-hour runs that was a quarter of the time and 1 GiB of RSS
# (docs/fuzzing.md, "Speed"). Without it a heap error still shows the stack
# where it happened, but not where the memory was allocated or freed: re-run
# the artifact alone, with default ASAN_OPTIONS, for those.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}

status=0
[ -f "$out/runs.tsv" ] || printf 'date\ttarget\tinputs\texec_per_s\tseconds\tcorpus\tresult\n' >"$out/runs.tsv"
for t in "${targets[@]}"; do
  bin="$out/$t"
  [ -x "$bin" ] || { echo "$t: not built ($bin)" >&2; status=1; continue; }
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
  inputs=("$out/corpus/$t" "$out/seeds/$t")
  [ -d "$src/fuzz/regressions/$t" ] && inputs+=("$src/fuzz/regressions/$t")
  max_len=()
  case "$t" in
    scenario_fuzzer) max_len=(-max_len=4096) ;;
    extender_config_fuzzer | kubelet_config_fuzzer) max_len=(-max_len=2048) ;;
  esac
  log="$out/artifacts/$t/last-run.log"
  start=$(date +%s)
  nice -n 19 "$bin" -runs="$runs" -max_total_time="$seconds" -timeout="${FUZZ_UNIT_TIMEOUT:-60}" -rss_limit_mb=2048 \
    "${max_len[@]}" -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" "${inputs[@]}" >"$log" 2>&1
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(ls "$out/corpus/$t" | wc -l)
  if [ $rc -eq 0 ]; then
    result=ok
  else
    result="FAILED rc=$rc: $(grep -m1 -E 'ERROR: |fuzz invariant broken|runtime error' "$log" | cut -c1-160)"
    status=1
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${executed:-?}" "${rate:-?}" \
    "$elapsed" "$corpus" "$result" | tee -a "$out/runs.tsv"
done
exit $status
