"""Cluster shapes, link rates, link limits and the table. Pure functions: the self-test covers
them without root.

Shapes: '4x2' is 4 hosts of 2 ranks; '3,3,2' lists the ranks of each host. Ranks are numbered
host by host (host 0 holds ranks 0..R0-1, and so on), as a launcher filling hosts in order would.

Link limit: the least time any schedule needs, given that every host reaches the others through
one link of `rate` bits/s in each direction (the bridge itself is not a limit). S is the size in
the nccl-tests convention (allreduce and broadcast: the buffer; allgather: the whole output;
reduce_scatter: the whole input); R_h the ranks of host h, P the ranks in all, H the hosts.
  allreduce       2·S·(H−1)/H: with each host reducing 1/H of the vector (the best split),
                  a host sends its input for the other parts, S·(H−1)/H, and its reduced part
                  to the H−1 other hosts, S·(H−1)/H again (the ranks per host do not matter:
                  they share the host's link).
  allgather       max_h S·(P−R_h)/P: host h must receive every block its ranks do not hold; the
                  host with the fewest ranks receives the most (S·(H−1)/H on even shapes).
  reduce_scatter  max_h S·(P−R_h)/P: every other host's output blocks depend on host h's input,
                  which must leave h at least once per byte (S·(H−1)/H on even shapes).
  broadcast       S: the root's host must send every byte out at least once, and every other
                  host must receive it once; a relay (pipelined chain or tree) can keep each
                  link at S, so no bound larger than S holds either.
  reduce          S: the mirror of broadcast. The root's host must receive a value for every
                  byte from outside, and every other host's input must leave it once.
  gather (S: the whole output at the root)  max(S·(P−R_0)/P, max_h S·R_h/P) with the root on
                  host 0 (rank 0): its host receives the blocks of every rank elsewhere, and
                  each other host must send its own ranks' blocks.
  scatter         the same bytes as gather, in the other direction.
  alltoall (S: each rank's whole buffer of P blocks)  max_h S·R_h·(P−R_h)/P: each of host h's
                  R_h ranks sends a block of S/P to each of the P−R_h ranks elsewhere (and
                  receives as many).
  barrier         no bytes: latency only, no limit.
On one host (H = 1) nothing crosses a link and no limit applies.
"""

import re

# What benchmark/cluster runs (gloo_lite_bench's collectives; Gloo and Open MPI only where their
# anchors have the collective), in the table's order.
COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "barrier", "reduce",
               "gather", "scatter", "alltoall")

_RATE_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}


def parse_hosts(text):
    """'4x2' -> [2, 2, 2, 2]; '3,3,2' -> [3, 3, 2]; '8' -> [1] * 8 (8 hosts of one rank)."""
    t = text.strip().lower()
    m = re.fullmatch(r"(\d+)\s*x\s*(\d+)", t)
    if m:
        hosts, per = int(m.group(1)), int(m.group(2))
        shape = [per] * hosts
    elif re.fullmatch(r"\d+(\s*,\s*\d+)+", t):
        shape = [int(x) for x in t.split(",")]
    elif re.fullmatch(r"\d+", t):
        shape = [1] * int(t)
    else:
        raise ValueError("bad --hosts %r: want HOSTSxRANKS (4x2) or ranks per host (3,3,2)"
                         % text)
    if not shape or any(r < 1 for r in shape):
        raise ValueError("bad --hosts %r: every host needs at least one rank" % text)
    if len(shape) > 250:
        raise ValueError("bad --hosts %r: at most 250 hosts (one 192.0.2.0/24 address each)"
                         % text)
    return shape


def shape_name(shape):
    """[2, 2, 2, 2] -> '4x2'; [3, 3, 2] -> '3,3,2'."""
    if len(set(shape)) == 1:
        return "%dx%d" % (len(shape), shape[0])
    return ",".join(str(r) for r in shape)


def host_of_rank(shape):
    """[3, 3, 2] -> [0, 0, 0, 1, 1, 1, 2, 2]."""
    return [h for h, r in enumerate(shape) for _ in range(r)]


