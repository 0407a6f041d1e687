"""allreduce, reduce, reduce_scatter(v) in every dtype and op (the bitwise ones on the integer
dtypes), in place and with out=, checked against numpy's reduction of every rank's data (each
rank can rebuild all of it)."""

import sys

import numpy as np

import gloo_lite
from common import DTYPES, FLOAT_DTYPES, INT_DTYPES, context, done, rank_data, readonly, same

ctx = context()
R, P = ctx.rank, ctx.size
NUMPY = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}
checks = 0


def everyone(shape, dtype, seed):
    return np.stack([rank_data(r, shape, dtype, seed) for r in range(P)])


def reference(op, stacked, dtype):
    if op == "avg":
        return (stacked.astype(np.float64).sum(axis=0) / P).astype(dtype)
    return NUMPY[op](stacked.astype(np.float64), axis=0).astype(dtype)


seed = 0
for dtype in DTYPES:
    ops = ["sum", "prod", "min", "max"] + (["avg"] if dtype in FLOAT_DTYPES else [])
    for op in ops:
        seed += 1
        what = f"{op} {dtype}"
        data = everyone((3, 5), dtype, seed)
        want = reference(op, data, dtype)

        a = data[R].copy()
        assert ctx.allreduce(a, op=op) is a
        same(a, want, "allreduce in place " + what)

        out = np.empty_like(data[R])
        assert ctx.allreduce(readonly(data[R]), op=op, out=out) is out
        same(out, want, "allreduce out= " + what)

        root = seed % P
        a = data[R].copy()
        result = ctx.reduce(a, root=root, op=op)
        if R == root:
            assert result is a
            same(a, want, "reduce " + what)
        else:
            assert result is None
            same(a, data[R], "reduce leaves non-roots' input " + what)

        blocks = everyone((P, 4), dtype, seed)
        got = ctx.reduce_scatter(readonly(blocks[R]), op=op)
        same(got, reference(op, blocks, dtype)[R], "reduce_scatter " + what)

        counts = [r + 1 for r in range(P)]
        flat = everyone((sum(counts),), dtype, seed)
        out = np.zeros(counts[R], dtype)
        assert ctx.reduce_scatterv(flat[R], counts, op=op, out=out) is out
        start = sum(counts[:R])
        same(out, reference(op, flat, dtype)[start:start + counts[R]], "reduce_scatterv " + what)
        checks += 5

# The bitwise ops, on the integer dtypes only: full-range values (bxor), and values whose bits
# are mostly set (band) or mostly clear (bor) so that a rank left out changes the result.
# Compared exactly, not through float64 (uint64 would round).
BITWISE = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


def bitwise_data(rank, shape, dtype, op, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2000 * seed + rank)
    draw = lambda: rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if op == "bxor":
        return draw()
    sparse = draw() & draw()  # a quarter of the bits set: P = 4
    return ~sparse if op == "band" else sparse


def same_bits(got, want, what):
    if got.dtype != want.dtype or not np.array_equal(got, want):
        sys.stderr.write(f"MISMATCH {what}:\n got  {got!r}\n want {want!r}\n")
        raise AssertionError(what)


for dtype in INT_DTYPES:
    for op, reduce_op in BITWISE.items():
        seed += 1
        what = f"{op} {np.dtype(dtype)}"
        data = np.stack([bitwise_data(r, (2, 9), dtype, op, seed) for r in range(P)])
        want = reduce_op.reduce(data, axis=0)
        a = data[R].copy()
        assert ctx.allreduce(a, op=op) is a
        same_bits(a, want, "allreduce " + what)
        root = seed % P
        out = np.zeros_like(data[R])
        ctx.reduce(data[R].copy(), root=root, op=getattr(gloo_lite.ReduceOp, op.upper()),
                   out=out if R == root else None)
        if R == root:
            same_bits(out, want, "reduce " + what)
        blocks = np.stack([bitwise_data(r, (P, 3), dtype, op, seed) for r in range(P)])
        got = ctx.reduce_scatter(readonly(blocks[R]), op=op)
        same_bits(got, reduce_op.reduce(blocks, axis=0)[R], "reduce_scatter " + what)
        checks += 3

# The enum, a custom op (a Python callable), several tags, an explicit algorithm.
a = np.full(7, R + 1, np.float32)
ctx.allreduce(a, op=gloo_lite.ReduceOp.MAX, tag=3)
same(a, np.full(7, P, np.float32), "ReduceOp.MAX on tag 3")
a = np.arange(6, dtype=np.int64) * (R + 1)
ctx.allreduce(a, op=lambda inout, other: np.maximum(inout, other, out=inout))
same(a, np.arange(6) * P, "custom op")
a = np.full(1000, R, np.float64)
ctx.allreduce(a, algorithm="ring")
same(a, np.full(1000, P * (P - 1) / 2), "algorithm=ring")
checks += 3

# Not only numpy: any writable buffer.
b = bytearray([R + 1] * 4)
ctx.allreduce(b)
assert list(b) == [P * (P + 1) // 2] * 4, b
checks += 1
done(ctx, checks)
