#!/usr/bin/env bash
# Regenerates scheduler/gen/placementv1 from proto/neighborly/placement/v1.
# The generated Go is committed (building the scheduler needs no protoc); run
# this after changing the .proto. The generators come from the Go module proxy
# at pinned versions.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export GOTOOLCHAIN=local
bin="${root}/.cache/go-tools"
mkdir -p "${bin}"
GOBIN="${bin}" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
GOBIN="${bin}" go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
out="${root}/scheduler/gen/placementv1"
mkdir -p "${out}"
PATH="${bin}:${PATH}" protoc --proto_path="${root}/proto" \
  --go_out="${out}" --go_opt=paths=source_relative \
  --go-grpc_out="${out}" --go-grpc_opt=paths=source_relative \
  neighborly/placement/v1/placement.proto
# paths=source_relative keeps the proto's folders; flatten into the package dir.
mv "${out}/neighborly/placement/v1/"*.go "${out}/"
rm -rf "${out}/neighborly"
