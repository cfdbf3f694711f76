#!/usr/bin/env bash
# scripts/services.sh — local / CI backing services for kh-review.
#
#   scripts/services.sh [up]     install (if missing) and start PostgreSQL, Redis,
#                                RabbitMQ and FerretDB on 127.0.0.1; idempotent
#   scripts/services.sh down     stop them again
#   scripts/services.sh status   one line per service (exit 3 if any is down)
#   scripts/services.sh env      print the APP__* export lines for the app/tests
#                                (use:  eval "$(scripts/services.sh env)")
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
# commands
# ----------------------------------------------------------------------------

cmd_env() {
  printf 'export APP__DATABASE__URL=%q\n' "${KH_DATABASE_URL:-$DEFAULT_DATABASE_URL}"
  printf 'export APP__REDIS__URL=%q\n'    "${KH_REDIS_URL:-$DEFAULT_REDIS_URL}"
  printf 'export APP__AMQP__URL=%q\n'     "${KH_AMQP_URL:-$DEFAULT_AMQP_URL}"
  printf 'export APP__MONGO__URL=%q\n'    "${KH_MONGO_URL:-$DEFAULT_MONGO_URL}"
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

cmd_up() {
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

cmd_down() {
  take_lock
  local rc=0
  down_ferretdb || rc=1
  down_rabbitmq || rc=1
  down_redis    || rc=1
  down_postgres || rc=1
  if [[ $rc == 0 ]]; then log "all down"; fi
  exit "$rc"
}

cmd_status() {
  local rc=0
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
  return "$rc"
}

main() {
  local cmd=${1:-up}
  case $cmd in
    up)     cmd_up ;;
    down)   cmd_down ;;
    status) cmd_status ;;
    env)    cmd_env ;;
    -h|--help|help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' ;;
    *) echo "usage: $0 [up|down|status|env]" >&2; exit 2 ;;
  esac
}

# (sourcing the file only defines the functions)
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
