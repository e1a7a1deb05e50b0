#!/usr/bin/env bash
# Runs one command under a User-Mode Linux 6.1 kernel (Debian's user-mode-linux package), for what
# this machine's kernel (and CI's) lacks: above all 802.1q VLAN devices, which the branch-ENI
# `vlan` trunk driver creates. UML boots in a few seconds with the host's own filesystem as its root
# (hostfs), so node, ip and this repository are simply there. Its network stack is its own and is
# connected to nothing: traffic inside never reaches the host's network.
#
#   usage: scripts/run-in-uml.sh [--memory SIZE] [--modules "MOD ..."] [--env NAME]... [NAME=VALUE]...
#                                [--] COMMAND [ARG...]
#     --memory SIZE      UML's RAM, e.g. 2G (default) or 512M
#     --modules "MOD…"   kernel modules to load before COMMAND, replacing the default list below
#     --env NAME         pass the caller's NAME (when set) into COMMAND's environment
#     NAME=VALUE         set NAME in COMMAND's environment
#   scripts/run-in-uml.sh --install-only   installs what it needs (see below) and boots nothing
#
# COMMAND's stdout, stderr and exit status become this script's (the output is handed over once
# the kernel has stopped, not streamed). Exit 125 with the console's last lines when the kernel
# stopped before COMMAND finished (a panic, too little memory, killed); exit 2 on a usage error.
#
# Inside: one CPU, slower than the host; /proc, /sys, /dev, /dev/shm mounted; /run is an empty
# tmpfs (so /run/netns starts empty); the working directory is the caller's; everything else is
# the host's files, read-write, as root, so what COMMAND writes outside /run lands on the host.
# The environment is PATH, HOME and what --env / NAME=VALUE name, nothing else.
# nf_tables does not work inside (nft answers "Operation not supported" even with nf_tables
# loaded): use iptables-legacy there.
# Installs user-mode-linux and kmod (for modprobe) on first use.
set -euo pipefail

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

if ! command -v linux.uml >/dev/null || ! command -v modprobe >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    echo "run-in-uml: needs the Debian packages user-mode-linux and kmod, and is not root to install them" >&2
    exit 1
  fi
  echo "run-in-uml: installing user-mode-linux kmod" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Wait for, rather than fail on, another apt run that holds the lock.
  apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends user-mode-linux kmod >&2
fi
module_root=/usr/lib/uml/modules
if [ -z "$(ls -A "$module_root" 2>/dev/null)" ]; then
  echo "run-in-uml: no UML kernel modules under $module_root (package user-mode-linux)" >&2
  exit 1
fi
[ "$install_only" = false ] || exit 0

# The scratch directory is on the host's filesystem, so UML's init and the host both see it.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/run-in-uml.XXXXXX")
uml_pid=
cleanup() {
  if [ -n "$uml_pid" ]; then kill -TERM "$uml_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

printf '%s\0' "$@" >"$scratch/argv"
{
  printf 'scratch=%q\nworkdir=%q\nmodules=%q\n' "$scratch" "$PWD" "$modules"
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
ln -s /usr/lib/uml/modules /run/uml-modules/lib/modules
for m in $modules; do
  modprobe -d /run/uml-modules "$m" 2>/dev/null || echo "run-in-uml: kernel module $m not loaded" >>"$scratch/notes"
done
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

# con0 carries the kernel's console to a log (shown only when the command did not finish);
# the other consoles and serial lines are not needed. UML puts itself in a process group of its
# own, so a caller that kills this script's group would miss it: the parent-death signal stops it
# (UML shuts its processes down on SIGTERM) even when this script is killed with SIGKILL.
setpriv --pdeathsig TERM linux.uml mem="$memory" rootfstype=hostfs rootflags=/ rw init="$scratch/init" \
  con=null ssl=null con0=null,fd:1 >"$scratch/console.log" 2>&1 &
uml_pid=$!
wait "$uml_pid" || true
uml_pid=

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
