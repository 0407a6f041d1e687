#!/usr/bin/env python3
"""Tests of benchmark/torch_compare.py that launch nothing: the size sweep, the launch
command, the ratio and target arithmetic and the tables on made-up records, the DDP checks,
the completeness check, and (where torch imports) that the worker's check counts a wrong
result as wrong against a reference computed from every rank's inputs.

    python3 test/bench/torch_compare_test.py
"""
import os
import sys
import unittest

BENCHMARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmark")
sys.path.insert(0, BENCHMARK)

import torch_compare as tc  # noqa: E402

try:
    import torch

    import torch_compare_worker as worker
except ImportError:
    worker = None

M = 1 << 20


def record(lib, coll, P, size, time_us, wrong=0, noise=0.0):
    return {"kind": "collective", "lib": lib, "coll": coll, "P": P, "size": size,
            "bytes": size, "time_us": time_us, "median_us": time_us, "iterations": 5,
            "wrong": wrong, "noise": noise}


def ddp(lib, P, median_ms, diff=0.0):
    return {"kind": "ddp", "lib": lib, "P": P, "params": 10524688, "width": 2048, "batch": 32,
            "steps": 20, "median_ms": median_ms, "mean_ms": median_ms, "min_ms": median_ms,
            "loss_first": 1.0, "loss_last": 0.5, "noise": 0.1,
            "max_param_diff": None if lib == "local" else diff}


class Sweep(unittest.TestCase):
    def test_factor_4_is_anchored_at_the_end(self):
        sizes = tc.sweep(8, 64 * M, 4)
        self.assertEqual(sizes[:3], [8, 16, 64])
        for size in (M, 16 * M, 64 * M):
            self.assertIn(size, sizes)
        self.assertEqual(sizes[-1], 64 * M)
        self.assertEqual(len(sizes), 13)

    def test_factor_2_is_every_power(self):
        self.assertEqual(tc.sweep(8, 64 * M, 2), [8 << k for k in range(24)])

    def test_quick(self):
        args = tc.parse_args(["--quick"])
        self.assertEqual(args.Ps, [2])
        self.assertEqual(args.sizes, [8, 4096, 256 << 10])
        self.assertGreater(args.ddp_steps, 0)
        self.assertEqual(tc.parse_args(["--quick", "--no-ddp"]).ddp_steps, 0)


class Command(unittest.TestCase):
    def test_torchrun_with_the_worker(self):
        args = tc.parse_args(["--sizes", "8,1M", "--no-ddp", "--python", "py"])
        cmd = tc.worker_cmd(4, args)
        self.assertEqual(cmd[:5], ["py", "-m", "torch.distributed.run", "--standalone",
                                   "--nproc-per-node"])
        self.assertEqual(cmd[5], "4")
        self.assertEqual(os.path.basename(cmd[6]), "torch_compare_worker.py")
        self.assertEqual(cmd[cmd.index("--sizes") + 1], "8,1048576")
        self.assertNotIn("--ddp-steps", cmd)


class Report(unittest.TestCase):
    def table(self, records):
        return tc.best([dict(r, variant=r["lib"]) for r in records])

    def test_ratios_and_targets(self):
        records = [
            record("gloo_lite", "allreduce", 2, 8, 30.0),
            record("gloo_lite", "allreduce", 2, 8, 20.0),  # the faster repetition set wins
            record("gloo", "allreduce", 2, 8, 100.0),
            record("gloo_lite", "allreduce", 2, M, 500.0),
            record("gloo", "allreduce", 2, M, 1000.0),
            record("gloo_lite", "allreduce", 2, 64 * M, 40000.0),
            record("gloo", "allreduce", 2, 64 * M, 40000.0, noise=0.7),
        ]
        text, wrong = tc.collective_report(self.table(records), [2], [8, M, 64 * M],
                                           ["allreduce"])
        self.assertEqual(wrong, [])
        rows = {line.split(" | ")[2]: line for line in text.splitlines()
                if line.startswith("| allreduce | 2 | ") and line.count("|") > 6}
        self.assertIn("| t 0.20 | ok |", rows["8B"])  # 20 / 100
        self.assertIn("| bw 2.00 | ok |", rows["1M"])  # 1000 / 500
        self.assertIn("| bw 1.00 | MISS | 0.70 |", rows["64M"])
        # nccl-tests busbw: 2(P-1)/P * bytes / time = 1 * 64 MiB / 40 ms.
        self.assertIn("| 1.678 |", rows["64M"])
        self.assertIn("allreduce P=2 64M: bw 1.00 (busbw needs 1.50x)", text)
        # The summary keeps the lowest bandwidth ratio from 1 to 64 MiB.
        self.assertIn("| allreduce | 2 | 0.20 ok | 1.00 at 64M MISS |", text)

    def test_latency_miss_and_wrong_results(self):
        records = [record("gloo_lite", "broadcast", 4, 8, 60.0, wrong=3),
                   record("gloo", "broadcast", 4, 8, 100.0)]
        text, wrong = tc.collective_report(self.table(records), [4], [8], ["broadcast"])
        self.assertIn("| t 0.60 | MISS |", text)
        self.assertIn("broadcast P=4 8B: t 0.60 (time needs 2.00x)", text)
        self.assertEqual(wrong, ["gloo_lite broadcast P=4 8B: 3 wrong"])

    def test_sizes_outside_the_target_range_have_no_verdict(self):
        records = [record("gloo_lite", "allgather", 2, 4096, 10.0),
                   record("gloo", "allgather", 2, 4096, 100.0)]
        text, _ = tc.collective_report(self.table(records), [2], [4096], ["allgather"])
        self.assertIn("| bw 10.00 |  |", text)
        self.assertNotIn("Missed", text)


