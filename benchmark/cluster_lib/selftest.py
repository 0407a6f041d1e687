"""benchmark/cluster --self-test: fixtures only (no root, no namespaces, no runs): the --hosts
and --link parsing, each collective's link limit, the table, the launch command lines, and
--check's verdicts (a wrong value, a failure, a slow auto, retries)."""

import json
import os
import sys
import tempfile
import unittest
from unittest import mock

from compare_lib import model, runner
from compare_lib import selftest as compare_selftest

from . import check, cli, netns, topology

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

    def test_rooted_and_alltoall(self):
        # 2,2,1 (P = 5), root rank 0 on host 0 (2 ranks)
        self.assertEqual(topology.link_bytes("reduce", 16 * MIB, [2, 2, 1]), 16 * MIB)
        for coll in ("gather", "scatter"):
            # the root's host receives (sends) the other 3 ranks' blocks: 3/5 of S
            self.assertEqual(topology.link_bytes(coll, 50, [2, 2, 1]), 30)
            # a host of 3 ranks beside a root host of 5 must send its 3/8 of S
            self.assertEqual(topology.link_bytes(coll, 80, [5, 3]), 30)
        # alltoall: host h sends R_h·(P−R_h) blocks of S/P: 2·3 = 6 of 5 for a 2-rank host
        self.assertEqual(topology.link_bytes("alltoall", 50, [2, 2, 1]), 60)
        self.assertEqual(topology.link_bytes("alltoall", 40, [1] * 4), 30)

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
                     ["--hosts", "2x2", "--collectives", "allscatter"],
                     ["--hosts", "2x2", "--libs", "nccl"],
                     ["--hosts", "2x2", "--check", "-1"],
                     ["--hosts", "2x2", "--check", "10", "--libs", "gloo"],
                     ["--hosts", "2x2", "--check", "10", "--check-from", "big"],
                     ["--hosts", "2x2", "--retries", "-1"]):
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


def _rec(variant, coll, size, time_us, pass_no=1, wrong=0, status="ok", chosen=None):
    r = model.make_record("gloo_lite", variant, coll, 5, size, size, time_us, wrong=wrong,
                          chosen=chosen or (variant if variant != "auto" else "ring"))
    r.update(status=status, pass_no=pass_no)
    return r


def _case(coll, size, auto_us, ring_us=100.0, tree_us=200.0, **kw):
    return [_rec("auto", coll, size, auto_us, **kw), _rec("ring", coll, size, ring_us, **kw),
            _rec("tree", coll, size, tree_us, **kw)]


class Check(unittest.TestCase):
    def verdicts(self, recs):
        return {(v["coll"], v["size"]): v for v in check.verdicts(recs, 0.10, MIB)}

    def test_pass_and_slow(self):
        recs = (_case("allreduce", MIB, 109.0) + _case("allgather", MIB, 111.0)
                + _case("broadcast", 4096, 150.0) + _case("barrier", 0, 150.0))
        vs = self.verdicts(recs)
        self.assertEqual(vs["allreduce", MIB]["verdict"], check.OK)
        self.assertAlmostEqual(vs["allreduce", MIB]["ratio"], 1.09)
        self.assertEqual(vs["allgather", MIB]["verdict"], check.SLOW)
        self.assertEqual(vs["allgather", MIB]["best"], "ring")
        self.assertIn("11% slower than ring", vs["allgather", MIB]["why"])
        # below --check-from and barrier: the time is not checked
        self.assertEqual(vs["broadcast", 4096]["verdict"], check.OK)
        self.assertFalse(vs["broadcast", 4096]["checked"])
        self.assertEqual(vs["barrier", 0]["verdict"], check.OK)
        self.assertEqual(check.exit_status(list(vs.values())), 3)
        self.assertEqual([v["coll"] for v in check.time_misses(list(vs.values()))],
                         ["allgather"])

    def test_best_over_passes(self):
        # a slow first pass, a retry of auto and ring where auto is within 10%: passes
        recs = _case("allreduce", MIB, 150.0) + [_rec("auto", "allreduce", MIB, 105.0, 2),
                                                  _rec("ring", "allreduce", MIB, 98.0, 2)]
        v = self.verdicts(recs)["allreduce", MIB]
        self.assertEqual((v["verdict"], v["auto_us"], v["best_us"]), (check.OK, 105.0, 98.0))
        self.assertEqual(check.exit_status([v]), 0)

    def test_wrong_values_are_never_outvoted(self):
        recs = (_case("allreduce", MIB, 100.0, pass_no=2)
                + [_rec("tree", "allreduce", MIB, 90.0, wrong=7, status="wrong")])
        v = self.verdicts(recs)["allreduce", MIB]
        self.assertEqual(v["verdict"], check.WRONG)
        self.assertIn("tree (7 wrong)", v["why"])
        self.assertEqual(v["best"], "ring")  # a wrong run's time never counts
        self.assertEqual(check.exit_status([v]), 1)
        self.assertEqual(check.time_misses([v]), [])  # not retried

    def test_failures(self):
        failed = model.Record(lib="gloo_lite", variant="all", coll="allgather", P=5, size=MIB,
                              bytes=MIB, time_us=0.0, wrong=0, status="failed", rc=124,
                              error="timed out\n  rank 3", pass_no=1)
        vs = self.verdicts(_case("allgather", MIB, 100.0) + [failed]
                           + [_rec("ring", "broadcast", MIB, 100.0)])
        self.assertEqual(vs["allgather", MIB]["verdict"], check.FAILED)
        self.assertIn("rc 124: timed out rank 3", vs["allgather", MIB]["why"])
        self.assertEqual(vs["broadcast", MIB]["verdict"], check.FAILED)
        self.assertIn("auto did not run", vs["broadcast", MIB]["why"])
        # auto alone: nothing to compare with on a checked size (fine below it)
        vs = self.verdicts([_rec("auto", "reduce", MIB, 100.0), _rec("auto", "reduce", 64, 9.0)])
        self.assertEqual(vs["reduce", MIB]["verdict"], check.FAILED)
        self.assertIn("no forced algorithm", vs["reduce", MIB]["why"])
        self.assertEqual(vs["reduce", 64]["verdict"], check.OK)
        self.assertEqual(check.exit_status(list(vs.values())), 1)

    def test_render(self):
        vs = check.verdicts(_case("allreduce", MIB, 100.0) + _case("allgather", MIB, 130.0)
                            + _case("allgather", 64, 300.0), 0.10, MIB)
        text = check.render(vs, 0.10, MIB)
        self.assertIn("from 1M on auto within 10%", text)
        self.assertIn("1 of 3 cases MISS", text)
        self.assertIn("3.00 (not checked)", text)
        self.assertIn("SLOW allgather 1M: auto (ran ring) 30% slower than ring", text)
        ok = check.render(check.verdicts(_case("allreduce", MIB, 100.0), 0.1, MIB), 0.1, MIB)
        self.assertIn(": PASS", ok)


