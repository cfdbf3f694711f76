#!/usr/bin/env bash
# scripts/services/rabbitmq.sh — RabbitMQ (Debian's package) on 127.0.0.1:5672,
# the broker in the foreground of its own session (no systemd here). Run by
# scripts/services.sh:
#   packages   the Debian packages to install first, one a line (none when it runs)
#   up | down | status | env
# With KH_AMQP_URL set, `up` only checks that server answers and `down` leaves
# it alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/../lib/common.sh"

PORT=5672
DEADLINE=120
URL="amqp://guest:guest@127.0.0.1:$PORT/%2f"
LOG="$STATE/rabbitmq.log"
PIDF="$STATE/rabbitmq.pid"
LIB_BIN=/usr/lib/rabbitmq/bin
HOME_DIR=/var/lib/rabbitmq

installed() { [[ -x $LIB_BIN/rabbitmq-server && -x /usr/sbin/rabbitmqctl ]]; }
# The AMQP listener only opens at the very end of the broker's boot, so an open
# port means it is up; this keeps a repeated `up` fast.
local_up() { tcp_open 127.0.0.1 "$PORT"; }
external_up() {
  local host port
  read -r host port < <(url_hostport "$KH_AMQP_URL" "$PORT")
  tcp_open "$host" "$port"
}

# The environment of the broker and of rabbitmqctl, one VAR=value a line. The
# wrapper in /usr/sbin switches to the rabbitmq user with `su`, which keeps it.
broker_env() {
  local h ip
  printf '%s\n' RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 "RABBITMQ_NODE_PORT=$PORT"
  # Keep epmd and Erlang distribution on loopback too, but only when this host's
  # name resolves to a loopback address; otherwise rabbitmqctl (which reaches
  # rabbit@<hostname> by that name) could not connect any more.
  h=$(hostname -s 2>/dev/null || hostname)
  ip=$(getent ahostsv4 "$h" 2>/dev/null | awk 'NR==1{print $1}')
  if [[ $ip == 127.* ]]; then
    printf '%s\n' ERL_EPMD_ADDRESS=127.0.0.1 \
      "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}"
  fi
}

# (9>&-: rabbitmqctl may start epmd, which must not inherit the lock)
rmqctl() {
  local env
  mapfile -t env < <(broker_env)
  as_root env "${env[@]}" /usr/sbin/rabbitmqctl "$@" 9>&-
}

up() {
  local t0=$SECONDS env rc=0 left why
  if [[ -n ${KH_AMQP_URL:-} ]]; then
    if external_up; then log "rabbitmq: external (KH_AMQP_URL) answers"; return 0; fi
    fail_ext rabbitmq KH_AMQP_URL "$KH_AMQP_URL" "$PORT"
    return 1
  fi
  if local_up; then log "rabbitmq: already up"; return 0; fi
  if ! installed; then
    fail rabbitmq "$STATE/apt.log" KH_AMQP_URL "$URL" "rabbitmq-server is not installed and could not be installed"
    return 1
  fi
  if pid_alive "$PIDF" rabbitmq-server; then
    log "rabbitmq: already starting (pid $(cat "$PIDF")), waiting..."
  else
    log "rabbitmq: starting..."
    mapfile -t env < <(broker_env)
    as_root install -d -o rabbitmq -g rabbitmq /var/log/rabbitmq "$HOME_DIR" || true
    # Its own log is /var/log/rabbitmq/rabbit@<host>.log; stdout goes to $LOG.
    ( cd "$HOME_DIR" && exec setsid "${ROOT_CMD[@]}" runuser -u rabbitmq -- \
        env HOME="$HOME_DIR" "${env[@]}" "$LIB_BIN/rabbitmq-server" \
        </dev/null >>"$LOG" 2>&1 9>&- ) &
    echo $! >"$PIDF"
  fi
  wait_for --pid "$(cat "$PIDF")" "$DEADLINE" local_up || rc=$?
  if (( rc == 0 )); then
    # second half of the readiness check: the broker reports a finished boot
    left=$((DEADLINE - (SECONDS - t0))); (( left > 10 )) || left=10
    rmqctl await_startup --timeout "$left" >>"$LOG" 2>&1 || rc=1
  fi
  if (( rc != 0 )); then
    why="did not answer on 127.0.0.1:$PORT within ${DEADLINE}s"
    (( rc != 2 )) || why="the broker process exited during startup"
    fail rabbitmq "$LOG and /var/log/rabbitmq/" KH_AMQP_URL "$URL" "$why"
    return 1
  fi
  log "rabbitmq: up on 127.0.0.1:$PORT in $((SECONDS - t0))s"
}

down() {
  local pid
  if [[ -n ${KH_AMQP_URL:-} ]]; then log "rabbitmq: external (KH_AMQP_URL), not stopping"; return 0; fi
  if ! local_up && ! pid_alive "$PIDF" rabbitmq-server; then log "rabbitmq: already down"; rm -f "$PIDF"; return 0; fi
  if ! installed; then warn "something answers on $PORT but rabbitmqctl is not installed; not stopping it"; return 1; fi
  log "rabbitmq: stopping..."
  # `shutdown` waits for the OS process to exit; fall back to `stop`.
  rmqctl shutdown >>"$LOG" 2>&1 || rmqctl stop >>"$LOG" 2>&1 || true
  if pid_alive "$PIDF" rabbitmq-server; then
    pid=$(cat "$PIDF")
    if ! wait_for 20 pid_gone "$pid"; then
      warn "rabbitmq runner (pid $pid) still alive after shutdown; sending TERM"
      kill "$pid" 2>/dev/null || true
    fi
  fi
  if local_up; then warn "rabbitmq still answers on $PORT"; return 1; fi
  rm -f "$PIDF"
  log "rabbitmq: stopped"
}

case ${1:-} in
  packages) [[ -n ${KH_AMQP_URL:-} ]] || installed || local_up || printf '%s\n' rabbitmq-server ;;
  up)       mkdir -p "$STATE"; up ;;
  down)     down ;;
  status)   status_line rabbitmq KH_AMQP_URL "127.0.0.1:$PORT" external_up local_up ;;
  env)      printf 'export APP__AMQP__URLS=%q\n' "${KH_AMQP_URL:-$URL}" ;;
  *)        echo "usage: $0 packages|up|down|status|env" >&2; exit 2 ;;
esac
