"""What every topology shares: log lines, the state dir, processes (pid files, starting
one in its own session, stopping a few), TCP checks, and waiting on a condition with a
deadline. Standard library only."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

STATE = Path(os.environ.get("KH_STATE_DIR", "/var/tmp/kh-review"))

# Log lines count seconds from the start of scripts/services.sh (it exports
# _KH_SERVICES_STARTED), so the lines of its parts read as one run.
_STARTED = int(os.environ.get("_KH_SERVICES_STARTED") or time.time())

# Root runs commands as is; anyone else through sudo.
ROOT = [] if os.geteuid() == 0 else ["sudo"]


def log(msg):
    print(f"[services] {msg} ({int(time.time()) - _STARTED}s)", flush=True)


def warn(msg):
    print(f"[services] WARNING: {msg}", file=sys.stderr, flush=True)


def error(msg):
    print(f"[services] ERROR: {msg}", file=sys.stderr, flush=True)


def fail_profile(profile, logs, msg):
    """Why PROFILE is not up, and where to read more."""
    error(f"{profile}: {msg}")
    print(f"[services]        read the logs: {logs}", file=sys.stderr, flush=True)


class NotReady(Exception):
    """A check is not satisfied (yet); the message says why."""


class Deadline(Exception):
    """A wait ran out of time; the message is the check's last reason."""


class Exited(Exception):
    """A process a wait depended on exited; the message says which."""


def wait_until(check, deadline, *, interval=0.1, gone=None, clock=time.monotonic,
               sleep=time.sleep):
    """Runs `check` every `interval` s until it returns (its value is returned), for at
    most `deadline` s. `check` raises NotReady while it is not satisfied. Raises Deadline
    (with the last reason) at the deadline, and Exited as soon as `gone()` returns a
    message (a process the check waits for has died)."""
    end = clock() + deadline
    while True:
        try:
            return check()
        except NotReady as e:
            last = str(e)
        if gone is not None:
            why = gone()
            if why:
                raise Exited(why)
        if clock() >= end:
            raise Deadline(last)
        sleep(interval)


def ready(check):
    """The value of `check()`, or None when it is not ready."""
    try:
        return check()
    except NotReady:
        return None


def tcp_open(port, host="127.0.0.1", timeout=2.0):
    """Something accepts a TCP connection on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def ports_free(profile, ports):
    """Nothing (foreign) listens on these ports; says which one is taken."""
    for p in ports:
        if tcp_open(p):
            error(f"{profile}: 127.0.0.1:{p} is in use by another process (not started by "
                  f"this script for {profile}); free it first")
            return False
    return True


# --- processes ---------------------------------------------------------------------

def pid_gone(pid):
    """No such process, or only a zombie of it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].split()[0] == "Z"


def all_gone(pids):
    return all(pid_gone(p) for p in pids)


def cmdline(pid):
    """The command line of `pid`, its arguments joined by spaces ('' if unknown)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def read_pid(pidfile):
    """The pid on the first line of `pidfile`, or None."""
    try:
        first = Path(pidfile).read_text().split("\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() else None


def pid_alive(pidfile, pattern=None):
    """The pid in `pidfile` when it is a live process whose command line matches the
    regular expression `pattern` (if given: guards against a reused pid); else None."""
    pid = read_pid(pidfile)
    if pid is None or pid_gone(pid):
        return None
    if pattern is not None:
        line = cmdline(pid)
        if line and not re.search(pattern, line):
            return None
    return pid


def start_time(pid):
    """The start time of `pid` in clock ticks since boot (for "the oldest")."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def find_pids(pattern):
    """Live processes whose command line matches `pattern`, oldest first (not ours)."""
    found = []
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        pid = int(d.name)
        if re.search(pattern, cmdline(pid)) and not pid_gone(pid):
            found.append(pid)
    return sorted(found, key=start_time)


def our_pid(pidfile, pattern):
    """The pid of our live process: from `pidfile`, else (lost or stale) the oldest one
    whose command line matches `pattern`, which is then written to `pidfile`."""
    pid = pid_alive(pidfile, pattern)
    if pid is not None:
        return pid
    found = find_pids(pattern)
    if not found:
        return None
    if Path(pidfile).parent.is_dir():
        Path(pidfile).write_text(f"{found[0]}\n")
    return found[0]


def spawn(argv, *, cwd, logfile, pidfile=None, env=None):
    """Starts `argv` in its own session (it outlives this program), from `cwd`, its
    output appended to `logfile`, no descriptor of ours inherited; writes its pid to
    `pidfile` if given and returns it."""
    with open(logfile, "ab") as out:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True,
                             close_fds=True)
    # Not waited for: the child outlives us. Popen would warn about that at exit.
    p.returncode = 0
    if pidfile is not None:
        Path(pidfile).write_text(f"{p.pid}\n")
    return p.pid


def signal_pids(pids, sig, root=False):
    if not pids:
        return
    if root and ROOT:
        subprocess.run([*ROOT, "kill", f"-{sig.name[3:]}", *map(str, pids)],
                       stderr=subprocess.DEVNULL, check=False)
        return
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_pids(pids, sig=signal.SIGTERM, *, grace=15.0, who="", root=False):
    """Sends `sig`, waits up to `grace` s, then KILLs the stubborn ones and waits 5 s
    more. True once all are gone."""
    pids = [p for p in pids if p]
    if not pids:
        return True
    signal_pids(pids, sig, root)
    try:
        wait_until(lambda: _gone_or_not_ready(pids), grace)
        return True
    except Deadline:
        pass
    left = [p for p in pids if not pid_gone(p)]
    warn(f"{who}{': ' if who else ''}pid(s) {' '.join(map(str, left))} ignored "
         f"{sig.name[3:]}; sending KILL")
    signal_pids(left, signal.SIGKILL, root)
    try:
        wait_until(lambda: _gone_or_not_ready(pids), 5)
        return True
    except Deadline:
        return False


def _gone_or_not_ready(pids):
    left = [p for p in pids if not pid_gone(p)]
    if left:
        raise NotReady(f"pid(s) {' '.join(map(str, left))} still run")
    return True


def pg_tool(name):
    """The newest installed PostgreSQL's NAME (psql), not Debian's Perl wrapper of the
    same name in /usr/bin (~0.1 s a call); just NAME when there is none."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
                   key=lambda p: version_key(p.parts[-3]))
    return str(found[-1]) if found else name


def version_key(text):
    """Sort key of a version string: '9.6' < '15' < '15.2'."""
    return [int(x) if x.isdigit() else x for x in re.split(r"[.-]", text)]


def which(name):
    from shutil import which as _which
    return _which(name)
