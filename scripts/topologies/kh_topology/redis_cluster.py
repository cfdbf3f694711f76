"""redis-cluster: the Redis Cluster the topology tests kill nodes of. 127.0.0.1:7001-7006,
3 masters + 3 replicas, cluster-node-timeout 1000 ms, state in
$STATE/redis-cluster/<port>/ (see redis_nodes). Separate from, and never touching, the
Redis on 6379.
  packages   the Debian packages to install first, one a line
  up         healthy: a no-op well under a second. Else restart only the dead nodes
             from their (rewritten) nodes.conf, so a failed-over master comes back as a
             replica, and wait (max 60 s) until healthy. State it cannot repair (e.g. a
             half-made cluster) is wiped and the cluster created fresh.
  down       stop it and delete its state dir
  status     one line; exit 3 unless healthy
  env        APP__REDIS__MODE=cluster and APP__REDIS__NODES"""

import shutil
import subprocess
import time

from . import redis_nodes as rn
from . import resp
from .common import (STATE, Deadline, Exited, NotReady, fail_profile, log, ports_free,
                     tcp_open, wait_until, warn)

NAME = "redis-cluster"
DIR = STATE / NAME
PORTS = (7001, 7002, 7003, 7004, 7005, 7006)
SLOTS = 16384
LOGS = f"{DIR}/<port>/redis.log"


def conf(port):
    """redis.conf of one node."""
    return (rn.node_conf(DIR / str(port), port, NAME)
            + "cluster-enabled yes\n"
            "cluster-config-file nodes.conf\n"
            "cluster-node-timeout 1000\n"
            "cluster-replica-validity-factor 0\n"
            "cluster-require-full-coverage no\n"
            + rn.DATA_CONF)


def view(nodes_text):
    """CLUSTER NODES -> one sorted line per node: "PORT M SLOTS" (a master; SLOTS "-"
    when it has none), "PORT S MASTER_PORT" (a replica), "BAD PORT FLAGS LINK" (failing,
    in handshake, disconnected, or of unknown role)."""
    rows, port_of = [], {}
    for line in (nodes_text or "").splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        port = f[1].replace("@", ":").replace(",", ":").split(":")[1]
        port_of[f[0]] = port
        rows.append((port, f[2], f[3], f[7], ",".join(f[8:])))
    out = []
    for port, flags, master, link, slots in rows:
        if any(w in flags for w in ("fail", "handshake", "noaddr")) or link != "connected":
            out.append(f"BAD {port} {flags} {link}")
        elif "master" in flags:
            out.append(f"{port} M {slots or '-'}")
        elif "slave" in flags:
            out.append(f"{port} S {port_of.get(master, '?')}")
        else:
            out.append(f"BAD {port} {flags}")
    return sorted(out)


def judge(infos, views, replications):
    """Healthy? `infos`: port -> CLUSTER INFO dict (None: no answer); `views`: port ->
    view(); `replications`: master port -> INFO replication dict. All 6 in state ok with
    all slots and 6 known nodes, the same view from every node (nobody failing), exactly
    3 masters holding slots, each with an online replica. Returns the masters' ports
    ("7001 7002 7003"), or raises NotReady with the first problem found."""
    for p in PORTS:
        info = infos.get(p)
        if info is None or "cluster_state" not in info:
            raise NotReady(f"127.0.0.1:{p} does not answer")
        if info["cluster_state"] != "ok":
            raise NotReady(f"127.0.0.1:{p} has cluster_state:{info['cluster_state']}")
        if (info.get("cluster_slots_ok") != str(SLOTS)
                or info.get("cluster_slots_assigned") != str(SLOTS)):
            raise NotReady(f"127.0.0.1:{p}: not all {SLOTS} slots served (cluster_slots_"
                           f"assigned:{info.get('cluster_slots_assigned')} cluster_slots_ok:"
                           f"{info.get('cluster_slots_ok')})")
        if info.get("cluster_known_nodes") != str(len(PORTS)):
            raise NotReady(f"127.0.0.1:{p} has cluster_known_nodes:"
                           f"{info.get('cluster_known_nodes')}")
    first = None
    for p in PORTS:
        v = views.get(p) or []
        bad = [row for row in v if row.startswith("BAD ")]
        if bad:
            raise NotReady(f"127.0.0.1:{p} sees {bad[0][4:]}")
        if first is None:
            first = v
        elif v != first:
            raise NotReady("the nodes do not agree on the topology yet")
    masters = [r.split()[0] for r in first if r.split()[1] == "M"]
    replicas = [r.split() for r in first if r.split()[1] == "S"]
    if (len(masters) != 3 or len(replicas) != 3
            or any(r.endswith(" M -") for r in first)):
        raise NotReady("want 3 masters with slots + 3 replicas, have: " + ";".join(first))
    for m in masters:
        if not any(r[2] == m for r in replicas):
            raise NotReady(f"master 127.0.0.1:{m} has no replica")
        rep = replications.get(int(m)) or {}
        online = any(k.startswith("slave") and k[5:].isdigit() and "state=online" in v
                     for k, v in rep.items())
        if rep.get("role") != "master" or not online:
            raise NotReady(f"master 127.0.0.1:{m} has no online replica yet")
    return " ".join(masters)


