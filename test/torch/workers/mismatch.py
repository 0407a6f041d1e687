"""Mismatched calls fail fast instead of hanging or mixing data: rank 1 all_reduces 5 elements
while every other rank all_reduces 4.

- gloo_lite's own call check (what TORCH_DISTRIBUTED_DEBUG=DETAIL turns on in the backend), on
  a backend made directly with check=True: DistBackendError naming both calls.
- The default group under TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's wrapper, or gloo_lite's check
  behind it): some RuntimeError on every rank, well within the group's timeout (60 s).
- The gloo_lite backend torch wraps under DETAIL, called directly: DETAIL turned its check on.

The last section of a launch: the groups may be unusable afterwards."""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

import gloo_lite.torch
from common import say


def _mismatched(call):
    start = time.monotonic()
    try:
        call()
    except Exception as e:  # noqa: BLE001  the caller judges the class
        return e, time.monotonic() - start
    return None, time.monotonic() - start


def run(ck, job):
    R, P = job.rank, job.size
    count = 5 if R == 1 else 4
    store = dist.PrefixStore("checked backend", dist.distributed_c10d._get_default_store())
    backend = gloo_lite.torch._torch.create_backend(store, "the default store", R, P,
                                                    timedelta(seconds=30), True)
    t = torch.ones(4)
    backend.allreduce([t]).wait()
    ck.same("checked backend: a matching all_reduce", t, torch.full((4,), float(P)))
    error, elapsed = _mismatched(lambda: backend.allreduce([torch.ones(count)]).wait())
    say(f"RAISED gloo_lite check {type(error).__name__} after {elapsed:.2f} s: {error}")
    if ck.true("gloo_lite's check: DistBackendError", isinstance(error, dist.DistBackendError),
               f"got {type(error).__name__}: {error}"):
        for needle in ("mismatch", f"count {count}", "allreduce"):
            ck.true(f"gloo_lite's check names {needle!r}", needle in str(error), str(error))
        ck.true("gloo_lite's check: fast", elapsed < 10, f"raised after {elapsed:.1f} s")

    error, elapsed = _mismatched(lambda: dist.all_reduce(torch.ones(count)))
    message = " ".join(str(error).split())[:600]
    say(f"RAISED DETAIL {type(error).__name__} after {elapsed:.2f} s: {message}")
    if ck.true("DETAIL: a mismatched all_reduce raises a RuntimeError",
               isinstance(error, RuntimeError), f"got {type(error).__name__}: {error}"):
        ck.true("DETAIL: fast", elapsed < 10, f"raised after {elapsed:.1f} s")

    # Behind torch's wrapper, DETAIL also turned on gloo_lite's check in the default group:
    # the wrapped backend, called directly, catches the mismatch itself.
    wrapper = dist.group.WORLD._get_backend(torch.device("cpu"))
    inner = getattr(wrapper, "wrapped_pg", None)
    if not ck.true("DETAIL: torch wraps gloo_lite's backend",
                   isinstance(inner, gloo_lite.torch._torch.Backend),
                   f"the default group's backend is {type(wrapper).__name__} wrapping "
                   f"{type(inner).__name__}"):
        return
    error, elapsed = _mismatched(lambda: inner.allreduce([torch.ones(count)]).wait())
    say(f"RAISED wrapped backend {type(error).__name__} after {elapsed:.2f} s: {error}")
    ck.true("DETAIL: the wrapped gloo_lite backend checks calls",
            isinstance(error, dist.DistBackendError) and "mismatch" in str(error)
            and elapsed < 10, f"got {type(error).__name__} after {elapsed:.1f} s: {error}")
