#!/usr/bin/env python3
"""benchmark/python_compare.py: gloo_lite's Python module against mpi4py (Open MPI over TCP and
over shared memory) on numpy float32 arrays: allreduce, allgather and broadcast over a size
sweep at several P, with the same timing loop on both sides (python_compare_worker.py). Prints
the times, the ratios mpi4py / gloo_lite, the Python-level overhead per call at 8 B (the module's
time minus gloo_lite_bench's C++ time in the same run) and the bandwidth at 16 MiB.

    benchmark/python_compare.py [-p "2 4 8"] [-b 8] [-e 64M] [-f 8] [--passes 1]
                                [--libs gloo_lite,mpi4py_tcp,mpi4py_shm] [--python PY]
                                [--gloo-lite-path DIR] [--build DIR] [--json F] [--markdown F]
    benchmark/python_compare.py --from-json run1.json,run2.json   # retable, merged

A manual comparison (minutes; not in CI). Needs scripts/install-compare-deps.sh (Open MPI,
numpy, mpi4py) and, for the gloo_lite columns, the Python module importable by --python (or
from --gloo-lite-path); without it the mpi4py columns still run. See docs/benchmarking.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "python_compare_worker.py")
sys.path.insert(0, HERE)

from compare_lib import model  # noqa: E402
from compare_lib.runner import MPI_COMMON, MPI_VARIANT_OPTS, Runner, find_build, loadavg1  # noqa: E402
from compare_lib.side_by_side import (add_common_options, best, busbw,  # noqa: E402
                                      check_collectives, fmt, fmt_us, importable, launch,
                                      logger, markdown, python_env)

COLLECTIVES = ("allreduce", "allgather", "broadcast")
# label -> (worker library, what the import check asks for, how it is launched)
LIBS = {
    "gloo_lite": ("gloo_lite", "init", "gloo_lite_run"),
    "mpi4py_tcp": ("mpi4py", "__version__", "ob1_tcp"),
    "mpi4py_shm": ("mpi4py", "__version__", "ob1_vader"),
}
TITLES = {"gloo_lite": "gloo_lite", "mpi4py_tcp": "mpi4py TCP", "mpi4py_shm": "mpi4py shm"}
# gloo_lite_bench's form that matches the module's call: allreduce and broadcast in place,
# allgather out of place (a block into a separate (P, block) array).
BENCH_FORM = {"allreduce": "inplace", "broadcast": "inplace", "allgather": "oop"}
OVERHEAD_SIZE = 8
BANDWIDTH_SIZE = 16 << 20


log = logger("python_compare")


def sweep(first, last, factor):
    """first, first*factor, ... up to last, and last itself: -b 8 -e 64M -f 8 gives 8 B ... 16 MiB
    (8 * 8^7) and 64 MiB."""
    sizes = []
    size = first
    while size <= last:
        sizes.append(size)
        size *= factor
    if not sizes or sizes[-1] != last:
        sizes.append(last)
    return sizes


def worker_cmd(label, P, sizes, args, build):
    lib, _, how = LIBS[label]
    worker = [args.python, WORKER, lib, "--sizes", ",".join(str(s) for s in sizes),
              "--collectives", args.collectives, "--min-time", str(args.min_time),
              "--variant", label]
    if how == "gloo_lite_run":
        return [os.path.join(build, "tools", "gloo_lite_run"), "-n", str(P), "--timeout",
                str(args.timeout), "--"] + worker
    return ["mpirun"] + MPI_COMMON + MPI_VARIANT_OPTS[how] + ["-np", str(P)] + worker


def bench_reference(build, P, collectives, args):
    """gloo_lite_bench's C++ time at 8 B for each collective, in the form the module calls."""
    out = {}
    for coll in collectives:
        size = str(Runner.gl_bytes(coll, P, OVERHEAD_SIZE))
        json_path = os.path.join(args.scratch, "bench_%s_P%d.json" % (coll, P))
        cmd = [os.path.join(build, "tools", "gloo_lite_run"), "-n", str(P), "--timeout",
               str(args.timeout), "--", os.path.join(build, "benchmark", "gloo_lite_bench"),
               "--collective", coll, "-b", size, "-e", size, "-w", "20",
               "--size-time", str(args.min_time), "--json", json_path]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            log("gloo_lite_bench %s P=%d failed: %s" % (coll, P, result.stdout[-400:]))
            continue
        with open(json_path) as file:
            for rec in model.parse_gloo_lite_json(file.read(), size=OVERHEAD_SIZE,
                                                  mode=BENCH_FORM[coll]):
                out[(coll, P)] = rec["time_us"]
    return out


