#!/usr/bin/env bash
# Checks that every vendored front-end file (assets/vendor/, README there) is byte-for-byte
# the file of its pinned npm package: `scripts/vendor.sh check`. Needs npm and the registry.
set -euo pipefail
cd "$(dirname "$0")/.."
# folder  package@version  file-in-package...
PACKAGES=(
  "htmx.org-2.0.11 htmx.org@2.0.11 dist/htmx.min.js LICENSE"
  "rapidoc-9.3.8 rapidoc@9.3.8 dist/rapidoc-min.js dist/rapidoc-min.js.LICENSE.txt LICENSE.txt"
  "uplot-1.6.32 uplot@1.6.32 dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE"
)
[ "${1:-check}" = check ] || { echo "usage: scripts/vendor.sh check" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
status=0
for entry in "${PACKAGES[@]}"; do
  read -r folder package files <<<"$entry"
  (cd "$work" && npm pack --silent "$package" >/dev/null)
  tgz=$(ls "$work"/*.tgz); mkdir -p "$work/x"; tar xzf "$tgz" -C "$work/x"; rm "$tgz"
  for f in $files; do
    if cmp -s "$work/x/package/$f" "assets/vendor/$folder/$(basename "$f")"; then
      echo "ok      $folder/$(basename "$f")"
    else
      echo "DIFFERS $folder/$(basename "$f") (from $package $f)"; status=1
    fi
  done
  rm -rf "$work/x"
done
exit $status
