"""redis-sentinel: the Sentinel set-up the topology tests kill nodes of. Master
127.0.0.1:6391, replica 6392, sentinels on 26391 26392 26393 watching "kh-master"
(quorum 2, down-after 1000 ms, failover-timeout 2000 ms: a master can fail over again 4 s
later), state in $STATE/redis-sentinel/<port>/ (see redis_nodes). Separate from, and
never touching, the Redis on 6379.
  packages   the Debian packages to install first, one a line
  up         healthy: a no-op well under a second. Else restart only the dead processes,
             following the sentinels' view (a failed-over old master comes back as a
             replica; the original master is not forced back), and wait (max 60 s) until
             healthy. State it cannot repair is wiped and the set-up created fresh.
  down       stop it and delete its state dir
  status     one line; exit 3 unless healthy
  env        APP__REDIS__MODE=sentinel, APP__REDIS__SENTINELS, APP__REDIS__MASTER_NAME"""

import re
import shutil
import time
from collections import Counter

from . import redis_nodes as rn
from . import resp
from .common import (STATE, Deadline, Exited, NotReady, fail_profile, log, ports_free,
                     tcp_open, wait_until, warn, which)

NAME = "redis-sentinel"
DIR = STATE / NAME
DATA_PORTS = (6391, 6392)  # initial master, initial replica
SENT_PORTS = (26391, 26392, 26393)
MASTER = "kh-master"
QUORUM = 2
LOGS = f"{DIR}/<port>/redis.log"


def sentinel_cmd():
    """The sentinel command: Debian's redis-sentinel, else redis-server --sentinel."""
    if which("redis-sentinel"):
        return ["redis-sentinel"]
    if which("redis-server"):
        warn("redis-sentinel: no redis-sentinel binary (package redis-sentinel); using "
             "redis-server --sentinel")
        return ["redis-server", "--sentinel"]
    return None


def data_conf(port, master_port=None):
    """redis.conf of a data node (the sentinels rewrite it, CONFIG REWRITE, when they
    change its role)."""
    text = rn.node_conf(DIR / str(port), port, NAME) + rn.DATA_CONF
    return text + (f"replicaof 127.0.0.1 {master_port}\n" if master_port else "")


def sentinel_conf(port):
    """sentinel.conf (rewritten by the sentinel itself)."""
    return (rn.node_conf(DIR / str(port), port, NAME)
            + f"sentinel monitor {MASTER} 127.0.0.1 {DATA_PORTS[0]} {QUORUM}\n"
            f"sentinel down-after-milliseconds {MASTER} 1000\n"
            f"sentinel failover-timeout {MASTER} 2000\n"
            f"sentinel parallel-syncs {MASTER} 1\n")


def other(port):
    return DATA_PORTS[1] if port == DATA_PORTS[0] else DATA_PORTS[0]


def role(port):
    r = resp.ask(port, "ROLE")
    return r[0] if r else None


def named_master(sentinel):
    """The master's "HOST:PORT" as the sentinel on that port names it, or None."""
    r = resp.ask(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)
    return f"{r[0]}:{r[1]}" if isinstance(r, list) and len(r) == 2 else None


def ours(addr):
    """The port of `addr` when it is one of our data nodes on 127.0.0.1, else None."""
    m = re.fullmatch(r"127\.0\.0\.1:(\d+)", addr or "")
    return int(m.group(1)) if m and int(m.group(1)) in DATA_PORTS else None


