#!/usr/bin/env bash
# Runs one command inside a QEMU virtual machine booting Debian 12's stock kernel: the kernel
# production nodes run, which has both what this machine's kernel lacks (802.1q VLAN devices, for
# the branch-ENI `vlan` trunk driver) and what User-Mode Linux lacks (nf_tables, for the SNAT set).
# So the netlink helper and the dataplane meet a second kernel version with both at once. The
# guest's root is the host's own filesystem over virtio-9p: node, ip, nft and this repository are
# simply there. It has no network device: nothing inside reaches the host's network.
#
#   usage: scripts/run-in-vm.sh [--cpus N] [--memory SIZE] [--timeout SECONDS] [--kvm]
#                               [--env NAME]... [NAME=VALUE]... [--] COMMAND [ARG...]
#     --cpus N           virtual CPUs (default 2)
#     --memory SIZE      the guest's RAM, e.g. 3G (default) or 1536M
#     --timeout SECONDS  stop the VM after this long (default 3600)
#     --kvm              hardware acceleration instead of TCG (see below)
#     --env NAME         pass the caller's NAME (when set) into COMMAND's environment
#     NAME=VALUE         set NAME in COMMAND's environment
#   scripts/run-in-vm.sh --install-only   installs and caches what it needs (below), boots nothing
#
# COMMAND's stdout, stderr and exit status become this script's (handed over once the VM has
# stopped, not streamed). Exit 125 with the console's last lines when the VM stopped without the
# command's status (boot failure, timeout, a panic); exit 2 on a usage error.
#
# Inside: the guest's own /proc, /sys, /dev, /dev/shm, /dev/pts and an empty tmpfs on /run (so
# /run/netns starts empty); loopback up; the caller's working directory; everything else is the
# host's files, read-write, as root, so what COMMAND writes outside /run lands on the host. The
# environment is PATH, HOME and what --env / NAME=VALUE name, nothing else. 8021q, veth, macvlan,
# bridge, dummy, ipvlan and the nf_tables modules vpcnet's tables use are loaded first; the kernel
# loads anything else it asks for (an nft expression, a link type) from the same place.
#
# Acceleration is TCG (QEMU's software CPU emulation): it needs nothing from the host and works on
# every machine, but runs code about ten times slower (the dataplane scenario table: ~2 s on the
# host, ~20 s inside); boot to COMMAND takes ~5 s. KVM is only an option: on the cloud machines this
# project runs on, /dev/kvm exists but the guest kernel hangs in early boot under nested KVM. The
# first line on stderr names the kernel and the acceleration ("run-in-vm: Debian kernel … (tcg)").
#
# First use installs qemu-system-x86, busybox-static and kmod (Debian packages, through
# scripts/lib/apt.sh), then fetches Debian's current kernel package (the one linux-image-amd64
# depends on) with `apt-get download` and unpacks it under ${VPCNET_VM_CACHE:-/var/cache/vpcnet/vm}
# with its initramfs: no kernel is installed on the host (nothing in /boot or /lib/modules).
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "$0")/lib/apt.sh"

usage() {
  echo "usage: $0 [--cpus N] [--memory SIZE] [--timeout SECONDS] [--kvm] [--env NAME]... [NAME=VALUE]... [--] COMMAND [ARG...]" >&2
  echo "       $0 --install-only" >&2
  exit 2
}

cache=${VPCNET_VM_CACHE:-/var/cache/vpcnet/vm}
install_only=false
cpus=2
memory=3G
limit=3600
accel=tcg
env_assignments=()
add_env() {
  if [[ ! $1 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
    echo "run-in-vm: not an environment variable name: $1" >&2
    exit 2
  fi
  env_assignments+=("$1=$2")
}
while [ $# -gt 0 ]; do
  case $1 in
    --cpus | --memory | --timeout | --env)
      [ $# -ge 2 ] || usage
      case $1 in
        --cpus) [[ $2 =~ ^[1-9][0-9]*$ ]] || usage; cpus=$2 ;;
        --memory) [[ $2 =~ ^[1-9][0-9]*[MG]$ ]] || usage; memory=$2 ;;
        --timeout) [[ $2 =~ ^[1-9][0-9]*$ ]] || usage; limit=$2 ;;
        --env) if [ -n "${!2+set}" ]; then add_env "$2" "${!2}"; fi ;;
      esac
      shift 2
      ;;
    --kvm)
      accel=kvm
      shift
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

