#!/usr/bin/env bash
# scripts/tools.sh — installs, and starts nothing, what the phases after the build need:
# the topologies' Debian packages (Patroni, etcd, HAProxy, Redis Sentinel), Chromium and
# chromedriver (the page tests), podman and mmdebstrap with the local base images (the
# image test), wrk and the benchmark peer's virtualenv (make bench-smoke), the Python
# virtualenvs of the event-consumer test and of the fuzzer, and cargo-deny (make deps,
# which make lint runs after its build).
# Each piece is the script that would otherwise install it on first use, so this only does
# it earlier; a second run does nothing. .ci/run runs it while the build compiles: nearly
# all of it is downloading and unpacking, which the compiler's two cores leave room for.
# Three lanes side by side (Debian's packages one after the other, as dpkg takes one at a
# time; the virtualenvs; cargo-deny); every step's log goes to $KH_STATE_DIR/tools/, and
# a failed step prints its log and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
LOGS="${KH_STATE_DIR:-/var/tmp/kh-review}/tools"
mkdir -p "$LOGS"

step() {   # step NAME CMD...: runs CMD, its output in $LOGS/NAME.log
  local name=$1 from=$SECONDS
  shift
  if "$@" >"$LOGS/$name.log" 2>&1; then
    echo "[tools] $name ready in $((SECONDS - from)) s"
  else
    echo "[tools] ERROR: $name failed after $((SECONDS - from)) s; its log ($LOGS/$name.log):" >&2
    tail -n 30 "$LOGS/$name.log" >&2
    return 1
  fi
}

debian() {
  step topologies scripts/services.sh install
  step browser scripts/browser.sh
  step image-tools scripts/image/tools.sh
  # wrk and the peer's virtualenv (make bench-smoke runs the peer once).
  step bench-peer scripts/bench_peer.sh --install-only
  # The runtime base image that `make test-image` puts the tested binary in.
  step base-image bash -c 'eval "$(scripts/image/podman.sh)" && scripts/image/base.sh runtime'
}

# cargo-deny (make deps) builds from its crate: CPU, so below the lint build in priority.
cargo_deny() {
  step cargo-deny nice -n 19 scripts/deny.sh --install-only
}

virtualenvs() {
  step events-venv scripts/events_venv.sh
  step fuzz-venv scripts/fuzz.sh --install-only
}

debian & apt_lane=$!
virtualenvs & py_lane=$!
cargo_deny & deny_lane=$!
rc=0
wait "$apt_lane" || rc=1
wait "$py_lane" || rc=1
wait "$deny_lane" || rc=1
exit "$rc"