def check():
    """Healthy? Both data nodes answer; all 3 sentinels name the same master (one of
    ours), whose ROLE is master with the other node as online replica (whose link is
    up); each sentinel sees the master without s_down / o_down / failover flags, the
    replica as a plain "slave", and 2 other sentinels. Returns (master, replica), or
    raises NotReady with the first problem found."""
    for p in DATA_PORTS:
        if not resp.ping(p):
            raise NotReady(f"127.0.0.1:{p} does not answer")
    addr = None
    for s in SENT_PORTS:
        a = named_master(s)
        if a is None or not re.fullmatch(r"[0-9.]+:[0-9]+", a):
            raise NotReady(f"sentinel 127.0.0.1:{s} does not answer for {MASTER}")
        if addr is None:
            addr = a
        elif a != addr:
            raise NotReady(f"the sentinels disagree on the master ({addr} vs {a} on {s})")
    m = ours(addr)
    if m is None:
        raise NotReady(f"the sentinels name {addr} as master, not one of ours")
    r = other(m)
    if role(m) != "master":
        raise NotReady(f"the sentinels' master 127.0.0.1:{m} is not (yet) in role master")
    rep = resp.parse_info(resp.ask(m, "INFO", "replication"))
    if (rep.get("connected_slaves") != "1"
            or not rep.get("slave0", "").startswith(f"ip=127.0.0.1,port={r},state=online,")):
        raise NotReady(f"master 127.0.0.1:{m} has no online replica 127.0.0.1:{r} yet")
    rep = resp.parse_info(resp.ask(r, "INFO", "replication"))
    if rep.get("master_port") != str(m) or rep.get("master_link_status") != "up":
        raise NotReady(f"replica 127.0.0.1:{r} has no link up to 127.0.0.1:{m} yet")
    for s in SENT_PORTS:
        kv = resp.pairs(resp.ask(s, "SENTINEL", "MASTER", MASTER))
        if kv.get("flags") != "master":
            raise NotReady(f"sentinel {s}: master flags={kv.get('flags')}")
        if kv.get("num-other-sentinels") != "2":
            raise NotReady(f"sentinel {s}: num-other-sentinels="
                           f"{kv.get('num-other-sentinels', '?')} (want 2)")
        replicas = [resp.pairs(x) for x in resp.ask(s, "SENTINEL", "REPLICAS", MASTER) or []]
        if not any(x.get("port") == str(r) and x.get("flags") == "slave" for x in replicas):
            raise NotReady(f"sentinel {s} does not see 127.0.0.1:{r} as a healthy replica yet")
    return m, r


def stray_master():
    """After a failover whose old master stayed up (SENTINEL FAILOVER, or a node that
    came back on its own), the old master keeps acting as a master until the sentinels
    turn it into a replica, which they only do ~10 s later (they first wait 4 publish
    periods "for newer configs"). Returns (stray, master) when the failover is over (all
    3 sentinels name the same master of ours, none has it in failover, and it is in role
    master) but the other data node still acts as a master too; else None."""
    addrs = {named_master(s) for s in SENT_PORTS}
    if len(addrs) != 1:
        return None
    m = ours(addrs.pop())
    if m is None:
        return None
    r = other(m)
    if role(m) != "master" or role(r) != "master":
        return None
    for s in SENT_PORTS:
        if resp.pairs(resp.ask(s, "SENTINEL", "MASTER", MASTER)).get("flags") != "master":
            return None
    return r, m


def settle(deadline):
    """Waits until healthy; a stray master (see stray_master) is made a replica of the
    sentinels' master, as they would do (REPLICAOF + CONFIG REWRITE), once; never the
    other way round. Returns check()'s value; raises Deadline."""
    nudged = set()

    def step():
        try:
            return check()
        except NotReady:
            stray = stray_master()
            if stray and stray[0] not in nudged:
                r, m = stray
                log(f"{NAME}: 127.0.0.1:{r} still acts as master after the failover to {m}; "
                    f"making it a replica of {m} (as the sentinels would, ~10 s later)")
                resp.ask(r, "REPLICAOF", "127.0.0.1", m)
                resp.ask(r, "CONFIG", "REWRITE")
                nudged.add(r)
            raise
    return wait_until(step, deadline)


def majority(ports):
    """The most common of `ports` when at least 2 agree, else None."""
    top = Counter(p for p in ports if p).most_common(1)
    return top[0][0] if top and top[0][1] >= 2 else None


def current_master():
    """The port of the master by the sentinels (majority of those answering), else of
    their config files (the most common), else None."""
    answers = []
    for s in SENT_PORTS:
        r = resp.ask(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)
        if isinstance(r, list) and len(r) == 2 and str(r[1]).isdigit():
            answers.append(int(r[1]))
    m = majority(answers)
    if m is not None:
        return m
    in_conf = []
    for f in DIR.glob("*/sentinel.conf"):
        in_conf += conf_master(f.read_text())
    top = Counter(in_conf).most_common(1)
    return top[0][0] if top else None


