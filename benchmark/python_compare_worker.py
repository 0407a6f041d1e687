#!/usr/bin/env python3
"""One rank of benchmark/python_compare.py: times allreduce, allgather and broadcast of numpy
float32 arrays through gloo_lite's Python module or through mpi4py, with one timing loop for
both. Rank 0 prints a 'RESULT {json}' line per case.

    gloo_lite_run -n P -- python3 python_compare_worker.py gloo_lite --sizes 8,1M ...
    mpirun ... -np P python3 python_compare_worker.py mpi4py --sizes 8,1M ...

Sizes follow nccl-tests, as gloo_lite_bench and benchmark/compare do: the array every rank
passes for allreduce and broadcast, the whole P-block output for allgather (at least one
element per rank). Both libraries get the same calls: allreduce in place (sum), allgather from
a block into a (P, block) array, broadcast in place from rank 0.
"""
import argparse
import functools
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compare_lib import model  # noqa: E402
from compare_lib.runner import Runner  # noqa: E402

COLLECTIVES = ("allreduce", "allgather", "broadcast")


class GlooLite:
    """gloo_lite's Python module, initialised from the environment gloo_lite_run sets."""

    name = "gloo_lite"

    def __init__(self):
        import gloo_lite

        self.ctx = gloo_lite.init()
        self.rank, self.size = self.ctx.rank, self.ctx.size
        self.version = getattr(gloo_lite, "__version__", "?")

    # The timed calls, each bound to its arrays ahead of the loop (functools.partial is C code:
    # the loop pays one Python-level call per operation on both sides).
    def allreduce(self, a):
        return functools.partial(self.ctx.allreduce, a)

    def allgather(self, a, out):
        return functools.partial(self.ctx.allgather, a, out=out)

    def broadcast(self, a):
        return functools.partial(self.ctx.broadcast, a, root=0)

    def barrier(self):
        self.ctx.barrier()


class Mpi4py:
    """mpi4py's buffer (upper-case) API on COMM_WORLD: no pickling, as numpy users call it."""

    name = "mpi4py"

    def __init__(self):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.version = "mpi4py %s, %s" % (
            __import__("mpi4py").__version__,
            MPI.Get_library_version().split(",")[0].strip(),
        )

    def allreduce(self, a):
        return functools.partial(self.comm.Allreduce, self.MPI.IN_PLACE, a, self.MPI.SUM)

    def allgather(self, a, out):
        return functools.partial(self.comm.Allgather, a, out)

    def broadcast(self, a):
        return functools.partial(self.comm.Bcast, a, 0)

    def barrier(self):
        self.comm.Barrier()


def all_values(lib, value):
    """Every rank's `value` (a float), through the library's own allgather."""
    mine = np.array([value], dtype=np.float64)
    every = np.empty((lib.size, 1), dtype=np.float64)
    lib.allgather(mine, every)()
    return every[:, 0]


class Case:
    """The arrays of one (collective, size), the bound call, and the check: inputs whose
    result is exact in float32 (small integers), and the count of elements that differ."""

    def __init__(self, lib, coll, size):
        P, rank = lib.size, lib.rank
        self.coll = coll
        # The bytes gloo_lite_bench is asked for in benchmark/compare, for the same size.
        self.nbytes = Runner.gl_bytes(coll, P, size)
        if coll == "allgather":
            block = self.nbytes // 4 // P
            self.data = np.zeros(block, dtype=np.float32)
            self.out = np.zeros((P, block), dtype=np.float32)
            self.call = lib.allgather(self.data, self.out)
        else:
            count = self.nbytes // 4
            self.data = np.zeros(count, dtype=np.float32)
            self.call = getattr(lib, coll)(self.data)
        self.P, self.rank = P, rank

    def fill(self):
        i = np.arange(self.data.size, dtype=np.float32)
        if self.coll == "allreduce":
            self.data[:] = i % 7 + self.rank
        elif self.coll == "allgather":
            self.data[:] = i % 13 + 16 * self.rank
            self.out.fill(-1)
        else:
            self.data[:] = i % 11 + 1 if self.rank == 0 else -1

    def wrong(self):
        i = np.arange(self.data.size, dtype=np.float32)
        if self.coll == "allreduce":
            expected = self.P * (i % 7) + self.P * (self.P - 1) // 2
            return int(np.count_nonzero(self.data != expected))
        if self.coll == "allgather":
            expected = (i % 13)[None, :] + 16 * np.arange(self.P, dtype=np.float32)[:, None]
            return int(np.count_nonzero(self.out != expected))
        return int(np.count_nonzero(self.data != i % 11 + 1))

    def reset(self):
        # Zeros for the timed loop: an in-place allreduce of zeros stays zeros (no overflow to
        # inf over thousands of iterations, which could change the reduction's speed).
        self.data.fill(0)


def warmup_count(size, warmup):
    """Fewer warm-up calls for large sizes (compare's rule): every rank derives the same
    number from the size alone, so no rank ever makes a call the others do not."""
    if size >= 16 << 20:
        return min(warmup, 2)
    if size >= 1 << 20:
        return min(warmup, 3)
    return warmup


def measure(lib, case, size, args):
    """nccl-tests' method, as gloo_lite_bench and the anchors time: warm-up, the check, then
    `iterations` calls between a barrier and the clock; time = max over ranks of the mean."""
    warm = warmup_count(size, args.warmup)
    estimate = []
    for _ in range(warm):
        start = time.perf_counter()
        case.call()
        estimate.append(time.perf_counter() - start)
    later = estimate[len(estimate) // 2:] or [1e-3]
    per_call = float(all_values(lib, sum(later) / len(later)).max())
    iterations = int(min(args.max_iters, max(args.min_iters, math.ceil(args.min_time / per_call))))
    case.fill()
    case.call()
    wrong = int(all_values(lib, case.wrong()).sum())
    case.reset()
    lib.barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        case.call()
    mean = (time.perf_counter() - start) / iterations
    return float(all_values(lib, mean).max()) * 1e6, iterations, wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lib", choices=("gloo_lite", "mpi4py"))
    parser.add_argument("--sizes", required=True, help="comma list, K/M suffixes")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES))
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds timed per case")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--min-iters", type=int, default=5)
    parser.add_argument("--max-iters", type=int, default=20000)
    parser.add_argument("--variant", default="", help="label for the records (tcp, shm)")
    args = parser.parse_args()
    lib = GlooLite() if args.lib == "gloo_lite" else Mpi4py()
    sizes = model.parse_sizes(args.sizes)
    if lib.rank == 0:
        print("META " + json.dumps({"lib": lib.name, "version": lib.version, "P": lib.size,
                                    "numpy": np.__version__, "python": sys.version.split()[0]}),
              flush=True)
    for coll in args.collectives.split(","):
        if coll not in COLLECTIVES:
            raise SystemExit("python_compare_worker: unknown collective %r; known: %s"
                             % (coll, ", ".join(COLLECTIVES)))
        for size in sizes:
            case = Case(lib, coll, size)
            time_us, iterations, wrong = measure(lib, case, size, args)
            if lib.rank == 0:
                print("RESULT " + json.dumps({
                    "lib": lib.name, "variant": args.variant, "coll": coll, "P": lib.size,
                    "size": size, "bytes": case.nbytes, "time_us": time_us,
                    "iterations": iterations, "wrong": wrong}), flush=True)
    lib.barrier()


if __name__ == "__main__":
    main()
