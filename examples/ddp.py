#!/usr/bin/env python3
"""Data-parallel training with torch's DistributedDataParallel, over gloo_lite or torch's gloo.

    torchrun --nproc-per-node 4 examples/ddp.py --backend gloo_lite
    torchrun --nproc-per-node 4 examples/ddp.py --backend gloo        # the same, on torch's gloo

Every rank holds a copy of a small MLP and trains it on batches of its own, drawn from one
synthetic regression task (a fixed random teacher network plus noise). After each backward
pass DDP averages the gradients over the ranks (bucketed allreduce, overlapping the backward
pass), so the copies take the same steps and stay equal. Rank 0 prints the loss as it goes
down; at the end every rank prints one line with the loss on a batch none of them trained on,
before and after, and a checksum of its parameters, the same on every rank. Exits 1 if that
loss did not fall or the copies differ.
"""
import argparse
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

try:
    # Registers the "gloo_lite" backend. An installed gloo_lite also registers it through
    # torch's backend entry point, and --backend gloo needs no gloo_lite at all.
    import gloo_lite.torch  # noqa: F401
except ImportError as error:
    gloo_lite_missing = error
else:
    gloo_lite_missing = None


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="gloo_lite",
                        help='"gloo_lite" (default), "gloo", or e.g. "cpu:gloo_lite,cuda:nccl"')
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    parser.add_argument("--width", type=int, default=256, help="hidden width of the MLP")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--every", type=int, default=20, help="print the loss every N steps")
    return parser.parse_args()


class Task:
    """One synthetic regression task shared by every rank: targets from a fixed random teacher
    network (seed 0, the same everywhere) plus a little noise; each rank draws inputs of its own
    (`seed`), a fresh batch every step."""

    def __init__(self, width_in, batch, seed):
        torch.manual_seed(0)
        self.teacher = torch.nn.Sequential(torch.nn.Linear(width_in, 32), torch.nn.Tanh(),
                                           torch.nn.Linear(32, 1))
        self.generator = torch.Generator().manual_seed(seed)
        self.width_in, self.batch = width_in, batch

    def sample(self):
        with torch.no_grad():
            x = torch.randn(self.batch, self.width_in, generator=self.generator)
            y = self.teacher(x) + 0.01 * torch.randn(self.batch, 1, generator=self.generator)
        return x, y


def main():
    args = parse_args()
    if "gloo_lite" in args.backend and gloo_lite_missing is not None \
            and "GLOO_LITE" not in getattr(dist.Backend, "_plugins", {}):
        raise SystemExit("ddp.py: --backend %s needs gloo_lite's torch backend: %s"
                         % (args.backend, gloo_lite_missing))
    dist.init_process_group(backend=args.backend)  # rank, size and store from torchrun
    rank, size = dist.get_rank(), dist.get_world_size()

    width_in = 64
    torch.manual_seed(1234)  # DDP broadcasts rank 0's parameters anyway; this keeps it tidy
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(width_in, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    task = Task(width_in, args.batch, seed=1 + rank)

    def mean_loss(x, y):
        """The loss on (x, y) averaged over the ranks (dist.all_reduce of the ranks' values)."""
        with torch.no_grad():
            loss = torch.nn.functional.mse_loss(model(x), y).reshape(1)
        dist.all_reduce(loss)
        return loss.item() / size

    held_out = Task(width_in, args.batch, seed=1 + size + rank).sample()  # never trained on
    before = mean_loss(*held_out)
    start = time.perf_counter()
    for step in range(args.steps):
        x, y = task.sample()
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # DDP averages the gradients over the ranks here
        optimizer.step()
        if step % args.every == 0 or step == args.steps - 1:
            mean = loss.detach().reshape(1)  # the training loss averaged over the ranks
            dist.all_reduce(mean)
            if rank == 0:
                print("step %3d  loss %.4f" % (step, mean.item() / size), flush=True)
    seconds = time.perf_counter() - start
    after = mean_loss(*held_out)

    # The copies must be equal: every rank compares its checksum with rank 0's.
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum()
    rank0 = checksum.clone()
    dist.broadcast(rank0, src=0)
    in_sync = bool(checksum == rank0)
    print("rank %d of %d (%s): %d steps in %.2f s, held-out loss %.4f -> %.4f; parameter "
          "checksum %.10g %s" % (rank, size, args.backend, args.steps, seconds, before, after,
                                 checksum.item(),
                                 "(same as rank 0)" if in_sync else "DIFFERS FROM RANK 0"),
          flush=True)
    dist.destroy_process_group()
    if not in_sync:
        raise SystemExit("ddp.py: rank %d's parameters differ from rank 0's" % rank)
    if not after < before:
        raise SystemExit("ddp.py: the held-out loss did not fall (%.4f -> %.4f)" % (before, after))


if __name__ == "__main__":
    main()
