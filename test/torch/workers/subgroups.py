"""The default group's backend, and new_group sub-groups on gloo_lite: disjoint groups (evens,
odds) reducing at once, a group some ranks are not in (they get GroupMember.NON_GROUP_MEMBER),
a single-rank group, a broadcast from a global rank inside a group, group ranks, and two groups
over the same ranks used in opposite orders."""

import torch
import torch.distributed as dist

from common import rank_input


def run(ck, job):
    R, P = job.rank, job.size
    # The default group is gloo_lite's (under DETAIL torch wraps it, so only the name is asked).
    ck.true("the default group's backend", dist.get_backend() == "gloo_lite",
            f"get_backend() is {dist.get_backend()!r}")
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    if hasattr(backend, "describe"):
        ck.true("the backend describes its context", f"rank {R} of {P}" in backend.describe(),
                f"describe() is {backend.describe()!r}")
    # Every rank creates every group, in the same order (torch's rule).
    evens = dist.new_group([r for r in range(P) if r % 2 == 0], backend="gloo_lite")
    odds = dist.new_group([r for r in range(P) if r % 2 == 1])  # the default backend
    first_two = dist.new_group([0, 1], backend="gloo_lite")
    last_alone = dist.new_group([P - 1], backend="gloo_lite")

    mine = evens if R % 2 == 0 else odds
    members = [r for r in range(P) if r % 2 == R % 2]
    ck.true("sub-group rank and size",
            (dist.get_rank(mine), dist.get_world_size(mine)) == (members.index(R), len(members)),
            f"get_rank {dist.get_rank(mine)}, get_world_size {dist.get_world_size(mine)}, "
            f"want {members.index(R)}, {len(members)}")
    t = rank_input("sub", R, (9,), torch.int64)
    dist.all_reduce(t, group=mine)
    ck.same("all_reduce on the evens/odds sub-group", t,
            sum(rank_input("sub", r, (9,), torch.int64) for r in members))
    t = rank_input("subbc", R, (4,), torch.float32)
    dist.broadcast(t, src=members[-1], group=mine)
    ck.same("broadcast from a global rank in a sub-group", t,
            rank_input("subbc", members[-1], (4,), torch.float32))

    if R < 2:
        t = rank_input("two", R, (3,), torch.float32)
        dist.all_reduce(t, group=first_two)
        ck.same("all_reduce on ranks [0, 1]", t,
                rank_input("two", 0, (3,), torch.float32) + rank_input("two", 1, (3,),
                                                                         torch.float32))
    else:
        ck.true("a rank outside [0, 1] gets NON_GROUP_MEMBER",
                first_two is dist.GroupMember.NON_GROUP_MEMBER, f"got {first_two!r}")
    if R == P - 1:
        t = rank_input("alone", R, (3,), torch.float32)
        want = t.clone()
        dist.all_reduce(t, group=last_alone)
        ck.same("all_reduce on a single-rank group", t, want)

    # Two groups over the same ranks are independent: started in opposite orders on even and
    # odd ranks, both in flight at once, neither waits for the other.
    first = dist.new_group(backend="gloo_lite")
    second = dist.new_group(backend="gloo_lite")
    a = rank_input("first", R, (1 << 16,), torch.int64)
    b = rank_input("second", R, (1 << 16,), torch.int64)
    order = [(first, a), (second, b)] if R % 2 == 0 else [(second, b), (first, a)]
    works = [dist.all_reduce(x, group=g, async_op=True) for g, x in order]
    for work in works:
        work.wait()
    ck.same("two groups started in opposite orders", [a, b],
            [sum(rank_input(key, r, (1 << 16,), torch.int64) for r in range(P))
             for key in ("first", "second")])

    # The world group still works after its sub-groups were used.
    t = torch.ones(2)
    dist.all_reduce(t)
    ck.same("all_reduce on the world after the sub-groups", t, torch.full((2,), float(P)))
