#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make e2e: the real kube-scheduler of the release pinned in scheduler/go.mod,
# built from Go modules, schedules the seed scenario's pods through an
# in-process kube-apiserver + embedded etcd, consulting the real
# neighborly-extender (build/default) fed by neighborly-agent --simulate.
# See docs/e2e.md. Needs Go >= the go directive of scheduler/go.mod and the Go
# module proxy; Helm comes from scripts/helm.sh.
# Usage: scripts/e2e.sh [BUILD_DIR [go test flags, e.g. -test.run=Stock]]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(realpath "${1:-${root}/build/default}")"
shift $(( $# > 0 ? 1 : 0 ))
export GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

if ! command -v go >/dev/null 2>&1; then
  echo "e2e: Go is needed (go 1.26 or newer in PATH)" >&2
  exit 1
fi
want="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "${root}/scheduler/go.mod")"
have="$(go env GOVERSION | sed 's/^go//')"
if [[ "$(printf '%s\n%s\n' "${want}" "${have}" | sort -V | head -1)" != "${want}" ]]; then
  echo "e2e: scheduler/go.mod needs Go ${want}, this machine has ${have}" >&2
  exit 1
fi
for bin in extender/neighborly-extender node-agent/neighborly-agent tools/demo/neighborly-demo; do
  if [[ ! -x "${build}/${bin}" ]]; then
    echo "e2e: ${build}/${bin} is missing (make build)" >&2
    exit 1
  fi
done
helm="$("${root}/scripts/helm.sh")"

cd "${root}/scheduler"
unformatted="$(gofmt -l .)"
if [[ -n "${unformatted}" ]]; then
  echo "e2e: not gofmt-formatted: ${unformatted}" >&2
  exit 1
fi
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
minor="$(cut -d. -f2 <<<"${k8s}")"
# Without the stamp both report v0.0.0-master+$Format:%H$, which the chart's
# kubeVersion (>=1.25) refuses on helm install.
ldflags="-X k8s.io/component-base/version.gitVersion=${k8s} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
start=${SECONDS}
echo "e2e: building kube-scheduler ${k8s} and the e2e test (Go build cache: $(go env GOCACHE))"
nice -n 10 go build -ldflags "${ldflags}" -o "${root}/build/go/bin/kube-scheduler" ./cmd/kube-scheduler
nice -n 10 go build -ldflags "${ldflags}" -o "${root}/build/go/bin/neighborly-scheduler" ./cmd/neighborly-scheduler
nice -n 10 go build -o "${root}/build/go/bin/neighborly-rebalancer" ./cmd/neighborly-rebalancer
nice -n 10 go test -c -ldflags "${ldflags}" -o "${root}/build/go/bin/e2e.test" ./e2e
echo "e2e: built in $((SECONDS - start)) s"

echo "e2e: go vet, and the framework plugin's, the test PKI's and the scheduler_perf harness's unit tests"
nice -n 10 go vet ./...
# Every package of the module but ./e2e (built above, run below), named one by
# one; a package with tests that this list misses fails here.
go_packages=(./plugin/... ./internal/testpki ./internal/subprocess ./internal/rebalancer ./perf/...)
missed="$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' ./... |
  grep -v -e '/e2e$' -e '/plugin' -e '/internal/testpki$' -e '/internal/subprocess$' -e '/internal/rebalancer$' -e '/perf' || true)"
if [[ -n "${missed}" ]]; then
  echo "e2e: Go packages with tests that no target runs (add them to go_packages): ${missed}" >&2
  exit 1
fi
# The harness's tests render the chart and run the agent: without these
# they would skip.
NEIGHBORLY_HELM="${helm}" NEIGHBORLY_BUILD_DIR="${build}" nice -n 10 go test -count=1 "${go_packages[@]}"

start=${SECONDS}
cd "${root}/scheduler/e2e"
NEIGHBORLY_BUILD_DIR="${build}" NEIGHBORLY_HELM="${helm}" \
  KUBE_SCHEDULER="${root}/build/go/bin/kube-scheduler" \
  NEIGHBORLY_SCHEDULER="${root}/build/go/bin/neighborly-scheduler" \
  NEIGHBORLY_REBALANCER="${root}/build/go/bin/neighborly-rebalancer" \
  "${root}/build/go/bin/e2e.test" -test.v -test.count=1 -test.timeout=20m "$@"
echo "e2e: tests ran in $((SECONDS - start)) s"

# The neighborly-scheduler image (the chart's plugin mode) built and started,
# where podman and root are available, as make test does for the main image.
if [[ "${NEIGHBORLY_IMAGE_TEST:-1}" == "0" ]]; then
  echo "e2e: scheduler image test SKIPPED (NEIGHBORLY_IMAGE_TEST=0)"
elif [[ "$(id -u)" -ne 0 ]] || ! command -v podman >/dev/null 2>&1; then
  echo "e2e: scheduler image test SKIPPED (needs root and podman: scripts/setup.sh --image)"
else
  start=${SECONDS}
  "${root}/scripts/image.sh" scheduler-test
  echo "e2e: scheduler image built and tested in $((SECONDS - start)) s"
fi
