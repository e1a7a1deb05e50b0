#!/usr/bin/env bash
# Unpacks the upstream sources of a Debian source package, fetched from the archive this machine's
# apt already uses. The machine's apt state is left alone: a throw-away apt configuration in a
# scratch directory lists a deb-src entry for every deb entry the machine has.
#   usage: scripts/real-clients/debian-source.sh PACKAGE DEST_DIR
# DEST_DIR receives the unpacked upstream tarball(s) (the Debian packaging is not applied).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PACKAGE DEST_DIR" >&2
  exit 2
fi
package=$1
dest=$2

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/parts" "$scratch/lists/partial" "$scratch/cache/archives/partial" "$scratch/download" "$dest"

# Both apt formats: deb822 stanzas ("Types: deb") and one-line entries ("deb URI SUITE COMPONENTS").
for f in /etc/apt/sources.list.d/*.sources; do
  if [ -f "$f" ]; then sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$scratch/parts/$(basename "$f")"; fi
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  if [ -f "$f" ]; then sed -nE 's/^[[:space:]]*deb[[:space:]]+/deb-src /p' "$f" >>"$scratch/parts/one-line.list"; fi
done
if ! grep -qs . "$scratch"/parts/*; then
  echo "debian-source: no Debian archive configured in /etc/apt; cannot fetch source package $package" >&2
  exit 1
fi

apt_private=(
  -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$scratch/parts"
  -o "Dir::State::Lists=$scratch/lists" -o "Dir::Cache=$scratch/cache"
  -o "APT::Sandbox::User=root"
)
apt-get "${apt_private[@]}" -qq update
(cd "$scratch/download" && apt-get "${apt_private[@]}" -qq source --download-only "$package") >/dev/null

# The upstream tarball(s): *.orig.tar.* plus any component tarballs (*.orig-NAME.tar.*); a native
# package has a single *.tar.* instead. The Debian packaging tarball is not needed.
unpacked=0
for t in "$scratch"/download/*.tar.*; do
  case $t in
    *.debian.tar.*) ;;
    *) tar -C "$dest" -xf "$t" && unpacked=$((unpacked + 1)) ;;
  esac
done
if [ "$unpacked" -eq 0 ]; then
  echo "debian-source: apt-get source $package downloaded no source tarball" >&2
  exit 1
fi
