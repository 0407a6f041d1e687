# Sum a numpy array across ranks:  gloo_lite_run -n 4 -- python3 examples/python/allreduce.py
import numpy as np

import gloo_lite

ctx = gloo_lite.init()  # rank, size and store from gloo_lite_run (or torchrun, mpirun, Slurm)
data = np.full(4, ctx.rank + 1, dtype=np.float32)
ctx.allreduce(data)  # in place, sum over all ranks
expected = ctx.size * (ctx.size + 1) // 2
print(f"rank {ctx.rank}: {data} (expected {expected})")
