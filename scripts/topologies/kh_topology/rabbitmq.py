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

import json
import os
import pwd
import secrets
import shlex
import string
import subprocess
import sys
import time
from pathlib import Path

from .common import (ROOT, STATE, Deadline, Exited, NotReady, fail_profile, find_pids, log,
                     pid_alive, pid_gone, ports_free, spawn, stop_pids, tcp_open, wait_until,
                     warn)

NAME = "rabbitmq-cluster"
DIR = STATE / NAME
PORTS = (5681, 5682, 5683)  # kh-rmq1..3; the first is the one the others join
DIST_OFFSET = 20000         # Erlang distribution port = AMQP port + this
DEADLINE = 120              # fresh cluster: start, join, healthy
RECOVER_DEADLINE = 90       # restart dead nodes; after that: wipe, create fresh
LIB_BIN = Path("/usr/lib/rabbitmq/bin")
LOGS = f"{DIR}/<port>/rabbitmq.log and stdout.log"
CTL_LOG = DIR / "rabbitmqctl.log"
LOOPBACK_ARGS = "-kernel inet_dist_use_interface {127,0,0,1}"
# Erlang's schedulers spin while idle (busy wait), by default: three nodes and every
# rabbitmqctl VM doing that on a 2-core machine starve the PostgreSQL the instances under
# test need. Spinning off; nothing else changes.
NO_SPIN_ARGS = "+sbwt none +sbwtdcpu none +sbwtdio none"


def installed():
    try:
        pwd.getpwnam("rabbitmq")
    except KeyError:
        return False
    return (os.access(LIB_BIN / "rabbitmq-server", os.X_OK)
            and os.access(LIB_BIN / "rabbitmqctl", os.X_OK))


def nname(port):
    return f"kh-rmq{port - PORTS[0] + 1}@localhost"


def all_names():
    return ",".join(nname(p) for p in PORTS)


def node_env(port):
    """The environment of a node and of rabbitmqctl against it. Node names are
    @localhost, so distribution (and epmd, if a node starts it) can always stay on
    loopback: peers reach them as 127.0.0.1."""
    d = DIR / str(port)
    return {
        "HOME": f"{d}/home", "RABBITMQ_NODENAME": nname(port),
        "RABBITMQ_USE_LONGNAME": "false", "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(port), "RABBITMQ_DIST_PORT": str(port + DIST_OFFSET),
        "RABBITMQ_CONF_ENV_FILE": f"{DIR}/rabbitmq-env.conf",
        "RABBITMQ_CONFIG_FILE": f"{DIR}/rabbitmq.conf",
        "RABBITMQ_ADVANCED_CONFIG_FILE": f"{DIR}/advanced.config",
        "RABBITMQ_ENABLED_PLUGINS_FILE": f"{DIR}/enabled_plugins",
        "RABBITMQ_MNESIA_BASE": f"{d}/mnesia", "RABBITMQ_LOG_BASE": str(d),
        "RABBITMQ_LOGS": f"{d}/rabbitmq.log", "RABBITMQ_PID_FILE": f"{d}/rabbitmq.pid",
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": f"{LOOPBACK_ARGS} {NO_SPIN_ARGS}",
        "RABBITMQ_CTL_ERL_ARGS": f"{LOOPBACK_ARGS} {NO_SPIN_ARGS}",
    }


def as_rabbitmq(port, argv):
    """`argv` as the user rabbitmq with the environment of the node on `port`."""
    env = [f"{k}={v}" for k, v in node_env(port).items()]
    return [*ROOT, "runuser", "-u", "rabbitmq", "--", "env", *env, *argv]


def rmq(port, *args, log_to=CTL_LOG):
    """rabbitmqctl against the node on `port`, as rabbitmq, with that node's HOME
    (cookie). Not /usr/sbin/rabbitmqctl: its `su` resets HOME to /var/lib/rabbitmq, i.e.
    the base broker's cookie. Returns (exit status, stdout); stderr goes to `log_to`."""
    argv = as_rabbitmq(port, ["timeout", "60", str(LIB_BIN / "rabbitmqctl"), "-n",
                              nname(port), *args])
    with open(log_to if Path(log_to).parent.is_dir() else os.devnull, "ab") as err:
        err.write(f"$ rabbitmqctl -n {nname(port)} {shlex.join(args)}\n".encode())
        err.flush()
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=err, check=False)
    return p.returncode, p.stdout.decode(errors="replace")


def parse_status(text):
    """`cluster_status --formatter json` -> (running nodes, disc nodes, partitions):
    the names sorted and comma-separated; None when `text` is not that JSON."""
    try:
        s = json.loads(text)
        return (",".join(sorted(s["running_nodes"])), ",".join(sorted(s["disk_nodes"])),
                len(s["partitions"]))
    except (ValueError, KeyError, TypeError):
        return None


def view(port):
    """The cluster as the node on `port` sees it (parse_status), or None."""
    rc, out = rmq(port, "cluster_status", "--formatter", "json")
    return parse_status(out) if rc == 0 else None


def judge(listening, status):
    """Healthy? `listening`: port -> accepts TCP; `status`: kh-rmq1's parse_status (None:
    rabbitmqctl failed; only asked for once all listen). All AMQP ports accept TCP, and
    kh-rmq1 reports all three nodes running and no partition. Returns "3 running", or
    raises NotReady with what is wrong."""
    for p in PORTS:
        if not listening.get(p):
            raise NotReady(f"{nname(p)} does not accept connections on 127.0.0.1:{p}")
    if status is None:
        raise NotReady(f"rabbitmqctl cluster_status failed on {nname(PORTS[0])} (see "
                       f"{CTL_LOG})")
    running, disk, parts = status
    if running != all_names():
        raise NotReady(f"{nname(PORTS[0])} sees running: {running or 'none'}; members: "
                       f"{disk or 'none'}")
    if parts:
        raise NotReady(f"{nname(PORTS[0])} reports {parts} partition(s)")
    return f"{len(PORTS)} running"


