# shellcheck shell=bash disable=SC2034  # (its constants are used by the scripts that source it)
# scripts/topologies/nodes.sh — what redis-cluster.sh and redis-sentinel.sh
# share: the Redis processes of a profile. Sourced, never run.
#
# Every process runs from $STATE/<profile>/<port>/ with its config (redis.conf,
# or sentinel.conf for a sentinel), redis.log, and redis.pid holding the live
# redis-server / redis-sentinel pid (what the tests `kill -9`), in the
# foreground of its own session so it outlives the script.

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

PROFILE_DEADLINE=60          # fresh profile: start + form + healthy
PROFILE_RECOVER_DEADLINE=30  # restart dead nodes; after that: wipe, start fresh
PROFILE_START_DEADLINE=15    # a started process answers PING

redis_installed() { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; }

# fail_profile PROFILE LOGS MESSAGE
fail_profile() {
  printf '[services] ERROR: %s: %s\n' "$1" "$3" >&2
  printf '[services]        read the logs: %s\n' "$2" >&2
}

# rcli PORT ARGS... — redis-cli against 127.0.0.1:PORT, 2 s timeout, no CRs
rcli() {
  local port=$1; shift
  timeout 2 redis-cli -h 127.0.0.1 -p "$port" "$@" </dev/null 2>/dev/null 9>&- | tr -d '\r'
}

rping() { [[ $(rcli "$1" ping || true) == PONG ]]; }

join_comma() { local IFS=,; printf '%s\n' "$*"; }

# Command line of one of our processes: "redis-server /…/7001/redis.conf"
# at first, then Redis' process title "redis-server 127.0.0.1:7001 [cluster]".
rnode_pat() { printf 'redis.*[:/]%s' "$1"; }

# rnode_pid DIR PORT — prints the pid of our live process for PORT: from its
# pid file, else (pid file lost or stale) from INFO if its config file is ours,
# and then rewrites the pid file. Fails if none runs.
rnode_pid() {
  local pidf="$1/$2/redis.pid" info pid cf
  if pid_alive "$pidf" "$(rnode_pat "$2")"; then cat "$pidf"; return 0; fi
  info=$(rcli "$2" info server || true)
  [[ -n $info ]] || return 1
  pid=$(sed -n 's/^process_id://p' <<<"$info")
  cf=$(sed -n 's/^config_file://p' <<<"$info")
  [[ $pid =~ ^[0-9]+$ && $cf == */"${1##*/}/$2/"*.conf ]] || return 1
  [[ ! -d $1/$2 ]] || echo "$pid" >"$pidf"
  printf '%s\n' "$pid"
}

# rnode_start DIR PORT CONF_FILE CMD... — start CMD CONF in its own session,
# in the background; prints its pid. stdout/stderr go to redis.log too (config
# errors are printed before the log file is opened). Redis writes the same pid
# into redis.pid itself (pidfile in the config).
rnode_start() {
  local d="$1/$2" conf=$3; shift 3
  : >>"$d/redis.log"
  # setsid execs in place (no job control here), so $! is the server's pid
  nohup setsid "$@" "$d/$conf" </dev/null >>"$d/redis.log" 2>&1 9>&- &
  echo $! >"$d/redis.pid"
  echo $!
}

# rnodes_wait DEADLINE DIR PORT[:PID]... — wait until all answer PING. A port
# given with the pid this run started it as is dead once that pid has exited
# (not its pid file: Redis rewrites that at startup); the others once their
# pid file names no live process. Exit 0; 1 at the deadline; 2, printing the
# port, as soon as one of them is dead.
rnodes_wait() {
  local end=$((SECONDS + $1)) dir=$2 node port pid ok; shift 2
  while :; do
    ok=1
    for node in "$@"; do
      port=${node%%:*}; pid=${node#"$port"}; pid=${pid#:}
      rping "$port" && continue
      ok=0
      if [[ -n $pid ]]; then pid_gone "$pid" || continue
      elif pid_alive "$dir/$port/redis.pid"; then continue; fi
      echo "$port"; return 2
    done
    (( ok == 0 )) || return 0
    (( SECONDS < end )) || return 1
    sleep 0.2
  done
}

all_gone() { local q; for q in "$@"; do pid_gone "$q" || return 1; done; } # all_gone PID...

# rnodes_stop DIR PORT... — TERM our processes on these ports (in this order),
# wait for them to exit, KILL the stubborn ones.
rnodes_stop() {
  local dir=$1 p pid pids=() left; shift
  for p in "$@"; do
    if pid=$(rnode_pid "$dir" "$p"); then
      kill "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  (( ${#pids[@]} )) || return 0
  if ! wait_for 15 all_gone "${pids[@]}"; then
    left=$(for q in "${pids[@]}"; do pid_gone "$q" || printf '%s ' "$q"; done)
    warn "pid(s) ${left% } ignored TERM; sending KILL"
    # shellcheck disable=SC2086
    kill -9 $left 2>/dev/null || true
    wait_for 5 all_gone "${pids[@]}" || return 1
  fi
}

# ports_free PROFILE PORT... — nothing (foreign) listens there
ports_free() {
  local prof=$1 p; shift
  for p in "$@"; do
    if tcp_open 127.0.0.1 "$p"; then
      echo "[services] ERROR: $prof: 127.0.0.1:$p is in use by another process (not started by this script for $prof); free it first" >&2
      return 1
    fi
  done
}

# node_conf DIR PORT PROFILE — the lines every process of a profile starts with:
# loopback only, in the foreground, pid file, log and working dir in DIR
node_conf() {
  cat <<EOF
# written by kh-review scripts/services.sh (profile $3) — tests only
bind 127.0.0.1
port $2
protected-mode no
daemonize no
pidfile "$1/redis.pid"
logfile "$1/redis.log"
dir "$1"
EOF
}

# data_conf — a data node keeps nothing on disk, and a (re)joining replica
# syncs at once instead of after the default 5 s
data_conf() {
  cat <<EOF
appendonly no
save ""
repl-diskless-sync-delay 0
EOF
}
