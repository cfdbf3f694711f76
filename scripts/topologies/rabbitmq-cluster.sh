#!/usr/bin/env bash
# scripts/topologies/rabbitmq-cluster.sh — the RabbitMQ cluster the topology
# tests kill nodes of: kh-rmq1@localhost kh-rmq2@localhost kh-rmq3@localhost
# (Debian's rabbitmq-server, run as the rabbitmq user), AMQP on 127.0.0.1:5681
# 5682 5683, Erlang distribution on 127.0.0.1:25681 25682 25683, epmd on
# loopback :4369 (shared with the base broker), no plugins (so no 15672),
# cluster_partition_handling = pause_minority, an Erlang cookie of its own.
# Node N's state is in $STATE/rabbitmq-cluster/<port>/: mnesia/, home/ (HOME,
# with .erlang.cookie), rabbitmq.log (the broker's log), stdout.log, and
# rabbitmq.pid, the pid of the node's Erlang VM (beam.smp; RABBITMQ_PID_FILE,
# written by the broker at boot, without a trailing newline):
# `kill -9 $(cat $STATE/rabbitmq-cluster/5681/rabbitmq.pid)` kills kh-rmq1 for
# real, and nothing starts it again before the next `up`. rabbitmqctl output:
# $STATE/rabbitmq-cluster/rabbitmqctl.log. Separate from, and never touching,
# the base broker rabbit@<host> on 5672. Run by
# `scripts/services.sh up|down|status|env rabbitmq-cluster`:
#   packages   the Debian packages to install first, one a line
#   up         healthy: a no-op (3 TCP checks and one rabbitmqctl call). Else
#              start only the dead nodes (with their data they rejoin by
#              themselves), and wait (max 90 s) until healthy; a running node
#              that is no member any more is reset and joined again. State it
#              cannot repair is wiped and the cluster created fresh (max 120 s).
#   down       stop the nodes and delete the state dir (epmd is left running)
#   status     one line; exit 3 unless healthy
#   env        APP__AMQP__URLS (the three nodes), APP__AMQP__BIND_QUEUE_TYPE=quorum
#   pid PORT   the live beam.smp pid of the node on PORT (5681-5683)
set -euo pipefail
# shellcheck source=scripts/topologies/nodes.sh
source "$(dirname "${BASH_SOURCE[0]}")/nodes.sh"

DIR="$STATE/rabbitmq-cluster"
PORTS=(5681 5682 5683)   # kh-rmq1..3; the first is the one the others join
DIST_OFFSET=20000        # Erlang distribution port = AMQP port + this
DEADLINE=120             # fresh cluster: start, join, healthy
RECOVER_DEADLINE=90      # restart dead nodes; after that: wipe, create fresh
LIB_BIN=/usr/lib/rabbitmq/bin
LOGS="$DIR/<port>/rabbitmq.log and stdout.log"
CTL_LOG="$DIR/rabbitmqctl.log"
LOOPBACK_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"

installed() { [[ -x $LIB_BIN/rabbitmq-server && -x $LIB_BIN/rabbitmqctl ]] && id -u rabbitmq >/dev/null 2>&1 && command -v jq >/dev/null 2>&1; }
nname() { printf 'kh-rmq%s@localhost\n' "$(( $1 - PORTS[0] + 1 ))"; }   # nname PORT
all_names() { local p; for p in "${PORTS[@]}"; do nname "$p"; done | paste -sd,; }
ours() { [[ " ${PORTS[*]} " == *" $1 "* ]]; }

# node_env PORT — the environment of a node and of rabbitmqctl against it, one
# VAR=value a line. Node names are @localhost, so distribution (and epmd, if a
# node starts it) can always stay on loopback: peers reach them as 127.0.0.1.
node_env() {
  local d=$DIR/$1
  printf '%s\n' "HOME=$d/home" "RABBITMQ_NODENAME=$(nname "$1")" RABBITMQ_USE_LONGNAME=false \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 "RABBITMQ_NODE_PORT=$1" "RABBITMQ_DIST_PORT=$(( $1 + DIST_OFFSET ))" \
    "RABBITMQ_CONF_ENV_FILE=$DIR/rabbitmq-env.conf" "RABBITMQ_CONFIG_FILE=$DIR/rabbitmq.conf" \
    "RABBITMQ_ADVANCED_CONFIG_FILE=$DIR/advanced.config" "RABBITMQ_ENABLED_PLUGINS_FILE=$DIR/enabled_plugins" \
    "RABBITMQ_MNESIA_BASE=$d/mnesia" "RABBITMQ_LOG_BASE=$d" "RABBITMQ_LOGS=$d/rabbitmq.log" \
    "RABBITMQ_PID_FILE=$d/rabbitmq.pid" ERL_EPMD_ADDRESS=127.0.0.1 \
    "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=$LOOPBACK_ARGS" "RABBITMQ_CTL_ERL_ARGS=$LOOPBACK_ARGS"
}

