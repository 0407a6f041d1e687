#!/usr/bin/env python3
"""benchmark/torch_compare.py: gloo_lite's torch.distributed backend against torch's own gloo,
both in the same processes on the same tensors, interleaved: all_reduce,
all_gather_into_tensor, reduce_scatter_tensor and broadcast over a size sweep at several P
(nccl-tests busbw), and the step time of DDP training a ~10M-parameter MLP. Prints the times,
busbw, the ratios gloo_lite / gloo with issue 11's targets, and writes CSV and JSON.

    benchmark/torch_compare.py [-p "2 4 8"] [-b 8] [-e 64M] [-f 4] [--sizes 8,1M,...]
                               [--collectives allreduce,allgather,reduce_scatter,broadcast]
                               [--reps 3] [--min-time 0.3] [--ddp-steps 20] [--no-ddp]
                               [--python PY] [--gloo-lite-path DIR] [--out DIR]
    benchmark/torch_compare.py --quick                 # smoke: P=2, tiny sizes, a short DDP
    benchmark/torch_compare.py --from-json DIR/results.json   # retable a finished run

Each P is one torchrun launch (python -m torch.distributed.run --standalone) of
torch_compare_worker.py. Needs torch and gloo_lite's torch backend importable by --python
(default: this interpreter, else the repository's .venv) -- from an install, or from a build's
python folder (--gloo-lite-path; default: the first build*/python holding the backend). Exits
77 when they are not (ctest's skip), 1 when a case failed, a result was wrong or a row is
missing. A manual comparison (minutes; not in CI beyond --quick). See docs/benchmarking.md.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "torch_compare_worker.py")
sys.path.insert(0, HERE)

from compare_lib import model  # noqa: E402
from compare_lib.runner import loadavg1  # noqa: E402
from compare_lib.side_by_side import (add_common_options, best, busbw,  # noqa: E402
                                      check_collectives, fmt, fmt_us, importable, launch,
                                      logger, markdown, python_env)

COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast")
BACKENDS = ("gloo_lite", "gloo")
SKIP = 77  # ctest's SKIP_RETURN_CODE
# Issue 11's targets: busbw >= 1.5x gloo from 1 to 64 MiB, 8 B latency <= 0.3x gloo.
LATENCY_SIZE = 8
LATENCY_TARGET = 0.3
BANDWIDTH_RANGE = (1 << 20, 64 << 20)
BANDWIDTH_TARGET = 1.5
QUICK = {"ranks": "2", "sizes": "8,4K,256K", "reps": 2, "min_time": 0.02, "warmup": 2,
         "ddp_steps": 4, "ddp_block": 2, "ddp_width": 128, "ddp_batch": 8}


log = logger("torch_compare")


def sweep(first, last, factor):
    """first, then last / factor^k down to above first, ascending: anchored at the end so that
    -b 8 -e 64M -f 4 gives 8, 16, 64, ..., 1M, 4M, 16M, 64M (the sizes compare uses are in)."""
    sizes = []
    size = last
    while size > first:
        sizes.append(size)
        size //= factor
    return [first] + sizes[::-1]


def loadavg():
    with open("/proc/loadavg") as file:
        return [float(x) for x in file.read().split()[:3]]


def find_python(wanted):
    """--python, or the first of this interpreter and the repository's .venv that imports
    torch.distributed."""
    if wanted:
        return wanted
    for python in (sys.executable, os.path.join(REPO, ".venv", "bin", "python3")):
        if os.access(python, os.X_OK) and subprocess.run(
                [python, "-c", "import torch.distributed"], capture_output=True).returncode == 0:
            return python
    return sys.executable


def find_module_path(wanted):
    """--gloo-lite-path, or the first build*/python folder holding the torch backend (used only
    when the interpreter does not import gloo_lite.torch by itself)."""
    if wanted is not None:
        return wanted
    for folder in [os.path.join(REPO, d) for d in ("build-bench", "build")] + \
            sorted(glob.glob(os.path.join(REPO, "build*"))):
        if glob.glob(os.path.join(folder, "python", "gloo_lite", "_torch*.so")):
            return os.path.join(folder, "python")
    return ""


def worker_cmd(P, args):
    cmd = [args.python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           str(P), WORKER, "--collectives", ",".join(args.collectives), "--reps",
           str(args.reps), "--min-time", str(args.min_time), "--warmup", str(args.warmup),
           "--timeout", str(args.timeout)]
    if args.sizes:
        cmd += ["--sizes", ",".join(str(s) for s in args.sizes)]
    if args.ddp_steps > 0:
        cmd += ["--ddp-steps", str(args.ddp_steps), "--ddp-block", str(args.ddp_block),
                "--ddp-width", str(args.ddp_width), "--ddp-batch", str(args.ddp_batch)]
    return cmd


def ratio(gl, gloo, size):
    """('t', time ratio) for the latency size, ('bw', busbw ratio) otherwise; both
    gloo_lite / gloo (the same bytes, so bw is the inverse of t)."""
    if size == LATENCY_SIZE:
        return "t", gl["time_us"] / gloo["time_us"]
    return "bw", gloo["time_us"] / gl["time_us"]


def verdict(kind, value, size):
    if kind == "t":
        return "ok" if value <= LATENCY_TARGET else "MISS"
    if BANDWIDTH_RANGE[0] <= size <= BANDWIDTH_RANGE[1]:
        return "ok" if value >= BANDWIDTH_TARGET else "MISS"
    return ""


def gbps(rec):
    value = busbw(rec)
    return "%.3f" % value if value >= 0.01 else "%.2g" % value


def collective_report(table, Ps, sizes, collectives):
    """The per-case table, the targets' summary and the list of misses."""
    rows, summary, misses, wrong = [], [], [], []
    for coll in collectives:
        for P in Ps:
            worst = None
            latency = None
            for size in sizes:
                recs = {b: table.get((b, coll, P, size)) for b in BACKENDS}
                gl, gloo = recs["gloo_lite"], recs["gloo"]
                for b, rec in recs.items():
                    if rec and rec["wrong"]:
                        wrong.append("%s %s P=%d %s: %d wrong" % (
                            b, coll, P, model.format_size(size), rec["wrong"]))
                row = [coll, P, model.format_size(size)]
                for rec in (gl, gloo):
                    row += [fmt_us(rec["time_us"]) if rec else "-",
                            gbps(rec) if rec and size > LATENCY_SIZE else "-"]
                if gl and gloo:
                    kind, value = ratio(gl, gloo, size)
                    mark = verdict(kind, value, size)
                    row += ["%s %.2f" % (kind, value), mark]
                    if mark == "MISS":
                        need = (value / LATENCY_TARGET if kind == "t"
                                else BANDWIDTH_TARGET / value)
                        misses.append("%s P=%d %s: %s %.2f (%s needs %.2fx)" % (
                            coll, P, model.format_size(size), kind, value,
                            "time" if kind == "t" else "busbw", need))
                    if kind == "t":
                        latency = value
                    elif mark and (worst is None or value < worst[0]):
                        worst = (value, size)
                else:
                    row += ["-", ""]
                noise = [r["noise"] for r in recs.values() if r and r.get("noise") is not None]
                row.append(fmt(max(noise)) if noise else "-")
                rows.append(row)
            summary.append([
                coll, P,
                "-" if latency is None else "%.2f %s" % (latency, verdict("t", latency, 8)),
                "-" if worst is None else "%.2f at %s %s" % (
                    worst[0], model.format_size(worst[1]), verdict("bw", worst[0], worst[1]))])
    headings = ["collective", "P", "size", "gloo_lite us", "GB/s", "gloo us", "GB/s",
                "GL/gloo", "target", "noise"]
    text = ("Time per call (best of the repetitions; each the max over ranks of the mean), busbw "
            "in GB/s (1e9,\nnccl-tests factors). GL/gloo: 't' = gloo_lite time / gloo time "
            "(8 B, lower is better),\n'bw' = gloo_lite busbw / gloo busbw (higher is better). "
            "Targets: t <= %.1f at 8 B, bw >= %.1f\nfrom 1 to 64 MiB. noise: cores other "
            "processes used during the case.\n\n" % (LATENCY_TARGET, BANDWIDTH_TARGET)
            + markdown(headings, rows))
    text += ("\n\nTargets by collective and P: the 8 B time ratio and the lowest busbw ratio "
             "from 1 to 64 MiB.\n\n" + markdown(
                 ["collective", "P", "8 B t (<= %.1f)" % LATENCY_TARGET,
                  "min bw 1-64M (>= %.1f)" % BANDWIDTH_TARGET], summary))
    if misses:
        text += "\n\nMissed targets:\n" + "\n".join("  " + m for m in misses)
    return text, wrong


