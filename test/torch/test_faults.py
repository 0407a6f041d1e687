"""A rank that skips a collective (the others time out; Work.wait's timeout and aborting the
group end the wait early), a rank killed mid-run (the others fail fast), and a rank that never
joins (the rendezvous gives up): the survivors raise torch's DistBackendError carrying
gloo_lite's message, which names the collective and the rank, within the timeout. Ranks are
spawned by the test (workers/faults.py) so it can watch the survivors."""

import re
import signal

import pytest

from conftest import spawn, worker

RAISED = re.compile(r"RAISED (.+?) (\w+) DistBackendError=(\w+) after ([0-9.]+) s: (.*)")


def _raised(run, rank, what):
    for line in run.matching(rank, f"RAISED {what} "):
        match = RAISED.match(line)
        if match and match.group(1) == what:
            return match.group(2), match.group(3) == "True", float(match.group(4)), match.group(5)
    pytest.fail(f"rank {rank} did not raise in {what}:\n{run.show()}")


def _assert_named(message, *needles):
    for needle in needles:
        assert needle in message, f"the message lacks {needle!r}: {message}"


def test_a_skipped_collective_times_out_naming_the_call_and_the_rank():
    # timeout=2 s; rank 1 skips an all_reduce, then an async one on a second group, then a
    # send rank 0 waits for on a third; then an all_reduce on a fourth that rank 0 waits for
    # with Work.wait(timeout) and then aborts.
    run = spawn(worker("faults.py"), 2, ["timeout"])
    assert run.codes == [0, 0], run.show()
    for what, call in (("all_reduce", "allreduce"), ("async all_reduce", "allreduce"),
                       ("recv", "receive from rank 1")):
        cls, backend_error, seconds, message = _raised(run, 0, what)
        print(f"{what}: {cls} after {seconds:.2f} s: {message[:200]}")
        assert backend_error, f"{what} raised {cls}, want DistBackendError: {message}"
        assert 1.8 <= seconds <= 10, f"{what} raised after {seconds} s, want about 2 s"
        _assert_named(message, call, "rank 1")
    assert run.matching(0, "async Work: is_completed=True exception=DistBackendError"), run.show()
    # Work.wait's own timeout: torch's RuntimeError, the call still pending.
    cls, _, seconds, message = _raised(run, 0, "wait(timeout=0.5 s)")
    assert cls in ("RuntimeError", "DistBackendError") and 0.4 <= seconds <= 5, (cls, seconds)
    assert run.matching(0, "after wait(timeout): is_completed=False"), run.show()
    # _abort_process_group fails the pending call at once, saying so.
    cls, backend_error, seconds, message = _raised(run, 0, "abort")
    print(f"abort: {cls} after {seconds:.2f} s: {message[:200]}")
    assert backend_error and seconds < 5, (cls, seconds, message)
    _assert_named(message, "allreduce", "abort")


def test_a_rank_that_skips_a_groups_first_call_is_the_only_one_named():
    # timeout=2 s; rank 1 skips the group's first all_reduce (its shared-memory segment is set
    # up in it, waiting on the store in 50 ms slices). Each survivor must name rank 1 alone
    # within the post-timeout budget (0.5 s, docs/reliability.md). A slice that torch's store
    # timed out itself logged two warnings whose formatting of the socket's address could take
    # seconds: that rank wrote its hang report late and was named absent by the other.
    run = spawn(worker("faults.py"), 3, ["skip_first"])
    assert run.codes == [0, 0, 0], run.show()
    for rank in (0, 2):
        _, backend_error, seconds, message = _raised(run, rank, "first all_reduce")
        print(f"rank {rank}: after {seconds:.2f} s: {message[:200]}")
        assert backend_error, message
        _assert_named(message, "rank 1 never arrived", "ranks 0 and 2 timed out in this call")
        # The deadline, the budget, and a second for a loaded machine.
        assert 1.8 <= seconds <= 3.5, f"rank {rank} raised after {seconds} s, want about 2.2 s"


def test_a_killed_rank_fails_the_survivors_fast_naming_it():
    # timeout=30 s; rank 3 SIGKILLs itself while the others are in an all_reduce.
    run = spawn(worker("faults.py"), 4, ["kill"])
    assert run.codes[3] == -signal.SIGKILL, run.show()
    assert run.codes[:3] == [0, 0, 0], run.show()
    for rank in range(3):
        cls, backend_error, seconds, message = _raised(run, rank, "all_reduce")
        print(f"rank {rank}: {cls} after {seconds:.2f} s: {message[:200]}")
        assert backend_error, f"rank {rank} raised {cls}, want DistBackendError: {message}"
        assert seconds < 10, f"rank {rank} raised after {seconds} s (timeout 30 s)"
        _assert_named(message, "allreduce", "rank 3")


@pytest.fixture(scope="module")
def alone():
    # Rank 0 of 2 on a TCPStore rank 1 never joins; timeout=2 s.
    run = spawn(worker("faults.py"), 1, ["alone"])
    assert run.codes == [0], run.show()
    port = run.matching(0, "store port ")[0].split()[-1]
    return port, _raised(run, 0, "init_process_group")


def test_a_rank_that_never_joins_fails_the_rendezvous_within_the_timeout(alone):
    port, (cls, backend_error, seconds, message) = alone
    print(f"{cls} after {seconds:.2f} s: {message}")
    assert backend_error, f"raised {cls}, want DistBackendError: {message}"
    assert 1.8 <= seconds <= 10, f"raised after {seconds} s, want about 2 s"
    _assert_named(message, "rank 1", f"TCPStore at 127.0.0.1:{port}")


def test_a_rank_that_never_joins_is_reported_missing_not_mismatched(alone):
    _, (_, _, _, message) = alone
    assert "different numbers of contexts" not in message, message
