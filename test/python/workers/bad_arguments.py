"""Every rank makes the same bad calls: each raises ValueError or TypeError naming the argument
before any traffic, so nobody waits for anybody, and the context still works afterwards."""

import time

import numpy as np

import gloo_lite
from common import context

ctx = context(timeout=20)
R, P = ctx.rank, ctx.size
good = np.ones(8, np.float32)
b = np.zeros(2 * P, np.int64)
cases = [
    # (exception, words the message must contain, call)
    (TypeError, ["a", "format 'h'"], lambda: ctx.allreduce(np.ones(4, np.int16))),
    (TypeError, ["buffer protocol"], lambda: ctx.allreduce("not an array")),
    (TypeError, ["buffer protocol"], lambda: ctx.allgather([1, 2, 3])),
    (ValueError, ["a", "C-contiguous"], lambda: ctx.allreduce(np.ones((4, 4), np.float32)[:, 1])),
    (ValueError, ["a", "read-only"], lambda: ctx.allreduce(_readonly())),
    # Every rank is a non-root here (they all raise, so the roots need not agree).
    (ValueError, ["a", "read-only"], lambda: ctx.broadcast(_readonly(), root=(R + 1) % P)),
    (ValueError, ["a", "read-only"], lambda: ctx.recv(_readonly(), (R + 1) % P)),
    (ValueError, ["a", "read-only"], lambda: ctx.allreduce(b"immutable")),
    (TypeError, ["out", "float64", "float32"],
     lambda: ctx.allreduce(good, out=np.empty(8, np.float64))),
    (ValueError, ["out", "7 elements", "expected 8"],
     lambda: ctx.allreduce(good, out=np.empty(7, np.float32))),
    (ValueError, ["out", f"expected {8 * P}"],
     lambda: ctx.allgather(good, out=np.empty(8, np.float32))),
    (ValueError, ["not a multiple"], lambda: ctx.reduce_scatter(np.ones(4 * P + 1, np.float32))),
    (ValueError, ["counts", "entries"], lambda: ctx.allgatherv(good, counts=[8] * (P + 1))),
    (ValueError, ["counts[rank]"], lambda: ctx.allgatherv(good, counts=[7] * P)),
    (ValueError, ["sum(counts)"], lambda: ctx.scatterv(good, counts=[1] * P, root=R)),
    (ValueError, ["out is required"], lambda: ctx.scatter(None, root=(R + 1) % P)),
    (ValueError, ["op", "bogus"], lambda: ctx.allreduce(good, op="bogus")),
    (TypeError, ["op"], lambda: ctx.allreduce(good, op=3.5)),
    (ValueError, ["tag"], lambda: ctx.allreduce(good, tag=70000)),
    (ValueError, ["tag"], lambda: ctx.send(good, (R + 1) % P, tag=-1)),
    (ValueError, ["timeout"], lambda: ctx.allreduce(good, timeout=-1.0)),
    (ValueError, ["root"], lambda: ctx.broadcast(good, root=P + 3)),
    (gloo_lite.InvalidArgument, ["nonsense"], lambda: ctx.allreduce(good, algorithm="nonsense")),
    # out= overlapping a other than in the in-place form (a is this rank's block of out; out is
    # the root's block of a), pointer equality included: rank 1's allgather(b[:2], out=b) would
    # take its data for block 0 and lose it. Every rank is its own root; rank 0, whose block is
    # at offset 0, passes block 1 instead.
    (gloo_lite.InvalidArgument, ["allgather on rank", "this rank's block of the output"],
     lambda: ctx.allgather(_not_mine(b), out=b)),
    (gloo_lite.InvalidArgument, ["allgather on rank", "this rank's block of the output"],
     lambda: ctx.allgatherv(_not_mine(b), counts=[2] * P, out=b)),
    (gloo_lite.InvalidArgument, ["gather on rank", "the root's own block of the output"],
     lambda: ctx.gather(_not_mine(b), root=R, out=b)),
    (gloo_lite.InvalidArgument, ["gather on rank", "the root's own block of the output"],
     lambda: ctx.gatherv(_not_mine(b), counts=[2] * P, root=R, out=b)),
    (gloo_lite.InvalidArgument, ["scatter on rank", "the root's own block of the input"],
     lambda: ctx.scatter(b, root=R, out=_not_mine(b))),
    (gloo_lite.InvalidArgument, ["scatter on rank", "the root's own block of the input"],
     lambda: ctx.scatterv(b, counts=[2] * P, root=R, out=_not_mine(b))),
    # Messages that say what is wrong: a dtype numpy exports no buffer for, counts past any
    # buffer (one entry, or their sum, which numpy would see as a negative dimension).
    (TypeError, ["a", "has dtype datetime64[ns]", "cannot reduce or move"],
     lambda: ctx.allreduce(np.zeros(4, "datetime64[ns]"))),
    (ValueError, ["counts[1] is 18446744073709551616", "more elements than any buffer"],
     lambda: ctx.allgatherv(good, counts=[8, 2**64] + [8] * (P - 2))),
    (ValueError, ["counts[0] is -1", "negative count"],
     lambda: ctx.allgatherv(good, counts=[-1] + [8] * (P - 1))),
    (gloo_lite.InvalidArgument, ["allgatherv", "counts sum past the largest buffer"],
     lambda: ctx.allgatherv(good, counts=[8 if r == R else 2**63 - 1 for r in range(P)])),
    # The bitwise ops take integer dtypes only.
    (gloo_lite.InvalidArgument, ["allreduce", "bxor", "float32", "integer type"],
     lambda: ctx.allreduce(good, op="bxor")),
    (gloo_lite.InvalidArgument, ["reduce_scatter", "band", "float64", "integer type"],
     lambda: ctx.reduce_scatter(np.ones(2 * P), op=gloo_lite.ReduceOp.BAND)),
]


