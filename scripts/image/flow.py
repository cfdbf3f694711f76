"""scripts/image/flow.py: the README's flow against a running kh-review, and the events it
must publish (scripts/image/test.sh runs it against the image).

    flow.py BASE_URL AMQP_URL EXCHANGE AUTHOR_TOKEN REVIEWER_TOKEN

Binds a temporary queue of its own to EXCHANGE with `#` first, then creates a document
(author, 201), submits it (201), approves it (200) and approves it again (409), and reads
the queue until `document.submitted` and `document.approved` of that document arrived (30 s
deadline). Prints each step and its time; exits 1 at the first thing wrong. Needs pika
(the virtualenv of scripts/events_venv.sh).
"""

import json
import sys
import time
import urllib.error
import urllib.request

WANTED = ("document.submitted", "document.approved")


def missing_events(bodies, document_id, wanted=WANTED):
    """The event types of `wanted` that no message body (JSON bytes) carries for the
    document, in order. Bodies of other documents and other types are ignored."""
    seen = set()
    for body in bodies:
        try:
            event = json.loads(body)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("document_id") == document_id:
            seen.add(event.get("event_type"))
    return [t for t in wanted if t not in seen]


def call(method, url, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def step(name, fn):
    start = time.monotonic()
    result = fn()
    print(f"[image/flow] {name} ({(time.monotonic() - start) * 1000:.0f} ms)", flush=True)
    return result


def expect(status, want, what, body):
    if status != want:
        sys.exit(f"[image/flow] FAIL: {what} answered {status}, not {want}: {body}")


def main(base, amqp_url, exchange, author, reviewer):
    import pika  # only here: the unit test needs no broker client

    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = conn.channel()
    queue = channel.queue_declare(queue="", exclusive=True, auto_delete=True).method.queue
    channel.queue_bind(queue=queue, exchange=exchange, routing_key="#")
    print(f"[image/flow] queue {queue} bound to {exchange} with #", flush=True)

    api = f"{base}/api/v1"
    status, doc = step("create", lambda: call(
        "POST", f"{api}/documents", author,
        {"title": "Runbook", "body": "How to restart the indexer."}))
    expect(status, 201, "create", doc)
    doc_id = doc["id"]
    status, sub = step("submit", lambda: call("POST", f"{api}/documents/{doc_id}/submit", author))
    expect(status, 201, "submit", sub)
    review_id = sub["review"]["id"]
    approve = f"{api}/reviews/{review_id}/approve"
    status, body = step("approve: 200", lambda: call("POST", approve, reviewer))
    expect(status, 200, "approve", body)
    status, body = step("approve again: 409", lambda: call("POST", approve, reviewer))
    expect(status, 409, "second approve", body)

    def read_events():
        bodies, deadline = [], time.monotonic() + 30
        while missing_events(bodies, doc_id) and time.monotonic() < deadline:
            method, _props, body = channel.basic_get(queue=queue, auto_ack=True)
            if method is None:
                time.sleep(0.2)
            else:
                bodies.append(body)
        return missing_events(bodies, doc_id)

    missing = step("events " + " and ".join(WANTED) + f" of {doc_id}", read_events)
    conn.close()
    if missing:
        sys.exit(f"[image/flow] FAIL: no {', '.join(missing)} for {doc_id} on the queue in 30 s")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
