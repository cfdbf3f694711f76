#!/usr/bin/env bash
# scripts/services.sh — local / CI backing services for kh-review.
#
#   scripts/services.sh [up]     install (if missing) and start PostgreSQL, Redis,
#                                RabbitMQ and FerretDB on 127.0.0.1; idempotent
#   scripts/services.sh down     stop them again (and the Redis profiles below)
#   scripts/services.sh status   one line per service (exit 3 if any is down),
#                                plus one per Redis profile that exists
#   scripts/services.sh env      print the APP__* export lines for the app/tests
#                                (use:  eval "$(scripts/services.sh env)")
#
# Redis topology profiles, for integration tests that kill nodes and expect a
# fast failover. Separate from (and never touching) the single Redis on 6379;
# plain `up` does not start them:
#   up redis-cluster    Redis Cluster on 127.0.0.1:7001-7006, 3 masters +
#                       3 replicas, cluster-node-timeout 1000 ms
#   up redis-sentinel   master 127.0.0.1:6391, replica 6392, sentinels on
#                       26391 26392 26393 watching "kh-master" (quorum 2,
#                       down-after 1000 ms, failover-timeout 2000 ms: a master can fail over again 4 s later)
#   down PROFILE        stop that profile only and delete its state dir
#   status PROFILE      its line only (exit 3 unless healthy)
#   env PROFILE         adds APP__REDIS__MODE=cluster + APP__REDIS__NODES, or
#                       APP__REDIS__MODE=sentinel + APP__REDIS__SENTINELS +
#                       APP__REDIS__MASTER_NAME=kh-master
# Each process runs from $STATE/<profile>/<port>/: redis.conf (sentinel.conf
# for sentinels), nodes.conf (cluster), redis.log, and redis.pid holding the
# live redis-server / redis-sentinel pid — what tests `kill -9`. Afterwards
# they call `up PROFILE` again: it restarts only the dead processes from their
# (rewritten) configs — a failed-over old master comes back as a replica, the
# original master is not forced back — and waits (max 60 s) until the topology
# is healthy; a no-op well under a second when it already is. State it cannot
# repair (e.g. a half-made cluster) is wiped and created fresh.
#
# Meant for Debian/Ubuntu dev boxes and CI containers WITHOUT systemd; run as
# root (or with sudo available). Everything listens on 127.0.0.1 only.
#
# Pointing at existing servers instead: set any of
#   KH_DATABASE_URL  (postgres://user:pass@host:5432/db)
#   KH_REDIS_URL     (redis://host:6379)
#   KH_AMQP_URL      (amqp://user:pass@host:5672/%2f)
#   KH_MONGO_URL     (mongodb://host:27017)
# and `up` will not install/start that piece, only check that it answers; `env`
# prints the given URL, `down` leaves it alone.
#
# State (logs, pid files): ${KH_STATE_DIR:-/var/tmp/kh-review}. FerretDB keeps its
# data in the local PostgreSQL (database ferretdb), so it needs that cluster.
set -euo pipefail

STATE="${KH_STATE_DIR:-/var/tmp/kh-review}"
FERRETDB_MODULE="github.com/FerretDB/FerretDB"
FERRETDB_VERSION="v1.24.2"

PG_PORT=5432
REDIS_PORT=6379
AMQP_PORT=5672
MONGO_PORT=27017

PG_DEADLINE=60
REDIS_DEADLINE=60
RABBIT_DEADLINE=120
FERRET_DEADLINE=60

DEFAULT_DATABASE_URL="postgres://kh:kh@127.0.0.1:${PG_PORT}/kh_review"
DEFAULT_REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"
DEFAULT_AMQP_URL="amqp://guest:guest@127.0.0.1:${AMQP_PORT}/%2f"
DEFAULT_MONGO_URL="mongodb://127.0.0.1:${MONGO_PORT}"

# FerretDB's own storage: database, role and password in the local PostgreSQL.
FERRET_PG_DB=ferretdb
FERRET_PG_USER=ferretdb
FERRET_PG_URL="postgres://${FERRET_PG_USER}:${FERRET_PG_USER}@127.0.0.1:${PG_PORT}/${FERRET_PG_DB}"

RABBIT_LIB_BIN=/usr/lib/rabbitmq/bin
RABBIT_HOME=/var/lib/rabbitmq

# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

log()  { printf '[services] %s (%ss)\n' "$*" "$SECONDS"; }
warn() { printf '[services] WARNING: %s\n' "$*" >&2; }

# fail PIECE LOGFILE ENVVAR EXAMPLE_URL MESSAGE
fail() {
  printf '[services] ERROR: %s: %s\n' "$1" "$5" >&2
  printf '[services]        read the log: %s\n' "$2" >&2
  printf '[services]        or use an existing server instead: export %s=%s\n' "$3" "$4" >&2
}

# fail_ext PIECE ENVVAR DEFAULT_PORT — the user-supplied server does not answer
fail_ext() {
  local hp
  hp=$(url_hostport "${!2}" "$3")
  printf '[services] ERROR: %s: %s is set, but nothing answers at %s:%s\n' "$1" "$2" "${hp% *}" "${hp#* }" >&2
  printf '[services]        start that server, or unset %s to let this script run a local one\n' "$2" >&2
}