class ClusterRunWrongValues(unittest.TestCase):
    """gloo_lite_bench exits 1 after a sweep with wrong values: the harness keeps its JSON's
    per-algorithm counts, not only a failure."""

    def run_case(self, rc, rows):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "runs"))
            cfg = cli.parse_args(["--hosts", "2,2,1", "--check", "10"])
            cfg.gl_iters = "auto"
            run = runner.Runner(cfg, d, {}, None)
            run.gl_bench, run.gl_auto_iters = "/b/gloo_lite_bench", True
            cr = cli.ClusterRun(cfg, netns.Cluster(3, "200000kbit", prefix="glcT-"), d, run,
                                1)

            def launch(cl, shape, cmds, envs, timeout, cwd, logdir, name):
                path = cmds[0][cmds[0].index("--json") + 1]
                if rows is not None:
                    with open(path, "w") as fh:
                        json.dump(rows, fh)
                return rc, "rank 0 out", "rank 0 err"

            with mock.patch.object(cli, "launch", launch), mock.patch.object(runner, "log"):
                return cr.gloo_lite("allreduce", MIB, 1, algos="auto,ring")

    @staticmethod
    def row(algo, wrong):
        return dict(collective="allreduce", algorithm=algo, chosen="ring", P=5, bytes=MIB,
                    inplace=False, time_us=1000.0, busbw_GBps=0.1, wrong=wrong)

    def test_wrong(self):
        recs = self.run_case(1, [self.row("auto", 0), self.row("ring", 3)])
        by = {r["variant"]: r for r in recs}
        self.assertEqual((by["auto"]["status"], by["ring"]["status"]), ("ok", "wrong"))
        self.assertEqual(by["ring"]["wrong"], 3)
        self.assertEqual(check.verdicts(recs, 0.1, MIB)[0]["verdict"], check.WRONG)

    def test_failed_without_json_or_wrong(self):
        for rows in (None, [self.row("auto", 0)]):
            recs = self.run_case(124, rows)
            self.assertEqual([(r["variant"], r["status"], r["rc"]) for r in recs],
                             [("auto,ring", "failed", 124)])
            self.assertIn("rank 0 err", recs[0]["error"])

    def test_ok(self):
        recs = self.run_case(0, [self.row("auto", 0), self.row("ring", 0)])
        self.assertEqual({r["status"] for r in recs}, {"ok"})
        self.assertAlmostEqual(recs[0]["link_limit_us"], 2 * MIB * 2 / 3 * 8 / 1e9 * 1e6)


class Retries(unittest.TestCase):
    def test_only_time_misses_run_again(self):
        cfg = cli.parse_args(["--hosts", "2,2,1", "--check", "10", "--retries", "2"])
        records = (_case("allreduce", MIB, 150.0) + _case("allgather", MIB, 100.0)
                   + _case("broadcast", MIB, 150.0) + _case("reduce", MIB, 100.0)
                   + [_rec("tree", "reduce", MIB, 90.0, wrong=1, status="wrong")])
        calls = []

        class FakeRun:
            def gloo_lite(self, coll, size, pass_no, algos=None):
                calls.append((coll, size, pass_no, algos))
                # allreduce recovers on the first retry, broadcast never does
                auto_us = 104.0 if coll == "allreduce" else 150.0
                return [_rec("auto", coll, size, auto_us, pass_no),
                        _rec("ring", coll, size, 100.0, pass_no)]

        with tempfile.TemporaryFile("w+") as raw, mock.patch.object(runner, "log"):
            cli._retry_time_misses(cfg, FakeRun(), raw, records)
        self.assertEqual(calls, [("allreduce", MIB, 2, "auto,ring"),
                                 ("broadcast", MIB, 2, "auto,ring"),
                                 ("broadcast", MIB, 3, "auto,ring")])
        vs = {v["coll"]: v["verdict"] for v in check.verdicts(records, 0.1, MIB)}
        self.assertEqual(vs, dict(allreduce=check.OK, allgather=check.OK,
                                  broadcast=check.SLOW, reduce=check.WRONG))
        self.assertEqual(sum(1 for r in records if r.get("retry")), 6)


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
