"""postgres-ha's and rabbitmq-cluster's logic: Patroni's and RabbitMQ's answers judged,
HAProxy's stats read, configs rendered."""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kh_topology import patroni as pt  # noqa: E402
from kh_topology import rabbitmq_nodes as rmq  # noqa: E402
from kh_topology.common import NotReady  # noqa: E402


def cluster(**changes):
    """GET /cluster of a healthy set-up: pg2 leads, pg1 is its sync standby."""
    members = {
        "pg1": {"name": "pg1", "role": "sync_standby", "state": "running", "timeline": 3,
                "port": 5441, "api_url": "http://127.0.0.1:8441/patroni"},
        "pg2": {"name": "pg2", "role": "leader", "state": "running", "timeline": 3,
                "port": 5442, "api_url": "http://127.0.0.1:8442/patroni"},
        "pg3": {"name": "pg3", "role": "replica", "state": "running", "timeline": 3,
                "port": 5443, "api_url": "http://127.0.0.1:8443/patroni"},
    }
    for name, fields in changes.items():
        if fields is None:
            del members[name]
        else:
            members[name].update(fields)
    return {"members": list(members.values())}


def leader_status(sync_state="sync", pg3="streaming"):
    return lambda url: {"replication": [
        {"application_name": "pg1", "state": "streaming", "sync_state": sync_state},
        {"application_name": "pg3", "state": pg3, "sync_state": "async"}]}


class PatroniJudge(unittest.TestCase):
    def test_healthy(self):
        self.assertEqual(pt.judge(cluster(), leader_status()), ("pg2", 5442, "pg1", 3))

    def verdict(self, cl, status=None):
        with self.assertRaises(NotReady) as e:
            pt.judge(cl, status or leader_status())
        return str(e.exception)

    def test_what_is_not_healthy_yet(self):
        self.assertEqual(self.verdict(cluster(pg3=None)),
                         "member(s) pg3 not in etcd (Patroni not running?)")
        self.assertEqual(self.verdict(dict(cluster(), pause=True)),
                         "the cluster is paused (patronictl resume)")
        self.assertEqual(self.verdict(cluster(pg2={"role": "replica"})), "no leader")
        self.assertEqual(self.verdict(cluster(pg1={"role": "leader"})), "leaders: pg1 pg2")
        self.assertEqual(self.verdict(cluster(pg3={"state": "starting"})), "pg3 is starting")
        self.assertEqual(self.verdict(cluster(pg1={"timeline": 2})),
                         "pg1 is on timeline 2, the leader pg2 on 3")
        self.assertEqual(self.verdict(cluster(pg1={"role": "replica"})), "no sync standby yet")
        self.assertEqual(self.verdict(cluster(), leader_status(pg3="catchup")),
                         "pg3 is not streaming from the leader pg2 yet")
        self.assertEqual(self.verdict(cluster(), leader_status(sync_state="potential")),
                         "pg1 is not in sync yet")

    def test_a_leader_whose_api_does_not_answer(self):
        def refused(url):
            raise ConnectionRefusedError(url)
        self.assertEqual(self.verdict(cluster(), refused),
                         "the leader pg2 does not answer on http://127.0.0.1:8442/patroni")

    def test_leader_of(self):
        self.assertEqual(pt.leader_of(cluster()), "pg2")
        with self.assertRaises(NotReady):
            pt.leader_of(None)


class HaproxyStat(unittest.TestCase):
    def test_only_the_servers_up(self):
        head = "# pxname,svname," + ",".join(f"f{i}" for i in range(2, 40))

        def row(px, sv, status):
            f = [px, sv] + ["0"] * 15 + [status] + ["0"] * 10
            return ",".join(f)
        text = "\n".join([head, row("postgres", "FRONTEND", "OPEN"),
                          row("postgres", "pg1", "DOWN"), row("postgres", "pg2", "UP"),
                          row("postgres", "pg3", "UP 1/2"), row("other", "x", "UP"),
                          row("postgres", "BACKEND", "UP"), ""])
        self.assertEqual(pt.parse_stat(text), ["pg2", "pg3"])


