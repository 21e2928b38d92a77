#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the built image (scripts/image.sh test, `make image-test`):
#   - its metadata: OCI labels, non-root user, entrypoint;
#   - every runtime package of deploy/image/runtime-packages.txt is installed,
#     and every shared library the three binaries link resolves inside it;
#   - the binaries carry no debug info and answer --version;
#   - the extender and a simulated fleet (neighborly-agent --simulate, the
#     scenario installed in the image) run from the image, the demo
#     (build/…/neighborly-demo on the host) places its pods through them, and
#     neighborlyctl from the image explains the decisions;
#   - SIGTERM (podman stop) ends the extender with exit status 0.
# Prints one line per check; exits 1 at the first failure with the logs.
#
# Usage: NEIGHBORLY_IMAGE=localhost/neighborly:0.1.0 test/image/image_test.sh [BUILD]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"
build="${1:-build/default}"
image="${NEIGHBORLY_IMAGE:?set NEIGHBORLY_IMAGE}"
packages_file="${NEIGHBORLY_PACKAGES_FILE:-deploy/image/runtime-packages.txt}"
scenario_in_image=/usr/local/share/neighborly/examples/content-platform.yaml
run_id="neighborly-image-test-$$"
[[ -x "${build}/tools/demo/neighborly-demo" ]] || {
  echo "image-test: no ${build}/tools/demo/neighborly-demo (make build builds it)" >&2
  exit 1
}
logdir="$(mktemp -d)"
containers=()

cleanup() {
  local c
  for c in "${containers[@]}"; do podman rm -f -t 0 "${c}" >/dev/null 2>&1 || true; done
  rm -rf "${logdir}"
}
trap cleanup EXIT

fail() {
  echo "FAIL $*"
  local c
  for c in "${containers[@]}"; do
    echo "--- podman logs ${c}"
    podman logs "${c}" 2>&1 | tail -n 30 || true
  done
  exit 1
}
ok() { echo "ok   $*"; }

# podman as this VM allows it: runc (crun is refused), cgroupfs, bounded limits.
# Host network: the extender picks free ports (port 0) and prints them.
run_in_image() {
  podman --runtime runc --cgroup-manager=cgroupfs run \
    --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 --network host "$@"
}

# --- metadata
inspect() { podman image inspect --format "$1" "${image}"; }
[[ "$(inspect '{{.Config.User}}')" == "65532:65532" ]] || fail "image user is '$(inspect '{{.Config.User}}')', want 65532:65532"
[[ "$(inspect '{{json .Config.Entrypoint}}')" == '["neighborly-extender"]' ]] ||
  fail "entrypoint $(inspect '{{json .Config.Entrypoint}}')"
for label in title description version revision created licenses source; do
  value="$(inspect "{{index .Config.Labels \"org.opencontainers.image.${label}\"}}")"
  [[ -n "${value}" && "${value}" != "<no value>" ]] || fail "label org.opencontainers.image.${label} missing"
done
[[ "$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')" == \
   "$(sed -nE 's/^project\(neighborly VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)" ]] ||
  fail "label version differs from CMakeLists.txt's"
ok "metadata: user 65532, entrypoint neighborly-extender, OCI labels"

# --- packages and libraries
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${packages_file}" | tr -d ' \t')
status="$(run_in_image --rm --entrypoint dpkg-query "${image}" -W -f='${Package} ${Status}\n' "${packages[@]}" 2>&1 || true)"
for p in "${packages[@]}"; do
  grep -q "^${p} install ok installed$" <<<"${status}" || fail "runtime package ${p} not installed in the image: ${status}"
done
ok "${#packages[@]} runtime packages installed"
for b in neighborly-extender neighborly-agent neighborlyctl; do
  libs="$(run_in_image --rm --entrypoint ldd "${image}" "/usr/local/bin/${b}" 2>&1)" || fail "ldd ${b}: ${libs}"
  if grep -q "not found" <<<"${libs}"; then
    fail "${b} links libraries missing from the image (add their package to ${packages_file}):
$(grep 'not found' <<<"${libs}")"
  fi
  out="$(run_in_image --rm --entrypoint "${b}" "${image}" --version 2>&1)" || fail "${b} --version: ${out}"
  [[ "${out}" == "${b} "* ]] || fail "${b} --version printed '${out}'"
done
ok "every linked library resolves; --version answers"
size="$(run_in_image --rm --entrypoint sh "${image}" -c 'du -cb /usr/local/bin/neighborly* | tail -n1' | cut -f1)"
ok "binaries: $((size / 1000000)) MB together (stripped: scripts/image.sh checks .debug_info)"

# --- the demo through the image
ext="${run_id}-extender"
containers+=("${ext}")
run_in_image -d --name "${ext}" "${image}" \
  --http-address 127.0.0.1:0 --grpc-address 127.0.0.1:0 --grpc-insecure-plaintext >/dev/null
line=""
for _ in $(seq 1 150); do
  line="$(podman logs "${ext}" 2>/dev/null | grep -m1 '^listening http=' || true)"
  [[ -n "${line}" ]] && break
  [[ "$(podman inspect --format '{{.State.Running}}' "${ext}")" == "true" ]] || fail "the extender exited"
  sleep 0.2
done
[[ -n "${line}" ]] || fail "the extender printed no 'listening' line within 30 s"
http="$(sed -E 's/.*http=([^ ]+).*/\1/' <<<"${line}")"
grpc="$(sed -E 's/.*grpc=([^ ]+).*/\1/' <<<"${line}")"
ok "extender from the image listening: http=${http} grpc=${grpc}"

agent="${run_id}-agent"
containers+=("${agent}")
run_in_image -d --name "${agent}" --entrypoint neighborly-agent "${image}" \
  --simulate "${scenario_in_image}" --extender "${grpc}" --interval 1s --insecure-plaintext \
  --metrics-address 127.0.0.1:0 >/dev/null

if ! "${build}/tools/demo/neighborly-demo" --server "http://${http}" \
    --scenario deploy/examples/content-platform.yaml \
    --pods deploy/examples/content-platform-incoming.json >"${logdir}/demo.out" 2>&1; then
  cat "${logdir}/demo.out"
  fail "the demo failed against the image's extender and agent"
fi
nodes="$(run_in_image --rm --entrypoint neighborlyctl "${image}" --server "http://${http}" nodes 2>&1)" ||
  fail "neighborlyctl nodes: ${nodes}"
count="$(grep -c '^node-' <<<"${nodes}" || true)"
[[ "${count}" -eq 6 ]] || fail "neighborlyctl nodes lists ${count} nodes, want the scenario's 6:
${nodes}"
explain="$(run_in_image --rm --entrypoint neighborlyctl "${image}" --server "http://${http}" \
  explain analytics/analytics-ingest-28415-x7k2p 2>&1)" || fail "neighborlyctl explain: ${explain}"
# Issue 22: the batch job is refused beside the article service by the
# slowdown predicted for it.
grep -q "interference: would slow latency-critical pod content/article-service" <<<"${explain}" ||
  fail "the batch job's decisions name no interference rejection:
${explain}"
ok "demo placed its pods through the image's extender and simulated fleet; neighborlyctl sees 6 nodes and the interference rejections"

# --- graceful stop
podman stop -t 20 "${ext}" >/dev/null
code="$(podman inspect --format '{{.State.ExitCode}}' "${ext}")"
[[ "${code}" == "0" ]] || fail "the extender exited ${code} on SIGTERM, want 0"
ok "SIGTERM: the extender exits 0"
echo "image-test: ${image} passed"
