#!/usr/bin/env bash
# scripts/sqlx.sh: compile-time checked SQL (sqlx query! macros) and its offline data.
#
#   scripts/sqlx.sh install   install the pinned sqlx-cli if missing (idempotent)
#   scripts/sqlx.sh prepare   rebuild the schema database from migrations/ and write .sqlx/
#                             (run after changing a query or a migration; commit .sqlx/)
#   scripts/sqlx.sh check     fail if .sqlx/ does not match the queries and the migrations
#
# Builds use .sqlx/ (SQLX_OFFLINE=true in .cargo/config.toml) and need no database.
# prepare and check compile against a database of their own, `kh_review_sqlx` on the
# server that scripts/services.sh runs (or KH_DATABASE_URL), recreated from migrations/
# each time, so that the data always matches the committed schema. (KH_TEST_TAG, when set,
# is appended to that name, so that checkouts side by side do not share it.)
set -euo pipefail
cd "$(dirname "$0")/.."

SQLX_CLI_VERSION=0.8.6   # the sqlx version in Cargo.lock
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
SQLX="$TOOLS/bin/sqlx"

log() { printf '[sqlx] %s\n' "$*"; }

install() {
  if [[ -x "$SQLX" ]] && "$SQLX" --version 2>/dev/null | grep -q " $SQLX_CLI_VERSION\$"; then
    return
  fi
  log "installing sqlx-cli $SQLX_CLI_VERSION into $TOOLS (a few minutes, once per machine)"
  CARGO_TARGET_DIR="$TOOLS/target" cargo install sqlx-cli --version "$SQLX_CLI_VERSION" \
    --locked --no-default-features --features postgres,rustls --root "$TOOLS" --quiet
}

schema_database() {
  eval "$(scripts/services.sh env)"
  local base="${APP__DATABASE__URL%/*}"
  export DATABASE_URL="$base/kh_review_sqlx${KH_TEST_TAG:-}"
  "$SQLX" database drop -y >/dev/null
  "$SQLX" database create
  "$SQLX" migrate run --source migrations >/dev/null
}

case "${1:-check}" in
  install) install ;;
  prepare)
    install; schema_database
    PATH="$TOOLS/bin:$PATH" cargo sqlx prepare
    ;;
  check)
    install; schema_database
    if ! PATH="$TOOLS/bin:$PATH" cargo sqlx prepare --check; then
      echo "[sqlx] .sqlx/ is stale: run scripts/sqlx.sh prepare (or make sqlx-prepare) and commit .sqlx/" >&2
      exit 1
    fi
    ;;
  *) echo "usage: $0 install|prepare|check" >&2; exit 2 ;;
esac
