#!/usr/bin/env bash
# scripts/image/compose_config.sh: validates docker-compose.yml (or the file named) with
# compose-go, the loader `docker compose config` uses (scripts/image/compose-config/, built
# with the machine's Go from the pinned module; the first run downloads and compiles it, a
# few seconds). Neither a Docker engine nor a compose plugin is needed. Debian's own tools
# cannot: podman-compose 1.0.3 has no `config` command, and docker-compose 1.29 rejects the
# top-level `name` and `configs.*.content` that the Compose Specification allows.
set -euo pipefail
cd "$(dirname "$0")/../.."
file=$(realpath "${1:-docker-compose.yml}")
command -v go >/dev/null || { echo "[image/compose-config] no go on PATH (Go 1.24+ needed)" >&2; exit 1; }
cd scripts/image/compose-config
GOTOOLCHAIN=local exec go run . "$file"