class Ddp(unittest.TestCase):
    def test_step_ratio_and_exposed_communication(self):
        text = tc.ddp_report([ddp("gloo_lite", 2, 150.0), ddp("gloo", 2, 200.0),
                              ddp("local", 2, 100.0)])
        row = [line for line in text.splitlines() if line.startswith("| 2 |")][0]
        self.assertIn("| 10.5M | 150.0 | 200.0 | 0.75 | ok | 100.0 | 50.0 | 100.0 | 0 |", row)

    def test_slower_is_a_miss(self):
        text = tc.ddp_report([ddp("gloo_lite", 4, 210.0), ddp("gloo", 4, 200.0)])
        self.assertIn("| 1.05 | MISS |", text)

    def test_copies_must_agree(self):
        self.assertEqual(tc.bad_ddp([ddp("gloo_lite", 2, 1.0, diff=0.0)]), [])
        self.assertEqual(len(tc.bad_ddp([ddp("gloo_lite", 2, 1.0, diff=1e-9)])), 1)
        self.assertEqual(tc.bad_ddp([ddp("gloo_lite", 4, 1.0, diff=1e-6)]), [])
        self.assertEqual(len(tc.bad_ddp([ddp("gloo_lite", 4, 1.0, diff=1e-2)])), 1)


class Missing(unittest.TestCase):
    def test_every_backend_row_and_ddp_row(self):
        args = tc.parse_args(["-p", "2", "--sizes", "8", "--collectives", "allreduce"])
        records = [record("gloo_lite", "allreduce", 2, 8, 1.0)]
        missing = tc.missing_rows(records, [ddp("gloo_lite", 2, 1.0)], args)
        self.assertEqual(missing, ["gloo allreduce P=2 8B", "DDP gloo P=2", "DDP local P=2"])


@unittest.skipIf(worker is None, "torch is not installed for this Python")
class WorkerCheck(unittest.TestCase):
    """Every rank's Case filled as that rank fills it; the reference result computed here from
    all of them with torch's own ops (not the worker's formulas)."""

    P = 3

    def cases(self, coll, size):
        return [worker.Case(coll, size, self.P, rank, {}) for rank in range(self.P)]

    def reference(self, coll, cases, rank):
        for case in cases:
            case.fill()
        inputs = [case.inp.clone() for case in cases]
        if coll == "allreduce":
            return torch.stack(inputs).sum(0)
        if coll == "allgather":
            return torch.cat(inputs)
        if coll == "reduce_scatter":
            return torch.stack(inputs).sum(0).chunk(self.P)[rank]
        return inputs[0]

    def test_right_passes_and_wrong_fails(self):
        for coll in worker.COLLECTIVES:
            for size in (8, 4096, 3 << 20):
                cases = self.cases(coll, size)
                for rank in range(self.P):
                    case = cases[rank]
                    expected = self.reference(coll, cases, rank)
                    case.out.copy_(expected)
                    self.assertEqual(case.wrong(), 0, (coll, size, rank))
                    case.out[-1] += 1
                    self.assertEqual(case.wrong(), 1, (coll, size, rank))
                    case.out.zero_()  # what a collective that did nothing leaves
                    self.assertGreater(case.wrong(), 0, (coll, size, rank))

    def test_sizes_follow_nccl_tests(self):
        allgather = worker.Case("allgather", 8, 4, 0, {})
        self.assertEqual((allgather.inp.numel(), allgather.out.numel()), (1, 4))
        reduce_scatter = worker.Case("reduce_scatter", 1 << 20, 4, 0, {})
        self.assertEqual(reduce_scatter.inp.numel(), (1 << 20) // 4)
        self.assertEqual(reduce_scatter.out.numel(), (1 << 20) // 16)


if __name__ == "__main__":
    unittest.main()
