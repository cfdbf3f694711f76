#!/usr/bin/env bash
# scripts/services/postgres.sh — PostgreSQL (Debian's cluster tools) on 127.0.0.1:5432,
# with the role kh and the database kh_review, and the service's role kh_app. Run by scripts/services.sh:
#   packages   the Debian packages to install first, one a line (none when it runs)
#   up | down | status | env
#   sql DB FILE [PSQL_ARGS...]   run FILE as the superuser in DB (for ferretdb.sh)
# With KH_DATABASE_URL set, `up` only checks that server answers and `down`
# leaves it alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/../lib/common.sh"

PORT=5432
DEADLINE=60
URL="postgres://kh:kh@127.0.0.1:$PORT/kh_review"
# The service's own role (scripts/sql/service-role.sql): owns nothing, lacks BYPASSRLS.
SERVICE_URL="postgres://kh_app:kh_app@127.0.0.1:$PORT/kh_review"
ADMIN_LOG="$STATE/postgres-admin.log"

# The server answers (or, without pg_isready, its port is open).
local_up() {
  local tool; tool=$(pg_tool pg_isready)
  if command -v "$tool" >/dev/null 2>&1; then "$tool" -q -t 3 -h 127.0.0.1 -p "$PORT" >/dev/null 2>&1
  else tcp_open 127.0.0.1 "$PORT"; fi
}
external_up() {
  local tool host port; tool=$(pg_tool pg_isready)
  if command -v "$tool" >/dev/null 2>&1; then "$tool" -q -t 3 -d "$KH_DATABASE_URL" >/dev/null 2>&1; return; fi
  read -r host port < <(url_hostport "$KH_DATABASE_URL" "$PORT")
  tcp_open "$host" "$port"
}

