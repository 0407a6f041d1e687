"""Helpers of the torch backend's tests: launching workers as real processes and reading what
they report.

``torchrun`` starts a worker the way users do (``python -m torch.distributed.run
--standalone``: torchrun's TCPStore on a free port); ``spawn`` starts the ranks itself with
torch's env:// variables on a free port, for tests that watch one rank fail and the others
survive (torchrun would tear them all down). Every worker line starts with "[rank] " (see
workers/common.py). The module under test is the one on PYTHONPATH (ctest sets the build
tree's)."""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import pytest

# ctest registers these tests only when the backend was built: failing to import it is a
# failure (its ImportError says why), not a skip.
import gloo_lite.torch  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")


def worker(name):
    return os.path.join(WORKERS, name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(extra=None):
    """The environment of a worker process: this test's, plus where gloo_lite and the
    workers' helpers are."""
    env = dict(os.environ)
    # The workers import the same gloo_lite as this test, and their helpers.
    paths = [os.path.dirname(os.path.dirname(gloo_lite.__file__)), WORKERS]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("GLOO_LITE_LOG", "error")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class Run:
    """What a launch printed: its exit status(es) and every rank's lines."""

    def __init__(self, codes, output):
        self.codes = codes
        self.output = output

    def lines(self, rank):
        tag = f"[{rank}] "
        return [line[len(tag):] for line in self.output.splitlines() if line.startswith(tag)]

    def matching(self, rank, prefix):
        return [line for line in self.lines(rank) if line.startswith(prefix)]

    def show(self, limit=12000):
        text = f"exit status(es) {self.codes}\n{self.output}"
        return text if len(text) <= limit else "...\n" + text[-limit:]


def torchrun(script, n, args=(), env=None, timeout=300):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={n}", script, *args]
    result = subprocess.run(command, env=child_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return Run([result.returncode], result.stdout)


def spawn(script, n, args=(), env=None, timeout=120):
    """Starts ranks 0..n-1 of `script` with env:// variables (a fresh port); waits for all."""
    port = free_port()
    processes, logs = [], []
    try:
        for rank in range(n):
            extra = {"RANK": str(rank), "WORLD_SIZE": str(n), "LOCAL_RANK": str(rank),
                     "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
                     "MASTER_PORT": str(port)}
            extra.update(env or {})
            # A file each, not a pipe: a rank never blocks on output nobody reads yet.
            logs.append(tempfile.TemporaryFile("w+"))
            processes.append(subprocess.Popen([sys.executable, script, *args],
                                              env=child_env(extra), stdout=logs[-1],
                                              stderr=subprocess.STDOUT, text=True))
        deadline = time.monotonic() + timeout
        for process in processes:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 1))
            except subprocess.TimeoutExpired:
                pass
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    return Run([p.returncode for p in processes], "".join(outputs))


SUMMARY = re.compile(r"SUMMARY checks=(\d+) failed=(\d+) against_gloo=(\d+) "
                     r"against_reference=(\d+)")


def summaries(run, n):
    """{rank: (checks, failed, against_gloo, against_reference)}; fails when a rank has none."""
    found = {}
    for rank in range(n):
        lines = run.matching(rank, "SUMMARY")
        if not lines:
            pytest.fail(f"rank {rank} printed no SUMMARY (it crashed or hung):\n{run.show()}")
        found[rank] = tuple(int(x) for x in SUMMARY.match(lines[-1]).groups())
    return found


def failures(run, n, section=None):
    """The FAIL lines of every rank (of one section when given), each tagged with its rank."""
    prefix = f"FAIL {section}: " if section else "FAIL "
    return [f"rank {rank}: {line}" for rank in range(n) for line in run.matching(rank, prefix)]
