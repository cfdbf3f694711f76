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
WANT="cloudevents==$CLOUDEVENTS_VERSION pika==$PIKA_VERSION standardwebhooks==$STANDARDWEBHOOKS_VERSION"

# shellcheck source=scripts/lib/venv.sh
source "$(dirname "$0")/lib/venv.sh"
pinned_venv events-venv "$WANT"
