"""A minimal Redis client (RESP2) for the health checks: one command per connection, a
short timeout, no redis-cli process per question."""

import socket


class ReplyError(Exception):
    """The server answered with an error reply."""


def encode(args):
    """A command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class _Incomplete(Exception):
    pass


def parse(buf, pos=0):
    """One reply from `buf` at `pos`: (value, next position). Bulk and simple strings are
    str, integers int, arrays lists, nil None, an error reply a ReplyError instance.
    Raises _Incomplete when `buf` does not hold the whole reply yet."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete
    kind, line, pos = buf[pos:pos + 1], buf[pos + 1:end], end + 2
    if kind == b"+":
        return line.decode(), pos
    if kind == b"-":
        return ReplyError(line.decode()), pos
    if kind == b":":
        return int(line), pos
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, pos
        if len(buf) < pos + n + 2:
            raise _Incomplete
        return buf[pos:pos + n].decode(errors="replace"), pos + n + 2
    if kind == b"*":
        n = int(line)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n):
            item, pos = parse(buf, pos)
            items.append(item)
        return items, pos
    raise ValueError(f"not a RESP reply: {buf[pos - len(line) - 3:pos]!r}")


def call(port, *args, host="127.0.0.1", timeout=2.0):
    """The reply of one command to host:port. Raises OSError when the server does not
    answer, ReplyError on an error reply."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(encode(args))
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"127.0.0.1:{port} closed the connection")
            buf += chunk
            try:
                value, _ = parse(buf)
            except _Incomplete:
                continue
            if isinstance(value, ReplyError):
                raise value
            return value


def ask(port, *args, **kw):
    """Like call, but None when the server does not answer or answers an error."""
    try:
        return call(port, *args, **kw)
    except (OSError, ReplyError, ValueError):
        return None


def ping(port):
    return ask(port, "PING") == "PONG"


def parse_info(text):
    """INFO's "key:value" lines as a dict (comments and blank lines skipped)."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def pairs(reply):
    """A flat [k, v, k, v...] reply as a dict."""
    reply = reply or []
    return {reply[i]: reply[i + 1] for i in range(0, len(reply) - 1, 2)}