def report(table, reference, labels, Ps, sizes, collectives):
    mpis = [label for label in labels if label != "gloo_lite"]
    parts = []
    # 1. Every case: time per call, busbw from 64 KiB on, and mpi4py / gloo_lite time ratios.
    headings = ["collective", "P", "size"]
    for label in labels:
        headings += [TITLES[label] + " us", "GB/s"]
    if "gloo_lite" in labels:
        headings += [TITLES[m] + " / GL" for m in mpis]
    headings.append("noise")
    rows = []
    wrong = []
    for coll in collectives:
        for P in Ps:
            for size in sizes:
                row = [coll, P, model.format_size(size)]
                gl = table.get(("gloo_lite", coll, P, size))
                for label in labels:
                    rec = table.get((label, coll, P, size))
                    if rec and rec["wrong"]:
                        wrong.append("%s %s P=%d %s: %d wrong" % (label, coll, P, size,
                                                                  rec["wrong"]))
                    row.append(fmt_us(rec["time_us"]) if rec else "-")
                    row.append(fmt(busbw(rec), "%.3f") if rec and size >= 64 << 10 else "-")
                if "gloo_lite" in labels:
                    for m in mpis:
                        rec = table.get((m, coll, P, size))
                        row.append(fmt(rec["time_us"] / gl["time_us"]) if rec and gl else "-")
                noise = [r.get("foreign") for r in (table.get((label, coll, P, size))
                                                    for label in labels) if r]
                noise = [n for n in noise if n is not None]
                row.append(fmt(max(noise)) if noise else "-")
                rows.append(row)
    parts.append("Time per call (max over ranks of the mean), busbw in GB/s (1e9) from 64 KiB;\n"
                 "ratios: mpi4py time / gloo_lite time (above 1: gloo_lite is faster); noise: "
                 "the most\ncores other processes used during the row's launches.\n\n"
                 + markdown(headings, rows))
    # 2. Python-level overhead at 8 B.
    if "gloo_lite" in labels:
        headings = ["collective", "P", "module us", "gloo_lite_bench us", "overhead us"]
        headings += [TITLES[m] + " us" for m in mpis]
        rows = []
        for coll in collectives:
            for P in Ps:
                gl = table.get(("gloo_lite", coll, P, OVERHEAD_SIZE))
                cpp = reference.get((coll, P))
                overhead = gl["time_us"] - cpp if gl and cpp is not None else None
                row = [coll, P, fmt_us(gl["time_us"] if gl else None), fmt_us(cpp),
                       fmt(overhead)]
                for m in mpis:
                    rec = table.get((m, coll, P, OVERHEAD_SIZE))
                    row.append(fmt_us(rec["time_us"] if rec else None))
                rows.append(row)
        parts.append("Python-level overhead per call at 8 B: the module's time minus "
                     "gloo_lite_bench's\n(C++, same run, allreduce/broadcast in place, allgather "
                     "out of place; allgather moves\nat least one float32 per rank).\n\n"
                     + markdown(headings, rows))
    # 3. Bandwidth at 16 MiB.
    if BANDWIDTH_SIZE in sizes:
        headings = ["collective", "P"] + [TITLES[label] + " GB/s" for label in labels]
        if "gloo_lite" in labels:
            headings += ["GL / " + TITLES[m] for m in mpis]
        rows = []
        for coll in collectives:
            for P in Ps:
                recs = {label: table.get((label, coll, P, BANDWIDTH_SIZE)) for label in labels}
                row = [coll, P] + [fmt(busbw(recs[label]), "%.3f") if recs[label] else "-"
                                   for label in labels]
                if "gloo_lite" in labels:
                    gl = recs["gloo_lite"]
                    for m in mpis:
                        row.append(fmt(busbw(gl) / busbw(recs[m])) if gl and recs[m] else "-")
                rows.append(row)
        parts.append("busbw at 16 MiB (GB/s, nccl-tests factors); GL / x above 1: gloo_lite "
                     "is faster.\n\n" + markdown(headings, rows))
    if wrong:
        parts.append("WRONG RESULTS:\n" + "\n".join(wrong))
    return "\n\n".join(parts) + "\n", bool(wrong)


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See docs/benchmarking.md (Python side by side).")
    add_common_options(
        parser, COLLECTIVES, sweep_help=" (default %(default)s); the largest size always runs",
        python_help="the interpreter of the ranks (default: this one)",
        path_help="prepended to PYTHONPATH for the ranks: where `import gloo_lite` finds the "
                  "module (e.g. a build's python folder)",
        from_json=("F[,F...]", "run nothing: the tables of earlier runs' --json files, merged"))
    parser.set_defaults(stepfactor=8, min_time=0.2, python=sys.executable, gloo_lite_path="")
    parser.add_argument("--libs", default=",".join(LIBS), help="default: " + ",".join(LIBS))
    parser.add_argument("--passes", type=int, default=1,
                        help="run everything this many times, keep the fastest (default 1)")
    parser.add_argument("--build", help="gloo_lite build holding tools/gloo_lite_run and "
                                        "benchmark/gloo_lite_bench (default: build-bench, build)")
    parser.add_argument("--json", help="write every record here")
    parser.add_argument("--markdown", help="write the tables here too")
    args = parser.parse_args()
    args.Ps = [int(p) for p in args.ranks.replace(",", " ").split()]
    args.sizes = sweep(model.parse_size(args.minbytes), model.parse_size(args.maxbytes),
                       args.stepfactor)
    args.labels = [label for label in args.libs.split(",") if label]
    for label in args.labels:
        if label not in LIBS:
            parser.error("unknown library %r; known: %s" % (label, ", ".join(LIBS)))
    check_collectives(parser, args.collectives.split(","), COLLECTIVES)
    return args


