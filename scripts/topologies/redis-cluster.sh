#!/usr/bin/env bash
# scripts/topologies/redis-cluster.sh — the Redis Cluster the topology tests
# kill nodes of: 127.0.0.1:7001-7006, 3 masters + 3 replicas,
# cluster-node-timeout 1000 ms, state in $STATE/redis-cluster/<port>/ (see
# nodes.sh). Separate from, and never touching, the Redis on 6379. Run by
# `scripts/services.sh up|down|status|env redis-cluster`:
#   packages   the Debian packages to install first, one a line
#   up         healthy: a no-op well under a second. Else restart only the dead
#              nodes from their (rewritten) nodes.conf, so a failed-over master
#              comes back as a replica, and wait (max 60 s) until healthy.
#              State it cannot repair (e.g. a half-made cluster) is wiped and
#              the cluster created fresh.
#   down       stop it and delete its state dir
#   status     one line; exit 3 unless healthy
#   env        APP__REDIS__MODE=cluster and APP__REDIS__NODES
set -euo pipefail
# shellcheck source=scripts/topologies/nodes.sh
source "$(dirname "${BASH_SOURCE[0]}")/nodes.sh"

DIR="$STATE/redis-cluster"
PORTS=(7001 7002 7003 7004 7005 7006)
SLOTS=16384
LOGS="$DIR/<port>/redis.log"

conf() { # conf PORT — redis.conf of one node
  node_conf "$DIR/$1" "$1" redis-cluster
  cat <<EOF
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 1000
cluster-replica-validity-factor 0
cluster-require-full-coverage no
EOF
  data_conf
}

# CLUSTER NODES on stdin -> one sorted line per node: "PORT M SLOTS" (master),
# "PORT S MASTER_PORT" (replica), "BAD PORT FLAGS LINK" (failing, handshake,
# disconnected, or of unknown role).
view() {
  awk '
    NF >= 8 {
      n++; split($2, a, /[:@,]/); port[$1] = a[2]; pn[n] = a[2]
      fl[n] = $3; mid[n] = $4; ln[n] = $8
      s = ""; for (i = 9; i <= NF; i++) s = s (s == "" ? "" : ",") $i; sl[n] = s
    }
    END {
      for (i = 1; i <= n; i++) {
        if (fl[i] ~ /fail|handshake|noaddr/ || ln[i] != "connected") print "BAD " pn[i] " " fl[i] " " ln[i]
        else if (fl[i] ~ /master/) print pn[i] " M " (sl[i] == "" ? "-" : sl[i])
        else if (fl[i] ~ /slave/)  print pn[i] " S " ((mid[i] in port) ? port[mid[i]] : "?")
        else print "BAD " pn[i] " " fl[i]
      }
    }' | sort
}

# Healthy? All 6 answer with cluster_state:ok, all slots covered, 6 known nodes,
# the same topology seen from every node (nobody flagged failing), exactly 3
# masters holding slots, each with an online replica. Prints the masters' ports,
# or (and fails) the first problem found.
check() {
  local p info v first="" m rep masters=""
  for p in "${PORTS[@]}"; do
    info=$(rcli "$p" cluster info || true)
    if [[ $info != *cluster_state:* ]]; then echo "127.0.0.1:$p does not answer"; return 1; fi
    if ! grep -qx 'cluster_state:ok' <<<"$info"; then echo "127.0.0.1:$p has $(grep -m1 '^cluster_state:' <<<"$info")"; return 1; fi
    if ! grep -qx "cluster_slots_ok:$SLOTS" <<<"$info" || ! grep -qx "cluster_slots_assigned:$SLOTS" <<<"$info"; then
      echo "127.0.0.1:$p: not all $SLOTS slots served ($(grep -E '^cluster_slots_(assigned|ok):' <<<"$info" | paste -sd' '))"; return 1
    fi
    if ! grep -qx "cluster_known_nodes:${#PORTS[@]}" <<<"$info"; then echo "127.0.0.1:$p has $(grep -m1 '^cluster_known_nodes:' <<<"$info")"; return 1; fi
  done
  for p in "${PORTS[@]}"; do
    v=$(rcli "$p" cluster nodes | view || true)
    if grep -q '^BAD ' <<<"$v"; then echo "127.0.0.1:$p sees $(grep -m1 '^BAD ' <<<"$v" | cut -d' ' -f2-)"; return 1; fi
    if [[ -z $first ]]; then first=$v
    elif [[ $v != "$first" ]]; then echo "the nodes do not agree on the topology yet"; return 1; fi
  done
  if [[ $(awk '$2 == "M" && $3 != "-"' <<<"$first" | wc -l) != 3 || $(awk '$2 == "S"' <<<"$first" | wc -l) != 3 ]] ||
     grep -q ' M -$' <<<"$first"; then
    echo "want 3 masters with slots + 3 replicas, have: $(paste -sd';' <<<"$first")"; return 1
  fi
  while read -r m; do
    if ! awk -v m="$m" '$2 == "S" && $3 == m {f = 1} END {exit !f}' <<<"$first"; then
      echo "master 127.0.0.1:$m has no replica"; return 1
    fi
    rep=$(rcli "$m" info replication || true)
    if ! grep -qx 'role:master' <<<"$rep" || ! grep -q '^slave[0-9]*:.*state=online' <<<"$rep"; then
      echo "master 127.0.0.1:$m has no online replica yet"; return 1
    fi
    masters+="${masters:+ }$m"
  done < <(awk '$2 == "M" {print $1}' <<<"$first")
  echo "$masters"
}

