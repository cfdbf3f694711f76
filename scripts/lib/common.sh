# shellcheck shell=bash
# scripts/lib/common.sh — what the service scripts share (the topologies are Python:
# scripts/topologies/topology.py): log lines,
# errors that say how to fix things, root, waiting with a deadline, pid files,
# one apt-get run, the state dir and its lock. Sourced, never run; every
# function answers through its stdout and exit status, none sets a global.

STATE="${KH_STATE_DIR:-/var/tmp/kh-review}"

# Log lines count seconds from the start of scripts/services.sh (it exports
# _KH_SERVICES_STARTED), so the lines of its parts read as one run.
SECONDS=$(( EPOCHSECONDS - ${_KH_SERVICES_STARTED:-$EPOCHSECONDS} ))

log()  { printf '[services] %s (%ss)\n' "$*" "$SECONDS"; }
warn() { printf '[services] WARNING: %s\n' "$*" >&2; }

# fail PIECE LOGFILE ENVVAR EXAMPLE_URL MESSAGE — why PIECE is not up, where to
# read more, and how to use an existing server instead
fail() {
  printf '[services] ERROR: %s: %s\n' "$1" "$5" >&2
  printf '[services]        read the log: %s\n' "$2" >&2
  printf '[services]        or use an existing server instead: export %s=%s\n' "$3" "$4" >&2
}

# fail_ext PIECE ENVVAR URL DEFAULT_PORT — the server the user named does not answer
fail_ext() {
  local host port
  read -r host port < <(url_hostport "$3" "$4")
  printf '[services] ERROR: %s: %s is set, but nothing answers at %s:%s\n' "$1" "$2" "$host" "$port" >&2
  printf '[services]        start that server, or unset %s to let this script run a local one\n' "$2" >&2
}

# The prefix that runs a command as root (for the few places that must exec it).
if (( EUID == 0 )); then ROOT_CMD=(); else ROOT_CMD=(sudo); fi
as_root() {
  if (( EUID != 0 )) && ! command -v sudo >/dev/null 2>&1; then
    echo "[services] ERROR: need root (or sudo) to run: $*" >&2
    return 1
  fi
  "${ROOT_CMD[@]}" "$@"
}

# tcp_open HOST PORT — something accepts a TCP connection (2 s timeout)
tcp_open() {
  # shellcheck disable=SC2016  # $0 and $1 belong to the inner bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" >/dev/null 2>&1
}

# url_hostport URL DEFAULT_PORT — prints "HOST PORT" of the first host in
# scheme://user:pass@host:port/path?query (also [v6]:port, host1,host2)
url_hostport() {
  local rest host port
  rest=${1#*://}; rest=${rest%%/*}; rest=${rest%%\?*}; rest=${rest##*@}; rest=${rest%%,*}
  if [[ $rest == \[* ]]; then
    host=${rest%%]*}; host=${host#[}
    port=${rest#*]}; port=${port#:}
  else
    host=${rest%%:*}
    port=${rest#"$host"}; port=${port#:}
  fi
  printf '%s %s\n' "${host:-127.0.0.1}" "${port:-$2}"
}

# wait_for [--pid PID] DEADLINE CMD... — run CMD every 0.5 s until it succeeds,
# for at most DEADLINE seconds, and print what its last run printed (so a
# check can say why it is not happy yet). Exit 0 once CMD succeeded, 1 at the
# deadline, 2 as soon as PID (the process that should come up) has exited.
wait_for() {
  local pid="" end out
  if [[ $1 == --pid ]]; then pid=$2; shift 2; fi
  end=$((SECONDS + $1)); shift
  while :; do
    if out=$("$@"); then say "$out"; return 0; fi
    if [[ -n $pid ]] && pid_gone "$pid"; then say "$out"; return 2; fi
    if (( SECONDS >= end )); then say "$out"; return 1; fi
    sleep 0.5
  done
}
say() { [[ -z $1 ]] || printf '%s\n' "$1"; }

# pid_alive PIDFILE [NAME] — the pid in PIDFILE is a live (non-zombie) process,
# whose command line contains NAME if given (guards against pid reuse)
pid_alive() {
  local pid
  [[ -s $1 ]] && pid=$(cat "$1" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] || return 1
  ! pid_gone "$pid" || return 1
  [[ -z ${2:-} || ! -r /proc/$pid/cmdline ]] || tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2"
}

# pid_gone PID — no such process (or only a zombie of it)
pid_gone() {
  kill -0 "$1" 2>/dev/null || return 0
  [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

# pg_tool NAME — the newest installed PostgreSQL's NAME (psql, pg_isready), not
# Debian's Perl wrapper of the same name in /usr/bin, which costs ~0.1 s a call;
# just NAME when there is none
pg_tool() {
  local f
  f=$(printf '%s\n' /usr/lib/postgresql/*/bin/"$1" | sort -V | tail -n 1)
  if [[ -x $f ]]; then printf '%s\n' "$f"; else printf '%s\n' "$1"; fi
}

# status_line PIECE ENVVAR ADDR EXTERNAL_CHECK LOCAL_CHECK — the line `status`
# prints for PIECE; exit 3 when it is down
status_line() {
  local piece=$1 var=$2 addr=$3
  if [[ -n ${!var:-} ]]; then
    if "$4"; then echo "$piece: up (external, $var)"; return 0; fi
    echo "$piece: down (external, $var)"; return 3
  fi
  if "$5"; then echo "$piece: up ($addr)"; return 0; fi
  echo "$piece: down"; return 3
}

# apt_install PKG... — one apt-get update and one install, logged to $STATE/apt.log.
# Without systemd, package scripts must not try to start the services (we start
# them): a policy-rc.d that says no, only if there is none, removed afterwards.
POLICY_RC=/usr/sbin/policy-rc.d
apt_install() {
  local aptlog="$STATE/apt.log" lockopt=(-o DPkg::Lock::Timeout=600) rc=0 policy=0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[services] ERROR: apt-get not found; cannot install: $*" >&2
    return 1
  fi
  if [[ ! -e $POLICY_RC ]]; then
    trap 'as_root rm -f "$POLICY_RC"' EXIT
    # shellcheck disable=SC2016  # $1 belongs to the inner sh
    as_root sh -c 'printf "#!/bin/sh\n# temporary, from kh-review scripts/services.sh\nexit 101\n" > "$1" && chmod 755 "$1"' sh "$POLICY_RC"
    policy=1
  fi
  log "apt-get update (log: $aptlog)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get "${lockopt[@]}" update -q >>"$aptlog" 2>&1 || rc=$?
  if (( rc == 0 )); then
    log "apt-get install $* (log: $aptlog)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${lockopt[@]}" install -y -q \
      --no-install-recommends "$@" >>"$aptlog" 2>&1 || rc=$?
  fi
  if (( policy )); then as_root rm -f "$POLICY_RC" || true; trap - EXIT; fi
  return "$rc"
}

# take_lock — one up/down at a time: holds $STATE/.lock on fd 9 until exit.
# Daemons are started with 9>&- so that they do not keep holding it.
take_lock() {
  mkdir -p "$STATE"
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$STATE/.lock"
  if ! flock -n 9; then
    log "another services.sh run holds $STATE/.lock, waiting..."
    flock -w 900 9 || { echo "[services] ERROR: could not get $STATE/.lock" >&2; exit 1; }
  fi
}
