"""What the torch workers share: joining the job, the seeded inputs every rank can recompute
for every other rank, local reference reductions, and the Checker that counts checks and prints
each failure with what differed.

Every line a worker prints starts with "[rank] " so the test can tell ranks apart; a failed
check prints "[rank] FAIL <section>: <check>: <what differed>" and the worker goes on, so one
run reports every failure; the last line is "[rank] SUMMARY checks=N failed=F ...".
"""

import functools
import os
import sys
import warnings
import zlib
from datetime import timedelta

import torch
import torch.distributed as dist

import gloo_lite.torch  # noqa: F401  registers the backend "gloo_lite"

# all_reduce_coalesced and all_gather_coalesced are deprecated, not gone: they are tested.
warnings.filterwarnings("ignore", category=FutureWarning)

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64]
DTYPES = FLOAT_DTYPES + INT_DTYPES
# Also moved, not all reduced: int16 has no gloo_lite reduction (moved as bytes), bool reduces
# as bytes, complex as pairs of floats.
MOVED_DTYPES = DTYPES + [torch.int16, torch.bool, torch.complex64]

Op = dist.ReduceOp
# PREMUL_SUM with its factor a Python float, and a tensor.
FLOAT_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM", "PREMUL_SUM_TENSOR"]
INT_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
# torch's gloo rejects these: they are compared with the local reference only.
REFERENCE_ONLY_OPS = {"AVG", "PREMUL_SUM", "PREMUL_SUM_TENSOR"}
PREMUL_FACTOR = 0.375

# allclose bounds per dtype (rtol, atol) where the order of a float reduction may differ.
TOLERANCE = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (2e-3, 4e-3),
    torch.bfloat16: (1.6e-2, 3.2e-2),
}


def say(line):
    rank = dist.get_rank() if dist.is_initialized() else os.environ.get("RANK", "?")
    # One write per line: ranks share torchrun's stdout.
    sys.stdout.write(f"[{rank}] {line}\n")
    sys.stdout.flush()


def init(backend="gloo_lite", timeout=60, **kwargs):
    """Joins the job torchrun (or the test, with the same variables) started."""
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout), **kwargs)
    return dist.get_rank(), dist.get_world_size()


def op_of(name):
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    if name == "PREMUL_SUM_TENSOR":
        return dist._make_nccl_premul_sum(torch.tensor([PREMUL_FACTOR], dtype=torch.float64))
    return getattr(Op, name)


def seed_of(key, rank):
    return zlib.crc32(f"{key}/{rank}".encode())


def rank_input(key, rank, shape, dtype, op="SUM"):
    """The input rank `rank` uses for check `key`: the same on every rank that recomputes it.
    Values suit `op`: products stay small, bitwise ops get random bits, sums cannot overflow
    the integer types over 4 ranks."""
    g = torch.Generator().manual_seed(seed_of(key, rank))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=torch.complex128).to(dtype)
    if dtype.is_floating_point:
        if op == "PRODUCT":
            magnitude = torch.rand(shape, generator=g, dtype=torch.float64) + 0.5
            sign = torch.randint(0, 2, shape, generator=g) * 2 - 1
            return (magnitude * sign).to(dtype)
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    if op in ("BAND", "BOR", "BXOR"):
        info = torch.iinfo(dtype)
        low, high = max(info.min, -(2**62)), min(info.max, 2**62)
        return torch.randint(low, high, shape, generator=g, dtype=dtype)
    if op == "PRODUCT":
        low, high = (0, 4) if dtype == torch.uint8 else (-3, 4)
    else:
        low, high = (0, 60) if dtype == torch.uint8 else (-30, 31)
    return torch.randint(low, high, shape, generator=g, dtype=dtype)


