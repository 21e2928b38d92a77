#!/usr/bin/env bash
# Checks the AVX2 decode object (extender_decode_haswell.cc): every function it
# exports or shares with other objects (global or weak symbols, which the
# linker may pick for the whole program) must either belong to the AVX2 code
# (simdjson::haswell, decode_haswell) or contain no AVX/BMI instruction.
# Otherwise a CPU without AVX2 could run AVX2 code outside the dispatch.
#   check_avx_isolation.sh OBJECT...
set -euo pipefail
status=0
for obj in "$@"; do
  shared=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[TWVu]$/ { $1=""; $2=""; sub(/^  /, ""); print }' |
    grep -v -e 'simdjson::haswell::' -e 'decode_haswell' || true)
  [[ -z "$shared" ]] && continue
  # Disassemble and print each shared function that uses VEX (v*) or BMI/LZCNT/POPCNT.
  bad=$(objdump -d -C --no-show-raw-insn "$obj" | awk -v list="$shared" '
    BEGIN { n = split(list, names, "\n"); for (i = 1; i <= n; ++i) want[names[i]] = 1 }
    /^[0-9a-f]+ <.*>:$/ { name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name); next }
    want[name] && $2 ~ /^(v[a-z0-9]+|andn|blsr|blsi|blsmsk|bzhi|pdep|pext|rorx|sarx|shlx|shrx|mulx|tzcnt|lzcnt|popcnt)$/ {
      if (!(name in seen)) { print name ": " $2; seen[name] = 1 }
    }')
  if [[ -n "$bad" ]]; then
    echo "FAIL: $obj shares functions compiled with AVX2/BMI instructions:"
    echo "$bad"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "ok: no shared function in $* uses AVX2/BMI instructions"
exit $status
