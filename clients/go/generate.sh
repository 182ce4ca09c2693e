#!/usr/bin/env bash
# Regenerates the committed Go stubs (decider/v1) from proto/decider/v1/decider.proto with
# protoc, protoc-gen-go and protoc-gen-go-grpc as Debian bookworm ships them (protobuf-compiler
# 3.21.12, protoc-gen-go 1.28.1, protoc-gen-go-grpc 1.0 from golang-google-grpc-dev 1.33.3):
# their versions are written into the files, so another version reads as stale.
# Usage: bash clients/go/generate.sh [OUTDIR]   (OUTDIR defaults to clients/go)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here}
module=$(sed -n 's/^module //p' "$here/go.mod")
mkdir -p "$out"
cd "$root"
protoc -Iproto \
  --go_out="$out" --go_opt=module="$module" \
  --go-grpc_out="$out" --go-grpc_opt=module="$module" \
  proto/decider/v1/decider.proto
