"""DDP on gloo_lite against DDP on torch's gloo: two DDP models wrap identical copies of a small
MLP (each rank starts from its own seed, so DDP's initial broadcast matters), one on each
backend's group, trained 20 steps with SGD on the same batches. Their parameters must agree
(bitwise at P = 2), match across ranks, and have moved. Variants: the default reducer (small
buckets), find_unused_parameters with a branch unused on some steps, static_graph with
gradients as bucket views, and comm hooks that use the Work's future (torch's allreduce and
fp16 compression hooks, and one of our own)."""

import copy

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 20


class MLP(torch.nn.Module):
    def __init__(self, branch=False):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)
        # Used on even steps only, and never: DDP must not wait for its gradients.
        self.sometimes = torch.nn.Linear(32, 4) if branch else None
        self.never = torch.nn.Linear(32, 4) if branch else None

    def forward(self, x, step=0):
        h = torch.relu(self.fc1(x))
        out = self.fc2(h)
        if self.sometimes is not None and step % 2 == 0:
            out = out + self.sometimes(h)
        return out


def divided_allreduce_hook(group, bucket):
    """Averages a bucket with dist.all_reduce(async_op=True) and the future's then()."""
    tensor = bucket.buffer().div_(dist.get_world_size(group))
    future = dist.all_reduce(tensor, group=group, async_op=True).get_future()
    return future.then(lambda f: f.value()[0])


VARIANTS = {
    # Buckets of about 1 KB: several allreduces in flight during each backward pass.
    "default reducer": dict(bucket_cap_mb=0.001),
    "find_unused_parameters": dict(find_unused_parameters=True, branch=True),
    "static_graph, gradient_as_bucket_view": dict(static_graph=True, bucket_view=True,
                                                  bucket_cap_mb=0.001),
    "allreduce_hook": dict(hook=default_hooks.allreduce_hook, bucket_cap_mb=0.001),
    # Gradients rounded to float16: a different summation order at P > 2 moves them by an
    # float16 ulp, which 20 steps carry into the parameters.
    "fp16_compress_hook": dict(hook=default_hooks.fp16_compress_hook, tolerance=(1e-3, 1e-4)),
    "custom hook (get_future().then)": dict(hook=divided_allreduce_hook, bucket_cap_mb=0.001),
}


def _train(model, group, options, rank):
    ddp = DDP(model, process_group=group, bucket_cap_mb=options.get("bucket_cap_mb", 25),
              find_unused_parameters=options.get("find_unused_parameters", False),
              static_graph=options.get("static_graph", False),
              gradient_as_bucket_view=options.get("bucket_view", False))
    if "hook" in options:
        ddp.register_comm_hook(group, options["hook"])
    sgd = torch.optim.SGD(ddp.parameters(), lr=0.05)
    # Each rank its own batch, of one linear map the model can learn.
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(32, 16, generator=g)
    y = x @ torch.linspace(-1, 1, 64).view(16, 4)
    losses = []
    for step in range(STEPS):
        sgd.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x, step), y)
        loss.backward()
        sgd.step()
        losses.append(loss.item())
    return losses


def run(ck, job):
    R, P = job.rank, job.size
    for name, options in VARIANTS.items():
        torch.manual_seed(100 + R)  # every rank its own start: DDP broadcasts rank 0's
        start = MLP(branch=options.get("branch", False))
        rank0_start = [p.detach().clone() for p in start.parameters()]
        for p in rank0_start:
            dist.broadcast(p, src=0, group=job.gloo)
        lite_model, gloo_model = copy.deepcopy(start), copy.deepcopy(start)
        losses = _train(lite_model, None, options, R)
        _train(gloo_model, job.gloo, options, R)
        lite = [p.detach() for p in lite_model.parameters()]
        ck.same(f"DDP {name}: parameters on gloo_lite vs gloo",
                torch.cat([p.flatten() for p in lite]),
                torch.cat([p.detach().flatten() for p in gloo_model.parameters()]),
                exact=P == 2, against="gloo", tolerance=options.get("tolerance"))
        flat = torch.cat([p.flatten() for p in lite])
        everyone = [torch.empty_like(flat) for _ in range(P)]
        dist.all_gather(everyone, flat, group=job.gloo)
        ck.same(f"DDP {name}: parameters of rank 0 and this rank", flat, everyone[0])
        moved = [not torch.equal(a, b) for a, b in zip(lite, rank0_start)]
        want_moved = [True] * len(moved)
        if options.get("branch"):
            want_moved[-2:] = [False, False]  # the branch never used keeps its start
        ck.true(f"DDP {name}: which parameters trained", moved == want_moved,
                f"changed {moved}, want {want_moved}")
        ck.true(f"DDP {name}: the loss falls", losses[-1] < losses[0],
                f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