def check():
    listening = {}
    for p in PORTS:
        listening[p] = tcp_open(p)
        if not listening[p]:
            return judge(listening, None)
    return judge(listening, view(PORTS[0]))


def node_pid(port):
    """The live beam.smp pid of our node on `port` (from its pid file, else by its HOME
    on the command line), or None."""
    d = DIR / str(port)
    pattern = rf"beam.*-home {d}/home( |$)"
    pid = pid_alive(d / "rabbitmq.pid", pattern)
    if pid is not None:
        return pid
    found = find_pids(r"beam\.smp .*-home " + str(d) + "/home( |$)")
    return found[0] if found else None


def start_node(port):
    """Starts the node in its own session (outliving this program); returns the
    launcher's pid (runuser; it exits with the VM)."""
    d = DIR / str(port)
    return spawn(as_rabbitmq(port, [str(LIB_BIN / "rabbitmq-server")]), cwd=d,
                 logfile=d / "stdout.log")


def nodes_wait(deadline, nodes):
    """Waits until the AMQP ports of `nodes` ((port, launcher pid) pairs) accept TCP (a
    node's listener opens at the very end of its boot). Raises Deadline; Exited with
    the port as soon as the launcher of one has exited."""
    def check_open():
        for p, _ in nodes:
            if not tcp_open(p):
                raise NotReady(f"{nname(p)} does not accept connections yet")

    def gone():
        for p, pid in nodes:
            if pid_gone(pid) and not tcp_open(p):
                return str(p)
        return None
    wait_until(check_open, deadline, interval=0.2, gone=gone)


def nodes_stop():
    """`rabbitmqctl shutdown` our live nodes (in parallel), then TERM, then KILL the
    stubborn ones. True once all are gone."""
    pids, jobs = [], []
    for p in PORTS:
        pid = node_pid(p)
        if pid is None:
            continue
        pids.append(pid)
        argv = as_rabbitmq(p, ["timeout", "60", str(LIB_BIN / "rabbitmqctl"), "-n", nname(p),
                               "shutdown"])
        jobs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for j in jobs:
        j.wait()
    if not pids:
        return True
    try:
        wait_until(lambda: _all_gone(pids), 10)
        return True
    except Deadline:
        pass
    left = [p for p in pids if not pid_gone(p)]
    warn(f"{NAME}: pid(s) {' '.join(map(str, left))} still alive after shutdown; "
         "sending TERM")
    return stop_pids(left, grace=15, who=NAME, root=True)


def _all_gone(pids):
    if any(not pid_gone(p) for p in pids):
        raise NotReady("still running")


def cookie():
    """A new Erlang cookie: 32 capital letters."""
    return "".join(secrets.choice(string.ascii_uppercase) for _ in range(32))


RABBITMQ_CONF = """\
# written by kh-review scripts/topologies/topology.py (rabbitmq-cluster) — tests only
# (listener, node name, dist port, paths: environment variables, see node_env)
cluster_name = kh-rmq
cluster_partition_handling = pause_minority
# the log goes to rabbitmq.log only (stdout.log: what is printed before that)
log.console = false
# guest / guest, from 127.0.0.1 only
loopback_users.guest = true
"""


def prepare():
    """A fresh state dir: the shared config files, and per node a dir owned by rabbitmq,
    HOME with the cluster's own cookie (mode 400), stdout.log."""
    DIR.mkdir(parents=True, exist_ok=True)
    (DIR / "rabbitmq-env.conf").write_text(
        "# written by kh-review scripts/topologies/topology.py: nothing (not "
        "/etc/rabbitmq/rabbitmq-env.conf)\n")
    (DIR / "enabled_plugins").write_text("[].\n")  # no plugins: no listener on 15672
    (DIR / "rabbitmq.conf").write_text(RABBITMQ_CONF)
    secret = cookie()
    for p in PORTS:
        d = DIR / str(p)
        root = [*ROOT, "install"]
        subprocess.run([*root, "-d", "-o", "rabbitmq", "-g", "rabbitmq", "-m", "755", str(d)],
                       check=True)
        subprocess.run([*root, "-d", "-o", "rabbitmq", "-g", "rabbitmq", "-m", "700",
                        f"{d}/home"], check=True)
        subprocess.run([*root, "-m", "644", "-o", str(os.getuid()), "/dev/null",
                        f"{d}/stdout.log"], check=True)
        subprocess.run([*ROOT, "runuser", "-u", "rabbitmq", "--", "sh", "-c",
                        'umask 277 && cat >"$1"', "sh", f"{d}/home/.erlang.cookie"],
                       input=secret.encode(), check=True)


def join(port, reset=False):
    """Makes the running node on `port` a member of the first node's cluster (with
    `reset`: wipes its own state and has the first node forget it first, if it lists
    it). True on success."""
    first = PORTS[0]
    if rmq(port, "stop_app")[0] != 0:
        return False
    if reset:
        if rmq(port, "force_reset")[0] != 0:
            return False
        v = view(first)
        if v is None:
            return False
        if nname(port) in v[1].split(","):
            if rmq(first, "forget_cluster_node", nname(port))[0] != 0:
                return False
    return (rmq(port, "join_cluster", nname(first))[0] == 0
            and rmq(port, "start_app")[0] == 0)


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


def has_cookie(port):
    f = f"{DIR}/{port}/home/.erlang.cookie"
    return subprocess.run([*ROOT, "test", "-s", f], check=False).returncode == 0


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

