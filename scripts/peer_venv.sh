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
WANT="fastapi==$FASTAPI_VERSION uvicorn==$UVICORN_VERSION uvloop==$UVLOOP_VERSION"
WANT+=" httptools==$HTTPTOOLS_VERSION asyncpg==$ASYNCPG_VERSION redis==$REDIS_VERSION"
WANT+=" pymongo==$PYMONGO_VERSION aio-pika==$AIO_PIKA_VERSION PyJWT==$PYJWT_VERSION"

# shellcheck source=scripts/lib/venv.sh
source "$(dirname "$0")/lib/venv.sh"
pinned_venv peer-venv "$WANT"
