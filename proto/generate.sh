#!/usr/bin/env bash
# Regenerates the committed Python code from the .proto files.
# Usage: bash proto/generate.sh [OUTDIR]   (OUTDIR defaults to the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root}
cd "$root"
python -m grpc_tools.protoc -Iproto \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  proto/decider/v1/*.proto
