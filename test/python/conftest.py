"""Helpers of the gloo_lite Python tests: launching ranks as real processes.

``launch`` runs a worker under gloo_lite_run (the way users start programs); ``spawn`` starts
ranks itself around a file store, for tests that signal or kill one rank and watch the others.
The module under test is the one on PYTHONPATH (ctest sets the build tree's)."""

import os
import subprocess
import sys
import time

import pytest

import gloo_lite
import gloo_lite.run

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")
REPO = os.path.dirname(os.path.dirname(HERE))


def worker(name):
    return os.path.join(WORKERS, name)


def _env(extra=None):
    env = dict(os.environ)
    # The workers import the same gloo_lite as this test, and their helpers.
    paths = [os.path.dirname(os.path.dirname(gloo_lite.__file__)), WORKERS]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("GLOO_LITE_LOG", "error")
    env.update(extra or {})
    return env


def launcher():
    path = gloo_lite.run.launcher_path()
    if path is None:
        pytest.skip("gloo_lite_run is not built")
    return path


def launch(script, n=4, args=(), timeout=90, env=None):
    """Runs `script` on n ranks under gloo_lite_run; returns the CompletedProcess (text)."""
    command = [launcher(), "-n", str(n), "--timeout", str(timeout), "--",
               sys.executable, script, *args]
    return subprocess.run(command, env=_env(env), capture_output=True, text=True,
                          timeout=timeout + 30)


def rank_lines(output, rank):
    """The lines rank `rank` printed (gloo_lite_run tags them '[rank] ')."""
    tag = f"[{rank}] "
    return [line[len(tag):] for line in output.splitlines() if line.startswith(tag)]


def assert_ok(result):
    assert result.returncode == 0, (
        f"exit status {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")


class Ranks:
    """n ranks started as separate processes around a file store, with their own pipes."""

    def __init__(self, script, n, store_dir, args=(), env=None):
        self.processes = []
        for rank in range(n):
            extra = {
                "GLOO_LITE_TEST_STORE": f"file://{store_dir}",
                "GLOO_LITE_TEST_RANK": str(rank),
                "GLOO_LITE_TEST_SIZE": str(n),
                "GLOO_LITE_HOSTNAME": "127.0.0.1",
                "PYTHONUNBUFFERED": "1",
            }
            extra.update(env or {})
            self.processes.append(subprocess.Popen(
                [sys.executable, script, *args], env=_env(extra), stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True))

    def read_until(self, rank, prefix, timeout):
        """The first line of `rank` starting with `prefix`; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        stream = self.processes[rank].stdout
        seen = []
        while time.monotonic() < deadline:
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith(prefix):
                return line.strip()
        pytest.fail(f"rank {rank} never printed {prefix!r}; it printed:\n{''.join(seen)}")

    def finish(self, timeout=30):
        """Waits for every rank; returns [(returncode, rest of output)]."""
        results = []
        for process in self.processes:
            try:
                out, _ = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                out, _ = process.communicate()
            results.append((process.returncode, out))
        return results

    def kill_all(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.communicate()


@pytest.fixture
def spawn(tmp_path):
    started = []

    def start(script, n, args=(), env=None):
        ranks = Ranks(script, n, tmp_path, args, env)
        started.append(ranks)
        return ranks

    yield start
    for ranks in started:
        ranks.kill_all()
