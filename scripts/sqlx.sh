#!/usr/bin/env bash
# scripts/sqlx.sh: the offline data of the compile-time checked SQL (sqlx `query!` macros).
#
#   scripts/sqlx.sh prepare            rewrite .sqlx/ from the queries and migrations/
#                                      (after changing a query or a migration; commit .sqlx/)
#   scripts/sqlx.sh check [CMD...]     run CMD (default: cargo check --workspace --all-targets) with every
#                                      query checked against the schema, then fail unless
#                                      .sqlx/ holds exactly the data that build wrote
#
# Builds read .sqlx/ (SQLX_OFFLINE=true in .cargo/config.toml) and need no database. A build
# with SQLX_OFFLINE=false checks each query against DATABASE_URL instead, and with
# SQLX_OFFLINE_DIR set it writes each query's data there: that is all `cargo sqlx prepare`
# does, so no sqlx-cli is needed, and `make lint` gets the data from the clippy build it
# runs anyway. The schema is a database of its own, `kh_review_sqlx` (plus KH_TEST_TAG, so
# checkouts side by side do not share it) on the server scripts/services.sh runs (or
# KH_DATABASE_URL), made afresh from migrations/ each time.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[sqlx] %s\n' "$*" >&2; }

# Prints the URL of a fresh schema database with every migration applied.
schema_database() {
  eval "$(scripts/services.sh env)"
  local base="${APP__DATABASE__URL%/*}" name="kh_review_sqlx${KH_TEST_TAG:-}"
  psql -q -X -v ON_ERROR_STOP=1 "$base/postgres" \
    -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" -c "CREATE DATABASE \"$name\"" >&2
  local file
  for file in migrations/*.sql; do
    # As sqlx applies them: in one transaction unless the file opts out.
    if head -n 1 "$file" | grep -q '^-- no-transaction'; then
      psql -q -X -v ON_ERROR_STOP=1 -o /dev/null "$base/$name" -f "$file"
    else
      psql -q -X -v ON_ERROR_STOP=1 -o /dev/null --single-transaction "$base/$name" -f "$file"
    fi
  done
  echo "$base/$name"
}

# Runs "$@" with the queries checked online and their data written to the folder $1 is
# followed by. The store's files are touched first: a build that has nothing to recompile
# expands no macro and would write no data.
build_online() {
  local out="$1" url
  shift
  url=$(schema_database)
  touch src/store/mod.rs
  SQLX_OFFLINE=false DATABASE_URL="$url" SQLX_OFFLINE_DIR="$out" "$@"
}

# Whether the query files of folder $1 and of folder $2 are the same set with the same JSON.
same_data() {
  python3 - "$1" "$2" <<'PY'
import json, pathlib, sys
a, b = (pathlib.Path(p) for p in sys.argv[1:3])
files = lambda d: {p.name for p in d.glob("query-*.json")}
if files(a) != files(b):
    print(f"[sqlx] queries without data: {sorted(files(a) - files(b))}; "
          f"data of no query: {sorted(files(b) - files(a))}", file=sys.stderr)
    sys.exit(1)
for name in sorted(files(a)):
    if json.loads((a / name).read_text()) != json.loads((b / name).read_text()):
        print(f"[sqlx] {name} differs", file=sys.stderr)
        sys.exit(1)
PY
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case "${1:-check}" in
  prepare)
    build_online "$out" cargo check --workspace --all-targets --quiet
    rm -f .sqlx/query-*.json
    mkdir -p .sqlx
    cp "$out"/query-*.json .sqlx/
    log "wrote $(ls .sqlx | wc -l) query files to .sqlx/"
    ;;
  check)
    shift || true
    [[ $# -gt 0 ]] || set -- cargo check --workspace --all-targets --quiet
    build_online "$out" "$@"
    if ! same_data "$out" .sqlx; then
      log ".sqlx/ is stale: run scripts/sqlx.sh prepare (or make sqlx-prepare) and commit .sqlx/"
      exit 1
    fi
    log ".sqlx/ matches the $(ls "$out" | wc -l) queries and the migrations"
    ;;
  *) echo "usage: $0 prepare | check [CMD...]" >&2; exit 2 ;;
esac
