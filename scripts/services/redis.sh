#!/usr/bin/env bash
# scripts/services/redis.sh — the single Redis on 127.0.0.1:6379 the service uses
# (the Cluster and Sentinel set-ups of the tests are in scripts/topologies/).
# Run by scripts/services.sh:
#   packages   the Debian packages to install first, one a line (none when it runs)
#   up | down | status | env
# Anything that already answers PONG on 6379 (e.g. the Debian package's own
# instance) is simply used. With KH_REDIS_URL set, `up` only checks that server
# answers and `down` leaves it alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/../lib/common.sh"

PORT=6379
DEADLINE=60
URL="redis://127.0.0.1:$PORT"
LOG="$STATE/redis.log"

installed() { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; }
local_up() {
  if command -v redis-cli >/dev/null 2>&1; then [[ $(timeout 3 redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null) == PONG ]]
  else tcp_open 127.0.0.1 "$PORT"; fi
}
local_closed() { ! tcp_open 127.0.0.1 "$PORT"; }
external_up() {
  local host port
  read -r host port < <(url_hostport "$KH_REDIS_URL" "$PORT")
  if command -v redis-cli >/dev/null 2>&1; then [[ $(timeout 3 redis-cli -u "$KH_REDIS_URL" ping 2>/dev/null) == PONG ]]
  else tcp_open "$host" "$port"; fi
}

up() {
  local t0=$SECONDS
  if [[ -n ${KH_REDIS_URL:-} ]]; then
    if external_up; then log "redis: external (KH_REDIS_URL) answers"; return 0; fi
    fail_ext redis KH_REDIS_URL "$KH_REDIS_URL" "$PORT"
    return 1
  fi
  if local_up; then log "redis: already up"; return 0; fi
  if ! installed; then
    fail redis "$STATE/apt.log" KH_REDIS_URL "$URL" "redis-server is not installed and could not be installed"
    return 1
  fi
  log "redis: starting..."
  mkdir -p "$STATE/redis"
  # No persistence at all: tests only.
  # shellcheck disable=SC2094  # --logfile only names the file redis-server appends to
  if ! redis-server --bind 127.0.0.1 --port "$PORT" --protected-mode yes \
        --daemonize yes --save '' --appendonly no \
        --dir "$STATE/redis" --logfile "$LOG" --pidfile "$STATE/redis.pid" \
        >>"$LOG" 2>&1 9>&-; then
    fail redis "$LOG" KH_REDIS_URL "$URL" "redis-server failed to start"
    return 1
  fi
  if ! wait_for "$DEADLINE" local_up; then
    fail redis "$LOG" KH_REDIS_URL "$URL" "did not answer PONG on 127.0.0.1:$PORT within ${DEADLINE}s"
    return 1
  fi
  log "redis: up on 127.0.0.1:$PORT in $((SECONDS - t0))s"
}

down() {
  if [[ -n ${KH_REDIS_URL:-} ]]; then log "redis: external (KH_REDIS_URL), not stopping"; return 0; fi
  if ! local_up; then log "redis: already down"; return 0; fi
  log "redis: stopping..."
  timeout 10 redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  if ! wait_for 15 local_closed; then warn "redis still answers on $PORT"; return 1; fi
  rm -f "$STATE/redis.pid"
  log "redis: stopped"
}

case ${1:-} in
  packages) [[ -n ${KH_REDIS_URL:-} ]] || installed || local_up || printf '%s\n' redis-server redis-tools ;;
  up)       mkdir -p "$STATE"; up ;;
  down)     down ;;
  status)   status_line redis KH_REDIS_URL "127.0.0.1:$PORT" external_up local_up ;;
  env)      printf 'export APP__REDIS__URL=%q\n' "${KH_REDIS_URL:-$URL}" ;;
  *)        echo "usage: $0 packages|up|down|status|env" >&2; exit 2 ;;
esac
