"""The processes of the postgres-ha profile and what it asks them: Patroni's REST API,
HAProxy's stats socket, psql; finding, starting and stopping etcd, the Patroni members,
their postmasters, HAProxy and FerretDB. postgres_ha.py composes them."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

from .common import (STATE, NotReady, cmdline, our_pid, pg_tool, pid_gone,
                     read_pid, stop_pids, version_key)

NAME = "postgres-ha"
DIR = STATE / NAME
TPL = Path(__file__).resolve().parent.parent / "postgres-ha"
SQL = Path(__file__).resolve().parent.parent.parent / "sql"
NAMES = ("pg1", "pg2", "pg3")
PG_PORTS = (5441, 5442, 5443)
API_PORTS = (8441, 8442, 8443)
ETCD_PORT, ETCD_PEER_PORT, HAPROXY_PORT, MONGO_PORT = 2479, 2480, 5440, 27027
# Patroni 3.0.2 checks none of these (3.1+ raises ttl to >= 20). The leader key expires
# TTL s after the dead leader's last refresh; Patroni's own rule loop_wait + 2 *
# retry_timeout <= ttl holds; etcd's shortest lease is 2 s.
TTL, LOOP_WAIT, RETRY_TIMEOUT = 5, 1, 2
SU_PASSWORD, REPL_PASSWORD, REWIND_PASSWORD = "kh-ha-postgres", "kh-ha-replicator", \
    "kh-ha-rewinder"
URL = f"postgres://kh:kh@127.0.0.1:{HAPROXY_PORT}/kh_review"
MONGO_URL = f"mongodb://127.0.0.1:{MONGO_PORT}"
FERRET_PG_URL = f"postgres://ferretdb:ferretdb@127.0.0.1:{HAPROXY_PORT}/ferretdb"
FERRET_VERSION = "v1.24.2"

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get_json(url, timeout=2):
    with _opener.open(url, timeout=timeout) as r:
        return json.load(r)


def etcd_healthy():
    try:
        return get_json(f"http://127.0.0.1:{ETCD_PORT}/health").get("health") == "true"
    except (OSError, ValueError):
        return False


def cluster():
    """GET /cluster from the first member's REST API that answers, or None."""
    for p in API_PORTS:
        try:
            return get_json(f"http://127.0.0.1:{p}/cluster")
        except (OSError, ValueError):
            continue
    return None


def leader_of(cl):
    """The leader's name in a /cluster answer; NotReady unless there is exactly one."""
    leaders = [m["name"] for m in (cl or {}).get("members", []) if m.get("role") == "leader"]
    if len(leaders) != 1:
        raise NotReady("no leader" if not leaders else "leaders: " + " ".join(leaders))
    return leaders[0]


def judge(cl, leader_status):
    """Healthy, by Patroni? `cl`: GET /cluster; `leader_status`: a callable giving GET
    on the leader's API URL (its replication). Every member running on the leader's
    timeline, one leader, one sync standby, the others streaming, the sync one in sync.
    Returns (leader, its PostgreSQL port, sync standby, timeline); else NotReady."""
    ms = {m["name"]: m for m in cl.get("members", [])}
    miss = [n for n in NAMES if n not in ms]
    if miss:
        raise NotReady(f"member(s) {' '.join(miss)} not in etcd (Patroni not running?)")
    if cl.get("pause"):
        raise NotReady("the cluster is paused (patronictl resume)")
    leader = ms[leader_of(cl)]
    tl = leader.get("timeline")
    for n in NAMES:
        if ms[n].get("state") != "running":
            raise NotReady(f"{n} is {ms[n].get('state') or 'in an unknown state'}")
        if ms[n].get("timeline") != tl:
            raise NotReady(f"{n} is on timeline {ms[n].get('timeline')}, the leader "
                           f"{leader['name']} on {tl}")
    sync = [n for n in NAMES if ms[n].get("role") == "sync_standby"]
    if len(sync) != 1:
        raise NotReady("no sync standby yet")
    try:
        status = leader_status(leader["api_url"])
    except (OSError, ValueError) as e:
        raise NotReady(f"the leader {leader['name']} does not answer on {leader['api_url']}") \
            from e
    rep = {r.get("application_name"): r for r in status.get("replication") or []}
    for n in NAMES:
        if n != leader["name"] and (rep.get(n) or {}).get("state") != "streaming":
            raise NotReady(f"{n} is not streaming from the leader {leader['name']} yet")
    if rep[sync[0]].get("sync_state") != "sync":
        raise NotReady(f"{sync[0]} is not in sync yet")
    return leader["name"], leader.get("port"), sync[0], tl


