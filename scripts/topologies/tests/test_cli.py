"""topology.py's arguments, and what its env and packages verbs print."""

import contextlib
import io
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from kh_topology import cli  # noqa: E402


class Parse(unittest.TestCase):
    def test_every_profile_takes_the_common_verbs(self):
        for profile in cli.PROFILES:
            for verb in cli.COMMON:
                self.assertEqual(cli.parse([profile, verb]), (profile, verb, None))

    def test_the_extra_verbs_and_their_arguments(self):
        self.assertEqual(cli.parse(["rabbitmq-cluster", "pid", "5682"]),
                         ("rabbitmq-cluster", "pid", 5682))
        self.assertEqual(cli.parse(["postgres-ha", "switchover"]),
                         ("postgres-ha", "switchover", None))
        self.assertEqual(cli.parse(["postgres-ha", "switchover", "pg2"]),
                         ("postgres-ha", "switchover", "pg2"))
        self.assertEqual(cli.parse(["postgres-ha", "leader"]), ("postgres-ha", "leader", None))

    def test_what_is_refused(self):
        for argv in ([], ["nope", "up"], ["redis-cluster"], ["redis-cluster", "nope"],
                     ["redis-cluster", "up", "extra"], ["redis-cluster", "pid", "7001"],
                     ["rabbitmq-cluster", "pid"], ["rabbitmq-cluster", "pid", "x"],
                     ["postgres-ha", "leader", "pg1"], ["postgres-ha", "switchover", "a", "b"]):
            with self.subTest(argv=argv), self.assertRaises(cli.Usage):
                cli.parse(argv)

    def test_usage_exits_2(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(cli.main(["redis-sentinel", "pid", "1"]), 2)
        self.assertIn("usage: topology.py redis-sentinel packages|up|down|status|env",
                      err.getvalue())


class Program(unittest.TestCase):
    def run_program(self, *args):
        return subprocess.run([str(HERE / "topology.py"), *args], capture_output=True,
                              text=True, check=False)

    def test_env_lines_are_what_services_sh_evals(self):
        out = self.run_program("redis-cluster", "env")
        self.assertEqual(out.returncode, 0)
        self.assertEqual(out.stdout.splitlines(), [
            "export APP__REDIS__MODE=cluster",
            "export APP__REDIS__NODES=" + ",".join(f"redis://127.0.0.1:{p}"
                                                    for p in range(7001, 7007))])
        out = self.run_program("postgres-ha", "env")
        self.assertEqual(out.stdout, "export APP__DATABASE__URL=postgres://kh:kh@127.0.0.1:5440/"
                         "kh_review\nexport APP__MONGO__URL=mongodb://127.0.0.1:27027\n")
        out = self.run_program("rabbitmq-cluster", "env")
        self.assertIn("export APP__AMQP__BIND_QUEUE_TYPE=quorum\n", out.stdout)

    def test_help_prints_the_profile_description(self):
        out = self.run_program("redis-sentinel", "help")
        self.assertEqual(out.returncode, 0)
        self.assertIn("kh-master", out.stdout)

    def test_no_arguments(self):
        out = self.run_program()
        self.assertEqual(out.returncode, 2)
        self.assertIn("usage: topology.py PROFILE VERB", out.stderr)


if __name__ == "__main__":
    unittest.main()
