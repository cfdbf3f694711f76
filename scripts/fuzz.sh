#!/usr/bin/env bash
# scripts/fuzz.sh: schema-driven fuzzing of the HTTP API (`make fuzz`, called by .ci/run).
#
# Starts `kh-review serve` (debug build) on a fresh database of its own, seeds a few
# documents and reviews, and runs the property-based fuzzer schemathesis against the
# service's own /openapi.json, once per role (author, reviewer, admin: a token of that role
# on every request). Every operation the description lists is fuzzed, so endpoints added
# later are covered without editing this script. Every check schemathesis has (--checks all):
# no 5xx; each status, content type, header and body as the operation documents; a request
# the schema refuses is refused (negative_data_rejection, which counts a 413 as a refusal:
# a body too long for its fields is too large too) and one it allows is accepted. That last
# one runs as positive_data_acceptance_but_state (scripts/fuzz_hooks.py): the same check, less
# the refusals a schema cannot express, each named there with its reason (a reused
# Idempotency-Key, a /reviews cursor naming no review, a body schemathesis mislabels).
# Any failure fails the run (exit 1) with schemathesis's report and the server's log.
#
#   FUZZ_EXAMPLES   test cases per operation and phase (default 30; raise it for a longer run)
#   FUZZ_SEED       a seed schemathesis printed, to replay a run
#   FUZZ_ROLES      the roles to run as (default "author reviewer admin")
#   FUZZ_REPORT_DIR keep each role's requests and responses there (<role>.har; default: a
#                   temporary directory, deleted at the end)
# Arguments are passed on to `st run` (after the ones above): e.g. `--include-path-regex
# reviews` to fuzz some operations only. `scripts/fuzz.sh --install-only` installs the
# virtualenv and stops (scripts/tools.sh).
#
# schemathesis is installed (pinned) into a virtualenv under ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools},
# outside the clone so fresh clones reuse it; the services come from scripts/services.sh. Its
# stores are its own: database kh_review_fuzz<KH_TEST_TAG> (dropped and created anew each
# run, dropped at the end), Redis key prefix kh-fuzz<tag>:, MongoDB database
# kh_review_fuzz<tag>, AMQP exchange kh.fuzz<tag>.events.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
PYMONGO_VERSION=4.15.4    # drops the run's MongoDB database at the end
EXAMPLES="${FUZZ_EXAMPLES:-30}"
ROLES="${FUZZ_ROLES:-author reviewer admin}"
READY_DEADLINE=60
TAG="${KH_TEST_TAG:-}"
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="$TARGET/debug/kh-review"

log() { printf '[fuzz] %s (%ss)\n' "$*" "$SECONDS"; }

# --- the virtualenv -------------------------------------------------------------------------

# shellcheck source=scripts/lib/venv.sh
source scripts/lib/venv.sh
# In a subshell (command substitution): its install lock is not held for the whole run.
PY="$(pinned_venv fuzz-venv "schemathesis==$SCHEMATHESIS_VERSION pymongo==$PYMONGO_VERSION")"
[[ ${1:-} != --install-only ]] || exit 0

# --- the service ----------------------------------------------------------------------------

# The debug binary: every build of the workspace resolves one feature set
# (tools/workspace-hack), so after `make test` this builds nothing.
log "building the debug binary"
cargo build --quiet --bin kh-review
eval "$(scripts/services.sh env)"

WORK=$(mktemp -d /tmp/kh-fuzz.XXXXXX)
DB_NAME="kh_review_fuzz${TAG}"
DB_URL="${APP__DATABASE__URL%/*}/$DB_NAME"
SERVICE_DB_URL="${KH_SERVICE_DATABASE_URL%/*}/$DB_NAME"
ADMIN_URL="${APP__DATABASE__URL%/*}/postgres"
MONGO_DB="kh_review_fuzz${TAG}"
REDIS_PREFIX="kh-fuzz${TAG}:"
SERVER_PID=""