if [[ ${EUID} -eq 0 ]]; then ROOT_CMD=(); else ROOT_CMD=(sudo); fi
as_root() {
  if [[ ${EUID} -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
    echo "[services] ERROR: need root (or sudo) to run: $*" >&2
    return 1
  fi
  "${ROOT_CMD[@]}" "$@"
}

# TCP connect check, 2 s timeout. tcp_open HOST PORT
tcp_open() {
  local host=$1 port=$2
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" >/dev/null 2>&1
}

# Prints "HOST PORT" of the first host in a URL like
# scheme://user:pass@host:port/path?query (also [v6]:port, host1,host2).
url_hostport() {
  local url=$1 default_port=$2 rest host port
  rest=${url#*://}
  rest=${rest%%/*}
  rest=${rest%%\?*}
  rest=${rest##*@}
  rest=${rest%%,*}
  if [[ $rest == \[* ]]; then
    host=${rest%%]*}; host=${host#[}
    port=${rest#*]}; port=${port#:}
  else
    host=${rest%%:*}
    port=${rest#"$host"}; port=${port#:}
  fi
  [[ -n $host ]] || host=127.0.0.1
  [[ -n $port ]] || port=$default_port
  printf '%s %s\n' "$host" "$port"
}

# Wait until "$@" succeeds; deadline in seconds as $1. Optional liveness pid in
# WAIT_PID: if that process dies we give up early.
wait_for() {
  local deadline=$1; shift
  local end=$((SECONDS + deadline))
  while (( SECONDS < end )); do
    if "$@"; then return 0; fi
    if [[ -n ${WAIT_PID:-} ]] && pid_gone "$WAIT_PID"; then
      return 2
    fi
    sleep 0.5
  done
  "$@"
}

# pid_alive PIDFILE [NAME] — the pid in PIDFILE is a live (non-zombie)
# process, whose command line contains NAME if given (guards against pid reuse).
pid_alive() {
  local pid state
  [[ -s $1 ]] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r /proc/$pid/stat ]]; then
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
    [[ $state != Z ]] || return 1
  fi
  if [[ -n ${2:-} && -r /proc/$pid/cmdline ]]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2" || return 1
  fi
  return 0
}

pid_gone() { # pid_gone PID — no such process (or only a zombie left)
  kill -0 "$1" 2>/dev/null || return 0
  [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

ensure_state_dir() {
  mkdir -p "$STATE"
}

# ----------------------------------------------------------------------------
# readiness probes
# ----------------------------------------------------------------------------

pg_ready() { # pg_ready HOST PORT
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h "$1" -p "$2" -t 3 >/dev/null 2>&1
  else
    tcp_open "$1" "$2"
  fi
}

redis_ready() { # redis_ready HOST PORT
  if command -v redis-cli >/dev/null 2>&1; then
    [[ $(timeout 3 redis-cli -h "$1" -p "$2" ping 2>/dev/null) == PONG ]]
  else
    tcp_open "$1" "$2"
  fi
}

pg_local_up()     { pg_ready 127.0.0.1 "$PG_PORT"; }
redis_local_up()  { redis_ready 127.0.0.1 "$REDIS_PORT"; }
rabbit_local_up() { tcp_open 127.0.0.1 "$AMQP_PORT"; }
mongo_local_up()  { tcp_open 127.0.0.1 "$MONGO_PORT"; }

# external (user-supplied) endpoints
ext_up() { # ext_up PIECE URL DEFAULT_PORT
  local hp host port
  hp=$(url_hostport "$2" "$3"); host=${hp% *}; port=${hp#* }
  case $1 in
    postgres)
      if command -v pg_isready >/dev/null 2>&1; then
        pg_isready -q -d "$2" -t 3 >/dev/null 2>&1
      else
        tcp_open "$host" "$port"
      fi ;;
    redis)
      if command -v redis-cli >/dev/null 2>&1; then
        [[ $(timeout 3 redis-cli -u "$2" ping 2>/dev/null) == PONG ]]
      else
        tcp_open "$host" "$port"
      fi ;;
    *) tcp_open "$host" "$port" ;;
  esac
}

# ----------------------------------------------------------------------------
# installation (apt for the three Debian packages, Go for FerretDB)
# ----------------------------------------------------------------------------

APT_UPDATED=0
POLICY_RC=/usr/sbin/policy-rc.d
POLICY_RC_CREATED=0

cleanup() {
  if [[ $POLICY_RC_CREATED == 1 ]]; then
    as_root rm -f "$POLICY_RC" || true
    POLICY_RC_CREATED=0
  fi
}
trap cleanup EXIT

pg_version() { # newest installed server version, e.g. "15"
  local f v
  for f in /usr/lib/postgresql/*/bin/postgres; do
    [[ -x $f ]] || continue
    v=${f#/usr/lib/postgresql/}; printf '%s\n' "${v%%/*}"
  done | sort -V | tail -n 1
}

pg_installed()     { [[ -n $(pg_version) ]] && command -v pg_ctlcluster >/dev/null 2>&1; }
redis_installed()  { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; }
rabbit_installed() { [[ -x $RABBIT_LIB_BIN/rabbitmq-server && -x /usr/sbin/rabbitmqctl ]]; }

# apt_install PKG... (one `apt-get update` per run at most)
apt_install() {
  local aptlog="$STATE/apt.log" lockopt=(-o DPkg::Lock::Timeout=600)
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[services] ERROR: apt-get not found; cannot install: $*" >&2
    return 1
  fi
  # No systemd / no init here: stop package postinst scripts from trying to
  # start the services themselves (we start them below). Only create the
  # policy file if there is none, and remove it again afterwards.
  if [[ ! -e $POLICY_RC ]]; then
    as_root sh -c 'printf "#!/bin/sh\n# temporary, from kh-review scripts/services.sh\nexit 101\n" > "$1" && chmod 755 "$1"' sh "$POLICY_RC"
    POLICY_RC_CREATED=1
  fi
  local rc=0
  if [[ $APT_UPDATED == 0 ]]; then
    log "apt-get update (log: $aptlog)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${lockopt[@]}" update -q >>"$aptlog" 2>&1 || rc=$?
    APT_UPDATED=1
  fi
  if [[ $rc == 0 ]]; then
    log "apt-get install $* (log: $aptlog)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${lockopt[@]}" install -y -q \
      --no-install-recommends "$@" >>"$aptlog" 2>&1 || rc=$?
  fi
  cleanup
  return "$rc"
}

gobin_dir() {
  local d
  d=$(GOTOOLCHAIN=local go env GOBIN 2>/dev/null || true)
  if [[ -z $d ]]; then
    d="$(GOTOOLCHAIN=local go env GOPATH 2>/dev/null | cut -d: -f1)/bin"
  fi
  printf '%s\n' "$d"
}

ferret_ok() { # ferret_ok BINARY — is it a working FerretDB of our version?
  [[ -x $1 ]] || return 1
  "$1" --version 2>/dev/null | grep -qx "version: ${FERRETDB_VERSION}"
}

# Prints the path of a working ferretdb binary, or fails.
ferret_find() {
  local c cands=()
  if c=$(command -v ferretdb 2>/dev/null); then cands+=("$c"); fi
  if command -v go >/dev/null 2>&1; then cands+=("$(gobin_dir)/ferretdb"); fi
  [[ -n ${GOBIN:-} ]] && cands+=("$GOBIN/ferretdb")
  cands+=("${HOME:-/root}/go/bin/ferretdb")
  for c in "${cands[@]}"; do
    if ferret_ok "$c"; then printf '%s\n' "$c"; return 0; fi
  done
  return 1
}

# Build FerretDB from the module source.
# NOTE: a plain `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2`
# produces a binary that panics at startup ("Invalid build/version/version.txt
# file content"), because that generated file is not part of the published
# module. So: download the module, copy it, write version.txt, `go build`.
ferret_install() {
  local buildlog="$STATE/ferretdb-build.log" dir src bindir
  if ! command -v go >/dev/null 2>&1; then
    echo "go toolchain not found (FerretDB ${FERRETDB_VERSION} needs Go >= 1.24)" >>"$buildlog"
    return 1
  fi
  bindir=$(gobin_dir)
  log "ferretdb: building ${FERRETDB_VERSION} with $(GOTOOLCHAIN=local go version | awk '{print $3}') into $bindir (log: $buildlog)"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/kh-ferretdb-build.XXXXXX")
  # (explicit && chain: `set -e` is not in force inside `f || ...` callers)
  (
    cd "$dir" &&
    export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=mod &&
    src=$(go mod download -json "${FERRETDB_MODULE}@${FERRETDB_VERSION}" \
          | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1) &&
    { [[ -n $src && -d $src ]] || { echo "go mod download did not report a source dir"; false; }; } &&
    cp -R "$src" "$dir/src" &&
    chmod -R u+w "$dir/src" &&
    echo "${FERRETDB_VERSION}" >"$dir/src/build/version/version.txt" &&
    cd "$dir/src" &&
    mkdir -p "$bindir" &&
    go build -o "$bindir/ferretdb.tmp" ./cmd/ferretdb &&
    mv -f "$bindir/ferretdb.tmp" "$bindir/ferretdb"
  ) >>"$buildlog" 2>&1
  local rc=$?
  rm -rf "$dir"
  return "$rc"
}

# ----------------------------------------------------------------------------
# PostgreSQL
# ----------------------------------------------------------------------------

# Prints "VERSION CLUSTER STATUS" of the cluster we manage: the one on port
# 5432 if any, else <newest version>/main, else nothing.
pg_cluster() {
  local ver best=""
  ver=$(pg_version)
  [[ -n $ver ]] || return 0
  while read -r v c p s _; do
    [[ $v == "$ver" ]] || continue
    if [[ $p == "$PG_PORT" ]]; then best="$v $c $s"; break; fi
    [[ $c == main && -z $best ]] && best="$v $c $s"
  done < <(pg_lsclusters -h 2>/dev/null || true)
  [[ -n $best ]] && printf '%s\n' "$best"
  return 0
}

pg_admin_sql() { # run SQL as the postgres superuser over the local socket
  pg_admin_sql_in postgres "$@"
}

pg_admin_sql_in() { # pg_admin_sql_in DATABASE PSQL_ARGS... — same, in DATABASE
  local db=$1; shift
  (cd / && as_root runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" -d "$db" "$@")
}

pg_ensure_role_db() {
  pg_admin_sql -c "DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'kh') THEN
        CREATE ROLE kh LOGIN PASSWORD 'kh' CREATEDB;
      ELSE
        ALTER ROLE kh LOGIN PASSWORD 'kh' CREATEDB;
      END IF;
    END \$\$;" || return 1
  if [[ -z $(pg_admin_sql -tA -c "SELECT 1 FROM pg_database WHERE datname = 'kh_review'") ]]; then
    pg_admin_sql -c "CREATE DATABASE kh_review OWNER kh" || return 1
  fi
}

up_postgres() {
  local t0=$SECONDS logf="/var/log/postgresql/" ver cl st conf
  if [[ -n ${KH_DATABASE_URL:-} ]]; then
    if ext_up postgres "$KH_DATABASE_URL" 5432; then log "postgres: external (KH_DATABASE_URL) answers"; return 0; fi
    fail_ext postgres KH_DATABASE_URL 5432
    return 1
  fi
  read -r ver cl st < <(pg_cluster; echo) || true
  [[ -n ${ver:-} ]] && logf="/var/log/postgresql/postgresql-$ver-$cl.log"
  if pg_local_up; then
    # Already running. If it is the local Debian cluster, make sure the role
    # and database exist (cheap); otherwise leave it alone.
    if [[ ${st:-} == online* ]] && ! pg_ensure_role_db >/dev/null 2>&1; then
      warn "postgres answers on $PG_PORT but could not ensure role kh / db kh_review"
    fi
    log "postgres: already up"
    return 0
  fi
  if ! pg_installed; then
    fail postgres "$STATE/apt.log" KH_DATABASE_URL "$DEFAULT_DATABASE_URL" "PostgreSQL is not installed and could not be installed"
    return 1
  fi
  log "postgres: starting..."
  ver=$(pg_version)
  read -r _ cl st < <(pg_cluster; echo) || true
  if [[ -z ${cl:-} ]]; then
    cl=main
    log "postgres: creating cluster $ver/$cl"
    if ! as_root pg_createcluster "$ver" "$cl" --port "$PG_PORT" >>"$STATE/postgres-admin.log" 2>&1; then
      fail postgres "$STATE/postgres-admin.log" KH_DATABASE_URL "$DEFAULT_DATABASE_URL" "pg_createcluster $ver $cl failed"
      return 1
    fi
    st=down
  fi
  logf="/var/log/postgresql/postgresql-$ver-$cl.log"
  # Test/CI tuning, NOT for production: no durability (fsync / synchronous_commit
  # / full_page_writes off) and lots of connections (tests create a DB each).
  conf="/etc/postgresql/$ver/$cl/conf.d/90-kh-review.conf"
  as_root mkdir -p "$(dirname "$conf")"
  as_root sh -c "cat > '$conf'" <<EOF || { fail postgres "$STATE/postgres-admin.log" KH_DATABASE_URL "$DEFAULT_DATABASE_URL" "could not write $conf"; return 1; }
# written by kh-review scripts/services.sh — local/CI settings only, unsafe for production
listen_addresses = '127.0.0.1'
port = $PG_PORT
max_connections = 500
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  as_root install -d -o postgres -g postgres -m 2775 /var/run/postgresql
  local action=start
  [[ ${st:-} == online* ]] && action=restart   # running, but not on 127.0.0.1:5432
  if ! as_root pg_ctlcluster "$ver" "$cl" "$action" >>"$STATE/postgres-admin.log" 2>&1 9>&-; then
    fail postgres "$logf (and $STATE/postgres-admin.log)" KH_DATABASE_URL "$DEFAULT_DATABASE_URL" "pg_ctlcluster $ver $cl $action failed"
    return 1
  fi
  if ! WAIT_PID="" wait_for "$PG_DEADLINE" pg_local_up; then
    fail postgres "$logf" KH_DATABASE_URL "$DEFAULT_DATABASE_URL" "did not answer on 127.0.0.1:$PG_PORT within ${PG_DEADLINE}s"
    return 1
  fi
  if ! pg_ensure_role_db >>"$STATE/postgres-admin.log" 2>&1; then
    fail postgres "$STATE/postgres-admin.log" KH_DATABASE_URL "$DEFAULT_DATABASE_URL" "could not create role kh / database kh_review"
    return 1
  fi
  log "postgres: up on 127.0.0.1:$PG_PORT (PostgreSQL $ver, cluster $cl) in $((SECONDS - t0))s"
}

down_postgres() {
  if [[ -n ${KH_DATABASE_URL:-} ]]; then log "postgres: external (KH_DATABASE_URL), not stopping"; return 0; fi
  local any=0 v c p s
  if command -v pg_lsclusters >/dev/null 2>&1; then
    while read -r v c p s _; do
      [[ $p == "$PG_PORT" && $s == online* ]] || continue
      any=1
      log "postgres: stopping cluster $v/$c..."
      as_root pg_ctlcluster "$v" "$c" stop -m fast >>"$STATE/postgres-admin.log" 2>&1 \
        || { warn "pg_ctlcluster $v $c stop failed (see $STATE/postgres-admin.log)"; return 1; }
    done < <(pg_lsclusters -h 2>/dev/null || true)
  fi
  if [[ $any == 0 ]]; then
    if pg_local_up; then warn "postgres answers on $PG_PORT but is not a local Debian cluster; not stopping it"
    else log "postgres: already down"; fi
  else
    log "postgres: stopped"
  fi
}

# ----------------------------------------------------------------------------
# Redis
# ----------------------------------------------------------------------------

up_redis() {
  local t0=$SECONDS logf="$STATE/redis.log"
  if [[ -n ${KH_REDIS_URL:-} ]]; then
    if ext_up redis "$KH_REDIS_URL" 6379; then log "redis: external (KH_REDIS_URL) answers"; return 0; fi
    fail_ext redis KH_REDIS_URL 6379
    return 1
  fi
  # Anything already answering PONG on 6379 (e.g. the Debian package's own
  # instance) is simply used.
  if redis_local_up; then log "redis: already up"; return 0; fi
  if ! redis_installed; then
    fail redis "$STATE/apt.log" KH_REDIS_URL "$DEFAULT_REDIS_URL" "redis-server is not installed and could not be installed"
    return 1
  fi
  log "redis: starting..."
  mkdir -p "$STATE/redis"
  # No persistence at all: tests only.
  if ! redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --protected-mode yes \
        --daemonize yes --save '' --appendonly no \
        --dir "$STATE/redis" --logfile "$logf" --pidfile "$STATE/redis.pid" \
        >>"$logf" 2>&1 9>&-; then
    fail redis "$logf" KH_REDIS_URL "$DEFAULT_REDIS_URL" "redis-server failed to start"
    return 1
  fi
  if ! WAIT_PID="" wait_for "$REDIS_DEADLINE" redis_local_up; then
    fail redis "$logf" KH_REDIS_URL "$DEFAULT_REDIS_URL" "did not answer PONG on 127.0.0.1:$REDIS_PORT within ${REDIS_DEADLINE}s"
    return 1
  fi
  log "redis: up on 127.0.0.1:$REDIS_PORT in $((SECONDS - t0))s"
}

down_redis() {
  if [[ -n ${KH_REDIS_URL:-} ]]; then log "redis: external (KH_REDIS_URL), not stopping"; return 0; fi
  if ! redis_local_up; then log "redis: already down"; return 0; fi
  log "redis: stopping..."
  timeout 10 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  if WAIT_PID="" wait_for 15 bash -c "! timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$REDIS_PORT' 2>/dev/null"; then
    rm -f "$STATE/redis.pid"
    log "redis: stopped"
  else
    warn "redis still answers on $REDIS_PORT"; return 1
  fi
}

# ----------------------------------------------------------------------------
# RabbitMQ
# ----------------------------------------------------------------------------

# Environment for the broker and for rabbitmqctl. The wrapper in /usr/sbin
# switches to the rabbitmq user with `su`, which keeps these variables.
RMQ_ENV=()
rabbit_env() {
  RMQ_ENV=(RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$AMQP_PORT")
  # Keep epmd and Erlang distribution on loopback too — but only when this
  # host's name resolves to a loopback address; otherwise rabbitmqctl (which
  # reaches rabbit@<hostname> via that name) could not connect any more.
  local h ip
  h=$(hostname -s 2>/dev/null || hostname)
  ip=$(getent ahostsv4 "$h" 2>/dev/null | awk 'NR==1{print $1}')
  if [[ $ip == 127.* ]]; then
    RMQ_ENV+=(ERL_EPMD_ADDRESS=127.0.0.1
              "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}")
  fi
}

rmqctl() { as_root env "${RMQ_ENV[@]}" /usr/sbin/rabbitmqctl "$@" 9>&-; }

up_rabbitmq() {
  local t0=$SECONDS logf="$STATE/rabbitmq.log" pidf="$STATE/rabbitmq.pid"
  if [[ -n ${KH_AMQP_URL:-} ]]; then
    if ext_up rabbitmq "$KH_AMQP_URL" 5672; then log "rabbitmq: external (KH_AMQP_URL) answers"; return 0; fi
    fail_ext rabbitmq KH_AMQP_URL 5672
    return 1
  fi
  # The AMQP listener only opens at the very end of the broker's boot, so an
  # open port means it is up; this keeps a repeated `up` fast.
  if rabbit_local_up; then log "rabbitmq: already up"; return 0; fi
  if ! rabbit_installed; then
    fail rabbitmq "$STATE/apt.log" KH_AMQP_URL "$DEFAULT_AMQP_URL" "rabbitmq-server is not installed and could not be installed"
    return 1
  fi
  rabbit_env
  if pid_alive "$pidf" rabbitmq-server; then
    log "rabbitmq: already starting (pid $(cat "$pidf")), waiting..."
  else
    log "rabbitmq: starting..."
    as_root install -d -o rabbitmq -g rabbitmq /var/log/rabbitmq "$RABBIT_HOME"
    # Foreground broker in its own session, in the background (no systemd).
    # Its own log is /var/log/rabbitmq/rabbit@<host>.log; stdout goes to $logf.
    ( cd "$RABBIT_HOME" && exec setsid "${ROOT_CMD[@]}" runuser -u rabbitmq -- \
        env HOME="$RABBIT_HOME" "${RMQ_ENV[@]}" "$RABBIT_LIB_BIN/rabbitmq-server" \
        </dev/null >>"$logf" 2>&1 9>&- ) &
    echo $! >"$pidf"
  fi
  local rc=0
  WAIT_PID=$(cat "$pidf") wait_for "$RABBIT_DEADLINE" rabbit_local_up || rc=$?
  if [[ $rc == 0 ]]; then
    # second half of the readiness check: the broker reports a finished boot
    local left=$((RABBIT_DEADLINE - (SECONDS - t0))); (( left > 10 )) || left=10
    rmqctl await_startup --timeout "$left" >>"$logf" 2>&1 || rc=1
  fi
  if [[ $rc != 0 ]]; then
    local why="did not answer on 127.0.0.1:$AMQP_PORT within ${RABBIT_DEADLINE}s"
    [[ $rc == 2 ]] && why="the broker process exited during startup"
    fail rabbitmq "$logf and /var/log/rabbitmq/" KH_AMQP_URL "$DEFAULT_AMQP_URL" "$why"
    return 1
  fi
  log "rabbitmq: up on 127.0.0.1:$AMQP_PORT in $((SECONDS - t0))s"
}

down_rabbitmq() {
  if [[ -n ${KH_AMQP_URL:-} ]]; then log "rabbitmq: external (KH_AMQP_URL), not stopping"; return 0; fi
  local pidf="$STATE/rabbitmq.pid"
  if ! rabbit_local_up && ! pid_alive "$pidf" rabbitmq-server; then log "rabbitmq: already down"; rm -f "$pidf"; return 0; fi
  if ! rabbit_installed; then warn "something answers on $AMQP_PORT but rabbitmqctl is not installed; not stopping it"; return 1; fi
  rabbit_env
  log "rabbitmq: stopping..."
  # `shutdown` waits for the OS process to exit; fall back to `stop`.
  rmqctl shutdown >>"$STATE/rabbitmq.log" 2>&1 || rmqctl stop >>"$STATE/rabbitmq.log" 2>&1 || true
  if pid_alive "$pidf" rabbitmq-server; then
    WAIT_PID="" wait_for 20 pid_gone "$(cat "$pidf")" || {
      warn "rabbitmq runner (pid $(cat "$pidf")) still alive after shutdown; sending TERM"
      kill "$(cat "$pidf")" 2>/dev/null || true
    }
  fi
  if rabbit_local_up; then warn "rabbitmq still answers on $AMQP_PORT"; return 1; fi
  rm -f "$pidf"
  log "rabbitmq: stopped"
}

# ----------------------------------------------------------------------------
# FerretDB (PostgreSQL backend, in the local cluster)
# ----------------------------------------------------------------------------
# FerretDB keeps each collection in a table of the database ferretdb (one
# schema per MongoDB database) and filters on _id with JSON containment,
# `_jsonb->'_id' @> $1`, which its own btree index on _id cannot serve. An
# event trigger, installed below as the superuser, gives every new collection
# table a GIN index on _jsonb->'_id' that can; the service knows nothing of it.

# Role, database, event trigger and the GIN index on existing collection
# tables; idempotent, cheap when all is in place. Needs the local cluster.
ferret_pg_ensure() {
  pg_admin_sql -c "DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$FERRET_PG_USER') THEN
        CREATE ROLE $FERRET_PG_USER LOGIN PASSWORD '$FERRET_PG_USER';
      ELSE
        ALTER ROLE $FERRET_PG_USER LOGIN PASSWORD '$FERRET_PG_USER';
      END IF;
    END \$\$;" || return 1
  if [[ -z $(pg_admin_sql -tA -c "SELECT 1 FROM pg_database WHERE datname = '$FERRET_PG_DB'") ]]; then
    pg_admin_sql -c "CREATE DATABASE $FERRET_PG_DB OWNER $FERRET_PG_USER" || return 1
  fi
  # kh_ferretdb is no FerretDB database (it has no _ferretdb_database_metadata
  # table), so FerretDB does not list it. The trigger's CREATE INDEX has the tag
  # CREATE INDEX, so it does not fire the trigger again; an error in it is only
  # a WARNING (in the PostgreSQL log), never a failed collection create.
  pg_admin_sql_in "$FERRET_PG_DB" <<'SQL' || return 1
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS kh_ferretdb;
GRANT USAGE ON SCHEMA kh_ferretdb TO PUBLIC;

-- GIN index on _jsonb->'_id' for one FerretDB collection table, if it has none
CREATE OR REPLACE FUNCTION kh_ferretdb.id_gin_index(tbl regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
BEGIN
  IF NOT EXISTS (
      SELECT FROM pg_class c
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = '_jsonb' AND NOT a.attisdropped
      WHERE c.oid = tbl AND c.relkind = 'r' AND a.atttypid = 'jsonb'::regtype
        AND c.relname NOT LIKE '\_ferretdb\_%'   -- FerretDB's metadata table
        AND EXISTS (SELECT FROM pg_class m WHERE m.relnamespace = c.relnamespace
                      AND m.relname = '_ferretdb_database_metadata')) THEN
    RETURN;
  END IF;
  IF EXISTS (
      SELECT FROM pg_index i
      WHERE i.indrelid = tbl
        AND pg_get_indexdef(i.indexrelid) LIKE '%USING gin (((_jsonb -> ''\_id''::text)) jsonb\_path\_ops)%') THEN
    RETURN;
  END IF;
  EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> %L) jsonb_path_ops) WITH (fastupdate = off)', tbl, '_id');
END $f$;

CREATE OR REPLACE FUNCTION kh_ferretdb.on_create_table() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
DECLARE r record;
BEGIN
  FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands()
           WHERE command_tag = 'CREATE TABLE' AND object_type = 'table' LOOP
    BEGIN
      PERFORM kh_ferretdb.id_gin_index(r.objid::regclass);
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'kh_ferretdb: no GIN index on _id for %: %', r.objid::regclass, SQLERRM;
    END;
  END LOOP;
END $f$;

DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_event_trigger
                 WHERE evtname = 'kh_ferretdb_id_gin' AND evtevent = 'ddl_command_end'
                   AND evtfoid = 'kh_ferretdb.on_create_table()'::regprocedure
                   AND evttags = ARRAY['CREATE TABLE']) THEN
    DROP EVENT TRIGGER IF EXISTS kh_ferretdb_id_gin;
    CREATE EVENT TRIGGER kh_ferretdb_id_gin ON ddl_command_end
      WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION kh_ferretdb.on_create_table();
  END IF;
END $$;
ALTER EVENT TRIGGER kh_ferretdb_id_gin ENABLE;

-- collection tables made while the trigger was missing
SELECT count(kh_ferretdb.id_gin_index(c.oid)) AS checked
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname NOT IN ('information_schema', 'kh_ferretdb')
  AND n.nspname NOT LIKE 'pg\_%' \gset
SQL
  # FerretDB logs in over TCP with the password: check that works too.
  PGCONNECT_TIMEOUT=5 psql -X -q -v ON_ERROR_STOP=1 -d "$FERRET_PG_URL" -tA -c 'SELECT 1' >/dev/null
}

# ferret_flags PID — the flags a running ferretdb was started with, one a line
ferret_flags() { tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -- '^--' || true; }

# Did this script start the running FerretDB (pid file) with another storage,
# e.g. --handler=sqlite (before the PostgreSQL backend)?
ferret_stale() {
  local pidf="$STATE/ferretdb.pid" flags
  pid_alive "$pidf" ferretdb || return 1
  flags=$(ferret_flags "$(cat "$pidf")")
  [[ -n $flags ]] || return 1
  ! grep -qx -- "--handler=postgresql" <<<"$flags" || ! grep -qxF -- "--postgresql-url=$FERRET_PG_URL" <<<"$flags"
}

ferret_stop() { # ferret_stop PID
  kill "$1" 2>/dev/null || true
  if ! WAIT_PID="" wait_for 15 pid_gone "$1"; then
    warn "ferretdb (pid $1) ignored TERM; sending KILL"
    kill -9 "$1" 2>/dev/null || true
    WAIT_PID="" wait_for 5 pid_gone "$1" || return 1
  fi
}

up_ferretdb() {
  local t0=$SECONDS logf="$STATE/ferretdb.log" pidf="$STATE/ferretdb.pid" bin
  if [[ -n ${KH_MONGO_URL:-} ]]; then
    if ext_up ferretdb "$KH_MONGO_URL" 27017; then log "ferretdb: external (KH_MONGO_URL) answers"; return 0; fi
    fail_ext ferretdb KH_MONGO_URL 27017
    return 1
  fi
  if ferret_stale; then
    log "ferretdb: running (pid $(cat "$pidf")) with $(ferret_flags "$(cat "$pidf")" | grep -m1 -- '^--handler=' || echo 'other flags'); restarting it on PostgreSQL..."
    if ! ferret_stop "$(cat "$pidf")"; then
      fail ferretdb "$logf" KH_MONGO_URL "$DEFAULT_MONGO_URL" "could not stop the old ferretdb (pid $(cat "$pidf"))"
      return 1
    fi
    rm -f "$pidf"
  fi
  if mongo_local_up && ! pid_alive "$pidf" ferretdb; then
    log "ferretdb: already up (not started by this script, left as it is)"; return 0
  fi
  # Data left by the SQLite backend (older versions of this script): unused.
  if [[ -d $STATE/ferretdb ]] && ! mongo_local_up; then
    log "ferretdb: removing old SQLite data $STATE/ferretdb"
    rm -rf "$STATE/ferretdb"
  fi
  if ! ferret_pg_ensure >>"$STATE/postgres-admin.log" 2>&1; then
    local why="could not set up role/database $FERRET_PG_DB (and its event trigger) in the local PostgreSQL on 127.0.0.1:$PG_PORT, where FerretDB keeps its data"
    [[ -n ${KH_DATABASE_URL:-} ]] && why+="; with KH_DATABASE_URL set this script does not run that PostgreSQL: set KH_MONGO_URL too"
    fail ferretdb "$STATE/postgres-admin.log" KH_MONGO_URL "$DEFAULT_MONGO_URL" "$why"
    return 1
  fi
  if mongo_local_up; then log "ferretdb: already up"; return 0; fi
  if ! pid_alive "$pidf" ferretdb; then
    if ! bin=$(ferret_find); then
      fail ferretdb "$STATE/ferretdb-build.log" KH_MONGO_URL "$DEFAULT_MONGO_URL" "no working ferretdb ${FERRETDB_VERSION} binary and the build failed"
      return 1
    fi
    log "ferretdb: starting $bin (PostgreSQL backend, database $FERRET_PG_DB)..."
    mkdir -p "$STATE/ferretdb-state"
    # --debug-addr=- disables the metrics/pprof HTTP listener (default 127.0.0.1:8088)
    # setsid: own session, survives this script; bash has no job control here,
    # so setsid execs in place and $! is FerretDB's pid.
    FERRETDB_TELEMETRY=disable nohup setsid "$bin" \
      --handler=postgresql \
      --postgresql-url="$FERRET_PG_URL" \
      --listen-addr="127.0.0.1:$MONGO_PORT" \
      --state-dir="$STATE/ferretdb-state" \
      --debug-addr=- \
      --telemetry=disable \
      --log-level=info \
      </dev/null >>"$logf" 2>&1 9>&- &
    echo $! >"$pidf"
  else
    log "ferretdb: already starting (pid $(cat "$pidf")), waiting..."
  fi
  local rc=0
  WAIT_PID=$(cat "$pidf") wait_for "$FERRET_DEADLINE" mongo_local_up || rc=$?
  if [[ $rc != 0 ]]; then
    local why="did not answer on 127.0.0.1:$MONGO_PORT within ${FERRET_DEADLINE}s"
    [[ $rc == 2 ]] && why="the ferretdb process exited during startup"
    fail ferretdb "$logf" KH_MONGO_URL "$DEFAULT_MONGO_URL" "$why"
    return 1
  fi
  log "ferretdb: up on 127.0.0.1:$MONGO_PORT in $((SECONDS - t0))s"
}

down_ferretdb() {
  if [[ -n ${KH_MONGO_URL:-} ]]; then log "ferretdb: external (KH_MONGO_URL), not stopping"; return 0; fi
  local pidf="$STATE/ferretdb.pid" pid
  if pid_alive "$pidf" ferretdb; then
    pid=$(cat "$pidf")
    log "ferretdb: stopping (pid $pid)..."
    ferret_stop "$pid" || { warn "ferretdb (pid $pid) still alive"; return 1; }
    rm -f "$pidf"
    log "ferretdb: stopped"
  else
    rm -f "$pidf"
    if mongo_local_up; then warn "something answers on $MONGO_PORT but was not started by this script; not stopping it"
    else log "ferretdb: already down"; fi
  fi
}

# ----------------------------------------------------------------------------
# Redis topology profiles: redis-cluster, redis-sentinel
# ----------------------------------------------------------------------------
# Separate from the single Redis on 6379 (never touched here). Every process
# runs from $STATE/<profile>/<port>/ with its config, redis.pid and redis.log,
# in the foreground of its own session (like FerretDB). Tests kill nodes on
# purpose; `up <profile>` restarts only the dead ones from their config (which
# Redis / Sentinel rewrite on failover) and waits for a healthy topology.

PROFILES=(redis-cluster redis-sentinel)
PROFILE_DEADLINE=60          # fresh profile: start + form + healthy
PROFILE_RECOVER_DEADLINE=30  # restart dead nodes; after that: wipe, start fresh
PROFILE_START_DEADLINE=15    # a started process answers PING

CLUSTER_DIR="$STATE/redis-cluster"
CLUSTER_PORTS=(7001 7002 7003 7004 7005 7006)
CLUSTER_SLOTS=16384

SENT_DIR="$STATE/redis-sentinel"
SENT_DATA_PORTS=(6391 6392)   # initial master, initial replica
SENT_PORTS=(26391 26392 26393)
SENT_NAME=kh-master
SENT_QUORUM=2

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

# joins "$@" with commas
join_comma() { local IFS=,; printf '%s\n' "$*"; }

# Command line of one of our processes: "redis-server /…/7001/redis.conf"
# at first, then Redis' process title "redis-server 127.0.0.1:7001 [cluster]".
rnode_pat() { printf 'redis.*[:/]%s' "$1"; }

# rnode_pid PDIR PORT — prints the pid of our live process for PORT: from its
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
  [[ -d $1/$2 ]] && echo "$pid" >"$pidf"
  printf '%s\n' "$pid"
}

# rnode_start PDIR PORT CONF_FILE CMD... — start CMD CONF in its own session
# (background, survives this script); stdout/stderr go to redis.log too (config
# errors are printed before the log file is opened). Redis writes the same pid
# into redis.pid itself (pidfile in the config).
declare -A RNODE_STARTED=()  # port -> pid started by this run
rnode_start() {
  local d="$1/$2" port=$2 conf=$3; shift 3
  : >>"$d/redis.log"
  # setsid execs in place (no job control here), so $! is the server's pid
  nohup setsid "$@" "$d/$conf" </dev/null >>"$d/redis.log" 2>&1 9>&- &
  RNODE_STARTED[$port]=$!
  echo $! >"$d/redis.pid"
}

# rnodes_wait DEADLINE PDIR PORT... — wait until all answer PING. Returns 2 and
# sets RNODE_DEAD if one of them exited, 1 on timeout.
RNODE_DEAD=""
rnodes_wait() {
  local deadline=$1 pdir=$2 end p ok; shift 2
  end=$((SECONDS + deadline)); RNODE_DEAD=""
  while :; do
    ok=1
    for p in "$@"; do
      rping "$p" && continue
      ok=0
      # (the pid we started, not the pid file: Redis rewrites that at startup)
      if [[ -n ${RNODE_STARTED[$p]:-} ]]; then
        pid_gone "${RNODE_STARTED[$p]}" || continue
      elif pid_alive "$pdir/$p/redis.pid"; then continue; fi
      RNODE_DEAD=$p; return 2
    done
    [[ $ok == 1 ]] && return 0
    (( SECONDS < end )) || return 1
    sleep 0.2
  done
}

all_gone() { local q; for q in "$@"; do pid_gone "$q" || return 1; done; } # all_gone PID...

# rnodes_stop PDIR PORT... — TERM our processes on these ports (in this
# order), wait for them to exit, KILL the stubborn ones.
rnodes_stop() {
  local pdir=$1 p pid pids=() left; shift
  for p in "$@"; do
    if pid=$(rnode_pid "$pdir" "$p"); then
      kill "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  (( ${#pids[@]} )) || return 0
  if ! WAIT_PID="" wait_for 15 all_gone "${pids[@]}"; then
    left=$(for q in "${pids[@]}"; do pid_gone "$q" || printf '%s ' "$q"; done)
    warn "pid(s) ${left% } ignored TERM; sending KILL"
    # shellcheck disable=SC2086
    kill -9 $left 2>/dev/null || true
    WAIT_PID="" wait_for 5 all_gone "${pids[@]}" || return 1
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

# node_conf DIR PORT NOTE — the lines every process of a profile starts with:
# loopback only, in the foreground, pid file, log and working dir in DIR
node_conf() {
  cat <<EOF
# written by kh-review scripts/services.sh ($3) — tests only
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

# ---- redis-cluster ---------------------------------------------------------

cluster_conf() { # cluster_conf PORT — redis.conf of one cluster node
  node_conf "$CLUSTER_DIR/$1" "$1" "profile redis-cluster"
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
cluster_view() {
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

# Healthy cluster? All 6 answer with cluster_state:ok, all slots covered, 6
# known nodes, the same topology seen from every node (nobody flagged failing),
# exactly 3 masters holding slots, each with an online replica. Sets
# CLUSTER_WHY (first problem found) and CLUSTER_MASTERS (ports).
CLUSTER_WHY=""; CLUSTER_MASTERS=""
cluster_check() {
  local p info view first="" m nm=0 ns=0 rep
  CLUSTER_WHY=""; CLUSTER_MASTERS=""
  for p in "${CLUSTER_PORTS[@]}"; do
    info=$(rcli "$p" cluster info || true)
    if [[ $info != *cluster_state:* ]]; then CLUSTER_WHY="127.0.0.1:$p does not answer"; return 1; fi
    if ! grep -qx 'cluster_state:ok' <<<"$info"; then CLUSTER_WHY="127.0.0.1:$p has $(grep -m1 '^cluster_state:' <<<"$info")"; return 1; fi
    if ! grep -qx "cluster_slots_ok:$CLUSTER_SLOTS" <<<"$info" || ! grep -qx "cluster_slots_assigned:$CLUSTER_SLOTS" <<<"$info"; then
      CLUSTER_WHY="127.0.0.1:$p: not all $CLUSTER_SLOTS slots served ($(grep -E '^cluster_slots_(assigned|ok):' <<<"$info" | paste -sd' '))"; return 1
    fi
    if ! grep -qx "cluster_known_nodes:${#CLUSTER_PORTS[@]}" <<<"$info"; then CLUSTER_WHY="127.0.0.1:$p has $(grep -m1 '^cluster_known_nodes:' <<<"$info")"; return 1; fi
  done
  for p in "${CLUSTER_PORTS[@]}"; do
    view=$(rcli "$p" cluster nodes | cluster_view || true)
    if grep -q '^BAD ' <<<"$view"; then CLUSTER_WHY="127.0.0.1:$p sees $(grep -m1 '^BAD ' <<<"$view" | cut -d' ' -f2-)"; return 1; fi
    if [[ -z $first ]]; then first=$view
    elif [[ $view != "$first" ]]; then CLUSTER_WHY="the nodes do not agree on the topology yet"; return 1; fi
  done
  nm=$(awk '$2 == "M" && $3 != "-"' <<<"$first" | wc -l)
  ns=$(awk '$2 == "S"' <<<"$first" | wc -l)
  if (( nm != 3 || ns != 3 )) || grep -q ' M -$' <<<"$first"; then
    CLUSTER_WHY="want 3 masters with slots + 3 replicas, have: $(paste -sd';' <<<"$first")"; return 1
  fi
  while read -r m; do
    if ! awk -v m="$m" '$2 == "S" && $3 == m {f = 1} END {exit !f}' <<<"$first"; then
      CLUSTER_WHY="master 127.0.0.1:$m has no replica"; return 1
    fi
    rep=$(rcli "$m" info replication || true)
    if ! grep -qx 'role:master' <<<"$rep" || ! grep -q '^slave[0-9]*:.*state=online' <<<"$rep"; then
      CLUSTER_WHY="master 127.0.0.1:$m has no online replica yet"; return 1
    fi
    CLUSTER_MASTERS+="${CLUSTER_MASTERS:+ }$m"
  done < <(awk '$2 == "M" {print $1}' <<<"$first")
}

cluster_logs() { printf '%s/<port>/redis.log' "$CLUSTER_DIR"; }

# Restart dead nodes of an existing cluster and wait until it is healthy.
# Fails (with RECOVER_WHY) when the state cannot be repaired that way.
RECOVER_WHY=""
cluster_recover() {
  local p dead=() info known assigned max_assigned=0 singles=0 rc
  RECOVER_WHY=""
  for p in "${CLUSTER_PORTS[@]}"; do
    rnode_pid "$CLUSTER_DIR" "$p" >/dev/null && continue
    if [[ ! -s $CLUSTER_DIR/$p/redis.conf ]]; then RECOVER_WHY="$CLUSTER_DIR/$p/redis.conf is missing"; return 1; fi
    if tcp_open 127.0.0.1 "$p"; then RECOVER_WHY="127.0.0.1:$p is taken by another process"; return 1; fi
    dead+=("$p")
  done
  if (( ${#dead[@]} )); then
    log "redis-cluster: restarting dead node(s) ${dead[*]} from their nodes.conf..."
    for p in "${dead[@]}"; do rnode_start "$CLUSTER_DIR" "$p" redis.conf redis-server; done
  else
    log "redis-cluster: all 6 processes run, waiting for a healthy cluster..."
  fi
  rc=0; rnodes_wait "$PROFILE_START_DEADLINE" "$CLUSTER_DIR" "${CLUSTER_PORTS[@]}" || rc=$?
  if [[ $rc == 2 ]]; then RECOVER_WHY="node 127.0.0.1:$RNODE_DEAD exited at startup (see $CLUSTER_DIR/$RNODE_DEAD/redis.log)"; return 1; fi
  if [[ $rc != 0 ]]; then RECOVER_WHY="not all nodes answer PING after ${PROFILE_START_DEADLINE}s"; return 1; fi
  # A cluster that was never completely formed cannot be repaired: every node
  # must know all 6, and together they must hold all slots.
  for p in "${CLUSTER_PORTS[@]}"; do
    info=$(rcli "$p" cluster info || true)
    known=$(sed -n 's/^cluster_known_nodes://p' <<<"$info")
    assigned=$(sed -n 's/^cluster_slots_assigned://p' <<<"$info")
    [[ $known =~ ^[0-9]+$ && $assigned =~ ^[0-9]+$ ]] || { RECOVER_WHY="127.0.0.1:$p gives no CLUSTER INFO"; return 1; }
    [[ $known == 1 ]] && singles=$((singles + 1))
    (( assigned > max_assigned )) && max_assigned=$assigned
    if [[ $known != "${#CLUSTER_PORTS[@]}" && $known != 1 ]]; then RECOVER_WHY="127.0.0.1:$p knows $known nodes, not 6 (half-made cluster)"; return 1; fi
  done
  if (( singles == ${#CLUSTER_PORTS[@]} )); then RECOVER_WHY="the nodes run but no cluster was ever formed"; return 1; fi
  if (( singles > 0 )); then RECOVER_WHY="$singles node(s) lost their cluster config (nodes.conf)"; return 1; fi
  if (( max_assigned < CLUSTER_SLOTS )); then RECOVER_WHY="only $max_assigned of $CLUSTER_SLOTS slots are assigned (half-made cluster)"; return 1; fi
  if ! WAIT_PID="" wait_for "$PROFILE_RECOVER_DEADLINE" cluster_check; then
    RECOVER_WHY="not healthy ${PROFILE_RECOVER_DEADLINE}s after restarting: $CLUSTER_WHY"; return 1
  fi
}

# Wipe $CLUSTER_DIR, start 6 empty nodes, form the cluster, wait until healthy.
cluster_create() {
  local t0=$SECONDS p addrs=() rc=0
  rnodes_stop "$CLUSTER_DIR" "${CLUSTER_PORTS[@]}" || { fail_profile redis-cluster "$(cluster_logs)" "could not stop the old cluster nodes"; return 1; }
  rm -rf "$CLUSTER_DIR"
  ports_free redis-cluster "${CLUSTER_PORTS[@]}" || return 1
  log "redis-cluster: creating on 127.0.0.1:${CLUSTER_PORTS[0]}-${CLUSTER_PORTS[-1]} (state: $CLUSTER_DIR)..."
  for p in "${CLUSTER_PORTS[@]}"; do
    mkdir -p "$CLUSTER_DIR/$p"
    cluster_conf "$p" >"$CLUSTER_DIR/$p/redis.conf"
    rnode_start "$CLUSTER_DIR" "$p" redis.conf redis-server
    addrs+=("127.0.0.1:$p")
  done
  rnodes_wait "$PROFILE_START_DEADLINE" "$CLUSTER_DIR" "${CLUSTER_PORTS[@]}" || rc=$?
  if [[ $rc != 0 ]]; then
    local why="the nodes did not answer PING within ${PROFILE_START_DEADLINE}s"
    [[ $rc == 2 ]] && why="node 127.0.0.1:$RNODE_DEAD exited at startup"
    fail_profile redis-cluster "$(cluster_logs)" "$why"; return 1
  fi
  if ! timeout "$PROFILE_DEADLINE" redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
        </dev/null >>"$CLUSTER_DIR/create.log" 2>&1 9>&-; then
    fail_profile redis-cluster "$CLUSTER_DIR/create.log and $(cluster_logs)" "redis-cli --cluster create failed"; return 1
  fi
  if ! WAIT_PID="" wait_for "$PROFILE_DEADLINE" cluster_check; then
    fail_profile redis-cluster "$(cluster_logs) and $CLUSTER_DIR/create.log" "not healthy within ${PROFILE_DEADLINE}s: $CLUSTER_WHY"; return 1
  fi
  log "redis-cluster: up on 127.0.0.1:${CLUSTER_PORTS[0]}-${CLUSTER_PORTS[-1]} (masters: $CLUSTER_MASTERS) in $((SECONDS - t0))s"
}

up_redis_cluster() {
  local t0=$SECONDS
  if ! redis_installed; then
    fail_profile redis-cluster "$STATE/apt.log" "redis-server / redis-cli are not installed and could not be installed"; return 1
  fi
  if [[ -d $CLUSTER_DIR ]]; then
    if cluster_check; then
      for p in "${CLUSTER_PORTS[@]}"; do rnode_pid "$CLUSTER_DIR" "$p" >/dev/null || true; done
      log "redis-cluster: already up (masters: $CLUSTER_MASTERS)"; return 0
    fi
    if cluster_recover; then
      log "redis-cluster: up again (masters: $CLUSTER_MASTERS) in $((SECONDS - t0))s"; return 0
    fi
    warn "redis-cluster: $RECOVER_WHY; wiping $CLUSTER_DIR and creating it fresh"
  fi
  cluster_create
}

down_redis_cluster() {
  local any=0 p
  for p in "${CLUSTER_PORTS[@]}"; do rnode_pid "$CLUSTER_DIR" "$p" >/dev/null && any=1; done
  if [[ $any == 0 && ! -d $CLUSTER_DIR ]]; then log "redis-cluster: already down"; return 0; fi
  log "redis-cluster: stopping..."
  if ! rnodes_stop "$CLUSTER_DIR" "${CLUSTER_PORTS[@]}"; then warn "redis-cluster: some nodes are still alive; keeping $CLUSTER_DIR"; return 1; fi
  rm -rf "$CLUSTER_DIR"
  log "redis-cluster: stopped, $CLUSTER_DIR removed"
}

status_redis_cluster() { # prints one line; fails unless healthy
  local p n=0
  if cluster_check; then
    echo "redis-cluster: up (${CLUSTER_PORTS[0]}-${CLUSTER_PORTS[-1]}, 3 masters: $CLUSTER_MASTERS)"; return 0
  fi
  for p in "${CLUSTER_PORTS[@]}"; do rping "$p" && n=$((n + 1)); done
  if [[ $n == 0 ]]; then echo "redis-cluster: down"
  else echo "redis-cluster: degraded ($n/${#CLUSTER_PORTS[@]} nodes answer; $CLUSTER_WHY)"; fi
  return 1
}

# ---- redis-sentinel --------------------------------------------------------

SENTINEL_CMD=()
sentinel_cmd() { # sets SENTINEL_CMD (Debian's redis-sentinel, else redis-server --sentinel)
  if command -v redis-sentinel >/dev/null 2>&1; then SENTINEL_CMD=(redis-sentinel)
  elif command -v redis-server >/dev/null 2>&1; then
    warn "redis-sentinel: no redis-sentinel binary (package redis-sentinel); using redis-server --sentinel"
    SENTINEL_CMD=(redis-server --sentinel)
  else return 1; fi
}

sent_data_conf() { # sent_data_conf PORT [MASTER_PORT] — redis.conf of a data node
  # (the sentinels rewrite it, CONFIG REWRITE, when they change its role)
  node_conf "$SENT_DIR/$1" "$1" "profile redis-sentinel"
  data_conf
  [[ -z ${2:-} ]] || echo "replicaof 127.0.0.1 $2"
}

sent_conf() { # sent_conf PORT — sentinel.conf (rewritten by the sentinel itself)
  node_conf "$SENT_DIR/$1" "$1" "profile redis-sentinel"
  cat <<EOF
sentinel monitor $SENT_NAME 127.0.0.1 ${SENT_DATA_PORTS[0]} $SENT_QUORUM
sentinel down-after-milliseconds $SENT_NAME 1000
sentinel failover-timeout $SENT_NAME 2000
sentinel parallel-syncs $SENT_NAME 1
EOF
}

sent_logs() { printf '%s/<port>/redis.log' "$SENT_DIR"; }

replica_linked() { rcli "$1" info replication | grep -qx 'master_link_status:up'; } # replica_linked PORT

# the other data port
sent_other() { if [[ $1 == "${SENT_DATA_PORTS[0]}" ]]; then echo "${SENT_DATA_PORTS[1]}"; else echo "${SENT_DATA_PORTS[0]}"; fi; }

# key/value reply lines on stdin ("k\nv\nk\nv...") -> "k=v" lines
kv_pairs() { awk 'NR % 2 == 1 {k = $0; next} {print k "=" $0}'; }

# Healthy? Both data nodes answer; all 3 sentinels name the same master (one
# of ours), whose ROLE is master with the other node as online replica (and
# that one's link is up); each sentinel sees the master without s_down /
# o_down / failover flags, the replica as a plain "slave", and 2 other
# sentinels. Sets SENT_WHY, SENT_MASTER, SENT_REPLICA.
SENT_WHY=""; SENT_MASTER=""; SENT_REPLICA=""
sentinel_check() {
  local p s a addr="" m r rep kv
  SENT_WHY=""; SENT_MASTER=""; SENT_REPLICA=""; SENT_STRAY=""; SENT_AGREED=""
  for p in "${SENT_DATA_PORTS[@]}"; do
    rping "$p" || { SENT_WHY="127.0.0.1:$p does not answer"; return 1; }
  done
  for s in "${SENT_PORTS[@]}"; do
    a=$(rcli "$s" sentinel get-master-addr-by-name "$SENT_NAME" | paste -sd: || true)
    [[ $a =~ ^[0-9.]+:[0-9]+$ ]] || { SENT_WHY="sentinel 127.0.0.1:$s does not answer for $SENT_NAME"; return 1; }
    if [[ -z $addr ]]; then addr=$a
    elif [[ $a != "$addr" ]]; then SENT_WHY="the sentinels disagree on the master ($addr vs $a on $s)"; return 1; fi
  done
  m=${addr##*:}
  if [[ $addr != "127.0.0.1:$m" || ( $m != "${SENT_DATA_PORTS[0]}" && $m != "${SENT_DATA_PORTS[1]}" ) ]]; then
    SENT_WHY="the sentinels name $addr as master, not one of ours"; return 1
  fi
  r=$(sent_other "$m"); SENT_AGREED=$m
  [[ $(rcli "$m" role | head -n 1 || true) == master ]] || { SENT_WHY="the sentinels' master 127.0.0.1:$m is not (yet) in role master"; return 1; }
  rep=$(rcli "$m" info replication || true)
  if ! grep -qx 'connected_slaves:1' <<<"$rep" || ! grep -q "^slave0:ip=127.0.0.1,port=$r,state=online," <<<"$rep"; then
    SENT_WHY="master 127.0.0.1:$m has no online replica 127.0.0.1:$r yet"; SENT_STRAY=$r; return 1
  fi
  rep=$(rcli "$r" info replication || true)
  if ! grep -qx "master_port:$m" <<<"$rep" || ! grep -qx 'master_link_status:up' <<<"$rep"; then
    SENT_WHY="replica 127.0.0.1:$r has no link up to 127.0.0.1:$m yet"; return 1
  fi
  for s in "${SENT_PORTS[@]}"; do
    kv=$(rcli "$s" sentinel master "$SENT_NAME" | kv_pairs || true)
    grep -qx 'flags=master' <<<"$kv" || { SENT_WHY="sentinel $s: master $(grep -m1 '^flags=' <<<"$kv")"; return 1; }
    grep -qx 'num-other-sentinels=2' <<<"$kv" || { SENT_WHY="sentinel $s: $(grep -m1 '^num-other-sentinels=' <<<"$kv" || echo 'num-other-sentinels=?') (want 2)"; return 1; }
    kv=$(rcli "$s" sentinel replicas "$SENT_NAME" | kv_pairs | awk -F= '$1 == "port" {p = $2} $1 == "flags" {print p " " $2}' || true)
    grep -qx "$r slave" <<<"$kv" || { SENT_WHY="sentinel $s does not see 127.0.0.1:$r as a healthy replica yet"; return 1; }
  done
  SENT_MASTER=$m; SENT_REPLICA=$r
}

# After a failover whose old master stayed up (SENTINEL FAILOVER, or a
# node that came back on its own), the old master keeps acting as a master
# until the sentinels turn it into a replica, which they only do ~10 s later
# (they first wait 4 publish periods "for newer configs"). When the failover
# is over (all 3 sentinels name the same master, none has it in failover),
# do what they would do: REPLICAOF their master + CONFIG REWRITE. Never the
# other way round. sentinel_ready — sentinel_check plus that, for wait_for.
SENT_STRAY=""; SENT_AGREED=""; SENT_NUDGED=""
sentinel_ready() {
  sentinel_check && return 0
  local s m=$SENT_AGREED r=$SENT_STRAY
  [[ -n $r && -n $m && $SENT_NUDGED != "$r" ]] || return 1
  [[ $(rcli "$r" role | head -n 1 || true) == master ]] || return 1
  for s in "${SENT_PORTS[@]}"; do
    rcli "$s" sentinel master "$SENT_NAME" | kv_pairs | grep -qx 'flags=master' || return 1
  done
  log "redis-sentinel: 127.0.0.1:$r still acts as master after the failover to $m; making it a replica of $m (as the sentinels would, ~10 s later)"
  rcli "$r" replicaof 127.0.0.1 "$m" >/dev/null || true
  rcli "$r" config rewrite >/dev/null || true
  SENT_NUDGED=$r
  return 1
}

# Port of the current master by the sentinels (majority of those answering,
# else of their config files); empty if unknown.
sentinel_current_master() {
  local s
  {
    for s in "${SENT_PORTS[@]}"; do rcli "$s" sentinel get-master-addr-by-name "$SENT_NAME" | sed -n 2p || true; done
  } | grep -E '^[0-9]+$' | sort | uniq -c | sort -rn | awk '$1 >= 2 {print $2; exit}' || true
}
sentinel_conf_master() {
  cat "$SENT_DIR"/*/sentinel.conf 2>/dev/null | awk -v n="$SENT_NAME" '$1 == "sentinel" && $2 == "monitor" && $3 == n {print $5}' \
    | sort | uniq -c | sort -rn | awk '{print $2; exit}' || true
}

# conf_set_replicaof CONF [MASTER_PORT] — (un)set replicaof in a data node's config
conf_set_replicaof() {
  sed -i -e '/^[[:space:]]*\(replicaof\|slaveof\)[[:space:]]/d' "$1"
  [[ -z ${2:-} ]] || echo "replicaof 127.0.0.1 $2" >>"$1"
}

sentinel_recover() {
  local p conf deadd=() deads=() cur rc
  RECOVER_WHY=""
  for p in "${SENT_DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do
    rnode_pid "$SENT_DIR" "$p" >/dev/null && continue
    conf=redis.conf
    if [[ " ${SENT_PORTS[*]} " == *" $p "* ]]; then conf=sentinel.conf; fi
    if [[ ! -s $SENT_DIR/$p/$conf ]]; then RECOVER_WHY="$SENT_DIR/$p/$conf is missing"; return 1; fi
    if tcp_open 127.0.0.1 "$p"; then RECOVER_WHY="127.0.0.1:$p is taken by another process"; return 1; fi
    if [[ $conf == redis.conf ]]; then deadd+=("$p"); else deads+=("$p"); fi
  done
  if (( ${#deadd[@]} )); then
    # Follow the sentinels' view: a dead node that is not their master comes
    # back as replica of their master (not as a second master); the original
    # master is never forced back.
    cur=$(sentinel_current_master)
    [[ -n $cur ]] || cur=$(sentinel_conf_master)
    for p in "${deadd[@]}"; do
      if [[ -n $cur ]]; then
        if [[ $p == "$cur" ]]; then conf_set_replicaof "$SENT_DIR/$p/redis.conf"
        else conf_set_replicaof "$SENT_DIR/$p/redis.conf" "$cur"; fi
      fi
    done
    log "redis-sentinel: restarting dead data node(s) ${deadd[*]} (sentinels' master: ${cur:-unknown})..."
    for p in "${deadd[@]}"; do rnode_start "$SENT_DIR" "$p" redis.conf redis-server; done
    rc=0; rnodes_wait "$PROFILE_START_DEADLINE" "$SENT_DIR" "${deadd[@]}" || rc=$?
    if [[ $rc != 0 ]]; then RECOVER_WHY="data node(s) ${deadd[*]} did not come back (see $(sent_logs))"; return 1; fi
  fi
  if (( ${#deads[@]} )); then
    log "redis-sentinel: restarting dead sentinel(s) ${deads[*]} from their sentinel.conf..."
    for p in "${deads[@]}"; do rnode_start "$SENT_DIR" "$p" sentinel.conf "${SENTINEL_CMD[@]}"; done
    rc=0; rnodes_wait "$PROFILE_START_DEADLINE" "$SENT_DIR" "${deads[@]}" || rc=$?
    if [[ $rc != 0 ]]; then RECOVER_WHY="sentinel(s) ${deads[*]} did not come back (see $(sent_logs))"; return 1; fi
  fi
  if (( ${#deadd[@]} + ${#deads[@]} == 0 )); then
    log "redis-sentinel: all 5 processes run, waiting for a healthy setup..."
  fi
  # every sentinel must monitor kh-master at one of our two data nodes
  for p in "${SENT_PORTS[@]}"; do
    cur=$(rcli "$p" sentinel get-master-addr-by-name "$SENT_NAME" | paste -sd: || true)
    if [[ $cur != "127.0.0.1:${SENT_DATA_PORTS[0]}" && $cur != "127.0.0.1:${SENT_DATA_PORTS[1]}" ]]; then
      RECOVER_WHY="sentinel 127.0.0.1:$p monitors ${cur:-nothing} as $SENT_NAME"; return 1
    fi
  done
  if ! WAIT_PID="" wait_for "$PROFILE_RECOVER_DEADLINE" sentinel_ready; then
    RECOVER_WHY="not healthy ${PROFILE_RECOVER_DEADLINE}s after restarting: $SENT_WHY"; return 1
  fi
}

sentinel_create() {
  local t0=$SECONDS p m=${SENT_DATA_PORTS[0]} r=${SENT_DATA_PORTS[1]} rc=0
  rnodes_stop "$SENT_DIR" "${SENT_PORTS[@]}" "${SENT_DATA_PORTS[@]}" || { fail_profile redis-sentinel "$(sent_logs)" "could not stop the old processes"; return 1; }
  rm -rf "$SENT_DIR"
  ports_free redis-sentinel "${SENT_DATA_PORTS[@]}" "${SENT_PORTS[@]}" || return 1
  log "redis-sentinel: creating master 127.0.0.1:$m, replica $r, sentinels ${SENT_PORTS[*]} (state: $SENT_DIR)..."
  mkdir -p "$SENT_DIR/$m" "$SENT_DIR/$r"
  sent_data_conf "$m" >"$SENT_DIR/$m/redis.conf"
  sent_data_conf "$r" "$m" >"$SENT_DIR/$r/redis.conf"
  rnode_start "$SENT_DIR" "$m" redis.conf redis-server
  rnode_start "$SENT_DIR" "$r" redis.conf redis-server
  rnodes_wait "$PROFILE_START_DEADLINE" "$SENT_DIR" "$m" "$r" || rc=$?
  if [[ $rc != 0 ]]; then fail_profile redis-sentinel "$(sent_logs)" "data node(s) did not start (${RNODE_DEAD:+127.0.0.1:$RNODE_DEAD exited}${RNODE_DEAD:-no PONG within ${PROFILE_START_DEADLINE}s})"; return 1; fi
  # replica linked first, so the sentinels find it in their first INFO
  if ! WAIT_PID="" wait_for "$PROFILE_DEADLINE" replica_linked "$r"; then
    fail_profile redis-sentinel "$SENT_DIR/$r/redis.log" "replica 127.0.0.1:$r did not sync from 127.0.0.1:$m"; return 1
  fi
  for p in "${SENT_PORTS[@]}"; do
    mkdir -p "$SENT_DIR/$p"
    sent_conf "$p" >"$SENT_DIR/$p/sentinel.conf"
    rnode_start "$SENT_DIR" "$p" sentinel.conf "${SENTINEL_CMD[@]}"
  done
  rc=0; rnodes_wait "$PROFILE_START_DEADLINE" "$SENT_DIR" "${SENT_PORTS[@]}" || rc=$?
  if [[ $rc != 0 ]]; then fail_profile redis-sentinel "$(sent_logs)" "sentinel(s) did not start (${RNODE_DEAD:+127.0.0.1:$RNODE_DEAD exited}${RNODE_DEAD:-no PONG within ${PROFILE_START_DEADLINE}s})"; return 1; fi
  if ! WAIT_PID="" wait_for "$PROFILE_DEADLINE" sentinel_ready; then
    fail_profile redis-sentinel "$(sent_logs)" "not healthy within ${PROFILE_DEADLINE}s: $SENT_WHY"; return 1
  fi
  log "redis-sentinel: up (master 127.0.0.1:$SENT_MASTER, replica $SENT_REPLICA, sentinels ${SENT_PORTS[*]}) in $((SECONDS - t0))s"
}

up_redis_sentinel() {
  local t0=$SECONDS p
  if ! redis_installed || ! sentinel_cmd; then
    fail_profile redis-sentinel "$STATE/apt.log" "redis-server / redis-cli / redis-sentinel are not installed and could not be installed"; return 1
  fi
  if [[ -d $SENT_DIR ]]; then
    if sentinel_check; then
      for p in "${SENT_DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do rnode_pid "$SENT_DIR" "$p" >/dev/null || true; done
      log "redis-sentinel: already up (master 127.0.0.1:$SENT_MASTER, replica $SENT_REPLICA)"; return 0
    fi
    if sentinel_recover; then
      log "redis-sentinel: up again (master 127.0.0.1:$SENT_MASTER, replica $SENT_REPLICA) in $((SECONDS - t0))s"; return 0
    fi
    warn "redis-sentinel: $RECOVER_WHY; wiping $SENT_DIR and creating it fresh"
  fi
  sentinel_create
}

down_redis_sentinel() {
  local any=0 p
  for p in "${SENT_DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do rnode_pid "$SENT_DIR" "$p" >/dev/null && any=1; done
  if [[ $any == 0 && ! -d $SENT_DIR ]]; then log "redis-sentinel: already down"; return 0; fi
  log "redis-sentinel: stopping..."
  # sentinels first, so they do not fail over while the data nodes stop
  if ! rnodes_stop "$SENT_DIR" "${SENT_PORTS[@]}" || ! rnodes_stop "$SENT_DIR" "${SENT_DATA_PORTS[@]}"; then
    warn "redis-sentinel: some processes are still alive; keeping $SENT_DIR"; return 1
  fi
  rm -rf "$SENT_DIR"
  log "redis-sentinel: stopped, $SENT_DIR removed"
}

status_redis_sentinel() {
  local p n=0
  if sentinel_check; then
    echo "redis-sentinel: up (master 127.0.0.1:$SENT_MASTER, replica $SENT_REPLICA, sentinels ${SENT_PORTS[0]}-${SENT_PORTS[-1]})"; return 0
  fi
  for p in "${SENT_DATA_PORTS[@]}" "${SENT_PORTS[@]}"; do rping "$p" && n=$((n + 1)); done
  if [[ $n == 0 ]]; then echo "redis-sentinel: down"
  else echo "redis-sentinel: degraded ($n/5 processes answer; $SENT_WHY)"; fi
  return 1
}

profile_dir() { case $1 in redis-cluster) echo "$CLUSTER_DIR" ;; redis-sentinel) echo "$SENT_DIR" ;; esac; }

# ----------------------------------------------------------------------------
# commands
# ----------------------------------------------------------------------------

cmd_env() { # cmd_env [PROFILE]
  if (( $# > 1 )); then echo "[services] ERROR: env takes at most one profile (they set the same APP__REDIS__MODE)" >&2; exit 2; fi
  printf 'export APP__DATABASE__URL=%q\n' "${KH_DATABASE_URL:-$DEFAULT_DATABASE_URL}"
  printf 'export APP__REDIS__URL=%q\n'    "${KH_REDIS_URL:-$DEFAULT_REDIS_URL}"
  printf 'export APP__AMQP__URLS=%q\n'    "${KH_AMQP_URL:-$DEFAULT_AMQP_URL}"
  printf 'export APP__MONGO__URL=%q\n'    "${KH_MONGO_URL:-$DEFAULT_MONGO_URL}"
  local p urls=()
  case ${1:-} in
    redis-cluster)
      for p in "${CLUSTER_PORTS[@]}"; do urls+=("redis://127.0.0.1:$p"); done
      printf 'export APP__REDIS__MODE=cluster\n'
      printf 'export APP__REDIS__NODES=%s\n' "$(join_comma "${urls[@]}")" ;;
    redis-sentinel)
      for p in "${SENT_PORTS[@]}"; do urls+=("redis://127.0.0.1:$p"); done
      printf 'export APP__REDIS__MODE=sentinel\n'
      printf 'export APP__REDIS__SENTINELS=%s\n' "$(join_comma "${urls[@]}")"
      printf 'export APP__REDIS__MASTER_NAME=%s\n' "$SENT_NAME" ;;
  esac
}

take_lock() { # serialise concurrent up/down runs
  ensure_state_dir
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$STATE/.lock"
    if ! flock -n 9; then
      log "another services.sh run holds $STATE/.lock, waiting..."
      flock -w 900 9 || { echo "[services] ERROR: could not get $STATE/.lock" >&2; exit 1; }
    fi
  fi
}

# cmd_up_profiles PROFILE... — only the given Redis profiles, not the base services
cmd_up_profiles() {
  take_lock
  log "up $* (state dir: $STATE)"
  local pkgs=() prof failed=()
  redis_installed || pkgs+=(redis-server redis-tools)
  if [[ " $* " == *" redis-sentinel "* ]] && ! command -v redis-sentinel >/dev/null 2>&1; then pkgs+=(redis-sentinel); fi
  if (( ${#pkgs[@]} )); then
    apt_install "${pkgs[@]}" || warn "apt-get failed (see $STATE/apt.log)"
  fi
  for prof in "$@"; do
    "up_${prof//-/_}" || failed+=("$prof")
  done
  if (( ${#failed[@]} )); then
    echo "[services] FAILED: ${failed[*]} (after ${SECONDS}s)" >&2
    exit 1
  fi
}

cmd_up() {
  if (( $# )); then cmd_up_profiles "$@"; return; fi
  take_lock
  log "up (state dir: $STATE)"
  # 1. Decide what needs installing: only pieces that are not user-supplied,
  #    not already answering, and whose binaries are missing.
  local pkgs=() need_ferret=0
  if [[ -z ${KH_DATABASE_URL:-} ]] && ! pg_local_up && ! pg_installed; then pkgs+=(postgresql postgresql-client); fi
  if [[ -z ${KH_REDIS_URL:-} ]] && ! redis_local_up && ! redis_installed; then pkgs+=(redis-server redis-tools); fi
  if [[ -z ${KH_AMQP_URL:-} ]] && ! rabbit_local_up && ! rabbit_installed; then pkgs+=(rabbitmq-server); fi
  if [[ -z ${KH_MONGO_URL:-} ]] && ! mongo_local_up && ! pid_alive "$STATE/ferretdb.pid" ferretdb && ! ferret_find >/dev/null; then
    need_ferret=1
  fi
  # 2. Install (one apt-get update + one apt-get install for all missing).
  if (( ${#pkgs[@]} )); then
    if ! apt_install "${pkgs[@]}"; then
      warn "apt-get failed (see $STATE/apt.log)"
    fi
  fi
  if [[ $need_ferret == 1 ]]; then
    ferret_install || warn "ferretdb build failed (see $STATE/ferretdb-build.log)"
  fi
  # 3. Start / check each piece; report every failure, not just the first.
  local failed=()
  up_postgres || failed+=(postgres)
  up_redis    || failed+=(redis)
  up_rabbitmq || failed+=(rabbitmq)
  up_ferretdb || failed+=(ferretdb)
  if (( ${#failed[@]} )); then
    echo "[services] FAILED: ${failed[*]} (after ${SECONDS}s)" >&2
    exit 1
  fi
  log "all up"
}

cmd_down() { # cmd_down [PROFILE...] — without profiles: everything, profiles included
  take_lock
  local rc=0 prof
  if (( $# )); then
    for prof in "$@"; do "down_${prof//-/_}" || rc=1; done
    exit "$rc"
  fi
  for prof in "${PROFILES[@]}"; do "down_${prof//-/_}" || rc=1; done
  down_ferretdb || rc=1
  down_rabbitmq || rc=1
  down_redis    || rc=1
  down_postgres || rc=1
  if [[ $rc == 0 ]]; then log "all down"; fi
  exit "$rc"
}

cmd_status() { # cmd_status [PROFILE...] — with profiles: only their lines
  local rc=0 prof
  if (( $# )); then
    for prof in "$@"; do "status_${prof//-/_}" || rc=3; done
    return "$rc"
  fi
  status_line() { # PIECE ENVVAR DEFAULT_PORT LOCAL_CHECK ADDR
    local v=${!2:-}
    if [[ -n $v ]]; then
      if ext_up "$1" "$v" "$3"; then echo "$1: up (external, $2)"; else echo "$1: down (external, $2)"; rc=3; fi
    elif "$4"; then echo "$1: up ($5)"
    else echo "$1: down"; rc=3; fi
  }
  status_line postgres KH_DATABASE_URL 5432  pg_local_up     "127.0.0.1:$PG_PORT"
  status_line redis    KH_REDIS_URL    6379  redis_local_up  "127.0.0.1:$REDIS_PORT"
  status_line rabbitmq KH_AMQP_URL     5672  rabbit_local_up "127.0.0.1:$AMQP_PORT"
  status_line ferretdb KH_MONGO_URL    27017 mongo_local_up  "127.0.0.1:$MONGO_PORT"
  # the Redis profiles only once created (their state dir exists)
  for prof in "${PROFILES[@]}"; do
    [[ -d $(profile_dir "$prof") ]] || continue
    "status_${prof//-/_}" || rc=3
  done
  return "$rc"
}

usage() { echo "usage: $0 [up|down|status|env] [redis-cluster|redis-sentinel]   ($0 help)" >&2; exit 2; }

main() {
  local cmd=${1:-up} prof known p
  (( $# )) && shift
  for prof in "$@"; do
    known=0
    for p in "${PROFILES[@]}"; do [[ $prof == "$p" ]] && known=1; done
    [[ $known == 1 ]] || { echo "[services] ERROR: unknown profile '$prof' (known: ${PROFILES[*]})" >&2; usage; }
  done
  case $cmd in
    up)     cmd_up "$@" ;;
    down)   cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    env)    cmd_env "$@" ;;
    -h|--help|help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0" ;;
    *) usage ;;
  esac
}

# (sourcing the file only defines the functions)
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
