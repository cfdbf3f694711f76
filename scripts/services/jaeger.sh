#!/usr/bin/env bash
# scripts/services/jaeger.sh — Jaeger v2 (v1.76.0), on request only, for a developer who
# wants to see the traces of a local run in a UI (`make jaeger`): OTLP/HTTP on
# 127.0.0.1:4318 (gRPC 4317), memory storage, the UI and query API on 127.0.0.1:16686
# (scripts/jaeger/config.yaml). Neither `scripts/services.sh up` nor the tests need it (the
# trace tests start OTLP receivers of their own); `scripts/services.sh down` stops it.
#   install    build the binary (its Go module) into $TOOLS/bin when there is none
#   up | down | status
#   env        the setting that makes a service export to it (APP__TELEMETRY__OTLP_ENDPOINT)
# With KH_JAEGER_URL (its query API) and KH_OTLP_ENDPOINT set, `up` only checks that
# server answers and `down` leaves it alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/../lib/common.sh"

MODULE=github.com/jaegertracing/jaeger
VERSION=v1.76.0
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
BIN="$TOOLS/bin/jaeger"
STAMP="$TOOLS/bin/jaeger.version"      # the version the binary was built from
CONFIG="$here/../jaeger/config.yaml"
QUERY_PORT=16686
OTLP_PORT=4318
DEADLINE=60
LOG="$STATE/jaeger.log"
PIDF="$STATE/jaeger.pid"
BUILD_LOG="$STATE/jaeger-build.log"

local_up() { tcp_open 127.0.0.1 "$QUERY_PORT" && tcp_open 127.0.0.1 "$OTLP_PORT"; }
external_up() {
  local host port
  read -r host port < <(url_hostport "$KH_JAEGER_URL" "$QUERY_PORT")
  tcp_open "$host" "$port"
}

works() { [[ -x $BIN && -s $STAMP && $(cat "$STAMP") == "$VERSION" ]]; }

# Builds the binary once (a few minutes cold: the module graph is large), under a lock so
# that two runs at once build it once.
build() {
  local rc=0 t0=$SECONDS
  if ! command -v go >/dev/null 2>&1; then
    echo "go toolchain not found (Jaeger $VERSION needs Go >= 1.24)" >>"$BUILD_LOG"
    return 1
  fi
  mkdir -p "$TOOLS/bin"
  exec 8>"$TOOLS/.jaeger-build.lock"
  flock -w 1200 8 || { echo "could not get $TOOLS/.jaeger-build.lock" >>"$BUILD_LOG"; return 1; }
  if works; then exec 8>&-; return 0; fi
  log "jaeger: building $VERSION with $(GOTOOLCHAIN=local go version | awk '{print $3}') into $TOOLS/bin (log: $BUILD_LOG)"
  # Not `go install $MODULE/cmd/jaeger@$VERSION`: Jaeger's go.mod has a replace directive,
  # which go install refuses. So: download the module and build it as the main module
  # (its go.sum pins everything), from the read-only module cache.
  (
    export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly &&
    cd "$TOOLS" &&
    src=$(GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" \
          | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1) &&
    { [[ -n $src && -d $src ]] || { echo "go mod download did not report a source dir"; false; }; } &&
    cd "$src" &&
    go build -trimpath -o "$BIN.tmp" ./cmd/jaeger &&
    mv -f "$BIN.tmp" "$BIN" &&
    echo "$VERSION" >"$STAMP"
  ) >>"$BUILD_LOG" 2>&1 || rc=$?
  exec 8>&-
  (( rc != 0 )) || log "jaeger: built in $((SECONDS - t0))s"
  return "$rc"
}

install_binary() {
  [[ -n ${KH_JAEGER_URL:-} ]] || local_up || works || build
}

up() {
  local t0=$SECONDS rc=0 why
  if [[ -n ${KH_JAEGER_URL:-} ]]; then
    if external_up; then log "jaeger: external (KH_JAEGER_URL) answers"; return 0; fi
    fail_ext jaeger KH_JAEGER_URL "$KH_JAEGER_URL" "$QUERY_PORT"
    return 1
  fi
  if local_up; then log "jaeger: already up"; return 0; fi
  if pid_alive "$PIDF" jaeger; then
    log "jaeger: already starting (pid $(cat "$PIDF")), waiting..."
  else
    if ! works && ! build; then
      fail jaeger "$BUILD_LOG" KH_JAEGER_URL "http://127.0.0.1:$QUERY_PORT" "no jaeger $VERSION binary and the build failed"
      return 1
    fi
    log "jaeger: starting $BIN (memory storage)..."
    # setsid: own session, survives this script (see ferretdb.sh).
    nohup setsid "$BIN" --config "$CONFIG" </dev/null >>"$LOG" 2>&1 9>&- &
    echo $! >"$PIDF"
  fi
  wait_for --pid "$(cat "$PIDF")" "$DEADLINE" local_up || rc=$?
  if (( rc != 0 )); then
    why="did not answer on 127.0.0.1:$QUERY_PORT and :$OTLP_PORT within ${DEADLINE}s"
    (( rc != 2 )) || why="the jaeger process exited during startup"
    fail jaeger "$LOG" KH_JAEGER_URL "http://127.0.0.1:$QUERY_PORT" "$why"
    return 1
  fi
  log "jaeger: up on 127.0.0.1:$OTLP_PORT (OTLP/HTTP) and :$QUERY_PORT (query) in $((SECONDS - t0))s"
}

down() {
  local pid
  if [[ -n ${KH_JAEGER_URL:-} ]]; then log "jaeger: external (KH_JAEGER_URL), not stopping"; return 0; fi
  if pid_alive "$PIDF" jaeger; then
    pid=$(cat "$PIDF")
    log "jaeger: stopping (pid $pid)..."
    kill "$pid" 2>/dev/null || true
    if ! wait_for 15 pid_gone "$pid"; then
      warn "jaeger (pid $pid) ignored TERM; sending KILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDF"
    log "jaeger: stopped"
  else
    rm -f "$PIDF"
    log "jaeger: already down"
  fi
}

case ${1:-} in
  install) mkdir -p "$STATE"; install_binary ;;
  up)      mkdir -p "$STATE"; up ;;
  down)    down ;;
  status)  status_line jaeger KH_JAEGER_URL "127.0.0.1:$QUERY_PORT" external_up local_up ;;
  env)     printf 'export APP__TELEMETRY__OTLP_ENDPOINT=%q\n' "${KH_OTLP_ENDPOINT:-http://127.0.0.1:$OTLP_PORT}" ;;
  *)       echo "usage: $0 install|up|down|status|env" >&2; exit 2 ;;
esac
