#!/usr/bin/env bash
# scripts/topologies/load-balancer.sh — HAProxy for the rolling-upgrade test
# (tests/api/topologies/upgrade.rs). The test writes its own configuration (its instances'
# ports are its own) and runs HAProxy as its child on 127.0.0.1, so this profile only makes
# sure Debian's haproxy is installed: nothing runs between tests.
set -euo pipefail

installed() { command -v haproxy >/dev/null 2>&1; }

case ${1:-} in
  packages) installed || echo haproxy ;;
  up)       installed || { echo "load-balancer: haproxy is not installed" >&2; exit 1; } ;;
  down)     ;;
  status)   if installed; then echo "load-balancer: $(haproxy -v | head -1) (started by the test that needs it)"
            else echo "load-balancer: haproxy not installed"; exit 3; fi ;;
  env)      ;;
  *)        echo "usage: $0 packages|up|down|status|env" >&2; exit 2 ;;
esac
