"""Rank 0 blocks in a call nobody answers (60 s timeout), or in the Python op of an allreduce
(custom_op: it sleeps there), and is sent SIGINT by the test: the call must end with
KeyboardInterrupt at once, the context fail with a reason naming Ctrl-C, and rank 1 (waiting for
rank 0) learn that reason."""

import sys
import time

import numpy as np

import gloo_lite
from common import context

ctx = context(timeout=60)
R = ctx.rank
mode = sys.argv[1]
ctx.barrier()
if R == 0:
    print("blocking", flush=True)
    try:
        if mode == "recv":
            ctx.recv(np.empty(4, np.float32), 1, tag=5)
        elif mode == "allreduce":
            ctx.allreduce(np.ones(4, np.float32), tag=1)  # rank 1 never joins tag 1
        elif mode == "custom_op":
            def slow_sum(inout, other):
                print("in the custom reduction", flush=True)
                time.sleep(60)

            ctx.allreduce(np.ones(4, np.float32), op=slow_sum)
        else:
            ctx.irecv(np.empty(4, np.float32), 1, tag=5).wait()
    except KeyboardInterrupt:
        print(f"KeyboardInterrupt at {time.time():.3f}", flush=True)
    else:
        print("returned normally", flush=True)
        sys.exit(1)
    try:
        ctx.barrier(timeout=5.0)
    except gloo_lite.Error as e:
        print(f"later call: {type(e).__name__}: {e}", flush=True)
else:
    try:
        if mode == "custom_op":
            # May complete before rank 0's op is interrupted (then the recv learns it).
            ctx.allreduce(np.ones(4, np.float32), op=lambda inout, other: np.add(inout, other, inout))
        ctx.recv(np.empty(4, np.float32), 0, tag=6)
    except gloo_lite.ConnectionError as e:
        print(f"peer: ConnectionError: {e}", flush=True)
