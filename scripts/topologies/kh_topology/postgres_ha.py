"""postgres-ha: the PostgreSQL HA set-up the topology tests kill nodes of. Three
PostgreSQL 15 members pg1 pg2 pg3 run by Patroni 3.0 (PostgreSQL on 127.0.0.1:5441 5442
5443, Patroni REST API on 8441 8442 8443), one etcd 3.4 (client 2479, peer 2480; Patroni's
etcd3: section, i.e. etcd's v3 gRPC gateway over plain HTTP, no v2 API), HAProxy on 5440
sending TCP to the member whose REST API answers 200 on /primary (the leader; checked
every 500 ms, see postgres-ha/haproxy.cfg), and a FerretDB on 27027 keeping its data in
the database ferretdb through 5440, so the MongoDB stand-in fails over with PostgreSQL.
Patroni: synchronous_mode (a sync standby: a failover loses no commit), use_pg_rewind,
remove_data_directory_on_rewind_failure and _on_diverged_timelines, wal_log_hints; ttl
5 s, loop_wait 1 s, retry_timeout 2 s (see patroni.TTL); a leader killed -9 is replaced
in ~5-6 s. Configs: scripts/topologies/postgres-ha/ (patroni.yml, haproxy.cfg). Role kh/kh
(CREATEDB) owns kh_review, ferretdb/ferretdb owns ferretdb; the superuser postgres,
replicator and rewinder have fixed passwords (tests only). Separate from, never touching,
the PostgreSQL on 5432 (cluster 15/main) and the FerretDB on 27017. As root: Patroni runs
as the user postgres (by setpriv, which execs in place, so the pid is Patroni's). State in
$STATE/postgres-ha/: etcd/ (its data), etcd.log, haproxy.cfg, haproxy.log, haproxy.sock
(stats), ferretdb.log, admin.log, and <name>/ with patroni.yml, data/, patroni.log,
postgresql.log. Pids (what tests kill -9):
  <name>/patroni.pid                        member <name>'s patroni (python) process
  first line of <name>/data/postmaster.pid  its postmaster
  etcd.pid haproxy.pid ferretdb.pid
  packages   the Debian packages to install first, one a line
  up         healthy: a no-op. Else start whatever is dead (etcd, a Patroni member,
             HAProxy, FerretDB) and wait (max 90 s) until healthy; a member killed with
             its postmaster comes back as a replica (Patroni rewinds it, or clones it
             anew), a postmaster left without its Patroni is adopted by the Patroni
             started. State it cannot repair is wiped and the set-up created fresh (max
             120 s).
  down       stop it (KILL what ignores TERM) and delete its state dir
  status     one line; exit 3 unless healthy: etcd answers, one leader, both others
             running on its timeline and streaming from it, one as sync standby, 5440
             reaches the leader and HAProxy has only it up, FerretDB accepts TCP
  env        APP__DATABASE__URL (through 5440) and APP__MONGO__URL (27027)
  leader     prints the leader's name (pg1, pg2 or pg3), from the REST API
  switchover [NAME]  makes NAME the leader (patronictl switchover) and waits until
             healthy again; NAME must be the sync standby (the default)"""

import os
import shlex
import shutil
import signal
import subprocess
import time

from . import patroni as pt
from .common import (STATE, Deadline, Exited, NotReady, error, fail_profile, log, ports_free,
                     spawn, stop_pids, tcp_open, wait_until, warn, which)
from .patroni import DIR, NAME, NAMES

DEADLINE, RECOVER_DEADLINE, START_DEADLINE = 120, 90, 20
LOGS = f"{DIR}/*.log, {DIR}/<name>/patroni.log, {DIR}/<name>/postgresql.log"
POLL = 0.1  # the checks are in-process HTTP and one psql: cheap


def installed():
    return bool(which("patroni") and which("etcd") and which("haproxy") and pt.bin_dir())


def etcd_start():
    (DIR / "etcd").mkdir(mode=0o700, exist_ok=True)
    e, peer = pt.ETCD_PORT, pt.ETCD_PEER_PORT
    pid = spawn(["etcd", "--name", "kh-review-ha", "--data-dir", f"{DIR}/etcd",
                 "--listen-client-urls", f"http://127.0.0.1:{e}",
                 "--advertise-client-urls", f"http://127.0.0.1:{e}",
                 "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                 "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                 "--initial-cluster", f"kh-review-ha=http://127.0.0.1:{peer}",
                 "--initial-cluster-token", "kh-review-ha", "--initial-cluster-state", "new",
                 "--auto-compaction-retention", "1", "--logger", "zap", "--log-outputs",
                 "stderr"], cwd=DIR, logfile=DIR / "etcd.log", pidfile=DIR / "etcd.pid")

    def healthy():
        if not pt.etcd_healthy():
            raise NotReady("etcd does not answer healthy")
    wait_until(healthy, START_DEADLINE, interval=0.05,
               gone=lambda: "etcd exited" if pt.pid_gone(pid) else None)


