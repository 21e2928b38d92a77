#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the neighborly-scheduler image (scripts/image.sh scheduler-test):
#   - OCI labels, non-root user, entrypoint;
#   - the binary starts in the image and reports the pinned kube-scheduler;
#   - the Neighborly plugin is registered in it: a profile enabling it with
#     args missing the address fails start-up naming that field (a binary
#     without the plugin would say the plugin does not exist instead).
# The plugin's behaviour against a real API server and extender is make e2e's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
image="${NEIGHBORLY_SCHEDULER_IMAGE:?set NEIGHBORLY_SCHEDULER_IMAGE}"
podman=(podman --runtime runc --cgroup-manager=cgroupfs)
run=("${podman[@]}" run --rm --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
fail() { echo "scheduler-image-test: FAIL: $*" >&2; exit 1; }
ok() { echo "scheduler-image-test: ok: $*"; }

want_k8s="$(cd "${root}/scheduler" && GOTOOLCHAIN=local go list -m -f '{{.Version}}' k8s.io/kubernetes)"
user="$("${podman[@]}" image inspect --format '{{.Config.User}}' "${image}")"
[[ "${user}" == "65532:65532" ]] || fail "runs as '${user}', want 65532:65532"
title="$("${podman[@]}" image inspect --format '{{index .Labels "org.opencontainers.image.title"}}' "${image}")"
[[ "${title}" == "neighborly-scheduler" ]] || fail "OCI title label '${title}'"
ok "non-root (65532), OCI labels"

version="$("${run[@]}" "${image}" --version 2>&1)" || fail "--version: ${version}"
[[ "${version}" == *"${want_k8s}"* ]] || fail "--version says '${version}', want ${want_k8s}"
ok "starts in the image: ${version}"
rebalancer="$("${run[@]}" --entrypoint neighborly-rebalancer "${image}" --version 2>&1)" || fail "neighborly-rebalancer --version: ${rebalancer}"
[[ "${rebalancer}" == "neighborly-rebalancer "* ]] || fail "neighborly-rebalancer --version says '${rebalancer}'"
ok "the rebalancer starts in the image: ${rebalancer}"

dir="$(mktemp -d)"
trap 'rm -rf "${dir}"' EXIT
cat >"${dir}/kubeconfig" <<'KC'
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
KC
cat >"${dir}/config.yaml" <<'CFG'
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /cfg/kubeconfig}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: neighborly-scheduler
  plugins: {multiPoint: {enabled: [{name: Neighborly}]}}
  pluginConfig:
  - name: Neighborly
    args: {insecure: true}
CFG
chmod 0755 "${dir}"
chmod 0644 "${dir}"/*
out="$(timeout 60 "${run[@]}" -v "${dir}:/cfg:ro" "${image}" --config=/cfg/config.yaml --secure-port=0 2>&1)" &&
  fail "start-up with invalid plugin args succeeded"
[[ "${out}" == *"pluginConfig[Neighborly].args.address: Required value"* ]] ||
  fail "the Neighborly plugin did not validate its args in the image:\n$(tail -5 <<<"${out}")"
ok "the Neighborly plugin is registered and validates its args"
