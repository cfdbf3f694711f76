"""common: the wait with a deadline, pids and pid files, spawning, version order."""

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kh_topology import common  # noqa: E402
from kh_topology.common import Deadline, Exited, NotReady, wait_until  # noqa: E402


class FakeClock:
    """A clock that only moves when the wait sleeps."""

    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s


class WaitUntil(unittest.TestCase):
    def test_returns_the_value_of_the_first_success_without_sleeping(self):
        clock = FakeClock()
        self.assertEqual(wait_until(lambda: "ok", 5, clock=clock, sleep=clock.sleep), "ok")
        self.assertEqual(clock.sleeps, [])

    def test_polls_at_the_interval_until_the_check_passes(self):
        clock, calls = FakeClock(), []

        def check():
            calls.append(clock.now)
            if len(calls) < 4:
                raise NotReady("not yet")
            return len(calls)
        self.assertEqual(wait_until(check, 5, interval=0.1, clock=clock, sleep=clock.sleep), 4)
        self.assertEqual(clock.sleeps, [0.1, 0.1, 0.1])

    def test_gives_up_at_the_deadline_with_the_last_reason(self):
        clock, n = FakeClock(), [0]

        def check():
            n[0] += 1
            raise NotReady(f"attempt {n[0]}")
        with self.assertRaises(Deadline) as e:
            wait_until(check, 1.0, interval=0.25, clock=clock, sleep=clock.sleep)
        self.assertEqual(str(e.exception), "attempt 5")
        self.assertAlmostEqual(clock.now, 101.0)

    def test_the_check_runs_once_more_at_the_deadline_and_may_pass(self):
        clock = FakeClock()

        def check():
            if clock.now < 101.0:
                raise NotReady("early")
            return "late"
        self.assertEqual(wait_until(check, 1.0, interval=0.5, clock=clock, sleep=clock.sleep),
                         "late")

    def test_stops_as_soon_as_the_process_it_waits_for_is_gone(self):
        clock = FakeClock()

        def check():
            raise NotReady("no answer")
        gone = iter([None, None, "7001"])
        with self.assertRaises(Exited) as e:
            wait_until(check, 60, interval=0.1, gone=lambda: next(gone), clock=clock,
                       sleep=clock.sleep)
        self.assertEqual(str(e.exception), "7001")
        self.assertEqual(len(clock.sleeps), 2)

    def test_other_errors_are_not_swallowed(self):
        def check():
            raise KeyError("bug")
        with self.assertRaises(KeyError):
            wait_until(check, 5)


class Pids(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_read_pid_takes_the_first_line_and_refuses_garbage(self):
        f = self.dir / "x.pid"
        f.write_text("1234\n/var/lib/data\n")
        self.assertEqual(common.read_pid(f), 1234)
        f.write_text("1234")  # RabbitMQ writes no newline
        self.assertEqual(common.read_pid(f), 1234)
        f.write_text("abc\n")
        self.assertIsNone(common.read_pid(f))
        self.assertIsNone(common.read_pid(self.dir / "missing.pid"))

    def test_pid_alive_checks_the_command_line_against_pid_reuse(self):
        f = self.dir / "me.pid"
        f.write_text(f"{os.getpid()}\n")
        self.assertEqual(common.pid_alive(f), os.getpid())
        self.assertEqual(common.pid_alive(f, r"python"), os.getpid())
        self.assertIsNone(common.pid_alive(f, r"redis-server .*:7001"))

    def test_a_zombie_is_gone(self):
        p = subprocess.Popen(["true"])
        common.wait_until(lambda: common.pid_gone(p.pid) or
                          (_ for _ in ()).throw(NotReady("running")), 5, interval=0.01)
        self.assertTrue(common.pid_gone(p.pid))  # exited, not yet reaped: a zombie
        p.wait()
        self.assertTrue(common.pid_gone(p.pid))

    def test_spawn_outlives_nothing_of_ours_and_writes_its_pid(self):
        pidf, logf = self.dir / "s.pid", self.dir / "s.log"
        pid = common.spawn(["sh", "-c", "echo started; exec sleep 30"], cwd=self.dir,
                           logfile=logf, pidfile=pidf)
        try:
            self.assertEqual(common.read_pid(pidf), pid)
            self.assertEqual(os.getsid(pid), pid)  # its own session
            common.wait_until(lambda: "started" in logf.read_text() or
                              (_ for _ in ()).throw(NotReady("")), 5, interval=0.01)
            self.assertTrue(common.stop_pids([pid], signal.SIGTERM, grace=5))
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def test_stop_pids_kills_what_ignores_the_signal(self):
        pid = common.spawn(["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"],
                           cwd=self.dir, logfile=self.dir / "t.log")
        time.sleep(0.2)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertTrue(common.stop_pids([pid], signal.SIGTERM, grace=0.3))
        self.assertIn(f"pid(s) {pid} ignored TERM; sending KILL", err.getvalue())
        self.assertTrue(common.pid_gone(pid))

    def test_find_pids_matches_command_lines_oldest_first(self):
        marker = f"kh-topology-test-{os.getpid()}"
        ps = []
        for _ in range(2):
            # One process that never forks: a shell's child, between its fork and its
            # exec, carries the shell's command line (the marker) for a moment.
            ps.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                                        marker], start_new_session=True))
            time.sleep(0.02)  # start times are in clock ticks
        try:
            self.assertEqual(common.find_pids(marker), [p.pid for p in ps])
            self.assertEqual(common.find_pids(marker + "-none"), [])
        finally:
            for p in ps:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


class Misc(unittest.TestCase):
    def test_versions_sort_as_numbers(self):
        self.assertEqual(sorted(["9.6", "15", "13", "16.1"], key=common.version_key),
                         ["9.6", "13", "15", "16.1"])

    def test_tcp_open_says_no_for_a_closed_port(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        self.assertFalse(common.tcp_open(port, timeout=0.5))
        s.listen()
        self.assertTrue(common.tcp_open(port, timeout=0.5))
        s.close()


if __name__ == "__main__":
    unittest.main()
