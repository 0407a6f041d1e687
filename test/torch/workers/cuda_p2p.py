"""Under torchrun on one GPU: the CUDA tensor calls built on gloo_lite::cuda's send/recv (send,
recv, gather, scatter, all_to_all, all_to_all_single with split sizes), all_to_all_single
without them (gloo_lite::cuda's alltoall) and all_reduce_coalesced, against references computed on the CPU from what
every rank sent. Messages of 4 MiB (far above the eager size) exercise the transfer order, and
results are used on the current stream with no host wait in between."""

import os

import torch
import torch.distributed as dist

import gloo_lite.torch  # noqa: F401  registers the backend

rank = int(os.environ["RANK"])
dist.init_process_group("gloo_lite")
P = dist.get_world_size()
device = torch.device("cuda", 0)
checks = 0
BIG = 1 << 20  # float32 elements: 4 MiB


def data(sender, receiver, n, dtype, salt=0):
    """What `sender` sends `receiver`: computable on any rank."""
    return ((torch.arange(n) * (sender + 3) + 7 * receiver + salt) % 251).to(dtype)


def same(got, want, what):
    global checks
    got = got.cpu()
    assert got.dtype == want.dtype and torch.equal(got, want), f"{what}: {got} != {want}"
    checks += 1


for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.int16):
    # send/recv around the ring: even ranks send first (sends of BIG wait for their receive).
    to, frm = (rank + 1) % P, (rank - 1) % P
    got = torch.zeros(BIG, dtype=dtype, device=device)
    mine = data(rank, to, BIG, dtype).to(device)
    if rank % 2 == 0:
        dist.send(mine, to, tag=5)
        dist.recv(got, frm, tag=5)
    else:
        dist.recv(got, frm, tag=5)
        dist.send(mine, to, tag=5)
    got.add_(1)  # on the stream, right after the receive
    same(got, data(frm, rank, BIG, dtype) + 1, f"send/recv {dtype}")
    # isend/irecv, then wait
    works = [dist.isend(mine, to, tag=6), dist.irecv(got, frm, tag=6)] if rank % 2 == 0 else \
        [dist.irecv(got, frm, tag=6), dist.isend(mine, to, tag=6)]
    for w in works:
        w.wait()
    same(got, data(frm, rank, BIG, dtype), f"isend/irecv {dtype}")

    for root in range(P):
        x = data(rank, root, BIG // 4, dtype).to(device)
        gathered = [torch.empty_like(x) for _ in range(P)] if rank == root else None
        dist.gather(x, gathered, dst=root)
        if rank == root:
            same(torch.stack(gathered), torch.stack([data(r, root, BIG // 4, dtype)
                                                     for r in range(P)]), f"gather {dtype}")
        out = torch.full((BIG // 4,), 3, dtype=dtype, device=device)
        pieces = [data(root, r, BIG // 4, dtype, 1).to(device) for r in range(P)] \
            if rank == root else None
        dist.scatter(out, pieces, src=root)
        same(out, data(root, rank, BIG // 4, dtype, 1), f"scatter {dtype} from {root}")

    # all_to_all_single, equal blocks (gloo_lite::cuda alltoall) and a non-contiguous output.
    inp = torch.cat([data(rank, r, BIG // 8, dtype) for r in range(P)]).to(device)
    out = torch.empty(P * (BIG // 8), dtype=dtype, device=device)
    dist.all_to_all_single(out, inp)
    want = torch.cat([data(r, rank, BIG // 8, dtype) for r in range(P)])
    same(out, want, f"all_to_all_single {dtype}")
    wide = torch.zeros(P * (BIG // 8), 2, dtype=dtype, device=device)
    dist.all_to_all_single(wide[:, 1], inp)
    same(wide[:, 1], want, f"all_to_all_single non-contiguous {dtype}")

    # Split sizes: rank i sends (i + j + 1) * 1000 rows of 3 to rank j (one of them 0 rows).
    def rows(i, j):
        return 0 if (i, j) == (0, P - 1) else (i + j + 1) * 1000

    inp = torch.cat([data(rank, j, rows(rank, j) * 3, dtype).view(-1, 3) for j in range(P)])
    out = torch.empty(sum(rows(i, rank) for i in range(P)), 3, dtype=dtype, device=device)
    dist.all_to_all_single(out, inp.to(device), [rows(i, rank) for i in range(P)],
                           [rows(rank, j) for j in range(P)])
    same(out, torch.cat([data(i, rank, rows(i, rank) * 3, dtype).view(-1, 3) for i in range(P)]),
         f"all_to_all_single with split sizes {dtype}")

    # all_to_all with lists (sizes differ per pair).
    ins = [data(rank, j, rows(rank, j) * 2, dtype).to(device) for j in range(P)]
    outs = [torch.empty(rows(i, rank) * 2, dtype=dtype, device=device) for i in range(P)]
    dist.all_to_all(outs, ins)
    for i in range(P):
        same(outs[i], data(i, rank, rows(i, rank) * 2, dtype), f"all_to_all from {i} {dtype}")

# all_reduce_coalesced (one flat allreduce, copied back on the stream), where torch still has it.
if hasattr(dist, "all_reduce_coalesced"):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in torch 2.x
        ts = [data(rank, 0, n, torch.float32).to(device) for n in (1000, 1, 300_000)]
        dist.all_reduce_coalesced(ts)
    for t, n in zip(ts, (1000, 1, 300_000)):
        same(t, sum(data(r, 0, n, torch.float32) for r in range(P)), f"all_reduce_coalesced {n}")

# Errors name the call.
try:
    dist.send(torch.ones(4, device=device), dst=P + 3)
    raise AssertionError("a send to a rank outside the group was accepted")
except (ValueError, RuntimeError) as e:
    assert "peer" in str(e) or "rank" in str(e), e
    checks += 1
try:
    dist.recv(torch.ones(4, device=device), src=(rank + 1) % P, tag=-2)
    raise AssertionError("a negative tag was accepted")
except (ValueError, RuntimeError) as e:
    assert "negative" in str(e), e
    checks += 1

dist.barrier()
print(f"rank {rank}: {checks} CUDA p2p checks passed", flush=True)
dist.destroy_process_group()