cleanup() {
  local rc=$?
  if [[ -n $SERVER_PID ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
  "$PY" - "$APP__MONGO__URL" "$MONGO_DB" <<'EOF' >/dev/null 2>&1 || true
import sys, pymongo
pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=3000).drop_database(sys.argv[2])
EOF
  redis-cli -u "$APP__REDIS__URL" --scan --pattern "${REDIS_PREFIX}*" 2>/dev/null |
    xargs -r redis-cli -u "$APP__REDIS__URL" del >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT

PGOPTIONS="-c client_min_messages=warning" psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" -c "CREATE DATABASE $DB_NAME" >/dev/null
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"

# The environment of the server and of `kh-review token`. Development explicitly: tokens are
# only minted there (whatever the built-in default). serve migrates the new database on start.
export APP_CONFIG_DIR="$PWD/config" APP__ENVIRONMENT=development APP__SERVER__PORT="$PORT" \
  APP__DATABASE__URL="$SERVICE_DB_URL" APP__DATABASE__MIGRATE_URL="$DB_URL" \
  APP__REDIS__KEY_PREFIX="$REDIS_PREFIX" \
  APP__MONGO__DATABASE="$MONGO_DB" APP__AMQP__EXCHANGE="kh.fuzz${TAG}.events" \
  APP__AMQP__BIND_QUEUE="" APP__LOG__LEVEL=error APP__LOG__FORMAT=json

log "starting kh-review serve on $BASE"
"$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
deadline=$((SECONDS + READY_DEADLINE))
until curl -fs -o /dev/null "$BASE/readyz"; do
  if ! kill -0 "$SERVER_PID" 2>/dev/null || ((SECONDS > deadline)); then
    echo "[fuzz] ERROR: the server did not get ready within ${READY_DEADLINE}s; its log:" >&2
    tail -n 50 "$WORK/server.log" >&2
    exit 1
  fi
  sleep 0.2
done

token() { "$BIN" token "fuzz-$1" --roles "$1" --ttl-secs 7200; }
declare -A TOKENS
for role in author reviewer admin; do TOKENS[$role]=$(token "$role"); done

# --- seed data ------------------------------------------------------------------------------

# call METHOD PATH ROLE [BODY]: prints the response body; fails on a non-2xx answer.
call() {
  curl -fsS -X "$1" "$BASE$2" -H "Authorization: Bearer ${TOKENS[$3]}" \
    -H 'Content-Type: application/json' ${4:+--data "$4"}
}
field() { "$PY" -c 'import json, sys; v = json.load(sys.stdin)
for k in sys.argv[1:]: v = v[k]
print(v)' "$@"; }

# Documents in every state and reviews pending, approved and rejected, so that the fuzzer
# reaches past the 404s: their ids are offered for every `id` path parameter (half the time;
# the other half stays random). Seeded again before each role's run, since a run decides the
# pending reviews it finds.
seed() {
  local ids=() doc review i
  for i in 1 2 3 4 5 6; do
    doc=$(call POST /api/v1/documents author "{\"title\":\"fuzz seed $i\",\"body\":\"seed body $i\"}" | field id)
    ids+=("$doc")
    ((i > 1)) || continue
    review=$(call POST "/api/v1/documents/$doc/submit" author | field review id)
    ids+=("$review")
    case $i in
      2) call POST "/api/v1/reviews/$review/approve" reviewer '{"comment":"fine"}' >/dev/null ;;
      3) call POST "/api/v1/reviews/$review/reject" reviewer '{"reason":"not yet"}' >/dev/null ;;
    esac
  done
  printf '"%s"\n' "${ids[@]}" >"$WORK/ids.dict"
}

# --- the runs -------------------------------------------------------------------------------

cat >"$WORK/schemathesis.toml" <<'EOF'
[dictionaries.seeded]
from-file = "ids.dict"

[parameters]
"path.id" = { dictionary = "seeded", probability = 0.5 }

# A body over server.json_limit_bytes is refused with 413: for a request the schema refuses
# (a field past its maxLength, sent long enough) that is a refusal like 400 and 422.
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
EOF

HOOKS="$PWD/scripts/fuzz_hooks.py"
curl -fsS -o "$WORK/openapi.json" "$BASE/openapi.json"
HARS="${FUZZ_REPORT_DIR:-$WORK}"
mkdir -p "$HARS"
# One worker: with two, hypothesis (inside schemathesis) parses source code from two threads
# at once, and the Python 3.11 of some machines then fails with "SystemError: AST
# constructor recursion depth mismatch" (CPython gh-106905), an error of the tool, not of
# the service. With one, a role takes 10 to 20 s at 30 examples.
failed=()
for role in $ROLES; do
  seed
  log "fuzzing $BASE/openapi.json as $role ($EXAMPLES examples per operation)"
  # From $WORK: schemathesis keeps a cache (.schemathesis/) in the current directory.
  # positive_data_acceptance runs as positive_data_acceptance_but_state, and
  # ensure_resource_availability as ensure_resource_availability_but_unpublished (the hooks).
  if ! (cd "$WORK" && SCHEMATHESIS_HOOKS="$HOOKS" "$(dirname "$PY")/st" --config-file "$WORK/schemathesis.toml" \
      run "$BASE/openapi.json" --checks all --exclude-checks positive_data_acceptance,ensure_resource_availability \
      --max-examples "$EXAMPLES" ${FUZZ_SEED:+--seed "$FUZZ_SEED"} \
      --header "Authorization: Bearer ${TOKENS[$role]}" \
      --generation-database none --workers 1 --no-color \
      --report har --report-har-path "$HARS/$role.har" "$@"); then
    failed+=("$role")
  fi
  "$PY" scripts/fuzz_statuses.py "$WORK/openapi.json" "$HARS/$role.har" || failed+=("$role (statuses)")
done

if ((${#failed[@]})); then
  echo "[fuzz] FAILED as: ${failed[*]}; the server's warnings and errors:" >&2
  tail -n 40 "$WORK/server.log" >&2
  exit 1
fi
log "no failures"
