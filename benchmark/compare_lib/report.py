"""Issue 4's and issue 12's targets, the ratio rows and their text/markdown rendering.

Targets (each a ratio in the same run, gloo_lite 'auto' against the anchors; 'auto' runs on the
transports gloo_lite picks itself, shared memory between ranks of one host, and 'auto@tcp' with
GLOO_LITE_TRANSPORT=tcp; the TCP anchors are compared with auto@tcp when it ran):
  bandwidth  allreduce, allgather, reduce_scatter, broadcast at 1, 16 and 64 MiB:
             busbw >= 1.5x the best Gloo algorithm, >= 1.0x Open MPI over TCP (issue 4) and
             >= 1.0x Open MPI's shared memory (vader, issue 12)
  latency    8 B allreduce and barrier: time <= 0.2x Gloo's best, <= 1.0x Open MPI over TCP
             and <= 1.0x Open MPI's shared memory
  auto       (when explicit gloo_lite algorithms ran too) auto no more than 10% slower than the
             best explicit algorithm at any size
  memory     peak RSS per rank of a 64 MiB allreduce <= 2x the user buffer
Rows below 64 KiB and barrier rows compare times ('t', lower is better); the others compare
busbw ('bw', higher is better).
"""

from . import model

BW_COLLS = ("allreduce", "allgather", "reduce_scatter", "broadcast")
BW_TARGET_SIZES = (1 << 20, 16 << 20, 64 << 20)
BW_VS_GLOO, BW_VS_MPI, BW_VS_SHM = 1.5, 1.0, 1.0
LAT_VS_GLOO, LAT_VS_MPI, LAT_VS_SHM = 0.2, 1.0, 1.0
AUTO_SLACK = 1.10
RSS_FACTOR = 2.0
LATENCY_BELOW = 64 << 10


def is_latency_row(coll, size):
    return coll == "barrier" or size < LATENCY_BELOW


def _usable(r):
    return r is not None and r.get("status", "ok") == "ok" and r.get("time_us", 0) > 0 \
        and not r.get("wrong")


def target_kind(coll, size):
    if coll in BW_COLLS and size in BW_TARGET_SIZES:
        return "bw"
    if (coll == "allreduce" and size == 8) or coll == "barrier":
        return "lat"
    return None


def _check(kind, ratio, need):
    """-> dict(value, need, met, shortfall) for a ratio; shortfall in percent of the value that
    would have to change: bw 'needs +x% busbw', lat 'needs -x% time'."""
    if ratio is None:
        return dict(value=None, need=need, met=None, shortfall=None)
    if kind == "bw":
        met = ratio >= need
        short = 0.0 if met else (need / ratio - 1.0) * 100.0
    else:
        met = ratio <= need
        short = 0.0 if met else (1.0 - need / ratio) * 100.0
    return dict(value=ratio, need=need, met=met, shortfall=short)