def member_start(i, pg_bin):
    """(Re)writes member i's patroni.yml and starts its Patroni as the user postgres. A
    postmaster still running is left for Patroni to adopt; when none runs, what a killed
    one left behind goes first: its orphaned children (KILL) and its postmaster.pid
    (else a reused pid can block the start). `pg_bin`: member_bin_dir()'s."""
    n, d = NAMES[i], DIR / NAMES[i]
    subprocess.run(["install", "-d", "-m", "700", "-o", "postgres", "-g", "postgres", str(d)],
                   check=True)
    if pt.pm_pid(n) is None:
        stop_pids(pt.in_datadir(n), signal.SIGKILL, grace=30, who=NAME)
        (d / "data" / "postmaster.pid").unlink(missing_ok=True)
    (d / "patroni.yml.tmp").write_text(pt.patroni_yml(i, pg_bin))
    os.replace(d / "patroni.yml.tmp", d / "patroni.yml")
    for f in ("patroni.yml", "patroni.log"):
        (d / f).touch()
        shutil.chown(d / f, "postgres", "postgres")
        os.chmod(d / f, 0o600)
    spawn(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--reset-env",
           which("patroni"), str(d / "patroni.yml")],
          cwd=d, logfile=d / "patroni.log", pidfile=d / "patroni.pid")


def haproxy_start():
    (DIR / "haproxy.cfg").write_text(pt.haproxy_cfg())
    spawn(["haproxy", "-db", "-f", str(DIR / "haproxy.cfg")], cwd=DIR,
          logfile=DIR / "haproxy.log", pidfile=DIR / "haproxy.pid")


def ferretdb_start():
    binary = pt.ferretdb_bin()
    if binary is None:
        here = pt.TPL.parent.parent / "services" / "ferretdb.sh"
        if subprocess.run([str(here), "install"], check=False).returncode == 0:
            binary = pt.ferretdb_bin()
    if binary is None:
        fail_profile(NAME, STATE / "ferretdb-build.log",
                     f"no working ferretdb {pt.FERRET_VERSION} binary, and building one failed")
        return False
    (DIR / "ferretdb-state").mkdir(exist_ok=True)
    spawn([binary, "--handler=postgresql", f"--postgresql-url={pt.FERRET_PG_URL}",
           f"--listen-addr=127.0.0.1:{pt.MONGO_PORT}", f"--state-dir={DIR}/ferretdb-state",
           "--debug-addr=-", "--telemetry=disable", "--log-level=info"],
          cwd=DIR, logfile=DIR / "ferretdb.log", pidfile=DIR / "ferretdb.pid",
          env={**os.environ, "FERRETDB_TELEMETRY": "disable"})
    return True


def check():
    """Healthy? (leader, PostgreSQL port, sync standby, timeline), or NotReady with the
    first problem found."""
    view = pt.rest_view()
    leader, port = view[0], view[1]
    out = pt.via_haproxy()
    if out != f"false {port}":
        raise NotReady(f"127.0.0.1:{pt.HAPROXY_PORT} does not reach the leader {leader} "
                       f"(127.0.0.1:{port}) yet" + (f" (but {out})" if out else ""))
    up = pt.haproxy_up()
    if up != [leader]:
        raise NotReady(f"HAProxy sends connections to {' '.join(up) or 'no member'} "
                       f"({'not only to ' if up else ''}the leader {leader})")
    if not tcp_open(pt.MONGO_PORT):
        raise NotReady(f"FerretDB 127.0.0.1:{pt.MONGO_PORT} does not answer")
    return view


def patroni_gone():
    """Which member's Patroni (its pid file's pid) has exited, if one has."""
    for n in NAMES:
        pid = pt.read_pid(DIR / n / "patroni.pid")
        if pid is None or pt.pid_gone(pid):
            return f"the Patroni of {n} exited (see {DIR}/{n}/patroni.log)"
    return None


def settle(deadline, fn):
    """wait_until(fn), giving up as soon as a member's Patroni has exited."""
    return wait_until(fn, deadline, interval=POLL, gone=patroni_gone)


def on_leader():
    """The roles on the leader (retried: the leader may change meanwhile)."""
    view = pt.rest_view()
    if not pt.roles(view[1], DIR / "admin.log"):
        raise NotReady(f"could not create the roles and databases (see {DIR}/admin.log)")


