"""One launch, many checks: joins the job with backend "gloo_lite" as the default group, makes a
second group over all ranks on torch's own "gloo", and runs the sections named on the command
line (modules of this folder with a run(checker, job)), in order. torch is slow to import, so the
tests group their checks into few launches.

    torchrun --nproc-per-node 4 suite.py reductions movement p2p views errors async ddp
"""

import sys
import time
import traceback
from types import SimpleNamespace

import torch
import torch.distributed as dist

from common import Checker, finish, init, say

SECTIONS = ["reductions", "movement", "p2p", "views", "errors", "async_work", "subgroups", "ddp",
            "mismatch"]


def main(sections):
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown sections {unknown}; known: {SECTIONS}")
    torch.manual_seed(0)
    rank, size = init()
    job = SimpleNamespace(rank=rank, size=size, gloo=dist.new_group(backend="gloo"))
    ck = Checker()
    for section in sections:
        module = __import__(section)
        before, ck.section, start = ck.checks, section, time.monotonic()
        try:
            module.run(ck, job)
        except Exception:  # noqa: BLE001  report, then stop: the ranks may be out of step
            ck.fail("the section", "raised: " + " | ".join(traceback.format_exc().splitlines()))
            ck.summary(sections)
            finish(1)
        say(f"SECTION {section}: {ck.checks - before} checks in {time.monotonic() - start:.1f} s")
    code = ck.summary(sections)
    if "mismatch" not in sections:  # a mismatch may leave the group unusable
        dist.destroy_process_group()
    finish(code)


if __name__ == "__main__":
    main(sys.argv[1:])
