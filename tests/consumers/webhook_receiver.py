"""A webhook endpoint for the integration tests of kh-review's Standard Webhooks deliveries:
it checks each delivery's signature with the reference package (standardwebhooks) and answers
as a script tells it, so the tests can watch retries, secret rotation, and failing endpoints.

    python webhook_receiver.py --secret whsec_... [--secret whsec_...] [--reply SPEC] [--port N]

Listens on 127.0.0.1 (an ephemeral port unless --port) and prints {"listening": PORT} as its
first stdout line. Each POST then prints one JSON line, before its reply:
{"path", "webhook_id", "timestamp", "signatures", "verified", "reply", "body", "content_type"}:
the header values as sent (null when missing), "verified" one boolean per --secret in order,
"body" the parsed JSON body (null when it is not JSON). --reply is a comma-separated list,
one entry per POST, the last one repeating (default 200): a status (200, 204, 410, 500...),
STATUS:RETRY_AFTER (429:3 sends Retry-After: 3), "redirect" (302 to /elsewhere on this
server), or "hang" (never answers; the test kills the process). GET /health answers 200 "ok"
and is not recorded. Run by the Rust tests in the virtualenv of scripts/events_venv.sh.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

LOCK = threading.Lock()  # guards the reply script and stdout


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Standard Webhooks test receiver")
    parser.add_argument("--secret", action="append", required=True, help="whsec_... (repeatable)")
    parser.add_argument("--reply", default="200", help="comma-separated reply script")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    args.reply = [entry.strip() for entry in args.reply.split(",")]
    for entry in args.reply:
        if entry not in ("hang", "redirect") and not entry.split(":", 1)[0].isdigit():
            parser.error(f"bad --reply entry {entry!r}")
    return args


def emit(record: dict) -> None:
    with LOCK:
        print(json.dumps(record), flush=True)


class Handler(BaseHTTPRequestHandler):
    hooks: list  # one Webhook per --secret, in order
    script: list  # the --reply entries
    served = 0  # POSTs received so far: the index of the next reply entry

    def log_message(self, format, *args) -> None:  # no access log on stderr
        pass

    def do_GET(self) -> None:
        if self.path == "/health":
            self.answer(200, b"ok")
        else:
            self.answer(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = dict(self.headers.items())
        verified = []
        for hook in self.hooks:
            try:
                hook.verify(body, headers, json_parse=False)
                verified.append(True)
            except WebhookVerificationError:
                verified.append(False)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        with LOCK:
            cls = type(self)
            reply = cls.script[min(cls.served, len(cls.script) - 1)]
            cls.served += 1
        emit({"path": self.path, "webhook_id": self.headers.get("webhook-id"),
              "timestamp": self.headers.get("webhook-timestamp"),
              "signatures": self.headers.get("webhook-signature"), "verified": verified,
              "reply": reply, "body": parsed, "content_type": self.headers.get("Content-Type")})
        if reply == "hang":
            threading.Event().wait()  # never set: hold the connection until we are killed
        elif reply == "redirect":
            port = self.server.server_address[1]
            self.answer(302, headers={"Location": f"http://127.0.0.1:{port}/elsewhere"})
        else:
            status, _, retry_after = reply.partition(":")
            self.answer(int(status), headers={"Retry-After": retry_after} if retry_after else {})

    def answer(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status != 204:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)


def main() -> None:
    args = parse_args()
    Handler.hooks = [Webhook(secret) for secret in args.secret]
    Handler.script = args.reply
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    emit({"listening": server.server_address[1]})
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
