#!/usr/bin/env bash
# Packs pause.c, compiled statically, into an image that containerd can import with no registry:
# a docker-archive tarball (manifest.json, the image config, one layer) tagged
# local.invalid/pause:1, whose entrypoint is /pause.
#   usage: scripts/real-clients/pause-image.sh OUT_DIR  -> OUT_DIR/pause.tar
#   import: ctr --address SOCKET -n k8s.io images import OUT_DIR/pause.tar
# Needs gcc and a static libc (Debian: gcc, libc6-dev).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: $0 OUT_DIR}
tag=local.invalid/pause:1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/layer" "$work/image" "$out"
if ! gcc -static -Os -s -Wall -Wextra -Werror -o "$work/layer/pause" "$here/pause.c"; then
  echo "pause-image: cannot compile pause.c statically (install gcc and libc6-dev)" >&2
  exit 1
fi

# Fixed owner and mtime: the same sources give the same layer digest.
reproducible_tar() { tar --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name "$@"; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

reproducible_tar -C "$work/layer" -cf "$work/layer.tar" pause
layer=$(sha256_of "$work/layer.tar")
mkdir "$work/image/$layer"
mv "$work/layer.tar" "$work/image/$layer/layer.tar"

# dpkg's architecture names (amd64, arm64, ...) are the OCI ones for the usual architectures.
arch=$(dpkg --print-architecture)
cat >"$work/config.json" <<JSON
{"architecture":"$arch","os":"linux","config":{"Entrypoint":["/pause"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:$layer"]}}
JSON
config=$(sha256_of "$work/config.json")
mv "$work/config.json" "$work/image/$config.json"
cat >"$work/image/manifest.json" <<JSON
[{"Config":"$config.json","RepoTags":["$tag"],"Layers":["$layer/layer.tar"]}]
JSON

reproducible_tar -C "$work/image" -cf "$out/pause.tar.tmp" manifest.json "$config.json" "$layer"
mv "$out/pause.tar.tmp" "$out/pause.tar"
echo "$out/pause.tar"
