#!/usr/bin/env bash
# scripts/topologies/postgres-ha.sh — the PostgreSQL HA set-up the topology tests
# kill nodes of: three PostgreSQL 15 members pg1 pg2 pg3 run by Patroni 3.0
# (PostgreSQL on 127.0.0.1:5441 5442 5443, Patroni REST API on 8441 8442 8443),
# one etcd 3.4 (client 2479, peer 2480; Patroni's etcd3: section, i.e. etcd's v3
# gRPC gateway over plain HTTP, no v2 API), HAProxy on 5440 sending TCP to the
# member whose REST API answers 200 on /primary (the leader; checked every
# 500 ms, see postgres-ha/haproxy.cfg), and a FerretDB on 27027 keeping its data
# in the database ferretdb through 5440, so the MongoDB stand-in fails over with
# PostgreSQL. Patroni: synchronous_mode (a sync standby: a failover loses no
# commit), use_pg_rewind, remove_data_directory_on_rewind_failure and
# _on_diverged_timelines, wal_log_hints; ttl 5 s, loop_wait 1 s, retry_timeout
# 2 s (see TTL below); a leader killed -9 is replaced in ~5-6 s. Configs:
# scripts/topologies/postgres-ha/ (patroni.yml, haproxy.cfg); helpers: pg-nodes.sh.
# Role kh/kh (CREATEDB) owns kh_review, ferretdb/ferretdb owns ferretdb; the
# superuser postgres, replicator and rewinder have fixed passwords (below; tests
# only). Separate from, never touching, the PostgreSQL on 5432 (cluster 15/main)
# and the FerretDB on 27017. As root: Patroni runs as the user postgres (by
# setpriv, which execs in place, so the pid is Patroni's). State in
# $STATE/postgres-ha/: etcd/ (its data), etcd.log, haproxy.cfg, haproxy.log,
# haproxy.sock (stats), ferretdb.log, admin.log, and <name>/ with patroni.yml,
# data/, patroni.log, postgresql.log. Pids (what tests kill -9):
#   <name>/patroni.pid                        member <name>'s patroni (python) process
#   first line of <name>/data/postmaster.pid  its postmaster
#   etcd.pid haproxy.pid ferretdb.pid
# Run by `scripts/services.sh up|down|status|env postgres-ha`, or directly:
#   packages   the Debian packages to install first, one a line
#   up         healthy: a no-op (~0.15 s). Else start whatever is dead (etcd, a
#              Patroni member, HAProxy, FerretDB) and wait (max 90 s) until
#              healthy; a member killed with its postmaster comes back as a
#              replica (Patroni rewinds it, or clones it anew), a postmaster left
#              without its Patroni is adopted by the Patroni started. State it
#              cannot repair is wiped and the set-up created fresh (max 120 s).
#   down       stop it (KILL what ignores TERM) and delete its state dir
#   status     one line; exit 3 unless healthy: etcd answers, one leader, both
#              others running on its timeline and streaming from it, one as sync
#              standby, 5440 reaches the leader and HAProxy has only it up,
#              FerretDB accepts TCP
#   env        APP__DATABASE__URL (through 5440) and APP__MONGO__URL (27027)
#   leader     prints the leader's name (pg1, pg2 or pg3), from the REST API
#   switchover [NAME]  makes NAME the leader (patronictl switchover) and waits
#              until healthy again; NAME must be the sync standby (the default)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/topologies/nodes.sh
source "$here/nodes.sh"   # (common.sh, fail_profile, ports_free, all_gone)

DIR="$STATE/postgres-ha"
TPL="$here/postgres-ha"
SQL="$here/../sql"
NAMES=(pg1 pg2 pg3)
PG_PORTS=(5441 5442 5443)
API_PORTS=(8441 8442 8443)
ETCD_PORT=2479 ETCD_PEER_PORT=2480 HAPROXY_PORT=5440 MONGO_PORT=27027
# Patroni 3.0.2 checks none of these (3.1+ raises ttl to >= 20). The leader key
# expires TTL s after the dead leader's last refresh; Patroni's own rule
# loop_wait + 2 * retry_timeout <= ttl holds; etcd's shortest lease is 2 s.
TTL=5 LOOP_WAIT=1 RETRY_TIMEOUT=2
SU_PASSWORD=kh-ha-postgres REPL_PASSWORD=kh-ha-replicator REWIND_PASSWORD=kh-ha-rewinder
DEADLINE=120 RECOVER_DEADLINE=90 START_DEADLINE=20
URL="postgres://kh:kh@127.0.0.1:$HAPROXY_PORT/kh_review"
MONGO_URL="mongodb://127.0.0.1:$MONGO_PORT"
FERRET_PG_URL="postgres://ferretdb:ferretdb@127.0.0.1:$HAPROXY_PORT/ferretdb"
FERRET_VERSION=v1.24.2
LOGS="$DIR/*.log, $DIR/<name>/patroni.log, $DIR/<name>/postgresql.log"
# shellcheck source=scripts/topologies/pg-nodes.sh
source "$here/pg-nodes.sh"

