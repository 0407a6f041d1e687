#!/usr/bin/env python3
"""Runs torch's own distributed test suite (dist_suite.py) on gloo_lite or, as the baseline, on
torch's gloo, and says what passed, failed and was skipped.

    run.py                          # every test torch enables for gloo, on gloo_lite, 2 ranks
    run.py --backend gloo           # the same run on torch's gloo (the baseline)
    run.py --world-size 4 -k "all_reduce or broadcast"
    run.py --subset                 # CI's subset (subset.txt): must all pass
    run.py compare gloo.json gloo_lite.json   # passes on the first, not on the second

Each test starts a process per rank (torch's MultiProcessTestCase), forked from the runner by
default; --start spawn starts them as torch's own runner does (each imports torch and the suite
again: half a minute a test on a busy 2-core machine). Select with -k or --tests, or run shards
(--shard 1/4). A test that runs longer than --timeout seconds is failed by the harness, which
kills its ranks.

--profiler-checks has the suite check gloo_lite's profiler events as it does gloo's (see
dist_suite.py). Failures listed in known_failures.txt (and known_failures_profiler.txt with
--profiler-checks), each with its reason, are reported as known; the exit status is 0 when
every failure is known, every selected test ran and no test of subset.txt was skipped, 1
otherwise (a known failure that passes is reported too, so that the list shrinks as gloo_lite
catches up). --report writes every test's outcome and first error line as JSON, the input of
`compare`; pytest's own output, with every rank's traceback, is kept when the run fails.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "dist_suite.py")
CLASS = "TestDistBackendWithSpawn"

# The line that says what went wrong, in a rank's traceback ("AssertionError: ...",
# "torch.distributed.DistBackendError: ...").
RANK_EXITED = re.compile(r"Process \d+ exited with error code \d+")
SUITE_FRAME = re.compile(r'File ".*distributed_test\.py", line (\d+), in (\w+)')
EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*)$")


def read_list(name):
    """{test: reason} from a list file: a test name, then optional reason; # comments."""
    entries = {}
    with open(os.path.join(HERE, name)) as listing:
        for line in listing:
            line = line.split("#", 1)[0].strip()
            if line:
                test, _, reason = line.partition(" ")
                entries[test] = reason.strip()
    return entries


def first_error_line(text):
    """The first rank's exception line from a failure's text, else its first non-empty line.
    The harness says "Process 0 exited with error code 10 and exception:" and then the rank's
    traceback; the line wanted is that traceback's last exception line."""
    # pytest marks the lines of the exception it reports with "E   ".
    lines = [re.sub(r"^E(\s|$)", "", line) for line in (text or "").splitlines()]
    lines = [line for line in lines if line.strip()]
    start = next((i for i, line in enumerate(lines) if RANK_EXITED.search(line)), None)
    if start is not None:
        block = []
        for line in lines[start + 1:]:
            if RANK_EXITED.search(line) or line.startswith("To execute this test"):
                break
            block.append(line)
        found = [m.group(1) for m in map(EXCEPTION_LINE.match, block) if m]
        # Where in the suite it failed: its last frame in distributed_test.py groups failures
        # by cause (the same check failing in many tests).
        frames = [m.groups() for m in map(SUITE_FRAME.search, block) if m]
        where = f" [distributed_test.py:{frames[-1][0]} {frames[-1][1]}]" if frames else ""
        if found:
            return found[-1][:300] + where
        return lines[start].strip()[:300]
    died = re.search(r"Expected exit code \d+ but got (-?\d+)", text or "")
    if died and int(died.group(1)) < 0:
        number = -int(died.group(1))
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "?"
        return f"rank 0 died of signal {number} ({name})"
    found = [m.group(1) for m in map(EXCEPTION_LINE.match, lines) if m]
    return (found[-1] if found else (lines[0] if lines else "")).strip()[:300]


def read_junit(path):
    """{test: {"outcome": passed|failed|error|skipped, "detail": first line, "seconds": s}}"""
    results = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        outcome, detail = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                # The text holds the whole report; the message only its first lines.
                text = element.text or element.get("message") or ""
                detail = (first_error_line(text) if tag != "skipped"
                          else (element.get("message") or "").strip()[:300])
                break
        results[case.get("name")] = {"outcome": outcome, "detail": detail,
                                     "seconds": round(float(case.get("time") or 0), 1)}
    return results


def counts(results):
    tally = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
    for result in results.values():
        tally[result["outcome"]] += 1
    return tally


def shard_of(tests, shard):
    index, total = (int(x) for x in shard.split("/"))
    return [t for i, t in enumerate(sorted(tests)) if i % total == index - 1]


