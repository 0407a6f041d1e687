"""A killed rank and Ctrl-C, with ranks spawned around a file store (so the test can signal one
process and watch the others)."""

import os
import re
import signal
import time

import pytest

from conftest import worker


@pytest.mark.parametrize("call,death", [("allreduce", "kill"), ("recv", "kill"),
                                        ("allreduce", "bad_argument")])
def test_a_dead_rank_raises_connection_error_on_the_others(spawn, call, death):
    ranks = spawn(worker("killed_peer.py"), 4, args=[call, death])
    results = ranks.finish(timeout=60)
    if death == "kill":
        assert results[3][0] == -signal.SIGKILL, results[3]
    else:
        assert results[3][0] == 1 and "TypeError" in results[3][1], results[3]
    for rank, (code, out) in enumerate(results[:3]):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"
        seconds = float(re.search(r"ConnectionError after ([0-9.]+) s", out).group(1))
        assert seconds < 10, f"rank {rank} took {seconds} s (timeout 30 s):\n{out}"
        print(f"{call}, {death}: rank {rank} raised ConnectionError after {seconds:.2f} s")


def wait_until_asleep(pid, timeout=20.0):
    """Returns once the process's main thread sleeps (state S in /proc/PID/stat): after it said
    "blocking", that is the call's wait. A fixed sleep here raced a slow rank: a SIGINT before the
    call is Python's own KeyboardInterrupt, which fails no context."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        if state == "S":
            time.sleep(0.1)  # past the brief polling before the sleep, on a slow machine too
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never slept in its call within {timeout} s")


@pytest.mark.parametrize("mode", ["recv", "allreduce", "work_wait", "custom_op"])
def test_sigint_interrupts_a_blocking_call_within_a_second(spawn, mode):
    ranks = spawn(worker("interrupted.py"), 2, args=[mode])
    # custom_op: the signal comes while rank 0 runs Python code inside the call (its op).
    ranks.read_until(0, "in the custom reduction" if mode == "custom_op" else "blocking",
                     timeout=60)
    wait_until_asleep(ranks.processes[0].pid)  # inside the call, not before it
    sent = time.time()
    os.kill(ranks.processes[0].pid, signal.SIGINT)
    line = ranks.read_until(0, "KeyboardInterrupt at", timeout=10)
    delay = float(line.split()[-1]) - sent
    print(f"{mode}: KeyboardInterrupt {delay * 1000:.0f} ms after SIGINT")
    assert delay < 1.0, f"interrupted {delay:.2f} s after SIGINT"
    later = ranks.read_until(0, "later call:", timeout=10)
    assert "interrupted by SIGINT (Ctrl-C)" in later, later
    results = ranks.finish(timeout=30)
    assert results[0][0] == 0, results[0]
    assert results[1][0] == 0, results[1]
    assert "peer: ConnectionError" in results[1][1] and "SIGINT" in results[1][1], results[1][1]


@pytest.mark.parametrize("transport", ["tcp", "shm"])
@pytest.mark.parametrize("mode", ["exit", "call"])
def test_a_forked_child_neither_closes_nor_uses_its_parents_context(spawn, mode, transport):
    ranks = spawn(worker("forked.py"), 2, args=[mode], env={"GLOO_LITE_TRANSPORT": transport})
    (code0, out0), (code1, out1) = ranks.finish(timeout=60)
    assert code0 == 0 and code1 == 0, f"rank 0:\n{out0}\nrank 1:\n{out1}"
    # 1 + 2 on both ranks: the child's copy neither closed the parent's context nor took part.
    assert "rank 0: allreduce [3.0, 3.0, 3.0, 3.0]" in out0, out0
    assert "rank 1: allreduce [3.0, 3.0, 3.0, 3.0]" in out1, out1
    assert "child exited with status 0" in out0, out0
    if mode == "call":
        parent = re.search(r"parent (\d+):", out0).group(1)
        line = next(line for line in out0.splitlines() if line.startswith("child:"))
        assert line.startswith("child: InvalidArgument: allreduce on context"), line
        assert f"this context was created in process {parent}" in line, line
        assert "a forked child cannot use it" in line and "create a new context" in line, line


@pytest.mark.parametrize("call,end", [("barrier", "exit"), ("barrier", "KeyboardInterrupt"),
                                      ("custom_op", "exit")])
def test_a_daemon_thread_in_a_call_at_exit_ends_cleanly(spawn, call, end):
    ranks = spawn(worker("exiting_thread.py"), 2, args=[call, end])
    (code0, out0), (code1, out1) = ranks.finish(timeout=60)
    # A KeyboardInterrupt that ends Python makes it die of SIGINT, as it should.
    expected = -signal.SIGINT if end == "KeyboardInterrupt" else 0
    assert code0 == expected and "terminate called" not in out0, f"exit status {code0}:\n{out0}"
    assert "main thread ends" in out0 and "returned before the exit" not in out0, out0
    assert code1 == 0, out1
    if call == "barrier":
        assert "rank 1: call completed" in out1, out1  # so rank 0's returned while finalizing


@pytest.mark.parametrize("tag_state", ["first", "warm"])
def test_close_from_another_thread_ends_the_first_call_on_a_tag(spawn, tag_state):
    """Issue 23 (part 2), item A: a close from another thread ends a call still setting up its
    tag's shared-memory segment within a second, and the peer learns why; the same for a call
    on a tag whose segment exists."""
    ranks = spawn(worker("closed_in_flight.py"), 2, args=[tag_state])
    results = ranks.finish(timeout=60)
    for rank, (code, out) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"
    out0, out1 = results[0][1], results[1][1]
    print(tag_state, out0, out1)
    found = re.search(r"raised ConnectionError ([0-9.]+) s after close: (.*)", out0)
    assert found, out0
    assert float(found.group(1)) < 1.0, out0
    assert "closed by this rank" in found.group(2) and "allreduce" in found.group(2), out0
    found = re.search(r"peer raised ConnectionError after ([0-9.]+) s: (.*)", out1)
    assert found, out1
    assert float(found.group(1)) < 2.0, out1
    assert "rank 0" in found.group(2) and "closed by this rank" in found.group(2), out1
