"""The last rank dies after a barrier, by SIGKILL ("kill") or by the TypeError of a bad
argument only it passed ("bad_argument", uncaught); the others are in an allreduce (or a recv)
and must raise gloo_lite.ConnectionError, also a builtins.ConnectionError, long before their
timeout."""

import builtins
import os
import signal
import sys
import time

import numpy as np

import gloo_lite
from common import context

TIMEOUT = 30.0
ctx = context(timeout=TIMEOUT)
R, P = ctx.rank, ctx.size
call, death = sys.argv[1], sys.argv[2]
ctx.barrier()
if R == P - 1:
    time.sleep(0.3)  # the others are inside their call by now
    if death == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    ctx.allreduce(np.ones(1 << 16, np.int16))  # TypeError, raised before any traffic
start = time.monotonic()
try:
    if call == "allreduce":
        ctx.allreduce(np.ones(1 << 16, np.float32))
    else:
        ctx.recv(np.empty(4, np.int32), P - 1)
except gloo_lite.ConnectionError as e:
    elapsed = time.monotonic() - start
    assert isinstance(e, builtins.ConnectionError) and isinstance(e, gloo_lite.Error)
    print(f"ConnectionError after {elapsed:.2f} s: {e}", flush=True)
    sys.exit(0)
print("no error", flush=True)
sys.exit(1)
