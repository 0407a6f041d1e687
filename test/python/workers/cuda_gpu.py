"""gloo_lite.CudaCommunicator on real GPU memory: torch CUDA tensors through
__cuda_array_interface__ and through DLPack (bfloat16 included), stream-ordered on torch's
current stream, against torch references computed on the CPU. Ranks share GPU 0."""

import torch

import gloo_lite
from common import context, done

ctx = context()
R, P = ctx.rank, ctx.size
comm = gloo_lite.CudaCommunicator(ctx, 0, slot_bytes=1 << 16)
stream = torch.cuda.current_stream()
checks = 0


class DlpackOnly:
    """Hides __cuda_array_interface__, so that the DLPack path is the one taken."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


for dtype in (torch.float32, torch.int64, torch.float16, torch.bfloat16):
    cpu = [torch.arange(100_000).remainder(7 + r).to(dtype) for r in range(P)]
    a = cpu[R].cuda()
    arg = DlpackOnly(a) if dtype == torch.bfloat16 else a
    work = comm.allreduce(arg, "sum", stream=stream, async_op=True)
    a.mul_(1)  # later work on the stream: runs after the allreduce
    torch.cuda.current_stream().synchronize()
    work.wait()
    want = torch.stack([c.double() for c in cpu]).sum(0)
    assert torch.equal(a.cpu().double(), want), f"allreduce {dtype}"
    out = torch.empty(P * a.numel(), dtype=dtype, device="cuda")
    comm.allgather(a if dtype != torch.bfloat16 else DlpackOnly(a),
                   out if dtype != torch.bfloat16 else DlpackOnly(out), stream=stream)
    assert torch.equal(out.cpu().view(P, -1).double(), want.repeat(P, 1)), f"allgather {dtype}"
    checks += 2

try:
    comm.allreduce(torch.ones(4))
    raise AssertionError("a CPU tensor was accepted")
except TypeError as e:
    assert "CPU array" in str(e), e
checks += 1
comm.close()
done(ctx, checks)
