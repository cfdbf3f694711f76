#!/usr/bin/env bash
# scripts/services.sh — local / CI backing services for kh-review, on 127.0.0.1 only.
#   up [PROFILE...]      install what is missing, start PostgreSQL, Redis, RabbitMQ, FerretDB
#                        (idempotent; well under a second when all is up), or only PROFILEs,
#                        or only the base services named (`up postgres`: make lint's)
#   install [PROFILE...] install, without starting anything, the Debian packages of every
#                        profile (or of the PROFILEs named); .ci/run does it while it compiles
#   down [PROFILE...]    stop everything, profiles and a Jaeger started by `make jaeger`
#                        included, or only PROFILEs
#   status [PROFILE...]  a line each, profiles once created; exit 3 if one is down
#   env [PROFILE]        the APP__* export lines:  eval "$(scripts/services.sh env)"
# PROFILE: the topologies whose nodes the tests kill (scripts/topologies/topology.py): redis-cluster
# (7001-7006), redis-sentinel (6391/6392, sentinels 26391-26393), rabbitmq-cluster (three
# nodes, AMQP 5681-5683) or postgres-ha (three Patroni members behind HAProxy on 5440, one
# etcd, a FerretDB on 27027 through the same HAProxy), or load-balancer (HAProxy installed,
# for the rolling-upgrade test, which runs it itself). The base services
# are in scripts/services/, shared helpers in scripts/lib/, SQL in scripts/sql/. Debian or
# Ubuntu without systemd, as root (or with sudo). KH_DATABASE_URL, KH_REDIS_URL, KH_AMQP_URL,
# KH_MONGO_URL: use that server instead (up checks it answers, env prints it, down leaves
# it alone). State and logs: ${KH_STATE_DIR:-/var/tmp/kh-review}. No trace collector: the
# trace tests start OTLP receivers of their own (the test kit's); scripts/services/jaeger.sh
# (`make jaeger`) starts Jaeger for a developer who wants a trace UI.
set -euo pipefail
export _KH_SERVICES_STARTED=$EPOCHSECONDS   # the parts' log lines count from here
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/lib/common.sh"

BASE=(postgres redis rabbitmq ferretdb)   # started in this order, stopped in reverse
PROFILES=(redis-cluster redis-sentinel rabbitmq-cluster postgres-ha load-balancer)

service() { "$here/services/$1.sh" "$2"; }     # service NAME COMMAND
# topology PROFILE COMMAND: scripts/topologies/topology.py, but load-balancer.sh (HAProxy installed)
topology() { if [[ $1 == load-balancer ]]; then "$here/topologies/$1.sh" "$2"; else "$here/topologies/topology.py" "$1" "$2"; fi; }

cmd_up() {
  local s pkgs=() failed=() base=() profiles=()
  for s in "$@"; do
    if [[ " ${BASE[*]} " == *" $s "* ]]; then base+=("$s"); else profiles+=("$s"); fi
  done
  (( $# )) || base=("${BASE[@]}")
  # Base services named and all answering: nothing to do, and no wait for the lock that
  # another `up` may hold meanwhile (CI brings the rest up in the background while make
  # lint, which needs PostgreSQL alone, runs).
  if (( $# && ${#profiles[@]} == 0 )); then
    local down=0
    for s in "${base[@]}"; do service "$s" status >/dev/null 2>&1 || { down=1; break; }; done
    if (( ! down )); then log "up $*: already up"; return 0; fi
  fi
  take_lock
  log "up${*:+ $*} (state dir: $STATE)"
  # One apt-get run for all that is missing, then each piece; every failure is reported.
  mapfile -t pkgs < <({
    for s in "${base[@]}"; do [[ $s == ferretdb ]] || service "$s" packages; done
    for s in "${profiles[@]}"; do topology "$s" packages; done
  } | awk '!seen[$0]++')
  if (( ${#pkgs[@]} )) && ! apt_install "${pkgs[@]}"; then warn "apt-get failed (see $STATE/apt.log)"; fi
  for s in "${base[@]}"; do
    if [[ $s == ferretdb ]]; then
      service ferretdb install || warn "ferretdb build failed (see $STATE/ferretdb-build.log)"
    fi
    service "$s" up || failed+=("$s")
  done
  for s in "${profiles[@]}"; do topology "$s" up || failed+=("$s"); done
  if (( ${#failed[@]} )); then echo "[services] FAILED: ${failed[*]} (after ${SECONDS}s)" >&2; exit 1; fi
  (( $# )) || log "all up"
}

cmd_install() {
  local s pkgs=() profiles=("$@")
  (( $# )) || profiles=("${PROFILES[@]}")
  # No services lock: nothing is started or stopped (apt-get waits for dpkg's own lock), so
  # an `up` of the base services (make lint's) does not wait for these packages.
  mapfile -t pkgs < <(for s in "${profiles[@]}"; do topology "$s" packages; done | awk '!seen[$0]++')
  if (( ${#pkgs[@]} )); then
    apt_install "${pkgs[@]}" || { echo "[services] ERROR: apt-get failed (see $STATE/apt.log)" >&2; exit 1; }
  fi
  log "installed: ${profiles[*]}"
}

cmd_down() {
  local s rc=0 profiles=("$@")
  (( $# )) || profiles=("${PROFILES[@]}")
  take_lock
  for s in "${profiles[@]}"; do topology "$s" down || rc=1; done
  if (( $# == 0 )); then
    # Jaeger only runs when a developer asked for it (make jaeger); stopped with the rest.
    for s in jaeger ferretdb rabbitmq redis postgres; do service "$s" down || rc=1; done
    (( rc )) || log "all down"
  fi
  exit "$rc"
}

cmd_status() {
  local s rc=0 profiles=("$@")
  if (( $# == 0 )); then
    for s in "${BASE[@]}"; do service "$s" status || rc=3; done
    [[ ! -e $STATE/jaeger.pid ]] || service jaeger status || rc=3   # once make jaeger started it
    for s in "${PROFILES[@]}"; do [[ ! -d $STATE/$s ]] || profiles+=("$s"); done
  fi
  for s in "${profiles[@]}"; do topology "$s" status || rc=3; done
  return "$rc"
}

cmd_env() {
  local s
  if (( $# > 1 )); then echo "[services] ERROR: env takes at most one profile (a Redis one and another would set the same variables twice)" >&2; exit 2; fi
  for s in "${BASE[@]}"; do service "$s" env; done
  (( $# == 0 )) || topology "$1" env
}

usage() { echo "usage: $0 [up|install|down|status|env] [redis-cluster|redis-sentinel|rabbitmq-cluster|postgres-ha|load-balancer]   ($0 help)" >&2; exit 2; }

cmd=${1:-up}
(( $# == 0 )) || shift
for s in "$@"; do
  # `up` also takes the base services by name (make lint needs PostgreSQL alone).
  [[ $cmd == up && " ${BASE[*]} " == *" $s "* ]] && continue
  [[ " ${PROFILES[*]} " == *" $s "* ]] || { echo "[services] ERROR: unknown profile '$s' (known: ${PROFILES[*]})" >&2; usage; }
done
case $cmd in
  up)     cmd_up "$@" ;;
  install) cmd_install "$@" ;;
  down)   cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  env)    cmd_env "$@" ;;
  -h|--help|help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0" ;;
  *)      usage ;;
esac
