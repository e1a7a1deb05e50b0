#!/usr/bin/env bash
# A root filesystem for podman's local test image: Debian's static busybox and links for the
# applets the podman suite runs (sh, sleep, ip, ping, cat), as a tarball for `podman import`.
#   usage: scripts/real-clients/busybox-rootfs.sh OUT_DIR   -> OUT_DIR/busybox-rootfs.tar
# Needs the Debian package busybox-static (a dynamically linked busybox would lack its libraries).
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
if ! dpkg -s busybox-static >/dev/null 2>&1; then
  echo "busybox-rootfs: needs the Debian package busybox-static" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs/bin" "$out"
cp /bin/busybox "$work/rootfs/bin/busybox"
for applet in sh sleep ip ping cat; do
  ln -s busybox "$work/rootfs/bin/$applet"
done
tar --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name -C "$work/rootfs" -cf "$out/busybox-rootfs.tar.tmp" .
mv "$out/busybox-rootfs.tar.tmp" "$out/busybox-rootfs.tar"
echo "$out/busybox-rootfs.tar"
