"""What redis-cluster and redis-sentinel share: the Redis processes of a profile.

Every process runs from $STATE/<profile>/<port>/ with its config (redis.conf, or
sentinel.conf for a sentinel), redis.log, and redis.pid holding the live redis-server /
redis-sentinel pid (what the tests `kill -9`), in the foreground of its own session so
it outlives this program."""

import re
import signal
from pathlib import Path

from . import resp
from .common import (Exited, NotReady, pid_alive, pid_gone, spawn, stop_pids,
                     wait_until, which)

PROFILE_DEADLINE = 60          # fresh profile: start + form + healthy
PROFILE_RECOVER_DEADLINE = 30  # restart dead nodes; after that: wipe, start fresh
PROFILE_START_DEADLINE = 15    # a started process answers PING


def installed():
    return bool(which("redis-server") and which("redis-cli"))


def node_conf(d, port, profile):
    """The lines every process of a profile starts with: loopback only, in the
    foreground, pid file, log and working dir in `d`."""
    return (f"# written by kh-review scripts/services.sh (profile {profile}) — tests only\n"
            "bind 127.0.0.1\n"
            f"port {port}\n"
            "protected-mode no\n"
            "daemonize no\n"
            f'pidfile "{d}/redis.pid"\n'
            f'logfile "{d}/redis.log"\n'
            f'dir "{d}"\n')


# A data node keeps nothing on disk, and a (re)joining replica syncs at once instead of
# after the default 5 s.
DATA_CONF = 'appendonly no\nsave ""\nrepl-diskless-sync-delay 0\n'


def node_pattern(port):
    """Command line of one of our processes: "redis-server /…/7001/redis.conf" at first,
    then Redis' process title "redis-server 127.0.0.1:7001 [cluster]"."""
    return rf"redis.*[:/]{port}\b"


def node_pid(d, port):
    """The pid of our live process for `port`: from its pid file, else (pid file lost or
    stale) from INFO if its config file is ours, and then the pid file is rewritten.
    None if none runs."""
    pidf = Path(d) / str(port) / "redis.pid"
    pid = pid_alive(pidf, node_pattern(port))
    if pid is not None:
        return pid
    info = resp.parse_info(resp.ask(port, "INFO", "server"))
    pid, conf = info.get("process_id", ""), info.get("config_file", "")
    if not pid.isdigit() or not re.search(rf"/{re.escape(Path(d).name)}/{port}/[^/]*\.conf$",
                                          conf):
        return None
    if pidf.parent.is_dir():
        pidf.write_text(f"{pid}\n")
    return int(pid)


def node_start(d, port, conf, argv):
    """Starts `argv CONF` for `port` in its own session; returns its pid (Redis writes
    the same pid into redis.pid itself: pidfile in the config)."""
    nd = Path(d) / str(port)
    return spawn([*argv, str(nd / conf)], cwd=nd, logfile=nd / "redis.log",
                 pidfile=nd / "redis.pid")


def nodes_wait(deadline, d, nodes, **kw):
    """Waits until every node answers PING. `nodes`: (port, pid) pairs; a pid is the one
    this run started the node as (dead once it has exited; not its pid file, which Redis
    rewrites at startup), or None (dead once its pid file names no live process). Raises
    Deadline, or Exited with the port as soon as one of them is dead."""
    def check():
        for port, _ in nodes:
            if not resp.ping(port):
                raise NotReady(f"127.0.0.1:{port} does not answer PING")

    def gone():
        for port, pid in nodes:
            if resp.ping(port):
                continue
            if pid is not None:
                if pid_gone(pid):
                    return str(port)
            elif pid_alive(Path(d) / str(port) / "redis.pid") is None:
                return str(port)
        return None
    wait_until(check, deadline, interval=kw.get("interval", 0.05), gone=gone)


def nodes_stop(d, ports):
    """TERM our processes on these ports (in this order), wait for them to exit, KILL
    the stubborn ones. True once all are gone."""
    pids = [p for p in (node_pid(d, port) for port in ports) if p is not None]
    return stop_pids(pids, signal.SIGTERM, grace=15)


def describe_wait_failure(e, deadline):
    """What a failed nodes_wait says."""
    if isinstance(e, Exited):
        return f"node 127.0.0.1:{e} exited at startup"
    return f"the nodes did not answer PING within {deadline}s"

