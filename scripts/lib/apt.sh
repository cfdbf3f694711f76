# shellcheck shell=bash
# scripts/lib/apt.sh — a quiet apt-get install for the scripts that install one tool on
# first use (the virtualenvs, wrk), saying so on stderr: their stdout is an answer (a
# path). Sourced, never run. (The services' installs use scripts/lib/common.sh's
# apt_install, which logs to the state dir and keeps package scripts from starting them.)

# quiet_apt_install PKG...: one apt-get update and one install, as root (or with sudo).
quiet_apt_install() {
  local root=()
  (( EUID == 0 )) || root=(sudo)
  echo "[apt] apt-get install $*" >&2
  "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q --no-install-recommends "$@" >/dev/null
}
