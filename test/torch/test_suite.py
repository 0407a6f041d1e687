"""torch's own distributed test suite on gloo_lite, through torch_suite/run.py with the process
groups created by gloo_lite: every test torch enables for gloo, at 2 ranks (about two minutes
on 2 quiet cores). A failure must be one of torch_suite/known_failures.txt (each with its
reason), and the core tests of torch_suite/subset.txt (collectives, point-to-point, groups, DDP)
must all run and pass, among them the runner's own test_gloo_lite_substitution, which checks
that the groups really are gloo_lite's (dist_suite.py also checks every group it creates); and the
subset again at 4 ranks. The baseline on torch's gloo and the whole suite at 4 ranks are run by
hand (docs/torch.md, "torch's own test suite")."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

# The suite's harness (torch.testing._internal) imports expecttest; scripts/install-torch.sh
# installs it beside torch.
pytest.importorskip("expecttest", reason="torch's test suite needs expecttest "
                    "(scripts/install-torch.sh installs it)")

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "torch_suite")
sys.path.insert(0, SUITE)
import run as suite_run  # noqa: E402  (torch_suite/run.py)


def test_suite_passes_on_gloo_lite_but_known_failures(tmp_path):
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, os.path.join(SUITE, "run.py"), "--world-size", "2", "--timeout", "90",
         "--report", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=560)
    # run.py fails on a failure that known_failures.txt does not list, and on a skipped or
    # missing test of subset.txt; its output names each.
    assert result.returncode == 0, result.stdout
    outcome = json.loads(report.read_text())
    assert outcome["backend"] == "gloo_lite"
    tests = outcome["tests"]
    not_passed = {t: tests.get(t, {"outcome": "not run"})["outcome"]
                  for t in suite_run.read_list("subset.txt")
                  if tests.get(t, {}).get("outcome") != "passed"}
    assert not not_passed, f"{not_passed}\n{result.stdout}"


def test_subset_passes_at_four_ranks(tmp_path):
    """subset.txt's core tests at 4 ranks too, where the rings and trees have more steps."""
    result = subprocess.run(
        [sys.executable, os.path.join(SUITE, "run.py"), "--subset", "--world-size", "4",
         "--timeout", "90"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert result.returncode == 0, result.stdout
    assert f"passed={len(suite_run.read_list('subset.txt'))} failed=0" in result.stdout, \
        result.stdout


def test_lists_name_tests_of_the_suite():
    """subset.txt and known_failures.txt name tests that exist (torch renames tests), and the
    subset holds no known failure."""
    names = set()
    for module in ("dist_suite.py",):
        with open(os.path.join(SUITE, module)) as source:
            names |= set(line.split("def ", 1)[1].split("(")[0]
                         for line in source if line.strip().startswith("def test_"))
    # Found, not imported: the suite reads BACKEND and friends when it is imported.
    spec = importlib.util.find_spec("torch.testing._internal.distributed.distributed_test")
    with open(spec.origin) as source:
        names |= set(line.split("def ", 1)[1].split("(")[0]
                     for line in source if line.strip().startswith("def test_"))
    subset = suite_run.read_list("subset.txt")
    known = suite_run.read_list("known_failures.txt")
    profiler = suite_run.read_list("known_failures_profiler.txt")
    for listing in (subset, known, profiler):
        assert not set(listing) - names, set(listing) - names
    assert not set(subset) & set(known)
    assert not set(known) & set(profiler)
    assert all(known.values()) and all(profiler.values()), "every known failure says why"


def test_first_error_line_is_the_ranks_exception():
    """The line reported for a failure is the first failing rank's exception and where in the
    suite it was raised, not the harness's own RuntimeError."""
    text = ("E   RuntimeError: Process 0 exited with error code 10 and exception:\n"
            "E   Traceback (most recent call last):\n"
            'E     File "/t/distributed_test.py", line 767, in test_get_backend\n'
            "E       g()\n"
            "E   torch.distributed.DistBackendError: gloo_lite: timed out\n"
            "E   \nE   To execute this test, run the following\n"
            "E   Process 1 exited with error code 10 and exception:\nE   ValueError: other\n")
    assert suite_run.first_error_line(text) == (
        "torch.distributed.DistBackendError: gloo_lite: timed out"
        " [distributed_test.py:767 test_get_backend]")
    assert suite_run.first_error_line("Expected exit code 0 but got -11 for pid: 7") == (
        "rank 0 died of signal 11 (SIGSEGV)")


def test_only_known_failures_pass_the_run(capsys):
    """run.py's verdict: a failure outside the known list, or a skipped test of the subset,
    fails the run; a known failure does not."""
    args = suite_run.argparse.Namespace(backend="gloo_lite", world_size=2, report=None)
    known = {"test_get_backend": "the name"}
    core = next(iter(suite_run.read_list("subset.txt")))

    def verdict(outcomes):
        results = {t: {"outcome": o, "detail": "d", "seconds": 0} for t, o in outcomes.items()}
        return suite_run.summarize(args, results, known, list(outcomes))

    assert verdict({"test_get_backend": "failed", core: "passed"}) == 0
    assert verdict({"test_get_backend": "failed", "test_barrier": "failed"}) == 1
    assert verdict({core: "skipped"}) == 1
    assert "FAIL test_barrier" in capsys.readouterr().out