# rmq PORT ARGS... — rabbitmqctl against the node on PORT, as rabbitmq, with
# that node's HOME (cookie). Not /usr/sbin/rabbitmqctl: its `su` resets HOME
# to /var/lib/rabbitmq, i.e. the base broker's cookie. (9>&-: it may start epmd.)
rmq() {
  local p=$1 env; shift
  mapfile -t env < <(node_env "$p")
  as_root runuser -u rabbitmq -- env "${env[@]}" timeout 60 "$LIB_BIN/rabbitmqctl" -n "$(nname "$p")" "$@" </dev/null 9>&-
}

# view PORT — the cluster as the node on PORT sees it, tab-separated: running
# nodes, disc nodes (sorted, comma-separated), number of partitions
view() {
  rmq "$1" cluster_status --formatter json 2>>"$CTL_LOG" |
    jq -er '[(.running_nodes | sort | join(",")), (.disk_nodes | sort | join(",")), (.partitions | length | tostring)] | @tsv'
}

# Healthy? All AMQP ports accept TCP, and kh-rmq1 reports all three nodes
# running and no partition. Prints "3 running", or (and fails) what is wrong.
check() {
  local p v running disk parts
  for p in "${PORTS[@]}"; do
    tcp_open 127.0.0.1 "$p" || { echo "$(nname "$p") does not accept connections on 127.0.0.1:$p"; return 1; }
  done
  v=$(view "${PORTS[0]}") || { echo "rabbitmqctl cluster_status failed on $(nname "${PORTS[0]}") (see $CTL_LOG)"; return 1; }
  IFS=$'\t' read -r running disk parts <<<"$v"
  [[ $running == "$(all_names)" ]] || { echo "$(nname "${PORTS[0]}") sees running: ${running:-none}; members: ${disk:-none}"; return 1; }
  (( parts == 0 )) || { echo "$(nname "${PORTS[0]}") reports $parts partition(s)"; return 1; }
  echo "${#PORTS[@]} running"
}

# node_pid PORT — prints the live beam.smp pid of our node on PORT (from its
# pid file, else by its HOME on the command line); fails if none runs
node_pid() {
  local d=$DIR/$1 pid
  if pid_alive "$d/rabbitmq.pid" "beam.*-home $d/home"; then printf '%s\n' "$(cat "$d/rabbitmq.pid")"; return 0; fi
  pid=$(pgrep -f -- "beam\\.smp .*-home $d/home( |\$)" | head -n 1) || true
  [[ -n $pid ]] && printf '%s\n' "$pid"
}

# start_node PORT — start the node in its own session (outliving this script),
# in the background; prints the launcher's pid (runuser; it exits with the VM)
start_node() {
  local d=$DIR/$1 env
  mapfile -t env < <(node_env "$1")
  ( cd "$d" && exec setsid nohup "${ROOT_CMD[@]}" runuser -u rabbitmq -- env "${env[@]}" "$LIB_BIN/rabbitmq-server" ) \
    </dev/null >>"$d/stdout.log" 2>&1 9>&- &
  echo $!
}

# nodes_wait DEADLINE PORT:PID... — wait until all these AMQP ports accept TCP
# (a node's listener opens at the very end of its boot). Exit 0; 1 at the
# deadline; 2, printing the port, as soon as the process PID of one is gone.
nodes_wait() {
  local end=$((SECONDS + $1)) n p ok; shift
  while :; do
    ok=1
    for n in "$@"; do
      p=${n%%:*}
      tcp_open 127.0.0.1 "$p" && continue
      ok=0
      if pid_gone "${n#*:}"; then echo "$p"; return 2; fi
    done
    (( ok == 0 )) || return 0
    (( SECONDS < end )) || return 1
    sleep 0.5
  done
}

