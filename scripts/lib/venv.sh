# shellcheck shell=bash
# scripts/lib/venv.sh — a pinned Python virtualenv in ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools},
# outside the clone so fresh clones reuse it: made once per machine and per set of pins (a
# marker file holds them), one install at a time (a lock), so checkouts side by side can
# share it. Sourced by scripts/events_venv.sh, scripts/peer_venv.sh and scripts/fuzz.sh; never run.

# shellcheck source=scripts/lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

# pinned_venv NAME WANT: the virtualenv NAME holding exactly the requirement specifiers
# WANT (made, or made again, when it does not); prints its python.
pinned_venv() {
  local name=$1 want=$2
  local tools="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
  local venv="$tools/$name"
  mkdir -p "$tools"
  exec 9>"$tools/.$name.lock"
  flock 9
  if [[ -x $venv/bin/python && "$(cat "$venv/.kh-installed" 2>/dev/null)" == "$want" ]]; then
    echo "$venv/bin/python"
    return 0
  fi
  echo "[$name] installing $want into $venv (once per machine)" >&2
  rm -rf "$venv"
  command -v python3 >/dev/null 2>&1 || quiet_apt_install python3 python3-venv
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian and Ubuntu ship venv (with ensurepip) as a package of its own.
    rm -rf "$venv"
    quiet_apt_install python3-venv
    python3 -m venv "$venv"
  fi
  # shellcheck disable=SC2086 # $want is a list of requirement specifiers
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want >&2
  printf '%s' "$want" >"$venv/.kh-installed"
  echo "$venv/bin/python"
}
