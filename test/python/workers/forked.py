"""Rank 0 forks after init. The child either exits at once (Python finalises its copy of the
context) or calls a collective on it, which must raise: the context, its connections and its
shared memory are the parent's. Neither may disturb the parent, whose allreduce with rank 1
then gives 1 + 2 = 3 (the child's 100 must not reach rank 1)."""

import os
import sys

import numpy as np

import gloo_lite
from common import context

ctx = context(timeout=10)
mode = sys.argv[1]
ctx.barrier()
if ctx.rank == 0:
    child = os.fork()
    if child == 0:
        if mode == "call":
            try:
                ctx.allreduce(np.full(4, 100, np.float32))
                print("child: allreduce returned", flush=True)
            except gloo_lite.Error as e:
                print(f"child: {type(e).__name__}: {e}", flush=True)
        sys.exit(0)
    _, status = os.waitpid(child, 0)
    print(f"parent {os.getpid()}: child exited with status {status}", flush=True)
a = np.full(4, ctx.rank + 1, np.float32)
ctx.allreduce(a)
print(f"rank {ctx.rank}: allreduce {a.tolist()}", flush=True)
ctx.close()
