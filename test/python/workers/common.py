"""What the workers share: the context, the dtypes under test and the comparisons."""

import os
import sys

import numpy as np

import gloo_lite

try:
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    BFLOAT16 = None

INT_DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_DTYPES = [np.float16, np.float32, np.float64] + ([BFLOAT16] if BFLOAT16 else [])
DTYPES = [np.dtype(t) for t in INT_DTYPES + FLOAT_DTYPES]


def context(timeout=30):
    """From gloo_lite_run's environment, or the explicit store a test spawned us with."""
    if "GLOO_LITE_TEST_STORE" in os.environ:
        return gloo_lite.init(store=os.environ["GLOO_LITE_TEST_STORE"],
                              rank=int(os.environ["GLOO_LITE_TEST_RANK"]),
                              size=int(os.environ["GLOO_LITE_TEST_SIZE"]), timeout=timeout)
    return gloo_lite.init(timeout=timeout)


def rank_data(rank, shape, dtype, seed):
    """Small integers (1..3): exact in every dtype, even bfloat16 products over 4 ranks."""
    rng = np.random.default_rng(1000 * seed + rank)
    return rng.integers(1, 4, size=shape).astype(dtype)


def same(got, want, what):
    got64 = np.asarray(got).astype(np.float64)
    want64 = np.asarray(want).astype(np.float64)
    if got64.shape != want64.shape or not np.array_equal(got64, want64):
        sys.stderr.write(f"MISMATCH {what}:\n got  {got64!r}\n want {want64!r}\n")
        raise AssertionError(what)


def readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def done(ctx, checks):
    print(f"rank {ctx.rank}: {checks} checks passed", flush=True)
