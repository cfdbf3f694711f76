"""The Redis profiles' logic: RESP, CLUSTER NODES views, the health verdicts, configs."""

import socket
import sys
import threading
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kh_topology import redis_cluster as rc  # noqa: E402
from kh_topology import redis_sentinel as rs  # noqa: E402
from kh_topology import resp  # noqa: E402
from kh_topology.common import NotReady  # noqa: E402


class Resp(unittest.TestCase):
    def test_encodes_a_command_as_an_array_of_bulk_strings(self):
        self.assertEqual(resp.encode(["CLUSTER", "INFO"]),
                         b"*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n")
        self.assertEqual(resp.encode(["REPLICAOF", "127.0.0.1", 6391]),
                         b"*3\r\n$9\r\nREPLICAOF\r\n$9\r\n127.0.0.1\r\n$4\r\n6391\r\n")

    def test_parses_every_reply_type(self):
        self.assertEqual(resp.parse(b"+PONG\r\n"), ("PONG", 7))
        self.assertEqual(resp.parse(b":42\r\n")[0], 42)
        self.assertEqual(resp.parse(b"$5\r\nhello\r\n")[0], "hello")
        self.assertIsNone(resp.parse(b"$-1\r\n")[0])
        self.assertEqual(resp.parse(b"*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6391\r\n")[0],
                         ["127.0.0.1", "6391"])
        self.assertEqual(resp.parse(b"*2\r\n*1\r\n:1\r\n$0\r\n\r\n")[0], [[1], ""])
        err = resp.parse(b"-ERR no such master\r\n")[0]
        self.assertIsInstance(err, resp.ReplyError)

    def test_an_incomplete_reply_asks_for_more(self):
        for partial in (b"$5\r\nhel", b"*2\r\n$1\r\na\r\n", b"+PON"):
            with self.assertRaises(resp._Incomplete):
                resp.parse(partial)

    def test_a_bulk_string_may_hold_crlf(self):
        text = "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
        raw = b"$%d\r\n%s\r\n" % (len(text), text.encode())
        self.assertEqual(resp.parse(raw)[0], text)
        self.assertEqual(resp.parse_info(text), {"role": "master", "connected_slaves": "1"})

    def test_call_reads_a_reply_split_over_several_packets(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()

        def serve():
            c, _ = srv.accept()
            c.recv(1024)
            for part in (b"*2\r\n$3\r\nfoo", b"\r\n$3\r\n", b"bar\r\n"):
                c.sendall(part)
            c.close()
        t = threading.Thread(target=serve)
        t.start()
        self.assertEqual(resp.call(srv.getsockname()[1], "GET", "x"), ["foo", "bar"])
        t.join()
        srv.close()

    def test_ask_is_none_when_nothing_answers(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.assertIsNone(resp.ask(port, "PING", timeout=0.5))
        self.assertFalse(resp.ping(port))

    def test_pairs(self):
        self.assertEqual(resp.pairs(["flags", "master", "port", "6391"]),
                         {"flags": "master", "port": "6391"})
        self.assertEqual(resp.pairs(None), {})


# CLUSTER NODES of a healthy cluster: 7001-7003 masters, 7004-7006 their replicas.
NODES = """\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7002@17002 master - 0 1700000000000 2 connected 5461-10922
a3 127.0.0.1:7003@17003 master - 0 1700000000000 3 connected 10923-16383
a4 127.0.0.1:7004@17004 slave a1 0 1700000000000 1 connected
a5 127.0.0.1:7005@17005 slave a2 0 1700000000000 2 connected
a6 127.0.0.1:7006@17006 slave a3 0 1700000000000 3 connected
"""
VIEW = ["7001 M 0-5460", "7002 M 5461-10922", "7003 M 10923-16383", "7004 S 7001",
        "7005 S 7002", "7006 S 7003"]


def healthy_info():
    return {"cluster_state": "ok", "cluster_slots_assigned": "16384",
            "cluster_slots_ok": "16384", "cluster_known_nodes": "6"}


def online(replica):
    return {"role": "master",
            "slave0": f"ip=127.0.0.1,port={replica},state=online,offset=1,lag=0"}


class ClusterView(unittest.TestCase):
    def test_a_healthy_cluster(self):
        self.assertEqual(rc.view(NODES), VIEW)

    def test_failing_and_disconnected_nodes_are_bad(self):
        text = NODES.replace("a3 127.0.0.1:7003@17003 master -", "a3 127.0.0.1:7003@17003 "
                             "master,fail -").replace("7006 slave a3 0 1700000000000 3 "
                                                      "connected", "7006 slave a3 0 0 3 "
                                                      "disconnected")
        v = rc.view(text)
        self.assertIn("BAD 7003 master,fail connected", v)
        self.assertIn("BAD 7006 slave disconnected", v)

    def test_a_master_without_slots_and_hostnames_in_the_address(self):
        text = "b1 127.0.0.1:7001@17001,host.example myself,master - 0 0 1 connected\n"
        self.assertEqual(rc.view(text), ["7001 M -"])

    def test_a_replica_of_an_unknown_master(self):
        text = "b4 127.0.0.1:7004@17004 slave zz 0 0 1 connected\n"
        self.assertEqual(rc.view(text), ["7004 S ?"])


class ClusterJudge(unittest.TestCase):
    def setUp(self):
        self.infos = {p: healthy_info() for p in rc.PORTS}
        self.views = {p: list(VIEW) for p in rc.PORTS}
        self.reps = {7001: online(7004), 7002: online(7005), 7003: online(7006)}

    def test_healthy_names_the_masters(self):
        self.assertEqual(rc.judge(self.infos, self.views, self.reps), "7001 7002 7003")

    def verdict(self):
        with self.assertRaises(NotReady) as e:
            rc.judge(self.infos, self.views, self.reps)
        return str(e.exception)

    def test_a_node_that_does_not_answer(self):
        self.infos[7005] = {}
        self.assertEqual(self.verdict(), "127.0.0.1:7005 does not answer")

    def test_a_failed_state_and_missing_slots(self):
        self.infos[7002]["cluster_state"] = "fail"
        self.assertIn("cluster_state:fail", self.verdict())
        self.infos[7002] = dict(healthy_info(), cluster_slots_ok="10923")
        self.assertIn("not all 16384 slots served", self.verdict())

    def test_nodes_that_disagree(self):
        self.views[7006] = VIEW[:3] + ["7004 S 7002", "7005 S 7001", "7006 S 7003"]
        self.assertEqual(self.verdict(), "the nodes do not agree on the topology yet")

    def test_a_master_without_replica(self):
        v = ["7001 M 0-5460", "7002 M 5461-10922", "7003 M 10923-16383", "7004 S 7001",
             "7005 S 7001", "7006 S 7003"]
        self.views = {p: v for p in rc.PORTS}
        self.assertEqual(self.verdict(), "master 127.0.0.1:7002 has no replica")

    def test_a_replica_not_online_yet(self):
        self.reps[7003] = {"role": "master", "slave0": "ip=127.0.0.1,port=7006,state=wait_bgsave"}
        self.assertEqual(self.verdict(), "master 127.0.0.1:7003 has no online replica yet")

    def test_four_masters(self):
        v = VIEW[:3] + ["7004 M -", "7005 S 7002", "7006 S 7003"]
        self.views = {p: v for p in rc.PORTS}
        self.assertIn("want 3 masters with slots + 3 replicas", self.verdict())


class ClusterFormed(unittest.TestCase):
    def test_formed(self):
        rc.formed({p: healthy_info() for p in rc.PORTS})

    def verdict(self, infos):
        with self.assertRaises(NotReady) as e:
            rc.formed(infos)
        return str(e.exception)

    def test_never_formed_half_made_and_lost_config(self):
        single = dict(healthy_info(), cluster_known_nodes="1", cluster_slots_assigned="0")
        self.assertEqual(self.verdict({p: single for p in rc.PORTS}),
                         "the nodes run but no cluster was ever formed")
        infos = {p: healthy_info() for p in rc.PORTS}
        infos[7004] = single
        self.assertEqual(self.verdict(infos), "1 node(s) lost their cluster config (nodes.conf)")
        infos[7004] = dict(healthy_info(), cluster_known_nodes="4")
        self.assertIn("knows 4 nodes, not 6", self.verdict(infos))
        half = {p: dict(healthy_info(), cluster_slots_assigned="5461") for p in rc.PORTS}
        self.assertIn("only 5461 of 16384 slots", self.verdict(half))
        infos = {p: healthy_info() for p in rc.PORTS}
        infos[7001] = {}
        self.assertEqual(self.verdict(infos), "127.0.0.1:7001 gives no CLUSTER INFO")


class Configs(unittest.TestCase):
    def test_a_cluster_node(self):
        text = rc.conf(7003)
        self.assertIn("port 7003\n", text)
        self.assertIn(f'pidfile "{rc.DIR}/7003/redis.pid"\n', text)
        self.assertIn("cluster-enabled yes\n", text)
        self.assertIn("bind 127.0.0.1\n", text)
        self.assertIn('save ""\n', text)

    def test_sentinel_data_nodes_and_sentinels(self):
        self.assertNotIn("replicaof", rs.data_conf(6391))
        self.assertTrue(rs.data_conf(6392, 6391).endswith("replicaof 127.0.0.1 6391\n"))
        text = rs.sentinel_conf(26392)
        self.assertIn("sentinel monitor kh-master 127.0.0.1 6391 2\n", text)
        self.assertIn("sentinel down-after-milliseconds kh-master 1000\n", text)
        self.assertIn("port 26392\n", text)

    def test_set_replicaof_replaces_the_old_lines(self):
        text = "port 6391\nreplicaof 127.0.0.1 6392\nslaveof 127.0.0.1 6392\n  replicaof x 1"
        self.assertEqual(rs.set_replicaof(text, 6392),
                         "port 6391\nreplicaof 127.0.0.1 6392\n")
        self.assertEqual(rs.set_replicaof(text), "port 6391\n")
        self.assertEqual(rs.set_replicaof("port 1\n", 6391), "port 1\nreplicaof 127.0.0.1 6391\n")


class SentinelLogic(unittest.TestCase):
    def test_majority_needs_two(self):
        self.assertEqual(rs.majority([6392, 6391, 6392]), 6392)
        self.assertIsNone(rs.majority([6392, 6391]))
        self.assertIsNone(rs.majority([]))

    def test_conf_master(self):
        text = ("sentinel myid abc\nsentinel monitor kh-master 127.0.0.1 6392 2\n"
                "sentinel monitor other 127.0.0.1 7000 2\n")
        self.assertEqual(rs.conf_master(text), [6392])

    def test_ours(self):
        self.assertEqual(rs.ours("127.0.0.1:6392"), 6392)
        self.assertIsNone(rs.ours("127.0.0.1:6379"))
        self.assertIsNone(rs.ours("10.0.0.1:6391"))
        self.assertIsNone(rs.ours(None))
        self.assertEqual(rs.other(6391), 6392)
        self.assertEqual(rs.other(6392), 6391)


if __name__ == "__main__":
    unittest.main()
