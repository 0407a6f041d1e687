"""Timeouts far past the clock's range mean "no limit", at every door that takes one: init,
a call's timeout=, Work.wait(timeout=); a negative one is refused."""

import math
import time

import numpy as np

import gloo_lite
from common import same

# 1e10 s (317 years) is past what the nanosecond clock can add to now: it used to wrap into the
# past, so the store wait failed at once ("within 0 ms").
ctx = gloo_lite.init(timeout=1e10)
R, P = ctx.rank, ctx.size
checks = 0

a = np.full(100, R, np.float32)
ctx.allreduce(a, timeout=1e10)
same(a, np.full(100, sum(range(P))), "allreduce with timeout=1e10")
checks += 1

# Work.wait(timeout=inf) waits until done, not 50 ms: the sender starts 0.3 s after its
# receiver (the barrier) began waiting.
right, left = (R + 1) % P, (R - 1) % P
incoming = np.zeros(10, np.int64)
receiving = ctx.irecv(incoming, left, tag=5, timeout=math.inf)
ctx.barrier()
if R % 2 == 0:
    time.sleep(0.3)
    ctx.send(np.full(10, R, np.int64), right, tag=5, timeout=math.inf)
    assert receiving.wait(timeout=math.inf) is True
else:
    assert receiving.wait(timeout=math.inf) is True, "Work.wait(timeout=inf) gave up"
    ctx.send(np.full(10, R, np.int64), right, tag=5, timeout=1e300)
same(incoming, np.full(10, left), "irecv waited with timeout=inf")
checks += 1

try:
    receiving.wait(timeout=-1.0)
    raise AssertionError("Work.wait(timeout=-1) was accepted")
except ValueError as error:
    assert "timeout" in str(error), str(error)
checks += 1

ctx.barrier()
print(f"rank {R}: {checks} long-timeout checks passed")