def front():
    """The roles, then HAProxy and FerretDB if not running, and waits until all is
    healthy; returns check()'s value. Raises NotReady / Deadline / Exited."""
    settle(START_DEADLINE, on_leader)
    if pt.haproxy_pid() is None:
        log(f"{NAME}: starting HAProxy on 127.0.0.1:{pt.HAPROXY_PORT}...")
        haproxy_start()
    if pt.ferretdb_pid() is None:
        log(f"{NAME}: starting FerretDB on 127.0.0.1:{pt.MONGO_PORT}...")
        if not ferretdb_start():
            raise NotReady("FerretDB could not be started")
    return settle(START_DEADLINE, check)


def unrepairable(why):
    warn(f"{NAME}: {why}; wiping {DIR} and creating it fresh")
    return False


def recover():
    """Starts the dead processes of an existing set-up and waits until it is healthy;
    says why and returns False when that cannot work (up then creates it afresh)."""
    t0 = time.monotonic()
    for n in NAMES:
        f = DIR / n / "patroni.yml"
        if not f.is_file() or f.stat().st_size == 0:
            return unrepairable(f"{f} is missing")
    if pt.etcd_pid() is None:
        if not (DIR / "etcd" / "member").is_dir():
            return unrepairable(f"etcd's data dir {DIR}/etcd is gone")
        if tcp_open(pt.ETCD_PORT):
            return unrepairable(f"127.0.0.1:{pt.ETCD_PORT} is taken by another process")
        log(f"{NAME}: restarting etcd...")
        try:
            etcd_start()
        except (Deadline, Exited):
            return unrepairable(f"etcd did not come back (see {DIR}/etcd.log)")
    dead, pg_bin = [], None
    for i, n in enumerate(NAMES):
        if pt.patroni_pid(n) is not None:
            continue
        if tcp_open(pt.API_PORTS[i]) or (tcp_open(pt.PG_PORTS[i]) and pt.pm_pid(n) is None):
            return unrepairable(f"a port of {n} ({pt.PG_PORTS[i]} / {pt.API_PORTS[i]}) is "
                                "taken by another process")
        dead.append(n)
        pg_bin = pg_bin or pt.member_bin_dir(pt.bin_dir())
        member_start(i, pg_bin)
    if dead:
        log(f"{NAME}: restarted the Patroni of {' '.join(dead)}, waiting for them to "
            "rejoin...")
    else:
        log(f"{NAME}: etcd and all members run, waiting for a healthy cluster...")
    try:
        settle(RECOVER_DEADLINE, pt.rest_view)
        leader, port, sync, _ = front()
    except (Deadline, Exited, NotReady) as e:
        return unrepairable(f"the cluster is not healthy {RECOVER_DEADLINE}s after "
                            f"restarting: {e}")
    log(f"{NAME}: up again (leader {leader} on {port}, sync {sync}) in "
        f"{time.monotonic() - t0:.1f}s")
    return True


def create():
    """Wipes the state dir, starts etcd and the three members (one of them bootstraps
    the cluster, the others clone it), then the roles, HAProxy and FerretDB."""
    t0 = time.monotonic()
    if not pt.stop_all():
        fail_profile(NAME, LOGS, "could not stop the old processes")
        return False
    shutil.rmtree(DIR, ignore_errors=True)
    if not ports_free(NAME, (pt.ETCD_PORT, pt.ETCD_PEER_PORT, pt.HAPROXY_PORT, *pt.PG_PORTS,
                             *pt.API_PORTS, pt.MONGO_PORT)):
        return False
    log(f"{NAME}: creating etcd 127.0.0.1:{pt.ETCD_PORT}, members {' '.join(NAMES)} "
        f"({' '.join(map(str, pt.PG_PORTS))}), HAProxy {pt.HAPROXY_PORT}, FerretDB "
        f"{pt.MONGO_PORT} (state: {DIR})...")
    DIR.mkdir(parents=True)
    try:
        etcd_start()
    except (Deadline, Exited):
        fail_profile(NAME, DIR / "etcd.log", f"etcd did not start on 127.0.0.1:{pt.ETCD_PORT}")
        return False
    pg_bin = pt.member_bin_dir(pt.bin_dir())
    for i in range(len(NAMES)):
        member_start(i, pg_bin)
    try:
        settle(DEADLINE, pt.rest_view)
    except (Deadline, Exited) as e:
        fail_profile(NAME, LOGS, f"the cluster did not form within {DEADLINE}s: {e}")
        return False
    try:
        leader, port, sync, _ = front()
    except (Deadline, Exited, NotReady) as e:
        fail_profile(NAME, LOGS, str(e))
        return False
    log(f"{NAME}: up (leader {leader} on {port}, sync {sync}, HAProxy 127.0.0.1:"
        f"{pt.HAPROXY_PORT}, FerretDB {pt.MONGO_PORT}) in {time.monotonic() - t0:.1f}s")
    return True


