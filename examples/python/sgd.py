# Data-parallel logistic regression on generated data: each rank computes the gradient on its
# shard, one allreduce sums the shards' gradients and losses, and every rank takes the same
# full-batch step. Any number of ranks gives the single-process loss:
#   gloo_lite_run -n 4 -- python3 examples/python/sgd.py      (or -n 1)
import numpy as np

import gloo_lite

ctx = gloo_lite.init()
rng = np.random.default_rng(0)  # the same data set on every rank; each takes its shard
n, d = 8192, 16
x = rng.normal(size=(n, d))
y = (x @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(np.float64)
shard = slice(ctx.rank * n // ctx.size, (ctx.rank + 1) * n // ctx.size)
x_mine, y_mine = x[shard], y[shard]


def loss_and_gradient(w):
    """Sums (not means) over this rank's shard, so that the allreduce adds them up."""
    p = 1.0 / (1.0 + np.exp(-(x_mine @ w)))
    loss = -np.sum(y_mine * np.log(p + 1e-12) + (1 - y_mine) * np.log(1 - p + 1e-12))
    return loss, x_mine.T @ (p - y_mine)


w = np.zeros(d)
for step in range(101):
    loss, gradient = loss_and_gradient(w)
    packed = np.append(gradient, loss)  # one message for both
    ctx.allreduce(packed)  # sum over ranks, in place
    gradient, loss = packed[:d] / n, packed[d] / n
    w -= 1.0 * gradient
    if ctx.rank == 0 and step % 25 == 0:
        print(f"step {step:3d}  loss {loss:.6f}")
if ctx.rank == 0:
    print(f"final loss {loss:.10f}")
