#!/usr/bin/env bash
# Installs the Debian 12 packages Neighborly needs to build, test and run the
# demo. Idempotent: installs only what is missing, and nothing when all is there.
#
# Usage: scripts/setup.sh           the build, test and demo packages
#        scripts/setup.sh --image   also podman, runc and debootstrap (make image,
#                                   make image-test; docs/operations.md "The image")
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev libabsl-dev
  nlohmann-json3-dev libspdlog-dev libsimdjson-dev libcpp-httplib-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libpfm4-dev intel-cmt-cat
  clang libclang-rt-14-dev curl openssl libssl-dev libjemalloc-dev
  python3-yaml prometheus   # chart tests: PyYAML, promtool (rules and /metrics checks)
)
if [[ "${1:-}" == "--image" ]]; then
  # The image is built with podman on a base made by debootstrap (no registry
  # needed); runc because crun is refused on some VMs.
  packages+=(podman runc debootstrap)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq || true
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
