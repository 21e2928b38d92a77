#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Neighborly image with podman, without a container registry
# (`make image`), and tests it (`make image-test`). docs/operations.md, "The image".
#
#   1. The base: `debootstrap --variant=minbase bookworm` with the runtime
#      packages of deploy/image/runtime-packages.txt, imported with
#      `podman import` as localhost/neighborly-base:bookworm-<hash of that
#      list>. Made once per list (about 2 minutes from the Debian mirror).
#   2. The binaries of BUILD (default build/default), installed stripped into
#      build/image/root/usr/local (`cmake --install --strip`).
#   3. `podman build --isolation chroot -f deploy/Dockerfile` with
#      BINARIES=prebuilt on that base: localhost/neighborly:<version>.
#
# Usage: scripts/image.sh build [BUILD]
#        scripts/image.sh test  [BUILD]   builds first, then runs test/image/image_test.sh
#        scripts/image.sh scheduler        localhost/neighborly-scheduler:<version>
#        scripts/image.sh scheduler-test   builds it, then test/image/scheduler_image_test.sh
#
# Needs root (debootstrap, podman's chroot isolation) and podman, runc and
# debootstrap (scripts/setup.sh --image installs them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

action="${1:-build}"
build="${2:-build/default}"
mirror="${NEIGHBORLY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages_file="deploy/image/runtime-packages.txt"

die() { echo "image: $*" >&2; exit 1; }

[[ "$(id -u)" -eq 0 ]] || die "needs root (debootstrap and podman's chroot isolation)"
for tool in podman runc debootstrap cmake; do
  command -v "${tool}" >/dev/null || die "${tool} not found; run scripts/setup.sh --image"
done
[[ "${action}" == scheduler* || -x "${build}/extender/neighborly-extender" ]] || die "no ${build}/extender/neighborly-extender; run make build"

version="$(sed -nE 's/^project\(neighborly VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)"
[[ -n "${version}" ]] || die "cannot read the version from CMakeLists.txt"
if [[ "${action}" == "test" ]]; then
  # A tag of this checkout's own: several checkouts may test at once.
  image="${NEIGHBORLY_IMAGE:-localhost/neighborly:${version}-test-$(pwd | sha256sum | cut -c1-8)}"
else
  image="${NEIGHBORLY_IMAGE:-localhost/neighborly:${version}}"
fi

# The runtime packages, one per line without comments: shared with the Dockerfile.
runtime_packages() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${packages_file}" | tr -d ' \t'; }

make_base() {
  local hash tag rootfs
  hash="$(runtime_packages | sha256sum | cut -c1-12)"
  tag="localhost/neighborly-base:bookworm-${hash}"
  if podman image exists "${tag}"; then
    echo "${tag}"
    return
  fi
  rootfs="$(mktemp -d "${TMPDIR:-/tmp}/neighborly-rootfs.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '${rootfs}'" RETURN
  echo "image: debootstrap --variant=minbase bookworm with $(runtime_packages | wc -l) runtime packages" >&2
  local start=${SECONDS}
  if ! debootstrap --variant=minbase --include="$(runtime_packages | paste -sd, -)" \
      bookworm "${rootfs}" "${mirror}" >"${rootfs}.log" 2>&1; then
    tail -n 20 "${rootfs}.log" >&2
    rm -f "${rootfs}.log"
    die "debootstrap failed (mirror ${mirror}; set NEIGHBORLY_DEBIAN_MIRROR for another)"
  fi
  rm -f "${rootfs}.log"
  rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin \
    "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/log/*.log
  tar -C "${rootfs}" --numeric-owner -c . |
    podman import --change 'CMD ["/bin/bash"]' - "${tag}" >/dev/null
  echo "image: base ${tag} made in $((SECONDS - start)) s" >&2
  echo "${tag}"
}

stage_binaries() {
  local dest="build/image/root"
  rm -rf "${dest}"
  cmake --install "${build}" --prefix "${dest}/usr/local" --strip --component runtime >/dev/null
  local b
  for b in neighborly-extender neighborly-agent neighborlyctl; do
    [[ -x "${dest}/usr/local/bin/${b}" ]] || die "cmake --install did not install ${b}"
    if readelf -S "${dest}/usr/local/bin/${b}" | grep -q '\.debug_info'; then
      die "${b} still carries debug info after --strip"
    fi
  done
}

build_image() {
  local base
  base="$(make_base)"
  stage_binaries
  local revision created
  revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  podman --runtime runc --cgroup-manager=cgroupfs build --isolation chroot \
    -f deploy/Dockerfile \
    --build-arg BASE_IMAGE="${base}" --build-arg BINARIES=prebuilt \
    --build-arg VERSION="${version}" --build-arg REVISION="${revision}" \
    --build-arg CREATED="${created}" \
    -t "${image}" . >/dev/null
  echo "image: built ${image} ($(podman image inspect --format '{{.Size}}' "${image}" |
    awk '{printf "%.0f MB", $1 / 1e6}'), base ${base}"
}

# neighborly-scheduler (Go) on the same base: the chart's
# scheduler.plugin.image. Needs Go and the Go module proxy, like make e2e.
scheduler_image="${NEIGHBORLY_SCHEDULER_IMAGE:-localhost/neighborly-scheduler:${version}}"
build_scheduler_image() {
  command -v go >/dev/null || die "go not found (the scheduler is built from scheduler/, docs/e2e.md)"
  local base k8s minor dest="build/image/scheduler"
  base="$(make_base)"
  k8s="$(cd scheduler && GOTOOLCHAIN=local go list -m -f '{{.Version}}' k8s.io/kubernetes)"
  minor="$(cut -d. -f2 <<<"${k8s}")"
  mkdir -p "${dest}"
  # The flags of scripts/e2e.sh's build plus -s -w: the Go build cache serves
  # every package, only the link runs again.
  (cd scheduler && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false nice -n 10 go build \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=${k8s} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
    -o "${root}/${dest}/neighborly-scheduler" ./cmd/neighborly-scheduler)
  # The chart's rebalancer (rebalancer.enabled) runs from the same image.
  (cd scheduler && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false nice -n 10 go build -ldflags "-s -w" \
    -o "${root}/${dest}/neighborly-rebalancer" ./cmd/neighborly-rebalancer)
  podman --runtime runc --cgroup-manager=cgroupfs build --isolation chroot \
    -f deploy/scheduler.Dockerfile \
    --build-arg BASE_IMAGE="${base}" --build-arg VERSION="${version}" \
    --build-arg KUBERNETES_VERSION="${k8s}" \
    --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    -t "${scheduler_image}" . >/dev/null
  echo "image: built ${scheduler_image} (kube-scheduler ${k8s} + Neighborly plugin, $(podman image inspect --format '{{.Size}}' "${scheduler_image}" |
    awk '{printf "%.0f MB", $1 / 1e6}'))"
}

case "${action}" in
  build) build_image ;;
  scheduler) build_scheduler_image ;;
  scheduler-test)
    build_scheduler_image
    NEIGHBORLY_SCHEDULER_IMAGE="${scheduler_image}" test/image/scheduler_image_test.sh
    ;;
  test)
    build_image
    NEIGHBORLY_IMAGE="${image}" NEIGHBORLY_PACKAGES_FILE="${packages_file}" \
      test/image/image_test.sh "${build}"
    ;;
  *) die "unknown action ${action} (build, test, scheduler or scheduler-test)" ;;
esac
