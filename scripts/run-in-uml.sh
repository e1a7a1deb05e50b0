#!/usr/bin/env bash
# Runs one command under a User-Mode Linux kernel, for what this machine's kernel (and CI's) lacks:
# above all 802.1q VLAN devices, which the branch-ENI `vlan` trunk driver creates. UML boots in a
# few seconds with the host's own filesystem as its root (hostfs), so node, ip and this repository
# are simply there. Its network stack is its own and is connected to nothing: traffic inside never
# reaches the host's network.
#
#   usage: scripts/run-in-uml.sh [--memory SIZE] [--modules "MOD ..."] [--env NAME]... [NAME=VALUE]...
#                                [--] COMMAND [ARG...]
#     --memory SIZE      UML's RAM, e.g. 2G (default) or 512M
#     --modules "MOD…"   kernel modules to load before COMMAND, replacing the default list below
#     --env NAME         pass the caller's NAME (when set) into COMMAND's environment
#     NAME=VALUE         set NAME in COMMAND's environment
#   scripts/run-in-uml.sh --install-only   installs and chooses the kernel (below), boots nothing else
#
# Which kernel (VPCNET_UML):
#   auto (default)  Debian 12's UML (6.1, package user-mode-linux) when it boots on this host, else
#                   Debian unstable's (scripts/uml/install-newer.sh). Debian 12's dies at init on
#                   hosts whose CPU has AMX ("ptrace set fp regs failed, errno = 14"); whether it
#                   boots is probed once per machine (binary, host kernel, CPU) and remembered.
#   system | newer  that one, unprobed.
# A line on stderr ("run-in-uml: UML <release> (<binary>): <why>") names the kernel and why. The cache (probe records, the newer
# kernel) is VPCNET_UML_CACHE, default /var/cache/vpcnet/uml. For the runner's own tests:
# VPCNET_UML_SYSTEM_BINARY and VPCNET_UML_NEWER_BINARY (+ VPCNET_UML_NEWER_MODULES) replace the
# two kernels, VPCNET_UML_PROBES keeps the probe records elsewhere.
#
# COMMAND's stdout, stderr and exit status become this script's (the output is handed over once
# the kernel has stopped, not streamed). Exit 125 with the console's last lines when the kernel
# stopped before COMMAND finished (a panic, too little memory, killed) or when no kernel boots on
# this host (both consoles then); exit 2 on a usage error.
#
# Inside: one CPU, slower than the host; /proc, /sys, /dev, /dev/shm mounted; /run is an empty
# tmpfs (so /run/netns starts empty); the working directory is the caller's; everything else is
# the host's files, read-write, as root, so what COMMAND writes outside /run lands on the host.
# The environment is PATH, HOME and what --env / NAME=VALUE name, nothing else.
# nf_tables does not work inside (nft answers "Operation not supported" even with nf_tables
# loaded); Debian 12's UML has iptables-legacy's tables, unstable's (7.2) has none, so what runs
# inside does no NAT of its own (external SNAT).
# Installs kmod (for modprobe) and user-mode-linux on first use, patchelf when the newer kernel is
# needed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() {
  echo "usage: $0 [--memory SIZE] [--modules \"MOD ...\"] [--env NAME]... [NAME=VALUE]... [--] COMMAND [ARG...]" >&2
  echo "       $0 --install-only" >&2
  exit 2
}

install_only=false
memory=2G
# The trunk and pod links (8021q, veth, macvlan, bridge) and iptables-legacy with the tables and
# matches the dataplane uses; nf_conntrack and nf_nat come in as dependencies.
modules="8021q veth macvlan bridge ip_tables iptable_filter iptable_nat iptable_mangle
  xt_MASQUERADE xt_conntrack xt_mark xt_connmark xt_comment"
env_lines=()
add_env() {
  if [[ ! $1 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
    echo "run-in-uml: not an environment variable name: $1" >&2
    exit 2
  fi
  env_lines+=("export $1=$(printf '%q' "$2")")
}
while [ $# -gt 0 ]; do
  case $1 in
    --memory)
      [ $# -ge 2 ] || usage
      memory=$2
      shift 2
      ;;
    --modules)
      [ $# -ge 2 ] || usage
      modules=$2
      shift 2
      ;;
    --env)
      [ $# -ge 2 ] || usage
      if [ -n "${!2+set}" ]; then add_env "$2" "${!2}"; fi
      shift 2
      ;;
    --install-only)
      install_only=true
      shift
      ;;
    --help | -h) usage ;;
    --)
      shift
      break
      ;;
    -*) usage ;;
    *=*)
      add_env "${1%%=*}" "${1#*=}"
      shift
      ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || [ "$install_only" = true ] || usage