def ddp_report(ddp):
    """DDP step time per P: each backend's median, the model without DDP, and the exposed
    communication (DDP step minus the local step)."""
    rows = []
    for P in sorted({r["P"] for r in ddp}):
        recs = {r["lib"]: r for r in ddp if r["P"] == P}
        gl, gloo, local = recs.get("gloo_lite"), recs.get("gloo"), recs.get("local")
        if not (gl and gloo):
            continue
        row = [P, "%.1fM" % (gl["params"] / 1e6), "%.1f" % gl["median_ms"],
               "%.1f" % gloo["median_ms"], "%.2f" % (gl["median_ms"] / gloo["median_ms"]),
               "ok" if gl["median_ms"] < gloo["median_ms"] else "MISS"]
        if local:
            row += ["%.1f" % local["median_ms"], "%.1f" % (gl["median_ms"] - local["median_ms"]),
                    "%.1f" % (gloo["median_ms"] - local["median_ms"])]
        else:
            row += ["-", "-", "-"]
        row += ["%.3g" % gl["max_param_diff"],
                "%.3f -> %.3f" % (gl["loss_first"], gl["loss_last"]),
                fmt(max(r["noise"] for r in recs.values()))]
        rows.append(row)
    headings = ["P", "params", "gloo_lite ms", "gloo ms", "GL/gloo", "target", "no DDP ms",
                "GL comm ms", "gloo comm ms", "param diff", "loss (GL)", "noise"]
    return ("DDP step time (median over steps of the slowest rank; forward, backward with DDP's "
            "bucketed\nallreduce, SGD step). no DDP: the same model and batches without DDP; "
            "comm = DDP step - no DDP\n(the communication the backward pass did not hide). "
            "param diff: the largest difference between\nthe two DDP copies' parameters at the "
            "end (0 expected at P = 2).\n\n" + markdown(headings, rows))


