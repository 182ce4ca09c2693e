#!/usr/bin/env bash
# Builds vendor/ from the Go sources Debian installs under /usr/share/gocode (the golang-*-dev
# packages), so `go build`, `go vet` and `go test ./...` run offline with no module proxy: Go
# uses vendor/ by itself when vendor/modules.txt exists. vendor/ is not committed (it is other
# projects' code); run this once after installing the packages (docs/clients.md, Go):
#   apt-get install golang-go protobuf-compiler protoc-gen-go golang-google-grpc-dev \
#     golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev golang-k8s-sigs-yaml-dev
# Each module is labelled with the version go.mod requires; the script refuses a module that
# go.mod does not name, and prints the Debian package each one came from.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gocode=${GOCODE:-/usr/share/gocode}
cd "$here"
[ -d "$gocode/src" ] || { echo "vendor-debian.sh: $gocode/src not found (install the golang-*-dev packages)" >&2; exit 1; }

# The packages this module imports (its tests and examples included), outside the standard
# library and itself; GOPATH mode reads them without needing vendor/ first.
module=$(sed -n 's/^module //p' go.mod)
imports=$(GO111MODULE=off GOPATH="$gocode" GOFLAGS= go list -e \
  -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}' ./... \
  | sort -u | grep -v "^$module" | grep '\.' || true)
[ -n "$imports" ] || { echo "vendor-debian.sh: found no imports" >&2; exit 1; }
# Every package those need, outside the standard library.
# shellcheck disable=SC2086
packages=$(GO111MODULE=off GOPATH="$gocode" GOFLAGS= go list -deps \
  -f '{{if not .Standard}}{{.ImportPath}}{{end}}' $imports | sort -u)

# The module of a package: the nearest directory above it holding a go.mod.
module_of() {
  local dir=$1
  while [ "$dir" != . ] && [ ! -f "$gocode/src/$dir/go.mod" ]; do dir=$(dirname "$dir"); done
  [ "$dir" != . ] || { echo "vendor-debian.sh: no go.mod above $1 in $gocode/src" >&2; exit 1; }
  echo "$dir"
}
required() { awk -v m="$1" '$1 == m && $2 ~ /^v/ {print $2} $1 == "require" && $2 == m {print $3}' go.mod; }
# Every module go.mod requires (modules.txt lists them all, used or not, as `go mod vendor`).
requirements() { awk '$1 == "require" && $2 != "(" {print $2} /^require \(/ {on=1; next} /^\)/ {on=0} on && $1 !~ /^\/\// {print $1}' go.mod; }
rm -rf vendor
mkdir -p vendor
declare -A pkgs_of=()
for pkg in $packages; do
  mod=$(module_of "$pkg")
  pkgs_of[$mod]+="$pkg"$'\n'
  mkdir -p "vendor/$pkg"
  # A package is the files of its directory (not its subdirectories), tests left out.
  find "$gocode/src/$pkg" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' -o -name '*.c' \
    -o -name '*.h' \) ! -name '*_test.go' -exec cp -t "vendor/$pkg" {} +
done
for mod in "${!pkgs_of[@]}"; do
  if [ -z "$(required "$mod")" ]; then
    echo "vendor-debian.sh: go.mod does not require $mod (needed by: $(echo "${pkgs_of[$mod]}" | head -1))" >&2
    exit 1
  fi
done
{
  for mod in $(requirements | sort); do
    version=$(required "$mod")
    [ -f "$gocode/src/$mod/go.mod" ] || { echo "vendor-debian.sh: $mod is not in $gocode/src" >&2; exit 1; }
    gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gocode/src/$mod/go.mod")
    echo "# $mod $version"
    echo "## explicit${gover:+; go $gover}"
    if [ -n "${pkgs_of[$mod]:-}" ]; then
      printf '%s' "${pkgs_of[$mod]}"
      cp "$gocode/src/$mod"/LICENSE* "vendor/$mod/" 2>/dev/null || true
    fi
    deb=$(dpkg -S "$gocode/src/$mod/go.mod" 2>/dev/null | cut -d: -f1 || true)
    echo "vendor-debian.sh: $mod $version from ${deb:-?} $(dpkg-query -W -f='${Version}' "$deb" 2>/dev/null || true)" >&2
  done
} > vendor/modules.txt
echo "vendor-debian.sh: vendor/ holds $(echo "$packages" | wc -l) packages of ${#pkgs_of[@]} modules" >&2
