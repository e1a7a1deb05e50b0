#!/usr/bin/env bash
# Installs what `npm start` and `npm test` need on a fresh Debian 12 machine, then builds bin/.
# Usage: scripts/setup.sh [--with-real-clients]
#   (none)                what `npm start` needs: the lab's kernel tools and a C compiler
#   --with-real-clients   also what `npm test` needs: the real CNI clients (cnitool, containerd +
#                         runc, podman), User-Mode Linux for the 802.1q suites, and the image,
#                         Prometheus and manifest tests' tools. `.ci/run` installs nothing else.
# Every Debian package goes through scripts/lib/apt.sh (waits for apt's lock, no recommended
# packages, apt's output only when it fails). Idempotent and quick when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/apt.sh
source scripts/lib/apt.sh
with_real_clients=false
if [ "${1:-}" = --with-real-clients ]; then with_real_clients=true; fi

need_pkgs=()
command -v ip >/dev/null || need_pkgs+=(iproute2)
command -v nft >/dev/null || need_pkgs+=(nftables)
command -v iptables-restore >/dev/null || need_pkgs+=(iptables)
[ -x /usr/lib/cni/bridge ] || need_pkgs+=(containernetworking-plugins)
command -v nsenter >/dev/null || need_pkgs+=(util-linux)
command -v ping >/dev/null || need_pkgs+=(iputils-ping)
# bin/vpcnet is compiled from C, statically when libc.a is there (scripts/build.mjs)
command -v cc >/dev/null || need_pkgs+=(gcc)
[ -f "/usr/lib/$(uname -m)-linux-gnu/libc.a" ] || need_pkgs+=(libc6-dev)
if [ "$with_real_clients" = true ]; then
  # A kernel with 802.1q for the vlan trunk driver's tests (scripts/run-in-uml.sh; modprobe loads
  # its modules)
  command -v linux.uml >/dev/null || need_pkgs+=(user-mode-linux)
  command -v modprobe >/dev/null || need_pkgs+=(kmod)
  # src/pods' HTTPS test signs a throwaway server certificate with a throwaway CA
  command -v openssl >/dev/null || need_pkgs+=(openssl)
  # The real CNI clients (scripts/real-clients.sh builds cnitool from Debian's libcni sources).
  # podman's package accepts crun or runc and apt would pick crun, which fails on hosts with
  # hybrid cgroups: runc is installed with it, and every podman command the project runs names it.
  command -v containerd >/dev/null || need_pkgs+=(containerd)
  command -v runc >/dev/null || need_pkgs+=(runc)
  command -v podman >/dev/null || need_pkgs+=(podman)
  dpkg -s busybox-static >/dev/null 2>&1 || need_pkgs+=(busybox-static)
  command -v go >/dev/null || need_pkgs+=(golang-go)
  [ -d /usr/share/gocode/src/github.com/containernetworking/cni/libcni ] || need_pkgs+=(golang-github-appc-cni-dev)
  # test/agent-image builds the image (mmdebstrap, podman, strip); test/prometheus scrapes a lab
  # with Debian's Prometheus; test/deploy-manifests renders deploy/ with kubectl and reads the YAML
  # with Debian's python3-yaml (Debian's kubectl only when none is installed: another would clash)
  command -v mmdebstrap >/dev/null || need_pkgs+=(mmdebstrap)
  command -v strip >/dev/null || need_pkgs+=(binutils)
  command -v prometheus >/dev/null || need_pkgs+=(prometheus)
  /usr/bin/python3 -c 'import yaml' 2>/dev/null || need_pkgs+=(python3-yaml)
  command -v kubectl >/dev/null || need_pkgs+=(kubernetes-client)
  # src/plugin/native-spool-durability.test.ts traces the spool's fsync, rename, fsync order
  command -v strace >/dev/null || need_pkgs+=(strace)
  # test/hostile builds the plugin with -fsanitize=address,undefined: gcc's sanitizer runtimes
  if command -v cc >/dev/null; then
    probe=$(mktemp)
    printf 'int main(void){return 0;}' | cc -fsanitize=address,undefined -x c - -o "$probe" 2>/dev/null ||
      need_pkgs+=(libasan8 libubsan1)
    rm -f "$probe"
  else
    need_pkgs+=(libasan8 libubsan1)
  fi
fi
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  had_podman_conflist=false
  [ -e /etc/cni/net.d/87-podman-bridge.conflist ] && had_podman_conflist=true
  apt_install "vpcnet setup" "${need_pkgs[@]}"
  # podman's package puts its default bridge network into the host's CNI config dir, where a
  # kubelet or containerd on this host would find it. The project's podman runs use a private
  # network config dir, so a conflist that was not there before this install goes again.
  if [ "$had_podman_conflist" = false ]; then rm -f /etc/cni/net.d/87-podman-bridge.conflist; fi
fi

# npm dependencies: reinstall when the installed tree was not made from this lock file (its hash
# is stamped into node_modules after each install; mtimes lie after a checkout). A node_modules
# that is a symlink is another checkout's tree (a git worktree sharing it): never reinstalled
# through the link, which would empty the other checkout's tree.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.vpcnet-lock-sha256
if [ -L node_modules ]; then
  if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    echo "vpcnet setup: warning: node_modules is a link to another tree made from a different package-lock.json; not reinstalling through it" >&2
  fi
elif [ ! -d node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "vpcnet setup: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$lock_sum" >"$stamp"
fi

node scripts/build.mjs >&2

# Real CNI clients for test/real-clients (cnitool, containerd, podman), for `npm test` only;
# cached, quick when present. Outside CI a failure only warns (those suites then skip, saying
# why); under CI it fails, as they would.
[ "$with_real_clients" = true ] || exit 0
if ! bash scripts/real-clients.sh >/dev/null; then
  [ "${CI:-}" = true ] && exit 1
  echo "vpcnet setup: real CNI clients unavailable; test/real-clients suites will skip" >&2
fi
