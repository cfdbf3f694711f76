#!/usr/bin/env bash
# scripts/image/test.sh: the runtime image, from the debug binary already built (no second
# compile), run against the local services and driven through the README's flow. The
# container: --network=host on a free loopback port (not 8080), --read-only root, settings
# only from APP__ variables (development environment). Checked, each with its time: /readyz
# within 90 s; create, submit, approve 200, approve again 409 and both events off a queue of
# its own (scripts/image/flow.py); not root; `touch /x` and `touch /tmp/x` refused; the
# health check healthy; a SIGTERM (podman stop -t 30) exits 0 within the grace period;
# every log line is JSON.
# Fails loudly at the first miss; the container is always removed.
#   scripts/image/test.sh          the runtime-prebuilt image of $CARGO_TARGET_DIR/debug/kh-review
#   scripts/image/test.sh IMAGE    an image already built, e.g. kh-review:latest
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-kh-review:prebuilt}
BIN="${CARGO_TARGET_DIR:-/var/tmp/kh-review-target}/debug/kh-review"
NAME="kh-review-image-test-$$"
STATE_DIR="${KH_IMAGE_STATE:-/var/tmp/kh-review/image}"
mkdir -p "$STATE_DIR"
t0=$SECONDS
mark=$SECONDS
say() { echo "[image/test] $* ($((SECONDS - mark)) s)"; mark=$SECONDS; }
fail() { echo "[image/test] FAIL: $*" >&2; exit 1; }

scripts/image/tools.sh
eval "$(scripts/image/podman.sh)"
trap 'podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true' EXIT

scripts/services.sh up >/dev/null
eval "$(scripts/services.sh env)"
# As production runs it: the service's role (kh_app) and the owner's for the migrations.
export APP__DATABASE__MIGRATE_URL=$APP__DATABASE__URL APP__DATABASE__URL=$KH_SERVICE_DATABASE_URL
PY=$(scripts/events_venv.sh)
say "services up, event venv ready"

if [[ -n ${1:-} ]]; then
  IMAGE=$1   # an image already built (make image's kh-review:latest): tested as it is
  podman image exists "$IMAGE" || fail "no image $IMAGE"
else
  if [[ ! -x $BIN ]]; then
    cargo build --bin kh-review
  fi
  IMAGE=$IMAGE scripts/image/build.sh --prebuilt "$BIN"
  say "image $IMAGE built from $BIN"
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
envs=(-e APP__ENVIRONMENT=development -e APP__SERVER__HOST=127.0.0.1 -e "APP__SERVER__PORT=$port")
# The services' settings pass through; the image's own (JSON logs) are not overridden.
for var in $(compgen -e | grep '^APP__' | grep -v -e '^APP__SERVER__' -e '^APP__ENVIRONMENT$' -e '^APP__LOG__'); do
  envs+=(-e "$var")
done
# Read-only as Docker's --read-only: podman's would mount tmpfs on /tmp, /var/tmp and /run
# (--read-only-tmpfs); the service writes nowhere. Without systemd podman logs that it
# cannot add a health timer: `healthcheck run` below.
podman run -d --name "$NAME" --network=host --read-only --read-only-tmpfs=false "${envs[@]}" "$IMAGE" >/dev/null 2>"$STATE_DIR/run.err" \
  || { cat "$STATE_DIR/run.err" >&2; fail "podman run"; }
base="http://127.0.0.1:$port"
deadline=$((SECONDS + 90))
until curl -sf -o /dev/null "$base/readyz"; do
  [[ $(podman inspect -f '{{.State.Running}}' "$NAME") == true ]] \
    || { podman logs "$NAME" | tail -20 >&2; fail "the container exited before /readyz answered 200"; }
  ((SECONDS < deadline)) || { podman logs "$NAME" | tail -20 >&2; fail "/readyz not 200 within 90 s"; }
  sleep 0.5
done
say "container $NAME on 127.0.0.1:$port: /readyz 200"

author=$(podman exec "$NAME" kh-review token alice --roles author)
reviewer=$(podman exec "$NAME" kh-review token bob --roles reviewer)
say "tokens minted in the container"
"$PY" scripts/image/flow.py "$base" "${APP__AMQP__URLS%%,*}" "${APP__AMQP__EXCHANGE:-kh.document.events}" "$author" "$reviewer" \
  || fail "the flow through the image"
say "flow: create 201, submit 201, approve 200, approve again 409, both events read"

uid=$(podman exec "$NAME" id -u)
[[ $uid != 0 ]] || fail "the service runs as root"
say "runs as uid $uid"
if podman exec "$NAME" sh -c 'touch /x' 2>/dev/null; then fail "touch /x: the root filesystem is writable"; fi
# /tmp is writable by anyone in the image: only the read-only mount refuses it.
err=$(podman exec "$NAME" sh -c 'touch /tmp/x' 2>&1) && fail "touch /tmp/x: the root filesystem is writable"
[[ $err == *"Read-only file system"* ]] || fail "touch /tmp/x failed, but not for a read-only root: $err"
say "touch /x and /tmp/x refused (read-only file system)"
podman healthcheck run "$NAME" >/dev/null 2>&1 || fail "podman healthcheck run: not healthy"
health=$(podman inspect -f '{{.State.Health.Status}}' "$NAME" 2>/dev/null || podman inspect -f '{{.State.Healthcheck.Status}}' "$NAME")
[[ $health == healthy ]] || fail "health status is '$health', not healthy"
say "health check: $health"

stop_start=$SECONDS
podman stop -t 30 "$NAME" >/dev/null 2>"$STATE_DIR/stop.err" || { cat "$STATE_DIR/stop.err" >&2; fail "podman stop"; }
took=$((SECONDS - stop_start))
code=$(podman inspect -f '{{.State.ExitCode}}' "$NAME")
[[ $code == 0 ]] || fail "exit code $code after SIGTERM"
((took < 30)) || fail "SIGTERM took $took s: the grace period ran out (SIGKILL)"
say "SIGTERM: exit code 0 after $took s"

lines=$(podman logs "$NAME" 2>&1)
[[ -n $lines ]] || fail "no log lines"
if grep -v '^{' <<<"$lines" | head -3 | grep . >&2 || ! jq -e . <<<"$lines" >/dev/null 2>&1; then
  fail "log lines that are not JSON objects (above)"
fi
say "$(wc -l <<<"$lines") log lines, all JSON"
echo "[image/test] all checks passed in $((SECONDS - t0)) s"
