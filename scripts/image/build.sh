#!/usr/bin/env bash
# scripts/image/build.sh: builds the top-level Dockerfile.
#   scripts/image/build.sh                    target `runtime` (compiles), tag kh-review:latest
#   scripts/image/build.sh --prebuilt BINARY  target `runtime-prebuilt` from BINARY (no
#                                             compile), tag kh-review:prebuilt
# IMAGE=name:tag overrides the tag; CONFIG_DIR (default config/) is the folder a prebuilt
# image gets as config/: that of the sources the binary was built from. The engine is
# docker when its daemon answers, else podman (installed from Debian when missing:
# scripts/image/tools.sh). With podman and no registry reachable for the Dockerfile's
# default base images, the local ones of scripts/image/base.sh are used; BUILDER_IMAGE /
# RUNTIME_IMAGE in the environment win over both. The host's CA bundle is passed as the
# secret `cacert` (the CA of a TLS-intercepting proxy is in it).
set -euo pipefail
prebuilt=""
if [[ ${1:-} == --prebuilt ]]; then
  prebuilt=$(realpath "${2:?usage: scripts/image/build.sh [--prebuilt BINARY]}")
fi
config_dir=$(realpath "${CONFIG_DIR:-$(dirname "$0")/../../config}")
cd "$(dirname "$0")/../.."

STATE="${KH_IMAGE_STATE:-/var/tmp/kh-review/image}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
log() { echo "[image/build] $*" >&2; }

[[ -z $prebuilt || -x $prebuilt ]] || { log "no executable at $prebuilt"; exit 1; }

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  engine=docker
else
  scripts/image/tools.sh   # podman, buildah, skopeo, mmdebstrap... from Debian, when missing
  engine=podman
  eval "$(scripts/image/podman.sh)"
fi

# Base images: the environment's, else the Dockerfile's defaults when reachable, else local.
args=()
if [[ $engine != docker && -z ${BUILDER_IMAGE:-}${RUNTIME_IMAGE:-} ]]; then
  default_runtime=$(sed -n 's/^ARG RUNTIME_IMAGE=//p' Dockerfile)
  if ! timeout 60 skopeo inspect --retry-times 0 "docker://$default_runtime" >/dev/null 2>&1; then
    log "$default_runtime is not reachable: local base images (scripts/image/base.sh)"
    which=(runtime builder)
    [[ -n $prebuilt ]] && which=(runtime)
    bases=$(scripts/image/base.sh "${which[@]}")
    for kv in $bases; do export "${kv?}"; done
  fi
fi
[[ -n ${BUILDER_IMAGE:-} ]] && args+=(--build-arg "BUILDER_IMAGE=$BUILDER_IMAGE")
[[ -n ${RUNTIME_IMAGE:-} ]] && args+=(--build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE")
[[ -s $CA_BUNDLE ]] && args+=(--secret "id=cacert,src=$CA_BUNDLE")

if [[ -n $prebuilt ]]; then
  # A context of its own: the binary and config/, nothing else (no .dockerignore needed).
  image=${IMAGE:-kh-review:prebuilt}
  mkdir -p "$STATE"
  context=$(mktemp -d "$STATE/prebuilt-context.XXXXXX")
  trap 'rm -rf "$context"' EXIT
  cp -r "$config_dir" "$context/config"
  # The debug binary's line tables are of no use in an image (stripped: 79 MB -> 55 MB).
  strip --strip-debug -o "$context/kh-review" "$prebuilt" 2>/dev/null || cp "$prebuilt" "$context/kh-review"
  args+=(--target runtime-prebuilt -f "$PWD/Dockerfile" "$context")
else
  image=${IMAGE:-kh-review:latest}
  args+=(--target runtime -f "$PWD/Dockerfile" .)
fi

start=$SECONDS
case $engine in
  docker) DOCKER_BUILDKIT=1 docker build -t "$image" "${args[@]}" ;;
  # chroot isolation: RUN steps need no container runtime; docker format keeps HEALTHCHECK.
  podman) podman build --format docker --layers --isolation=chroot --network=host -t "$image" "${args[@]}" ;;
esac
size=$($engine image inspect --format '{{.Size}}' "$image" 2>/dev/null || echo 0)
log "$image built by $engine in $((SECONDS - start)) s, $((size / 1000000)) MB"
