"""Command line of benchmark/compare (see docs/benchmarking.md)."""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import model, report, runner

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

EPILOG = """
Order: for each pass, for each collective, P and size, every variant runs back to back
(gloo_lite first, then each Gloo algorithm of that collective, then Open MPI TCP and shm); the
table keeps the better (faster) of the passes for each case. Before each case compare waits for a
quiet machine (--quiet-cores, at most --quiet-wait s) and retries a case that other processes
disturbed (--foreign-cores, --attempts). Barrier rows for the anchors come from compare's own
small programs (compare_lib/extra_anchors/), since the anchors have no barrier.

Needs: a gloo_lite build with benchmark/gloo_lite_bench (--build), and for the anchors
scripts/install-bench-deps.sh (libgloo-dev, openmpi, python3-matplotlib for --plot).
"""


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="benchmark/compare", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="gloo_lite against Debian's Gloo (TCP) and Open MPI (TCP, shared memory), "
                    "interleaved in one run, with issue 4's ratio targets.",
        epilog=EPILOG)
    ap.add_argument("--build", help="gloo_lite build folder (default: the first of build-bench, "
                    "build, build* that has benchmark/gloo_lite_bench)")
    ap.add_argument("-p", "--procs", help='process counts (default "2 4 8")')
    ap.add_argument("-s", "--sizes",
                    help="sizes in bytes with K/M/G suffixes (default 8,1M,16M,64M)")
    ap.add_argument("--collectives",
                    help="comma list (default: allreduce,allgather,reduce_scatter,broadcast,barrier)")
    ap.add_argument("--passes", type=int, help="passes; the better one counts (2)")
    ap.add_argument("--plot", metavar="PNG", help="draw busbw and latency against size")
    ap.add_argument("--json", metavar="FILE", help="write every record, row and target as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="write the ratio table as markdown")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: P=2, sizes 8 and 1M, allreduce, 1 pass, no RSS (flags "
                         "given explicitly still win)")
    ap.add_argument("--self-test", action="store_true",
                    help="parse fixtures and check the ratio/target logic; runs nothing")
    ap.add_argument("--out", help="scratch folder: anchors copy, raw records, tables "
                    "(default: a new /tmp/gloo_lite_compare.* folder)")
    ap.add_argument("--anchors", default=os.path.join(REPO, "..", "shared", "anchors"),
                    help="the anchors to copy (default: ../shared/anchors beside the repo)")
    ap.add_argument("--libs", default="gloo_lite,gloo,mpi",
                    help="which libraries to run (default gloo_lite,gloo,mpi)")
    ap.add_argument("--gloo-lite-algos", default="auto",
                    help="gloo_lite -A values, comma list; the first is the one compared "
                         "(default auto; e.g. auto,ring,halving_doubling to check auto too)")
    ap.add_argument("--gl-transports", default="tcp",
                    help="also run gloo_lite's first algorithm with GLOO_LITE_TRANSPORT forced to "
                         "each of these, as variants ALGO@T, e.g. auto@tcp (default tcp; '' for "
                         "none). The plain variants use the transports gloo_lite picks itself")
    ap.add_argument("--gloo-algos", help="override the Gloo algorithms: coll:algo,... ")
    ap.add_argument("--mpi-variants", default="ob1_tcp,ob1_vader",
                    help="Open MPI variants (default ob1_tcp,ob1_vader)")
    ap.add_argument("--gl-mode", choices=("best", "oop", "inplace"), default="best",
                    help="which gloo_lite row counts when a size has out-of-place and in-place "
                         "rows (default best; the Gloo anchors run in place, Open MPI out of place)")
    ap.add_argument("--gl-iters", default="auto",
                    help="gloo_lite -n: auto (--size-time MIN_TIME when the bench has it, else "
                         "from the previous pass) or a number")
    ap.add_argument("--min-time", type=float, default=0.2,
                    help="seconds of timed ops per case, as the anchors' MIN_TIME_S (0.2)")
    ap.add_argument("--min-iters", type=int, default=5)
    ap.add_argument("--max-iters", type=int, default=100000)
    ap.add_argument("--quiet-cores", type=float, default=0.25,
                    help="wait before a case until the machine uses fewer cores than this (0.25)")
    ap.add_argument("--quiet-wait", type=float, default=10,
                    help="longest wait for a quiet machine before each case, seconds (10)")
    ap.add_argument("--foreign-cores", type=float, default=0.25,
                    help="retry a case when others used more cores than this meanwhile (0.25)")
    ap.add_argument("--attempts", type=int, default=2, help="tries per contended case (2)")
    ap.add_argument("--timeout", type=float, default=600, help="per-case timeout, seconds")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS measurement")
    ap.add_argument("--rss", action="store_true", help="measure peak RSS even with --quick")
    ap.add_argument("--rss-size", default="64M", help="allreduce size for the RSS check (64M)")
    ap.add_argument("--from-raw", metavar="JSONL", nargs="+",
                    help="skip the runs; rebuild table/plot/json from previous raw.jsonl files "
                         "(several runs merge: the best pass of all of them counts)")
    a = ap.parse_args(argv)
    defaults = dict(procs="2 4 8", sizes="8,1M,16M,64M", passes=2,
                    collectives="allreduce,allgather,reduce_scatter,broadcast,barrier")
    if a.quick:
        defaults.update(procs="2", sizes="8,1M", collectives="allreduce", passes=1)
        a.no_rss = not a.rss
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.Ps = [int(x) for x in a.procs.replace(",", " ").split()]
    a.size_list = model.parse_sizes(a.sizes)
    a.coll_list = [c for c in a.collectives.split(",") if c]
    for c in a.coll_list:
        if c not in model.COLLECTIVES:
            ap.error("unknown collective %s (have %s)" % (c, ", ".join(model.COLLECTIVES)))
    a.lib_list = [x.strip() for x in a.libs.split(",") if x.strip()]
    a.gl_algos = [x for x in a.gloo_lite_algos.split(",") if x]
    a.gl_forced = [a.gl_algos[0] + "@" + t for t in a.gl_transports.split(",") if t] \
        if a.gl_algos else []
    a.mpi_list = [x for x in a.mpi_variants.replace(" ", ",").split(",") if x]
    for v in a.mpi_list:
        if v not in runner.MPI_VARIANT_OPTS:
            ap.error("unknown MPI variant %s" % v)
    a.gloo_map = model.gloo_algo_map(a.gloo_algos)
    a.rss_bytes = model.parse_size(a.rss_size)
    return a


