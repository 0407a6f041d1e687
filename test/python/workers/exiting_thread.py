"""A daemon thread of rank 0 is inside a call (barrier, or allreduce with a Python op) when the
main thread ends (returns, or dies of KeyboardInterrupt), and the call completes while Python
finalizes: the thread must neither abort the process when it comes back ("terminate called
without an active exception", SIGABRT) nor run the op. Ordered by files in the store's
directory: rank 0's finalization (an object's __del__) writes `finalizing` and waits for rank
1's `done`, so that rank 1 completes the call just then."""

import os
import sys
import threading
import time
import types

import numpy as np

import gloo_lite
from common import context

call, end = sys.argv[1], sys.argv[2]
directory = os.environ["GLOO_LITE_TEST_STORE"][len("file://"):]
FINALIZING = os.path.join(directory, "finalizing")
DONE = os.path.join(directory, "done")


def add(inout, other):
    inout += other


ctx = context(timeout=30)
ctx.barrier()


def run():
    if call == "barrier":
        ctx.barrier()
    else:
        ctx.allreduce(np.ones(4, np.float32), op=add)


class HoldsFinalization:
    """Deleted while Python finalizes (see below): tells rank 1 to complete the call, waits
    until it has, and gives the daemon thread time to come back. It keeps what it uses, since
    module globals may be gone by then."""

    def __init__(self):
        self.exists, self.open, self.close, self.flags = (
            os.path.exists, os.open, os.close, os.O_CREAT | os.O_WRONLY)
        self.sleep, self.monotonic = time.sleep, time.monotonic
        self.finalizing, self.done = FINALIZING, DONE

    def __del__(self):
        self.close(self.open(self.finalizing, self.flags))
        give_up = self.monotonic() + 30
        while not self.exists(self.done) and self.monotonic() < give_up:
            self.sleep(0.01)
        self.sleep(1.0)  # the daemon thread's call returns meanwhile


if ctx.rank == 1:
    give_up = time.monotonic() + 30
    while not os.path.exists(FINALIZING) and time.monotonic() < give_up:
        time.sleep(0.01)
    try:
        run()
        print("rank 1: call completed", flush=True)
    except gloo_lite.Error as e:
        print(f"rank 1: {type(e).__name__}: {e}", flush=True)
    os.close(os.open(DONE, os.O_CREAT | os.O_WRONLY))
    sys.exit(0)

# Held by a module of its own that only sys.modules refers to: Python deletes it once it has
# begun to finalize (sys.modules is emptied after the daemon threads were told to end when
# they next take the GIL), whereas __main__'s globals may outlive the daemon thread's frame.
holder = types.ModuleType("holds_finalization")
holder.value = HoldsFinalization()
sys.modules[holder.__name__] = holder
del holder
started = threading.Event()


def daemon():
    started.set()
    run()
    print("rank 0: the daemon thread's call returned before the exit", flush=True)


threading.Thread(target=daemon, daemon=True).start()
started.wait()
print(f"rank 0: main thread ends ({end})", flush=True)
if end == "KeyboardInterrupt":
    raise KeyboardInterrupt
sys.exit(0)
