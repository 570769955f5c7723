#!/usr/bin/env bash
# Regenerates Go code for every .proto file in the repository with protoc (Debian
# protobuf-compiler) and pinned protoc-gen-go / protoc-gen-go-grpc, installed into
# a cache directory outside the work tree. Output lands where each file's
# go_package says, relative to the module root.
set -euo pipefail
cd "$(dirname "$0")/.."
MODULE=$(go list -m)
TOOLS=${LONGHORN_TOOLS:-$HOME/.cache/longhorn-tools}/bin
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
mkdir -p "$TOOLS"
want_go="protoc-gen-go $PROTOC_GEN_GO_VERSION"
if [ ! -x "$TOOLS/protoc-gen-go" ] || [ "$("$TOOLS/protoc-gen-go" --version 2>/dev/null)" != "$want_go" ]; then
  echo "gen-proto: installing protoc-gen-go $PROTOC_GEN_GO_VERSION"
  GOBIN=$TOOLS GOFLAGS=-mod=mod go install google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION
fi
if [ ! -x "$TOOLS/protoc-gen-go-grpc" ] || ! "$TOOLS/protoc-gen-go-grpc" --version 2>/dev/null | grep -q "${PROTOC_GEN_GO_GRPC_VERSION#v}"; then
  echo "gen-proto: installing protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC_VERSION"
  GOBIN=$TOOLS GOFLAGS=-mod=mod go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION
fi
command -v protoc >/dev/null || { echo "gen-proto: protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
mapfile -t protos < <(git ls-files --cached --others --exclude-standard '*.proto' | sort)
for p in "${protos[@]}"; do
  PATH="$TOOLS:$PATH" protoc -I "$(dirname "$p")" \
    --go_out=. --go_opt=module="$MODULE" \
    --go-grpc_out=. --go-grpc_opt=module="$MODULE" \
    "$p"
done
echo "gen-proto: ${#protos[@]} file(s)"