def variants_for(cfg, coll):
    out = []
    if "gloo_lite" in cfg.lib_list:
        out += [("gloo_lite", v) for v in cfg.gl_algos + getattr(cfg, "gl_forced", [])]
    if "gloo" in cfg.lib_list:
        out += [("gloo", v) for v in cfg.gloo_map.get(coll, ())]
    if "mpi" in cfg.lib_list or "openmpi" in cfg.lib_list:
        out += [("openmpi", v) for v in cfg.mpi_list]
    return out


def _version(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def meta_info(cfg, argv):
    return dict(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        command="benchmark/compare " + " ".join(argv), host=platform.node(),
        cpus=os.cpu_count(), loadavg_start=open("/proc/loadavg").read().split()[:3],
        # HEAD when compare started; the binaries may be older (see bench_built)
        gloo_lite_rev=_version(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]),
        gloo_version=_version(["dpkg-query", "-W", "-f=${Version}", "libgloo-dev"]),
        openmpi_version=_version(["dpkg-query", "-W", "-f=${Version}", "openmpi-bin"]),
    )


def fmt_progress(rec):
    if rec.get("status") != "ok":
        return "%s:%s FAIL" % (rec["lib"], rec["variant"])
    bw = (" %.2fGB/s" % rec["busbw"]) if rec["busbw"] >= 0.01 else ""
    return "%s:%s %.1fus%s%s" % (rec["lib"], rec["variant"], rec["time_us"], bw,
                                 "" if rec.get("foreign_cores", 0) < 0.25
                                 else " (load %.2f)" % rec["foreign_cores"])


def run_sweep(cfg, run, raw_path):
    records = []
    cases = [(coll, P, size) for coll in cfg.coll_list for P in cfg.Ps
             for size in ([0] if coll == "barrier" else cfg.size_list)]
    total = sum(len([v for v in variants_for(cfg, c) if run.available(v[0], c)])
                for c, _, _ in cases) * cfg.passes
    t0 = time.monotonic()
    with open(raw_path, "a") as raw:
        try:
            _sweep(cfg, run, raw, records, cases, total, t0)
        except KeyboardInterrupt:
            runner.kill_active()
            runner.log("compare: interrupted; reporting the %d records so far" % len(records))
            cfg.interrupted = True
    return records


def _sweep(cfg, run, raw, records, cases, total, t0):
    done = 0
    for pass_no in range(1, cfg.passes + 1):
        for coll, P, size in cases:
            vs = [v for v in variants_for(cfg, coll) if run.available(v[0], coll)]
            line = []
            for lib, variant in vs:
                for rec in run.run_case(lib, variant, coll, P, size, pass_no):
                    records.append(rec)
                    raw.write(json.dumps(rec) + "\n")
                    line.append(fmt_progress(rec))
                raw.flush()
                done += 1
            el = time.monotonic() - t0
            runner.log("[pass %d/%d %d/%d %.0fs, ~%.0fs left] %s P=%d %s: %s" % (
                pass_no, cfg.passes, done, total, el,
                el / max(done, 1) * (total - done), coll, P, model.format_size(size),
                " | ".join(line)))


