#!/usr/bin/env bash
# Installs and builds the real CNI clients that test/real-clients/ drives: cnitool (libcni 1.1.2),
# a private containerd 1.6 (CRI) with runc, the CRI runtime.v1 proto, a pause image, podman 4.3
# and a static busybox for podman's local image. Everything comes from Debian's archive and the
# scripts in scripts/real-clients/. Idempotent; quick when everything is present.
#   usage: scripts/real-clients.sh [OUT_DIR]   (default: $REAL_CLIENTS_DIR or $HOME/.cache/real-clients)
# Prints OUT_DIR on success; progress and errors go to stderr.
set -euo pipefail
steps=$(cd "$(dirname "$0")/real-clients" && pwd)
out=${1:-${REAL_CLIENTS_DIR:-${HOME}/.cache/real-clients}}
mkdir -p "$out"
libc_a="/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")/libc.a"

# Debian packages: the clients themselves, and what building the missing outputs takes.
need_pkgs=()
command -v containerd >/dev/null || need_pkgs+=(containerd)
command -v runc >/dev/null || need_pkgs+=(runc)
command -v podman >/dev/null || need_pkgs+=(podman)
dpkg -s busybox-static >/dev/null 2>&1 || need_pkgs+=(busybox-static)
if [ ! -x "$out/cnitool" ]; then
  command -v go >/dev/null || need_pkgs+=(golang-go)
  [ -d /usr/share/gocode/src/github.com/containernetworking/cni/libcni ] || need_pkgs+=(golang-github-appc-cni-dev)
fi
if [ ! -f "$out/pause.tar" ]; then
  command -v gcc >/dev/null || need_pkgs+=(gcc)
  [ -f "$libc_a" ] || need_pkgs+=(libc6-dev)
fi
# shellcheck source=lib/apt.sh
source "$(dirname "$0")/lib/apt.sh"
apt_install real-clients "${need_pkgs[@]}"

# Each output is built once and then kept in OUT_DIR.
build_once() {
  local output=$1 step=$2
  [ -e "$out/$output" ] && return 0
  echo "real-clients: building $output" >&2
  "$steps/$step" "$out" >/dev/null
}
build_once cnitool cnitool.sh
build_once cri-api.proto cri-proto.sh
build_once pause.tar pause-image.sh
build_once busybox-rootfs.tar busybox-rootfs.sh
echo "$out"