def run_all(args):
    """Every launch of every pass; returns (records, metas, reference, labels, failed)."""
    # gloo_lite_bench's JSON files; also the ranks' working directory (see importable).
    args.scratch = tempfile.mkdtemp(prefix="python_compare.")
    env = python_env(args.gloo_lite_path)
    build = find_build(REPO, args.build)
    labels = []
    for label in args.labels:
        lib, attribute, how = LIBS[label]
        ok, why = importable(args.python, lib, attribute, env, args.scratch)
        if not ok:
            log("skipping %s: %s cannot import numpy and %s (%s)" % (label, args.python, lib,
                                                                      why[0]))
        elif how == "gloo_lite_run" and not build:
            log("skipping %s: no build with tools/gloo_lite_run (--build)" % label)
        elif how != "gloo_lite_run" and not shutil.which("mpirun"):
            log("skipping %s: no mpirun (scripts/install-compare-deps.sh)" % label)
        else:
            labels.append(label)
    records, metas, reference, failed = [], {}, {}, False
    if not labels:
        return records, metas, reference, labels, failed
    log("sizes %s, P %s, %s; load average %.2f" % (
        ",".join(model.format_size(s) for s in args.sizes), args.ranks, ",".join(labels),
        loadavg1()))
    for pass_no in range(args.passes):
        for P in args.Ps:
            # The libraries back to back at each P, so that a noisy minute touches all of them.
            for label in labels:
                log("pass %d, P=%d, %s" % (pass_no + 1, P, label))
                recs, meta, error, foreign = launch(
                    worker_cmd(label, P, args.sizes, args, build), env, args, log,
                    timeout=args.timeout, stderr_tail=600)
                for rec in recs:
                    rec["foreign"] = foreign
                records += recs
                metas[label] = meta or metas.get(label)
                failed = failed or error is not None
                if label == "gloo_lite":
                    # Right after the module's run, so that both see the same machine.
                    for key, value in bench_reference(build, P, args.collectives.split(","),
                                                      args).items():
                        reference[key] = min(value, reference.get(key, value))
    return records, metas, reference, labels, failed


def load_runs(paths):
    """--from-json: the records of earlier runs' --json files, merged (the fastest pass of
    each case wins, as within one run)."""
    records, metas, reference = [], {}, {}
    for path in paths:
        with open(path) as file:
            run = json.load(file)
        records += run["records"]
        metas.update({k: v for k, v in run["meta"].items() if v})
        for ref in run["gloo_lite_bench_8B"]:
            key = (ref["coll"], ref["P"])
            reference[key] = min(ref["time_us"], reference.get(key, ref["time_us"]))
    labels = [label for label in LIBS if any(r["variant"] == label for r in records)]
    return records, metas, reference, labels


def main():
    args = parse_args()
    failed = False
    if args.from_json:
        records, metas, reference, labels = load_runs(args.from_json.split(","))
        args.Ps = sorted({r["P"] for r in records})
        args.sizes = sorted({r["size"] for r in records})
    else:
        records, metas, reference, labels, failed = run_all(args)
    if not labels:
        log("nothing to run (scripts/install-compare-deps.sh installs numpy and mpi4py)")
        return 2
    collectives = [c for c in args.collectives.split(",")
                   if any(r["coll"] == c for r in records)]
    text, wrong = report(best(records), reference, labels, args.Ps, args.sizes, collectives)
    header = "python_compare: %s; load average at the end %.2f\n\n" % (
        "; ".join("%s: %s" % (TITLES[k], (v or {}).get("version", "?")) for k, v in metas.items()),
        loadavg1())
    print(header + text)
    if args.markdown:
        with open(args.markdown, "w") as file:
            file.write(header + text)
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"meta": metas, "records": records,
                       "gloo_lite_bench_8B": [{"coll": c, "P": P, "time_us": t}
                                              for (c, P), t in reference.items()]},
                      file, indent=1)
    return 1 if failed or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
