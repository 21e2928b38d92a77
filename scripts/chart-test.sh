#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the Helm chart (charts/neighborly) and deploy/: helm lint --strict,
# helm template for each mode with assertions on the rendered objects, the
# values schema refusing bad values, generated README/schema up to date,
# promtool check rules. Run by `make test`; needs npm (for Helm, see
# scripts/helm.sh), python3 with PyYAML and promtool (scripts/setup.sh
# installs python3-yaml and prometheus).
#
# Usage: scripts/chart-test.sh [-k NAME_SUBSTRING] [--build BUILD_DIR (default build/default)]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

helm="$("${root}/scripts/helm.sh")"

# Debian's python3 has python3-yaml from setup.sh; another python3 on PATH
# (pyenv, a venv) may not.
python=""
for candidate in /usr/bin/python3 python3; do
  if command -v "${candidate}" >/dev/null 2>&1 && "${candidate}" -c 'import yaml' 2>/dev/null; then
    python="${candidate}"
    break
  fi
done
if [[ -z "${python}" ]]; then
  echo "chart-test: no python3 with PyYAML (scripts/setup.sh installs python3-yaml)" >&2
  exit 1
fi

echo "chart-test: $("${helm}" version --short), $("${python}" --version 2>&1)"
exec "${python}" "${root}/scripts/chart_test.py" --helm "${helm}" "$@"
