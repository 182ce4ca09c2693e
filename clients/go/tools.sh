#!/usr/bin/env bash
# The Go programs that make and check this module, each pinned, built from the module proxy with
# `go install` into a cache directory (no prebuilt binary, no system package): protoc-gen-go and
# protoc-gen-go-grpc (the stubs in decider/v1, whose headers name these versions) and staticcheck
# (the lint CI runs). buf itself is npm's @bufbuild/buf at .ci/buf-check's version (generate.sh):
# built from source it cost CI about 9 minutes on a new machine, and it writes no version into
# the stubs. A program
# already there, built from its pinned version by the Go in use, is kept. Prints the directory,
# to put first on PATH:   PATH="$(bash clients/go/tools.sh):$PATH"
# The directory: $GO_TOOLS_DIR, else ~/.cache/jobset-decider/go-tools ($XDG_CACHE_HOME's).
set -euo pipefail
tools=(
  google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
  google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
  honnef.co/go/tools/cmd/staticcheck@v0.8.2
)
dir=${GO_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jobset-decider/go-tools}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
goversion=$(go env GOVERSION)
for tool in "${tools[@]}"; do
  pkg=${tool%@*}
  version=${tool#*@}
  bin="$dir/${pkg##*/}"
  # `go version -m` reads from the binary the Go that built it, its package and its module's
  # version. A staticcheck built by an older Go cannot load code for a newer one: rebuilt too.
  if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | awk -v go="$goversion" -v pkg="$pkg" -v v="$version" '
      NR == 1 { ok = ($2 == go) }
      $1 == "path" { ok = ok && ($2 == pkg) }
      $1 == "mod" { ok = ok && ($3 == v) }
      END { exit !ok }'; then
    continue
  fi
  echo "tools.sh: go install $tool" >&2
  # From the cache directory, with no GOFLAGS: a go.mod, go.work or -modfile of the caller's
  # has no say in what `go install PKG@VERSION` builds.
  (cd "$dir" && GOFLAGS= GOWORK=off GOBIN="$dir" go install "$tool")
done
echo "$dir"
