#!/usr/bin/env python3
"""benchmark/device_check_summary.py: the one summary file of scripts/device-check.sh, from the
JSON rows and logs it left in --work, with issue 13's targets computed (Markdown on stdout):

  1. allreduce of device buffers >= 80% of the staging limit at >= 16 MiB, the staging limit
     being min(pinned D2H, pinned H2D, the host path's busbw at that size, same run, same P),
     the copy bandwidths taken with every rank copying at once and scaled by the bus factor so
     that they compare with busbw;
  2. >= 2x torch's gloo backend on the same CUDA tensors at >= 1 MiB (busbw, each collective);
  3. small-message latency within 2x of the CPU path plus one copy each way: at 1 KiB,
     device time <= 2 x CPU time + D2H time + H2D time.

    device_check_summary.py --work DIR --dry-run 0|1 [--note TEXT] [--have-cuda N]
                            [--tests ON|OFF] [--seconds N]
"""
import argparse
import json
import os
import re

MIB = 1 << 20
BANDWIDTH_FROM, BANDWIDTH_TARGET = 16 * MIB, 0.8
TORCH_FROM, TORCH_TARGET = 1 * MIB, 2.0
LATENCY_SIZE = 1024
COLLECTIVES = ("allreduce", "broadcast", "allgather", "reduce_scatter")


def load(work, name):
    try:
        with open(os.path.join(work, name)) as file:
            return json.load(file)
    except (OSError, ValueError):
        return []


def text(work, name):
    try:
        with open(os.path.join(work, name), errors="replace") as file:
            return file.read()
    except OSError:
        return ""


def bus_factor(collective, ranks):
    if collective == "allreduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("allgather", "reduce_scatter"):
        return (ranks - 1) / ranks
    return 1.0


def bench_rows(rows, collective):
    """{bytes: row}: the out-of-place form, or the in-place one where there is no other."""
    out = {}
    for row in rows:
        if row.get("collective") != collective:
            continue
        if row["bytes"] not in out or not row.get("inplace"):
            out[row["bytes"]] = row
    return out


def copies(rows):
    """{bytes: (d2h GB/s, h2d GB/s, d2h us, h2d us)}."""
    out = {}
    for row in rows:
        entry = out.setdefault(row["bytes"], {})
        entry[row["copy"]] = row
    return {b: (e["d2h"]["GBps"], e["h2d"]["GBps"], e["d2h"]["time_us"], e["h2d"]["time_us"])
            for b, e in out.items() if "d2h" in e and "h2d" in e}


