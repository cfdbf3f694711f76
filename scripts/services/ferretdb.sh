#!/usr/bin/env bash
# scripts/services/ferretdb.sh — FerretDB 1.24.2, the MongoDB stand-in, on
# 127.0.0.1:27017, keeping its data in the local PostgreSQL (database ferretdb;
# so it needs postgres.sh's cluster). Run by scripts/services.sh:
#   install    build the binary when there is no working one
#   up | down | status | env
# With KH_MONGO_URL set, `up` only checks that server answers and `down` leaves
# it alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/../lib/common.sh"

MODULE=github.com/FerretDB/FerretDB
VERSION=v1.24.2
PORT=27017
DEADLINE=60
URL="mongodb://127.0.0.1:$PORT"
PG_URL="postgres://ferretdb:ferretdb@127.0.0.1:5432/ferretdb"   # its storage
LOG="$STATE/ferretdb.log"
PIDF="$STATE/ferretdb.pid"
BUILD_LOG="$STATE/ferretdb-build.log"

local_up() { tcp_open 127.0.0.1 "$PORT"; }
external_up() {
  local host port
  read -r host port < <(url_hostport "$KH_MONGO_URL" "$PORT")
  tcp_open "$host" "$port"
}

gobin_dir() {
  local d
  d=$(GOTOOLCHAIN=local go env GOBIN 2>/dev/null || true)
  [[ -n $d ]] || d="$(GOTOOLCHAIN=local go env GOPATH 2>/dev/null | cut -d: -f1)/bin"
  printf '%s\n' "$d"
}

works() { # works BINARY — a FerretDB of our version?
  [[ -x $1 ]] && "$1" --version 2>/dev/null | grep -qx "version: $VERSION"
}

binary() { # prints the path of a working ferretdb binary, or fails
  local c cands=()
  if c=$(command -v ferretdb 2>/dev/null); then cands+=("$c"); fi
  if command -v go >/dev/null 2>&1; then cands+=("$(gobin_dir)/ferretdb"); fi
  [[ -z ${GOBIN:-} ]] || cands+=("$GOBIN/ferretdb")
  cands+=("${HOME:-/root}/go/bin/ferretdb")
  for c in "${cands[@]}"; do
    if works "$c"; then printf '%s\n' "$c"; return 0; fi
  done
  return 1
}

# Build FerretDB from the module source.
# NOTE: a plain `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2`
# produces a binary that panics at startup ("Invalid build/version/version.txt
# file content"), because that generated file is not part of the published
# module. So: download the module, copy it, write version.txt, `go build`.
build() {
  local dir src bindir rc=0
  if ! command -v go >/dev/null 2>&1; then
    echo "go toolchain not found (FerretDB $VERSION needs Go >= 1.24)" >>"$BUILD_LOG"
    return 1
  fi
  bindir=$(gobin_dir)
  log "ferretdb: building $VERSION with $(GOTOOLCHAIN=local go version | awk '{print $3}') into $bindir (log: $BUILD_LOG)"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/kh-ferretdb-build.XXXXXX")
  # (an explicit && chain: `set -e` does not hold inside a subshell run as `( ) || ...`)
  (
    cd "$dir" &&
    export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=mod &&
    src=$(go mod download -json "$MODULE@$VERSION" \
          | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1) &&
    { [[ -n $src && -d $src ]] || { echo "go mod download did not report a source dir"; false; }; } &&
    cp -R "$src" "$dir/src" &&
    chmod -R u+w "$dir/src" &&
    echo "$VERSION" >"$dir/src/build/version/version.txt" &&
    cd "$dir/src" &&
    mkdir -p "$bindir" &&
    go build -o "$bindir/ferretdb.tmp" ./cmd/ferretdb &&
    mv -f "$bindir/ferretdb.tmp" "$bindir/ferretdb"
  ) >>"$BUILD_LOG" 2>&1 || rc=$?
  rm -rf "$dir"
  return "$rc"
}

install_binary() {
  [[ -n ${KH_MONGO_URL:-} ]] || local_up || pid_alive "$PIDF" ferretdb || binary >/dev/null || build
}

# Its role and database in the local PostgreSQL, and the event trigger that
# gives every collection a GIN index on _id (see the SQL file for why);
# idempotent, cheap when all is in place.
storage() {
  "$here/postgres.sh" sql postgres "$here/../sql/role-and-database.sql" \
    -v role=ferretdb -v password=ferretdb -v options= -v db=ferretdb &&
  "$here/postgres.sh" sql ferretdb "$here/../sql/ferretdb-id-gin.sql" &&
  # FerretDB logs in over TCP with the password: check that works too.
  PGCONNECT_TIMEOUT=5 "$(pg_tool psql)" -X -q -v ON_ERROR_STOP=1 -d "$PG_URL" -tA -c 'SELECT 1' >/dev/null
}

