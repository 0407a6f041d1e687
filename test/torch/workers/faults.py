"""Failures a job must survive with a clear error, on ranks the test spawns itself (so that it
can watch the survivors):

  skip_first (3 ranks) rank 1 skips a group's first all_reduce (timeout 2 s): ranks 0 and 2
           raise within 0.5 s of the deadline, each naming rank 1 alone as absent;
  timeout  (2 ranks) init_process_group(timeout=2 s); rank 1 skips an all_reduce, then an async
           one on a second group, then never sends what rank 0 receives on a third: rank 0
           raises DistBackendError after about 2 s each time; then on a fourth (timeout 30 s)
           Work.wait(timeout=0.5 s) gives up after 0.5 s, and aborting the group fails the
           call at once;
  kill     (4 ranks) the last rank SIGKILLs itself while the others are in an all_reduce: they
           raise DistBackendError long before the timeout (30 s);
  alone    (rank 0 of 2, alone) init_process_group on a TCPStore rank 1 never joins, timeout
           2 s: the backend's rendezvous through the store adapter gives up after about 2 s,
           naming the store.

Each error prints as "RAISED <what> <class> DistBackendError=<bool> after <s> s: <message>"; the
test reads those lines. The ranks then meet at a store key, not a collective, and exit."""

import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from common import finish, init, say


def attempt(what, call):
    start = time.monotonic()
    try:
        call()
    except Exception as e:  # noqa: BLE001  the test judges the class
        elapsed = time.monotonic() - start
        message = " ".join(str(e).split())
        say(f"RAISED {what} {type(e).__name__} "
            f"DistBackendError={isinstance(e, dist.DistBackendError)} after {elapsed:.2f} s: "
            f"{message}")
        return e
    say(f"NO ERROR {what} after {time.monotonic() - start:.2f} s")
    return None


def timeout_case():
    rank, _ = init(timeout=2)
    second = dist.new_group(backend="gloo_lite", timeout=timedelta(seconds=2))
    third = dist.new_group(backend="gloo_lite", timeout=timedelta(seconds=2))
    fourth = dist.new_group(backend="gloo_lite", timeout=timedelta(seconds=30))
    store = dist.distributed_c10d._get_default_store()
    dist.barrier()
    if rank == 0:
        attempt("all_reduce", lambda: dist.all_reduce(torch.ones(8)))

        def async_wait():
            work = dist.all_reduce(torch.ones(8), group=second, async_op=True)
            try:
                work.wait()
            finally:
                say(f"async Work: is_completed={work.is_completed()} "
                    f"exception={type(work.exception()).__name__}")

        attempt("async all_reduce", async_wait)
        attempt("recv", lambda: dist.recv(torch.empty(4), 1, group=third))
        # Work.wait's own timeout ends the wait, not the call; aborting the group ends the call.
        work = dist.all_reduce(torch.ones(8), group=fourth, async_op=True)
        attempt("wait(timeout=0.5 s)", lambda: work.wait(timedelta(seconds=0.5)))
        say(f"after wait(timeout): is_completed={work.is_completed()}")

        def abort_then_wait():
            dist.distributed_c10d._abort_process_group(fourth)
            work.wait()

        attempt("abort", abort_then_wait)
        store.set("rank 0 is done", "1")
    else:
        store.wait(["rank 0 is done"], timedelta(seconds=60))


def skip_first_case():
    rank, _ = init(timeout=60)
    group = dist.new_group(backend="gloo_lite", timeout=timedelta(seconds=2))
    store = dist.distributed_c10d._get_default_store()
    if rank != 1:
        # The group's first call (its shared-memory segment is set up in it): rank 1 skips it.
        attempt("first all_reduce", lambda: dist.all_reduce(torch.ones(8), group=group))
    # Every rank leaves once the survivors have raised; rank 0, which holds the store, last.
    store.add("raised", 1 if rank != 1 else 0)
    deadline = time.monotonic() + 60
    while store.add("raised", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    store.add("left", 1)
    while rank == 0 and store.add("left", 0) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)


def kill_case():
    rank, size = init(timeout=30)
    store = dist.distributed_c10d._get_default_store()
    for _ in range(3):
        dist.all_reduce(torch.ones(1000))
    dist.barrier()
    if rank == size - 1:
        time.sleep(0.3)  # the others are inside their all_reduce by now
        os.kill(os.getpid(), signal.SIGKILL)
    attempt("all_reduce", lambda: dist.all_reduce(torch.ones(1 << 16)))
    # The store lives in rank 0: it leaves last.
    store.add("survivors done", 1)
    if rank == 0:
        deadline = time.monotonic() + 30
        while store.add("survivors done", 0) < size - 1 and time.monotonic() < deadline:
            time.sleep(0.05)


def alone_case():
    store = dist.TCPStore("127.0.0.1", 0, 2, is_master=True, wait_for_workers=False)
    say(f"store port {store.port}")
    attempt("init_process_group", lambda: dist.init_process_group(
        "gloo_lite", store=store, rank=0, world_size=2, timeout=timedelta(seconds=2)))


if __name__ == "__main__":
    {"timeout": timeout_case, "skip_first": skip_first_case, "kill": kill_case,
     "alone": alone_case}[sys.argv[1]]()
    if dist.is_initialized():
        dist.destroy_process_group()  # of failed groups too: must not hang
    say("exiting")
    finish(0)
