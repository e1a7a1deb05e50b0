#!/usr/bin/env bash
# Installs a User-Mode Linux kernel for hosts where Debian 12's (6.1) cannot boot. On a host whose CPU
# has AMX (`grep -o amx_tile /proc/cpuinfo`), UML 6.1, and Debian 13's 6.12, die at init with
# "userspace - ptrace set fp regs failed, errno = 14" and a panic; Debian unstable's UML (7.2 when
# this was written) boots there. That build needs a newer glibc than Debian 12's, so it runs with
# unstable's libc6 beside it (patchelf points the binary's interpreter and rpath there). Nothing of
# the host's packages changes: kernel, libc and modules all go under one directory.
#
#   scripts/uml/install-newer.sh [DEST]   (default: $VPCNET_UML_CACHE/newer, /var/cache/vpcnet/uml/newer)
# Prints DEST. DEST/bin/linux.uml is the kernel, DEST/modules/<release>/ its modules,
# DEST/release its release. Idempotent: an existing installation is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-${VPCNET_UML_CACHE:-/var/cache/vpcnet/uml}/newer}
if [ -x "$dest/bin/linux.uml" ] && [ -s "$dest/release" ]; then
  echo "$dest"
  exit 0
fi
# shellcheck source=../lib/apt.sh
source "$here/../lib/apt.sh"
if ! command -v patchelf >/dev/null; then apt_install run-in-uml patchelf; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vpcnet-uml-newer.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs"
# A private apt state that knows only Debian unstable, so the host's apt lists stay as they are.
# The archive's own keyring checks the signatures, as apt does for the host's sources.
echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main' \
  >"$work/sources.list"
apt_private=(
  -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=-"
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
  -o "APT::Sandbox::User=root"
)
echo "run-in-uml: fetching Debian unstable's user-mode-linux and libc6 into $dest" >&2
if ! apt-get "${apt_private[@]}" -qq update >"$work/apt.log" 2>&1 ||
  ! (cd "$work/debs" && apt-get "${apt_private[@]}" -qq download user-mode-linux libc6) >>"$work/apt.log" 2>&1; then
  echo "run-in-uml: cannot fetch user-mode-linux and libc6 from Debian unstable:" >&2
  tail -n 15 "$work/apt.log" | sed 's/^/  | /' >&2
  exit 1
fi
dpkg-deb -x "$work"/debs/user-mode-linux_*.deb "$work/uml"
dpkg-deb -x "$work"/debs/libc6_*.deb "$work/libc"

staged="$dest.staging"
rm -rf "$staged"
mkdir -p "$staged/bin" "$staged/libc" "$staged/modules"
cp -a "$work/libc/usr/lib/x86_64-linux-gnu/." "$staged/libc/"
cp "$work/uml/usr/bin/linux.uml" "$staged/bin/linux.uml"
patchelf --set-interpreter "$dest/libc/ld-linux-x86-64.so.2" --set-rpath "$dest/libc" "$staged/bin/linux.uml"
cp -a "$work/uml/usr/lib/uml/modules/." "$staged/modules/"
release=$(ls "$staged/modules" | head -n 1)
if [ -z "$release" ]; then
  echo "run-in-uml: the user-mode-linux package from unstable holds no kernel modules" >&2
  exit 1
fi
echo "$release" >"$staged/release"
rm -rf "$dest"
mv "$staged" "$dest"
echo "$dest"