up() {
  local t0=$SECONDS bin rc=0 why
  if [[ -n ${KH_MONGO_URL:-} ]]; then
    if external_up; then log "ferretdb: external (KH_MONGO_URL) answers"; return 0; fi
    fail_ext ferretdb KH_MONGO_URL "$KH_MONGO_URL" "$PORT"
    return 1
  fi
  if local_up && ! pid_alive "$PIDF" ferretdb; then
    log "ferretdb: already up (not started by this script, left as it is)"; return 0
  fi
  if ! storage >>"$STATE/postgres-admin.log" 2>&1; then
    why="could not set up role/database ferretdb (and its event trigger) in the local PostgreSQL on 127.0.0.1:5432, where FerretDB keeps its data"
    [[ -z ${KH_DATABASE_URL:-} ]] || why+="; with KH_DATABASE_URL set this script does not run that PostgreSQL: set KH_MONGO_URL too"
    fail ferretdb "$STATE/postgres-admin.log" KH_MONGO_URL "$URL" "$why"
    return 1
  fi
  if local_up; then log "ferretdb: already up"; return 0; fi
  if pid_alive "$PIDF" ferretdb; then
    log "ferretdb: already starting (pid $(cat "$PIDF")), waiting..."
  else
    if ! bin=$(binary); then
      fail ferretdb "$BUILD_LOG" KH_MONGO_URL "$URL" "no working ferretdb $VERSION binary and the build failed"
      return 1
    fi
    log "ferretdb: starting $bin (PostgreSQL backend, database ferretdb)..."
    mkdir -p "$STATE/ferretdb-state"
    # --debug-addr=- disables the metrics/pprof HTTP listener (default 127.0.0.1:8088).
    # setsid: own session, survives this script; bash has no job control here,
    # so setsid execs in place and $! is FerretDB's pid.
    FERRETDB_TELEMETRY=disable nohup setsid "$bin" \
      --handler=postgresql \
      --postgresql-url="$PG_URL" \
      --listen-addr="127.0.0.1:$PORT" \
      --state-dir="$STATE/ferretdb-state" \
      --debug-addr=- \
      --telemetry=disable \
      --log-level=info \
      </dev/null >>"$LOG" 2>&1 9>&- &
    echo $! >"$PIDF"
  fi
  wait_for --pid "$(cat "$PIDF")" "$DEADLINE" local_up || rc=$?
  if (( rc != 0 )); then
    why="did not answer on 127.0.0.1:$PORT within ${DEADLINE}s"
    (( rc != 2 )) || why="the ferretdb process exited during startup"
    fail ferretdb "$LOG" KH_MONGO_URL "$URL" "$why"
    return 1
  fi
  log "ferretdb: up on 127.0.0.1:$PORT in $((SECONDS - t0))s"
}

stop_pid() { # stop_pid PID — TERM, then KILL if it ignores that
  kill "$1" 2>/dev/null || true
  if ! wait_for 15 pid_gone "$1"; then
    warn "ferretdb (pid $1) ignored TERM; sending KILL"
    kill -9 "$1" 2>/dev/null || true
    wait_for 5 pid_gone "$1" || return 1
  fi
}

down() {
  local pid
  if [[ -n ${KH_MONGO_URL:-} ]]; then log "ferretdb: external (KH_MONGO_URL), not stopping"; return 0; fi
  if pid_alive "$PIDF" ferretdb; then
    pid=$(cat "$PIDF")
    log "ferretdb: stopping (pid $pid)..."
    stop_pid "$pid" || { warn "ferretdb (pid $pid) still alive"; return 1; }
    rm -f "$PIDF"
    log "ferretdb: stopped"
  else
    rm -f "$PIDF"
    if local_up; then warn "something answers on $PORT but was not started by this script; not stopping it"
    else log "ferretdb: already down"; fi
  fi
}

case ${1:-} in
  install) mkdir -p "$STATE"; install_binary ;;
  up)      mkdir -p "$STATE"; up ;;
  down)    down ;;
  status)  status_line ferretdb KH_MONGO_URL "127.0.0.1:$PORT" external_up local_up ;;
  env)     printf 'export APP__MONGO__URL=%q\n' "${KH_MONGO_URL:-$URL}" ;;
  *)       echo "usage: $0 install|up|down|status|env" >&2; exit 2 ;;
esac
