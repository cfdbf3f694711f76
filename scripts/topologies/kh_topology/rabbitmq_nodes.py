"""The processes of the rabbitmq-cluster profile and what it asks them: the three nodes'
names and environment (node_env), rabbitmqctl run as the user rabbitmq against one node
(rmq), the cluster as a node sees it and whether that is healthy (parse_status, view,
judge, check), finding, starting, waiting for and stopping the nodes' Erlang VMs, the
fresh state dir with its config files and cookie (prepare), and joining a node to the
first one's cluster (join). rabbitmq.py composes them into the profile's verbs."""

import json
import os
import pwd
import secrets
import shlex
import string
import subprocess
from pathlib import Path

from .common import (ROOT, STATE, Deadline, NotReady, find_pids, pid_alive, pid_gone, spawn,
                     stop_pids, tcp_open, wait_until, warn)

NAME = "rabbitmq-cluster"
DIR = STATE / NAME
PORTS = (5681, 5682, 5683)  # kh-rmq1..3; the first is the one the others join
DIST_OFFSET = 20000         # Erlang distribution port = AMQP port + this
LIB_BIN = Path("/usr/lib/rabbitmq/bin")
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



def has_cookie(port):
    f = f"{DIR}/{port}/home/.erlang.cookie"
    return subprocess.run([*ROOT, "test", "-s", f], check=False).returncode == 0
