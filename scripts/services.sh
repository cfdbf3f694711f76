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
# Redis topology profiles for the tests that kill nodes, never touching the
# Redis on 6379 (plain `up` does not start them; details in scripts/topologies/):
#   up PROFILE       start it, or restart only its dead processes and wait until
#                    it is healthy (a no-op under a second when it is)
#   down PROFILE     stop that profile only and delete its state dir
#   status PROFILE   its line only (exit 3 unless healthy)
#   env PROFILE      the base lines plus the profile's APP__REDIS__* settings
# with PROFILE redis-cluster (127.0.0.1:7001-7006, 3 masters + 3 replicas) or
# redis-sentinel (master 6391, replica 6392, sentinels 26391-26393, "kh-master").
#
# One script per service in scripts/services/, shared helpers in scripts/lib/,
# SQL in scripts/sql/. For Debian/Ubuntu dev boxes and CI containers WITHOUT
# systemd; run as root (or with sudo available). Everything on 127.0.0.1 only.
# Existing servers instead: set KH_DATABASE_URL, KH_REDIS_URL, KH_AMQP_URL or
# KH_MONGO_URL, and `up` only checks that it answers, `env` prints it, `down`
# leaves it alone. State (logs, pid files): ${KH_STATE_DIR:-/var/tmp/kh-review}.
set -euo pipefail
export _KH_SERVICES_STARTED=$EPOCHSECONDS   # the parts' log lines count from here
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
source "$here/lib/common.sh"

BASE=(postgres redis rabbitmq ferretdb)   # started in this order, stopped in reverse
PROFILES=(redis-cluster redis-sentinel)

service() { "$here/services/$1.sh" "$2"; }     # service NAME COMMAND
topology() { "$here/topologies/$1.sh" "$2"; }  # topology PROFILE COMMAND
give_up() { echo "[services] FAILED: $* (after ${SECONDS}s)" >&2; exit 1; }

cmd_up() { # cmd_up [PROFILE...] — with profiles: only those, not the base services
  local s pkgs=() failed=()
  take_lock
  log "up${*:+ $*} (state dir: $STATE)"
  # One apt-get run for everything missing, then start each piece, reporting
  # every failure, not just the first.
  if (( $# )); then
    mapfile -t pkgs < <(for s in "$@"; do topology "$s" packages; done | awk '!seen[$0]++')
  else
    mapfile -t pkgs < <(for s in postgres redis rabbitmq; do service "$s" packages; done)
  fi
  if (( ${#pkgs[@]} )) && ! apt_install "${pkgs[@]}"; then warn "apt-get failed (see $STATE/apt.log)"; fi
  if (( $# )); then
    for s in "$@"; do topology "$s" up || failed+=("$s"); done
    (( ${#failed[@]} == 0 )) || give_up "${failed[@]}"
    return 0
  fi
  service ferretdb install || warn "ferretdb build failed (see $STATE/ferretdb-build.log)"
  for s in "${BASE[@]}"; do service "$s" up || failed+=("$s"); done
  (( ${#failed[@]} == 0 )) || give_up "${failed[@]}"
  log "all up"
}

cmd_down() { # cmd_down [PROFILE...] — without profiles: everything, profiles included
  local s rc=0
  take_lock
  if (( $# )); then
    for s in "$@"; do topology "$s" down || rc=1; done
    exit "$rc"
  fi
  for s in "${PROFILES[@]}"; do topology "$s" down || rc=1; done
  for s in ferretdb rabbitmq redis postgres; do service "$s" down || rc=1; done
  (( rc )) || log "all down"
  exit "$rc"
}

cmd_status() { # cmd_status [PROFILE...] — with profiles: only their lines
  local s rc=0
  if (( $# )); then
    for s in "$@"; do topology "$s" status || rc=3; done
    return "$rc"
  fi
  for s in "${BASE[@]}"; do service "$s" status || rc=3; done
  # the Redis profiles only once created (their state dir exists)
  for s in "${PROFILES[@]}"; do [[ ! -d $STATE/$s ]] || topology "$s" status || rc=3; done
  return "$rc"
}

cmd_env() { # cmd_env [PROFILE]
  local s
  if (( $# > 1 )); then echo "[services] ERROR: env takes at most one profile (they set the same APP__REDIS__MODE)" >&2; exit 2; fi
  for s in "${BASE[@]}"; do service "$s" env; done
  (( $# == 0 )) || topology "$1" env
}

usage() { echo "usage: $0 [up|down|status|env] [redis-cluster|redis-sentinel]   ($0 help)" >&2; exit 2; }

cmd=${1:-up}
(( $# == 0 )) || shift
for prof in "$@"; do
  case $prof in
    redis-cluster|redis-sentinel) ;;
    *) echo "[services] ERROR: unknown profile '$prof' (known: ${PROFILES[*]})" >&2; usage ;;
  esac
done
case $cmd in
  up)     cmd_up "$@" ;;
  down)   cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  env)    cmd_env "$@" ;;
  -h|--help|help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0" ;;
  *)      usage ;;
esac
