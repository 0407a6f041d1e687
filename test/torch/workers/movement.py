"""Every data-moving collective, for every dtype (and int16, bool, complex64), against torch's
gloo (bitwise): broadcast, all_gather, all_gather_into_tensor, all_gather_coalesced, all_to_all
(list form, even and uneven), all_to_all_single (even, and uneven split sizes with empty
blocks), gather, scatter; and a barrier that must hold every rank until the last arrives."""

import time

import torch
import torch.distributed as dist

from common import MOVED_DTYPES, rank_input
from versus_gloo import compare


def _rows(sender, receiver):
    """Rows `sender` sends `receiver` in the uneven all-to-alls (0 to 2: some blocks empty)."""
    return (sender + 2 * receiver) % 3


def run(ck, job):
    R, P = job.rank, job.size
    for dtype in MOVED_DTYPES:
        tag = str(dtype)[6:]

        def inputs(key, shape, rank=R):
            return rank_input(key, rank, shape, dtype)

        def check(name, run, reference):
            compare(ck, job, f"{name}/{tag}", run, reference, True, True)

        for root in sorted({0, P - 1}):

            def broadcast(group, root=root):
                t = inputs(f"bcast{root}", (5, 3))
                dist.broadcast(t, src=root, group=group)
                return t

            check(f"broadcast(root {root})", broadcast,
                  lambda root=root: inputs(f"bcast{root}", (5, 3), root))

        def all_gather(group):
            outs = [torch.empty(2, 3, dtype=dtype) for _ in range(P)]
            dist.all_gather(outs, inputs("ag", (2, 3)), group=group)
            return outs

        check("all_gather", all_gather, lambda: [inputs("ag", (2, 3), r) for r in range(P)])

        def all_gather_into_tensor(group):
            out = torch.empty(P * 2, 3, dtype=dtype)
            dist.all_gather_into_tensor(out, inputs("agt", (2, 3)), group=group)
            return out

        check("all_gather_into_tensor", all_gather_into_tensor,
              lambda: torch.cat([inputs("agt", (2, 3), r) for r in range(P)]))

        shapes = [(3,), (2, 2)]

        def all_gather_coalesced(group):
            outs = [[torch.empty(s, dtype=dtype) for s in shapes] for _ in range(P)]
            dist.all_gather_coalesced(outs, [inputs(f"agc{i}", s) for i, s in enumerate(shapes)],
                                      group=group)
            return [t for per_rank in outs for t in per_rank]

        check("all_gather_coalesced", all_gather_coalesced,
              lambda: [inputs(f"agc{i}", s, r) for r in range(P) for i, s in enumerate(shapes)])

        def all_to_all(group, uneven=False):
            # Rank R sends rank j a block of 3 elements, or of R + j + 1 (torch's gloo takes
            # equal blocks only).
            n = (lambda i, j: i + j + 1) if uneven else (lambda i, j: 3)
            outs = [torch.empty(n(j, R), dtype=dtype) for j in range(P)]
            dist.all_to_all(outs, [inputs(f"a2a>{j}", (n(R, j),)) for j in range(P)],
                            group=group)
            return outs

        check("all_to_all", all_to_all, lambda: [inputs(f"a2a>{R}", (3,), j) for j in range(P)])
        check("all_to_all(uneven)", lambda group: all_to_all(group, uneven=True),
              lambda: [inputs(f"a2a>{R}", (j + R + 1,), j) for j in range(P)])

        def all_to_all_single(group):
            out = torch.empty(P * 2, 3, dtype=dtype)
            dist.all_to_all_single(out, inputs("a2as", (P * 2, 3)), group=group)
            return out

        check("all_to_all_single", all_to_all_single,
              lambda: torch.cat([inputs("a2as", (P * 2, 3), j)[2 * R:2 * R + 2]
                                 for j in range(P)]))

        def sent_by(j):
            """Rank j's input of the uneven all-to-all and its split sizes."""
            splits = [_rows(j, k) for k in range(P)]
            return inputs("a2av", (sum(splits), 2), j), splits

        def all_to_all_uneven(group):
            data, in_splits = sent_by(R)
            out_splits = [_rows(j, R) for j in range(P)]
            out = torch.empty(sum(out_splits), 2, dtype=dtype)
            dist.all_to_all_single(out, data, out_splits, in_splits, group=group)
            return out

        def uneven_reference():
            blocks = []
            for j in range(P):
                data, splits = sent_by(j)
                blocks.append(data[sum(splits[:R]):sum(splits[:R + 1])])
            return torch.cat(blocks)

        check("all_to_all_single(uneven splits)", all_to_all_uneven, uneven_reference)

        gather_root = 1 % P

        def gather(group):
            outs = [torch.empty(4, dtype=dtype) for _ in range(P)] if R == gather_root else None
            dist.gather(inputs("gather", (4,)), outs, dst=gather_root, group=group)
            return outs

        check("gather", gather, lambda: ([inputs("gather", (4,), r) for r in range(P)]
                                         if R == gather_root else None))

        def scatter(group):
            out = torch.empty(4, dtype=dtype)
            pieces = list(inputs("scatter", (P, 4)).unbind(0)) if R == P - 1 else None
            dist.scatter(out, pieces, src=P - 1, group=group)
            return out

        check("scatter", scatter, lambda: inputs("scatter", (P, 4), P - 1)[R])

    # The last rank arrives late; every other must wait for it in the barrier.
    dist.barrier()
    if R == P - 1:
        time.sleep(0.3)
    start = time.monotonic()
    dist.barrier()
    held = time.monotonic() - start
    if R != P - 1:
        ck.true("barrier", held > 0.2,
                f"returned after {held:.3f} s, before the last rank (0.3 s late) arrived")
