#!/usr/bin/env python3
"""One rank of benchmark/torch_compare.py, started by torchrun: gloo_lite's torch.distributed
backend and torch's own gloo side by side in the same process, on the same tensors. Rank 0
prints a 'META {json}' line and a 'RESULT {json}' line per backend and case.

    python -m torch.distributed.run --standalone --nproc-per-node P torch_compare_worker.py \
        --sizes 8,1M --collectives allreduce,allgather [--ddp-steps 20]

The job's default group is a gloo group used only for control (barriers, agreeing on iteration
counts, gathering times); the two measured groups are new_group(backend="gloo_lite") and
new_group(backend="gloo") over all ranks. Per case, both backends are warmed up and checked,
then timed in alternating repetitions (gloo_lite, gloo, gloo_lite, gloo, ...) with the same
number of calls, so that a noisy second on the machine hits both. Each repetition's time is the
max over ranks of the mean per call (nccl-tests' and benchmark/compare's convention).

Collectives and sizes (nccl-tests sizes, as compare and python_compare; float32, SUM):
  allreduce       all_reduce(t) in place, t of `size` bytes
  allgather       all_gather_into_tensor(out, inp): out of `size` bytes, inp its 1/P
  reduce_scatter  reduce_scatter_tensor(out, inp): inp of `size` bytes, out its 1/P
  broadcast       broadcast(t, src=0) in place
allgather and reduce_scatter move at least one element per rank.

DDP mode (--ddp-steps N > 0): an MLP (1024 -> width -> width -> width -> 16, ~10.5M parameters
at width 2048) trained on synthetic data under DistributedDataParallel, one copy per backend
plus a copy without DDP (the compute alone), all from the same seed on the same batches;
blocks of steps alternate between the three. Step time: per step the max over ranks, then the
median. At the end the two DDP copies' parameters are compared: they see the same averaged
gradients, so they must agree (bitwise at P = 2, where a sum of two numbers has one order).
"""
import argparse
import copy
import datetime
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compare_lib import model  # noqa: E402
from compare_lib.runner import HZ, Runner, busy_jiffies  # noqa: E402
from python_compare_worker import warmup_count  # noqa: E402

COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast")
BACKENDS = ("gloo_lite", "gloo")
DDP_IN, DDP_OUT = 1024, 16


def register_gloo_lite():
    """Registers the backend (torch_compare.py checked that this import works) and returns
    gloo_lite's version."""
    import gloo_lite
    import gloo_lite.torch  # noqa: F401

    return getattr(gloo_lite, "__version__", "?")


class Control:
    """The default (gloo) group: everything that is not measured."""

    def __init__(self):
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def reduce(self, values, op):
        tensor = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(tensor, op=op)
        return tensor.tolist()

    def max(self, values):
        return self.reduce(values, dist.ReduceOp.MAX)

    def sum(self, values):
        return self.reduce(values, dist.ReduceOp.SUM)

    def barrier(self):
        dist.barrier()


