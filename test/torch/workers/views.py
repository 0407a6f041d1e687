"""Non-contiguous tensors (a transposed view, a strided slice): all_reduce, broadcast,
all_gather_into_tensor and reduce_scatter_tensor give what the same call gives on a contiguous
copy, write it back into the view, and leave the rest of the base tensor alone. Also 0-dim
and empty tensors, against torch's gloo."""

import torch
import torch.distributed as dist

from common import rank_input
from versus_gloo import compare


def _views(key, rank, rows):
    """(base, view) pairs: a transposed (rows x 4) base, and every other row of a (2 rows x 3)
    one."""
    t = rank_input(key + "/t", rank, (4, rows), torch.float32)
    s = rank_input(key + "/s", rank, (2 * rows, 3), torch.float32)
    return [("transposed", t, t.t()), ("strided slice", s, s[::2])]


def _check_written(ck, name, base, view, want, untouched):
    ck.same(f"{name}: the view", view, want)
    # The elements outside the view keep their values.
    mask = torch.ones_like(base, dtype=torch.bool)
    offset = view.storage_offset() - base.storage_offset()
    mask.as_strided(view.shape, view.stride(), offset).fill_(False)
    ck.same(f"{name}: the rest of the base", base[mask], untouched[mask])


def run(ck, job):
    R, P = job.rank, job.size
    edge_shapes(ck, job)
    for kind, base, view in _views("allreduce", R, 6):
        assert not view.is_contiguous()
        untouched = base.clone()
        want = view.contiguous()
        dist.all_reduce(want)
        dist.all_reduce(view)
        _check_written(ck, f"all_reduce on a {kind} view", base, view, want, untouched)

    for kind, base, view in _views("broadcast", R, 5):
        untouched = base.clone()
        want = view.contiguous()
        dist.broadcast(want, src=P - 1)
        dist.broadcast(view, src=P - 1)
        _check_written(ck, f"broadcast on a {kind} view", base, view, want, untouched)

    for kind, in_base, view in _views("allgather", R, 3):
        # A non-contiguous output too: column 1 of a (P * n, 3) tensor.
        out_base = torch.zeros(P * view.numel(), 3)
        out = out_base[:, 1]
        untouched = out_base.clone()
        want = torch.empty(P * view.numel())
        dist.all_gather_into_tensor(want, view.contiguous().flatten())
        dist.all_gather_into_tensor(out, view)
        _check_written(ck, f"all_gather_into_tensor from a {kind} view", out_base, out, want,
                       untouched)

    for kind, base, view in _views("reduce_scatter", R, 2 * P):
        out_base = torch.zeros(view.numel() // P, 2)
        out = out_base[:, 0]
        untouched = out_base.clone()
        want = torch.empty(view.numel() // P)
        dist.reduce_scatter_tensor(want, view.contiguous().flatten())
        dist.reduce_scatter_tensor(out, view)
        _check_written(ck, f"reduce_scatter_tensor from a {kind} view", out_base, out, want,
                       untouched)


def edge_shapes(ck, job):
    """A 0-dim tensor and empty ones, against torch's gloo."""
    R = job.rank

    def check(name, run):
        compare(ck, job, name, run, None, True, True)

    def scalar_all_reduce(group):
        t = rank_input("0-dim", R, (), torch.int64)
        dist.all_reduce(t, group=group)
        return t

    def scalar_broadcast(group):
        t = rank_input("0-dim bcast", R, (), torch.float32)
        dist.broadcast(t, src=job.size - 1, group=group)
        return t

    def empty_all_reduce(group):
        t = torch.empty(0, 3)
        dist.all_reduce(t, group=group)
        return t

    def empty_all_gather(group):
        out = torch.empty(0)
        dist.all_gather_into_tensor(out, torch.empty(0), group=group)
        return out

    check("all_reduce of a 0-dim tensor", scalar_all_reduce)
    check("broadcast of a 0-dim tensor", scalar_broadcast)
    check("all_reduce of an empty tensor", empty_all_reduce)
    check("all_gather_into_tensor of empty tensors", empty_all_gather)
