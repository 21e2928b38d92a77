#!/usr/bin/env bash
# Pins scheduler/go.mod to one k8s.io/kubernetes release: requires it and
# replaces every staging module (k8s.io/api, k8s.io/client-go, ...) with the
# matching v0.X.Y tag. The staging list is read from that release's own go.mod
# (its `replace k8s.io/x => ./staging/src/k8s.io/x` lines), so it is exact for
# every minor. Needs only the Go module proxy. Usage: hack/pin-k8s.sh v1.36.3
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
K8S=${1:?usage: hack/pin-k8s.sh v1.36.3}
STAGING=v0.${K8S#v1.}
GOMOD=$(go mod download -json "k8s.io/kubernetes@${K8S}" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[[ -f "$GOMOD" ]] || { echo "pin-k8s: no go.mod for k8s.io/kubernetes@${K8S}" >&2; exit 1; }
mods=$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/.*#\1#p' "$GOMOD")
[[ -n "$mods" ]] || { echo "pin-k8s: no staging replaces in $GOMOD" >&2; exit 1; }
for m in $mods; do
  go mod edit -replace="${m}=${m}@${STAGING}"
done
go mod edit -require="k8s.io/kubernetes@${K8S}" -replace="k8s.io/kubernetes=k8s.io/kubernetes@${K8S}"
echo "pinned k8s.io/kubernetes ${K8S} and $(echo "$mods" | wc -w) staging modules at ${STAGING}"
