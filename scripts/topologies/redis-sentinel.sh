#!/usr/bin/env bash
# scripts/topologies/redis-sentinel.sh — the Sentinel set-up the topology tests
# kill nodes of: master 127.0.0.1:6391, replica 6392, sentinels on 26391 26392
# 26393 watching "kh-master" (quorum 2, down-after 1000 ms, failover-timeout
# 2000 ms: a master can fail over again 4 s later), state in
# $STATE/redis-sentinel/<port>/ (see nodes.sh). Separate from, and never
# touching, the Redis on 6379. Run by
# `scripts/services.sh up|down|status|env redis-sentinel`:
#   packages   the Debian packages to install first, one a line
#   up         healthy: a no-op well under a second. Else restart only the dead
#              processes, following the sentinels' view (a failed-over old
#              master comes back as a replica; the original master is not forced
#              back), and wait (max 60 s) until healthy. State it cannot repair
#              is wiped and the set-up created fresh.
#   down       stop it and delete its state dir
#   status     one line; exit 3 unless healthy
#   env        APP__REDIS__MODE=sentinel, APP__REDIS__SENTINELS, APP__REDIS__MASTER_NAME
set -euo pipefail
# shellcheck source=scripts/topologies/nodes.sh
source "$(dirname "${BASH_SOURCE[0]}")/nodes.sh"

DIR="$STATE/redis-sentinel"
DATA_PORTS=(6391 6392)   # initial master, initial replica
SENT_PORTS=(26391 26392 26393)
NAME=kh-master
QUORUM=2
LOGS="$DIR/<port>/redis.log"

# Prints the sentinel command: Debian's redis-sentinel, else redis-server --sentinel.
sentinel_cmd() {
  if command -v redis-sentinel >/dev/null 2>&1; then echo redis-sentinel
  elif command -v redis-server >/dev/null 2>&1; then
    warn "redis-sentinel: no redis-sentinel binary (package redis-sentinel); using redis-server --sentinel"
    echo redis-server --sentinel
  else return 1; fi
}

data_conf_of() { # data_conf_of PORT [MASTER_PORT] — redis.conf of a data node
  # (the sentinels rewrite it, CONFIG REWRITE, when they change its role)
  node_conf "$DIR/$1" "$1" redis-sentinel
  data_conf
  [[ -z ${2:-} ]] || echo "replicaof 127.0.0.1 $2"
}

sentinel_conf() { # sentinel_conf PORT — sentinel.conf (rewritten by the sentinel itself)
  node_conf "$DIR/$1" "$1" redis-sentinel
  cat <<EOF
sentinel monitor $NAME 127.0.0.1 ${DATA_PORTS[0]} $QUORUM
sentinel down-after-milliseconds $NAME 1000
sentinel failover-timeout $NAME 2000
sentinel parallel-syncs $NAME 1
EOF
}

replica_linked() { rcli "$1" info replication | grep -qx 'master_link_status:up'; } # replica_linked PORT
other() { if [[ $1 == "${DATA_PORTS[0]}" ]]; then echo "${DATA_PORTS[1]}"; else echo "${DATA_PORTS[0]}"; fi; }
ours() { [[ $1 == "${DATA_PORTS[0]}" || $1 == "${DATA_PORTS[1]}" ]]; }
role() { rcli "$1" role | head -n 1 || true; }
# key/value reply lines on stdin ("k\nv\nk\nv...") -> "k=v" lines
kv_pairs() { awk 'NR % 2 == 1 {k = $0; next} {print k "=" $0}'; }
# the master's "HOST:PORT" as the sentinel on PORT names it
named_master() { rcli "$1" sentinel get-master-addr-by-name "$NAME" | paste -sd: || true; }

