"""gloo_lite.CudaCommunicator on the host stand-in layer (no GPU), 4 ranks: every collective,
blocking and stream-ordered (async_op=True, then the host waits for the stream only), several
dtypes, against numpy references; then the argument errors."""

import numpy as np

import gloo_lite
from common import context, done, rank_data, same
from stand_in_array import StandInDeviceArray, device

ctx = context()
R, P = ctx.rank, ctx.size
checks = 0
# 64-byte slots (the minimum for 4 ranks): every call below is many pipelined chunks; delays make a missing wait show.
comm = gloo_lite.CudaCommunicator(ctx, "host-stand-in", slot_bytes=64, slots=3,
                                  max_delay_us=100)
assert "host stand-in" in comm.layer, comm.layer
stream = comm.create_stream()


def run(method, *args, ordered, **kwargs):
    if ordered:
        work = method(*args, stream=stream, async_op=True, **kwargs)
        assert isinstance(work, gloo_lite.Work)
        comm.synchronize_stream(stream)  # the stream alone orders the result
        work.wait()
    else:
        method(*args, stream=stream, **kwargs)


for ordered in (False, True):
    for seed, dtype in enumerate([np.int32, np.float32, np.float16, np.uint8, np.float64]):
        what = f"{np.dtype(dtype)} {'stream-ordered' if ordered else 'blocking'} (host stand-in)"
        mine = rank_data(R, (5, 7), dtype, seed)
        stacked = np.stack([rank_data(r, (5, 7), dtype, seed) for r in range(P)])

        a = device(mine.copy())
        run(comm.allreduce, a, "sum", ordered=ordered)
        same(a.host, stacked.sum(axis=0, dtype=np.float64), "allreduce " + what)
        out = device(np.zeros_like(mine))
        run(comm.allreduce, device(mine), gloo_lite.ReduceOp.MAX, out, ordered=ordered)
        same(out.host, stacked.max(axis=0), "allreduce max out= " + what)

        root = seed % P
        b = device(mine.copy() if R == root else np.zeros_like(mine))
        run(comm.broadcast, b, root, ordered=ordered)
        same(b.host, stacked[root], "broadcast " + what)

        out = device(np.zeros_like(mine))
        run(comm.reduce, device(mine), (root + 1) % P, "min", out, ordered=ordered)
        if R == (root + 1) % P:
            same(out.host, stacked.min(axis=0), "reduce min " + what)

        out = device(np.zeros((P, 5, 7), dtype))
        run(comm.allgather, device(mine), out, ordered=ordered)
        same(out.host, stacked, "allgather " + what)

        big = [rank_data(r, (P, 6), dtype, seed + 50) for r in range(P)]
        out = device(np.zeros(6, dtype))
        run(comm.reduce_scatter, device(big[R]), out, "sum", ordered=ordered)
        same(out.host, np.sum([b_[R] for b_ in big], axis=0, dtype=np.float64),
             "reduce_scatter " + what)

        out = device(np.zeros((P, 6), dtype))
        run(comm.alltoall, device(big[R]), out, ordered=ordered)
        same(out.host, np.stack([big[j][R] for j in range(P)]), "alltoall " + what)
        checks += 7

comm.synchronize()


def raises(exception, needle, call):
    try:
        call()
    except exception as e:
        assert needle in str(e), f"{needle!r} not in {e!r}"
        return
    raise AssertionError(f"no {exception.__name__} mentioning {needle!r}")


x = np.ones(8, np.int32)
raises(TypeError, "host buffer", lambda: comm.allreduce(memoryview(x)))
raises(TypeError, "CPU array (DLPack kDLCPU)", lambda: comm.allreduce(x))
raises(TypeError, "neither __cuda_array_interface__", lambda: comm.allreduce(3))
raises(TypeError, "float32 but a is int32",
       lambda: comm.allreduce(device(x), out=device(np.zeros(8, np.float32))))
raises(ValueError, "needs a.size = 8",
       lambda: comm.allreduce(device(x), out=device(np.zeros(4, np.int32))))
raises(ValueError, "not C-contiguous",
       lambda: comm.allreduce(StandInDeviceArray(np.zeros((4, 2), np.int32), strides=(4, 16))))
raises(ValueError, "read-only", lambda: comm.broadcast(device(x, readonly=True)))
raises(TypeError, "no type for", lambda: comm.allreduce(device(np.zeros(4, np.complex64))))
raises(ValueError, "out is required", lambda: comm.allgather(device(x), None))
raises(ValueError, "not a multiple", lambda: comm.alltoall(device(np.zeros(P + 1, np.int32)),
                                                          device(np.zeros(P + 1, np.int32))))
raises(TypeError, "custom callables", lambda: comm.allreduce(device(x), lambda a, b: None))
class RecordsDlpackStream:
    """Claims kDLCUDA memory and records the stream its __dlpack__ is asked for (then refuses
    the export): the DLPack protocol has the consumer name the stream it will use."""

    def __init__(self):
        self.streams = []

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None, **kwargs):
        self.streams.append(stream)
        raise BufferError("not exported in this test")


for s in (None, stream):
    fake = RecordsDlpackStream()
    raises(TypeError, "CudaCommunicator.allreduce: a: its __dlpack__(stream=",
           lambda: comm.allreduce(fake, stream=s))
    want = comm.stream if s is None else stream  # the stand-in's stream for None
    assert fake.streams == [want], (fake.streams, want)
checks += 2

# A read-only input is fine where the call does not write it.
out = device(np.zeros(8, np.int32))
comm.allreduce(device(x, readonly=True), "sum", out)
same(out.host, np.full(8, P), "allreduce of a read-only input (host stand-in)")
checks += 12

available, why = gloo_lite.cuda_available()
if not available:
    raises(gloo_lite.Error, why.split(":")[0], lambda: gloo_lite.CudaCommunicator(ctx, 0))
    checks += 1
comm.destroy_stream(stream)
comm.close()
raises(ValueError, "closed", lambda: comm.allreduce(device(x)))
done(ctx, checks + 1)
