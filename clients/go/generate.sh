#!/usr/bin/env bash
# Regenerates the committed Go stubs (decider/v1) from proto/decider/v1/decider.proto: `buf
# generate` (buf.gen.yaml) with npm's buf at .ci/buf-check's version, and protoc-gen-go and
# protoc-gen-go-grpc at the versions tools.sh pins, which it installs first if they are missing. The plugins' versions are written
# into the files, so another version reads as stale (decider/v1/fresh_test.go).
# Usage: bash clients/go/generate.sh [OUTDIR]   (OUTDIR defaults to clients/go's parent's parent,
# the repository's root: the files land in OUTDIR/clients/go/decider/v1)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root}
PATH="$(bash "$here/tools.sh"):$PATH"
cd "$root"
BUF_VERSION=$(sed -n 's/^BUF_VERSION=//p' .ci/buf-check)
npx --yes "@bufbuild/buf@${BUF_VERSION}" generate --template clients/go/buf.gen.yaml --output "$out"
