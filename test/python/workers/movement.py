"""The collectives that move data (broadcast, allgather(v), gather(v), scatter(v),
alltoall(v), barrier) in several dtypes, allocated outputs and out=."""

import numpy as np

from common import BFLOAT16, context, done, rank_data, readonly, same

ctx = context()
R, P = ctx.rank, ctx.size
checks = 0
dtypes = [np.dtype(t) for t in (np.int8, np.int32, np.uint64, np.float16, np.float32, np.float64)]
if BFLOAT16 is not None:
    dtypes.append(BFLOAT16)

for seed, dtype in enumerate(dtypes):
    what = str(dtype)
    mine = rank_data(R, (3, 2), dtype, seed)
    stacked = np.stack([rank_data(r, (3, 2), dtype, seed) for r in range(P)])

    root = seed % P
    a = mine.copy() if R == root else np.zeros((3, 2), dtype)
    assert ctx.broadcast(a, root=root) is a
    same(a, stacked[root], "broadcast " + what)

    got = ctx.allgather(readonly(mine))
    assert got.shape == (P, 3, 2) and got.dtype == dtype, (got.shape, got.dtype)
    same(got, stacked, "allgather " + what)
    out = np.empty((P * 6,), dtype)
    assert ctx.allgather(mine, out=out) is out
    same(out, stacked.ravel(), "allgather out= " + what)

    counts = [r + 1 for r in range(P)]
    pieces = [rank_data(r, (counts[r],), dtype, seed) for r in range(P)]
    same(ctx.allgatherv(pieces[R]), np.concatenate(pieces), "allgatherv exchanged " + what)
    same(ctx.allgatherv(pieces[R], counts), np.concatenate(pieces), "allgatherv counts " + what)

    got = ctx.gather(mine, root=root)
    if R == root:
        same(got, stacked, "gather " + what)
    else:
        assert got is None
    got = ctx.gatherv(pieces[R], counts, root=root)
    if R == root:
        same(got, np.concatenate(pieces), "gatherv " + what)

    # scatter: the root's blocks; elsewhere a template of the same shape, or None with out=.
    blocks = rank_data(99, (P, 4), dtype, seed)
    a = blocks if R == root else np.zeros((P, 4), dtype)
    same(ctx.scatter(a, root=root), blocks[R], "scatter " + what)
    out = np.empty(4, dtype)
    assert ctx.scatter(blocks if R == root else None, root=root, out=out) is out
    same(out, blocks[R], "scatter out= " + what)
    flat = rank_data(98, (sum(counts),), dtype, seed)
    got = ctx.scatterv(flat if R == root else flat * 0, counts, root=root)
    start = sum(counts[:R])
    same(got, flat[start:start + counts[R]], "scatterv " + what)

    # alltoall: block j of rank i holds 10*i + j; it lands as block i of rank j.
    send = np.stack([np.full(3, 10 * R + j) for j in range(P)]).astype(dtype)
    got = ctx.alltoall(send)
    assert got.shape == send.shape
    same(got, np.stack([np.full(3, 10 * i + R) for i in range(P)]), "alltoall " + what)

    def pair_count(i, j):
        return (i + j) % 3 + 1

    send_counts = [pair_count(R, j) for j in range(P)]
    recv_counts = [pair_count(i, R) for i in range(P)]
    send = np.concatenate([np.full(send_counts[j], 10 * R + j) for j in range(P)]).astype(dtype)
    want = np.concatenate([np.full(recv_counts[i], 10 * i + R) for i in range(P)])
    same(ctx.alltoallv(send, send_counts, recv_counts), want, "alltoallv " + what)
    checks += 12

# The in-place forms: a is this rank's block of out (allgather; gather at the root), out is the
# root's block of a (scatter at the root). Rank 0's block is at offset 0: there a and out start
# at the same address and that is in place too.
n = 2
want = np.repeat(np.arange(1, P + 1), n)
b = np.zeros(n * P, np.int64)
b[n * R:n * (R + 1)] = R + 1
assert ctx.allgather(b[n * R:n * (R + 1)], out=b) is b
same(b, want, "allgather in place")
for root in (0, P - 1):
    g = np.zeros(n * P, np.int64)
    g[n * R:n * (R + 1)] = R + 1
    got = ctx.gather(g[n * R:n * (R + 1)], root=root, out=g if R == root else None)
    if R == root:
        same(got, want, f"gather in place at root {root}")
    s = np.arange(n * P) if R == root else np.zeros(n * P, np.int64)
    out = s[n * R:n * (R + 1)] if R == root else np.empty(n, np.int64)
    ctx.scatter(s, root=root, out=out)
    same(out, np.arange(n * R, n * (R + 1)), f"scatter in place from root {root}")
checks += 5

ctx.barrier()
ctx.barrier(timeout=10.0)
checks += 1
done(ctx, checks)
