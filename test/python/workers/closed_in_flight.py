"""Rank 0 starts its first allreduce on tag 1 (the shared-memory collectives set up their
segment in that call) while rank 1 has not come; another thread of rank 0 closes the context.
The call must end within a second with an error saying the context was closed, and rank 1,
coming to the call afterwards, must learn it from rank 0 instead of waiting for its deadline.
With "warm", the ranks have made one call on tag 1 before (the segment exists), and the call
closed is the second."""

import os
import sys
import threading
import time

import numpy as np

import gloo_lite
from common import context

ctx = context(timeout=60)
R = ctx.rank
marker = os.path.join(os.environ["GLOO_LITE_TEST_STORE"][len("file://"):], "rank 0 closed")
ctx.barrier()  # tag 0: both ranks are up; tag 1 is still untouched
if sys.argv[1:] == ["warm"]:
    ctx.allreduce(np.ones(4, np.float32), tag=1)


def call_running(sequence):
    # The flight recorder lists a call from its start (before it waits for rank 1) as
    # "running for N ms".
    return any(f"#{sequence} tag 1: allreduce" in line and ": running" in line
               for line in ctx.flight_record().splitlines())


if R == 0:
    closed_at = []

    def close_once_waiting():
        # Once the call runs (the flight recorder says so), not at a fixed time: a close before
        # the call would make it raise ValueError instead. Then a little more, so that the call
        # is in its wait (a close a moment earlier must end it just the same).
        sequence = 1 if sys.argv[1:] == ["warm"] else 0
        while not call_running(sequence):
            time.sleep(0.01)
        time.sleep(0.2)
        closed_at.append(time.monotonic())
        ctx.close()

    closer = threading.Thread(target=close_once_waiting)
    print("calling", flush=True)
    closer.start()
    try:
        ctx.allreduce(np.ones(4, np.float32), tag=1)
        print("returned normally", flush=True)
    except gloo_lite.Error as e:
        print(f"raised {type(e).__name__} {time.monotonic() - closed_at[0]:.3f} s after close: {e}",
              flush=True)
    closer.join()
    open(marker, "w").close()
else:
    while not os.path.exists(marker):
        time.sleep(0.01)
    start = time.monotonic()
    try:
        ctx.allreduce(np.ones(4, np.float32), tag=1, timeout=20.0)
        print("peer returned normally", flush=True)
    except gloo_lite.Error as e:
        print(f"peer raised {type(e).__name__} after {time.monotonic() - start:.3f} s: {e}",
              flush=True)