installed() {
  command -v patroni >/dev/null 2>&1 && command -v etcd >/dev/null 2>&1 &&
    command -v haproxy >/dev/null 2>&1 && [[ -n $(bin_dir) ]]
}
bin_dir() { printf '%s\n' /usr/lib/postgresql/*/bin/postgres | sort -V | tail -n 1 | sed -n 's|/postgres$||p' | grep -v '\*' || true; }

etcd_start() {
  install -d -m 700 "$DIR/etcd"
  spawn "$DIR" "$DIR/etcd.pid" "$DIR/etcd.log" etcd --name kh-review-ha --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "kh-review-ha=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-token kh-review-ha \
    --initial-cluster-state new --auto-compaction-retention 1 --logger zap --log-outputs stderr
  wait_for --pid "$(cat "$DIR/etcd.pid")" "$START_DEADLINE" rest etcd >/dev/null
}

# member_start I — (re)write member I's patroni.yml and start its Patroni as the
# user postgres. A postmaster still running is left for Patroni to adopt; when
# none runs, what a killed one left behind goes first: its orphaned children
# (KILL) and its postmaster.pid (else a reused pid can block the start).
member_start() {
  local n=${NAMES[$1]} d="$DIR/${NAMES[$1]}" f
  install -d -m 700 -o postgres -g postgres "$d"
  if ! pm_pid "$n" >/dev/null; then
    # shellcheck disable=SC2046
    stop_pids KILL $(in_datadir "$n") || true
    rm -f "$d/data/postmaster.pid"
  fi
  sed -e "s|@NAME@|$n|g; s|@MDIR@|$d|g; s|@PG_PORT@|${PG_PORTS[$1]}|g; s|@API_PORT@|${API_PORTS[$1]}|g" \
      -e "s|@ETCD_PORT@|$ETCD_PORT|g; s|@BIN_DIR@|$(bin_dir)|g; s|@TTL@|$TTL|g; s|@LOOP_WAIT@|$LOOP_WAIT|g" \
      -e "s|@RETRY_TIMEOUT@|$RETRY_TIMEOUT|g; s|@SU_PASSWORD@|$SU_PASSWORD|g" \
      -e "s|@REPL_PASSWORD@|$REPL_PASSWORD|g; s|@REWIND_PASSWORD@|$REWIND_PASSWORD|g" \
      "$TPL/patroni.yml" >"$d/patroni.yml.tmp"
  mv -f "$d/patroni.yml.tmp" "$d/patroni.yml"
  for f in patroni.yml patroni.log; do touch "$d/$f"; chown postgres:postgres "$d/$f"; chmod 600 "$d/$f"; done
  spawn "$d" "$d/patroni.pid" "$d/patroni.log" \
    setpriv --reuid=postgres --regid=postgres --init-groups --reset-env "$(command -v patroni)" "$d/patroni.yml"
}

haproxy_start() {
  local i servers=""
  for i in "${!NAMES[@]}"; do
    servers+="  server ${NAMES[$i]} 127.0.0.1:${PG_PORTS[$i]} check port ${API_PORTS[$i]}"$'\n'
  done
  awk -v s="${servers%$'\n'}" -v p="$HAPROXY_PORT" -v d="$DIR" \
    '{gsub(/@HAPROXY_PORT@/, p); gsub(/@DIR@/, d)} $0 == "@SERVERS@" {$0 = s} {print}' \
    "$TPL/haproxy.cfg" >"$DIR/haproxy.cfg"
  spawn "$DIR" "$DIR/haproxy.pid" "$DIR/haproxy.log" haproxy -db -f "$DIR/haproxy.cfg"
}

ferretdb_start() {
  local bin
  bin=$(ferretdb_bin) || { "$here/../services/ferretdb.sh" install && bin=$(ferretdb_bin); } || {
    fail_profile postgres-ha "$STATE/ferretdb-build.log" "no working ferretdb $FERRET_VERSION binary, and building one failed"; return 1; }
  mkdir -p "$DIR/ferretdb-state"
  FERRETDB_TELEMETRY=disable spawn "$DIR" "$DIR/ferretdb.pid" "$DIR/ferretdb.log" "$bin" --handler=postgresql \
    --postgresql-url="$FERRET_PG_URL" --listen-addr="127.0.0.1:$MONGO_PORT" --state-dir="$DIR/ferretdb-state" \
    --debug-addr=- --telemetry=disable --log-level=info
}

# roles PORT — on the leader: kh / kh_review, ferretdb / ferretdb and FerretDB's
# _id index trigger, as postgres.sh and ferretdb.sh make them on 5432 (idempotent)
roles() {
  psu "$1" postgres -f "$SQL/role-and-database.sql" -v role=kh -v password=kh -v options=CREATEDB -v db=kh_review &&
  psu "$1" postgres -f "$SQL/role-and-database.sql" -v role=ferretdb -v password=ferretdb -v options= -v db=ferretdb &&
  psu "$1" ferretdb -f "$SQL/ferretdb-id-gin.sql"
}

# via_haproxy — "false PORT" when 5440 reaches a primary (on PORT), as kh
via_haproxy() {
  PGPASSWORD=kh PGCONNECT_TIMEOUT=3 "$(pg_tool psql)" -X -h 127.0.0.1 -p "$HAPROXY_PORT" -U kh -d kh_review -tA \
    -c "SELECT pg_is_in_recovery()::text || ' ' || current_setting('port')" </dev/null 2>/dev/null 9>&- || true
}

# check — healthy? Prints "LEADER PG_PORT SYNC TIMELINE", or (and fails) the first problem found
check() {
  local view leader port out
  view=$(rest view) || { echo "$view"; return 1; }
  read -r leader port _ <<<"$view"
  out=$(via_haproxy)
  [[ $out == "false $port" ]] || { echo "127.0.0.1:$HAPROXY_PORT does not reach the leader $leader (127.0.0.1:$port) yet${out:+ (but $out)}"; return 1; }
  out=$(haproxy_up || true)
  [[ $out == "$leader" ]] || { echo "HAProxy sends connections to ${out:-no member} (${out:+not only to }the leader $leader)"; return 1; }
  tcp_open 127.0.0.1 "$MONGO_PORT" || { echo "FerretDB 127.0.0.1:$MONGO_PORT does not answer"; return 1; }
  echo "$view"
}

# settle DEADLINE CMD... — wait until CMD succeeds, printing its last output.
# Exit 1 at the deadline; 2 as soon as the Patroni of a member (its pid file's
# pid) has exited, printed too.
settle() {
  local end=$((SECONDS + $1)) n out; shift
  while :; do
    if out=$("$@"); then say "$out"; return 0; fi
    for n in "${NAMES[@]}"; do
      if pid_gone "$(cat "$DIR/$n/patroni.pid" 2>/dev/null || echo 0)"; then
        echo "the Patroni of $n exited (see $DIR/$n/patroni.log)"; return 2
      fi
    done
    if (( SECONDS >= end )); then say "$out"; return 1; fi
    sleep 0.5
  done
}

# on_leader — the roles on the leader (retried: the leader may change meanwhile)
on_leader() {
  local view
  view=$(rest view) || { echo "$view"; return 1; }
  roles "$(cut -d' ' -f2 <<<"$view")" >>"$DIR/admin.log" 2>&1 || { echo "could not create the roles and databases (see $DIR/admin.log)"; return 1; }
}

# front — the roles, then HAProxy and FerretDB if not running, and wait until
# all is healthy; prints "LEADER PG_PORT SYNC TIMELINE"
front() {
  settle "$START_DEADLINE" on_leader >/dev/null || { on_leader; return 1; }
  haproxy_pid >/dev/null || { log "postgres-ha: starting HAProxy on 127.0.0.1:$HAPROXY_PORT..." >&2; haproxy_start; }
  if ! ferretdb_pid >/dev/null; then
    log "postgres-ha: starting FerretDB on 127.0.0.1:$MONGO_PORT..." >&2
    ferretdb_start || { echo "FerretDB could not be started"; return 1; }
  fi
  settle "$START_DEADLINE" check
}

unrepairable() { warn "postgres-ha: $1; wiping $DIR and creating it fresh"; }

# recover — start the dead processes of an existing set-up and wait until it is
# healthy; says why and fails when that cannot work (up then creates it afresh)
recover() {
  local t0=$SECONDS i n dead=() out rc=0 leader port sync
  for n in "${NAMES[@]}"; do [[ -s $DIR/$n/patroni.yml ]] || { unrepairable "$DIR/$n/patroni.yml is missing"; return 1; }; done
  if ! etcd_pid >/dev/null; then
    [[ -d $DIR/etcd/member ]] || { unrepairable "etcd's data dir $DIR/etcd is gone"; return 1; }
    ! tcp_open 127.0.0.1 "$ETCD_PORT" || { unrepairable "127.0.0.1:$ETCD_PORT is taken by another process"; return 1; }
    log "postgres-ha: restarting etcd..."
    etcd_start || { unrepairable "etcd did not come back (see $DIR/etcd.log)"; return 1; }
  fi
  for i in "${!NAMES[@]}"; do
    n=${NAMES[$i]}
    patroni_pid "$n" >/dev/null && continue
    if tcp_open 127.0.0.1 "${API_PORTS[$i]}" || { tcp_open 127.0.0.1 "${PG_PORTS[$i]}" && ! pm_pid "$n" >/dev/null; }; then
      unrepairable "a port of $n (${PG_PORTS[$i]} / ${API_PORTS[$i]}) is taken by another process"; return 1
    fi
    dead+=("$n"); member_start "$i"
  done
  if (( ${#dead[@]} )); then log "postgres-ha: restarted the Patroni of ${dead[*]}, waiting for them to rejoin..."
  else log "postgres-ha: etcd and all members run, waiting for a healthy cluster..."; fi
  out=$(settle "$RECOVER_DEADLINE" rest view) || rc=$?
  if (( rc != 0 )); then unrepairable "the cluster is not healthy ${RECOVER_DEADLINE}s after restarting: $out"; return 1; fi
  out=$(front) || { unrepairable "$out"; return 1; }
  read -r leader port sync _ <<<"$out"
  log "postgres-ha: up again (leader $leader on $port, sync $sync) in $((SECONDS - t0))s"
}

# create — wipe $DIR, start etcd and the three members (one of them bootstraps
# the cluster, the others clone it), then the roles, HAProxy and FerretDB
create() {
  local t0=$SECONDS i out rc=0 leader port sync
  stop_all || { fail_profile postgres-ha "$LOGS" "could not stop the old processes"; return 1; }
  rm -rf "$DIR"
  ports_free postgres-ha "$ETCD_PORT" "$ETCD_PEER_PORT" "$HAPROXY_PORT" "${PG_PORTS[@]}" "${API_PORTS[@]}" "$MONGO_PORT" || return 1
  log "postgres-ha: creating etcd 127.0.0.1:$ETCD_PORT, members ${NAMES[*]} (${PG_PORTS[*]}), HAProxy $HAPROXY_PORT, FerretDB $MONGO_PORT (state: $DIR)..."
  mkdir -p "$DIR"
  etcd_start || { fail_profile postgres-ha "$DIR/etcd.log" "etcd did not start on 127.0.0.1:$ETCD_PORT"; return 1; }
  for i in "${!NAMES[@]}"; do member_start "$i"; done
  out=$(settle "$DEADLINE" rest view) || rc=$?
  if (( rc != 0 )); then fail_profile postgres-ha "$LOGS" "the cluster did not form within ${DEADLINE}s: $out"; return 1; fi
  out=$(front) || { fail_profile postgres-ha "$LOGS" "$out"; return 1; }
  read -r leader port sync _ <<<"$out"
  log "postgres-ha: up (leader $leader on $port, sync $sync, HAProxy 127.0.0.1:$HAPROXY_PORT, FerretDB $MONGO_PORT) in $((SECONDS - t0))s"
}

up() {
  local out
  if (( EUID != 0 )); then echo "[services] ERROR: postgres-ha: run as root (Patroni runs as the user postgres)" >&2; return 1; fi
  if ! installed; then
    fail_profile postgres-ha "$STATE/apt.log" "patroni, etcd-server, haproxy and postgresql are not all installed, and could not be installed"; return 1
  fi
  if [[ -d $DIR ]]; then
    if out=$(check); then log "postgres-ha: already up (leader ${out%% *})"; return 0; fi
    if recover; then return 0; fi
  fi
  create
}

down() {
  local any=0 p
  for p in etcd haproxy ferretdb; do if "${p}_pid" >/dev/null; then any=1; fi; done
  for p in "${NAMES[@]}"; do if patroni_pid "$p" >/dev/null || pm_pid "$p" >/dev/null; then any=1; fi; done
  if (( any == 0 )) && [[ ! -d $DIR ]]; then log "postgres-ha: already down"; return 0; fi
  log "postgres-ha: stopping..."
  stop_all || { warn "postgres-ha: some processes are still alive; keeping $DIR"; return 1; }
  rm -rf "$DIR"
  log "postgres-ha: stopped, $DIR removed"
}

status() {
  local out n=0 p leader port sync
  if out=$(check); then
    read -r leader port sync _ <<<"$out"
    echo "postgres-ha: up (leader $leader on $port, sync $sync, haproxy 127.0.0.1:$HAPROXY_PORT, ferretdb $MONGO_PORT)"; return 0
  fi
  [[ -d $DIR ]] || { echo "postgres-ha: down (not created)"; return 3; }
  for p in etcd haproxy ferretdb; do if "${p}_pid" >/dev/null; then n=$((n + 1)); fi; done
  for p in "${NAMES[@]}"; do if patroni_pid "$p" >/dev/null; then n=$((n + 1)); fi; done
  echo "postgres-ha: down ($out; $n/6 processes run)"; return 3
}

switchover() {
  local out leader port sync to i t0=$SECONDS
  out=$(check) || { echo "[services] ERROR: postgres-ha: not healthy, no switchover: $out" >&2; return 1; }
  read -r leader port sync _ <<<"$out"
  to=${1:-$sync}
  if [[ $to != "$sync" ]]; then
    echo "[services] ERROR: postgres-ha: only the sync standby ($sync) can take over (synchronous_mode), not '$to'" >&2; return 1
  fi
  for i in "${!NAMES[@]}"; do [[ ${NAMES[$i]} != "$to" ]] || port=${PG_PORTS[$i]}; done
  log "postgres-ha: switchover $leader -> $to..."
  out=$(patronictl -c "$DIR/$leader/patroni.yml" switchover --leader "$leader" --candidate "$to" --force 2>&1 9>&-) || true
  if ! grep -q 'Successfully switched over' <<<"$out"; then
    echo "[services] ERROR: postgres-ha: patronictl switchover failed: $(grep -v '^[+|]' <<<"$out" | tail -n 1)" >&2; return 1
  fi
  leads() { [[ $(via_haproxy) == "false $port" ]]; }
  new_leader() { out=$(check) && [[ ${out%% *} == "$to" ]] && echo "$out"; }
  settle "$RECOVER_DEADLINE" leads >/dev/null && log "postgres-ha: $to leads, 127.0.0.1:$HAPROXY_PORT reaches it"
  if ! out=$(settle "$RECOVER_DEADLINE" new_leader); then
    fail_profile postgres-ha "$LOGS" "not healthy with leader $to ${RECOVER_DEADLINE}s after the switchover: $(check)"; return 1
  fi
  log "postgres-ha: switched over to $to (sync $(cut -d' ' -f3 <<<"$out")) in $((SECONDS - t0))s"
}

case ${1:-} in
  packages)
    command -v patroni >/dev/null 2>&1 || echo patroni
    command -v etcd >/dev/null 2>&1 || echo etcd-server
    command -v haproxy >/dev/null 2>&1 || echo haproxy
    [[ -n $(bin_dir) ]] || echo postgresql ;;
  up)         mkdir -p "$STATE"; up ;;
  down)       down ;;
  status)     status ;;
  env)        printf 'export APP__DATABASE__URL=%q\nexport APP__MONGO__URL=%q\n' "$URL" "$MONGO_URL" ;;
  leader)     if out=$(rest leader); then echo "$out"; else echo "[services] ERROR: postgres-ha: $out" >&2; exit 1; fi ;;
  switchover) shift; switchover "$@" ;;
  *)          echo "usage: $0 packages|up|down|status|env|leader|switchover [NAME]" >&2; exit 2 ;;
esac
