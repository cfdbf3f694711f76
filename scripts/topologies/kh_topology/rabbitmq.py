"""rabbitmq-cluster: the RabbitMQ cluster the topology tests kill nodes of.
kh-rmq1@localhost kh-rmq2@localhost kh-rmq3@localhost (Debian's rabbitmq-server, run as
the rabbitmq user), AMQP on 127.0.0.1:5681 5682 5683, Erlang distribution on
127.0.0.1:25681 25682 25683, epmd on loopback :4369 (shared with the base broker), no
plugins (so no 15672), cluster_partition_handling = pause_minority, an Erlang cookie of
its own. Node N's state is in $STATE/rabbitmq-cluster/<port>/: mnesia/, home/ (HOME, with
.erlang.cookie), rabbitmq.log (the broker's log), stdout.log, and rabbitmq.pid, the pid of
the node's Erlang VM (beam.smp; RABBITMQ_PID_FILE, written by the broker at boot, without
a trailing newline): `kill -9 $(cat $STATE/rabbitmq-cluster/5681/rabbitmq.pid)` kills
kh-rmq1 for real, and nothing starts it again before the next `up`. rabbitmqctl output:
$STATE/rabbitmq-cluster/rabbitmqctl.log. Separate from, and never touching, the base
broker rabbit@<host> on 5672.
  packages   the Debian packages to install first, one a line
  up         healthy: a no-op (3 TCP checks and one rabbitmqctl call). Else start only
             the dead nodes (with their data they rejoin by themselves), and wait (max
             90 s) until healthy; a running node that is no member any more is reset and
             joined again. State it cannot repair is wiped and the cluster created fresh
             (max 120 s).
  down       stop the nodes and delete the state dir (epmd is left running)
  status     one line; exit 3 unless healthy
  env        APP__AMQP__URLS (the three nodes), APP__AMQP__BIND_QUEUE_TYPE=quorum
  pid PORT   the live beam.smp pid of the node on PORT (5681-5683)"""

import os
import shlex
import subprocess
import sys
import time

from .common import (ROOT, STATE, Deadline, Exited, NotReady, fail_profile, log, ports_free,
                     tcp_open, wait_until, warn)
from .rabbitmq_nodes import (CTL_LOG, DIR, DIST_OFFSET, LIB_BIN, NAME, PORTS, all_names,
                             check, has_cookie, installed, join, nname, node_pid,
                             nodes_stop, nodes_wait, prepare, rmq, start_node, view)

DEADLINE = 120              # fresh cluster: start, join, healthy
RECOVER_DEADLINE = 90       # restart dead nodes; after that: wipe, create fresh
LOGS = f"{DIR}/<port>/rabbitmq.log and stdout.log"


def rejoin():
    """Every node (but the first) whose AMQP port is open but which the first node does
    not see running is reset and joined again. False when that cannot help (a
    partition, a node down, a join that fails)."""
    v = view(PORTS[0])
    if v is None or v[2]:
        return False
    for p in PORTS[1:]:
        if nname(p) in v[0].split(","):
            continue
        if not tcp_open(p):
            return False
        log(f"{NAME}: {nname(p)} is no running member; resetting it, joining "
            f"{nname(PORTS[0])} again...")
        if not join(p, reset=True):
            return False
    return True


def unrepairable(why):
    warn(f"{NAME}: {why}; wiping {DIR} and creating it fresh")
    return False



def recover():
    """Restarts the dead nodes of an existing cluster and waits until healthy. A VM
    that runs without AMQP listener may be booting, or paused by pause_minority (it
    starts again once it sees a majority): it gets 30 s more, then a start_app. A node
    that is no member any more is reset and joined again. False (having said why) when
    that does not help."""
    t0 = time.monotonic()
    dead, idle = [], []
    for p in PORTS:
        pid = node_pid(p)
        if pid is not None:
            if not tcp_open(p):
                idle.append((p, pid))
            continue
        if not (DIR / str(p)).is_dir() or not has_cookie(p):
            return unrepairable(f"{DIR}/{p} or its cookie is missing")
        if tcp_open(p) or tcp_open(p + DIST_OFFSET):
            return unrepairable(f"127.0.0.1:{p} or :{p + DIST_OFFSET} is taken by another "
                                "process")
        dead.append(p)
    if dead:
        log(f"{NAME}: restarting dead node(s) {' '.join(nname(p) for p in dead)} from their "
            "data...")
    elif not idle:
        log(f"{NAME}: all 3 nodes run, waiting for a healthy cluster...")
    try:
        nodes_wait(RECOVER_DEADLINE, [(p, start_node(p)) for p in dead])
    except Exited as e:
        return unrepairable(f"{nname(int(str(e)))} exited at startup (see "
                            f"{DIR}/{e}/rabbitmq.log)")
    except Deadline:
        return unrepairable(f"the restarted nodes do not accept AMQP connections after "
                            f"{RECOVER_DEADLINE}s (see {LOGS})")
    for p, pid in idle:
        try:
            nodes_wait(30, [(p, pid)])
            continue
        except (Exited, Deadline):
            pass
        log(f"{NAME}: {nname(p)} runs (pid {pid}) without AMQP listener; start_app...")
        rmq(p, "start_app")
        try:
            nodes_wait(30, [(p, pid)])
        except (Exited, Deadline):
            return unrepairable(f"{nname(p)} runs but does not accept AMQP connections (see "
                                f"{DIR}/{p}/rabbitmq.log)")
    try:
        out = wait_until(check, 5, interval=0.2)
    except Deadline as e:
        log(f"{NAME}: not healthy yet ({e})")
        if not rejoin():
            return unrepairable(f"{e}, and resetting / joining again did not help (see "
                                f"{CTL_LOG})")
        left = max(RECOVER_DEADLINE - (time.monotonic() - t0), 10)
        try:
            out = wait_until(check, left, interval=0.2)
        except Deadline as e2:
            return unrepairable(f"not healthy after restarting and joining again: {e2}")
    log(f"{NAME}: up again ({out}) in {time.monotonic() - t0:.1f}s")
    return True


