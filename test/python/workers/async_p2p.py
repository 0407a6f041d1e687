"""async_op=True Works (result, wait, test, exception, keep-alive), send/recv in a ring,
recv_any, isend/irecv, split."""

import gc
import threading
import time

import numpy as np

import gloo_lite
from common import context, same

ctx = context()
R, P = ctx.rank, ctx.size
checks = 0

# Several Works outstanding on two tags; the inputs are dropped before the waits: the Works
# keep them alive.
works = [ctx.allreduce(np.full(100 + i, R + i, np.float32), async_op=True, tag=i % 2)
         for i in range(4)]
gc.collect()
for i, work in enumerate(works):
    assert isinstance(work, gloo_lite.Work)
    got = work.result()
    same(got, np.full(100 + i, sum(r + i for r in range(P))), f"async allreduce {i}")
    assert work.wait() is True and work.test() and work.is_completed()
    assert work.exception() is None
    assert isinstance(work.algorithm, str)
work = ctx.allgather(np.array([R], np.int64), async_op=True)
assert work.wait(timeout=30.0)
same(work.result(), np.arange(P).reshape(P, 1), "async allgather")
checks += 5

# A ring of blocking send/recv: rank 0 sends first, the others receive first.
right, left = (R + 1) % P, (R - 1) % P
token = np.full(1000, R, np.int32)
got = np.empty_like(token)
if R == 0:
    ctx.send(token, right, tag=7)
    ctx.recv(got, left, tag=7)
else:
    assert ctx.recv(got, left, tag=7) is got
    ctx.send(token, right, tag=7)
same(got, np.full(1000, left), "ring send/recv")
checks += 1

# isend/irecv Works. The send is started first: while the C++ non-blocking forms are
# provisional (they complete before returning) an irecv first on every rank would wait for
# sends nobody has started yet.
incoming = np.empty(10, np.float64)
sending = ctx.isend(np.full(10, R, np.float64), right, tag=2**62)
receiving = ctx.irecv(incoming, left, tag=2**62)
receiving.wait()
sending.wait()
same(incoming, np.full(10, left), "isend/irecv")
checks += 1

# recv_any: rank 0 hears from every other rank once, in whatever order.
if R == 0:
    sources = set()
    for _ in range(P - 1):
        buf = np.empty(1, np.int64)
        source = ctx.recv_any(buf, list(range(1, P)), tag=11)
        assert buf[0] == source * 100, (buf, source)
        sources.add(source)
    assert sources == set(range(1, P)), sources
else:
    ctx.send(np.array([R * 100], np.int64), 0, tag=11)
checks += 1

# The GIL is released while a call blocks: a pure-Python thread (it needs the GIL for every
# step) keeps counting on rank 0 during a recv that waits 0.5 s for rank 1's message.
if R == 0:
    ticks, stop = [0], []

    def count():
        while not stop:
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.05)
    before = ticks[0]
    ctx.recv(np.empty(1, np.int32), 1, tag=12)
    during = ticks[0] - before
    stop.append(True)
    counter.join()
    assert during > 1000, f"the counting thread advanced {during} steps during the recv"
elif R == 1:
    time.sleep(0.5)
    ctx.send(np.ones(1, np.int32), 0, tag=12)
checks += 1

# split: even and odd ranks.
sub = ctx.split(R % 2, key=-R)
assert sub.size == len(range(R % 2, P, 2))
a = np.array([R], np.int64)
sub.allreduce(a)
assert a[0] == sum(range(R % 2, P, 2)), a
assert ctx.split(-1, 0) is None
sub.close()
assert sub.closed
checks += 1

with ctx:
    ctx.barrier()
assert ctx.closed
try:
    ctx.barrier()
except ValueError as e:
    assert "closed" in str(e)
else:
    raise AssertionError("a closed context accepted a call")
checks += 1
# A failed non-blocking call: its Work raises the error on wait and hands it out. (A fresh
# context: a timed-out receive may end the one it ran on.)
ctx = context()
work = ctx.irecv(np.empty(1), (R + 1) % P, tag=99, timeout=0.3)
try:
    work.wait()
except gloo_lite.TimeoutError:
    pass
else:
    raise AssertionError("a receive nobody answers did not time out")
assert work.test()
assert isinstance(work.exception(), gloo_lite.TimeoutError)
assert isinstance(work.exception(), TimeoutError)
# Close only once every rank's receive has timed out: a peer that closed first would end this
# rank's receive with "closed this context" instead. A new context's set-up waits for all.
context().close()
ctx.close()
checks += 1
print(f"rank {R}: {checks} checks passed", flush=True)