def check():
    """judge() over what the nodes answer now (asking no more than it needs)."""
    infos = {p: resp.parse_info(resp.ask(p, "CLUSTER", "INFO")) for p in PORTS}
    views, reps = {}, {}
    if all("cluster_state" in i for i in infos.values()):
        views = {p: view(resp.ask(p, "CLUSTER", "NODES")) for p in PORTS}
        for row in views.get(PORTS[0], []):
            f = row.split()
            if f[1] == "M":
                reps[int(f[0])] = resp.parse_info(resp.ask(int(f[0]), "INFO", "replication"))
    return judge(infos, views, reps)


def formed(infos):
    """A cluster that was never completely formed cannot be repaired by restarting
    nodes: every node must know all 6, and together they must hold all slots. `infos`:
    port -> CLUSTER INFO dict. Raises NotReady saying why, when that is not so."""
    singles = max_assigned = 0
    for p in PORTS:
        info = infos.get(p) or {}
        known, assigned = info.get("cluster_known_nodes", ""), info.get(
            "cluster_slots_assigned", "")
        if not (known.isdigit() and assigned.isdigit()):
            raise NotReady(f"127.0.0.1:{p} gives no CLUSTER INFO")
        known, assigned = int(known), int(assigned)
        singles += known == 1
        max_assigned = max(max_assigned, assigned)
        if known not in (len(PORTS), 1):
            raise NotReady(f"127.0.0.1:{p} knows {known} nodes, not 6 (half-made cluster)")
    if singles == len(PORTS):
        raise NotReady("the nodes run but no cluster was ever formed")
    if singles:
        raise NotReady(f"{singles} node(s) lost their cluster config (nodes.conf)")
    if max_assigned < SLOTS:
        raise NotReady(f"only {max_assigned} of {SLOTS} slots are assigned (half-made "
                       "cluster)")


def unrepairable(why):
    warn(f"{NAME}: {why}; wiping {DIR} and creating it fresh")
    return False


def recover():
    """Restarts the dead nodes of an existing cluster and waits until it is healthy.
    False (having said why) when the state cannot be repaired that way."""
    t0 = time.monotonic()
    nodes, dead = [], []
    for p in PORTS:
        if rn.node_pid(DIR, p) is not None:
            nodes.append((p, None))
            continue
        conf_file = DIR / str(p) / "redis.conf"
        if not conf_file.is_file() or conf_file.stat().st_size == 0:
            return unrepairable(f"{conf_file} is missing")
        if tcp_open(p):
            return unrepairable(f"127.0.0.1:{p} is taken by another process")
        dead.append(p)
    if dead:
        log(f"{NAME}: restarting dead node(s) {' '.join(map(str, dead))} from their "
            "nodes.conf...")
        nodes += [(p, rn.node_start(DIR, p, "redis.conf", ["redis-server"])) for p in dead]
    else:
        log(f"{NAME}: all 6 processes run, waiting for a healthy cluster...")
    try:
        rn.nodes_wait(rn.PROFILE_START_DEADLINE, DIR, nodes)
    except Exited as e:
        return unrepairable(f"node 127.0.0.1:{e} exited at startup (see {DIR}/{e}/redis.log)")
    except Deadline:
        return unrepairable(f"not all nodes answer PING after {rn.PROFILE_START_DEADLINE}s")
    try:
        formed({p: resp.parse_info(resp.ask(p, "CLUSTER", "INFO")) for p in PORTS})
    except NotReady as e:
        return unrepairable(str(e))
    try:
        masters = wait_until(check, rn.PROFILE_RECOVER_DEADLINE)
    except Deadline as e:
        return unrepairable(f"not healthy {rn.PROFILE_RECOVER_DEADLINE}s after restarting: {e}")
    log(f"{NAME}: up again (masters: {masters}) in {time.monotonic() - t0:.1f}s")
    return True