def build_rows(best_records, gl_variant="auto"):
    """best_records: one Record per (lib, variant, coll, P, size) (model.best_of_passes).
    Returns rows sorted by collective order, P, size."""
    cases = {}
    for r in best_records:
        cases.setdefault(model.case_key(r), []).append(r)
    order = {c: i for i, c in enumerate(model.COLLECTIVES)}
    rows = []
    for key in sorted(cases, key=lambda k: (order.get(k[0], 99), k[1], k[2])):
        coll, P, size = key
        rs = cases[key]
        gl = next((r for r in rs if r["lib"] == "gloo_lite" and r["variant"] == gl_variant), None)
        gl_tcp = next((r for r in rs
                       if r["lib"] == "gloo_lite" and r["variant"] == gl_variant + "@tcp"), None)
        gl_explicit = {r["variant"]: r for r in rs
                       if r["lib"] == "gloo_lite" and r["variant"] != gl_variant
                       and "@" not in r["variant"]}
        gloo_all = {r["variant"]: r for r in rs if r["lib"] == "gloo"}
        good = [r for r in gloo_all.values() if _usable(r)]
        gloo_best = min(good, key=lambda r: r["time_us"]) if good else None
        mpi_tcp = next((r for r in rs if r["lib"] == "openmpi" and r["variant"] == "ob1_tcp"),
                       None)
        mpi_shm = next((r for r in rs if r["lib"] == "openmpi" and r["variant"] == "ob1_vader"),
                       None)
        lat = is_latency_row(coll, size)
        row = dict(coll=coll, P=P, size=size, kind="lat" if lat else "bw", gl=gl,
                   gl_tcp=gl_tcp, gl_explicit=gl_explicit, gloo_all=gloo_all,
                   gloo_best=gloo_best, mpi_tcp=mpi_tcp, mpi_shm=mpi_shm)

        def ratio(mine, other):
            if not (_usable(mine) and _usable(other)):
                return None
            if lat:
                return mine["time_us"] / other["time_us"]
            return mine["busbw"] / other["busbw"] if other["busbw"] > 0 else None

        row["ratio_gloo"] = ratio(gl, gloo_best)
        # TCP against TCP where gloo_lite's TCP run exists (older runs have only 'auto').
        row["ratio_mpi"] = ratio(gl_tcp if gl_tcp is not None else gl, mpi_tcp)
        row["ratio_shm"] = ratio(gl, mpi_shm)
        tk = target_kind(coll, size)
        row["target"] = tk
        if tk is not None:
            need = dict(bw=(BW_VS_GLOO, BW_VS_MPI, BW_VS_SHM),
                        lat=(LAT_VS_GLOO, LAT_VS_MPI, LAT_VS_SHM))[tk]
            row["check_gloo"] = _check(tk, row["ratio_gloo"], need[0])
            row["check_mpi"] = _check(tk, row["ratio_mpi"], need[1])
            if mpi_shm is not None:
                row["check_shm"] = _check(tk, row["ratio_shm"], need[2])
        # auto against gloo_lite's own explicit algorithms, when those ran
        ex = [r for r in gl_explicit.values() if _usable(r)]
        if _usable(gl) and ex:
            bx = min(ex, key=lambda r: r["time_us"])
            row["auto_vs_best"] = dict(best=bx["variant"], best_time_us=bx["time_us"],
                                       ratio=gl["time_us"] / bx["time_us"],
                                       met=gl["time_us"] <= AUTO_SLACK * bx["time_us"])
        used = [r for r in (gl, gl_tcp, gloo_best, mpi_tcp, mpi_shm) if r is not None]
        row["noise"] = max([r.get("foreign_cores") or 0.0 for r in used] or [0.0])
        row["contended"] = any(r.get("contended") for r in used)
        rows.append(row)
    return rows


def summarize(rows, rss=None):
    checks = []
    for row in rows:
        for who, label in (("check_gloo", "Gloo best"), ("check_mpi", "Open MPI TCP"),
                           ("check_shm", "Open MPI shm")):
            c = row.get(who)
            if c is None:
                continue
            checks.append(dict(coll=row["coll"], P=row["P"], size=row["size"], kind=row["target"],
                               against=label, **c))
        if "auto_vs_best" in row:
            a = row["auto_vs_best"]
            checks.append(dict(coll=row["coll"], P=row["P"], size=row["size"], kind="auto",
                               against="best explicit gloo_lite (%s)" % a["best"],
                               value=a["ratio"], need=AUTO_SLACK, met=a["met"],
                               shortfall=0.0 if a["met"] else (1 - AUTO_SLACK / a["ratio"]) * 100))
    for m in rss or []:
        if m["lib"] == "gloo_lite" and m.get("ratio") is not None:
            checks.append(dict(coll="allreduce", P=m["P"], size=m["buffer_bytes"], kind="memory",
                               against="2x user buffer", value=m["ratio"], need=RSS_FACTOR,
                               met=m["ratio"] <= RSS_FACTOR,
                               shortfall=0.0 if m["ratio"] <= RSS_FACTOR
                               else (1 - RSS_FACTOR / m["ratio"]) * 100))
    met = sum(1 for c in checks if c["met"])
    missed = [c for c in checks if c["met"] is False]
    unknown = sum(1 for c in checks if c["met"] is None)
    return dict(checks=checks, met=met, missed=len(missed), unknown=unknown,
                misses=missed)


