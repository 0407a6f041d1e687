"""benchmark/cluster --self-test: fixtures only (no root, no namespaces, no runs): the --hosts
and --link parsing, each collective's link limit, the table, and the launch command lines."""

import os
import sys
import unittest
from unittest import mock

from compare_lib import model, runner
from compare_lib import selftest as compare_selftest

from . import cli, netns, topology

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "compare_lib", "fixtures")
MIB = 1 << 20


class Hosts(unittest.TestCase):
    def test_even(self):
        self.assertEqual(topology.parse_hosts("4x2"), [2, 2, 2, 2])
        self.assertEqual(topology.parse_hosts(" 2X4 "), [4, 4])
        self.assertEqual(topology.parse_hosts("8"), [1] * 8)

    def test_uneven(self):
        self.assertEqual(topology.parse_hosts("3,3,2"), [3, 3, 2])
        self.assertEqual(topology.parse_hosts("2, 2,1"), [2, 2, 1])
        self.assertEqual(topology.host_of_rank([3, 3, 2]), [0, 0, 0, 1, 1, 1, 2, 2])

    def test_names(self):
        self.assertEqual(topology.shape_name([2, 2, 2, 2]), "4x2")
        self.assertEqual(topology.shape_name([3, 3, 2]), "3,3,2")

    def test_bad(self):
        for bad in ("", "4x", "x2", "4x0", "3,,2", "3,0,2", "a", "4x2x1", "300x1"):
            with self.assertRaises(ValueError, msg=bad):
                topology.parse_hosts(bad)

    def test_rates(self):
        self.assertEqual(topology.parse_rate("1gbit"), (1e9, "1000000kbit"))
        self.assertEqual(topology.parse_rate("1000mbit")[0], 1e9)
        self.assertEqual(topology.parse_rate("200mbit"), (2e8, "200000kbit"))
        for bad in ("fast", "1gbps", "10kbit", ""):
            with self.assertRaises(ValueError, msg=bad):
                topology.parse_rate(bad)


class LinkLimits(unittest.TestCase):
    def test_allreduce(self):
        # 2·S·(H−1)/H, whatever the ranks per host
        self.assertEqual(topology.link_bytes("allreduce", 64 * MIB, [2] * 4), 96 * MIB)
        self.assertEqual(topology.link_bytes("allreduce", 64 * MIB, [4, 4]), 64 * MIB)
        self.assertEqual(topology.link_bytes("allreduce", 64 * MIB, [1] * 8), 112 * MIB)
        self.assertEqual(topology.link_bytes("allreduce", 30, [3, 3, 2]), 40)

    def test_allgather_reduce_scatter(self):
        for coll in ("allgather", "reduce_scatter"):
            # even: S·(H−1)/H
            self.assertEqual(topology.link_bytes(coll, 64 * MIB, [2] * 4), 48 * MIB)
            self.assertEqual(topology.link_bytes(coll, 64 * MIB, [4, 4]), 32 * MIB)
            # uneven: the host with the fewest ranks, S·(P−R_min)/P
            self.assertEqual(topology.link_bytes(coll, 80, [3, 3, 2]), 60)

    def test_broadcast_barrier_one_host(self):
        self.assertEqual(topology.link_bytes("broadcast", 16 * MIB, [2] * 4), 16 * MIB)
        self.assertEqual(topology.link_bytes("broadcast", 16 * MIB, [3, 3, 2]), 16 * MIB)
        self.assertIsNone(topology.link_bytes("barrier", 0, [2] * 4))
        self.assertIsNone(topology.link_bytes("allreduce", MIB, [8]))

    def test_time_and_fraction(self):
        # 2x2, 16 MiB allreduce at 1 Gbit/s: 16 MiB over the link = 134.2 ms
        lim = topology.link_limit_us("allreduce", 16 * MIB, [2, 2], 1e9)
        self.assertAlmostEqual(lim, 16 * MIB * 8 / 1e9 * 1e6)
        self.assertAlmostEqual(topology.fraction(lim, 2 * lim), 0.5)
        self.assertIsNone(topology.fraction(None, 10.0))
        self.assertIsNone(topology.fraction(lim, 0.0))


def _records():
    with open(os.path.join(FIXTURES, "gloo_lite_P4.json")) as fh:
        recs = model.parse_gloo_lite_json(fh.read(), size=8)
    with open(os.path.join(FIXTURES, "gloo_allreduce_P4.csv")) as fh:
        recs += model.parse_anchor_csv(fh.read(), size=8)
    recs = [r for r in recs if r["coll"] == "allreduce" and r["bytes"] == 8]
    for r in recs:
        r["link_limit_us"] = topology.link_limit_us("allreduce", 8, [2, 2], 1e9)
        r["link_frac"] = topology.fraction(r["link_limit_us"], r["time_us"])
    recs.append(model.Record(lib="gloo_lite", variant="ring", coll="allreduce", P=4, size=8,
                             bytes=8, time_us=0.0, busbw=0.0, status="failed"))
    return recs


