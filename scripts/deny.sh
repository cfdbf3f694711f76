#!/usr/bin/env bash
# scripts/deny.sh — cargo-deny's licence, ban and source checks of the dependency tree
# (deny.toml says what each allows; docs/development.md, "Dependencies"). Advisories are
# not checked: no advisory database can be fetched on these machines.
#
#   scripts/deny.sh                 install cargo-deny when missing, then check
#   scripts/deny.sh --install-only  install it and stop (scripts/tools.sh, while CI compiles)
#
# cargo-deny is built from its crate (pinned, --locked) into ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}
# once per machine, outside the clone so fresh clones reuse it: about 3 CPU-minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.20.2
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
ROOT="$TOOLS/cargo-deny"
BIN="$ROOT/bin/cargo-deny"

log() { printf '[deny] %s\n' "$*" >&2; }

install() {
  mkdir -p "$TOOLS"
  # One install at a time: checkouts side by side, and CI's tools lane, share it.
  exec 9>"$TOOLS/.cargo-deny.lock"
  flock 9
  if [[ -x $BIN && "$("$BIN" --version 2>/dev/null)" == "cargo-deny $VERSION" ]]; then
    exec 9>&-
    return
  fi
  local from=$SECONDS build="$TOOLS/cargo-deny-build"
  log "building cargo-deny $VERSION into $ROOT (once per machine)"
  # Its own target folder and no workspace wrapper: a tool, not a crate of this workspace.
  env -u RUSTC_WORKSPACE_WRAPPER CARGO_TARGET_DIR="$build" \
    cargo install --quiet --locked --force "cargo-deny@$VERSION" --root "$ROOT"
  rm -rf "$build"
  log "built in $((SECONDS - from)) s"
  exec 9>&-
}

install
[[ ${1:-} != --install-only ]] || exit 0
"$BIN" --offline check licenses bans sources
