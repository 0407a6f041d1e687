"""Sizes, result records and the parsers for the two output formats compare reads.

Record: one measured case (one library variant, one collective, P, one requested size, one pass).
  lib      'gloo_lite' | 'gloo' | 'openmpi'
  variant  gloo_lite: 'auto' or the -A name; gloo: the anchor's algorithm; openmpi: ob1_tcp/ob1_vader
  coll     allreduce | allgather | reduce_scatter | broadcast | barrier
  P        ranks
  size     the requested size in bytes (the key compare sweeps over; 0 for barrier)
  bytes    the size the benchmark reports (nccl-tests convention: allgather/reduce_scatter count
           the total, rounded down to a multiple of P elements)
  time_us  time per operation (max over ranks of the mean, as both anchors and gloo_lite_bench do)
  algbw / busbw  GB/s (1e9), recomputed here from bytes and time with the nccl-tests factors so
           that every library is treated alike (the anchors print only 4 decimals)
"""

import csv
import io
import json
import re

COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "barrier")

# Gloo anchor algorithms per collective (../shared/anchors/README.md); barrier comes from
# compare's own extra (compare_lib/extra_anchors/gloo_barrier.cpp), the anchors have none.
GLOO_ALGOS = {
    "allreduce": ("ring_chunked", "halving_doubling", "opts_ring", "opts_bcube"),
    "allgather": ("opts_ring",),
    "broadcast": ("opts_tree",),
    "reduce_scatter": ("halving_doubling",),
    "barrier": ("opts", "all_to_all", "all_to_one"),
}
MPI_VARIANTS = ("ob1_tcp", "ob1_vader")


def gloo_algo_map(spec):
    """GLOO_ALGOS with the collectives `spec` ("coll:algo,...", --gloo-algos) names replaced by
    the algorithms it lists for them."""
    algos = dict(GLOO_ALGOS)
    if spec:
        named = {}
        for item in spec.split(","):
            coll, _, algo = item.partition(":")
            named.setdefault(coll, []).append(algo)
        algos.update({coll: tuple(names) for coll, names in named.items()})
    return algos

_SUFFIX = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    """'8' -> 8, '1K' -> 1024, '16M' -> 16777216, '1G' -> 2**30 (binary, as nccl-tests)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGkmg]?)[iI]?[bB]?\s*", text)
    if not m:
        raise ValueError("bad size %r (want e.g. 8, 64K, 1M, 16M, 1G)" % text)
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_sizes(text):
    """Comma or space separated sizes, sorted, duplicates removed."""
    out = sorted({parse_size(t) for t in re.split(r"[,\s]+", text.strip()) if t})
    if not out:
        raise ValueError("no sizes in %r" % text)
    return out


def format_size(n):
    if n == 0:
        return "-"
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mult and n % mult == 0:
            return "%d%s" % (n // mult, unit)
    return "%dB" % n if n < 1024 else "%.1fK" % (n / 1024.0)


def bus_factor(coll, P):
    """nccl-tests busbw factors (issue 4): allreduce 2(n-1)/n; allgather, reduce_scatter (n-1)/n;
    broadcast 1; barrier has no bandwidth."""
    if coll == "allreduce":
        return 2.0 * (P - 1) / P
    if coll in ("allgather", "reduce_scatter", "alltoall", "gather", "scatter"):
        return (P - 1) / float(P)
    if coll in ("broadcast", "reduce"):
        return 1.0
    return 0.0


class Record(dict):
    """A dict with attribute access; serialises to JSON as is."""

    __getattr__ = dict.get

    def __setattr__(self, key, value):
        self[key] = value


def make_record(lib, variant, coll, P, size, bytes_, time_us, wrong=0, **extra):
    P = int(P)
    time_us = float(time_us)
    bytes_ = int(bytes_)
    algbw = bytes_ / (time_us * 1e-6) / 1e9 if time_us > 0 and bytes_ > 0 else 0.0
    rec = Record(lib=lib, variant=variant, coll=coll, P=P, size=int(size), bytes=bytes_,
                 time_us=time_us, algbw=algbw, busbw=algbw * bus_factor(coll, P),
                 wrong=int(wrong))
    rec.update(extra)
    return rec


def parse_anchor_csv(text, size=None):
    """Rows of the anchors' CSV (lib,algo,coll,P,bytes,count,iters,time_us,algbw_GBps,busbw_GBps,
    wrong); '#' lines are comments. `size` overrides the requested size (compare runs one size per
    invocation); without it the reported bytes are used. Returns a list of Records."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    out = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("lib") in (None, "lib"):
            continue
        coll = row["coll"]
        req = size if size is not None else (0 if coll == "barrier" else int(row["bytes"]))
        out.append(make_record(
            row["lib"], row["algo"], coll, row["P"], req, row["bytes"], row["time_us"],
            row.get("wrong") or 0, iters=int(row.get("iters") or 0),
            reported_busbw=float(row.get("busbw_GBps") or 0)))
    return out