# shellcheck source=lib/apt.sh
source "$here/lib/apt.sh"
mode=${VPCNET_UML:-auto}
case $mode in
  auto | system | newer) ;;
  *)
    echo "run-in-uml: VPCNET_UML=$mode: expected auto, system or newer" >&2
    exit 2
    ;;
esac
need_pkgs=()
command -v modprobe >/dev/null || need_pkgs+=(kmod)
if [ "$mode" != newer ] && [ -z "${VPCNET_UML_SYSTEM_BINARY:-}" ] && ! command -v linux.uml >/dev/null; then
  need_pkgs+=(user-mode-linux)
fi
apt_install run-in-uml "${need_pkgs[@]}"

cache=${VPCNET_UML_CACHE:-/var/cache/vpcnet/uml}
probes=${VPCNET_UML_PROBES:-$cache}
mkdir -p "$cache" "$probes"
uml_pid=
scratch=
cleanup() {
  if [ -n "$uml_pid" ]; then kill -TERM "$uml_pid" 2>/dev/null || true; fi
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# boot BINARY INIT CONSOLE_LOG: runs the kernel until it powers off. con0 carries the kernel's
# console to the log; the other consoles and serial lines are not needed. UML puts itself in a
# process group of its own, so a caller that kills this script's group would miss it: the
# parent-death signal stops it (UML shuts its processes down on SIGTERM) even when this script is
# killed with SIGKILL.
boot() {
  local binary=$1 init=$2 console=$3 limit=${4:-}
  local runner=(setpriv --pdeathsig TERM)
  if [ -n "$limit" ]; then runner+=(timeout --signal=TERM --kill-after=10 "$limit"); fi
  "${runner[@]}" "$binary" mem="$memory" rootfstype=hostfs rootflags=/ rw init="$init" \
    con=null ssl=null con0=null,fd:1 >"$console" 2>&1 &
  uml_pid=$!
  wait "$uml_pid" || true
  uml_pid=
}

# probe BINARY: boots it with an init that only reports and powers off. Prints "ok", or "fail"
# and the console's last lines.
probe() {
  local binary=$1 dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/run-in-uml-probe.XXXXXX")
  cat >"$dir/init" <<PROBE
#!/bin/sh
mount -t proc proc /proc
: >"$dir/booted"
sync
echo o >/proc/sysrq-trigger
sleep 30
PROBE
  chmod +x "$dir/init"
  boot "$binary" "$dir/init" "$dir/console.log" 120
  if [ -f "$dir/booted" ]; then
    echo ok
  else
    echo fail
    tail -n 12 "$dir/console.log"
  fi
  rm -rf "$dir"
}

# probed BINARY: probe's answer, done once per machine for this binary, host kernel and CPU (a
# host whose CPU has AMX fails where another boots) and kept in the cache.
probed() {
  local binary=$1 key
  key=$(printf '%s\n' "$(readlink -f "$binary")" "$(stat -L -c '%s %Y' "$binary")" "$(uname -r)" \
    "$(grep -m 1 '^flags' /proc/cpuinfo)" | sha256sum | cut -c1-16)
  local record="$probes/probe-$key"
  (
    flock 9
    if [ ! -s "$record" ]; then
      probe "$binary" >"$record.tmp"
      mv "$record.tmp" "$record"
    fi
  ) 9>"$probes/probe.lock"
  cat "$record"
}

system_binary=${VPCNET_UML_SYSTEM_BINARY:-$(command -v linux.uml || echo /usr/bin/linux.uml)}
system_modules=/usr/lib/uml/modules
# The newer UML: Debian unstable's (scripts/uml/install-newer.sh), or a stand-in for tests.
newer() {
  if [ -n "${VPCNET_UML_NEWER_BINARY:-}" ]; then
    kernel=$VPCNET_UML_NEWER_BINARY
    module_root=${VPCNET_UML_NEWER_MODULES:-$system_modules}
    return
  fi
  local dir
  dir=$(bash "$here/uml/install-newer.sh" "$cache/newer")
  kernel=$dir/bin/linux.uml
  module_root=$dir/modules
}

case $mode in
  system)
    kernel=$system_binary module_root=$system_modules why="VPCNET_UML=system"
    ;;
  newer)
    newer
    why="VPCNET_UML=newer"
    ;;
  auto)
    system_probe=$(probed "$system_binary")
    if [ "$system_probe" = ok ]; then
      kernel=$system_binary module_root=$system_modules why="the system's UML boots on this host"
    else
      newer
      newer_probe=$(probed "$kernel")
      if [ "$newer_probe" != ok ]; then
        {
          echo "run-in-uml: no User-Mode Linux kernel boots on this host ($(grep -c amx_tile /proc/cpuinfo || true) CPUs with AMX)."
          echo "run-in-uml: the system's ($system_binary), last lines of its console:"
          tail -n +2 <<<"$system_probe" | sed 's/^/  | /'
          echo "run-in-uml: the newer one ($kernel), last lines of its console:"
          tail -n +2 <<<"$newer_probe" | sed 's/^/  | /'
        } >&2
        exit 125
      fi
      # The line that says why, e.g. "userspace - ptrace set fp regs failed, errno = 14".
      cause=$(grep -m 1 -iE 'failed|panic|error' <<<"$system_probe" || true)
      why="the system's UML ($system_binary) cannot boot on this host${cause:+ ($cause)}; using the newer one"
    fi
    ;;
