#!/usr/bin/env bash
# Installs and builds the real CNI clients that test/real-clients/ drives: cnitool (libcni 1.1.2),
# a private containerd 1.6 (CRI) with runc, the CRI runtime.v1 proto, a pause image, podman 4.3
# and a static busybox for podman's local image. Idempotent; quick when everything is present.
#   usage: scripts/real-clients.sh [OUT_DIR]   (default: $REAL_CLIENTS_DIR or $HOME/.cache/real-clients)
# Uses the recipes in ../shared/tools/real-clients beside the clone (read-only: nothing is
# written there; every output goes to OUT_DIR).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
RECIPES="$REPO/../shared/tools/real-clients"
OUT=${1:-${REAL_CLIENTS_DIR:-${HOME}/.cache/real-clients}}
mkdir -p "$OUT"

if [ ! -d "$RECIPES" ]; then
  echo "real-clients: recipes not found at $RECIPES" >&2
  exit 1
fi

need_pkgs=()
command -v containerd >/dev/null || need_pkgs+=(containerd)
command -v runc >/dev/null || need_pkgs+=(runc)
command -v podman >/dev/null || need_pkgs+=(podman)
dpkg -s busybox-static >/dev/null 2>&1 || need_pkgs+=(busybox-static)
if [ ! -x "$OUT/cnitool" ]; then
  command -v go >/dev/null || need_pkgs+=(golang-go)
  [ -d /usr/share/gocode/src/github.com/containernetworking/cni ] || need_pkgs+=(golang-github-appc-cni-dev)
fi
if [ ! -f "$OUT/pause.tar" ]; then
  command -v gcc >/dev/null || need_pkgs+=(gcc)
  [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || need_pkgs+=(libc6-dev)
fi
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "real-clients: missing Debian packages ${need_pkgs[*]} and not root to install them" >&2
    exit 1
  fi
  echo "real-clients: installing ${need_pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2
fi

# Each recipe returns at once when its output is already cached in OUT.
"$RECIPES/build-cnitool.sh" "$OUT" >/dev/null
"$RECIPES/get-cri-proto.sh" "$OUT" >/dev/null
"$RECIPES/make-pause-image.sh" "$OUT" >/dev/null

# A root filesystem for podman's local image: a static busybox and the applets the test uses.
if [ ! -f "$OUT/busybox-rootfs.tar" ]; then
  W=$(mktemp -d)
  trap 'rm -rf "$W"' EXIT
  mkdir -p "$W/rootfs/bin"
  cp /bin/busybox "$W/rootfs/bin/busybox"
  for applet in sh sleep ip ping cat; do ln -s busybox "$W/rootfs/bin/$applet"; done
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$W/rootfs" -cf "$OUT/busybox-rootfs.tar.tmp" .
  mv "$OUT/busybox-rootfs.tar.tmp" "$OUT/busybox-rootfs.tar"
fi
echo "$OUT"