def create():
    """Wipes the state dir, starts three empty nodes, joins the 2nd and 3rd to the
    first, waits until healthy."""
    t0 = time.monotonic()
    if not nodes_stop():
        fail_profile(NAME, LOGS, "could not stop the old nodes")
        return False
    subprocess.run([*ROOT, "rm", "-rf", str(DIR)], check=False)
    if not ports_free(NAME, (*PORTS, *(p + DIST_OFFSET for p in PORTS))):
        return False
    log(f"{NAME}: creating {all_names()} on 127.0.0.1:{PORTS[0]}-{PORTS[-1]} (state: "
        f"{DIR})...")
    prepare()
    try:
        nodes_wait(DEADLINE, [(p, start_node(p)) for p in PORTS])
    except Exited as e:
        fail_profile(NAME, f"{DIR}/{e}/rabbitmq.log and stdout.log",
                     f"{nname(int(str(e)))} exited at startup")
        return False
    except Deadline:
        fail_profile(NAME, LOGS, f"the nodes did not accept AMQP connections within "
                     f"{DEADLINE}s")
        return False
    for p in PORTS[1:]:
        log(f"{NAME}: {nname(p)} joins {nname(PORTS[0])}...")
        if not join(p):
            fail_profile(NAME, f"{CTL_LOG} and {DIR}/{p}/rabbitmq.log",
                         f"{nname(p)} could not join {nname(PORTS[0])}")
            return False
    try:
        out = wait_until(check, max(DEADLINE - (time.monotonic() - t0), 10), interval=0.2)
    except Deadline as e:
        fail_profile(NAME, f"{LOGS} and {CTL_LOG}", f"not healthy within {DEADLINE}s: {e}")
        return False
    log(f"{NAME}: up ({all_names().replace(',', ' ')} on 127.0.0.1:{PORTS[0]}-{PORTS[-1]}, "
        f"{out}) in {time.monotonic() - t0:.1f}s")
    return True


def localhost_is_loopback():
    import socket
    try:
        return socket.getaddrinfo("localhost", None, socket.AF_INET)[0][4][0].startswith(
            "127.")
    except OSError:
        return False


def up():
    if DIR.is_dir():
        try:
            log(f"{NAME}: already up ({check()})")
            return 0
        except NotReady:
            pass
    if not installed():
        fail_profile(NAME, STATE / "apt.log", "rabbitmq-server (and its rabbitmq user) is not "
                     "installed and could not be installed")
        return 1
    if not localhost_is_loopback():
        fail_profile(NAME, "/etc/hosts", "the name localhost does not resolve to 127.0.0.1 "
                     "(the nodes are kh-rmqN@localhost)")
        return 1
    if DIR.is_dir() and recover():
        return 0
    return 0 if create() else 1


def down():
    if all(node_pid(p) is None for p in PORTS) and not DIR.is_dir():
        log(f"{NAME}: already down")
        return 0
    log(f"{NAME}: stopping...")
    if not nodes_stop():
        warn(f"{NAME}: some nodes are still alive (see {CTL_LOG}); keeping {DIR}")
        return 1
    subprocess.run([*ROOT, "rm", "-rf", str(DIR)], check=False)
    log(f"{NAME}: stopped, {DIR} removed")
    return 0


def status():
    out = "not created"
    if DIR.is_dir():
        try:
            print(f"{NAME}: up (kh-rmq1..{len(PORTS)} on {PORTS[0]}-{PORTS[-1]}, {check()})")
            return 0
        except NotReady as e:
            out = str(e)
    print(f"{NAME}: down ({out})")
    return 3


def env():
    urls = ",".join(f"amqp://guest:guest@127.0.0.1:{p}/%2f" for p in PORTS)
    return [f"export APP__AMQP__URLS={shlex.quote(urls)}",
            "export APP__AMQP__BIND_QUEUE_TYPE=quorum"]


def packages():
    return [] if os.access(LIB_BIN / "rabbitmq-server", os.X_OK) else ["rabbitmq-server"]


def pid(port):
    """The `pid PORT` verb: prints the node's VM pid; 1 if none runs, 2 on a bad port."""
    if port not in PORTS:
        print(f"usage: topology.py {NAME} pid PORT   (PORT: {' '.join(map(str, PORTS))})",
              file=sys.stderr)
        return 2
    p = node_pid(port)
    if p is None:
        print(f"[services] {NAME}: no node runs on 127.0.0.1:{port}",
              file=sys.stderr)
        return 1
    print(p)
    return 0

