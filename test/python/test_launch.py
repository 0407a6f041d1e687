"""Launching: gloo_lite_run -n 4 -- python3 script.py, python -m gloo_lite.run, the examples."""

import os
import re
import subprocess
import sys

from conftest import REPO, _env, assert_ok, launch, rank_lines

EXAMPLES = os.path.join(REPO, "examples", "python")


def test_python_m_gloo_lite_run_starts_a_py_script_under_this_interpreter():
    script = os.path.join(EXAMPLES, "allreduce.py")
    result = subprocess.run([sys.executable, "-m", "gloo_lite.run", "-n", "2", script],
                            env=_env(), capture_output=True, text=True, timeout=120)
    assert_ok(result)
    assert len(rank_lines(result.stdout, 1)) == 1, result.stdout


def test_allreduce_example():
    result = launch(os.path.join(EXAMPLES, "allreduce.py"), n=4)
    assert_ok(result)
    for rank in range(4):
        assert rank_lines(result.stdout, rank) == [f"rank {rank}: [10. 10. 10. 10.] (expected 10)"]


def final_loss(output):
    return float(re.search(r"final loss ([0-9.e-]+)", output).group(1))


def test_sgd_example_matches_the_single_process_run():
    script = os.path.join(EXAMPLES, "sgd.py")
    alone = launch(script, n=1)
    assert_ok(alone)
    four = launch(script, n=4)
    assert_ok(four)
    single, parallel = final_loss(alone.stdout), final_loss(four.stdout)
    # It learned something, and the same thing: averaging the shards' gradients is the full
    # batch's gradient, up to the order of float additions.
    assert single < 0.5
    assert abs(parallel - single) <= 1e-6 * single, (single, parallel)