def up():
    if os.geteuid() != 0:
        error(f"{NAME}: run as root (Patroni runs as the user postgres)")
        return 1
    if not installed():
        fail_profile(NAME, STATE / "apt.log", "patroni, etcd-server, haproxy and postgresql "
                     "are not all installed, and could not be installed")
        return 1
    if DIR.is_dir():
        try:
            log(f"{NAME}: already up (leader {check()[0]})")
            return 0
        except NotReady:
            pass
        if recover():
            return 0
    return 0 if create() else 1


def running():
    """How many of etcd, HAProxy, FerretDB and the Patroni members run."""
    return (sum(f() is not None for f in (pt.etcd_pid, pt.haproxy_pid, pt.ferretdb_pid))
            + sum(pt.patroni_pid(n) is not None for n in NAMES))


def down():
    if (running() == 0 and all(pt.pm_pid(n) is None for n in NAMES)
            and not DIR.is_dir()):
        log(f"{NAME}: already down")
        return 0
    log(f"{NAME}: stopping...")
    if not pt.stop_all():
        warn(f"{NAME}: some processes are still alive; keeping {DIR}")
        return 1
    shutil.rmtree(DIR, ignore_errors=True)
    log(f"{NAME}: stopped, {DIR} removed")
    return 0


def status():
    try:
        leader, port, sync, _ = check()
        print(f"{NAME}: up (leader {leader} on {port}, sync {sync}, haproxy 127.0.0.1:"
              f"{pt.HAPROXY_PORT}, ferretdb {pt.MONGO_PORT})")
        return 0
    except NotReady as e:
        if not DIR.is_dir():
            print(f"{NAME}: down (not created)")
        else:
            print(f"{NAME}: down ({e}; {running()}/6 processes run)")
        return 3


def switchover(to=None):
    """Makes `to` (the sync standby, by default; no other can) the leader and waits
    until healthy again."""
    t0 = time.monotonic()
    try:
        leader, _, sync, _ = check()
    except NotReady as e:
        error(f"{NAME}: not healthy, no switchover: {e}")
        return 1
    to = to or sync
    if to != sync:
        error(f"{NAME}: only the sync standby ({sync}) can take over (synchronous_mode), "
              f"not '{to}'")
        return 1
    port = pt.PG_PORTS[NAMES.index(to)]
    log(f"{NAME}: switchover {leader} -> {to}...")
    p = subprocess.run(["patronictl", "-c", f"{DIR}/{leader}/patroni.yml", "switchover",
                        "--leader", leader, "--candidate", to, "--force"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    out = p.stdout + p.stderr
    if "Successfully switched over" not in out:
        last = [ln for ln in out.splitlines() if not ln.startswith(("+", "|"))][-1:]
        error(f"{NAME}: patronictl switchover failed: {' '.join(last)}")
        return 1

    def leads():
        if pt.via_haproxy() != f"false {port}":
            raise NotReady(f"127.0.0.1:{pt.HAPROXY_PORT} does not reach {to} yet")

    def new_leader():
        view = check()
        if view[0] != to:
            raise NotReady(f"{view[0]} leads, not {to}")
        return view
    try:
        settle(RECOVER_DEADLINE, leads)
        log(f"{NAME}: {to} leads, 127.0.0.1:{pt.HAPROXY_PORT} reaches it")
    except (Deadline, Exited):
        pass
    try:
        view = settle(RECOVER_DEADLINE, new_leader)
    except (Deadline, Exited) as e:
        fail_profile(NAME, LOGS, f"not healthy with leader {to} {RECOVER_DEADLINE}s after the "
                     f"switchover: {e}")
        return 1
    log(f"{NAME}: switched over to {to} (sync {view[2]}) in {time.monotonic() - t0:.1f}s")
    return 0


def leader():
    try:
        print(pt.rest_leader())
        return 0
    except NotReady as e:
        error(f"{NAME}: {e}")
        return 1


def env():
    return [f"export APP__DATABASE__URL={shlex.quote(pt.URL)}",
            f"export APP__MONGO__URL={shlex.quote(pt.MONGO_URL)}"]


def packages():
    wanted = [("patroni", "patroni"), ("etcd", "etcd-server"), ("haproxy", "haproxy")]
    out = [pkg for cmd, pkg in wanted if not which(cmd)]
    return out + ([] if pt.bin_dir() else ["postgresql"])
