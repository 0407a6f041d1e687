"""async_op=True: the Work's wait, is_completed, exception and result; its future's value (the
output tensors) and then() chains on it; many calls in flight at once, waited for in reverse
order; completion seen by polling alone. Integer data: the sums are exact in any order."""

import time

import torch
import torch.distributed as dist

from common import rank_input


def _sum_of(key, P, shape):
    return sum(rank_input(key, r, shape, torch.int64) for r in range(P))


def run(ck, job):
    R, P = job.rank, job.size
    t = rank_input("w", R, (6,), torch.int64)
    work = dist.all_reduce(t, async_op=True)
    ck.true("Work.wait() returns True", work.wait() is True, "wait() did not return True")
    ck.true("Work.is_completed() after wait", work.is_completed(), "is_completed() is False")
    ck.true("Work.exception() on success", work.exception() is None,
            f"exception() is {work.exception()!r}")
    ck.same("Work result: the tensor", t, _sum_of("w", P, (6,)))
    value = work.get_future().wait()
    ck.true("Future.wait() returns the tensors", isinstance(value, list) and len(value) == 1,
            f"got {value!r}")
    ck.same("Future value", value[0], _sum_of("w", P, (6,)))
    ck.true("the future's tensor is the caller's", value[0].data_ptr() == t.data_ptr(),
            "the future holds a copy, not the caller's tensor")

    t = rank_input("then", R, (5,), torch.int64)
    future = dist.all_reduce(t, async_op=True).get_future()
    chained = future.then(lambda f: f.value()[0] * 2).then(lambda f: f.value() + 1)
    ck.same("Future.then chain", chained.wait(), _sum_of("then", P, (5,)) * 2 + 1)

    # Many in flight; the last waited for first.
    ts = [rank_input(f"many{i}", R, (1000 + i,), torch.int64) for i in range(12)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    for work in reversed(works):
        work.wait()
    for i, x in enumerate(ts):
        ck.same(f"in flight together: all_reduce {i}", x, _sum_of(f"many{i}", P, (1000 + i,)))

    # Completion by polling, without wait().
    t = rank_input("poll", R, (1 << 18,), torch.int64)
    work = dist.all_reduce(t, async_op=True)
    deadline = time.monotonic() + 30
    while not work.is_completed() and time.monotonic() < deadline:
        time.sleep(0.001)
    ck.true("is_completed() turns True by itself", work.is_completed(),
            "still not completed after 30 s of polling")
    ck.same("polled all_reduce", t, _sum_of("poll", P, (1 << 18,)))

    # The futures of the other collectives carry their outputs.
    x = rank_input("agt", R, (3,), torch.int64)
    out = torch.empty(3 * P, dtype=torch.int64)
    value = dist.all_gather_into_tensor(out, x, async_op=True).get_future().wait()
    ck.same("all_gather_into_tensor future", value,
            [torch.cat([rank_input("agt", r, (3,), torch.int64) for r in range(P)])])
    x = rank_input("rst", R, (2 * P,), torch.int64)
    out = torch.empty(2, dtype=torch.int64)
    value = dist.reduce_scatter_tensor(out, x, async_op=True).get_future().wait()
    ck.same("reduce_scatter_tensor future", value, [_sum_of("rst", P, (2 * P,))[2 * R:2 * R + 2]])
    x = rank_input("bc", R, (4,), torch.int64)
    value = dist.broadcast(x, src=P - 1, async_op=True).get_future().wait()
    ck.same("broadcast future", value, [rank_input("bc", P - 1, (4,), torch.int64)])
    work = dist.barrier(async_op=True)
    ck.true("barrier Work.wait()", work.wait() is True and work.exception() is None,
            "barrier wait() failed")

    # A future callback that waits for a second collective of the same group (what PowerSGD's
    # comm hook does): the second call must run while the first one's callback blocks.
    first = rank_input("nest1", R, (7,), torch.int64)
    second = rank_input("nest2", R, (9,), torch.int64)

    def then_reduce_again(fut):
        return dist.all_reduce(second, async_op=True).get_future().wait()[0] + fut.value()[0].sum()

    nested = dist.all_reduce(first, async_op=True).get_future().then(then_reduce_again)
    ck.same("a future callback that waits for another all_reduce", nested.wait(),
            _sum_of("nest2", P, (9,)) + _sum_of("nest1", P, (7,)).sum())

    # Dependent calls in flight together: the second reads what the first's last step (the
    # copy out of all_gather's list form) wrote, since a call starts only after the previous
    # one finished. (Inputs that need staging -- views, lists -- are read when the call is
    # made instead; docs/torch.md says so.)
    for i in range(10):
        x = rank_input(f"dep{i}", R, (4,), torch.int64)
        outs = [torch.empty(4, dtype=torch.int64) for _ in range(P)]
        w1 = dist.all_gather(outs, x, async_op=True)
        w2 = dist.all_reduce(outs[0], async_op=True)
        w2.wait()
        w1.wait()
        ck.same(f"all_reduce of all_gather's output, both in flight ({i})", outs[0],
                rank_input(f"dep{i}", 0, (4,), torch.int64) * P)
