"""torch's own distributed test suite (DistributedTest._DistTestBase in
torch/testing/_internal/distributed/distributed_test.py) with its process groups created by
gloo_lite.

The suite reads BACKEND, WORLD_SIZE and TEMP_DIR when it is imported; run.py sets them. BACKEND
stays "gloo", so the suite's skip decorators and test bodies take gloo's paths, and
GLOO_LITE_SUITE_BACKEND chooses what the groups torch is asked for as "gloo" really are:
"gloo_lite" (the default) or "gloo" (torch's own, the baseline).

With gloo_lite, the groups are of the backend "gloo_lite", as a user makes them: the swap
happens where every group is made (init_process_group and _new_group_with_tag, which
new_group, new_subgroups and the rest go through), so no test reaches torch's gloo by another
door, and each new group's CPU backend is checked to be gloo_lite's before the test sees it.
A test body that asks dist.get_backend() for gloo's branch takes its other one, except for the
profiler checks when GLOO_LITE_SUITE_PROFILER=1 (below). (Registering gloo_lite under torch's
name "gloo" instead would take every such branch, but torch's DDP logger casts a backend of
type GLOO to ProcessGroupGloo: every DDP test dies of SIGSEGV.)

The ranks are forked from the runner or spawned (GLOO_LITE_SUITE_START); spawned ones begin by
importing this module, so the swap is in place in every rank either way."""

import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

SUBSTITUTE = os.environ.get("GLOO_LITE_SUITE_BACKEND", "gloo_lite")
MODES = ("gloo_lite", "gloo")
if SUBSTITUTE not in MODES:
    sys.exit(f"GLOO_LITE_SUITE_BACKEND must be one of {MODES}, not {SUBSTITUTE!r}")
# How the ranks start: "spawn" as torch's own runner does (each imports this module), or "fork"
# (each a copy of this process, the swap already in place).
START = os.environ.get("GLOO_LITE_SUITE_START", "spawn")
if START not in ("spawn", "fork"):
    sys.exit(f"GLOO_LITE_SUITE_START must be spawn or fork, not {START!r}")
if os.environ.get("BACKEND") != "gloo":
    sys.exit("dist_suite runs torch's suite with BACKEND=gloo (run.py sets it)")

# Registers "gloo_lite" with torch.distributed; imported in the baseline run too, so that both
# runs load the same libraries.
import gloo_lite.torch  # noqa: E402
from gloo_lite import _torch as gloo_lite_torch  # noqa: E402


def _swap(backend):
    """The backend string torch is asked for, with gloo_lite wherever it names gloo:
    "gloo", Backend.GLOO and device maps such as "cpu:gloo,cuda:nccl"."""
    if backend is None:
        return None
    text = str(backend)
    if ":" not in text:
        return gloo_lite.torch.NAME if text.lower() == dist.Backend.GLOO else backend
    pairs = [pair.split(":", 1) for pair in text.split(",")]
    return ",".join(
        f"{device}:{gloo_lite.torch.NAME if name.strip().lower() == dist.Backend.GLOO else name}"
        for device, name in pairs)


def cpu_backend(group=None):
    """The c10d backend object behind `group`'s CPU tensors."""
    pg = group if group is not None else c10d._get_default_group()
    backend = pg._get_backend(torch.device("cpu"))
    # Under TORCH_DISTRIBUTED_DEBUG=DETAIL torch wraps the backend in its checker.
    while isinstance(backend, c10d._ProcessGroupWrapper):
        backend = backend.wrapped_pg
    return backend


def check_is_gloo_lite(group, where):
    if group is None or group == c10d.GroupMember.NON_GROUP_MEMBER:
        return
    backend = cpu_backend(group)
    if not isinstance(backend, gloo_lite_torch.Backend):
        raise RuntimeError(
            f"{where} made a group whose CPU backend is {type(backend).__name__}, not "
            "gloo_lite's: the substitution in dist_suite.py missed a door")


