#!/usr/bin/env bash
# scripts/test.sh — `make test`: every group of tests/api/ and the unit tests, in two lanes
# side by side, on one build made first.
#
#   lane 1: the topology tests (make test-topologies), one at a time: their own servers on
#           their own loopback ports (scripts/topologies/), mostly waiting on failovers
#   lane 2: the unit tests and the parallel run, then the volume tests, then the page tests
#
# The lanes share nothing but the base services (each test its own databases, queues and
# keys) and the two cores, so the topology tests run under the others' load: a failover
# that holds only on a quiet machine fails here. Lane 1's output is kept in a file and
# printed after lane 2's, so neither interleaves; the run fails if either lane fails.
set -euo pipefail
cd "$(dirname "$0")/.."
make_() { make --no-print-directory "$@"; }

started=$SECONDS
# One build before the lanes start (they would otherwise wait on each other's cargo lock).
cargo build --example consumer
cargo test --lib --test api --no-run
scripts/events_venv.sh >/dev/null
scripts/browser.sh

log="${CARGO_TARGET_DIR:-target}/test-topologies.log"
mkdir -p "$(dirname "$log")"
( make_ test-topologies >"$log" 2>&1 ) &
topologies=$!

rc=0
{ make_ test-parallel && make_ test-volume && make_ test-ui; } || rc=$?
lane2=$SECONDS
trc=0
wait "$topologies" || trc=$?
echo "== the topology lane (make test-topologies), run beside the others:"
cat "$log"
echo "== make test: lanes took $((lane2 - started)) s (unit, parallel, volume, pages) and" \
  "$((SECONDS - started)) s (to the end of the topologies)"
if ((rc != 0 || trc != 0)); then
  echo "make test FAILED: lane of the other groups rc=$rc, topology lane rc=$trc" >&2
  exit 1
fi
