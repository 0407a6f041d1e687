"""Every reducing collective, for every ReduceOp and dtype (and bool, complex), against torch's
gloo: all_reduce, reduce, all_reduce_coalesced, the coalescing manager (which reaches the
backend's *_coalesced forms), reduce_scatter (list form) and reduce_scatter_tensor."""

import torch
import torch.distributed as dist

from common import (DTYPES, FLOAT_OPS, INT_OPS, REFERENCE_ONLY_OPS, inexact, op_of,
                    rank_input, reference_reduce)
from versus_gloo import compare

BLOCK = 7  # elements per rank of the reduce-scatter forms


def _cases(size):
    """(dtype, op, bitwise against gloo, bitwise against the reference, large)"""
    ops = {dtype: FLOAT_OPS if dtype.is_floating_point else INT_OPS for dtype in DTYPES}
    # bool: SUM is OR, PRODUCT is AND; complex: SUM and the averages only (torch's rule).
    ops[torch.bool] = INT_OPS
    ops[torch.complex64] = ops[torch.complex128] = ["SUM", "AVG", "PREMUL_SUM"]
    for dtype, names in ops.items():
        for opname in names:
            exact_reference = not inexact(dtype) or opname in ("MIN", "MAX")
            yield dtype, opname, size == 2 or exact_reference, exact_reference, False
    # Large enough for the chunked (ring, pipelined) algorithms.
    yield torch.float32, "SUM", size == 2, False, True
    yield torch.int32, "BXOR", True, True, True


def run(ck, job):
    R, P = job.rank, job.size
    for dtype, opname, exact_gloo, exact_reference, large in _cases(P):
        tag = f"{str(dtype)[6:]}/{opname}" + ("/large" if large else "")
        gloo = opname not in REFERENCE_ONLY_OPS

        def inputs(key, shape, rank=R):
            return rank_input(key, rank, shape, dtype, opname)

        def everyone(key, shape):
            return [inputs(key, shape, r) for r in range(P)]

        def check(name, run, reference):
            compare(ck, job, f"{name}/{tag}", run, reference, exact_gloo, exact_reference, gloo)

        shape = (100003,) if large else (3, 5)

        def all_reduce(group, key="all_reduce"):
            t = inputs(key, shape)
            dist.all_reduce(t, op=op_of(opname), group=group)
            return t

        check("all_reduce", all_reduce, lambda: reference_reduce(opname, everyone("all_reduce",
                                                                                  shape)))
        if large:
            root = P - 1

            def reduce(group):
                t = inputs("reduce", shape)
                dist.reduce(t, dst=root, op=op_of(opname), group=group)
                return t if R == root else None

            check("reduce", reduce, lambda: (reference_reduce(opname, everyone("reduce", shape))
                                             if R == root else None))
        else:
            for root in sorted({0, P - 1}):

                def reduce(group, root=root):
                    t = inputs(f"reduce{root}", shape)
                    dist.reduce(t, dst=root, op=op_of(opname), group=group)
                    return t if R == root else None

                check(f"reduce(root {root})", reduce,
                      lambda root=root: (reference_reduce(opname, everyone(f"reduce{root}", shape))
                                         if R == root else None))

        block = shape[0] // P if large else BLOCK

        def reduce_scatter_tensor(group):
            out = torch.empty(block, dtype=dtype)
            dist.reduce_scatter_tensor(out, inputs("rs_tensor", (P * block,)),
                                       op=op_of(opname), group=group)
            return out

        check("reduce_scatter_tensor", reduce_scatter_tensor,
              lambda: reference_reduce(opname, everyone("rs_tensor", (P * block,)))
              .view(P, block)[R])
        if large:
            continue

        shapes = [(4,), (2, 3)]

        def all_reduce_coalesced(group):
            ts = [inputs(f"arc{i}", s) for i, s in enumerate(shapes)]
            dist.all_reduce_coalesced(ts, op=op_of(opname), group=group)
            return ts

        check("all_reduce_coalesced", all_reduce_coalesced,
              lambda: [reference_reduce(opname, everyone(f"arc{i}", s))
                       for i, s in enumerate(shapes)])

        def coalescing_manager(group):
            ts = [inputs(f"cm{i}", s) for i, s in enumerate(shapes)]
            out = torch.empty(BLOCK, dtype=dtype)
            with dist._coalescing_manager(group=group, async_ops=True) as cm:
                for t in ts:
                    dist.all_reduce(t, op=op_of(opname), group=group)
            cm.wait()
            with dist._coalescing_manager(group=group, async_ops=True) as cm:
                dist.reduce_scatter_tensor(out, inputs("cm_rs", (P * BLOCK,)), op=op_of(opname),
                                           group=group)
            cm.wait()
            return ts + [out]

        check("coalescing_manager", coalescing_manager,
              lambda: [reference_reduce(opname, everyone(f"cm{i}", s))
                       for i, s in enumerate(shapes)]
              + [reference_reduce(opname, everyone("cm_rs", (P * BLOCK,))).view(P, BLOCK)[R]])

        def reduce_scatter(group):
            out = torch.empty(BLOCK, dtype=dtype)
            dist.reduce_scatter(out, list(inputs("rs_list", (P, BLOCK)).unbind(0)),
                                op=op_of(opname), group=group)
            return out

        check("reduce_scatter", reduce_scatter,
              lambda: reference_reduce(opname, everyone("rs_list", (P, BLOCK)))[R])