def _install():
    init_process_group = c10d.init_process_group
    new_group_with_tag = c10d._new_group_with_tag

    def init_swapped(*args, **kwargs):
        if args:
            backend, args = args[0], args[1:]
        else:
            backend = kwargs.pop("backend", None)
        if backend is None:
            # torch's default: gloo for CPU (ours instead), NCCL for CUDA where there is one.
            backend = f"cpu:{gloo_lite.torch.NAME}"
            if torch.cuda.is_available() and dist.is_nccl_available():
                backend += ",cuda:nccl"
        kwargs["backend"] = _swap(backend)
        result = init_process_group(*args, **kwargs)
        check_is_gloo_lite(c10d._get_default_group(), "init_process_group")
        return result

    def new_group_swapped(*args, **kwargs):
        # _new_group_with_tag(ranks, timeout, backend, backend_options, pg_tag, ...)
        if "backend" in kwargs:
            kwargs["backend"] = _swap(kwargs["backend"])
        elif len(args) > 2:
            args = args[:2] + (_swap(args[2]),) + args[3:]
        group = new_group_with_tag(*args, **kwargs)
        check_is_gloo_lite(group, "new_group")
        return group

    # Module attributes, so torch's own callers (new_group, new_subgroups,
    # new_subgroups_by_enumeration) go through the swap as well as the suite's dist.* calls.
    c10d.init_process_group = init_swapped
    dist.init_process_group = init_swapped
    c10d._new_group_with_tag = new_group_swapped


if SUBSTITUTE == "gloo_lite":
    _install()

# Imported after the swap: the suite binds nothing of these at import, but the order keeps that
# true if it ever does (`from torch.distributed import init_process_group`).
from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed import distributed_test  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

# The suite checks the profiler's per-operation events ("gloo:all_reduce", with the input
# shapes) only for the backends it lists, gloo among them: named "gloo_lite", the groups skip
# those checks unless GLOO_LITE_SUITE_PROFILER=1 lists gloo_lite too. Off by default while
# gloo_lite's events carry no input shapes (known_failures_profiler.txt): failing there, the
# collective tests would stop before checking their results.
PROFILER_CHECKS = os.environ.get("GLOO_LITE_SUITE_PROFILER", "0") == "1"
if SUBSTITUTE == "gloo_lite" and PROFILER_CHECKS:
    for listing in ("PROFILING_SUPPORTED_BACKENDS", "CUDA_PROFILING_SUPPORTED_BACKENDS",
                    "SEND_RECV_PROFILING_SUPPORTED_BACKENDS"):
        backends = getattr(distributed_test, listing, None)
        if backends is not None and dist.Backend.GLOO in backends:
            backends.append(gloo_lite.torch.NAME)

torch.backends.cuda.matmul.allow_tf32 = False


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """torch's own spawn runner (test/distributed/test_distributed_spawn.py in torch's
    repository) for the gloo backend: every test a process per rank."""

    def setUp(self):
        super().setUp()
        if START == "fork":
            # Ranks forked from this process start in a moment; spawned ones import torch and
            # the suite first, seconds each on a busy machine.
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    def test_gloo_lite_substitution(self):
        """Not torch's: the groups this run tests are the ones it says. With the swap every
        group's CPU backend is gloo_lite's (the default group, a new_group and the subgroups of
        new_subgroups); without it, torch's ProcessGroupGloo."""
        everyone = dist.new_group(list(range(dist.get_world_size())))
        pair, _ = dist.new_subgroups(group_size=2)
        for group in (None, everyone, pair):
            backend = cpu_backend(group)
            if SUBSTITUTE == "gloo_lite":
                self.assertIsInstance(backend, gloo_lite_torch.Backend)
            else:
                self.assertIsInstance(backend, dist.ProcessGroupGloo)
        # One collective on the pair, so the check is of groups that work.
        value = torch.tensor([float(dist.get_rank())])
        dist.all_reduce(value, group=pair)
        first = dist.get_rank() - dist.get_rank() % 2
        self.assertEqual(value.item(), float(2 * first + 1))


if __name__ == "__main__":
    run_tests()
