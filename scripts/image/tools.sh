#!/usr/bin/env bash
# scripts/image/tools.sh: installs from Debian's packages what building and running the
# image takes where there is no Docker daemon (podman, crun, skopeo, mmdebstrap, ...) and
# what scripts/image/test.sh uses (jq, curl), once: a second run does nothing.
set -euo pipefail

PACKAGES=(podman buildah skopeo mmdebstrap crun catatonit uidmap fuse-overlayfs slirp4netns
  containernetworking-plugins jq curl)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0

if [[ ${EUID} -eq 0 ]]; then ROOT_CMD=(); else ROOT_CMD=(sudo); fi
echo "[image/tools] apt-get install ${missing[*]}" >&2
"${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
"${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
  install -y -q --no-install-recommends "${missing[@]}" >/dev/null