def conf_master(text):
    """The master ports `sentinel monitor kh-master HOST PORT Q` lines of a sentinel.conf
    name."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[:3] == ["sentinel", "monitor", MASTER] and f[4].isdigit():
            out.append(int(f[4]))
    return out


def set_replicaof(text, master_port=None):
    """A data node's config with its replicaof (or slaveof) lines replaced: none, or
    one naming `master_port`."""
    lines = [ln for ln in text.splitlines(keepends=True)
             if not re.match(r"\s*(replicaof|slaveof)\s", ln)]
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if master_port:
        lines.append(f"replicaof 127.0.0.1 {master_port}\n")
    return "".join(lines)


def unrepairable(why):
    warn(f"{NAME}: {why}; wiping {DIR} and creating it fresh")
    return False


def start_and_wait(ports, conf, argv):
    started = [(p, rn.node_start(DIR, p, conf, argv)) for p in ports]
    rn.nodes_wait(rn.PROFILE_START_DEADLINE, DIR, started)


def recover(sentinel):
    """Restarts the dead processes of an existing set-up and waits until it is healthy.
    False (having said why) when the state cannot be repaired that way."""
    t0 = time.monotonic()
    dead_data, dead_sent = [], []
    for p in (*DATA_PORTS, *SENT_PORTS):
        if rn.node_pid(DIR, p) is not None:
            continue
        conf = DIR / str(p) / ("redis.conf" if p in DATA_PORTS else "sentinel.conf")
        if not conf.is_file() or conf.stat().st_size == 0:
            return unrepairable(f"{conf} is missing")
        if tcp_open(p):
            return unrepairable(f"127.0.0.1:{p} is taken by another process")
        (dead_data if p in DATA_PORTS else dead_sent).append(p)
    if dead_data:
        # Follow the sentinels' view: a dead node that is not their master comes back as
        # replica of their master (not as a second master); the original master is
        # never forced back.
        cur = current_master()
        if cur is not None:
            for p in dead_data:
                f = DIR / str(p) / "redis.conf"
                f.write_text(set_replicaof(f.read_text(), None if p == cur else cur))
        log(f"{NAME}: restarting dead data node(s) {' '.join(map(str, dead_data))} "
            f"(sentinels' master: {cur or 'unknown'})...")
        try:
            start_and_wait(dead_data, "redis.conf", ["redis-server"])
        except (Exited, Deadline):
            return unrepairable(f"data node(s) {' '.join(map(str, dead_data))} did not come "
                                f"back (see {LOGS})")
    if dead_sent:
        log(f"{NAME}: restarting dead sentinel(s) {' '.join(map(str, dead_sent))} from "
            "their sentinel.conf...")
        try:
            start_and_wait(dead_sent, "sentinel.conf", sentinel)
        except (Exited, Deadline):
            return unrepairable(f"sentinel(s) {' '.join(map(str, dead_sent))} did not come "
                                f"back (see {LOGS})")
    if not dead_data and not dead_sent:
        log(f"{NAME}: all 5 processes run, waiting for a healthy setup...")
    # every sentinel must monitor kh-master at one of our two data nodes
    for s in SENT_PORTS:
        cur = named_master(s)
        if ours(cur) is None:
            return unrepairable(f"sentinel 127.0.0.1:{s} monitors {cur or 'nothing'} as "
                                f"{MASTER}")
    try:
        m, r = settle(rn.PROFILE_RECOVER_DEADLINE)
    except Deadline as e:
        return unrepairable(f"not healthy {rn.PROFILE_RECOVER_DEADLINE}s after restarting: "
                            f"{e}")
    log(f"{NAME}: up again (master 127.0.0.1:{m}, replica {r}) in "
        f"{time.monotonic() - t0:.1f}s")
    return True


def replica_linked(port):
    if resp.parse_info(resp.ask(port, "INFO", "replication")).get(
            "master_link_status") != "up":
        raise NotReady(f"replica 127.0.0.1:{port} has no link up yet")


def create(sentinel):
    """Wipes the state dir, starts master and replica, then the sentinels, and waits
    until healthy."""
    t0 = time.monotonic()
    m, r = DATA_PORTS
    if not rn.nodes_stop(DIR, (*SENT_PORTS, *DATA_PORTS)):
        fail_profile(NAME, LOGS, "could not stop the old processes")
        return False
    shutil.rmtree(DIR, ignore_errors=True)
    if not ports_free(NAME, (*DATA_PORTS, *SENT_PORTS)):
        return False
    log(f"{NAME}: creating master 127.0.0.1:{m}, replica {r}, sentinels "
        f"{' '.join(map(str, SENT_PORTS))} (state: {DIR})...")
    for p, text in ((m, data_conf(m)), (r, data_conf(r, m))):
        (DIR / str(p)).mkdir(parents=True)
        (DIR / str(p) / "redis.conf").write_text(text)
    try:
        start_and_wait((m, r), "redis.conf", ["redis-server"])
    except (Exited, Deadline) as e:
        fail_profile(NAME, LOGS, "data node(s) did not start ("
                     + rn.describe_wait_failure(e, rn.PROFILE_START_DEADLINE) + ")")
        return False
    # replica linked first, so the sentinels find it in their first INFO
    try:
        wait_until(lambda: replica_linked(r), rn.PROFILE_DEADLINE)
    except Deadline:
        fail_profile(NAME, f"{DIR}/{r}/redis.log",
                     f"replica 127.0.0.1:{r} did not sync from 127.0.0.1:{m}")
        return False
    for p in SENT_PORTS:
        (DIR / str(p)).mkdir(parents=True)
        (DIR / str(p) / "sentinel.conf").write_text(sentinel_conf(p))
    try:
        start_and_wait(SENT_PORTS, "sentinel.conf", sentinel)
    except (Exited, Deadline) as e:
        fail_profile(NAME, LOGS, "sentinel(s) did not start ("
                     + rn.describe_wait_failure(e, rn.PROFILE_START_DEADLINE) + ")")
        return False
    try:
        m, r = settle(rn.PROFILE_DEADLINE)
    except Deadline as e:
        fail_profile(NAME, LOGS, f"not healthy within {rn.PROFILE_DEADLINE}s: {e}")
        return False
    log(f"{NAME}: up (master 127.0.0.1:{m}, replica {r}, sentinels "
        f"{' '.join(map(str, SENT_PORTS))}) in {time.monotonic() - t0:.1f}s")
    return True


def up():
    sentinel = sentinel_cmd() if rn.installed() else None
    if sentinel is None:
        fail_profile(NAME, STATE / "apt.log", "redis-server / redis-cli / redis-sentinel are "
                     "not installed and could not be installed")
        return 1
    if DIR.is_dir():
        try:
            m, r = check()
            for p in (*DATA_PORTS, *SENT_PORTS):
                rn.node_pid(DIR, p)  # repairs lost pid files
            log(f"{NAME}: already up (master 127.0.0.1:{m}, replica {r})")
            return 0
        except NotReady:
            pass
        if recover(sentinel):
            return 0
    return 0 if create(sentinel) else 1


def down():
    if (all(rn.node_pid(DIR, p) is None for p in (*DATA_PORTS, *SENT_PORTS))
            and not DIR.is_dir()):
        log(f"{NAME}: already down")
        return 0
    log(f"{NAME}: stopping...")
    # sentinels first, so they do not fail over while the data nodes stop
    if not rn.nodes_stop(DIR, SENT_PORTS) or not rn.nodes_stop(DIR, DATA_PORTS):
        warn(f"{NAME}: some processes are still alive; keeping {DIR}")
        return 1
    shutil.rmtree(DIR, ignore_errors=True)
    log(f"{NAME}: stopped, {DIR} removed")
    return 0


def status():
    try:
        m, r = check()
        print(f"{NAME}: up (master 127.0.0.1:{m}, replica {r}, sentinels "
              f"{SENT_PORTS[0]}-{SENT_PORTS[-1]})")
        return 0
    except NotReady as e:
        n = sum(resp.ping(p) for p in (*DATA_PORTS, *SENT_PORTS))
        print(f"{NAME}: down" if n == 0 else f"{NAME}: degraded ({n}/5 processes answer; {e})")
        return 3


def env():
    sentinels = ",".join(f"redis://127.0.0.1:{p}" for p in SENT_PORTS)
    return ["export APP__REDIS__MODE=sentinel", f"export APP__REDIS__SENTINELS={sentinels}",
            f"export APP__REDIS__MASTER_NAME={MASTER}"]


def packages():
    out = [] if rn.installed() else ["redis-server", "redis-tools"]
    return out + ([] if which("redis-sentinel") else ["redis-sentinel"])