def create():
    """Wipes the state dir, starts 6 empty nodes, forms the cluster, waits until
    healthy."""
    t0 = time.monotonic()
    if not rn.nodes_stop(DIR, PORTS):
        fail_profile(NAME, LOGS, "could not stop the old cluster nodes")
        return False
    shutil.rmtree(DIR, ignore_errors=True)
    if not ports_free(NAME, PORTS):
        return False
    log(f"{NAME}: creating on 127.0.0.1:{PORTS[0]}-{PORTS[-1]} (state: {DIR})...")
    nodes = []
    for p in PORTS:
        (DIR / str(p)).mkdir(parents=True)
        (DIR / str(p) / "redis.conf").write_text(conf(p))
        nodes.append((p, rn.node_start(DIR, p, "redis.conf", ["redis-server"])))
    try:
        rn.nodes_wait(rn.PROFILE_START_DEADLINE, DIR, nodes)
    except (Exited, Deadline) as e:
        fail_profile(NAME, LOGS, rn.describe_wait_failure(e, rn.PROFILE_START_DEADLINE))
        return False
    with open(DIR / "create.log", "ab") as out:
        try:
            ok = subprocess.run(
                ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in PORTS),
                 "--cluster-replicas", "1", "--cluster-yes"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                timeout=rn.PROFILE_DEADLINE, check=False).returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
    if not ok:
        fail_profile(NAME, f"{DIR}/create.log and {LOGS}", "redis-cli --cluster create failed")
        return False
    try:
        masters = wait_until(check, rn.PROFILE_DEADLINE)
    except Deadline as e:
        fail_profile(NAME, f"{LOGS} and {DIR}/create.log",
                     f"not healthy within {rn.PROFILE_DEADLINE}s: {e}")
        return False
    log(f"{NAME}: up on 127.0.0.1:{PORTS[0]}-{PORTS[-1]} (masters: {masters}) in "
        f"{time.monotonic() - t0:.1f}s")
    return True


def up():
    if not rn.installed():
        fail_profile(NAME, STATE / "apt.log",
                     "redis-server / redis-cli are not installed and could not be installed")
        return 1
    if DIR.is_dir():
        try:
            masters = check()
            for p in PORTS:
                rn.node_pid(DIR, p)  # repairs lost pid files
            log(f"{NAME}: already up (masters: {masters})")
            return 0
        except NotReady:
            pass
        if recover():
            return 0
    return 0 if create() else 1


def down():
    if all(rn.node_pid(DIR, p) is None for p in PORTS) and not DIR.is_dir():
        log(f"{NAME}: already down")
        return 0
    log(f"{NAME}: stopping...")
    if not rn.nodes_stop(DIR, PORTS):
        warn(f"{NAME}: some nodes are still alive; keeping {DIR}")
        return 1
    shutil.rmtree(DIR, ignore_errors=True)
    log(f"{NAME}: stopped, {DIR} removed")
    return 0


def status():
    try:
        print(f"{NAME}: up ({PORTS[0]}-{PORTS[-1]}, 3 masters: {check()})")
        return 0
    except NotReady as e:
        n = sum(resp.ping(p) for p in PORTS)
        print(f"{NAME}: down" if n == 0
              else f"{NAME}: degraded ({n}/{len(PORTS)} nodes answer; {e})")
        return 3


def env():
    nodes = ",".join(f"redis://127.0.0.1:{p}" for p in PORTS)
    return ["export APP__REDIS__MODE=cluster", f"export APP__REDIS__NODES={nodes}"]


def packages():
    return [] if rn.installed() else ["redis-server", "redis-tools"]
