#!/usr/bin/env bash
# The module checked on the newest gRPC-Go, protobuf-go and sigs.k8s.io/yaml (pinned below), as
# `go vet`, `staticcheck` and `go test` in this directory check it on go.mod's versions, the
# oldest it claims (docs/clients.md, "Go: versions"). go.mod and go.sum stay as they are: a
# temporary Go workspace (GOWORK) holds this module and a second one that requires the pins and
# imports what this module imports, so Go's selection (the highest version any module asks for)
# builds this one on them. Extra arguments go to `go test`.
# Usage: bash clients/go/test-newest.sh [-run REGEXP ...]
set -euo pipefail
newest=(google.golang.org/grpc@v1.85.0 google.golang.org/protobuf@v1.36.12 sigs.k8s.io/yaml@v1.6.0)
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
PATH="$(bash tools.sh):$PATH"
# gRPC-Go 1.85 asks for go 1.26.0: an older Go fails here instead of fetching a newer toolchain.
export GOTOOLCHAIN=local
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
module=$(go list -m)
imports=$(go list -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}' ./... |
  grep '\.' | grep -v "^$module" | sort -u)
mkdir "$tmp/pins"
{
  echo "// Package pins imports what $module imports, at the versions its go.mod requires."
  echo "package pins"
  echo
  for pkg in $imports; do echo "import _ \"$pkg\""; done
} > "$tmp/pins/pins.go"
(
  cd "$tmp/pins"
  export GOWORK=off
  go mod init newest.invalid/pins
  go get "${newest[@]}"
  go mod tidy
)
(cd "$tmp" && go work init "$here" "$tmp/pins")
export GOWORK="$tmp/go.work"
# Every pin selected exactly: this module asks for none higher.
for want in "${newest[@]}"; do
  got=$(go list -m -f '{{.Path}}@{{.Version}}' "${want%@*}")
  [ "$got" = "$want" ] || { echo "test-newest.sh: $got selected, not $want" >&2; exit 1; }
done
echo "test-newest.sh: $(go list -m -f '{{.Path}} {{.Version}}' "${newest[@]%@*}" | paste -sd' '), go $(go env GOVERSION)"
go vet ./...
staticcheck ./...
go test -count=1 "$@" ./...