version() { # the newest installed server version, e.g. "15"
  local f v
  for f in /usr/lib/postgresql/*/bin/postgres; do
    [[ -x $f ]] || continue
    v=${f#/usr/lib/postgresql/}; printf '%s\n' "${v%%/*}"
  done | sort -V | tail -n 1
}
installed() { [[ -n $(version) ]] && command -v pg_ctlcluster >/dev/null 2>&1; }

# Prints "VERSION CLUSTER STATUS" of the cluster we manage: the one on port
# 5432 if any, else <newest version>/main, else nothing.
cluster() {
  local ver best="" v c p s
  ver=$(version)
  [[ -n $ver ]] || return 0
  while read -r v c p s _; do
    [[ $v == "$ver" ]] || continue
    if [[ $p == "$PORT" ]]; then best="$v $c $s"; break; fi
    [[ $c != main || -n $best ]] || best="$v $c $s"
  done < <(pg_lsclusters -h 2>/dev/null || true)
  say "$best"
}

sql() { # sql DB FILE [PSQL_ARGS...] — as the superuser, over the local socket
  local db=$1 file=$2; shift 2
  # (from /, which the postgres user can read, or psql warns)
  (cd / && as_root runuser -u postgres -- "$(pg_tool psql)" -X -q -v ON_ERROR_STOP=1 -p "$PORT" -d "$db" "$@") <"$file"
}

role_and_db() {
  sql postgres "$here/../sql/role-and-database.sql" \
    -v role=kh -v password=kh -v options=CREATEDB -v db=kh_review &&
    sql postgres "$here/../sql/service-role.sql" -v role=kh_app -v password=kh_app -v owner=kh &&
    sql kh_review "$here/../sql/statement-stats.sql" -v role=kh
}

# Test/CI tuning, NOT for production: no durability (fsync / synchronous_commit /
# full_page_writes off) and lots of connections (tests create a database each).
settings() {
  cat <<EOF
# written by kh-review scripts/services.sh — local/CI settings only, unsafe for production
listen_addresses = '127.0.0.1'
port = $PORT
max_connections = 500
fsync = off
synchronous_commit = off
full_page_writes = off
# Per-statement counts for make bench (benches/bench_support/statements.rs); the library
# loads at start, so a server started before this line was written needs a restart.
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.track_planning = on
EOF
}

up() {
  local t0=$SECONDS ver cl st conf logf action=start
  if [[ -n ${KH_DATABASE_URL:-} ]]; then
    if external_up; then log "postgres: external (KH_DATABASE_URL) answers"; return 0; fi
    fail_ext postgres KH_DATABASE_URL "$KH_DATABASE_URL" "$PORT"
    return 1
  fi
  read -r ver cl st < <(cluster; echo) || true
  if local_up; then
    # Already running. If it is the local Debian cluster, make sure the role
    # and database exist (cheap); otherwise leave it alone.
    if [[ ${st:-} == online* ]] && ! role_and_db >/dev/null 2>&1; then
      warn "postgres answers on $PORT but could not ensure role kh / db kh_review"
    fi
    log "postgres: already up"
    return 0
  fi
  if ! installed; then
    fail postgres "$STATE/apt.log" KH_DATABASE_URL "$URL" "PostgreSQL is not installed and could not be installed"
    return 1
  fi
  log "postgres: starting..."
  ver=$(version)
  read -r _ cl st < <(cluster; echo) || true
  if [[ -z ${cl:-} ]]; then
    cl=main st=down
    log "postgres: creating cluster $ver/$cl"
    if ! as_root pg_createcluster "$ver" "$cl" --port "$PORT" >>"$ADMIN_LOG" 2>&1; then
      fail postgres "$ADMIN_LOG" KH_DATABASE_URL "$URL" "pg_createcluster $ver $cl failed"
      return 1
    fi
  fi
  logf="/var/log/postgresql/postgresql-$ver-$cl.log"
  conf="/etc/postgresql/$ver/$cl/conf.d/90-kh-review.conf"
  if ! as_root mkdir -p "${conf%/*}" || ! settings | as_root tee "$conf" >/dev/null; then
    fail postgres "$ADMIN_LOG" KH_DATABASE_URL "$URL" "could not write $conf"
    return 1
  fi
  as_root install -d -o postgres -g postgres -m 2775 /var/run/postgresql || true
  [[ ${st:-} != online* ]] || action=restart   # running, but not on 127.0.0.1:5432
  if ! as_root pg_ctlcluster "$ver" "$cl" "$action" >>"$ADMIN_LOG" 2>&1 9>&-; then
    fail postgres "$logf (and $ADMIN_LOG)" KH_DATABASE_URL "$URL" "pg_ctlcluster $ver $cl $action failed"
    return 1
  fi
  if ! wait_for "$DEADLINE" local_up; then
    fail postgres "$logf" KH_DATABASE_URL "$URL" "did not answer on 127.0.0.1:$PORT within ${DEADLINE}s"
    return 1
  fi
  if ! role_and_db >>"$ADMIN_LOG" 2>&1; then
    fail postgres "$ADMIN_LOG" KH_DATABASE_URL "$URL" "could not create role kh / database kh_review"
    return 1
  fi
  log "postgres: up on 127.0.0.1:$PORT (PostgreSQL $ver, cluster $cl) in $((SECONDS - t0))s"
}

down() {
  if [[ -n ${KH_DATABASE_URL:-} ]]; then log "postgres: external (KH_DATABASE_URL), not stopping"; return 0; fi
  local any=0 v c p s
  if command -v pg_lsclusters >/dev/null 2>&1; then
    while read -r v c p s _; do
      [[ $p == "$PORT" && $s == online* ]] || continue
      any=1
      log "postgres: stopping cluster $v/$c..."
      as_root pg_ctlcluster "$v" "$c" stop -m fast >>"$ADMIN_LOG" 2>&1 \
        || { warn "pg_ctlcluster $v $c stop failed (see $ADMIN_LOG)"; return 1; }
    done < <(pg_lsclusters -h 2>/dev/null || true)
  fi
  if (( any )); then log "postgres: stopped"
  elif local_up; then warn "postgres answers on $PORT but is not a local Debian cluster; not stopping it"
  else log "postgres: already down"; fi
}

case ${1:-} in
  packages) [[ -n ${KH_DATABASE_URL:-} ]] || installed || local_up || printf '%s\n' postgresql postgresql-client ;;
  up)       mkdir -p "$STATE"; up ;;
  down)     down ;;
  status)   status_line postgres KH_DATABASE_URL "127.0.0.1:$PORT" external_up local_up ;;
  env)      printf 'export APP__DATABASE__URL=%q\n' "${KH_DATABASE_URL:-$URL}"
            printf 'export KH_SERVICE_DATABASE_URL=%q\n' "${KH_SERVICE_DATABASE_URL:-${KH_DATABASE_URL:-$SERVICE_URL}}" ;;
  sql)      shift; sql "$@" ;;
  *)        echo "usage: $0 packages|up|down|status|env|sql DB FILE [PSQL_ARGS...]" >&2; exit 2 ;;
esac