# Healthy? Both data nodes answer; all 3 sentinels name the same master (one of
# ours), whose ROLE is master with the other node as online replica (and that
# one's link is up); each sentinel sees the master without s_down / o_down /
# failover flags, the replica as a plain "slave", and 2 other sentinels.
# Prints "MASTER_PORT REPLICA_PORT", or (and fails) the first problem found.
check() {
  local p s a addr="" m r rep kv
  for p in "${DATA_PORTS[@]}"; do
    rping "$p" || { echo "127.0.0.1:$p does not answer"; return 1; }
  done
  for s in "${SENT_PORTS[@]}"; do
    a=$(named_master "$s")
    [[ $a =~ ^[0-9.]+:[0-9]+$ ]] || { echo "sentinel 127.0.0.1:$s does not answer for $NAME"; return 1; }
    if [[ -z $addr ]]; then addr=$a
    elif [[ $a != "$addr" ]]; then echo "the sentinels disagree on the master ($addr vs $a on $s)"; return 1; fi
  done
  m=${addr##*:}
  if [[ $addr != "127.0.0.1:$m" ]] || ! ours "$m"; then echo "the sentinels name $addr as master, not one of ours"; return 1; fi
  r=$(other "$m")
  [[ $(role "$m") == master ]] || { echo "the sentinels' master 127.0.0.1:$m is not (yet) in role master"; return 1; }
  rep=$(rcli "$m" info replication || true)
  if ! grep -qx 'connected_slaves:1' <<<"$rep" || ! grep -q "^slave0:ip=127.0.0.1,port=$r,state=online," <<<"$rep"; then
    echo "master 127.0.0.1:$m has no online replica 127.0.0.1:$r yet"; return 1
  fi
  rep=$(rcli "$r" info replication || true)
  if ! grep -qx "master_port:$m" <<<"$rep" || ! grep -qx 'master_link_status:up' <<<"$rep"; then
    echo "replica 127.0.0.1:$r has no link up to 127.0.0.1:$m yet"; return 1
  fi
  for s in "${SENT_PORTS[@]}"; do
    kv=$(rcli "$s" sentinel master "$NAME" | kv_pairs || true)
    grep -qx 'flags=master' <<<"$kv" || { echo "sentinel $s: master $(grep -m1 '^flags=' <<<"$kv")"; return 1; }
    grep -qx 'num-other-sentinels=2' <<<"$kv" || { echo "sentinel $s: $(grep -m1 '^num-other-sentinels=' <<<"$kv" || echo 'num-other-sentinels=?') (want 2)"; return 1; }
    kv=$(rcli "$s" sentinel replicas "$NAME" | kv_pairs | awk -F= '$1 == "port" {p = $2} $1 == "flags" {print p " " $2}' || true)
    grep -qx "$r slave" <<<"$kv" || { echo "sentinel $s does not see 127.0.0.1:$r as a healthy replica yet"; return 1; }
  done
  echo "$m $r"
}

# After a failover whose old master stayed up (SENTINEL FAILOVER, or a node that
# came back on its own), the old master keeps acting as a master until the
# sentinels turn it into a replica, which they only do ~10 s later (they first
# wait 4 publish periods "for newer configs"). Prints "STRAY MASTER" when the
# failover is over (all 3 sentinels name the same master of ours, none has it
# in failover, and it is in role master) but the other data node still acts
# as a master too.
stray_master() {
  local s a addr="" m r
  for s in "${SENT_PORTS[@]}"; do
    a=$(named_master "$s")
    [[ -n $a && ( -z $addr || $a == "$addr" ) ]] || return 1
    addr=$a
  done
  m=${addr##*:}
  [[ $addr == "127.0.0.1:$m" ]] && ours "$m" || return 1
  r=$(other "$m")
  [[ $(role "$m") == master && $(role "$r") == master ]] || return 1
  for s in "${SENT_PORTS[@]}"; do
    rcli "$s" sentinel master "$NAME" | kv_pairs | grep -qx 'flags=master' || return 1
  done
  echo "$r $m"
}

# settle DEADLINE — wait until healthy; a stray master (see above) is made a
# replica of the sentinels' master, as they would do (REPLICAOF + CONFIG
# REWRITE), once; never the other way round. Exit 1 at the deadline.
settle() {
  local end=$((SECONDS + $1)) nudged="" r m
  while :; do
    if check >/dev/null; then return 0; fi
    if read -r r m < <(stray_master) && [[ $r != "$nudged" ]]; then
      log "redis-sentinel: 127.0.0.1:$r still acts as master after the failover to $m; making it a replica of $m (as the sentinels would, ~10 s later)"
      rcli "$r" replicaof 127.0.0.1 "$m" >/dev/null || true
      rcli "$r" config rewrite >/dev/null || true
      nudged=$r
    fi
    (( SECONDS < end )) || return 1
    sleep 0.5
  done
}

# The port of the current master by the sentinels (majority of those
# answering, else of their config files); empty if unknown.
current_master() {
  local s
  for s in "${SENT_PORTS[@]}"; do rcli "$s" sentinel get-master-addr-by-name "$NAME" | sed -n 2p || true; done \
    | grep -E '^[0-9]+$' | sort | uniq -c | sort -rn | awk '$1 >= 2 {print $2; exit}' || true
}
conf_master() {
  cat "$DIR"/*/sentinel.conf 2>/dev/null | awk -v n="$NAME" '$1 == "sentinel" && $2 == "monitor" && $3 == n {print $5}' \
    | sort | uniq -c | sort -rn | awk '{print $2; exit}' || true
}

# set_replicaof CONF [MASTER_PORT] — (un)set replicaof in a data node's config
set_replicaof() {
  sed -i -e '/^[[:space:]]*\(replicaof\|slaveof\)[[:space:]]/d' "$1"
  [[ -z ${2:-} ]] || echo "replicaof 127.0.0.1 $2" >>"$1"
}

unrepairable() { warn "redis-sentinel: $1; wiping $DIR and creating it fresh"; }

# recover SENTINEL_CMD... — restart the dead processes of an existing set-up and
# wait until it is healthy. When the state cannot be repaired that way, says
# why and fails (up then creates it afresh).
recover() {
  local t0=$SECONDS p conf deadd=() deads=() started=() cur out rc m r
  for p in "${DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do
    rnode_pid "$DIR" "$p" >/dev/null && continue
    conf=redis.conf
    if ! ours "$p"; then conf=sentinel.conf; fi
    if [[ ! -s $DIR/$p/$conf ]]; then unrepairable "$DIR/$p/$conf is missing"; return 1; fi
    if tcp_open 127.0.0.1 "$p"; then unrepairable "127.0.0.1:$p is taken by another process"; return 1; fi
    if [[ $conf == redis.conf ]]; then deadd+=("$p"); else deads+=("$p"); fi
  done
  if (( ${#deadd[@]} )); then
    # Follow the sentinels' view: a dead node that is not their master comes
    # back as replica of their master (not as a second master); the original
    # master is never forced back.
    cur=$(current_master)
    [[ -n $cur ]] || cur=$(conf_master)
    for p in "${deadd[@]}"; do
      if [[ -z $cur ]]; then continue
      elif [[ $p == "$cur" ]]; then set_replicaof "$DIR/$p/redis.conf"
      else set_replicaof "$DIR/$p/redis.conf" "$cur"; fi
    done
    log "redis-sentinel: restarting dead data node(s) ${deadd[*]} (sentinels' master: ${cur:-unknown})..."
    started=()
    for p in "${deadd[@]}"; do started+=("$p:$(rnode_start "$DIR" "$p" redis.conf redis-server)"); done
    rc=0; rnodes_wait "$PROFILE_START_DEADLINE" "$DIR" "${started[@]}" >/dev/null || rc=$?
    if (( rc != 0 )); then unrepairable "data node(s) ${deadd[*]} did not come back (see $LOGS)"; return 1; fi
  fi
  if (( ${#deads[@]} )); then
    log "redis-sentinel: restarting dead sentinel(s) ${deads[*]} from their sentinel.conf..."
    started=()
    for p in "${deads[@]}"; do started+=("$p:$(rnode_start "$DIR" "$p" sentinel.conf "$@")"); done
    rc=0; rnodes_wait "$PROFILE_START_DEADLINE" "$DIR" "${started[@]}" >/dev/null || rc=$?
    if (( rc != 0 )); then unrepairable "sentinel(s) ${deads[*]} did not come back (see $LOGS)"; return 1; fi
  fi
  if (( ${#deadd[@]} + ${#deads[@]} == 0 )); then
    log "redis-sentinel: all 5 processes run, waiting for a healthy setup..."
  fi
  # every sentinel must monitor kh-master at one of our two data nodes
  for p in "${SENT_PORTS[@]}"; do
    cur=$(named_master "$p")
    if [[ $cur != "127.0.0.1:${DATA_PORTS[0]}" && $cur != "127.0.0.1:${DATA_PORTS[1]}" ]]; then
      unrepairable "sentinel 127.0.0.1:$p monitors ${cur:-nothing} as $NAME"; return 1
    fi
  done
  if ! settle "$PROFILE_RECOVER_DEADLINE" || ! out=$(check); then
    unrepairable "not healthy ${PROFILE_RECOVER_DEADLINE}s after restarting: $(check)"; return 1
  fi
  read -r m r <<<"$out"
  log "redis-sentinel: up again (master 127.0.0.1:$m, replica $r) in $((SECONDS - t0))s"
}

# create SENTINEL_CMD... — wipe $DIR, start master and replica, then the
# sentinels, and wait until healthy
create() {
  local t0=$SECONDS p m=${DATA_PORTS[0]} r=${DATA_PORTS[1]} nodes=() out rc=0
  rnodes_stop "$DIR" "${SENT_PORTS[@]}" "${DATA_PORTS[@]}" || { fail_profile redis-sentinel "$LOGS" "could not stop the old processes"; return 1; }
  rm -rf "$DIR"
  ports_free redis-sentinel "${DATA_PORTS[@]}" "${SENT_PORTS[@]}" || return 1
  log "redis-sentinel: creating master 127.0.0.1:$m, replica $r, sentinels ${SENT_PORTS[*]} (state: $DIR)..."
  mkdir -p "$DIR/$m" "$DIR/$r"
  data_conf_of "$m" >"$DIR/$m/redis.conf"
  data_conf_of "$r" "$m" >"$DIR/$r/redis.conf"
  nodes=("$m:$(rnode_start "$DIR" "$m" redis.conf redis-server)" "$r:$(rnode_start "$DIR" "$r" redis.conf redis-server)")
  out=$(rnodes_wait "$PROFILE_START_DEADLINE" "$DIR" "${nodes[@]}") || rc=$?
  if (( rc != 0 )); then fail_profile redis-sentinel "$LOGS" "data node(s) did not start (${out:+127.0.0.1:$out exited}${out:-no PONG within ${PROFILE_START_DEADLINE}s})"; return 1; fi
  # replica linked first, so the sentinels find it in their first INFO
  if ! wait_for "$PROFILE_DEADLINE" replica_linked "$r"; then
    fail_profile redis-sentinel "$DIR/$r/redis.log" "replica 127.0.0.1:$r did not sync from 127.0.0.1:$m"; return 1
  fi
  nodes=()
  for p in "${SENT_PORTS[@]}"; do
    mkdir -p "$DIR/$p"
    sentinel_conf "$p" >"$DIR/$p/sentinel.conf"
    nodes+=("$p:$(rnode_start "$DIR" "$p" sentinel.conf "$@")")
  done
  out=$(rnodes_wait "$PROFILE_START_DEADLINE" "$DIR" "${nodes[@]}") || rc=$?
  if (( rc != 0 )); then fail_profile redis-sentinel "$LOGS" "sentinel(s) did not start (${out:+127.0.0.1:$out exited}${out:-no PONG within ${PROFILE_START_DEADLINE}s})"; return 1; fi
  if ! settle "$PROFILE_DEADLINE" || ! out=$(check); then
    fail_profile redis-sentinel "$LOGS" "not healthy within ${PROFILE_DEADLINE}s: $(check)"; return 1
  fi
  read -r m r <<<"$out"
  log "redis-sentinel: up (master 127.0.0.1:$m, replica $r, sentinels ${SENT_PORTS[*]}) in $((SECONDS - t0))s"
}

up() {
  local p out cmd
  if ! redis_installed || ! out=$(sentinel_cmd); then
    fail_profile redis-sentinel "$STATE/apt.log" "redis-server / redis-cli / redis-sentinel are not installed and could not be installed"; return 1
  fi
  read -ra cmd <<<"$out"
  if [[ -d $DIR ]]; then
    if out=$(check); then
      for p in "${DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do rnode_pid "$DIR" "$p" >/dev/null || true; done   # repairs lost pid files
      log "redis-sentinel: already up (master 127.0.0.1:${out% *}, replica ${out#* })"; return 0
    fi
    if recover "${cmd[@]}"; then return 0; fi
  fi
  create "${cmd[@]}"
}

down() {
  local any=0 p
  for p in "${DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do if rnode_pid "$DIR" "$p" >/dev/null; then any=1; fi; done
  if (( any == 0 )) && [[ ! -d $DIR ]]; then log "redis-sentinel: already down"; return 0; fi
  log "redis-sentinel: stopping..."
  # sentinels first, so they do not fail over while the data nodes stop
  if ! rnodes_stop "$DIR" "${SENT_PORTS[@]}" || ! rnodes_stop "$DIR" "${DATA_PORTS[@]}"; then
    warn "redis-sentinel: some processes are still alive; keeping $DIR"; return 1
  fi
  rm -rf "$DIR"
  log "redis-sentinel: stopped, $DIR removed"
}

status() {
  local p n=0 out
  if out=$(check); then
    echo "redis-sentinel: up (master 127.0.0.1:${out% *}, replica ${out#* }, sentinels ${SENT_PORTS[0]}-${SENT_PORTS[-1]})"; return 0
  fi
  for p in "${DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do if rping "$p"; then n=$((n + 1)); fi; done
  if (( n == 0 )); then echo "redis-sentinel: down"
  else echo "redis-sentinel: degraded ($n/5 processes answer; $out)"; fi
  return 3
}

show_env() {
  local p urls=()
  for p in "${SENT_PORTS[@]}"; do urls+=("redis://127.0.0.1:$p"); done
  printf 'export APP__REDIS__MODE=sentinel\n'
  printf 'export APP__REDIS__SENTINELS=%s\n' "$(join_comma "${urls[@]}")"
  printf 'export APP__REDIS__MASTER_NAME=%s\n' "$NAME"
}

case ${1:-} in
  packages)
    redis_installed || printf '%s\n' redis-server redis-tools
    command -v redis-sentinel >/dev/null 2>&1 || echo redis-sentinel ;;
  up)       mkdir -p "$STATE"; up ;;
  down)     down ;;
  status)   status ;;
  env)      show_env ;;
  *)        echo "usage: $0 packages|up|down|status|env" >&2; exit 2 ;;
esac
