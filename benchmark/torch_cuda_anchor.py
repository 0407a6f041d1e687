#!/usr/bin/env python3
"""benchmark/torch_cuda_anchor.py: torch's own gloo backend on CUDA tensors, the anchor of
issue 13's target (gloo_lite::cuda >= 2x torch gloo at >= 1 MiB). torch's ProcessGroupGloo
copies a CUDA tensor whole to pinned memory, runs the CPU collective and copies back; this
times that path with nccl-tests conventions, the same as gloo_lite_bench -m cuda:

    benchmark/torch_cuda_anchor.py [-p 2] [-b 1K] [-e 256M] [-f 4] [--min-time 0.2]
                                   [--collectives allreduce,broadcast,allgather,reduce_scatter]
                                   [--device cuda|cpu] [--json FILE]

Sizes are bytes per rank buffer (allgather: the gathered output, reduce_scatter: the input, as
nccl-tests); time = max over ranks of the per-rank average of blocking calls (the call, then
torch.cuda.synchronize()); busbw = algbw x the collective's nccl-tests factor. float32, sum.
Every collective is checked once per size against its closed form. A collective the installed
torch's gloo does not offer for the device becomes a row with "error". --device cpu runs the
same on CPU tensors (the dry run of scripts/device-check.sh where no GPU is). Exits 77 when torch
cannot be imported, 1 when a result was wrong.
"""
import argparse
import json
import os
import socket
import sys
import time

SKIP = 77
COLLECTIVES = ("allreduce", "broadcast", "allgather", "reduce_scatter")


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def bus_factor(collective, ranks):
    if collective == "allreduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("allgather", "reduce_scatter"):
        return (ranks - 1) / ranks
    return 1.0


def sizes(args):
    out, size = [], parse_size(args.b)
    while size <= parse_size(args.e):
        out.append(size)
        size *= args.f
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_size(torch, dist, collective, nbytes, rank, ranks, device, min_time):
    """(seconds per call, max over ranks; wrong elements over ranks) for one size."""
    elements = max(nbytes // 4, ranks)
    block = elements // ranks
    f32 = torch.float32
    if collective == "allreduce":
        data = torch.full((elements,), float(rank + 1), dtype=f32, device=device)
        expected = ranks * (ranks + 1) / 2.0

        def call():
            data.fill_(float(rank + 1))  # allreduce is in place: refill so the check holds
            dist.all_reduce(data)

        def wrong():
            return int((data != expected).sum())
    elif collective == "broadcast":
        data = torch.full((elements,), float(rank + 1), dtype=f32, device=device)

        def call():
            dist.broadcast(data, src=0)

        def wrong():
            return int((data != 1.0).sum())
    elif collective == "allgather":
        data = torch.full((block,), float(rank + 1), dtype=f32, device=device)
        out = torch.empty((block * ranks,), dtype=f32, device=device)
        expected = torch.arange(1, ranks + 1, dtype=f32, device=device).repeat_interleave(block)

        def call():
            dist.all_gather_into_tensor(out, data)

        def wrong():
            return int((out != expected).sum())
    else:  # reduce_scatter
        data = torch.full((block * ranks,), float(rank + 1), dtype=f32, device=device)
        out = torch.empty((block,), dtype=f32, device=device)
        expected = ranks * (ranks + 1) / 2.0

        def call():
            dist.reduce_scatter_tensor(out, data)

        def wrong():
            return int((out != expected).sum())

    def sync():
        if device != "cpu":
            torch.cuda.synchronize()

    def max_over_ranks(value, op=dist.ReduceOp.MAX):
        t = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(t, op=op)
        return t.item()

    call()
    sync()
    bad = max_over_ranks(float(wrong()), dist.ReduceOp.SUM)
    start = time.perf_counter()
    call()
    sync()
    once = max_over_ranks(time.perf_counter() - start)
    iterations = int(min(max(min_time / max(once, 1e-7), 3), 10000))
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        call()
    sync()
    return max_over_ranks((time.perf_counter() - start) / iterations), int(bad), iterations


def worker(rank, ranks, port, args, queue):
    import torch
    import torch.distributed as dist

    device = args.device
    if device == "cuda":
        torch.cuda.set_device(0)  # the ranks share one GPU, as gloo_lite_bench -m cuda's do
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks)
    rows = []
    for collective in args.collectives.split(","):
        for nbytes in sizes(args):
            row = {"collective": collective, "P": ranks, "bytes": nbytes, "device": device,
                   "backend": "gloo", "torch": torch.__version__}
            try:
                seconds, bad, iterations = one_size(torch, dist, collective, nbytes, rank, ranks,
                                                    device, args.min_time)
                algbw = nbytes / seconds / 1e9
                row.update(time_us=seconds * 1e6, algbw_GBps=algbw, iterations=iterations,
                           busbw_GBps=algbw * bus_factor(collective, ranks), wrong=bad)
            except Exception as error:  # noqa: BLE001 -- a collective this torch lacks
                row["error"] = f"{type(error).__name__}: {error}".splitlines()[0][:200]
                rows.append(row)
                break  # every rank raised the same; the group may be unusable for it
            rows.append(row)
            if rank == 0:
                print(f"{collective:>15} {nbytes:>11} {row['time_us']:>12.1f} us "
                      f"{row['algbw_GBps']:>8.3f} {row['busbw_GBps']:>8.3f} GB/s "
                      f"wrong {bad}", flush=True)
    dist.destroy_process_group()
    if rank == 0:
        queue.put(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("-b", default="1K")
    parser.add_argument("-e", default="256M")
    parser.add_argument("-f", type=int, default=4)
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per size")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as error:
        print(f"torch_cuda_anchor: torch cannot be imported ({error}): skipped", file=sys.stderr)
        return SKIP
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_cuda_anchor: torch sees no GPU; use --device cpu", file=sys.stderr)
        return SKIP
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    context = mp.get_context("spawn")  # CUDA cannot be used in forked children
    queue = context.SimpleQueue()
    port = free_port()
    processes = [context.Process(target=worker, args=(r, args.p, port, args, queue))
                 for r in range(args.p)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    if any(p.exitcode != 0 for p in processes) or queue.empty():
        print("torch_cuda_anchor: a rank failed", file=sys.stderr)
        return 1
    rows = queue.get()
    if args.json:
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)
    return 1 if any(row.get("wrong", 0) for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
