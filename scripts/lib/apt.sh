# Installing Debian packages the one way every script of the project does it (source this file):
#   apt_install WHO PACKAGE...
#   apt_update WHO               (the package lists alone, e.g. before `apt-get download`)
# names what it installs on one line, waits for another apt run that holds a lock (up to 10 minutes)
# instead of failing, installs without recommended packages (no services the tests did not ask
# for), and keeps apt's output in a log that is shown only when apt fails. WHO prefixes the messages.
# Returns non-zero, having said why, when not root or when apt fails.

# shellcheck shell=bash
APT_LOCK_WAIT_SECONDS=${APT_LOCK_WAIT_SECONDS:-600}

# Runs apt-get with its arguments, retrying while another process holds one of apt's locks.
# `DPkg::Lock::Timeout` covers dpkg's frontend lock; the lists lock that `update` takes has no
# timeout option in Debian 12's apt, hence the loop.
_apt_get_waiting() {
  local log=$1
  shift
  local deadline=$((SECONDS + APT_LOCK_WAIT_SECONDS))
  while :; do
    if DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$APT_LOCK_WAIT_SECONDS" "$@" >>"$log" 2>&1; then
      return 0
    fi
    if ! tail -n 5 "$log" | grep -q 'Could not get lock' || [ "$SECONDS" -ge "$deadline" ]; then
      return 1
    fi
    sleep 3
  done
}

apt_update() {
  local who=$1 log
  log=$(mktemp "${TMPDIR:-/tmp}/vpcnet-apt.XXXXXX")
  if _apt_get_waiting "$log" -qq update; then
    rm -f "$log"
    return 0
  fi
  {
    echo "$who: apt-get update failed; its last lines:"
    tail -n 15 "$log" | sed 's/^/  | /'
  } >&2
  rm -f "$log"
  return 1
}

apt_install() {
  local who=$1
  shift
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$who: needs the Debian packages $* and is not root to install them (as root: apt-get install --no-install-recommends $*)" >&2
    return 1
  fi
  echo "$who: installing Debian packages (without recommends): $*" >&2
  local log
  log=$(mktemp "${TMPDIR:-/tmp}/vpcnet-apt.XXXXXX")
  if _apt_get_waiting "$log" -qq update &&
    _apt_get_waiting "$log" -qq install -y --no-install-recommends "$@"; then
    rm -f "$log"
    return 0
  fi
  {
    echo "$who: apt-get could not install $*; its last lines:"
    tail -n 25 "$log" | sed 's/^/  | /'
  } >&2
  rm -f "$log"
  return 1
}
