"""Point-to-point calls on both backends: send/recv around a ring (with a tag), isend/irecv,
batch_isend_irecv, and recv from any source (src=None), which must say who sent."""

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