def parse_gloo_lite_json(text, size=None, mode="best", variant=None):
    """gloo_lite_bench --json: an array of {collective, algorithm, chosen, P, bytes, count, type,
    op, root, inplace, time_us, algbw_GBps, busbw_GBps, wrong, p50_us, p99_us}. A size may come
    out-of-place and in-place; `mode` keeps 'oop', 'inplace' or the faster of the two ('best').
    Rows are grouped by (collective, P, bytes, algorithm). `variant` overrides the label (default:
    the 'algorithm' field, 'auto' for auto). Returns a list of Records."""
    data = json.loads(text)
    if isinstance(data, dict):  # tolerate {"results": [...]} wrappers
        data = data.get("results") or data.get("rows") or []
    groups = {}
    for row in data:
        coll = row.get("collective") or row.get("coll")
        P = int(row["P"])
        b = int(row.get("bytes") or 0)
        inplace = bool(row.get("inplace"))
        if mode == "oop" and inplace and coll not in ("broadcast", "barrier"):
            continue
        if mode == "inplace" and not inplace and coll not in ("broadcast", "barrier"):
            continue
        algo = row.get("algorithm") or "auto"
        groups.setdefault((coll, P, b, algo), []).append(row)
    out = []
    for (coll, P, b, algo), rows in groups.items():
        # a wrong result disqualifies a row; among the rest the fastest wins
        rows.sort(key=lambda r: (int(r.get("wrong") or 0) != 0, float(r["time_us"])))
        row = rows[0]
        req = size if size is not None else (0 if coll == "barrier" else b)
        out.append(make_record(
            "gloo_lite", variant or algo, coll, P, req, b,
            row["time_us"], max(int(r.get("wrong") or 0) for r in rows),
            chosen=row.get("chosen") or row.get("algorithm"), inplace=bool(row.get("inplace")),
            p50_us=row.get("p50_us"), p99_us=row.get("p99_us"),
            reported_busbw=float(row.get("busbw_GBps") or 0)))
    return out


def case_key(rec):
    return (rec["coll"], rec["P"], rec["size"])


def best_of_passes(records):
    """Per (lib, variant, coll, P, size): the record with the lowest time among successful ones,
    with 'passes' = every pass's time (None for a failed pass). Failed-only cases keep the
    failure (status != 'ok')."""
    groups = {}
    for r in records:
        groups.setdefault((r["lib"], r["variant"], r["coll"], r["P"], r["size"]), []).append(r)
    out = []
    for key, rs in groups.items():
        good = [r for r in rs if r.get("status", "ok") == "ok" and r.get("time_us", 0) > 0]
        if good:
            best = Record(min(good, key=lambda r: (r["wrong"] != 0, r["time_us"])))
        else:
            best = Record(rs[-1])
        best["passes"] = [r["time_us"] if r.get("status", "ok") == "ok" else None for r in rs]
        out.append(best)
    return out
