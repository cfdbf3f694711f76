#!/usr/bin/env bash
# scripts/browser.sh — the headless browser of the page tests (`make test-ui`): Debian's
# chromium and chromium-driver (chromedriver), installed when missing; idempotent. Prints
# their versions. Meant for Debian/Ubuntu dev boxes and CI containers; run as root (or with
# sudo available), like scripts/services.sh.
set -euo pipefail

PACKAGES=(chromium chromium-driver)
BINARIES=(/usr/lib/chromium/chromium /usr/bin/chromedriver)

if [[ ${EUID} -eq 0 ]]; then ROOT_CMD=(); else ROOT_CMD=(sudo); fi

missing() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x $b ]] || return 0; done
  return 1
}

if missing; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[browser] ERROR: apt-get not found; install ${PACKAGES[*]} by hand" >&2
    exit 1
  fi
  log=$(mktemp /tmp/kh-review-browser-apt.XXXXXX)
  echo "[browser] installing ${PACKAGES[*]} (log: $log)"
  { "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${PACKAGES[@]}"
  } >>"$log" 2>&1 || { echo "[browser] ERROR: apt-get failed, see $log" >&2; exit 1; }
fi
if missing; then
  echo "[browser] ERROR: ${BINARIES[*]} still missing after installing ${PACKAGES[*]}" >&2
  exit 1
fi
# Debian's /usr/bin/chromium wrapper prints shell noise; the real binary answers --version.
echo "[browser] $(/usr/lib/chromium/chromium --version 2>/dev/null)"
echo "[browser] $(/usr/bin/chromedriver --version 2>/dev/null | cut -d' ' -f1-2)"