def bad_ddp(ddp):
    """DDP copies that disagree: bitwise at P = 2, within 1e-4 otherwise (sums in another
    order over a few steps of SGD)."""
    out = []
    for r in ddp:
        if r["lib"] == "gloo_lite":
            limit = 0.0 if r["P"] == 2 else 1e-4
            if r["max_param_diff"] > limit:
                out.append("DDP P=%d: the gloo_lite and gloo copies differ by %.3g (limit %g)"
                           % (r["P"], r["max_param_diff"], limit))
    return out


def missing_rows(records, ddp, args):
    have = {(r["lib"], r["coll"], r["P"], r["size"]) for r in records}
    out = ["%s %s P=%d %s" % (b, c, P, model.format_size(s)) for c in args.collectives
           for P in args.Ps for s in args.sizes for b in BACKENDS if (b, c, P, s) not in have]
    if args.ddp_steps > 0:
        have_ddp = {(r["lib"], r["P"]) for r in ddp}
        out += ["DDP %s P=%d" % (b, P) for P in args.Ps for b in BACKENDS + ("local",)
                if (b, P) not in have_ddp]
    return out


def write_outputs(out, run, text):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as file:
        json.dump(run, file, indent=1)
    with open(os.path.join(out, "table.md"), "w") as file:
        file.write(text)
    with open(os.path.join(out, "collectives.csv"), "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["collective", "P", "size", "bytes", "backend", "time_us", "median_us",
                         "algbw_GBps", "busbw_GBps", "iterations", "wrong", "noise"])
        for r in run["records"]:
            rec = model.make_record(r["lib"], r["lib"], r["coll"], r["P"], r["size"],
                                    r["bytes"], r["time_us"])
            writer.writerow([r["coll"], r["P"], r["size"], r["bytes"], r["lib"],
                             "%.3f" % r["time_us"], "%.3f" % r["median_us"],
                             "%.5f" % rec.algbw, "%.5f" % rec.busbw, r["iterations"],
                             r["wrong"], "%.3f" % r["noise"]])
    with open(os.path.join(out, "ddp.csv"), "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["P", "backend", "params", "batch", "steps", "median_ms", "mean_ms",
                         "min_ms", "loss_first", "loss_last", "max_param_diff", "noise"])
        for r in run["ddp"]:
            writer.writerow([r["P"], r["lib"], r["params"], r["batch"], r["steps"],
                             "%.3f" % r["median_ms"], "%.3f" % r["mean_ms"],
                             "%.3f" % r["min_ms"], "%.5f" % r["loss_first"],
                             "%.5f" % r["loss_last"], r["max_param_diff"], "%.3f" % r["noise"]])


