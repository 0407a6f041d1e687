"""CudaCommunicator.send/recv on the host stand-in layer (no GPU), 4 ranks: messages around the
ring and across it, blocking and stream-ordered (async_op=True, then the host waits for the
stream only), in several dtypes, checked against the array the sender made; the argument errors
(peer outside the group, negative tag, host arrays); last, because it fails the context, a
receive whose size differs from the send's, which fails naming both ranks."""

import numpy as np

import gloo_lite
from common import context, done, rank_data, same
from stand_in_array import device

ctx = context()
R, P = ctx.rank, ctx.size
assert P == 4, "run with 4 ranks"
checks = 0
comm = gloo_lite.CudaCommunicator(ctx, "host-stand-in", slot_bytes=64, slots=3,
                                  max_delay_us=100)
stream = comm.create_stream()


def message(sender, receiver, tag, dtype):
    return rank_data(10 * sender + receiver, (9, 13), dtype, tag)


def exchange(shift, tag, dtype, ordered):
    """Send to R + shift, receive from R - shift; around the ring even ranks send first, across
    it (shift 2) the lower rank of each pair: calls run one at a time, so two ranks that both
    receive first would wait for each other forever."""
    to, frm = (R + shift) % P, (R - shift) % P
    sends_first = R < to if shift == 2 else R % 2 == 0
    got = device(np.zeros((9, 13), dtype))
    works = []
    for step in ("send", "recv") if sends_first else ("recv", "send"):
        if step == "send":
            args = (device(message(R, to, tag, dtype)), to, tag)
        else:
            args = (got, frm, tag)
        method = getattr(comm, step)
        if ordered:
            works.append(method(*args, stream=stream, async_op=True))
        else:
            result = method(*args, stream=stream)
            assert result is args[0], step
    if ordered:
        comm.synchronize_stream(stream)  # the stream alone orders the result
        for work in works:
            work.wait()
    kind = "stream-ordered" if ordered else "blocking"
    same(got.host, message(frm, R, tag, dtype),
         f"recv {np.dtype(dtype)} from rank {frm}, tag {tag}, {kind} (host stand-in)")


for ordered in (False, True):
    for seed, dtype in enumerate([np.int32, np.float16, np.uint8, np.float64]):
        exchange(1, seed, dtype, ordered)
        exchange(-1, 100 + seed, dtype, ordered)
        exchange(2, (1 << 62) + seed, dtype, ordered)
        checks += 3
comm.synchronize()

# Every pair exchanges 1 MiB (rendezvous-sized chunks of 256 KiB, far above the eager size) in
# the order the torch backend's gather/scatter/all_to_all use: peers in rank order, receiving
# first from lower ranks and sending first to higher ones. The calls of a communicator run one
# at a time, so this order is what keeps the ranks from waiting on each other.
big = gloo_lite.CudaCommunicator(ctx, "host-stand-in", slot_bytes=1 << 18, slots=3,
                                 max_delay_us=50)
big_stream = big.create_stream()
got = {p: device(np.zeros(1 << 18, np.float32)) for p in range(P) if p != R}
works = []  # each holds its array until the call is done
for p in got:
    mine = device(np.resize(message(R, p, 7, np.float32), 1 << 18))
    steps = [(big.recv, got[p]), (big.send, mine)] if p < R else \
        [(big.send, mine), (big.recv, got[p])]
    for method, array in steps:
        works.append(method(array, p, 7, stream=big_stream, async_op=True))
big.synchronize_stream(big_stream)
for work in works:
    work.wait()
for p in got:
    same(got[p].host, np.resize(message(p, R, 7, np.float32), 1 << 18),
         f"1 MiB from rank {p} in pair order (host stand-in)")
    checks += 1
big.destroy_stream(big_stream)
big.close()


def raises(exception, needle, call):
    try:
        call()
    except exception as e:
        assert needle in str(e), f"{needle!r} not in {e!r}"
        return
    raise AssertionError(f"no {exception.__name__} mentioning {needle!r}")


x = device(np.zeros(8, np.int32))
raises(ValueError, "peer 4 is not a rank", lambda: comm.send(x, P))
raises(ValueError, "peer -1 is not a rank", lambda: comm.recv(x, -1))
raises(ValueError, "CudaCommunicator.send: tag -3 is negative", lambda: comm.send(x, 0, -3))
raises(ValueError, "CudaCommunicator.recv: tag -1 is negative", lambda: comm.recv(x, 0, -1))
raises(TypeError, "CudaCommunicator.send: a is a CPU array", lambda: comm.send(np.zeros(4), 0))
raises(ValueError, "read-only", lambda: comm.recv(device(np.zeros(4), readonly=True), 0))
comm.synchronize()  # nothing was enqueued: the communicator still works
checks += 6

# The mismatch below fails the context on every rank: wait until every rank is done with the
# exchanges above (ranks 2 and 3 may still be finishing theirs when ranks 0 and 1 get here).
ctx.barrier()

# Rank 0 sends 128 bytes (two 64-byte slots), rank 1 expects 64 (one slot): each chunk alone has
# the receive's size; the total every send carries first tells them apart. Rank 1 raises a
# MismatchError naming both sizes; rank 0's eager send may complete first, and its next
# operation with rank 1 then fails with rank 1's account (a ConnectionError carrying its text:
# an abort does not carry the error's kind).
if R in (0, 1):
    try:
        if R == 0:
            comm.send(device(np.zeros(32, np.int32)), 1, 9)
            comm.recv(device(np.zeros(2, np.int32)), 1, 9)
        else:
            comm.recv(device(np.zeros(16, np.int32)), 0, 9)
        raise AssertionError("a receive of 64 bytes matched a send of 128")
    except (gloo_lite.MismatchError, gloo_lite.ConnectionError) as e:
        if R == 1:
            assert isinstance(e, gloo_lite.MismatchError), repr(e)
        text = str(e)
        assert "size mismatch" in text and "rank 0" in text and "rank 1" in text, text
        assert "128 bytes" in text and "64 bytes" in text, text
        checks += 1
else:
    checks += 1
comm.close()
done(ctx, checks)