class Case:
    """The tensors of one (collective, size), shared by both backends; each backend's call is
    bound to them ahead of the loop. The check fills inputs whose results are exact in float32
    (small integers) and counts the elements that differ from the expected values."""

    def __init__(self, coll, size, P, rank, groups):
        self.coll, self.P, self.rank = coll, P, rank
        self.nbytes = Runner.gl_bytes(coll, P, size)
        count = self.nbytes // 4
        zeros = lambda n: torch.zeros(n, dtype=torch.float32)  # noqa: E731
        if coll == "allgather":
            self.inp, self.out = zeros(count // P), zeros(count)
        elif coll == "reduce_scatter":
            self.inp, self.out = zeros(count), zeros(count // P)
        else:
            self.inp = self.out = zeros(count)
        self.calls = {name: self.bind(group) for name, group in groups.items()}

    def bind(self, group):
        inp, out = self.inp, self.out
        if self.coll == "allreduce":
            return lambda: dist.all_reduce(out, group=group)
        if self.coll == "allgather":
            return lambda: dist.all_gather_into_tensor(out, inp, group=group)
        if self.coll == "reduce_scatter":
            return lambda: dist.reduce_scatter_tensor(out, inp, group=group)
        return lambda: dist.broadcast(out, src=0, group=group)

    def fill(self):
        P, rank = self.P, self.rank
        i = torch.arange(self.inp.numel(), dtype=torch.float32)
        if self.coll == "allreduce":
            self.inp.copy_(i % 7 + rank)
        elif self.coll == "allgather":
            self.inp.copy_(i % 13 + 16 * rank)
            self.out.fill_(-1)
        elif self.coll == "reduce_scatter":
            block = self.out.numel()
            self.inp.copy_(i % 5 + 3 * (i // block) + rank)
            self.out.fill_(-1)
        else:
            self.inp.copy_(i % 11 + 1 if rank == 0 else torch.full_like(i, -1))

    def wrong(self):
        P = self.P
        i = torch.arange(self.out.numel(), dtype=torch.float32)
        if self.coll == "allreduce":
            expected = P * (i % 7) + P * (P - 1) // 2
        elif self.coll == "allgather":
            block = self.inp.numel()
            expected = i % block % 13 + 16 * (i // block)
        elif self.coll == "reduce_scatter":
            mine = i + self.rank * self.out.numel()  # where this rank's block starts
            expected = P * (mine % 5 + 3 * self.rank) + P * (P - 1) // 2
        else:
            expected = i % 11 + 1
        return int(torch.count_nonzero(self.out != expected))

    def reset(self):
        # Zeros for the timed loop: an in-place allreduce of zeros stays zeros.
        self.inp.zero_()
        self.out.zero_()


class Noise:
    """The cores that other processes used during a case: the machine's busy time minus the
    CPU time of all ranks (measured on rank 0, summed over the control group)."""

    def __init__(self, control):
        self.control = control

    def __enter__(self):
        self.busy0, self.own0, self.wall0 = busy_jiffies(), time.process_time(), time.monotonic()
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        own = self.control.sum([time.process_time() - self.own0])[0]
        wall = max(time.monotonic() - self.wall0, 1e-3)
        self.foreign = max(0.0, ((busy_jiffies() - self.busy0) / HZ - own) / wall)
        return False


def timed(call, iterations, control):
    control.barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        call()
    return (time.perf_counter() - start) / iterations


def measure(case, size, args, control):
    """Returns per backend: (time_us of every repetition, wrong) and the iteration count."""
    estimates = []
    for name in BACKENDS:
        samples = []
        for _ in range(warmup_count(size, args.warmup)):
            start = time.perf_counter()
            case.calls[name]()
            samples.append(time.perf_counter() - start)
        later = samples[len(samples) // 2:] or [1e-3]
        estimates.append(sum(later) / len(later))
    per_call = max(control.max(estimates))
    per_rep = args.min_time / args.reps
    iterations = int(min(args.max_iters, max(args.min_iters, math.ceil(per_rep / per_call))))
    wrong = {}
    for name in BACKENDS:
        case.fill()
        case.calls[name]()
        wrong[name] = int(control.sum([case.wrong()])[0])
    case.reset()
    times = {name: [] for name in BACKENDS}
    for rep in range(args.reps):
        for name in BACKENDS:
            times[name].append(timed(case.calls[name], iterations, control))
    flat = control.max([t for name in BACKENDS for t in times[name]])
    reps = {name: [t * 1e6 for t in flat[k * args.reps:(k + 1) * args.reps]]
            for k, name in enumerate(BACKENDS)}
    return reps, wrong, iterations


def run_collectives(args, groups, control):
    P, rank = control.size, control.rank
    for coll in args.collectives:
        for size in args.sizes:
            case = Case(coll, size, P, rank, groups)
            with Noise(control) as noise:
                reps, wrong, iterations = measure(case, size, args, control)
            if rank == 0:
                for name in BACKENDS:
                    print("RESULT " + json.dumps({
                        "kind": "collective", "lib": name, "variant": name, "coll": coll,
                        "P": P, "size": size, "bytes": case.nbytes,
                        "time_us": min(reps[name]), "median_us": statistics.median(reps[name]),
                        "reps_us": reps[name], "iterations": iterations, "wrong": wrong[name],
                        "noise": noise.foreign}), flush=True)
            del case


def mlp(width):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(DDP_IN, width), torch.nn.ReLU(),
        torch.nn.Linear(width, width), torch.nn.ReLU(),
        torch.nn.Linear(width, width), torch.nn.ReLU(),
        torch.nn.Linear(width, DDP_OUT))


def run_ddp(args, groups, control):
    """Step times of DDP over each backend and of the model without DDP, interleaved."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    P, rank = control.size, control.rank
    base = mlp(args.ddp_width)
    params = sum(p.numel() for p in base.parameters())
    models = {name: DDP(copy.deepcopy(base), process_group=groups[name]) for name in BACKENDS}
    models["local"] = copy.deepcopy(base)
    optimizers = {name: torch.optim.SGD(m.parameters(), lr=args.ddp_lr)
                  for name, m in models.items()}
    generator = torch.Generator().manual_seed(1000 + rank)
    batches = [(torch.randn(args.ddp_batch, DDP_IN, generator=generator),
                torch.randn(args.ddp_batch, DDP_OUT, generator=generator)) for _ in range(4)]
    steps_done = {name: 0 for name in models}
    step_s = {name: [] for name in models}
    losses = {name: [] for name in models}

    def step(name):
        x, y = batches[steps_done[name] % len(batches)]
        steps_done[name] += 1
        start = time.perf_counter()
        optimizers[name].zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(models[name](x), y)
        loss.backward()  # DDP: returns once every bucket's allreduce is done
        optimizers[name].step()
        elapsed = time.perf_counter() - start
        losses[name].append(float(loss))
        return elapsed

    order = list(BACKENDS) + ["local"]
    for name in order:
        for _ in range(args.ddp_warmup):
            step(name)
    with Noise(control) as noise:
        while len(step_s["local"]) < args.ddp_steps:
            block = min(args.ddp_block, args.ddp_steps - len(step_s["local"]))
            for name in order:
                control.barrier()
                step_s[name] += [step(name) for _ in range(block)]
    # Per step, the slowest rank (DDP steps are synchronous; the local copy's differ).
    flat = control.max([t for name in order for t in step_s[name]])
    n = args.ddp_steps
    per_step = {name: flat[k * n:(k + 1) * n] for k, name in enumerate(order)}
    diff = max((a - b).abs().max().item() for a, b in zip(
        models["gloo_lite"].module.parameters(), models["gloo"].module.parameters()))
    diff = control.max([diff])[0]
    if rank == 0:
        for name in order:
            ms = [t * 1e3 for t in per_step[name]]
            print("RESULT " + json.dumps({
                "kind": "ddp", "lib": name, "P": P, "params": params, "width": args.ddp_width,
                "batch": args.ddp_batch, "steps": n, "median_ms": statistics.median(ms),
                "mean_ms": statistics.fmean(ms), "min_ms": min(ms), "steps_ms": ms,
                "loss_first": losses[name][0], "loss_last": losses[name][-1],
                "max_param_diff": diff if name != "local" else None,
                "noise": noise.foreign}), flush=True)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="", help="comma list, K/M suffixes")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES))
    parser.add_argument("--reps", type=int, default=3, help="repetitions per backend and case")
    parser.add_argument("--min-time", type=float, default=0.3,
                        help="seconds of timed calls per backend and case, over all repetitions")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--min-iters", type=int, default=2)
    parser.add_argument("--max-iters", type=int, default=20000)
    parser.add_argument("--ddp-steps", type=int, default=0, help="timed DDP steps (0: none)")
    parser.add_argument("--ddp-block", type=int, default=5)
    parser.add_argument("--ddp-warmup", type=int, default=2)
    parser.add_argument("--ddp-width", type=int, default=2048)
    parser.add_argument("--ddp-batch", type=int, default=32)
    parser.add_argument("--ddp-lr", type=float, default=0.01)
    parser.add_argument("--timeout", type=int, default=600, help="seconds, every group")
    args = parser.parse_args()
    args.sizes = model.parse_sizes(args.sizes) if args.sizes else []
    args.collectives = [c for c in args.collectives.split(",") if c]
    for coll in args.collectives:
        if coll not in COLLECTIVES:
            parser.error("unknown collective %r; known: %s" % (coll, ", ".join(COLLECTIVES)))
    return args


def main():
    args = parse_args()
    version = register_gloo_lite()
    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("gloo", timeout=timeout)
    control = Control()
    groups = {name: dist.new_group(backend=name, timeout=timeout) for name in BACKENDS}
    if control.rank == 0:
        print("META " + json.dumps({
            "gloo_lite": version, "torch": torch.__version__, "P": control.size,
            "threads": torch.get_num_threads(), "python": sys.version.split()[0]}), flush=True)
    if args.sizes:
        run_collectives(args, groups, control)
    if args.ddp_steps > 0:
        run_ddp(args, groups, control)
    control.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
