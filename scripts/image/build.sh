#!/usr/bin/env bash
# scripts/image/build.sh: builds the top-level Dockerfile.
#   scripts/image/build.sh                    target `runtime` (compiles), tag kh-review:latest
#   scripts/image/build.sh --prebuilt BINARY  target `runtime-prebuilt` from BINARY (no
#                                             compile), tag kh-review:prebuilt
# IMAGE=name:tag overrides the tag; CONFIG_DIR (default config/) is the folder a prebuilt
# image gets as config/: the one of the sources the binary was built from. The engine is docker when its daemon answers, else
# podman, else buildah. With podman or buildah and no reachable registry for the
# Dockerfile's default base images, the local ones of scripts/image/base.sh are used;
# BUILDER_IMAGE / RUNTIME_IMAGE in the environment win over both. The host's CA bundle is
# passed as the secret `cacert` (a TLS-intercepting proxy's CA is in it).
set -euo pipefail
cd "$(dirname "$0")/../.."

STATE="${KH_IMAGE_STATE:-/var/tmp/kh-review/image}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
log() { echo "[image/build] $*" >&2; }

prebuilt=""
if [[ ${1:-} == --prebuilt ]]; then
  prebuilt=${2:?usage: scripts/image/build.sh [--prebuilt BINARY]}
  [[ -x $prebuilt ]] || { log "no executable at $prebuilt"; exit 1; }
fi

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  engine=docker
elif command -v podman >/dev/null; then
  engine=podman
  eval "$(scripts/image/podman.sh)"
elif command -v buildah >/dev/null; then
  engine=buildah
else
  log "no docker daemon, podman or buildah (apt-get install podman buildah)"
  exit 1
fi

# Base images: the environment's, else the Dockerfile's defaults when reachable, else local.
args=()
if [[ $engine != docker && -z ${BUILDER_IMAGE:-}${RUNTIME_IMAGE:-} ]]; then
  default_runtime=$(sed -n 's/^ARG RUNTIME_IMAGE=//p' Dockerfile)
  if ! timeout 60 skopeo inspect --retry-times 0 "docker://$default_runtime" >/dev/null 2>&1; then
    log "$default_runtime is not reachable: local base images (scripts/image/base.sh)"
    which=(runtime builder)
    [[ -n $prebuilt ]] && which=(runtime)
    while IFS= read -r kv; do export "${kv?}"; done < <(scripts/image/base.sh "${which[@]}")
  fi
fi
[[ -n ${BUILDER_IMAGE:-} ]] && args+=(--build-arg "BUILDER_IMAGE=$BUILDER_IMAGE")
[[ -n ${RUNTIME_IMAGE:-} ]] && args+=(--build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE")
[[ -s $CA_BUNDLE ]] && args+=(--secret "id=cacert,src=$CA_BUNDLE")

if [[ -n $prebuilt ]]; then
  # A context of its own: the binary and config/, nothing else (no .dockerignore needed).
  image=${IMAGE:-kh-review:prebuilt}
  context="$STATE/prebuilt-context"
  rm -rf "$context" && mkdir -p "$context/config"
  cp -r "${CONFIG_DIR:-config}/." "$context/config"
  # The debug binary's line tables are of no use in an image: stripped, it is a fraction.
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
  buildah) buildah build --format docker --layers --isolation=chroot --network=host -t "$image" "${args[@]}" ;;
esac
size=$($engine image inspect --format '{{.Size}}' "$image" 2>/dev/null || echo 0)
log "$image built by $engine in $((SECONDS - start)) s, $((size / 1000000)) MB"
