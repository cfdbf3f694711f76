#!/usr/bin/env bash
# scripts/asyncapi.sh [FILE]: validates an AsyncAPI document (default docs/asyncapi.json, the
# one the service serves with the default configuration) with the official AsyncAPI parser,
# offline (`make lint` runs it). A document the parser reports any error or warning in fails.
#
# The parser (@asyncapi/parser, pinned with its whole tree in tools/asyncapi/package-lock.json, npm's generated lockfile)
# is installed with `npm ci` into ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}/asyncapi-parser,
# outside the clone so fresh clones reuse it: once per lock file, one install at a time.
# Needs node and npm (Debian's `nodejs` and `npm` are installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

FILE="${1:-docs/asyncapi.json}"
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
DIR="$TOOLS/asyncapi-parser"
LOCK=tools/asyncapi/package-lock.json

if [[ ${EUID} -eq 0 ]]; then ROOT_CMD=(); else ROOT_CMD=(sudo); fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "[asyncapi] apt-get install nodejs npm" >&2
  "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q --no-install-recommends nodejs npm >/dev/null
fi

want="$(sha256sum "$LOCK" | cut -d' ' -f1)"
mkdir -p "$TOOLS"
exec 9>"$TOOLS/.asyncapi-parser.lock"
flock 9
if [[ "$(cat "$DIR/.kh-installed" 2>/dev/null)" != "$want" ]]; then
  echo "[asyncapi] installing the parser into $DIR (once per lock file)" >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp tools/asyncapi/package.json "$LOCK" "$DIR/"
  (cd "$DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
  printf '%s' "$want" >"$DIR/.kh-installed"
fi
exec 9>&-

NODE_PATH="$DIR/node_modules" node scripts/asyncapi/validate.cjs "$FILE"