esac
if [ ! -x "$kernel" ]; then
  echo "run-in-uml: no UML kernel at $kernel" >&2
  exit 1
fi
if [ -z "$(ls -A "$module_root" 2>/dev/null)" ]; then
  echo "run-in-uml: no UML kernel modules under $module_root" >&2
  exit 1
fi
release=$("$kernel" --version 2>/dev/null | head -n 1 | tr -d '[:space:]')
echo "run-in-uml: UML ${release:-unknown} ($kernel): $why" >&2
[ "$install_only" = false ] || exit 0

# The scratch directory is on the host's filesystem, so UML's init and the host both see it.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/run-in-uml.XXXXXX")

printf '%s\0' "$@" >"$scratch/argv"
{
  printf 'scratch=%q\nworkdir=%q\nmodules=%q\nmodule_root=%q\n' "$scratch" "$PWD" "$modules" "$module_root"
  printf 'export HOME=%q\n' "${HOME:-/root}"
  if [ ${#env_lines[@]} -gt 0 ]; then printf '%s\n' "${env_lines[@]}"; fi
} >"$scratch/settings"

# UML's PID 1: prepare a fresh machine's mounts, load modules, run the command, power off.
cat >"$scratch/init" <<'INIT'
#!/bin/bash
# The kernel hands init its unrecognised boot parameters (mem=...) as environment: drop them all.
for name in $(compgen -e); do unset "$name"; done
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
source "${0%/init}/settings"
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/netns /run/lock
# modprobe looks under DIR/lib/modules/<release>; the UML package keeps its modules elsewhere.
mkdir -p /run/uml-modules/lib
ln -s "$module_root" /run/uml-modules/lib/modules
missing=
for m in $modules; do
  modprobe -d /run/uml-modules "$m" 2>/dev/null || missing="$missing $m"
done
if [ -n "$missing" ]; then echo "run-in-uml: kernel modules not available in UML $(uname -r):$missing" >"$scratch/notes"; fi
ip link set lo up
mapfile -d '' -t argv <"$scratch/argv"
(cd "$workdir" && exec "${argv[@]}") >"$scratch/stdout" 2>"$scratch/stderr" </dev/null
echo $? >"$scratch/status.tmp"
mv "$scratch/status.tmp" "$scratch/status"
sync
echo o >/proc/sysrq-trigger
sleep 30
INIT
chmod +x "$scratch/init"

boot "$kernel" "$scratch/init" "$scratch/console.log"

if [ -f "$scratch/notes" ]; then cat "$scratch/notes" >&2; fi
cat "$scratch/stdout" 2>/dev/null || true
cat "$scratch/stderr" >&2 2>/dev/null || true
if [ ! -f "$scratch/status" ]; then
  {
    echo "run-in-uml: the UML kernel stopped before the command finished: $*"
    echo "run-in-uml: last lines of its console:"
    tail -n 20 "$scratch/console.log" | sed 's/^/  | /'
  } >&2
  exit 125
fi
exit "$(cat "$scratch/status")"
