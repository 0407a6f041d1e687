"""TORCH_DISTRIBUTED_DEBUG=DETAIL: torch wraps the backend and checks every call's signature,
and gloo_lite turns on its own call check. Every collective still gives gloo's results, and a
mismatched all_reduce (4 elements on one rank, 5 on another) raises on every rank at once, both
through gloo_lite's check alone and through the default group (workers/mismatch.py)."""

from conftest import failures, summaries, torchrun, worker

SECTIONS = ["reductions", "movement", "p2p", "views", "errors", "async_work", "mismatch"]


def test_detail_runs_correctly_and_catches_a_mismatch():
    run = torchrun(worker("suite.py"), 2, SECTIONS, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert run.codes == [0], run.show()
    found = summaries(run, 2)
    bad = failures(run, 2)
    assert not bad, f"{len(bad)} failed checks under DETAIL:\n" + "\n".join(bad[:60])
    for rank, (checks, *_) in found.items():
        assert checks > 400, f"rank {rank} made only {checks} checks:\n{run.show()}"
        assert run.matching(rank, "SECTION mismatch: 10 checks"), run.show()
        for line in run.matching(rank, "RAISED"):
            print(f"rank {rank}: {line[:300]}")
