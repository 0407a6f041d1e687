#!/usr/bin/env python3
"""Tests of benchmark/python_compare.py that launch nothing: the size sweep, the launch
commands, the tables' arithmetic on made-up records, and (where numpy is installed) that the
worker's check counts a wrong result as wrong.

    python3 test/bench/python_compare_test.py
"""
import os
import sys
import unittest

BENCHMARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmark")
sys.path.insert(0, BENCHMARK)

import python_compare as pc  # noqa: E402

try:
    import numpy  # noqa: F401

    import python_compare_worker as worker
except ImportError:
    worker = None


def record(label, coll, P, size, nbytes, time_us, wrong=0):
    return {"variant": label, "coll": coll, "P": P, "size": size, "bytes": nbytes,
            "time_us": time_us, "wrong": wrong}


class Sweep(unittest.TestCase):
    def test_default_reaches_16m_and_ends_at_64m(self):
        sizes = pc.sweep(8, 64 << 20, 8)
        self.assertEqual(sizes[0], 8)
        self.assertIn(16 << 20, sizes)
        self.assertEqual(sizes[-1], 64 << 20)
        self.assertEqual(len(sizes), 9)

    def test_end_on_the_grid_is_not_repeated(self):
        self.assertEqual(pc.sweep(8, 512, 8), [8, 64, 512])


class Commands(unittest.TestCase):
    class Args:
        python = "py"
        collectives = "allreduce"
        min_time = 0.2
        timeout = 60

    def test_mpi_shm_uses_vader(self):
        cmd = pc.worker_cmd("mpi4py_shm", 4, [8], self.Args, "/b")
        self.assertEqual(cmd[0], "mpirun")
        self.assertIn("vader,self", cmd)
        self.assertEqual(cmd[cmd.index("-np") + 1], "4")
        self.assertIn("mpi4py", cmd)

    def test_gloo_lite_uses_the_launcher(self):
        cmd = pc.worker_cmd("gloo_lite", 2, [8, 64], self.Args, "/b")
        self.assertEqual(cmd[:3], ["/b/tools/gloo_lite_run", "-n", "2"])
        self.assertEqual(cmd[cmd.index("--sizes") + 1], "8,64")


class Report(unittest.TestCase):
    def setUp(self):
        big = 16 << 20
        self.records = [
            record("gloo_lite", "allreduce", 2, 8, 8, 30.0),
            record("gloo_lite", "allreduce", 2, 8, 8, 25.0),  # the faster pass wins
            dict(record("mpi4py_tcp", "allreduce", 2, 8, 8, 50.0), foreign=0.1),
            record("gloo_lite", "allreduce", 2, big, big, 10000.0),
            record("mpi4py_tcp", "allreduce", 2, big, big, 20000.0),
        ]

    def test_ratios_overhead_and_bandwidth(self):
        table = pc.best(self.records)
        self.assertEqual(table[("gloo_lite", "allreduce", 2, 8)]["time_us"], 25.0)
        text, wrong = pc.report(table, {("allreduce", 2): 20.0}, ["gloo_lite", "mpi4py_tcp"],
                                [2], [8, 16 << 20], ["allreduce"])
        self.assertFalse(wrong)
        lines = text.splitlines()
        # 50 / 25 at 8 B, 20000 / 10000 at 16 MiB.
        self.assertIn("| allreduce | 2 | 8B | 25.0 | - | 50.0 | - | 2.00 | 0.10 |", lines)
        # busbw = 16 MiB / 10 ms * 2 (P - 1) / P = 1.678 GB/s.
        self.assertIn("| allreduce | 2 | 16M | 10000 | 1.678 | 20000 | 0.839 | 2.00 | - |", lines)
        # overhead: 25 us in Python - 20 us in C++.
        self.assertIn("| allreduce | 2 | 25.0 | 20.0 | 5.00 | 50.0 |", lines)
        self.assertIn("| allreduce | 2 | 1.678 | 0.839 | 2.00 |", lines)

    def test_wrong_results_are_reported(self):
        self.records.append(record("mpi4py_tcp", "allreduce", 2, 64, 64, 1.0, wrong=3))
        text, wrong = pc.report(pc.best(self.records), {}, ["gloo_lite", "mpi4py_tcp"], [2],
                                [8, 64], ["allreduce"])
        self.assertTrue(wrong)
        self.assertIn("mpi4py_tcp allreduce P=2 64: 3 wrong", text)

    def test_mpi_only(self):
        text, _ = pc.report(pc.best(self.records), {}, ["mpi4py_tcp"], [2], [8], ["allreduce"])
        self.assertIn("| allreduce | 2 | 8B | 50.0 | - | 0.10 |", text.splitlines())
        self.assertNotIn("overhead", text)


@unittest.skipIf(worker is None, "numpy is not installed")
class WorkerCheck(unittest.TestCase):
    """A stand-in library whose calls do nothing: one rank's result is then its own input,
    right for P = 1 and wrong for P = 2 on every collective."""

    class Idle:
        def __init__(self, size, rank):
            self.size, self.rank = size, rank

        def allreduce(self, a):
            return lambda: None

        def broadcast(self, a):
            return lambda: None

        def allgather(self, a, out):
            def copy_own_block():
                out[0] = a  # rank 0's own block only: the other ranks' blocks stay unwritten
            return copy_own_block

    def check(self, coll, size, rank=0):
        case = worker.Case(self.Idle(size, rank), coll, 1024)
        case.fill()
        case.call()
        return case.wrong()

    def test_one_rank_is_right(self):
        for coll in worker.COLLECTIVES:
            self.assertEqual(self.check(coll, 1), 0, coll)

    def test_missing_peers_are_wrong(self):
        self.assertEqual(self.check("allreduce", 2), 256)
        self.assertEqual(self.check("allgather", 2), 128)  # rank 1's block of 512 / 4 / 2
        self.assertEqual(self.check("broadcast", 2, rank=1), 256)  # never got the root's data


if __name__ == "__main__":
    unittest.main()
