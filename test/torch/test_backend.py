"""The backend under torchrun at 2 and 4 ranks, against torch's own gloo in the same processes
(workers/suite.py): every collective, ReduceOp and dtype; point-to-point; non-contiguous
tensors; argument errors; async Work and futures; sub-groups; DDP. One launch per size runs
every section (torch is slow to import); each test below judges one section's checks."""

import pytest

from conftest import failures, summaries, torchrun, worker

SECTIONS = ["reductions", "movement", "p2p", "views", "errors", "async_work", "subgroups", "ddp"]
# Checks each section makes on every rank at least (a section that silently skips fails).
AT_LEAST = {"reductions": 250, "movement": 70, "p2p": 20, "views": 20, "errors": 6,
            "async_work": 37, "subgroups": 6, "ddp": 24}


@pytest.fixture(scope="module", params=[2, 4], ids=lambda n: f"P{n}")
def launch(request):
    n = request.param
    run = torchrun(worker("suite.py"), n, SECTIONS)
    return n, run, summaries(run, n)


def _section_checks(run, rank, section):
    for line in run.matching(rank, f"SECTION {section}:"):
        return int(line.split()[2])
    return 0


@pytest.mark.parametrize("section", SECTIONS)
def test_section(launch, section):
    n, run, _ = launch
    bad = failures(run, n, section)
    assert not bad, f"{len(bad)} failed checks in {section} at P={n}:\n" + "\n".join(bad[:60])
    for rank in range(n):
        checks = _section_checks(run, rank, section)
        assert checks >= AT_LEAST[section], (
            f"rank {rank} made {checks} checks in {section}, want at least "
            f"{AT_LEAST[section]}:\n{run.show()}")


def test_the_launch_succeeded_and_compared_with_gloo(launch):
    n, run, found = launch
    assert run.codes == [0], run.show()
    for rank, (checks, failed, against_gloo, against_reference) in found.items():
        assert failed == 0, run.show()
        # Most results are compared with torch's gloo; the local reference only covers what
        # gloo rejects (AVG, PREMUL_SUM, int16, uneven all_to_all lists).
        assert against_gloo > 2 * against_reference, found
        print(f"P={n} rank {rank}: {checks} checks, {against_gloo} against gloo, "
              f"{against_reference} against the local reference")