class Table(unittest.TestCase):
    def test_rows(self):
        rows = topology.table_rows(_records())
        self.assertEqual(rows[0][2:4], ["gloo_lite", "auto"])
        self.assertEqual(rows[0][7], "recursive_doubling")  # what auto ran
        self.assertTrue(rows[0][4].endswith("*"))  # the fastest of its size
        self.assertEqual(sum(r[4].endswith("*") for r in rows), 1)
        failed = [r for r in rows if r[3] == "ring"]
        self.assertEqual(failed[0][4:], ["FAILED", "-", "-", "-"])
        gloo = [r for r in rows if r[2] == "Gloo"]
        self.assertTrue(gloo and all(r[7] == "" for r in gloo))
        self.assertEqual(rows[0][1], "8B")
        # 8 B at 1 Gbit/s: 0.064 us against tens of us
        self.assertEqual(rows[0][6], "0.00")

    def test_render(self):
        rows = topology.table_rows(_records())
        text = topology.render_text(rows).splitlines()
        self.assertTrue(text[0].startswith("collective"))
        self.assertEqual(len(text), len(rows) + 2)
        self.assertEqual(len({len(ln) for ln in text[:2]}), 1)
        md = topology.render_markdown(rows).splitlines()
        self.assertEqual(md[1], "|---|---|---|---|---|---|---|---|")
        self.assertEqual(md[2].count("|"), 9)

    def test_barrier_row(self):
        r = model.make_record("gloo", "opts", "barrier", 4, 0, 0, 250.0)
        row = topology.table_rows([r])[0]
        self.assertEqual(row[1], "-")
        self.assertEqual(row[5:7], ["-", "-"])


class CommandLine(unittest.TestCase):
    def test_args(self):
        a = cli.parse_args(["--hosts", "3,3,2", "--link", "200mbit", "--collectives",
                            "allreduce,barrier", "--sizes", "1M,8"])
        self.assertEqual(a.shape, [3, 3, 2])
        self.assertEqual(a.rate_tc, "200000kbit")
        self.assertEqual(a.size_list, [8, MIB])
        self.assertEqual(a.coll_list, ["allreduce", "barrier"])
        a = cli.parse_args(["--hosts", "4x2"])
        self.assertEqual((a.shape, a.rate_bits, a.algos), ([2] * 4, 1e9, "all"))

    def test_bad_args(self):
        for argv in (["--link", "1gbit"], ["--hosts", "4x"], ["--hosts", "2x2", "--link", "x"],
                     ["--hosts", "2x2", "--collectives", "alltoall"],
                     ["--hosts", "2x2", "--libs", "nccl"]):
            with mock.patch("sys.stderr"), self.assertRaises(SystemExit, msg=str(argv)):
                cli.parse_args(argv)

    def test_not_root(self):
        with mock.patch("os.geteuid", return_value=1000):
            self.assertIn("needs root", cli.preflight())

    def test_commands(self):
        cl = netns.Cluster(3, "1000000kbit", prefix="glcT-")
        self.assertEqual(cl.exec_prefix(1), ["ip", "netns", "exec", "glcT-r1"])
        self.assertEqual(cl.exec_prefix("hub"), ["ip", "netns", "exec", "glcT-hub"])
        self.assertEqual(cl.address(0), "192.0.2.1")
        self.assertEqual(cl.address("hub"), "192.0.2.254")
        cfg = cli.parse_args(["--hosts", "3,3,2"])
        cfg.gl_iters = "auto"
        run = runner.Runner(cfg, "/s", {"gloo_bench": "/s/anchors/gloo_bench"}, None)
        run.gl_bench, run.gl_auto_iters = "/b/gloo_lite_bench", True
        g = run.gloo_lite_bench_cmd("all", "allgather", 8, 8, "/o.json")
        self.assertEqual(g[0], "/b/gloo_lite_bench")
        self.assertEqual(g[g.index("-A") + 1], "all")
        self.assertEqual(g[g.index("-b") + 1], "32")  # one float per rank
        self.assertIn("--size-time", g)
        c = run.gloo_cmds("opts_ring", "allgather", 8, MIB, "/st")
        self.assertEqual(len(c), 8)
        self.assertEqual(c[5][:3], ["/s/anchors/gloo_bench", "5", "8"])


class GlooHostname(unittest.TestCase):
    def test_patch(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "gloo_bench.cpp")
            with open(p, "w") as fh:
                fh.write("int main() {\n" + runner.GLOO_HOSTNAME_LINE + "}\n")
            self.assertTrue(runner.patch_gloo_hostname(p))
            self.assertTrue(runner.patch_gloo_hostname(p))  # idempotent
            with open(p) as fh:
                self.assertIn("GLOO_ANCHOR_HOSTNAME", fh.read())
            with open(p, "w") as fh:
                fh.write("int main() {}\n")
            with mock.patch("sys.stderr"):
                self.assertFalse(runner.patch_gloo_hostname(p))


def main():
    return compare_selftest.run_module(sys.modules[__name__])