def rest_view():
    """etcd answers, and judge() over what Patroni answers now."""
    if not etcd_healthy():
        raise NotReady(f"etcd 127.0.0.1:{ETCD_PORT} does not answer healthy")
    cl = cluster()
    if cl is None:
        raise NotReady("no Patroni REST API answers on 127.0.0.1:"
                       + ",".join(map(str, API_PORTS)))
    return judge(cl, get_json)


def rest_leader():
    cl = cluster()
    if cl is None:
        raise NotReady("no Patroni REST API answers on 127.0.0.1:"
                       + ",".join(map(str, API_PORTS)))
    return leader_of(cl)


def parse_stat(csv_text, backend="postgres"):
    """The servers HAProxy sends connections to (UP, or UP but failing checks) in
    `show stat` output."""
    out = []
    for line in csv_text.splitlines():
        f = line.split(",")
        if (len(f) > 17 and f[0] == backend and f[1] not in ("FRONTEND", "BACKEND")
                and f[17].startswith("UP")):
            out.append(f[1])
    return out


def haproxy_up():
    """parse_stat() of our HAProxy's stats socket ([] when it does not answer)."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(str(DIR / "haproxy.sock"))
            s.sendall(b"show stat\n")
            buf = b""
            while chunk := s.recv(65536):
                buf += chunk
    except OSError:
        return []
    return parse_stat(buf.decode(errors="replace"))


def psql(port, user, password, db, *args, timeout=5):
    """psql on 127.0.0.1:`port`; (exit status, stdout, stderr)."""
    env = {**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": str(timeout)}
    p = subprocess.run([pg_tool("psql"), "-X", "-h", "127.0.0.1", "-p", str(port), "-U", user,
                        "-d", db, *args], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, check=False)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def via_haproxy():
    """"false PORT" when the proxy reaches a primary (on PORT), as kh; else what it
    reached, or ''."""
    _, out, _ = psql(HAPROXY_PORT, "kh", "kh", "kh_review", "-tA", "-c",
                     "SELECT pg_is_in_recovery()::text || ' ' || current_setting('port')",
                     timeout=3)
    return out.strip()


def roles(port, logfile):
    """On the leader: kh / kh_review, ferretdb / ferretdb and FerretDB's _id index
    trigger, as postgres.sh and ferretdb.sh make them on 5432 (idempotent)."""
    runs = [("postgres", ["-f", f"{SQL}/role-and-database.sql", "-v", "role=kh", "-v",
                          "password=kh", "-v", "options=CREATEDB", "-v", "db=kh_review"]),
            ("postgres", ["-f", f"{SQL}/service-role.sql", "-v", "role=kh_app", "-v",
                          "password=kh_app", "-v", "owner=kh"]),
            ("postgres", ["-f", f"{SQL}/role-and-database.sql", "-v", "role=ferretdb", "-v",
                          "password=ferretdb", "-v", "options=", "-v", "db=ferretdb"]),
            ("ferretdb", ["-f", f"{SQL}/ferretdb-id-gin.sql"])]
    with open(logfile, "a") as log:
        for db, args in runs:
            rc, out, err = psql(port, "postgres", SU_PASSWORD, db, "-q", "-v", "ON_ERROR_STOP=1",
                                *args)
            log.write(out + err)
            if rc != 0:
                return False
    return True


# --- processes ---------------------------------------------------------------------

def etcd_pid():
    return our_pid(DIR / "etcd.pid",
                   re.escape(f"etcd --name kh-review-ha --data-dir {DIR}/etcd"))


def haproxy_pid():
    return our_pid(DIR / "haproxy.pid", re.escape(f"haproxy -db -f {DIR}/haproxy.cfg"))


def ferretdb_pid():
    return our_pid(DIR / "ferretdb.pid",
                   r"ferretdb .*--listen-addr=127\.0\.0\.1:" + str(MONGO_PORT))


def patroni_pid(name):
    return our_pid(DIR / name / "patroni.pid", re.escape(f"patroni {DIR}/{name}/patroni.yml"))


def pm_pid(name):
    """The pid of member `name`'s live postmaster, or None."""
    pid = read_pid(DIR / name / "data" / "postmaster.pid")
    if pid is None or pid_gone(pid) or f"-D {DIR}/{name}/data" not in cmdline(pid):
        return None
    return pid


def in_datadir(name):
    """Pids of the processes working in member `name`'s data dir (a postmaster and its
    children, also those a killed postmaster left behind)."""
    target = str(DIR / name / "data")
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.readlink(d / "cwd") == target:
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def stop_all():
    """FerretDB and HAProxy, the Patroni members (each stops its PostgreSQL),
    postmasters left without their Patroni (fast shutdown), whatever still runs in a
    data dir, then etcd. True once all are gone."""
    ok = stop_pids([ferretdb_pid(), haproxy_pid()], grace=30, who=NAME)
    ok &= stop_pids([patroni_pid(n) for n in NAMES], grace=30, who=NAME)
    ok &= stop_pids([pm_pid(n) for n in NAMES], signal.SIGINT, grace=30, who=NAME)
    ok &= stop_pids([p for n in NAMES for p in in_datadir(n)], signal.SIGKILL, grace=30,
                    who=NAME)
    ok &= stop_pids([etcd_pid()], grace=30, who=NAME)
    return ok