class Templates(unittest.TestCase):
    def test_render(self):
        self.assertEqual(pt.render("a @X@ b\n@Y@\n", {"X": 1, "Y": "l1\nl2"}), "a 1 b\nl1\nl2\n")
        with self.assertRaises(KeyError):
            pt.render("@MISSING@", {})

    def test_patroni_yml_has_every_placeholder_filled(self):
        text = pt.patroni_yml(1, "/x/bin")
        self.assertNotRegex(text, r"@[A-Z_]+@")
        self.assertIn("name: pg2\n", text)
        self.assertIn("listen: 127.0.0.1:5442\n", text)
        self.assertIn("listen: 127.0.0.1:8442\n", text)
        self.assertIn(f"data_dir: {pt.DIR}/pg2/data\n", text)
        self.assertIn("ttl: 5\n", text)

    def test_haproxy_cfg_lists_the_three_members(self):
        text = pt.haproxy_cfg()
        self.assertNotRegex(text, r"@[A-Z_]+@")
        self.assertIn("bind 127.0.0.1:5440\n", text)
        self.assertIn(f"stats socket {pt.DIR}/haproxy.sock", text)
        for n, pg, api in zip(pt.NAMES, pt.PG_PORTS, pt.API_PORTS):
            self.assertIn(f"  server {n} 127.0.0.1:{pg} check port {api}\n", text + "\n")


class Rabbitmq(unittest.TestCase):
    STATUS = json.dumps({"running_nodes": ["kh-rmq2@localhost", "kh-rmq1@localhost",
                                           "kh-rmq3@localhost"],
                         "disk_nodes": ["kh-rmq3@localhost", "kh-rmq1@localhost",
                                        "kh-rmq2@localhost"],
                         "partitions": {}})

    def test_names_and_environment(self):
        self.assertEqual(rmq.nname(5682), "kh-rmq2@localhost")
        self.assertEqual(rmq.all_names(),
                         "kh-rmq1@localhost,kh-rmq2@localhost,kh-rmq3@localhost")
        env = rmq.node_env(5683)
        self.assertEqual(env["RABBITMQ_DIST_PORT"], "25683")
        self.assertEqual(env["RABBITMQ_NODENAME"], "kh-rmq3@localhost")
        self.assertEqual(env["HOME"], f"{rmq.DIR}/5683/home")
        self.assertEqual(env["RABBITMQ_PID_FILE"], f"{rmq.DIR}/5683/rabbitmq.pid")
        for var in ("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "RABBITMQ_CTL_ERL_ARGS"):
            self.assertIn("inet_dist_use_interface {127,0,0,1}", env[var])
            self.assertIn("+sbwt none", env[var])

    def test_parse_status(self):
        self.assertEqual(rmq.parse_status(self.STATUS), (rmq.all_names(), rmq.all_names(), 0))
        self.assertIsNone(rmq.parse_status("Error: unable to perform an operation"))
        self.assertIsNone(rmq.parse_status("{}"))

    def test_judge(self):
        listening = {p: True for p in rmq.PORTS}
        self.assertEqual(rmq.judge(listening, rmq.parse_status(self.STATUS)), "3 running")
        with self.assertRaisesRegex(NotReady, "kh-rmq2@localhost does not accept"):
            rmq.judge({**listening, 5682: False}, None)
        with self.assertRaisesRegex(NotReady, "cluster_status failed"):
            rmq.judge(listening, None)
        two = ("kh-rmq1@localhost,kh-rmq3@localhost", rmq.all_names(), 0)
        with self.assertRaisesRegex(NotReady, "sees running: kh-rmq1@localhost,kh-rmq3"):
            rmq.judge(listening, two)
        with self.assertRaisesRegex(NotReady, "reports 1 partition"):
            rmq.judge(listening, (rmq.all_names(), rmq.all_names(), 1))

    def test_cookie(self):
        c = rmq.cookie()
        self.assertRegex(c, r"^[A-Z]{32}$")
        self.assertNotEqual(c, rmq.cookie())


if __name__ == "__main__":
    unittest.main()
