"""Bad arguments raise ValueError from the call itself, naming the call and what is wrong, on
every rank alike; nothing was started, so the group goes on working."""

import torch
import torch.distributed as dist


def run(ck, job):
    P = job.size
    ck.raises("all_gather_into_tensor with a wrong output size",
              lambda: dist.all_gather_into_tensor(torch.empty(P * 4 + 1), torch.ones(4)),
              ValueError, "all_gather_into_tensor", str(P * 4 + 1))
    ck.raises("reduce_scatter_tensor with a wrong input size",
              lambda: dist.reduce_scatter_tensor(torch.empty(3), torch.ones(P * 3 - 1)),
              ValueError, "reduce_scatter_tensor")
    ck.raises("all_reduce SUM of int16", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)),
              ValueError, "allreduce", "SUM")
    ck.raises("all_reduce BAND of float32",
              lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BAND), ValueError,
              "allreduce", "BAND")
    ck.raises("all_to_all_single with split sizes that do not add up",
              lambda: dist.all_to_all_single(torch.empty(P), torch.ones(P), [1] * P, [2] * P),
              ValueError, "all_to_all_single")
    t = torch.full((4,), 1.0 + job.rank)
    dist.all_reduce(t)
    ck.same("all_reduce after the rejected calls", t, torch.full((4,), P * (P + 1) / 2))