def render(run, args):
    table = best([dict(r, variant=r["lib"]) for r in run["records"]])
    meta = run["meta"]
    header = ("torch_compare: torch %s, gloo_lite %s, %s thread(s) per rank; load average "
              "%s before, %s after\n\n" % (
                  meta.get("torch", "?"), meta.get("gloo_lite", "?"), meta.get("threads", "?"),
                  " ".join("%.2f" % x for x in run["load_before"]),
                  " ".join("%.2f" % x for x in run["load_after"])))
    parts, wrong = [], []
    if run["records"]:
        sizes = sorted({r["size"] for r in run["records"]})
        collectives = [c for c in COLLECTIVES if any(r["coll"] == c for r in run["records"])]
        text, wrong = collective_report(table, args.Ps, sizes, collectives)
        parts.append(text)
    if run["ddp"]:
        parts.append(ddp_report(run["ddp"]))
    problems = wrong + bad_ddp(run["ddp"])
    if problems:
        parts.append("WRONG RESULTS:\n" + "\n".join(problems))
    return header + "\n\n".join(parts) + "\n", bool(problems)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See docs/benchmarking.md (torch.distributed side by side).")
    add_common_options(
        parser, COLLECTIVES, sweep_help=", counted down from the largest (default %(default)s)",
        python_help="the ranks' interpreter (default: this one if it imports torch, else "
                    ".venv/bin/python3)",
        path_help="prepended to the ranks' PYTHONPATH (default: a build's python folder with "
                  "the backend; '' for none)",
        from_json=("F", "run nothing: the tables of a run's results.json"))
    parser.set_defaults(stepfactor=4, min_time=0.3)
    parser.add_argument("--sizes", help="an explicit comma list instead of -b/-e/-f")
    parser.add_argument("--reps", type=int, default=3,
                        help="alternating repetitions per backend and case (default 3)")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up calls (fewer from 1 MiB)")
    parser.add_argument("--ddp-steps", type=int, default=20, help="timed DDP steps per backend")
    parser.add_argument("--ddp-block", type=int, default=5, help="steps per alternation")
    parser.add_argument("--ddp-width", type=int, default=2048,
                        help="the MLP's hidden width (2048: 10.5M parameters)")
    parser.add_argument("--ddp-batch", type=int, default=32, help="samples per rank and step")
    parser.add_argument("--no-ddp", action="store_true", help="collectives only")
    parser.add_argument("--no-collectives", action="store_true", help="DDP only")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: P=2, sizes 8,4K,256K, 2 short repetitions, a small DDP")
    parser.add_argument("--out", help="write results.json, collectives.csv, ddp.csv and "
                                      "table.md here (default: a new /tmp/torch_compare.*)")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
        args.quiet_wait = min(args.quiet_wait, 2)
    args.Ps = [int(p) for p in args.ranks.replace(",", " ").split()]
    if args.sizes:
        args.sizes = model.parse_sizes(args.sizes)
    else:
        args.sizes = sweep(model.parse_size(args.minbytes), model.parse_size(args.maxbytes),
                           args.stepfactor)
    args.collectives = [c for c in args.collectives.split(",") if c]
    check_collectives(parser, args.collectives, COLLECTIVES)
    if args.no_collectives:
        args.sizes = []
    if args.no_ddp:
        args.ddp_steps = 0
    return args


