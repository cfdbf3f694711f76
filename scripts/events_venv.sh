#!/usr/bin/env bash
# scripts/events_venv.sh: the Python virtualenv of the event consumer tests (make test calls
# it): the CloudEvents SDK (its RabbitMQ binding reads the service's messages), pika (the
# AMQP 0-9-1 client) and the reference Standard Webhooks package (the webhook receiver test,
# tests/consumers/webhook_receiver.py, verifies deliveries' signatures with it), pinned, in
# ${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}/events-venv, outside the clone so fresh clones
# reuse it. Idempotent: a second run with the same pins does nothing; one install at a time
# (a lock), so checkouts side by side can share it.
# Prints the virtualenv's python.
set -euo pipefail

CLOUDEVENTS_VERSION=2.2.0
PIKA_VERSION=1.4.4
STANDARDWEBHOOKS_VERSION=1.3.0
TOOLS="${KH_TOOLS_DIR:-/var/tmp/kh-review-tools}"
VENV="$TOOLS/events-venv"
WANT="cloudevents==$CLOUDEVENTS_VERSION pika==$PIKA_VERSION standardwebhooks==$STANDARDWEBHOOKS_VERSION"

if [[ ${EUID} -eq 0 ]]; then ROOT_CMD=(); else ROOT_CMD=(sudo); fi
apt_install() {
  echo "[events-venv] apt-get install $*" >&2
  "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  "${ROOT_CMD[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q --no-install-recommends "$@" >/dev/null
}

mkdir -p "$TOOLS"
exec 9>"$TOOLS/.events-venv.lock"
flock 9
if [[ -x $VENV/bin/python && "$(cat "$VENV/.kh-installed" 2>/dev/null)" == "$WANT" ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
echo "[events-venv] installing $WANT into $VENV (once per machine)" >&2
rm -rf "$VENV"
command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
  # Debian and Ubuntu ship venv (with ensurepip) as a package of its own.
  rm -rf "$VENV"
  apt_install python3-venv
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC2086 # $WANT is three requirement specifiers
"$VENV/bin/pip" install --quiet --disable-pip-version-check $WANT >&2
printf '%s' "$WANT" >"$VENV/.kh-installed"
echo "$VENV/bin/python"