def size(nbytes):
    for unit, scale in (("G", 1 << 30), ("M", MIB), ("K", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def num(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def verdict(values, target, what):
    if not values:
        return f"NOT MEASURED ({what})"
    worst = min(values)
    return f"{'PASS' if worst >= target else 'FAIL'} (worst {worst:.2f}, target {target:g})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--dry-run", type=int, default=0)
    parser.add_argument("--note", default="")
    parser.add_argument("--have-cuda", type=int, default=0)
    parser.add_argument("--tests", default="ON")
    parser.add_argument("--seconds", type=int, default=0)
    args = parser.parse_args()
    work = args.work
    dry = args.dry_run == 1

    device = load(work, "device_p2.json")
    cpu = load(work, "cpu_p2.json")
    torch_rows = load(work, "torch_p2.json")
    copy1 = copies(load(work, "copy_p1.json"))
    copy2 = copies(load(work, "copy_p2.json"))
    header = re.search(r"#  mode (\S+): device buffers through gloo_lite::cuda on (.*)",
                       text(work, "device_p2.log"))
    p = "\n".join
    lines = ["# gloo_lite device check (issue 13, scripts/device-check.sh)", ""]
    if dry:
        lines += [
            "**NO GPU RAN.** This is the dry run (" + (args.note or "dry run") + "): built with "
            "the host device layer only (GLOO_LITE_BUILD_CUDA=OFF), every step run on the host "
            "stand-in with small sizes (to 4 MiB). The figures are the host stand-in's memcpy "
            "and say nothing about a GPU; the targets below are computed only to check the "
            "script.", ""]
    else:
        gpu = text(work, "gpu.log").strip() or "(nvidia-smi -L printed nothing)"
        lines += [f"GPU run: {gpu}", ""]
    lines.append("- device layer: " + (header.group(2) if header else "(no device run header)"))
    lines.append(f"- CUDA layer in the build: {'yes' if args.have_cuda else 'no'}; "
                 f"cuda_tests built: {'yes' if args.tests == 'ON' else 'no (no GoogleTest)'}")
    lines.append(f"- total time: {args.seconds} s (budget 480 s)")
    lines += ["", "## Steps", "", "| step | exit | seconds |", "| --- | --- | --- |"]
    for line in text(work, "steps.tsv").splitlines():
        name, rc, seconds = (line.split("\t") + ["", "", ""])[:3]
        shown = {"0": "0", "124": "124 (timed out)", "137": "137 (killed)",
                 "77": "77 (skipped)"}.get(rc, rc)
        lines.append(f"| {name} | {shown} | {seconds} |")

    lines += ["", "## Tests (cuda_tests; each case forks its own P ranks, all on GPU 0)", ""]
    for rank in (2, 4):
        log = text(work, f"tests_p{rank}.log")
        found = [x for x in log.splitlines()
                 if re.match(r"\[  (PASSED|FAILED|SKIPPED) +\]", x) and "tests" in x]
        lines.append(f"- P = {rank}: " + ("; ".join(found) if found else "not run"))
        if not dry and "SKIPPED" in log:
            lines.append("  - **skipped cases on a GPU run: the CUDA layer did not run**")

    lines += ["", "## Copy limit (pinned, GB/s, slowest rank)", "",
              "| size | D2H P=1 | H2D P=1 | D2H P=2 | H2D P=2 |", "| --- | --- | --- | --- | --- |"]
    for nbytes in sorted(set(copy1) | set(copy2)):
        a, b = copy1.get(nbytes), copy2.get(nbytes)
        lines.append(f"| {size(nbytes)} | {num(a and a[0])} | {num(a and a[1])} | "
                     f"{num(b and b[0])} | {num(b and b[1])} |")

    ratios, torch_ratios, latency = [], {c: [] for c in COLLECTIVES}, None
    largest_note = ""
    for collective in COLLECTIVES:
        dev, host = bench_rows(device, collective), bench_rows(cpu, collective)
        anchor = {r["bytes"]: r for r in torch_rows if r["collective"] == collective}
        errors = [r["error"] for r in torch_rows if r["collective"] == collective and "error" in r]
        lines += ["", f"## {collective}, P = 2 (busbw GB/s; time us)", ""]
        heading = "| size | device time | device busbw | host busbw | torch gloo busbw | x torch |"
        rule = "| --- | --- | --- | --- | --- | --- |"
        if collective == "allreduce":
            heading += " copy limit (busbw) | staging limit | % of limit |"
            rule += " --- | --- | --- |"
        lines += [heading, rule]
        for nbytes in sorted(dev):
            row = dev[nbytes]
            busbw = row["busbw_GBps"]
            h = host.get(nbytes, {}).get("busbw_GBps")
            t = anchor.get(nbytes, {}).get("busbw_GBps")
            x = busbw / t if t else None
            if x is not None and nbytes >= TORCH_FROM:
                torch_ratios[collective].append(x)
            cells = [size(nbytes), num(row["time_us"], 1), num(busbw), num(h), num(t), num(x)]
            if collective == "allreduce":
                c = copy2.get(nbytes)
                limit_copy = min(c[0], c[1]) * bus_factor(collective, row["P"]) if c else None
                limits = [v for v in (limit_copy, h) if v]
                limit = min(limits) if limits else None
                share = busbw / limit if limit else None
                if share is not None and nbytes >= BANDWIDTH_FROM:
                    ratios.append(share)
                cells += [num(limit_copy), num(limit), num(share and share * 100, 0)]
                if nbytes == LATENCY_SIZE and c and nbytes in host:
                    bound = 2 * host[nbytes]["time_us"] + c[2] + c[3]
                    latency = (row["time_us"], host[nbytes]["time_us"], c[2], c[3], bound)
            lines.append("| " + " | ".join(cells) + " |")
        if any(r.get("wrong") for r in dev.values()) or any(r.get("wrong") for r in host.values()):
            lines.append("\n**wrong elements in this table's runs (see the logs)**")
        if errors:
            lines.append(f"\ntorch gloo: {errors[0]}")
        if collective == "allreduce" and not ratios and dev:
            # The dry run stops below 16 MiB: say so, and show the largest size's share.
            largest = max(dev)
            largest_note = f"sizes stop at {size(largest)}, below the target's 16 MiB"

    p4 = bench_rows(load(work, "device_p4.json"), "allreduce")
    if p4:
        lines += ["", "## allreduce, P = 4 ranks on the one device (checked)", "",
                  "| size | time us | busbw | wrong |", "| --- | --- | --- | --- |"]
        for nbytes in sorted(p4):
            r = p4[nbytes]
            lines.append(f"| {size(nbytes)} | {num(r['time_us'], 1)} | {num(r['busbw_GBps'])} | "
                         f"{r.get('wrong')} |")

    lines += ["", "## Targets" + (" (dry run: NOT GPU figures)" if dry else ""), ""]
    lines.append(f"1. allreduce >= 80% of the staging limit at >= 16 MiB: "
                 f"{verdict(ratios, BANDWIDTH_TARGET, largest_note or 'no allreduce rows')}")
    for collective in COLLECTIVES:
        lines.append(f"2. {collective} >= 2x torch gloo at >= 1 MiB: "
                     f"{verdict(torch_ratios[collective], TORCH_TARGET, 'no torch rows')}")
    if latency:
        dev_us, cpu_us, d2h, h2d, bound = latency
        lines.append(f"3. 1 KiB allreduce latency {dev_us:.1f} us <= 2 x CPU {cpu_us:.1f} + D2H "
                     f"{d2h:.1f} + H2D {h2d:.1f} = {bound:.1f} us: "
                     f"{'PASS' if dev_us <= bound else 'FAIL'}")
    else:
        lines.append("3. 1 KiB latency: NOT MEASURED (a 1 KiB row is missing)")
    wrong = [r for r in device + cpu if r.get("wrong")]
    lines.append(f"- wrong elements: {'none' if not wrong else f'{len(wrong)} rows with some'}")
    print(p(lines))


if __name__ == "__main__":
    main()
