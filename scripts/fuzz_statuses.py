"""Part of scripts/fuzz.sh: every response the fuzzer got from a documented operation has a
status that operation documents, and a documented content type.

schemathesis skips its status and content-type checks for the requests it sends only to
probe the request's shape (a body in another content type than the documented one, for
one), so an undocumented 415 would pass it unseen. This reads the run's HAR report and
checks those responses too. Requests with a method a path does not document are left to
the 405 handling: they match no operation here.

    python fuzz_statuses.py OPENAPI_JSON HAR
"""

import json
import re
import sys
from urllib.parse import urlsplit


def operations(spec):
    """(method, path, its regex, responses) of every documented operation."""
    ops = []
    for path, item in spec["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(path)) + "$")
        for method, op in item.items():
            ops.append((method.upper(), path, pattern, op.get("responses", {})))
    return ops


def documented(responses, status):
    for key in (str(status), f"{str(status)[0]}XX", "default"):
        if key in responses:
            return responses[key]
    return None


def main(spec_path, har_path):
    spec = json.load(open(spec_path))
    ops = operations(spec)
    problems = {}
    entries = json.load(open(har_path))["log"]["entries"]
    for entry in entries:
        req, res = entry["request"], entry["response"]
        path = urlsplit(req["url"]).path
        for method, template, pattern, responses in ops:
            if method == req["method"] and pattern.match(path):
                break
        else:
            continue
        status = res["status"]
        response = documented(responses, status)
        got = next((h["value"] for h in res["headers"] if h["name"].lower() == "content-type"), "")
        if response is None:
            problem = f"{method} {template}: undocumented status {status}"
        else:
            types = list(response.get("content", {}))
            main = got.split(";")[0].strip().lower()
            if not types or main in types:
                continue
            problem = f"{method} {template}: {status} with {got!r}, documented {types}"
        body = res.get("content", {}).get("text", "")[:200]
        problems.setdefault(problem, body)
    for problem, body in problems.items():
        print(f"[fuzz] {problem}\n       body: {body}")
    print(f"[fuzz] {len(entries)} responses checked against the documented statuses")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