def reference_reduce(name, tensors):
    """The reduction of `tensors` (one per rank) computed here, in float64 for float types."""
    dtype = tensors[0].dtype
    if dtype.is_complex:
        wide = [t.to(torch.complex128) for t in tensors]
    else:
        wide = [t.double() if dtype.is_floating_point else t for t in tensors]
    if name == "SUM":
        out = functools.reduce(torch.add, wide)
    elif name == "AVG":
        out = functools.reduce(torch.add, wide) / len(wide)
    elif name.startswith("PREMUL_SUM"):
        out = functools.reduce(torch.add, [t * PREMUL_FACTOR for t in wide])
    elif name == "PRODUCT":
        out = functools.reduce(torch.mul, wide)
    elif name == "MIN":
        out = functools.reduce(torch.minimum, wide)
    elif name == "MAX":
        out = functools.reduce(torch.maximum, wide)
    else:
        out = functools.reduce(getattr(torch, "bitwise_" + name[1:].lower()), wide)
    return out.to(dtype)


def inexact(dtype):
    """Whether results of this dtype may differ with the order of a reduction."""
    return dtype.is_floating_point or dtype.is_complex


def describe_difference(got, want, exact, tolerance=None):
    if not isinstance(got, torch.Tensor):
        return f"got {got!r}, want {want!r}"
    if got.shape != want.shape or got.dtype != want.dtype:
        return (f"got {got.dtype} {tuple(got.shape)}, want {want.dtype} {tuple(want.shape)}")
    if got.is_complex():  # compared as (real, imaginary) pairs
        got, want = torch.view_as_real(got), torch.view_as_real(want)
    g, w = got.double().flatten(), want.double().flatten()
    if exact:
        bad = ~((g == w) | (g.isnan() & w.isnan()))
    else:
        rtol, atol = tolerance or TOLERANCE[got.dtype]
        bad = ~torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    where = bad.nonzero().flatten()
    if where.numel() == 0:
        return None
    i = where[0].item()
    return (f"{where.numel()} of {g.numel()} elements differ ({'exact' if exact else 'allclose'}"
            f"); first at flat index {i}: got {g[i].item()!r}, want {w[i].item()!r}; "
            f"max |diff| {(g - w).abs().max().item():.3g}")


class Checker:
    def __init__(self):
        self.checks = 0
        self.failed = 0
        self.against = {"gloo": 0, "reference": 0}
        self.section = "-"

    def fail(self, name, detail):
        self.failed += 1
        say(f"FAIL {self.section}: {name}: {detail}")

    def true(self, name, ok, detail):
        self.checks += 1
        if not ok:
            self.fail(name, detail)
        return ok

    def same(self, name, got, want, exact=True, against=None, tolerance=None):
        """`got` equals `want` (a tensor or a list of tensors); `tolerance`: (rtol, atol) for
        an inexact comparison, else the dtype's."""
        self.checks += 1
        if against:
            self.against[against] += 1
        gots = got if isinstance(got, (list, tuple)) else [got]
        wants = want if isinstance(want, (list, tuple)) else [want]
        if len(gots) != len(wants):
            self.fail(name, f"got {len(gots)} tensors, want {len(wants)}")
            return False
        for i, (g, w) in enumerate(zip(gots, wants)):
            detail = describe_difference(g, w, exact, tolerance)
            if detail:
                where = f" (tensor {i})" if len(gots) > 1 else ""
                self.fail(name, detail + where + (f" against {against}" if against else ""))
                return False
        return True

    def raises(self, name, call, error, *needles):
        """`call()` raises `error` whose message holds every needle (case-insensitive)."""
        self.checks += 1
        try:
            call()
        except error as e:
            missing = [n for n in needles if n.lower() not in str(e).lower()]
            if missing:
                self.fail(name, f"{type(e).__name__} lacks {missing}: {e}")
                return None
            return e
        except Exception as e:  # noqa: BLE001  the wrong kind is the finding
            self.fail(name, f"raised {type(e).__name__}, want {error.__name__}: {e}")
            return None
        self.fail(name, f"raised nothing, want {error.__name__}")
        return None

    def summary(self, sections):
        say(f"SUMMARY checks={self.checks} failed={self.failed} "
            f"against_gloo={self.against['gloo']} against_reference={self.against['reference']} "
            f"sections={','.join(sections)}")
        return 1 if self.failed else 0


def finish(code):
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
