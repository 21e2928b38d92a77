# SPDX-License-Identifier: Apache-2.0
# The neighborly-scheduler image: kube-scheduler of the release pinned in
# scheduler/go.mod with the Neighborly framework plugin (the chart's
# scheduler.plugin.image, `scheduler.integration: plugin`), and
# neighborly-rebalancer (the chart's `rebalancer.enabled`, docs/operations.md).
#
# From binaries built on the host (what `make scheduler-image` does,
# scripts/image.sh scheduler): build/image/scheduler/neighborly-scheduler (stripped;
# it links only Debian's libc), on the same debootstrap base as deploy/Dockerfile:
#   podman build --isolation chroot -f deploy/scheduler.Dockerfile \
#     --build-arg BASE_IMAGE=localhost/neighborly-base:... .
ARG BASE_IMAGE=docker.io/library/debian:12-slim
FROM ${BASE_IMAGE}
ARG VERSION=0.1.0
ARG KUBERNETES_VERSION=unknown
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="neighborly-scheduler" \
      org.opencontainers.image.description="kube-scheduler ${KUBERNETES_VERSION} with the Neighborly framework plugin" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/neighborly/neighborly" \
      org.opencontainers.image.base.name="debian:12"
COPY build/image/scheduler/neighborly-scheduler /usr/local/bin/neighborly-scheduler
COPY build/image/scheduler/neighborly-rebalancer /usr/local/bin/neighborly-rebalancer
USER 65532:65532
ENTRYPOINT ["neighborly-scheduler"]
