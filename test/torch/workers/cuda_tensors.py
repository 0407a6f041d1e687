"""Under torchrun on one GPU: CUDA tensors through backend="gloo_lite" against torch's gloo
(which stages CUDA tensors through host copies) on the same inputs; stream order (the results
are used on the current stream with no host wait in between); then DDP on a CUDA model on each
backend from the same start, whose parameters must agree."""

import copy
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import gloo_lite.torch  # noqa: F401  registers the backend

rank = int(os.environ["RANK"])
dist.init_process_group("gloo_lite")
P = dist.get_world_size()
gloo = dist.new_group(backend="gloo")
device = torch.device("cuda", 0)
checks = 0


def same(a, b, what):
    global checks
    assert torch.equal(a.cpu(), b.cpu()), f"{what}: {a} != {b}"
    checks += 1


for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int64):
    x = (torch.arange(1 << 18, device=device) % (5 + rank)).to(dtype)
    mine, theirs = x.clone(), x.clone()
    dist.all_reduce(mine)
    mine.mul_(2)  # on the current stream, right after: must see the reduced values
    dist.all_reduce(theirs, group=gloo)
    same(mine, theirs * 2, f"all_reduce {dtype}")

    b = x.clone() if rank == 1 else torch.zeros_like(x)
    dist.broadcast(b, src=1)
    same(b, (torch.arange(1 << 18, device=device) % 6).to(dtype), f"broadcast {dtype}")

    out, ref = torch.empty(P * x.numel(), dtype=dtype, device=device), torch.empty(
        P * x.numel(), dtype=dtype, device=device)
    dist.all_gather_into_tensor(out, x)
    dist.all_gather_into_tensor(ref, x, group=gloo)
    same(out, ref, f"all_gather_into_tensor {dtype}")
    lst = [torch.empty_like(x) for _ in range(P)]
    dist.all_gather(lst, x)
    same(torch.cat(lst), ref, f"all_gather {dtype}")

    rs = torch.empty(x.numel() // P, dtype=dtype, device=device)
    dist.reduce_scatter_tensor(rs, x)
    whole = x.clone()
    dist.all_reduce(whole, group=gloo)
    same(rs, whole.view(P, -1)[rank], f"reduce_scatter_tensor {dtype}")

    # A non-contiguous CUDA tensor (staged and copied back on the stream).
    t = x.view(-1, 2)[:, 0]
    expect = t.clone()
    dist.all_reduce(expect, group=gloo)
    dist.all_reduce(t)
    same(t, expect, f"all_reduce non-contiguous {dtype}")

# DDP with a CUDA model: gloo_lite against gloo from identical starting copies.
torch.manual_seed(rank)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 8)).to(device)
ddp_ours = DDP(copy.deepcopy(model), bucket_cap_mb=0.01)
ddp_gloo = DDP(copy.deepcopy(model), process_group=gloo, bucket_cap_mb=0.01)
opt_ours = torch.optim.SGD(ddp_ours.parameters(), lr=0.05)
opt_gloo = torch.optim.SGD(ddp_gloo.parameters(), lr=0.05)
for step in range(10):
    g = torch.Generator(device="cpu").manual_seed(100 * step + rank)
    batch = torch.randn(32, 64, generator=g).to(device)
    for ddp, opt in ((ddp_ours, opt_ours), (ddp_gloo, opt_gloo)):
        opt.zero_grad()
        ddp(batch).square().mean().backward()
        opt.step()
for a, b in zip(ddp_ours.parameters(), ddp_gloo.parameters()):
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), "DDP on CUDA: gloo_lite and gloo differ"
    checks += 1
torch.cuda.synchronize()
print(f"rank {rank}: {checks} CUDA checks passed", flush=True)
dist.destroy_process_group()
