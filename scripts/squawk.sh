#!/usr/bin/env bash
# scripts/squawk.sh — lints every migration with squawk (squawk-cli, pinned, from PyPI, in a
# virtualenv under ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}) for what breaks a rolling
# upgrade: locks taken without a lock_timeout, blocking index builds, constraints validated
# under a write lock, drops and renames. `make lint` runs it.
#
# Off for every file, with the reason: prefer-bigint-over-int, prefer-bigint-over-smallint,
# prefer-identity (column style, not downtime), require-statement-timeout (the migrator runs
# with statement_timeout 0 on purpose: an index build must finish, src/store/pg.rs).
# A file's own accepted findings: scripts/squawk/accepted.txt (landed migrations only).
# sqlx runs a migration in a transaction unless its first line is `-- no-transaction`.
set -euo pipefail
cd "$(dirname "$0")/.."

SQUAWK_VERSION=2.70.0
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
VENV="$TOOLS/squawk-venv"
OFF=prefer-bigint-over-int,prefer-bigint-over-smallint,prefer-identity,require-statement-timeout

mkdir -p "$TOOLS"
exec 9>"$TOOLS/.squawk-venv.lock"
flock 9
if [[ "$(cat "$VENV/.kh-installed" 2>/dev/null)" != "$SQUAWK_VERSION" ]]; then
  echo "[squawk] installing squawk-cli $SQUAWK_VERSION into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "squawk-cli==$SQUAWK_VERSION"
  echo "$SQUAWK_VERSION" >"$VENV/.kh-installed"
fi
exec 9>&-

failed=0 checked=0
for file in migrations/*.sql; do
  name=$(basename "$file")
  accepted=$(awk -v f="$name" '$1 == f {print $2}' scripts/squawk/accepted.txt)
  args=(--pg-version=15 --exclude="$OFF${accepted:+,$accepted}")
  head -n1 "$file" | grep -q -- '-- no-transaction' || args+=(--assume-in-transaction)
  checked=$((checked + 1))
  out=$("$VENV/bin/squawk" "${args[@]}" "$file" 2>&1) || { failed=1; printf "%s\n" "$out"; }
done
if (( failed )); then
  echo "[squawk] FAILED: a migration does what a rolling upgrade cannot take (above); fix it (docs/operations.md, \"Migrations\")" >&2
  exit 1
fi
echo "[squawk] $checked migrations checked, no new finding"
