#!/usr/bin/env bash
# scripts/bench_peer.sh: `make bench-peer`, kh-review side by side with a plain Python build of
# its seed design (benches/peer/app.py), on the same stores, under the same wrk load of
# approvals (benches/bench_support/peer.rs says how). Installs wrk (a Debian package) and
# the peer's virtualenv (scripts/peer_venv.sh) once; expects the services up (make services).
# KH_BENCH_SMOKE=1: one tiny round on the debug build, no measurement (make bench-smoke runs it).
# --install-only: wrk and the virtualenv, nothing run (scripts/tools.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib/apt.sh
source scripts/lib/apt.sh
command -v wrk >/dev/null 2>&1 || quiet_apt_install wrk
KH_PEER_PYTHON="$(scripts/peer_venv.sh)"
[[ ${1:-} == --install-only ]] && exit 0
export KH_PEER_PYTHON KH_BENCH_ONLY=peer
eval "$(scripts/services.sh env)"
if [[ -n ${KH_BENCH_SMOKE:-} ]]; then
  exec cargo test --bench review
fi
cargo build --release --bin kh-review
exec cargo bench --bench review
