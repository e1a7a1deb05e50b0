#!/usr/bin/env bash
# Builds cnitool, the command-line client that ships with libcni (1.1.2 in Debian 12), from Debian's
# archive alone: cnitool.go from the golang-github-appc-cni source package, libcni itself from the
# golang-github-appc-cni-dev package under /usr/share/gocode. GOPATH mode with the module proxy
# off, so the Go toolchain fetches nothing.
#   usage: scripts/real-clients/cnitool.sh OUT_DIR      -> OUT_DIR/cnitool
# Needs the Debian packages golang-go and golang-github-appc-cni-dev (scripts/real-clients.sh
# installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: $0 OUT_DIR}
gocode=/usr/share/gocode
if ! command -v go >/dev/null || [ ! -d "$gocode/src/github.com/containernetworking/cni/libcni" ]; then
  echo "cnitool: needs the Debian packages golang-go and golang-github-appc-cni-dev" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/debian-source.sh" golang-github-appc-cni "$work/src"
main=$(find "$work/src" -path '*/cnitool/cnitool.go' | head -n 1)
if [ -z "$main" ]; then
  echo "cnitool: the golang-github-appc-cni sources have no cnitool/cnitool.go" >&2
  exit 1
fi
mkdir -p "$work/gopath/src/cnitool" "$out"
cp "$(dirname "$main")"/*.go "$work/gopath/src/cnitool/"
rm -f "$work"/gopath/src/cnitool/*_test.go
(
  cd "$work/gopath/src/cnitool"
  export GO111MODULE=off GOPATH="$work/gopath:$gocode" GOPROXY=off GOFLAGS= GOCACHE="$work/cache" CGO_ENABLED=0
  go build -o "$out/cnitool.tmp" .
)
mv "$out/cnitool.tmp" "$out/cnitool"
echo "$out/cnitool"