def parse_rate(text):
    """'1gbit' -> 1e9, '200mbit' -> 2e8, '1000mbit' -> 1e9 (bits/s, tc's decimal units).
    Returns (bits_per_s, the string given to tc)."""
    t = text.strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)(?:bit|bps)?", t)
    if not m or t.endswith("bps"):
        raise ValueError("bad --link %r: want e.g. 1gbit, 200mbit" % text)
    bits = float(m.group(1)) * _RATE_UNITS[m.group(2)]
    if bits < 1e5:
        raise ValueError("bad --link %r: below 100kbit" % text)
    return bits, "%dkbit" % round(bits / 1e3)


def link_bytes(coll, size, shape):
    """The bytes the busiest host link must carry at least (module doc), or None (no limit)."""
    H, P = len(shape), sum(shape)
    if H < 2 or coll == "barrier":
        return None
    if coll == "allreduce":
        return 2.0 * size * (H - 1) / H
    if coll in ("allgather", "reduce_scatter"):
        return max(size * (P - r) / float(P) for r in shape)
    if coll in ("broadcast", "reduce"):
        return float(size)
    if coll in ("gather", "scatter"):  # the root, rank 0, is on host 0
        return max([size * (P - shape[0]) / float(P)] + [size * r / float(P) for r in shape[1:]])
    if coll == "alltoall":
        return max(size * r * (P - r) / float(P) for r in shape)
    raise ValueError("no link limit for %s" % coll)


def link_limit_us(coll, size, shape, bits_per_s):
    b = link_bytes(coll, size, shape)
    return None if b is None else b * 8.0 / bits_per_s * 1e6


def fraction(limit_us, time_us):
    """Fraction of the link limit reached: limit / measured (1 = the link's full rate)."""
    if not limit_us or not time_us:
        return None
    return limit_us / time_us


# ---------------------------------------------------------------------------------------------
# the table

COLUMNS = ("collective", "size", "library", "variant", "time (us)", "busbw (GB/s)",
           "of link", "auto ran")


def _size(n):
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mult and n % mult == 0:
            return "%d%s" % (n // mult, unit)
    return "%dB" % n


def _num(v, fmt):
    return "-" if v is None else fmt % v


def table_rows(records):
    """Records (lib, variant, coll, size, time_us, busbw, link_frac, chosen, status) -> rows of
    cells in COLUMNS order, by collective, size, then gloo_lite auto, gloo_lite's algorithms,
    Gloo, Open MPI; a '*' marks the fastest of each (collective, size)."""
    order = {c: i for i, c in enumerate(COLLECTIVES)}
    lib_rank = {"gloo_lite": 0, "gloo": 1, "openmpi": 2}
    best = {}
    for r in records:
        if r.get("status", "ok") == "ok" and r.get("time_us"):
            k = (r["coll"], r["size"])
            best[k] = min(best.get(k, float("inf")), r["time_us"])
    recs = sorted(records, key=lambda r: (order.get(r["coll"], 9), r["size"],
                                          lib_rank.get(r["lib"], 9), r["variant"] != "auto",
                                          r["variant"]))
    rows = []
    for r in recs:
        ok = r.get("status", "ok") == "ok" and r.get("time_us")
        if r.get("status") == "wrong":
            cells = ["WRONG (%d)" % r["wrong"], "-", "-", "-"]
        elif not ok:
            cells = ["FAILED", "-", "-", "-"]
        else:
            mark = "*" if r["time_us"] == best.get((r["coll"], r["size"])) else ""
            cells = ["%.1f%s" % (r["time_us"], mark),
                     "-" if r["coll"] == "barrier" else "%.3f" % r["busbw"],
                     _num(r.get("link_frac"), "%.2f"),
                     (r.get("chosen") or "-") if r["variant"] == "auto" else ""]
        rows.append([r["coll"], "-" if r["coll"] == "barrier" else _size(r["size"]),
                     {"gloo_lite": "gloo_lite", "gloo": "Gloo", "openmpi": "Open MPI"}.get(
                         r["lib"], r["lib"]), r["variant"]] + cells)
    return rows


def render_text(rows):
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
              for i, c in enumerate(COLUMNS)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 4 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(COLUMNS), line(["-" * w for w in widths])] + [line(r) for r in rows])


def render_markdown(rows):
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
