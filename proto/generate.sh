#!/usr/bin/env bash
# Regenerates the committed Python code from the .proto files, into the package the client and
# the server share (clients/python/decider_api/v1). protoc names the Python module after the
# .proto's path (decider.v1); the imports are renamed to the package they are committed in, so
# the client installs without the server. decider/v1 re-exports the same classes.
# Usage: bash proto/generate.sh [OUTDIR]   (OUTDIR defaults to the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root}
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python -m grpc_tools.protoc -Iproto \
  --python_out="$tmp" --pyi_out="$tmp" --grpc_python_out="$tmp" \
  proto/decider/v1/*.proto
dest="$out/clients/python/decider_api/v1"
mkdir -p "$dest"
for f in "$tmp"/decider/v1/*.py "$tmp"/decider/v1/*.pyi; do
  sed -e 's/^from decider\.v1 import /from decider_api.v1 import /' \
      -e "s/'decider\.v1\.decider_pb2'/'decider_api.v1.decider_pb2'/" \
      "$f" > "$dest/$(basename "$f")"
done
# buf (https://buf.build) checks the contract: `npx @bufbuild/buf lint` and, in CI, `buf breaking`
# against the previous commit (.ci/buf-check).