def _not_mine(blocks):
    """Blocks of 2: block 0 of `blocks` (block 1 on rank 0), never this rank's own."""
    first = 2 if R == 0 else 0
    return blocks[first:first + 2]


def _readonly():
    a = np.ones(4, np.float32)
    a.flags.writeable = False
    return a


start = time.monotonic()
for i, (kind, words, call) in enumerate(cases):
    try:
        call()
    except kind as e:
        message = str(e)
        missing = [w for w in words if w not in message]
        assert not missing, f"case {i}: {missing} not in {message!r}"
    else:
        raise AssertionError(f"case {i} raised nothing")
elapsed = time.monotonic() - start
# An error raised before traffic costs nothing like a timeout.
assert elapsed < 5, f"{len(cases)} bad calls took {elapsed:.1f} s"
assert issubclass(gloo_lite.InvalidArgument, ValueError)

# A custom op that calls a collective on its own tag is told that it is inside that call on the
# same thread (not "another thread"); nothing started, so the op goes on and the call completes.
inner = []


def reentrant(inout, other):
    try:
        ctx.allreduce(np.ones(1, np.float32))
        inner.append("returned")
    except gloo_lite.InvalidArgument as e:
        inner.append(str(e))
    inout += other


# Blocking (the op runs in this thread) and async (in the stream's worker, where the inner
# blocking call used to wait for itself forever).
for async_op in (False, True):
    inner.clear()
    a = np.full(8, R, np.float32)
    work = ctx.allreduce(a, op=reentrant, algorithm="ring", async_op=async_op)
    if async_op:
        assert work.wait(timeout=15), "the async allreduce with a re-entrant op did not finish"
    assert (a == P * (P - 1) / 2).all(), a
    assert inner, "the custom op never ran"
    for message in inner:
        assert "from inside allreduce" in message and "same thread" in message, message

# The context is still usable, and in step on every rank.
a = np.full(8, R, np.float32)
ctx.allreduce(a)
assert (a == P * (P - 1) / 2).all(), a

print(f"rank {R}: {len(cases)} bad calls raised in {elapsed:.3f} s; context still works",
      flush=True)
