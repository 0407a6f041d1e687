"""Point-to-point calls on both backends: send/recv around a ring (with a tag), isend/irecv,
batch_isend_irecv, messages received in another order than sent (told apart by tag), and
recv/irecv from any source (src=None), which must say who sent. On gloo_lite alone (torch's gloo
takes contiguous tensors only): a transposed tensor sent into a strided slice."""

import torch
import torch.distributed as dist

from common import rank_input
from versus_gloo import compare

DTYPES = [torch.float32, torch.bfloat16, torch.int8, torch.int64]


def run(ck, job):
    R, P = job.rank, job.size
    nxt, prev = (R + 1) % P, (R - 1) % P
    for dtype in DTYPES:
        tag = str(dtype)[6:]

        def inputs(key, rank=R):
            return rank_input(key, rank, (6, 2), dtype)

        def check(name, run, reference):
            compare(ck, job, f"{name}/{tag}", run, reference, True, True)

        def send_recv(group):
            out = torch.empty(6, 2, dtype=dtype)
            # Even ranks send first, odd ones receive first: no rank waits on a blocked peer.
            if R % 2 == 0:
                dist.send(inputs("ring"), nxt, group=group, tag=5)
                dist.recv(out, prev, group=group, tag=5)
            else:
                dist.recv(out, prev, group=group, tag=5)
                dist.send(inputs("ring"), nxt, group=group, tag=5)
            return out

        check("send/recv", send_recv, lambda: inputs("ring", prev))

        def isend_irecv(group):
            out = torch.empty(6, 2, dtype=dtype)
            works = [dist.irecv(out, prev, group=group), dist.isend(inputs("iring"), nxt,
                                                                    group=group)]
            for work in works:
                work.wait()
            ck.true(f"isend/irecv/{tag}: is_completed", all(w.is_completed() for w in works),
                    "a waited-for transfer is not completed")
            return out

        check("isend/irecv", isend_irecv, lambda: inputs("iring", prev))

        def batch(group):
            out = torch.empty(6, 2, dtype=dtype)
            ops = [dist.P2POp(dist.isend, inputs("batch"), nxt, group),
                   dist.P2POp(dist.irecv, out, prev, group)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            return out

        check("batch_isend_irecv", batch, lambda: inputs("batch", prev))

        # Rank 0 receives from whoever sends first, P - 1 times.
        for name, group in (("gloo_lite", None), ("gloo", job.gloo)):
            if R == 0:
                got = {}
                for _ in range(P - 1):
                    out = torch.empty(6, 2, dtype=dtype)
                    sender = dist.recv(out, src=None, group=group)
                    got[sender] = out
                want = list(range(1, P))
                ck.true(f"recv(src=None)/{tag} on {name}: senders", sorted(got) == want,
                        f"recv returned senders {sorted(got)}, want {want}")
                for sender, out in got.items():
                    if 0 < sender < P:
                        ck.same(f"recv(src=None)/{tag} on {name} from {sender}", out,
                                inputs("any", sender), True, "reference")
            else:
                dist.send(inputs("any"), 0, group=group)

    out_of_order(ck, job)
    non_contiguous(ck, job)


def out_of_order(ck, job):
    """Rank 0 sends tag 1 then tag 2 to every other rank, which receives tag 2 first."""
    R, P = job.rank, job.size
    for name, group in (("gloo_lite", None), ("gloo", job.gloo)):
        if R == 0:
            works = [dist.isend(rank_input(f"tag{tag}", peer, (3,), torch.float32), peer,
                                group=group, tag=tag) for peer in range(1, P) for tag in (1, 2)]
            for work in works:
                work.wait()
        else:
            second, first = torch.empty(3), torch.empty(3)
            dist.recv(second, 0, group=group, tag=2)
            dist.recv(first, 0, group=group, tag=1)
            ck.same(f"received out of order on {name}", [first, second],
                    [rank_input(f"tag{tag}", R, (3,), torch.float32) for tag in (1, 2)])
        # From any source, with a tag, and by irecv.
        if R == P - 1:
            dist.send(rank_input("any tag", R, (2,), torch.int64), 0, group=group, tag=9)
            dist.send(rank_input("any irecv", R, (2,), torch.int64), 0, group=group)
        elif R == 0:
            out = torch.empty(2, dtype=torch.int64)
            sender = dist.recv(out, None, group=group, tag=9)
            ck.true(f"recv(src=None, tag=9) on {name}: the sender", sender == P - 1,
                    f"recv returned {sender}, want {P - 1}")
            ck.same(f"recv(src=None, tag=9) on {name}", out,
                    rank_input("any tag", P - 1, (2,), torch.int64))
            out = torch.empty(2, dtype=torch.int64)
            dist.irecv(out, None, group=group).wait()
            ck.same(f"irecv(src=None) on {name}", out,
                    rank_input("any irecv", P - 1, (2,), torch.int64))


def non_contiguous(ck, job):
    R, P = job.rank, job.size
    if R == 0:
        for peer in range(1, P):
            dist.send(rank_input("nc", peer, (3, 4), torch.float32).t(), peer)
    else:
        base = torch.zeros(4, 6)
        dist.recv(base[:, ::2], 0)
        ck.same("a transposed tensor sent into a strided slice", base[:, ::2],
                rank_input("nc", R, (3, 4), torch.float32).t())
        ck.same("the strided slice's gaps untouched", base[:, 1::2], torch.zeros(4, 3))