def bin_dir():
    """The newest installed PostgreSQL's bin dir, or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                   key=lambda p: version_key(p.parts[-3]))
    return str(found[-1].parent) if found else None


# pg_rewind syncs the whole data dir to disk when it is done: ~20 s of a member's rejoin
# on a busy machine. These members run with fsync off (a killed process loses nothing;
# only a crashed OS would), so Patroni's bin_dir is one of ours: the real PostgreSQL
# binaries, linked, and pg_rewind with --no-sync.
PG_REWIND = """\
#!/bin/sh
# written by kh-review scripts/topologies/topology.py (postgres-ha): Patroni's pg_rewind,
# without the final sync of the data dir (the members run with fsync off)
exec {real}/pg_rewind --no-sync "$@"
"""


def member_bin_dir(real):
    """$DIR/bin: every program of the PostgreSQL bin dir `real` linked, pg_rewind a
    wrapper adding --no-sync (see PG_REWIND); made anew (running members may use it
    meanwhile: swapped in whole) only when it is not so already. Returns its path."""
    d = DIR / "bin"
    wrapper = PG_REWIND.format(real=real)
    try:
        if ((d / "pg_rewind").read_text() == wrapper
                and all((d / f.name).exists() for f in Path(real).iterdir())):
            return str(d)
    except OSError:
        pass
    tmp = DIR / "bin.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(mode=0o755)
    for f in sorted(Path(real).iterdir()):
        if f.name != "pg_rewind":
            (tmp / f.name).symlink_to(f)
    (tmp / "pg_rewind").write_text(wrapper)
    os.chmod(tmp / "pg_rewind", 0o755)
    old = DIR / "bin.old"
    if old.exists():
        shutil.rmtree(old)
    if d.exists():
        d.rename(old)
    tmp.rename(d)
    shutil.rmtree(old, ignore_errors=True)
    return str(d)


def ferretdb_bin():
    """A working FerretDB of our version, looked for as scripts/services/ferretdb.sh does
    (it builds one: `ferretdb.sh install`), or None."""
    from shutil import which
    cands = [c for c in [which("ferretdb")] if c]
    if which("go"):
        env = {**os.environ, "GOTOOLCHAIN": "local"}
        gobin = subprocess.run(["go", "env", "GOBIN"], capture_output=True, text=True,
                               env=env, check=False).stdout.strip()
        if not gobin:
            gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True,
                                    env=env, check=False).stdout.strip()
            gobin = gopath.split(":")[0] + "/bin"
        cands.append(f"{gobin}/ferretdb")
    if os.environ.get("GOBIN"):
        cands.append(f"{os.environ['GOBIN']}/ferretdb")
    cands.append(f"{os.environ.get('HOME', '/root')}/go/bin/ferretdb")
    for c in cands:
        if os.access(c, os.X_OK):
            v = subprocess.run([c, "--version"], capture_output=True, text=True, check=False)
            if f"version: {FERRET_VERSION}" in v.stdout.splitlines():
                return c
    return None


def render(template, values):
    """`template` with every @KEY@ replaced by values[KEY]; a line that is only
    @SERVERS@ (say) becomes the value itself."""
    return re.sub(r"@([A-Z_]+)@", lambda m: str(values[m.group(1)]), template)


def patroni_yml(i, pg_bin_dir):
    """Member i's patroni.yml, with PostgreSQL's programs from `pg_bin_dir`."""
    return render((TPL / "patroni.yml").read_text(), {
        "NAME": NAMES[i], "MDIR": DIR / NAMES[i], "PG_PORT": PG_PORTS[i],
        "API_PORT": API_PORTS[i], "ETCD_PORT": ETCD_PORT, "BIN_DIR": pg_bin_dir, "TTL": TTL,
        "LOOP_WAIT": LOOP_WAIT, "RETRY_TIMEOUT": RETRY_TIMEOUT, "SU_PASSWORD": SU_PASSWORD,
        "REPL_PASSWORD": REPL_PASSWORD, "REWIND_PASSWORD": REWIND_PASSWORD})


def haproxy_cfg():
    servers = "\n".join(f"  server {n} 127.0.0.1:{pg} check port {api}"
                        for n, pg, api in zip(NAMES, PG_PORTS, API_PORTS))
    return render((TPL / "haproxy.cfg").read_text(),
                  {"HAPROXY_PORT": HAPROXY_PORT, "DIR": DIR, "SERVERS": servers})
