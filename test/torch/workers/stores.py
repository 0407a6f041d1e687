"""The store adapter under each way torch hands the backend a store, one after another in one
launch: init_method="file://...", env:// (MASTER_ADDR/MASTER_PORT), and a TCPStore passed
explicitly. Under each, an all_reduce on the default group, then two gloo_lite groups created in
a row on the same store, used interleaved, then destroy_process_group.

    stores.py <file store path> <tcp store port>     (RANK, WORLD_SIZE, MASTER_* in the env)
"""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

from common import Checker, finish, say

TIMEOUT = timedelta(seconds=30)


def exercise(ck, how):
    rank, size = dist.get_rank(), dist.get_world_size()
    total = size * (size + 1) // 2
    t = torch.full((5,), rank + 1, dtype=torch.int64)
    dist.all_reduce(t)
    ck.same(f"{how}: all_reduce", t, torch.full((5,), total, dtype=torch.int64))
    first = dist.new_group(backend="gloo_lite")
    second = dist.new_group(backend="gloo_lite")
    for i, group in enumerate([first, second, first, second]):
        t = torch.full((3,), (rank + 1) * (i + 1), dtype=torch.int64)
        dist.all_reduce(t, group=group)
        ck.same(f"{how}: all_reduce {i} on the groups created in a row", t,
                torch.full((3,), total * (i + 1), dtype=torch.int64))
    dist.destroy_process_group()
    say(f"{how}: done")


def main(file_path, tcp_port):
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    ck = Checker()
    ck.section = "stores"
    dist.init_process_group("gloo_lite", init_method=f"file://{file_path}", rank=rank,
                            world_size=size, timeout=TIMEOUT)
    exercise(ck, "file://")
    dist.init_process_group("gloo_lite", init_method="env://", timeout=TIMEOUT)
    exercise(ck, "env://")
    store = dist.TCPStore("127.0.0.1", tcp_port, size, is_master=rank == 0, timeout=TIMEOUT)
    dist.init_process_group("gloo_lite", store=store, rank=rank, world_size=size, timeout=TIMEOUT)
    exercise(ck, "TCPStore")
    finish(ck.summary(["file", "env", "tcp"]))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
