"""What the side-by-side scripts share (benchmark/python_compare.py: the Python module against
mpi4py; benchmark/torch_compare.py: the torch backend against torch's gloo): their common
options, the ranks' environment and import check, one launch with its RESULT/META lines, the
best pass of each case and the table formatting. Each script keeps what differs: its sweep,
its workers' command lines and its tables."""

import json
import os
import signal
import subprocess
import sys
import time

from . import model
from .runner import Meter, wait_quiet


def logger(name):
    """A log function printing "name: message" lines to stderr."""
    def log(message):
        print(name + ": " + message, file=sys.stderr, flush=True)
    return log


def add_common_options(parser, collectives, sweep_help, python_help, path_help, from_json):
    """The options both scripts take; each script then sets its own defaults of -f and
    --min-time (parser.set_defaults), which the help texts show. `sweep_help` completes -f's
    help, `python_help` and `path_help` are --python's and --gloo-lite-path's, `from_json` is
    --from-json's (metavar, help)."""
    parser.add_argument("-p", "--ranks", default="2 4 8", help='P values (default "2 4 8")')
    parser.add_argument("-b", "--minbytes", default="8", help="smallest size (default 8)")
    parser.add_argument("-e", "--maxbytes", default="64M", help="largest size (default 64M)")
    parser.add_argument("-f", "--stepfactor", type=int, default=8,
                        help="factor between sizes" + sweep_help)
    parser.add_argument("--collectives", default=",".join(collectives))
    parser.add_argument("--min-time", type=float, default=0.2,
                        help="seconds of timed calls per case (default %(default)s)")
    parser.add_argument("--python", help=python_help)
    parser.add_argument("--gloo-lite-path", help=path_help)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per launch")
    parser.add_argument("--quiet-cores", type=float, default=0.25,
                        help="before each launch wait until fewer cores are busy (default 0.25)")
    parser.add_argument("--quiet-wait", type=float, default=10,
                        help="but at most this many seconds (default 10)")
    metavar, text = from_json
    parser.add_argument("--from-json", metavar=metavar, help=text)


def check_collectives(parser, names, known):
    """Exits through `parser` naming the first of `names` that is not in `known`."""
    for coll in names:
        if coll not in known:
            parser.error("unknown collective %r; known: %s" % (coll, ", ".join(known)))


def python_env(gloo_lite_path):
    """This environment with `gloo_lite_path` (os.pathsep-separated) prepended to PYTHONPATH."""
    env = dict(os.environ)
    if gloo_lite_path:
        paths = [os.path.abspath(p) for p in gloo_lite_path.split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def importable(python, module, attribute, env, cwd):
    """Whether `python` imports numpy and `module`, and the module has `attribute`: from `cwd`,
    since in the repository's root `import gloo_lite` finds the C++ sources' folder. Returns
    (ok, [the last line of its stderr])."""
    code = "import numpy, %s; %s.%s" % (module, module, attribute)
    result = subprocess.run([python, "-c", code], env=env, cwd=cwd, capture_output=True,
                            text=True)
    return result.returncode == 0, result.stderr.strip().splitlines()[-1:] or [""]


def launch(cmd, env, args, log, timeout, stderr_tail):
    """Runs one launch after waiting for a quiet machine (args.quiet_cores, args.quiet_wait; in
    args.scratch) and returns (records, meta, error, foreign): the JSON of its 'RESULT ' lines,
    of its last 'META ' line, None or why it failed, and the cores other processes used
    meanwhile (compare's Meter). The launch runs in a session of its own, so that a timeout ends
    the ranks it started too. A line's tag may follow a launcher's prefix (gloo_lite_run's
    "[rank] ")."""
    waited, cores, quiet = wait_quiet(args.quiet_cores, args.quiet_wait)
    if not quiet:
        log("  still %.2f cores busy after %.0f s; running anyway" % (cores, waited))
    start = time.time()
    timed_out = False
    with Meter() as meter:
        proc = subprocess.Popen(cmd, env=env, cwd=args.scratch, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            timed_out = True
    if timed_out:
        return [], {}, "timed out after %d s" % timeout, meter.foreign
    records, meta = [], {}
    for line in stdout.splitlines():
        for tag in ("RESULT ", "META "):
            # Anywhere in the line (the launcher may prefix it), followed by a JSON object: other
            # output that merely contains the word is not a record.
            at = line.find(tag + "{")
            if at >= 0:
                try:
                    value = json.loads(line[at + len(tag):])
                except ValueError:
                    continue
                if tag == "META ":
                    meta = value
                else:
                    records.append(value)
    error = None
    if proc.returncode != 0:
        error = "exit status %d: %s" % (proc.returncode, stderr.strip()[-stderr_tail:])
    log("  %d records in %.1f s, foreign load %.2f cores%s" % (
        len(records), time.time() - start, meter.foreign, " (" + error + ")" if error else ""))
    return records, meta, error, meter.foreign


def best(records):
    """Per (variant, coll, P, size): the fastest correct pass."""
    table = {}
    for rec in records:
        key = (rec["variant"], rec["coll"], rec["P"], rec["size"])
        old = table.get(key)
        if old is None or (rec["wrong"], rec["time_us"]) < (old["wrong"], old["time_us"]):
            table[key] = rec
    return table


def busbw(rec):
    """A record's bus bandwidth in GB/s (nccl-tests factors)."""
    return model.make_record("x", "x", rec["coll"], rec["P"], rec["size"], rec["bytes"],
                             rec["time_us"]).busbw


def fmt_us(value):
    if value is None:
        return "-"
    return "%.0f" % value if value >= 1000 else "%.1f" % value if value >= 10 else "%.2f" % value


def fmt(value, pattern="%.2f"):
    return "-" if value is None else pattern % value


def markdown(headings, rows):
    """A markdown table: the first column left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(headings) + " |",
             "|" + "|".join("---" if i == 0 else "--:" for i in range(len(headings))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