def run_all(args):
    """Every launch; returns the run (as results.json holds it) and whether a launch failed,
    or None when the backend cannot be imported."""
    args.scratch = tempfile.mkdtemp(prefix="torch_compare.")
    args.python = find_python(args.python)
    path = find_module_path(args.gloo_lite_path)
    env = python_env(path)
    # From the scratch folder: in the repository's root `import gloo_lite` finds the sources.
    ok, why = importable(args.python, "gloo_lite.torch", "NAME", env, args.scratch)
    if not ok:
        log("skipped: %s cannot import gloo_lite.torch (%s); build the backend "
            "(scripts/install-torch.sh, then cmake) or pass --gloo-lite-path" % (args.python,
                                                                                 why[0]))
        return None, False
    run = {"meta": {}, "records": [], "ddp": [], "load_before": loadavg(),
           "args": {"Ps": args.Ps, "sizes": args.sizes, "collectives": args.collectives,
                    "reps": args.reps, "min_time": args.min_time, "ddp_steps": args.ddp_steps,
                    "ddp_width": args.ddp_width, "ddp_batch": args.ddp_batch,
                    "python": args.python, "gloo_lite_path": path}}
    log("P %s, sizes %s, %s; DDP %s; load average %.2f" % (
        args.ranks, ",".join(model.format_size(s) for s in args.sizes),
        ",".join(args.collectives), "%d steps" % args.ddp_steps if args.ddp_steps else "off",
        loadavg1()))
    failed = False
    for P in args.Ps:
        log("P=%d" % P)
        # The launch's own timeout past the ranks' (--timeout), so that they report theirs.
        records, meta, error, foreign = launch(worker_cmd(P, args), env, args, log,
                                               timeout=args.timeout + 60, stderr_tail=1500)
        records = [dict(r, launch_foreign=foreign) for r in records]
        run["meta"] = meta or run["meta"]
        run["records"] += [r for r in records if r["kind"] == "collective"]
        run["ddp"] += [r for r in records if r["kind"] == "ddp"]
        failed = failed or error is not None
    run["load_after"] = loadavg()
    return run, failed


def main(argv=None):
    args = parse_args(argv)
    failed = False
    if args.from_json:
        with open(args.from_json) as file:
            run = json.load(file)
        args.Ps = sorted({r["P"] for r in run["records"] + run["ddp"]})
    else:
        run, failed = run_all(args)
        if run is None:
            return SKIP
    text, wrong = render(run, args)
    print(text)
    if not args.from_json:
        missing = missing_rows(run["records"], run["ddp"], args)
        if missing:
            log("missing rows: " + ", ".join(missing))
            failed = True
        out = args.out or tempfile.mkdtemp(prefix="torch_compare_out.")
        write_outputs(out, run, text)
        log("wrote %s/{results.json,collectives.csv,ddp.csv,table.md}" % out)
    return 1 if failed or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