# User buffers each benchmark holds for an allreduce (from their sources): gloo_lite_bench keeps an
# input and an output buffer (it times out-of-place and in-place rows), the anchors' gloo_bench
# runs in place on one buffer, mpi_bench out of place on a send and a receive buffer.
USER_BUFFERS = {"gloo_lite": 2, "gloo": 1, "openmpi": 2}


def run_rss(cfg, run, best):
    """Peak RSS per rank of an rss_bytes allreduce: gloo_lite auto, the fastest Gloo algorithm at
    that size (else halving_doubling) and Open MPI TCP, at every P."""
    out = []
    for P in cfg.Ps:
        plan = []
        if run.available("gloo_lite", "allreduce"):
            plan.append(("gloo_lite", cfg.gl_algos[0]))
        if run.available("gloo", "allreduce") and "gloo" in cfg.lib_list:
            g = [r for r in best if r["lib"] == "gloo" and r["coll"] == "allreduce"
                 and r["P"] == P and r["size"] == cfg.rss_bytes and r.get("status") == "ok"]
            plan.append(("gloo", min(g, key=lambda r: r["time_us"])["variant"] if g
                         else "halving_doubling"))
        if run.available("openmpi", "allreduce") and "ob1_tcp" in cfg.mpi_list:
            plan.append(("openmpi", "ob1_tcp"))
        for lib, variant in plan:
            runner.wait_quiet(cfg.quiet_cores, cfg.quiet_wait)
            vals = run.peak_rss(lib, variant, P, cfg.rss_bytes)
            k = USER_BUFFERS[lib]
            m = dict(lib=lib, variant=variant, P=P, buffer_bytes=cfg.rss_bytes, user_buffers=k)
            if vals:
                # the ratio the target means: one user buffer plus everything that is not the
                # benchmark's own buffers (library memory, process), over one buffer
                extra = max(vals) * 1024.0 - k * cfg.rss_bytes
                m.update(max_kb=max(vals), min_kb=min(vals), ranks=len(vals),
                         raw_ratio=max(vals) * 1024.0 / cfg.rss_bytes, extra_bytes=extra,
                         ratio=1.0 + extra / cfg.rss_bytes)
            runner.log("  rss %s:%s P=%d %s" % (lib, variant, P,
                                               "%.1f MiB" % (m["max_kb"] / 1024.0)
                                               if vals else "FAILED"))
            out.append(m)
    return out


def make_plot(best, png, title):
    try:
        import matplotlib  # noqa: F401
        from . import plot
        plot.draw(best, png, title)
        return True
    except ImportError:
        pass
    sys_py = "/usr/bin/python3"
    if os.path.realpath(sys_py) == os.path.realpath(sys.executable) or not os.access(sys_py,
                                                                                     os.X_OK):
        runner.log("compare: --plot needs matplotlib (scripts/install-bench-deps.sh installs "
                   "python3-matplotlib)")
        return False
    fd, tmp = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(dict(records=best, title=title), fh)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    p = subprocess.run([sys_py, "-m", "compare_lib.plot", tmp, png], env=env)
    os.unlink(tmp)
    if p.returncode != 0:
        runner.log("compare: plotting with %s failed (is python3-matplotlib installed? "
                   "scripts/install-bench-deps.sh)" % sys_py)
    return p.returncode == 0


def render_all(meta, rows, summary, rss):
    parts = ["gloo_lite vs anchors, %s, host %s (%s CPUs), load at start %s" % (
        meta.get("date"), meta.get("host"), meta.get("cpus"),
        " ".join(meta.get("loadavg_start") or [])),
        "command: %s" % meta.get("command"), "",
        report.render_text(rows), "", report.render_legend(), "", report.render_summary(summary)]
    a = report.render_auto(rows)
    if a:
        parts += ["", a]
    r = report.render_rss(rss)
    if r:
        parts += ["", r]
    return "\n".join(parts) + "\n"


def main(argv=None):
    try:
        return _main(argv)
    except KeyboardInterrupt:
        runner.kill_active()
        runner.log("compare: interrupted")
        return 130