# Modules loaded before COMMAND: the trunk and pod links, and nf_tables with what vpcnet's SNAT and
# NodePort chains use (nat chains, snat/masquerade, conntrack marks).
guest_modules="8021q veth macvlan ipvlan dummy bridge nf_tables nft_chain_nat nft_nat nft_masq nft_ct"
# What stage one needs to mount the host's root, in the order modprobe would load them.
boot_modules="virtio_pci 9pnet_virtio 9p"

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# The initramfs needs a statically linked busybox (package busybox's is dynamic).
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
command -v modprobe >/dev/null && command -v depmod >/dev/null || need+=(kmod)
if [ ${#need[@]} -gt 0 ]; then apt_install run-in-vm "${need[@]}"; fi

mkdir -p "$cache"
# Two first runs at once fetch and unpack once: the second waits here.
exec {cache_lock}>"$cache/.lock"
flock "$cache_lock"

# The kernel package linux-image-amd64 depends on now, e.g. linux-image-6.1.0-57-amd64.
current_kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}

# Unpacks the package into $cache/<release> (boot/vmlinuz-<release>, lib/modules/<release>) with
# the module index the package's postinst would have made; the directory appears whole or not at all.
fetch_kernel() {
  local package=$1 release=$2 work
  echo "run-in-vm: fetching $package into $cache (apt-get download, dpkg -x; not installed)" >&2
  work=$(mktemp -d "$cache/.fetch.XXXXXX")
  # apt drops to the _apt user for downloads; it needs to write the directory.
  chmod 755 "$work"
  chown _apt "$work" 2>/dev/null || true
  if ! (cd "$work" && apt-get -qq download "$package") >"$work/apt.log" 2>&1; then
    # The lists named a version the mirror no longer has: refresh them and ask again.
    apt_update run-in-vm && (cd "$work" && apt-get -qq download "$package") >"$work/apt.log" 2>&1 || {
      echo "run-in-vm: cannot download $package:" >&2
      tail -n 10 "$work/apt.log" | sed 's/^/  | /' >&2
      rm -rf "$work"
      return 1
    }
  fi
  dpkg -x "$work"/"$package"_*.deb "$work/root"
  depmod -b "$work/root" "$release"
  mv "$work/root" "$cache/$release"
  rm -rf "$work"
}

package=$(current_kernel_package)
if [ -z "$package" ]; then
  apt_update run-in-vm || true
  package=$(current_kernel_package)
fi
if [ -n "$package" ]; then
  release=${package#linux-image-}
  [ -d "$cache/$release" ] || fetch_kernel "$package" "$release"
else
  # No package lists and no mirror: the newest kernel fetched before still serves.
  release=$(find "$cache" -mindepth 1 -maxdepth 1 -name '*-amd64' -printf '%f\n' | sort -V | tail -n 1)
  if [ -z "$release" ]; then
    echo "run-in-vm: apt knows no linux-image-amd64 and none is cached in $cache" >&2
    exit 1
  fi
fi
kernel_root=$cache/$release
kernel_image=$kernel_root/boot/vmlinuz-$release

# Stage one, the initramfs's /init (busybox): mounts the host's root over virtio-9p, gives it the
# guest's own /proc, /sys and /dev, and hands over to the run's stage two named on the command line.
boot_module_files=$(
  for m in $boot_modules; do modprobe -d "$kernel_root" -S "$release" --show-depends "$m"; done |
    awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
)
stage_one() {
  cat <<'EOF'
#!/bin/sh
fail() { echo "run-in-vm stage one: $*"; poweroff -f; }
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
EOF
  for f in $boot_module_files; do echo "insmod /modules/${f##*/} || fail 'insmod ${f##*/}'"; done
  cat <<'EOF'
stage_two=
for arg in $(cat /proc/cmdline); do
  case $arg in vpcnet_vm.init=*) stage_two=${arg#*=} ;; esac
done
[ -n "$stage_two" ] || fail "no vpcnet_vm.init= on the kernel command line"
# cache=loose: the guest keeps what it read (node and its modules load ~3x faster than uncached);
# nothing on the host changes those files while a run lasts.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /newroot || fail "9p mount"
mount -t sysfs sys /newroot/sys && mount -o move /proc /newroot/proc && mount -o move /dev /newroot/dev ||
  fail "the guest's /proc, /sys, /dev"
exec switch_root /newroot /usr/bin/env -i /bin/bash "$stage_two"
EOF
}
init_text=$(stage_one)
initramfs=$kernel_root/initramfs-$(printf '%s' "$init_text" | sha256sum | cut -c1-16).cpio.gz
if [ ! -f "$initramfs" ]; then
  tree=$(mktemp -d "$cache/.initramfs.XXXXXX")
  mkdir -p "$tree"/{bin,modules,newroot,proc,sys,dev}
  cp /bin/busybox "$tree/bin/"
  for applet in sh mount insmod switch_root poweroff cat; do ln -s busybox "$tree/bin/$applet"; done
  for f in $boot_module_files; do cp "$f" "$tree/modules/"; done
  printf '%s\n' "$init_text" >"$tree/init"
  chmod 755 "$tree/init"
  (cd "$tree" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$initramfs.tmp"
  # One initramfs per kernel: those of an earlier stage one go.
  find "$kernel_root" -maxdepth 1 -name 'initramfs-*.cpio.gz' -delete
  mv "$initramfs.tmp" "$initramfs"
  rm -rf "$tree"
fi
flock -u "$cache_lock"
[ "$install_only" = false ] || exit 0

echo "run-in-vm: Debian kernel $release under QEMU ($accel)" >&2

# The scratch directory is on the host's filesystem, so the guest and the host both see it; its path
# goes on the kernel command line, hence no blanks.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/run-in-vm.XXXXXX")
qemu_pid=
cleanup() {
  if [ -n "$qemu_pid" ]; then
    kill -TERM "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
if [[ $scratch =~ [[:space:]] ]]; then
  echo "run-in-vm: the scratch directory's path has a blank: $scratch (set TMPDIR)" >&2
  exit 1
fi

printf '%s\0' "$@" >"$scratch/argv"
printf '%s\0' "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "HOME=${HOME:-/root}" \
  ${env_assignments[@]+"${env_assignments[@]}"} >"$scratch/env"
printf 'workdir=%q\nkernel_root=%q\nguest_modules=%q\n' "$PWD" "$kernel_root" "$guest_modules" >"$scratch/settings"

# Stage two, the guest's PID 1 on the host's root: the guest's own mounts, the modules, loopback,
# then COMMAND; its output and status go to the scratch directory, then the guest powers off.
cat >"$scratch/init" <<'INIT'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
scratch=${0%/init}
# The scratch directory again, uncached, over itself: what COMMAND prints reaches the host as it is
# written, so a run that crashes the guest still shows how far it got.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 scratch "$scratch" ||
  echo "run-in-vm: the scratch directory is not mounted uncached: a crash loses the output" >>"$scratch/notes"
source "$scratch/settings"
mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=0755 run /run
mkdir -p /run/netns /run/lock
# The kernel's own module requests (an nft expression, a link type) look where the modules are.
printf '#!/bin/sh\nexec /sbin/modprobe -d %q "$@"\n' "$kernel_root" >/run/modprobe
chmod 755 /run/modprobe
echo /run/modprobe >/proc/sys/kernel/modprobe
# In parallel: each load (signature check included) takes a second or so under emulation.
for m in $guest_modules; do
  modprobe -d "$kernel_root" "$m" 2>>"$scratch/notes" || echo "run-in-vm: kernel module $m not loaded" >>"$scratch/notes" &
done
wait
ip link set lo up
mapfile -d '' -t argv <"$scratch/argv"
mapfile -d '' -t environment <"$scratch/env"
(cd "$workdir" && exec env -i "${environment[@]}" "${argv[@]}") >"$scratch/stdout" 2>"$scratch/stderr" </dev/null
echo $? >"$scratch/status.tmp"
mv "$scratch/status.tmp" "$scratch/status"
sync
echo o >/proc/sysrq-trigger
sleep 60
INIT

accel_args=(-accel tcg -cpu max)
[ "$accel" = tcg ] || accel_args=(-accel kvm -cpu host)
# The parent-death signal stops QEMU even when this script is killed with SIGKILL; timeout passes
# a TERM on to it as well. panic=-1 and -no-reboot turn a guest panic into QEMU's exit. The console
# keeps the whole boot log (not `quiet`: it costs nothing measurable) for a run that fails to boot.
setpriv --pdeathsig TERM timeout "$limit" qemu-system-x86_64 "${accel_args[@]}" -smp "$cpus" -m "$memory" \
  -nodefaults -no-user-config -display none -no-reboot -nic none \
  -serial "file:$scratch/console.log" \
  -kernel "$kernel_image" -initrd "$initramfs" \
  -append "console=ttyS0 panic=-1 vpcnet_vm.init=$scratch/init" \
  -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap" \
  -virtfs "local,path=$scratch,mount_tag=scratch,security_model=passthrough" \
  >"$scratch/qemu.log" 2>&1 </dev/null &
qemu_pid=$!
qemu_status=0
wait "$qemu_pid" || qemu_status=$?
qemu_pid=

if [ -f "$scratch/notes" ]; then cat "$scratch/notes" >&2; fi
cat "$scratch/stdout" 2>/dev/null || true
cat "$scratch/stderr" >&2 2>/dev/null || true
if [ ! -f "$scratch/status" ]; then
  {
    if [ "$qemu_status" = 124 ]; then
      echo "run-in-vm: the command did not finish within $limit s: $*"
    else
      echo "run-in-vm: the VM stopped without the command's status (QEMU exit $qemu_status): $*"
    fi
    cat "$scratch/qemu.log"
    echo "run-in-vm: last lines of its console:"
    tail -n 20 "$scratch/console.log" 2>/dev/null | sed 's/^/  | /'
  } >&2
  exit 125
fi
exit "$(cat "$scratch/status")"
