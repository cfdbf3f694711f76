#!/usr/bin/env bash
# scripts/upgrade_from.sh REV — builds the kh-review binary of git revision REV in a worktree
# under /var/tmp/kh-review-upgrade/REV (with a target folder of its own, so this clone's
# build is not touched), copies it to bin/ there, and prints the worktree's path: the first
# generation of `make test-upgrade FROM=REV` runs that binary with that worktree's config/.
# Idempotent: a second call with the same revision reuses the build.
set -euo pipefail
rev=$(git rev-parse --verify "${1:?usage: $0 REV}^{commit}")
root=/var/tmp/kh-review-upgrade
tree=$root/$rev
mkdir -p "$root"
if [[ ! -d $tree ]]; then
  git worktree add --detach "$tree" "$rev" >&2
fi
echo "[upgrade-from] building ${rev:0:12} in $tree (log: $root/$rev.log)" >&2
(cd "$tree" && CARGO_TARGET_DIR=$root/target cargo build --bin kh-review) >"$root/$rev.log" 2>&1 \
  || { tail -20 "$root/$rev.log" >&2; exit 1; }
mkdir -p "$tree/bin"
cp "$root/target/debug/kh-review" "$tree/bin/kh-review"
echo "$tree"