def _main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cfg = parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    if cfg.self_test:
        from . import selftest
        return selftest.main()

    scratch = os.path.abspath(cfg.out) if cfg.out else tempfile.mkdtemp(
        prefix="gloo_lite_compare.%s." % time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.join(scratch, "runs"), exist_ok=True)
    meta = meta_info(cfg, argv)
    rss = []
    if cfg.from_raw:
        records = []
        for path in cfg.from_raw:
            with open(path) as fh:
                records += [model.Record(json.loads(ln)) for ln in fh if ln.strip()]
        prev = os.path.join(os.path.dirname(os.path.abspath(cfg.from_raw[0])), "results.json")
        if os.path.exists(prev):
            with open(prev) as fh:
                old = json.load(fh)
            meta = old.get("meta", meta)
            rss = old.get("rss", [])
        if len(cfg.from_raw) > 1:
            meta["merged_from"] = [os.path.abspath(p) for p in cfg.from_raw]
    else:
        build = runner.find_build(REPO, cfg.build)
        if "gloo_lite" in cfg.lib_list and build is None:
            runner.log("compare: no gloo_lite build with benchmark/gloo_lite_bench and "
                       "tools/gloo_lite_run (give --build DIR; cmake --build DIR --target "
                       "gloo_lite_bench gloo_lite_run); running the anchors only")
        anchors = os.path.abspath(cfg.anchors)
        want_gloo = "gloo" in cfg.lib_list
        want_mpi = "mpi" in cfg.lib_list or "openmpi" in cfg.lib_list
        bins = {}
        if want_gloo or want_mpi:
            if not os.path.isdir(anchors):
                runner.log("compare: no anchors at %s (--anchors DIR); gloo_lite only" % anchors)
            else:
                bins = runner.prepare_anchors(anchors, scratch, want_gloo, want_mpi)
                if want_mpi and not shutil.which("mpirun"):
                    bins.pop("mpi_bench", None)
                    bins.pop("mpi_barrier", None)
        meta["build"] = build
        if build:
            meta["bench_built"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(
                os.path.join(build, "benchmark", "gloo_lite_bench"))))
            build = runner.snapshot_build(build, scratch)
        run = runner.Runner(cfg, scratch, bins, build)
        meta["gloo_lite_iters"] = ("bench --size-time %g" % cfg.min_time
                                   if run.gl_auto_iters and cfg.gl_iters == "auto"
                                   else "-n from compare")
        runner.log("compare: scratch %s; gloo_lite %s; anchors built: %s" % (
            scratch, build or "MISSING", ", ".join(sorted(bins)) or "none"))
        raw_path = os.path.join(scratch, "raw.jsonl")
        records = run_sweep(cfg, run, raw_path)
        if not cfg.no_rss and not getattr(cfg, "interrupted", False):
            try:
                rss = run_rss(cfg, run, model.best_of_passes(records))
            except KeyboardInterrupt:
                runner.kill_active()
                cfg.interrupted = True
        meta["interrupted"] = bool(getattr(cfg, "interrupted", False))
        meta["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
        fc = [r.get("foreign_cores") or 0 for r in records if r.get("status") == "ok"]
        meta["foreign_cores_mean"] = round(sum(fc) / len(fc), 3) if fc else None
        meta["raw"] = raw_path

    best = model.best_of_passes(records)
    rows = report.build_rows(best, cfg.gl_algos[0])
    summary = report.summarize(rows, rss)
    text = render_all(meta, rows, summary, rss)
    sys.stdout.write(text)
    with open(os.path.join(scratch, "table.txt"), "w") as fh:
        fh.write(text)
    md = report.render_markdown(rows)
    with open(os.path.join(scratch, "table.md"), "w") as fh:
        fh.write(md + "\n")
    if cfg.markdown:
        with open(cfg.markdown, "w") as fh:
            fh.write(md + "\n")
    result = dict(meta=meta, config={k: v for k, v in vars(cfg).items()
                                     if isinstance(v, (str, int, float, bool, list, type(None)))},
                  records=best, rows=[_row_json(r) for r in rows], summary=summary, rss=rss)
    with open(os.path.join(scratch, "results.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    if cfg.json:
        with open(cfg.json, "w") as fh:
            json.dump(result, fh, indent=1)
    if cfg.plot:
        title = "gloo_lite vs Gloo and Open MPI, %s, %s CPUs" % (meta.get("date"),
                                                                meta.get("cpus"))
        if make_plot(best, cfg.plot, title):
            runner.log("compare: plot written to %s" % cfg.plot)
    runner.log("compare: results in %s (table.txt, table.md, results.json, raw.jsonl)" % scratch)
    failed = [r for r in best if r.get("status") != "ok" and r["lib"] == "gloo_lite"]
    wrong = [r for r in best if r.get("wrong")]
    return 1 if failed or wrong or not records else 0


def _sigterm(signum, frame):
    raise KeyboardInterrupt


def _row_json(row):
    out = {}
    for k, v in row.items():
        if isinstance(v, dict) and k in ("gloo_all", "gl_explicit"):
            out[k] = {a: {"time_us": r.get("time_us"), "busbw": r.get("busbw"),
                          "status": r.get("status")} for a, r in v.items()}
        elif isinstance(v, dict) and "time_us" in v:
            out[k] = {x: v.get(x) for x in ("lib", "variant", "time_us", "busbw", "bytes",
                                              "chosen", "inplace", "wrong", "status",
                                              "foreign_cores")}
        else:
            out[k] = v
    return out