# A cluster that was never completely formed cannot be repaired by restarting
# nodes: every node must know all 6, and together they must hold all slots.
# Fails, saying why, when that is not so.
formed() {
  local p info known assigned max_assigned=0 singles=0
  for p in "${PORTS[@]}"; do
    info=$(rcli "$p" cluster info || true)
    known=$(sed -n 's/^cluster_known_nodes://p' <<<"$info")
    assigned=$(sed -n 's/^cluster_slots_assigned://p' <<<"$info")
    if ! [[ $known =~ ^[0-9]+$ && $assigned =~ ^[0-9]+$ ]]; then echo "127.0.0.1:$p gives no CLUSTER INFO"; return 1; fi
    if (( known == 1 )); then singles=$((singles + 1)); fi
    if (( assigned > max_assigned )); then max_assigned=$assigned; fi
    if (( known != ${#PORTS[@]} && known != 1 )); then echo "127.0.0.1:$p knows $known nodes, not 6 (half-made cluster)"; return 1; fi
  done
  if (( singles == ${#PORTS[@]} )); then echo "the nodes run but no cluster was ever formed"; return 1; fi
  if (( singles > 0 )); then echo "$singles node(s) lost their cluster config (nodes.conf)"; return 1; fi
  if (( max_assigned < SLOTS )); then echo "only $max_assigned of $SLOTS slots are assigned (half-made cluster)"; return 1; fi
}

unrepairable() { warn "redis-cluster: $1; wiping $DIR and creating it fresh"; }

# Restart the dead nodes of an existing cluster and wait until it is healthy.
# When the state cannot be repaired that way, says why and fails (up then
# creates the cluster afresh).
recover() {
  local t0=$SECONDS p nodes=() dead=() out rc=0
  for p in "${PORTS[@]}"; do
    if rnode_pid "$DIR" "$p" >/dev/null; then nodes+=("$p"); continue; fi
    if [[ ! -s $DIR/$p/redis.conf ]]; then unrepairable "$DIR/$p/redis.conf is missing"; return 1; fi
    if tcp_open 127.0.0.1 "$p"; then unrepairable "127.0.0.1:$p is taken by another process"; return 1; fi
    dead+=("$p")
  done
  if (( ${#dead[@]} )); then
    log "redis-cluster: restarting dead node(s) ${dead[*]} from their nodes.conf..."
    for p in "${dead[@]}"; do nodes+=("$p:$(rnode_start "$DIR" "$p" redis.conf redis-server)"); done
  else
    log "redis-cluster: all 6 processes run, waiting for a healthy cluster..."
  fi
  out=$(rnodes_wait "$PROFILE_START_DEADLINE" "$DIR" "${nodes[@]}") || rc=$?
  if (( rc == 2 )); then unrepairable "node 127.0.0.1:$out exited at startup (see $DIR/$out/redis.log)"; return 1; fi
  if (( rc != 0 )); then unrepairable "not all nodes answer PING after ${PROFILE_START_DEADLINE}s"; return 1; fi
  if ! out=$(formed); then unrepairable "$out"; return 1; fi
  if ! out=$(wait_for "$PROFILE_RECOVER_DEADLINE" check); then
    unrepairable "not healthy ${PROFILE_RECOVER_DEADLINE}s after restarting: $out"; return 1
  fi
  log "redis-cluster: up again (masters: $out) in $((SECONDS - t0))s"
}

# Wipe $DIR, start 6 empty nodes, form the cluster, wait until healthy.
create() {
  local t0=$SECONDS p nodes=() addrs=() out rc=0
  rnodes_stop "$DIR" "${PORTS[@]}" || { fail_profile redis-cluster "$LOGS" "could not stop the old cluster nodes"; return 1; }
  rm -rf "$DIR"
  ports_free redis-cluster "${PORTS[@]}" || return 1
  log "redis-cluster: creating on 127.0.0.1:${PORTS[0]}-${PORTS[-1]} (state: $DIR)..."
  for p in "${PORTS[@]}"; do
    mkdir -p "$DIR/$p"
    conf "$p" >"$DIR/$p/redis.conf"
    nodes+=("$p:$(rnode_start "$DIR" "$p" redis.conf redis-server)")
    addrs+=("127.0.0.1:$p")
  done
  out=$(rnodes_wait "$PROFILE_START_DEADLINE" "$DIR" "${nodes[@]}") || rc=$?
  if (( rc == 2 )); then fail_profile redis-cluster "$LOGS" "node 127.0.0.1:$out exited at startup"; return 1; fi
  if (( rc != 0 )); then fail_profile redis-cluster "$LOGS" "the nodes did not answer PING within ${PROFILE_START_DEADLINE}s"; return 1; fi
  if ! timeout "$PROFILE_DEADLINE" redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
        </dev/null >>"$DIR/create.log" 2>&1 9>&-; then
    fail_profile redis-cluster "$DIR/create.log and $LOGS" "redis-cli --cluster create failed"; return 1
  fi
  if ! out=$(wait_for "$PROFILE_DEADLINE" check); then
    fail_profile redis-cluster "$LOGS and $DIR/create.log" "not healthy within ${PROFILE_DEADLINE}s: $out"; return 1
  fi
  log "redis-cluster: up on 127.0.0.1:${PORTS[0]}-${PORTS[-1]} (masters: $out) in $((SECONDS - t0))s"
}

up() {
  local p masters
  if ! redis_installed; then
    fail_profile redis-cluster "$STATE/apt.log" "redis-server / redis-cli are not installed and could not be installed"; return 1
  fi
  if [[ -d $DIR ]]; then
    if masters=$(check); then
      for p in "${PORTS[@]}"; do rnode_pid "$DIR" "$p" >/dev/null || true; done   # repairs lost pid files
      log "redis-cluster: already up (masters: $masters)"; return 0
    fi
    if recover; then return 0; fi
  fi
  create
}

down() {
  local any=0 p
  for p in "${PORTS[@]}"; do if rnode_pid "$DIR" "$p" >/dev/null; then any=1; fi; done
  if (( any == 0 )) && [[ ! -d $DIR ]]; then log "redis-cluster: already down"; return 0; fi
  log "redis-cluster: stopping..."
  if ! rnodes_stop "$DIR" "${PORTS[@]}"; then warn "redis-cluster: some nodes are still alive; keeping $DIR"; return 1; fi
  rm -rf "$DIR"
  log "redis-cluster: stopped, $DIR removed"
}

status() {
  local p n=0 out
  if out=$(check); then echo "redis-cluster: up (${PORTS[0]}-${PORTS[-1]}, 3 masters: $out)"; return 0; fi
  for p in "${PORTS[@]}"; do if rping "$p"; then n=$((n + 1)); fi; done
  if (( n == 0 )); then echo "redis-cluster: down"
  else echo "redis-cluster: degraded ($n/${#PORTS[@]} nodes answer; $out)"; fi
  return 3
}

show_env() {
  local p urls=()
  for p in "${PORTS[@]}"; do urls+=("redis://127.0.0.1:$p"); done
  printf 'export APP__REDIS__MODE=cluster\n'
  printf 'export APP__REDIS__NODES=%s\n' "$(join_comma "${urls[@]}")"
}

case ${1:-} in
  packages) redis_installed || printf '%s\n' redis-server redis-tools ;;
  up)       mkdir -p "$STATE"; up ;;
  down)     down ;;
  status)   status ;;
  env)      show_env ;;
  *)        echo "usage: $0 packages|up|down|status|env" >&2; exit 2 ;;
esac
