#!/usr/bin/env bash
# scripts/peer_venv.sh: the Python virtualenv of the benchmark peer (make bench-peer runs
# benches/peer/app.py in it): FastAPI on uvicorn with uvloop and httptools, asyncpg, redis,
# pymongo (its async API), aio-pika and PyJWT, pinned, in
# ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}/peer-venv, outside the clone so fresh clones
# reuse it. Idempotent: a second run with the same pins does nothing; one install at a time
# (a lock), so checkouts side by side can share it.
# Prints the virtualenv's python.
set -euo pipefail

FASTAPI_VERSION=0.163.2
UVICORN_VERSION=0.54.0
UVLOOP_VERSION=0.23.0
HTTPTOOLS_VERSION=0.9.0
ASYNCPG_VERSION=0.32.0
REDIS_VERSION=8.1.0
PYMONGO_VERSION=4.20.0
AIO_PIKA_VERSION=10.2.1
PYJWT_VERSION=2.15.1
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
VENV="$TOOLS/peer-venv"
WANT="fastapi==$FASTAPI_VERSION uvicorn==$UVICORN_VERSION uvloop==$UVLOOP_VERSION"
WANT+=" httptools==$HTTPTOOLS_VERSION asyncpg==$ASYNCPG_VERSION redis==$REDIS_VERSION"
WANT+=" pymongo==$PYMONGO_VERSION aio-pika==$AIO_PIKA_VERSION PyJWT==$PYJWT_VERSION"

if [[ ${EUID} -eq 0 ]]; then ROOT_CMD=(); else ROOT_CMD=(sudo); fi
apt_install() {
  echo "[peer-venv] apt-get install $*" >&2
  "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q --no-install-recommends "$@" >/dev/null
}

mkdir -p "$TOOLS"
exec 9>"$TOOLS/.peer-venv.lock"
flock 9
if [[ -x $VENV/bin/python && "$(cat "$VENV/.kh-installed" 2>/dev/null)" == "$WANT" ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
echo "[peer-venv] installing $WANT into $VENV (once per machine)" >&2
rm -rf "$VENV"
command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
  # Debian and Ubuntu ship venv (with ensurepip) as a package of its own.
  rm -rf "$VENV"
  apt_install python3-venv
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC2086 # $WANT is nine requirement specifiers
"$VENV/bin/pip" install --quiet --disable-pip-version-check $WANT >&2
printf '%s' "$WANT" >"$VENV/.kh-installed"
echo "$VENV/bin/python"