def collect(python, env):
    """Every test name in the suite (pytest's collection: no process is spawned)."""
    listing = subprocess.run([python, "-m", "pytest", "-q", "--collect-only", "-p",
                              "no:cacheprovider", SUITE], env=env, cwd=HERE, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    tests = re.findall(rf"::{CLASS}::(test\w+)", listing.stdout)
    if not tests:
        sys.exit(f"run.py: collecting the suite found no tests:\n{listing.stdout[-4000:]}")
    return tests


def run(args):
    python = args.python or sys.executable
    temp = tempfile.mkdtemp(prefix="torch_suite_")
    env = dict(os.environ)
    env.update({
        "BACKEND": "gloo",
        "WORLD_SIZE": str(args.world_size),
        "TEMP_DIR": temp,
        "GLOO_LITE_SUITE_BACKEND": args.backend,
        "GLOO_LITE_SUITE_START": args.start,
        "GLOO_LITE_SUITE_PROFILER": "1" if args.profiler_checks else "0",
        "DISTRIBUTED_TESTS_DEFAULT_TIMEOUT": str(args.timeout),
        "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
    })
    env.setdefault("GLOO_LITE_LOG", "error")
    if not args.cuda:
        # torch's harness skips every test when a GPU is visible and there are fewer of them
        # than ranks (one GPU a rank): hidden, the CPU tests run on any machine.
        env["CUDA_VISIBLE_DEVICES"] = ""
    known = {}
    if args.backend == "gloo_lite":
        known = read_list("known_failures.txt")
        if args.profiler_checks:
            known.update(read_list("known_failures_profiler.txt"))
    selected = None
    if args.subset:
        selected = list(read_list("subset.txt"))
        clash = sorted(set(selected) & set(read_list("known_failures.txt")))
        if clash:
            sys.exit(f"run.py: subset.txt lists known failures: {', '.join(clash)}")
    if args.tests:
        selected = args.tests
    if args.shard:
        selected = shard_of(selected or collect(python, env), args.shard)
    junit = args.junit or os.path.join(temp, "junit.xml")
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
               f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    if args.k:
        command += ["-k", args.k]
    command += [f"{SUITE}::{CLASS}::{t}" for t in selected] if selected else [SUITE]
    print(f"run.py: torch's suite on {args.backend}, WORLD_SIZE={args.world_size}"
          f" ({len(selected) if selected else 'all'} tests; TEMP_DIR={temp})", flush=True)
    log = os.path.join(temp, "pytest.log")
    with open(log, "w") as out:
        subprocess.run(command, env=env, cwd=HERE, stdout=None if args.verbose else out,
                       stderr=subprocess.STDOUT)
    if not os.path.exists(junit):
        sys.exit(f"run.py: pytest wrote no report (the suite failed to import): see {log}")
    status = summarize(args, results=read_junit(junit), known=known, selected=selected)
    if status:
        print(f"run.py: pytest's output (every rank's traceback) is in {log}")
    else:
        shutil.rmtree(temp, ignore_errors=True)
    return status


def summarize(args, results, known, selected):
    tally = counts(results)
    print(f"SUITE backend={args.backend} world_size={args.world_size} " +
          " ".join(f"{k}={v}" for k, v in tally.items()))
    bad = 0
    for test, result in sorted(results.items()):
        if result["outcome"] in ("failed", "error"):
            tag = "KNOWN" if test in known else "FAIL"
            bad += tag == "FAIL"
            print(f"  {tag} {test}: {result['detail']}"
                  + (f"  [known: {known[test]}]" if test in known else ""))
        elif result["outcome"] == "passed" and test in known:
            print(f"  FIXED {test}: passes now; remove it from the known failures")
    missing = sorted(set(selected or ()) - set(results))
    for test in missing:
        print(f"  MISSING {test}: selected but not run (renamed in this torch?)")
    # The subset's tests must run wherever they are selected (a skip hides a broken setup).
    for test in sorted(set(read_list("subset.txt")) & set(results)):
        if results[test]["outcome"] == "skipped":
            print(f"  SKIPPED {test}: subset.txt's tests must run: {results[test]['detail']}")
            bad += 1
    if args.report:
        with open(args.report, "w") as out:
            json.dump({"backend": args.backend, "world_size": args.world_size,
                       "counts": tally, "tests": results}, out, indent=1, sort_keys=True)
    return 1 if bad or missing else 0


def compare(base_path, other_path):
    with open(base_path) as f:
        base = json.load(f)
    with open(other_path) as f:
        other = json.load(f)
    print(f"passes on {base['backend']}, not on {other['backend']} "
          f"(WORLD_SIZE {base['world_size']} / {other['world_size']}):")
    worse = 0
    for test, result in sorted(base["tests"].items()):
        theirs = other["tests"].get(test, {"outcome": "not run", "detail": ""})
        if result["outcome"] == "passed" and theirs["outcome"] != "passed":
            worse += 1
            print(f"  {test} [{theirs['outcome']}]: {theirs['detail']}")
    print(f"{worse} test(s)")
    return 1 if worse else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["gloo_lite", "gloo"], default="gloo_lite",
                        help="what the suite's gloo groups are: gloo_lite's (default) or "
                        "torch's gloo (the baseline)")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--subset", action="store_true", help="CI's subset (subset.txt)")
    parser.add_argument("--tests", nargs="+", help="these tests only (names test_...)")
    parser.add_argument("-k", help="pytest's -k expression over the test names")
    parser.add_argument("--shard", help="I/N: every N-th test of the selection from the I-th")
    parser.add_argument("--start", choices=["fork", "spawn"], default="fork",
                        help="how each test's ranks start: forked from the runner (default; "
                        "seconds faster a test) or spawned as torch's own runner does")
    parser.add_argument("--profiler-checks", action="store_true",
                        help="check gloo_lite's profiler events as the suite does gloo's "
                        "(known failures: also known_failures_profiler.txt)")
    parser.add_argument("--cuda", action="store_true",
                        help="leave the GPUs visible (needs one a rank; the CUDA tests run)")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per test")
    parser.add_argument("--report", help="write every test's outcome here (JSON)")
    parser.add_argument("--junit", help="keep pytest's JUnit XML here")
    parser.add_argument("--python", help="the interpreter (default: this one)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