# nodes_stop — `rabbitmqctl shutdown` our live nodes (in parallel), then TERM,
# then KILL the stubborn ones
nodes_stop() {
  local p pid pids=() jobs=() left
  for p in "${PORTS[@]}"; do
    pid=$(node_pid "$p") || continue
    pids+=("$pid")
    rmq "$p" shutdown >>"$CTL_LOG" 2>&1 &
    jobs+=($!)
  done
  (( ${#pids[@]} )) || return 0
  wait "${jobs[@]}" || true
  if ! wait_for 10 all_gone "${pids[@]}"; then
    left=$(for q in "${pids[@]}"; do pid_gone "$q" || printf '%s ' "$q"; done)
    warn "rabbitmq-cluster: pid(s) ${left% } still alive after shutdown; sending TERM"
    # shellcheck disable=SC2086
    as_root kill $left 2>/dev/null || true
    if ! wait_for 15 all_gone "${pids[@]}"; then
      warn "rabbitmq-cluster: pid(s) ${left% } ignored TERM; sending KILL"
      # shellcheck disable=SC2086
      as_root kill -9 $left 2>/dev/null || true
      wait_for 5 all_gone "${pids[@]}" || return 1
    fi
  fi
}

# prepare — a fresh $DIR: the shared config files, and per node a dir owned by
# rabbitmq, HOME with the cluster's own cookie (mode 400), stdout.log
prepare() {
  local p d cookie
  cookie=$(LC_ALL=C tr -dc '[:upper:]' </dev/urandom | head -c 32) || true
  mkdir -p "$DIR"
  printf '# written by kh-review scripts/topologies/rabbitmq-cluster.sh: nothing (not /etc/rabbitmq/rabbitmq-env.conf)\n' >"$DIR/rabbitmq-env.conf"
  printf '[].\n' >"$DIR/enabled_plugins"   # no plugins: no management listener on 15672
  cat >"$DIR/rabbitmq.conf" <<EOF
# written by kh-review scripts/topologies/rabbitmq-cluster.sh — tests only
# (listener, node name, dist port, paths: environment variables, see node_env)
cluster_name = kh-rmq
cluster_partition_handling = pause_minority
# the log goes to rabbitmq.log only (stdout.log: what is printed before that)
log.console = false
# guest / guest, from 127.0.0.1 only
loopback_users.guest = true
EOF
  for p in "${PORTS[@]}"; do
    d=$DIR/$p
    as_root install -d -o rabbitmq -g rabbitmq -m 755 "$d"
    as_root install -d -o rabbitmq -g rabbitmq -m 700 "$d/home"
    as_root install -m 644 -o "$(id -u)" /dev/null "$d/stdout.log"
    # shellcheck disable=SC2016  # $1 belongs to the inner sh
    printf '%s' "$cookie" | as_root runuser -u rabbitmq -- sh -c 'umask 277 && cat >"$1"' sh "$d/home/.erlang.cookie"
  done
}

# join PORT [reset] — make the running node on PORT a member of the first
# node's cluster (with "reset": wipe its own state and have the first node
# forget it first, if it lists it)
join() {
  local p=$1 first=${PORTS[0]} disk=""
  rmq "$p" stop_app || return 1
  if [[ -n ${2:-} ]]; then
    rmq "$p" force_reset || return 1
    disk=$(view "$first" | cut -f2) || return 1
    if [[ ,$disk, == *",$(nname "$p"),"* ]]; then rmq "$first" forget_cluster_node "$(nname "$p")" || return 1; fi
  fi
  rmq "$p" join_cluster "$(nname "$first")" && rmq "$p" start_app
}

# rejoin — every node (but the first) whose AMQP port is open but which the
# first node does not see running is reset and joined again. Fails when that
# cannot help (a partition, a node down, a join that fails).
rejoin() {
  local p v running disk parts
  v=$(view "${PORTS[0]}") || return 1
  IFS=$'\t' read -r running disk parts <<<"$v"
  (( parts == 0 )) || return 1
  for p in "${PORTS[@]:1}"; do
    [[ ,$running, != *",$(nname "$p"),"* ]] || continue
    tcp_open 127.0.0.1 "$p" || return 1
    log "rabbitmq-cluster: $(nname "$p") is no running member; resetting it, joining $(nname "${PORTS[0]}") again..."
    join "$p" reset >>"$CTL_LOG" 2>&1 || return 1
  done
}

unrepairable() { warn "rabbitmq-cluster: $1; wiping $DIR and creating it fresh"; }

# recover — restart the dead nodes of an existing cluster and wait until
# healthy. A VM that runs without AMQP listener may be booting, or paused by
# pause_minority (it starts again once it sees a majority): it gets 30 s more,
# then a start_app. A node that is no member any more is reset and joined
# again. When that does not help, says why and fails (up then creates the
# cluster afresh).
recover() {
  local t0=$SECONDS p n pid dead=() waits=() idle=() out rc=0
  for p in "${PORTS[@]}"; do
    if pid=$(node_pid "$p"); then tcp_open 127.0.0.1 "$p" || idle+=("$p:$pid"); continue; fi
    if [[ ! -d $DIR/$p ]] || ! as_root test -s "$DIR/$p/home/.erlang.cookie"; then unrepairable "$DIR/$p or its cookie is missing"; return 1; fi
    if tcp_open 127.0.0.1 "$p" || tcp_open 127.0.0.1 "$(( p + DIST_OFFSET ))"; then unrepairable "127.0.0.1:$p or :$(( p + DIST_OFFSET )) is taken by another process"; return 1; fi
    dead+=("$p")
  done
  if (( ${#dead[@]} )); then
    log "rabbitmq-cluster: restarting dead node(s) $(for p in "${dead[@]}"; do nname "$p"; done | paste -sd' ') from their data..."
    for p in "${dead[@]}"; do waits+=("$p:$(start_node "$p")"); done
  elif (( ${#idle[@]} == 0 )); then
    log "rabbitmq-cluster: all 3 nodes run, waiting for a healthy cluster..."
  fi
  out=$(nodes_wait "$RECOVER_DEADLINE" "${waits[@]}") || rc=$?
  if (( rc == 2 )); then unrepairable "$(nname "$out") exited at startup (see $DIR/$out/rabbitmq.log)"; return 1; fi
  if (( rc != 0 )); then unrepairable "the restarted nodes do not accept AMQP connections after ${RECOVER_DEADLINE}s (see $LOGS)"; return 1; fi
  for n in "${idle[@]}"; do
    p=${n%%:*}
    if nodes_wait 30 "$n" >/dev/null; then continue; fi
    log "rabbitmq-cluster: $(nname "$p") runs (pid ${n#*:}) without AMQP listener; start_app..."
    rmq "$p" start_app >>"$CTL_LOG" 2>&1 || true
    if ! nodes_wait 30 "$n" >/dev/null; then unrepairable "$(nname "$p") runs but does not accept AMQP connections (see $DIR/$p/rabbitmq.log)"; return 1; fi
  done
  if ! out=$(wait_for 5 check); then
    log "rabbitmq-cluster: not healthy yet ($out)"
    if ! rejoin; then unrepairable "$out, and resetting / joining again did not help (see $CTL_LOG)"; return 1; fi
    if ! out=$(wait_for "$(( RECOVER_DEADLINE - (SECONDS - t0) > 10 ? RECOVER_DEADLINE - (SECONDS - t0) : 10 ))" check); then
      unrepairable "not healthy after restarting and joining again: $out"; return 1
    fi
  fi
  log "rabbitmq-cluster: up again ($out) in $((SECONDS - t0))s"
}

# create — wipe $DIR, start three empty nodes, join the 2nd and 3rd to the
# first, wait until healthy
create() {
  local t0=$SECONDS p waits=() out rc=0 dist=()
  nodes_stop || { fail_profile rabbitmq-cluster "$LOGS" "could not stop the old nodes"; return 1; }
  as_root rm -rf "$DIR"
  for p in "${PORTS[@]}"; do dist+=("$(( p + DIST_OFFSET ))"); done
  ports_free rabbitmq-cluster "${PORTS[@]}" "${dist[@]}" || return 1
  log "rabbitmq-cluster: creating $(all_names) on 127.0.0.1:${PORTS[0]}-${PORTS[-1]} (state: $DIR)..."
  prepare
  for p in "${PORTS[@]}"; do waits+=("$p:$(start_node "$p")"); done
  out=$(nodes_wait "$DEADLINE" "${waits[@]}") || rc=$?
  if (( rc == 2 )); then fail_profile rabbitmq-cluster "$DIR/$out/rabbitmq.log and stdout.log" "$(nname "$out") exited at startup"; return 1; fi
  if (( rc != 0 )); then fail_profile rabbitmq-cluster "$LOGS" "the nodes did not accept AMQP connections within ${DEADLINE}s"; return 1; fi
  for p in "${PORTS[@]:1}"; do
    log "rabbitmq-cluster: $(nname "$p") joins $(nname "${PORTS[0]}")..."
    if ! join "$p" >>"$CTL_LOG" 2>&1; then
      fail_profile rabbitmq-cluster "$CTL_LOG and $DIR/$p/rabbitmq.log" "$(nname "$p") could not join $(nname "${PORTS[0]}")"; return 1
    fi
  done
  if ! out=$(wait_for "$(( DEADLINE - (SECONDS - t0) > 10 ? DEADLINE - (SECONDS - t0) : 10 ))" check); then
    fail_profile rabbitmq-cluster "$LOGS and $CTL_LOG" "not healthy within ${DEADLINE}s: $out"; return 1
  fi
  log "rabbitmq-cluster: up ($(all_names | tr , ' ') on 127.0.0.1:${PORTS[0]}-${PORTS[-1]}, $out) in $((SECONDS - t0))s"
}

up() {
  local out
  if [[ -d $DIR ]] && out=$(check); then log "rabbitmq-cluster: already up ($out)"; return 0; fi
  if ! installed; then
    fail_profile rabbitmq-cluster "$STATE/apt.log" "rabbitmq-server (and its rabbitmq user) or jq are not installed and could not be installed"; return 1
  fi
  if [[ $(getent ahostsv4 localhost | awk 'NR == 1 {print $1}') != 127.* ]]; then
    fail_profile rabbitmq-cluster /etc/hosts "the name localhost does not resolve to 127.0.0.1 (the nodes are kh-rmqN@localhost)"; return 1
  fi
  if [[ -d $DIR ]] && recover; then return 0; fi
  create
}

down() {
  local p any=0
  for p in "${PORTS[@]}"; do if node_pid "$p" >/dev/null; then any=1; fi; done
  if (( any == 0 )) && [[ ! -d $DIR ]]; then log "rabbitmq-cluster: already down"; return 0; fi
  log "rabbitmq-cluster: stopping..."
  if ! nodes_stop; then warn "rabbitmq-cluster: some nodes are still alive (see $CTL_LOG); keeping $DIR"; return 1; fi
  as_root rm -rf "$DIR"
  log "rabbitmq-cluster: stopped, $DIR removed"
}

status() {
  local out="not created"
  if [[ -d $DIR ]] && out=$(check); then
    echo "rabbitmq-cluster: up (kh-rmq1..${#PORTS[@]} on ${PORTS[0]}-${PORTS[-1]}, $out)"; return 0
  fi
  echo "rabbitmq-cluster: down ($out)"; return 3
}

show_env() {
  local p urls=()
  for p in "${PORTS[@]}"; do urls+=("amqp://guest:guest@127.0.0.1:$p/%2f"); done
  printf 'export APP__AMQP__URLS=%q\n' "$(join_comma "${urls[@]}")"
  printf 'export APP__AMQP__BIND_QUEUE_TYPE=%q\n' quorum
}

case ${1:-} in
  packages)
    [[ -x $LIB_BIN/rabbitmq-server ]] || echo rabbitmq-server
    command -v jq >/dev/null 2>&1 || echo jq ;;
  up)       mkdir -p "$STATE"; up ;;
  down)     down ;;
  status)   status ;;
  env)      show_env ;;
  pid)
    ours "${2:-}" || { echo "usage: $0 pid PORT   (PORT: ${PORTS[*]})" >&2; exit 2; }
    node_pid "$2" || { echo "[services] rabbitmq-cluster: no node runs on 127.0.0.1:$2" >&2; exit 1; } ;;
  *)        echo "usage: $0 packages|up|down|status|env|pid PORT" >&2; exit 2 ;;
esac
