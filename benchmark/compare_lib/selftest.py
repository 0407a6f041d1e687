"""compare --self-test: parses the fixtures, computes ratios and targets, renders the tables and
builds the launch commands, without running anything (no anchors, no gloo_lite build, no
matplotlib needed). Registered with ctest as compare_self_test (test/compare/CMakeLists.txt)."""

import json
import os
import sys
import tempfile
import unittest

from . import cli, model, plot, report, runner

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIX, name)) as fh:
        return fh.read()


def rec(lib, variant, coll, P, size, time_us, **kw):
    b = kw.pop("bytes", size)
    r = model.make_record(lib, variant, coll, P, size, b, time_us, kw.pop("wrong", 0), **kw)
    r.setdefault("status", "ok")
    return r


class Sizes(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(model.parse_sizes("8,1M,16M,64M"), [8, 1 << 20, 16 << 20, 64 << 20])
        self.assertEqual(model.parse_size("1K"), 1024)
        self.assertEqual(model.parse_size("1G"), 1 << 30)
        self.assertEqual(model.parse_size("64MiB"), 64 << 20)
        self.assertEqual(model.parse_sizes("1M 8 8"), [8, 1 << 20])
        self.assertRaises(ValueError, model.parse_size, "12X")

    def test_format(self):
        self.assertEqual(model.format_size(8), "8B")
        self.assertEqual(model.format_size(16 << 20), "16M")
        self.assertEqual(model.format_size(0), "-")

    def test_bus_factor(self):
        self.assertAlmostEqual(model.bus_factor("allreduce", 4), 1.5)
        self.assertAlmostEqual(model.bus_factor("allgather", 8), 7 / 8.0)
        self.assertAlmostEqual(model.bus_factor("reduce_scatter", 2), 0.5)
        self.assertEqual(model.bus_factor("broadcast", 8), 1.0)
        self.assertEqual(model.bus_factor("barrier", 8), 0.0)


class Parsing(unittest.TestCase):
    def test_anchor_csv(self):
        rs = model.parse_anchor_csv(fixture("gloo_allreduce_P4.csv"))
        self.assertEqual(len(rs), 2)
        r = rs[1]
        self.assertEqual((r.lib, r.variant, r.coll, r.P, r.size), ("gloo", "halving_doubling",
                                                                    "allreduce", 4, 16 << 20))
        self.assertAlmostEqual(r.time_us, 31857.6)
        # recomputed busbw agrees with the anchor's printed one
        self.assertAlmostEqual(r.busbw, r.reported_busbw, places=3)
        self.assertEqual(r.iters, 6)

    def test_anchor_csv_size_override(self):
        rs = model.parse_anchor_csv(fixture("mpi_tcp_allreduce_P4.csv"), size=8)
        self.assertTrue(all(r.size == 8 for r in rs))
        self.assertAlmostEqual(rs[1].busbw, 0.9201, places=3)

    def test_barrier_csv(self):
        (r,) = model.parse_anchor_csv(fixture("gloo_barrier_P4.csv"))
        self.assertEqual((r.coll, r.size, r.bytes, r.busbw), ("barrier", 0, 0, 0.0))

    def test_gloo_lite_best(self):
        rs = model.parse_gloo_lite_json(fixture("gloo_lite_P4.json"))
        by = {(r.coll, r.size, r.variant): r for r in rs}
        self.assertEqual(len(rs), 4)
        r8 = by[("allreduce", 8, "auto")]
        self.assertEqual((r8.time_us, r8.inplace, r8.chosen), (58.0, True, "recursive_doubling"))
        self.assertEqual(r8.p99_us, 90.0)
        # the faster in-place 16M row is wrong: out-of-place time is kept, the error is kept too
        r16 = by[("allreduce", 16 << 20, "auto")]
        self.assertEqual((r16.time_us, r16.inplace, r16.wrong), (16000.0, False, 3))
        self.assertAlmostEqual(r16.busbw, r16.reported_busbw, places=4)
        self.assertEqual(by[("allreduce", 16 << 20, "ring")].time_us, 14000.0)
        self.assertEqual(by[("barrier", 0, "auto")].chosen, "dissemination")

    def test_gloo_lite_modes(self):
        oop = model.parse_gloo_lite_json(fixture("gloo_lite_P4.json"), mode="oop")
        inp = model.parse_gloo_lite_json(fixture("gloo_lite_P4.json"), mode="inplace")
        t = lambda rs, s: [r.time_us for r in rs if r.size == s and r.variant == "auto"][0]
        self.assertEqual(t(oop, 8), 60.0)
        self.assertEqual(t(inp, 8), 58.0)
        self.assertEqual(t(inp, 16 << 20), 15000.0)
        # barrier has only an out-of-place row; both modes keep it
        self.assertTrue(any(r.coll == "barrier" for r in inp))

    def test_gloo_lite_size_and_variant_override(self):
        rs = model.parse_gloo_lite_json(fixture("gloo_lite_P4.json"), size=123, variant="x")
        self.assertTrue(all(r.size == 123 and r.variant == "x" for r in rs))

    def test_gloo_lite_wrapped(self):
        rows = json.loads(fixture("gloo_lite_P4.json"))
        rs = model.parse_gloo_lite_json(json.dumps({"results": rows}))
        self.assertEqual(len(rs), 4)

    def test_best_of_passes(self):
        rs = [rec("gloo", "opts_ring", "allreduce", 2, 8, 300, pass_no=1),
              rec("gloo", "opts_ring", "allreduce", 2, 8, 250, pass_no=2),
              rec("gloo", "ring_chunked", "allreduce", 2, 8, 0, status="failed"),
              rec("gloo", "ring_chunked", "allreduce", 2, 8, 0, status="failed")]
        best = {r.variant: r for r in model.best_of_passes(rs)}
        self.assertEqual(best["opts_ring"].time_us, 250)
        self.assertEqual(best["opts_ring"].passes, [300, 250])
        self.assertEqual(best["ring_chunked"].status, "failed")
        self.assertEqual(best["ring_chunked"].passes, [None, None])

    def test_proc_stat(self):
        text = "cpu  100 5 20 1000 7 1 2 3 0 0\ncpu0 50 0 10 500 0 0 1 0 0 0\n"
        self.assertEqual(runner.parse_proc_stat_busy(text), 100 + 5 + 20 + 1 + 2 + 3)


def sample_records():
    """P=4: a met bandwidth row, a missed one, a latency row, a barrier row, a failure."""
    M = 1 << 20
    return [
        # 16M allreduce: gloo_lite 1.6x Gloo best and 1.1x MPI TCP -> both met
        rec("gloo_lite", "auto", "allreduce", 4, 16 * M, 10000.0, chosen="ring"),
        rec("gloo", "halving_doubling", "allreduce", 4, 16 * M, 16000.0),
        rec("gloo", "ring_chunked", "allreduce", 4, 16 * M, 20000.0),
        rec("openmpi", "ob1_tcp", "allreduce", 4, 16 * M, 11000.0),
        rec("openmpi", "ob1_vader", "allreduce", 4, 16 * M, 5000.0),
        # 1M allgather: 1.2x Gloo (needs 1.5x: +25%), 0.8x MPI (needs 1.0x: +25%)
        rec("gloo_lite", "auto", "allgather", 4, M, 1000.0),
        rec("gloo", "opts_ring", "allgather", 4, M, 1200.0),
        rec("openmpi", "ob1_tcp", "allgather", 4, M, 800.0),
        # 8 B allreduce: 0.1x Gloo (met), 1.25x MPI (time must fall 20%)
        rec("gloo_lite", "auto", "allreduce", 4, 8, 100.0),
        rec("gloo", "halving_doubling", "allreduce", 4, 8, 1000.0),
        rec("gloo", "opts_ring", "allreduce", 4, 8, 0.0, status="failed"),
        rec("openmpi", "ob1_tcp", "allreduce", 4, 8, 80.0),
        # barrier: gloo_lite missing MPI (not measured)
        rec("gloo_lite", "auto", "barrier", 4, 0, 20.0),
        rec("gloo", "all_to_one", "barrier", 4, 0, 130.0),
        # 8 B allgather: no target, only ratios
        rec("gloo_lite", "auto", "allgather", 4, 8, 50.0, bytes=16),
        rec("gloo", "opts_ring", "allgather", 4, 8, 500.0, bytes=16),
    ]


class Targets(unittest.TestCase):
    def setUp(self):
        self.rows = report.build_rows(model.best_of_passes(sample_records()))
        self.by = {(r["coll"], r["size"]): r for r in self.rows}

    def test_order(self):
        self.assertEqual([(r["coll"], r["size"]) for r in self.rows],
                         [("allreduce", 8), ("allreduce", 16 << 20), ("allgather", 8),
                          ("allgather", 1 << 20), ("barrier", 0)])

    def test_bandwidth_met(self):
        r = self.by[("allreduce", 16 << 20)]
        self.assertEqual(r["kind"], "bw")
        self.assertEqual(r["gloo_best"]["variant"], "halving_doubling")
        self.assertAlmostEqual(r["ratio_gloo"], 1.6)
        self.assertAlmostEqual(r["ratio_mpi"], 1.1)
        self.assertAlmostEqual(r["ratio_shm"], 0.5)
        self.assertTrue(r["check_gloo"]["met"] and r["check_mpi"]["met"])

    def test_bandwidth_missed(self):
        r = self.by[("allgather", 1 << 20)]
        self.assertAlmostEqual(r["ratio_gloo"], 1.2)
        self.assertFalse(r["check_gloo"]["met"])
        self.assertAlmostEqual(r["check_gloo"]["shortfall"], 25.0)
        self.assertAlmostEqual(r["ratio_mpi"], 0.8)
        self.assertAlmostEqual(r["check_mpi"]["shortfall"], 25.0)
        self.assertIsNone(r["mpi_shm"])
        self.assertIsNone(r["ratio_shm"])

    def test_latency(self):
        r = self.by[("allreduce", 8)]
        self.assertEqual(r["kind"], "lat")
        # the failed opts_ring is not the best even though its time is 0
        self.assertEqual(r["gloo_best"]["variant"], "halving_doubling")
        self.assertAlmostEqual(r["ratio_gloo"], 0.1)
        self.assertTrue(r["check_gloo"]["met"])
        self.assertAlmostEqual(r["ratio_mpi"], 1.25)
        self.assertFalse(r["check_mpi"]["met"])
        self.assertAlmostEqual(r["check_mpi"]["shortfall"], 20.0)

    def test_barrier_and_untargeted(self):
        b = self.by[("barrier", 0)]
        self.assertEqual(b["target"], "lat")
        self.assertIsNone(b["check_mpi"]["met"])
        self.assertTrue(b["check_gloo"]["met"])  # 20/130 = 0.154 <= 0.2
        self.assertAlmostEqual(b["ratio_gloo"], 20 / 130.0)
        g = self.by[("allgather", 8)]
        self.assertIsNone(g["target"])
        self.assertAlmostEqual(g["ratio_gloo"], 0.1)

    def test_summary(self):
        s = report.summarize(self.rows)
        # checks: ar16 x2 met + shm missed (0.5x), ag1M x2 missed, ar8 gloo met + mpi missed,
        # barrier gloo met + mpi ?
        self.assertEqual((s["met"], s["missed"], s["unknown"]), (4, 4, 1))
        text = report.render_summary(s)
        self.assertIn("4 met, 4 missed, 1 not measured", text)
        self.assertIn("vs Open MPI shm", text)
        self.assertIn("busbw would have to rise 25%", text)
        self.assertIn("time would have to fall 20%", text)

    def test_forced_tcp_variant(self):
        # auto@tcp: its own column, the one compared with Open MPI TCP, never an "explicit
        # algorithm" for the auto check; auto (shared memory) is compared with vader.
        M = 1 << 20
        rs = sample_records() + [rec("gloo_lite", "auto@tcp", "allreduce", 4, 16 * M, 22000.0),
                                 rec("gloo_lite", "auto@tcp", "allreduce", 4, 8, 64.0)]
        rows = report.build_rows(model.best_of_passes(rs))
        by = {(r["coll"], r["size"]): r for r in rows}
        big, small = by[("allreduce", 16 * M)], by[("allreduce", 8)]
        self.assertAlmostEqual(big["ratio_mpi"], 0.5)  # 11000 / 22000 in busbw
        self.assertFalse(big["check_mpi"]["met"])
        self.assertAlmostEqual(big["ratio_shm"], 0.5)  # auto 10000 us vs vader 5000 us
        self.assertFalse(big["check_shm"]["met"])
        self.assertNotIn("auto_vs_best", big)
        self.assertAlmostEqual(small["ratio_mpi"], 0.8)  # 64 / 80 us
        self.assertTrue(small["check_mpi"]["met"])
        self.assertIn("22000", report.render_text(rows))
        self.assertEqual(runner.Runner.split_variant("auto@tcp"), ("auto", "tcp"))
        self.assertEqual(runner.Runner.split_variant("ring"), ("ring", None))

    def test_auto_vs_explicit(self):
        rs = sample_records() + [rec("gloo_lite", "ring", "allreduce", 4, 16 << 20, 8000.0)]
        rows = report.build_rows(model.best_of_passes(rs))
        r = [x for x in rows if x["coll"] == "allreduce" and x["size"] == 16 << 20][0]
        self.assertAlmostEqual(r["auto_vs_best"]["ratio"], 1.25)
        self.assertFalse(r["auto_vs_best"]["met"])
        self.assertIn("MISS", report.render_auto(rows))

    def test_memory(self):
        rss = [dict(lib="gloo_lite", variant="auto", P=4, buffer_bytes=64 << 20, user_buffers=1,
                    max_kb=150 * 1024, min_kb=140 * 1024, ratio=150 / 64.0,
                    raw_ratio=150 / 64.0, extra_bytes=86 << 20),
               dict(lib="gloo", variant="halving_doubling", P=4, buffer_bytes=64 << 20,
                    max_kb=70 * 1024, min_kb=70 * 1024, ratio=70 / 64.0)]
        s = report.summarize(self.rows, rss)
        mem = [c for c in s["checks"] if c["kind"] == "memory"]
        self.assertEqual(len(mem), 1)
        self.assertFalse(mem[0]["met"])
        self.assertIn("in-place equivalent 2.34x  MISS", report.render_rss(rss))

    def test_render(self):
        text = report.render_text(self.rows)
        self.assertIn("bw 1.60 ok", text)
        self.assertIn("bw 1.20 MISS", text)
        self.assertIn("t 0.10 ok", text)
        self.assertIn("t 1.25 MISS", text)
        self.assertIn("halving_doubling", text)
        md = report.render_markdown(self.rows)
        self.assertEqual(md.count("\n"), len(self.rows) + 1)
        self.assertTrue(md.startswith("| collective |"))
        self.assertIn("Targets (issues 4, 12)", report.render_legend())

    def test_near_miss_shows_three_decimals(self):
        rs = [rec("gloo_lite", "auto", "allreduce", 2, 8, 30.6),
              rec("gloo", "halving_doubling", "allreduce", 2, 8, 150.0)]
        text = report.render_text(report.build_rows(model.best_of_passes(rs)))
        self.assertIn("t 0.204 MISS", text)

    def test_json_rows(self):
        json.dumps([cli._row_json(r) for r in self.rows])


class Plot(unittest.TestCase):
    def test_series(self):
        s = plot.series(model.best_of_passes(sample_records()))
        self.assertIn(("gloo_lite", "auto"), s["allreduce"][4])
        self.assertNotIn(("gloo", "opts_ring"), s["allreduce"][4])  # failed: not drawn
        self.assertEqual(s["barrier"][4][("gloo", "all_to_one")][0][2], 130.0)
        self.assertEqual(plot.label("openmpi", "ob1_vader"), "Open MPI shm")


class CommandLine(unittest.TestCase):
    def test_quick(self):
        a = cli.parse_args(["--quick"])
        self.assertEqual((a.Ps, a.size_list, a.coll_list, a.passes, a.no_rss),
                         ([2], [8, 1 << 20], ["allreduce"], 1, True))
        a = cli.parse_args(["--quick", "--collectives", "barrier"])
        self.assertEqual(a.coll_list, ["barrier"])

    def test_defaults(self):
        a = cli.parse_args([])
        self.assertEqual(a.Ps, [2, 4, 8])
        self.assertEqual(a.size_list, [8, 1 << 20, 16 << 20, 64 << 20])
        self.assertEqual(len(a.coll_list), 5)
        self.assertEqual(a.passes, 2)
        vs = cli.variants_for(a, "allreduce")
        self.assertEqual(vs[0], ("gloo_lite", "auto"))
        self.assertEqual([v for lib, v in vs if lib == "gloo"], list(model.GLOO_ALGOS["allreduce"]))
        self.assertEqual(vs[-2:], [("openmpi", "ob1_tcp"), ("openmpi", "ob1_vader")])

    def test_overrides(self):
        a = cli.parse_args(["--gloo-algos", "allreduce:ring", "--mpi-variants", "ob1_tcp",
                            "--libs", "gloo,mpi"])
        self.assertEqual(cli.variants_for(a, "allreduce"),
                         [("gloo", "ring"), ("openmpi", "ob1_tcp")])
        self.assertEqual(cli.variants_for(a, "broadcast")[0], ("gloo", "opts_tree"))

    def test_commands(self):
        a = cli.parse_args([])
        d = tempfile.mkdtemp()
        bins = {k: os.path.join(d, k) for k in ("gloo_bench", "gloo_barrier", "mpi_bench",
                                               "mpi_barrier")}
        r = runner.Runner(a, d, bins, None)
        cmds = r.gloo_cmds("opts_ring", "allgather", 4, 1 << 20, "/s")
        self.assertEqual(len(cmds), 4)
        self.assertEqual(cmds[2][:7], [bins["gloo_bench"], "2", "4", "/s", "opts_ring",
                                       "allgather", "1048576"])
        self.assertEqual(r.gloo_cmds("all_to_one", "barrier", 2, 0, "/s")[0][0],
                         bins["gloo_barrier"])
        m = r.mpi_cmd("ob1_tcp", "broadcast", 8, 16 << 20)
        self.assertEqual(m[0], "mpirun")
        self.assertIn("btl_tcp_if_include", m)
        self.assertEqual(m[m.index("-np") + 1:m.index("-np") + 5],
                         ["8", bins["mpi_bench"], "ob1_tcp", "broadcast"])
        r.build, r.gl_run, r.gl_bench = d, "/b/tools/gloo_lite_run", "/b/benchmark/gloo_lite_bench"
        g = r.gloo_lite_cmd("auto", "allreduce", 4, 64 << 20, "/o.json")
        self.assertEqual(g[:4], ["/b/tools/gloo_lite_run", "-n", "4", "--"])
        self.assertIn("--json", g)
        self.assertEqual(g[g.index("-b") + 1], str(64 << 20))
        n = int(g[g.index("-n", 4) + 1])
        self.assertGreaterEqual(n, a.min_iters)
        self.assertEqual(r.gl_bytes("allgather", 4, 8), 16)  # one float per rank, as the anchors
        self.assertEqual(r.gl_bytes("reduce_scatter", 8, 8), 32)
        self.assertEqual(r.gl_bytes("allgather", 8, 1 << 20), 1 << 20)
        self.assertEqual(r.gl_bytes("allreduce", 8, 8), 8)
        r.gl_auto_iters = True
        g = r.gloo_lite_cmd("auto", "barrier", 4, 0, "/o.json")
        self.assertIn("--size-time", g)
        self.assertEqual(g[g.index("--collective") + 1], "barrier")


def run_module(module):
    """Runs the unittest cases of `module`, prints a count; the exit status (0: all passed)."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    res = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    failed = len(res.failures) + len(res.errors)
    print("%d passed, %d failed" % (res.testsRun - failed, failed))
    return 0 if res.wasSuccessful() else 1


def main():
    return run_module(sys.modules[__name__])