# ---------------------------------------------------------------------------------------------
# rendering

def _t(r):
    if r is None:
        return "-"
    if r.get("status", "ok") != "ok":
        return "FAIL"
    if r.get("wrong"):
        return "WRONG"
    t = r["time_us"]
    return "%.0f" % t if t >= 100 else "%.1f" % t


def _bw(r):
    if r is None or r.get("status", "ok") != "ok" or r.get("wrong"):
        return "-"
    if is_latency_row(r["coll"], r["size"]):
        return "-"
    return "%.2f" % r["busbw"] if r["busbw"] >= 0.01 else "-"


def _num(v, need=None):
    """Two decimals, three where two would round a miss onto the target (0.204 vs 0.2)."""
    s = "%.2f" % v
    if need is not None and float(s) == need and v != need:
        s = "%.3f" % v
    return s


def _ratio(row, key, check_key):
    v = row.get(key)
    if v is None:
        return "-"
    c = row.get(check_key)
    s = ("t " if row["kind"] == "lat" else "bw ") + _num(v, c["need"] if c else None)
    if c is None or c["met"] is None:
        return s
    return s + (" ok" if c["met"] else " MISS")


def _gl_algo(r):
    if r is None:
        return ""
    ch = r.get("chosen") or r.get("variant") or ""
    if r.get("inplace"):
        ch += "*"
    return ch


COLUMNS = ["collective", "P", "size", "gloo_lite us", "GB/s", "auto chose", "GL TCP us", "GB/s",
           "Gloo best us", "GB/s", "Gloo algo", "MPI TCP us", "GB/s", "MPI shm us", "GB/s",
           "GL/Gloo", "GL/MPI-TCP", "GL/MPI-shm", "noise"]
LEFT_COLUMNS = (0, 5, 10)


def table_cells(rows):
    out = []
    for row in rows:
        gb = row["gloo_best"]
        out.append([
            row["coll"], str(row["P"]), model.format_size(row["size"]),
            _t(row["gl"]), _bw(row["gl"]), _gl_algo(row["gl"]),
            _t(row.get("gl_tcp")), _bw(row.get("gl_tcp")),
            _t(gb), _bw(gb), gb["variant"] if gb else ("FAIL" if row["gloo_all"] else "-"),
            _t(row["mpi_tcp"]), _bw(row["mpi_tcp"]),
            _t(row["mpi_shm"]), _bw(row["mpi_shm"]),
            _ratio(row, "ratio_gloo", "check_gloo"), _ratio(row, "ratio_mpi", "check_mpi"),
            _ratio(row, "ratio_shm", "check_shm"),
            "%.2f%s" % (row["noise"], "!" if row["contended"] else ""),
        ])
    return out


def render_text(rows):
    cells = table_cells(rows)
    widths = [max([len(COLUMNS[i])] + [len(c[i]) for c in cells]) for i in range(len(COLUMNS))]
    left = set(LEFT_COLUMNS)

    def fmt(vals):
        return "  ".join(v.ljust(widths[i]) if i in left else v.rjust(widths[i])
                         for i, v in enumerate(vals)).rstrip()

    lines = [fmt(COLUMNS), fmt(["-" * w for w in widths])]
    prev = None
    for row, c in zip(rows, cells):
        if prev is not None and (row["coll"], row["P"]) != prev:
            lines.append("")
        prev = (row["coll"], row["P"])
        lines.append(fmt(c))
    return "\n".join(lines)


def render_markdown(rows):
    cells = table_cells(rows)
    lines = ["| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" if i in LEFT_COLUMNS else "--:" for i in range(len(COLUMNS))) + "|"]
    for c in cells:
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in c) + " |")
    return "\n".join(lines)


def render_legend():
    return (
        "us = time per op (max over ranks); GB/s = busbw (nccl-tests factors, GB = 1e9); "
        "'auto chose' = the algorithm gloo_lite's auto picked (* = the in-place row was faster).\n"
        "GL/x: 't' rows (< 64 KiB, barrier) = gloo_lite time / x time (lower is better); 'bw' rows "
        "= gloo_lite busbw / x busbw (higher is better).\n"
        "gloo_lite = auto on the transports it picks itself (shared memory on one host); GL TCP = "
        "auto with GLOO_LITE_TRANSPORT=tcp, the one GL/MPI-TCP compares when it ran.\n"
        "Targets (issues 4, 12): bw at 1M/16M/64M >= %.1fx Gloo best, >= %.1fx MPI TCP and >= "
        "%.1fx MPI shm; 8 B allreduce and barrier t <= %.1fx Gloo best, <= %.1fx MPI TCP and <= "
        "%.1fx MPI shm. ok/MISS mark target cells only.\n"
        "noise = the most foreign CPU load (cores) seen during any of the row's chosen runs "
        "('!' = above the retry threshold even after retrying)."
        % (BW_VS_GLOO, BW_VS_MPI, BW_VS_SHM, LAT_VS_GLOO, LAT_VS_MPI, LAT_VS_SHM))


def render_summary(summary):
    lines = ["targets: %d met, %d missed, %d not measured" % (
        summary["met"], summary["missed"], summary["unknown"])]
    for c in summary["misses"]:
        if c["kind"] == "bw":
            how = "busbw ratio %sx, needs >= %.1fx: busbw would have to rise %.0f%%" % (
                _num(c["value"], c["need"]), c["need"], c["shortfall"])
        elif c["kind"] == "lat":
            how = "time ratio %sx, needs <= %.1fx: time would have to fall %.0f%%" % (
                _num(c["value"], c["need"]), c["need"], c["shortfall"])
        elif c["kind"] == "auto":
            how = "auto %.2fx the best explicit time, needs <= %.2fx" % (c["value"], c["need"])
        else:
            how = "peak RSS %.2fx the user buffer, needs <= %.1fx" % (c["value"], c["need"])
        lines.append("  MISS %-14s P=%d %-5s vs %-14s %s" % (
            c["coll"], c["P"], model.format_size(c["size"]), c["against"], how))
    return "\n".join(lines)


def render_auto(rows):
    rs = [r for r in rows if "auto_vs_best" in r]
    if not rs:
        return ""
    lines = ["auto vs gloo_lite's best explicit algorithm (target: auto <= %.2fx):" % AUTO_SLACK]
    for r in rs:
        a = r["auto_vs_best"]
        lines.append("  %-14s P=%d %-5s auto %s (%s) best %s %.1f us -> %.2fx %s" % (
            r["coll"], r["P"], model.format_size(r["size"]), _t(r["gl"]), _gl_algo(r["gl"]),
            a["best"], a["best_time_us"], a["ratio"], "ok" if a["met"] else "MISS"))
    return "\n".join(lines)


def render_rss(rss):
    if not rss:
        return ""
    lines = ["peak RSS per rank, allreduce of a %s buffer (max over ranks). 'in-place equivalent' = "
             "(RSS - the benchmark's own user buffers + one buffer) / buffer, i.e. one user buffer "
             "plus library and process memory; target for gloo_lite <= %.1fx:"
             % (model.format_size(rss[0]["buffer_bytes"]), RSS_FACTOR)]
    for m in rss:
        if m.get("max_kb") is None:
            lines.append("  %-9s %-17s P=%d  FAILED" % (m["lib"], m["variant"], m["P"]))
            continue
        lines.append("  %-9s %-17s P=%d  RSS %6.1f MiB (%.2fx buffer; bench holds %d)  "
                     "beyond the user buffers %6.1f MiB  in-place equivalent %.2fx%s" % (
                         m["lib"], m["variant"], m["P"], m["max_kb"] / 1024.0,
                         m.get("raw_ratio", m["ratio"]), m.get("user_buffers", 1),
                         m.get("extra_bytes", 0) / 1048576.0, m["ratio"],
                         ("  " + ("ok" if m["ratio"] <= RSS_FACTOR else "MISS"))
                         if m["lib"] == "gloo_lite" else ""))
    return "\n".join(lines)
