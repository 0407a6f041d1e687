"""Running the cases: the scratch copy and build of the anchors, quiet-machine waits, one launcher
per library, peak RSS per rank.

The anchors (../shared/anchors) write next to themselves, so they are copied into the scratch
folder and built there (`make gloo_bench mpi_bench`); compare's own barrier programs
(extra_anchors/) are built beside them with the anchors' compiler flags. Nothing here links
anything into gloo_lite.

Quiet machine (the idea of the anchors' lib.sh): before each case, sample /proc/stat for half a
second and wait until the machine's non-idle CPU use is below `quiet_cores` (cap `quiet_wait`
seconds, then go on and flag it). During the case, 'foreign' load = system-wide busy jiffies
minus the CPU time of the case's own (waited-for) processes, per second of wall time; a case whose
foreign load exceeded `foreign_cores` is retried (up to `attempts`), and the value is kept in
the record so the table can show how noisy each row was.
"""

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import model

HZ = os.sysconf("SC_CLK_TCK")
HERE = os.path.dirname(os.path.abspath(__file__))

# The anchors' flags (their Makefile) for compare's extra barrier programs.
CXX_FLAGS = ["-O2", "-g", "-std=c++17", "-Wall", "-Wno-sign-compare"]
C_FLAGS = ["-O2", "-g", "-Wall"]

# run_mpi.sh's pinning, verbatim.
MPI_COMMON = ["--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1",
              "--mca", "oob_tcp_if_include", "lo", "--mca", "oob_tcp_disable_ipv6_family", "true"]
MPI_VARIANT_OPTS = {
    "ob1_tcp": ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo",
                "--mca", "btl_tcp_disable_family", "6"],
    "ob1_vader": ["--mca", "btl", "vader,self"],
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# load accounting

def parse_proc_stat_busy(text):
    """Busy jiffies from /proc/stat's 'cpu ' line: user nice system irq softirq steal (as lib.sh)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:]]
            f += [0] * (8 - len(f))
            return f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
    raise ValueError("no cpu line in /proc/stat")


def busy_jiffies():
    with open("/proc/stat") as fh:
        return parse_proc_stat_busy(fh.read())


def children_cpu_s():
    t = os.times()
    return t.children_user + t.children_system


def loadavg1():
    try:
        with open("/proc/loadavg") as fh:
            return float(fh.read().split()[0])
    except OSError:
        return float("nan")


def wait_quiet(quiet_cores, max_wait, sample_s=0.5):
    """Waits until a `sample_s` sample shows < quiet_cores busy. Returns (waited_s, cores, quiet)."""
    start = time.monotonic()
    while True:
        b0 = busy_jiffies()
        time.sleep(sample_s)
        cores = (busy_jiffies() - b0) / HZ / sample_s
        waited = time.monotonic() - start - sample_s
        if cores < quiet_cores:
            return waited, cores, True
        if waited >= max_wait:
            return waited, cores, False
        time.sleep(1.0)


class Meter:
    """Foreign load over one case: busy jiffies minus the case's own children's CPU time."""

    def __enter__(self):
        self.b0, self.c0, self.t0 = busy_jiffies(), children_cpu_s(), time.monotonic()
        return self

    def __exit__(self, *exc):
        self.wall = max(time.monotonic() - self.t0, 1e-3)
        own = children_cpu_s() - self.c0
        self.foreign = ((busy_jiffies() - self.b0) / HZ - own) / self.wall
        self.own_cores = own / self.wall
        return False


# ---------------------------------------------------------------------------------------------
# setup

def find_build(repo, build=None):
    """The build folder holding benchmark/gloo_lite_bench and tools/gloo_lite_run."""
    cands = [build] if build else [os.path.join(repo, d) for d in ("build-bench", "build")] + \
        sorted(glob.glob(os.path.join(repo, "build*")))
    for d in cands:
        if d and os.access(os.path.join(d, "benchmark", "gloo_lite_bench"), os.X_OK) and \
                os.access(os.path.join(d, "tools", "gloo_lite_run"), os.X_OK):
            return os.path.abspath(d)
    return None


def snapshot_build(build, scratch):
    """Copies gloo_lite_run and gloo_lite_bench (statically linked against gloo_lite) into
    scratch/gloo_lite/, so that a rebuild of the build folder during a long run changes nothing.
    Returns the snapshot folder (laid out like a build folder)."""
    dst = os.path.join(scratch, "gloo_lite")
    for rel in (os.path.join("tools", "gloo_lite_run"),
                os.path.join("benchmark", "gloo_lite_bench")):
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(os.path.join(build, rel), os.path.join(dst, rel))
    return dst


GLOO_HOSTNAME_LINE = '  attr.hostname = "127.0.0.1";\n'
GLOO_HOSTNAME_PATCHED = ('  attr.hostname = std::getenv("GLOO_ANCHOR_HOSTNAME") ? '
                         'std::getenv("GLOO_ANCHOR_HOSTNAME") : "127.0.0.1";\n')


def patch_gloo_hostname(path):
    """The Gloo anchor listens on and publishes 127.0.0.1. In the scratch copy (never in
    ../shared), that address comes from GLOO_ANCHOR_HOSTNAME when set, as in compare's own
    gloo_barrier.cpp: benchmark/cluster runs each rank in its own network namespace, where
    loopback reaches no other host. Unset, the program is the anchor's, byte for byte in effect.
    A source without that one line is left alone (the caller then cannot cross namespaces)."""
    if not os.path.exists(path):
        return False
    with open(path) as fh:
        text = fh.read()
    if GLOO_HOSTNAME_PATCHED in text:
        return True
    if text.count(GLOO_HOSTNAME_LINE) != 1:
        log("compare: %s has no single 'attr.hostname = \"127.0.0.1\";' line; "
            "GLOO_ANCHOR_HOSTNAME is ignored" % path)
        return False
    with open(path, "w") as fh:
        fh.write(text.replace(GLOO_HOSTNAME_LINE, GLOO_HOSTNAME_PATCHED))
    return True


def prepare_anchors(anchors_src, scratch, want_gloo=True, want_mpi=True):
    """Copies the anchors to scratch/anchors and builds what is wanted. Returns a dict of the
    binaries that built: gloo_bench, mpi_bench, gloo_barrier, mpi_barrier (missing = skip)."""
    dst = os.path.join(scratch, "anchors")
    if not os.path.isdir(dst):
        shutil.copytree(anchors_src, dst, ignore=shutil.ignore_patterns("results", ".run"))
        # ../shared is read-only: the copy keeps its modes, so make it writable for make
        for root, dirs, files in os.walk(dst):
            for name in [root] + [os.path.join(root, f) for f in files]:
                os.chmod(name, os.stat(name).st_mode | 0o200)
    os.makedirs(os.path.join(dst, ".run"), exist_ok=True)
    patch_gloo_hostname(os.path.join(dst, "gloo_bench.cpp"))
    bins = {}

    def build(name, cmd):
        out = os.path.join(dst, name)
        if not os.access(out, os.X_OK):
            p = subprocess.run(cmd, cwd=dst, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            if p.returncode != 0:
                log("compare: could not build %s (skipping it):\n%s" % (name, p.stdout[-2000:]))
                return
        bins[name] = out

    extra = os.path.join(HERE, "extra_anchors")
    if want_gloo:
        build("gloo_bench", ["make", "gloo_bench"])
        build("gloo_barrier", ["g++"] + CXX_FLAGS + ["-o", "gloo_barrier",
                                                     os.path.join(extra, "gloo_barrier.cpp"),
                                                     "-lgloo", "-pthread"])
    if want_mpi:
        build("mpi_bench", ["make", "mpi_bench"])
        build("mpi_barrier", ["mpicc"] + C_FLAGS + ["-o", "mpi_barrier",
                                                    os.path.join(extra, "mpi_barrier.c"), "-lm"])
    return bins


def rss_wrapper(scratch):
    """A wrapper that runs its command and leaves the peak RSS (kB) in DIR/rss.<pid>."""
    path = os.path.join(scratch, "rss_wrap.sh")
    if os.access("/usr/bin/time", os.X_OK):
        body = '#!/bin/sh\nd=$1; shift\nexec /usr/bin/time -f "%M" -o "$d/rss.$$" "$@"\n'
    else:
        body = ('#!/bin/sh\nd=$1; shift\nexec "%s" -c \'import os, resource, subprocess, sys\n'
                'rc = subprocess.call(sys.argv[2:])\n'
                'open("%%s/rss.%%d" %% (sys.argv[1], os.getpid()), "w").write('
                'str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n'
                'sys.exit(rc)\' "$d" "$@"\n' % sys.executable)
    with open(path, "w") as fh:
        fh.write(body)
    os.chmod(path, 0o755)
    return path


def read_rss(rss_dir):
    vals = []
    for f in glob.glob(os.path.join(rss_dir, "rss.*")):
        with open(f) as fh:
            txt = fh.read().strip().splitlines()
        for line in reversed(txt):  # /usr/bin/time may prepend "Command exited with..."
            if line.strip().isdigit():
                vals.append(int(line.strip()))
                break
    return vals


# ---------------------------------------------------------------------------------------------
# one attempt of one case

class CaseResult:
    def __init__(self, ok, records, rc, stderr_tail, wall, foreign):
        self.ok, self.records, self.rc = ok, records, rc
        self.stderr_tail, self.wall, self.foreign = stderr_tail, wall, foreign


# process groups of the case running now, killed by kill_active() when compare is interrupted
ACTIVE = set()


def kill_active():
    for pgid in list(ACTIVE):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    ACTIVE.clear()


def _popen(cmd, **kw):
    p = subprocess.Popen(cmd, start_new_session=True, **kw)
    ACTIVE.add(p.pid)
    return p


def _reap(p, timeout=None):
    try:
        return p.wait(timeout=timeout)
    finally:
        if p.returncode is not None:
            ACTIVE.discard(p.pid)


def _run(cmd, timeout, cwd=None, env=None):
    """Runs cmd in its own process group; kills the group on timeout. Returns (rc, out, err)."""
    p = _popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
               universal_newlines=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        ACTIVE.discard(p.pid)
        return 124, out, err + "\n(timeout after %ss)" % timeout
    ACTIVE.discard(p.pid)
    return p.returncode, out, err


class Runner:
    def __init__(self, cfg, scratch, bins, build_dir):
        self.cfg = cfg
        self.scratch = scratch
        self.bins = bins
        self.build = build_dir
        self.anchor_dir = os.path.join(scratch, "anchors")
        self.gl_auto_iters = False
        self.wrapper = None
        if build_dir:
            self.gl_run = os.path.join(build_dir, "tools", "gloo_lite_run")
            self.gl_bench = os.path.join(build_dir, "benchmark", "gloo_lite_bench")
            try:
                helptext = subprocess.run([self.gl_bench, "--help"], stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, universal_newlines=True,
                                          timeout=30).stdout
            except (OSError, subprocess.SubprocessError):
                helptext = ""
            self.gl_auto_iters = "--size-time" in helptext
        self.est = {}  # (lib, variant, coll, P, size) -> last time_us, for gloo_lite's -n

    # -- gloo_lite ---------------------------------------------------------------------------
    def gl_iters(self, variant, coll, P, size):
        """-n for gloo_lite_bench when it has no automatic iteration count: enough ops for
        cfg.min_time seconds, from the last pass's time or a coarse model."""
        t = self.est.get(("gloo_lite", variant, coll, P, size))
        if not t:
            t = 30.0 * P + size * 4.0 / 0.5e3  # us: a latency term + ~0.5 GB/s
        n = int(self.cfg.min_time * 1e6 / max(t, 1.0)) + 1
        return max(self.cfg.min_iters, min(self.cfg.max_iters, n))

    @staticmethod
    def gl_bytes(coll, P, size):
        """The size to ask gloo_lite_bench for. allgather/reduce_scatter sizes are the whole
        P-block buffer; like the anchors (per = max(1, count / P)), move at least one float per
        rank, where gloo_lite_bench would round 8 B at P = 4 down to nothing."""
        if coll == "barrier":
            return 8
        if coll in ("allgather", "reduce_scatter"):
            return max(1, (max(size, 4) // 4) // P) * P * 4
        return max(size, 4)

    @staticmethod
    def split_variant(variant):
        """'auto@tcp' -> ('auto', 'tcp'): the algorithm and a forced GLOO_LITE_TRANSPORT; a
        plain 'auto' runs on the transports gloo_lite chooses itself (shared memory on one host)."""
        algo, _, transport = variant.partition("@")
        return algo, transport or None

    def gloo_lite_env(self, variant):
        transport = self.split_variant(variant)[1]
        env = dict(os.environ)
        env.pop("GLOO_LITE_TRANSPORT", None)
        if transport:
            env["GLOO_LITE_TRANSPORT"] = transport
        return env

    def gloo_lite_bench_cmd(self, variant, coll, P, size, json_path):
        """One rank's gloo_lite_bench command line for one size (benchmark/cluster starts these
        itself, one per rank in its namespace; compare under gloo_lite_run)."""
        s = str(self.gl_bytes(coll, P, size))
        warm = 20 if size < (1 << 20) else 3 if size < (16 << 20) else 2
        bench = [self.gl_bench, "--collective", coll, "-b", s, "-e", s, "-f", "2",
                 "-w", str(warm), "-c", "1", "-A", self.split_variant(variant)[0],
                 "--json", json_path]
        if self.gl_auto_iters and self.cfg.gl_iters == "auto":
            bench += ["--size-time", "%g" % self.cfg.min_time]
        else:
            n = self.gl_iters(variant, coll, P, size) if self.cfg.gl_iters == "auto" \
                else int(self.cfg.gl_iters)
            bench += ["-n", str(n)]
        return bench

    def gloo_lite_cmd(self, variant, coll, P, size, json_path, rss_dir=None):
        bench = self.gloo_lite_bench_cmd(variant, coll, P, size, json_path)
        if rss_dir:
            bench = [self.wrapper, rss_dir] + bench
        return [self.gl_run, "-n", str(P), "--"] + bench

    def run_gloo_lite(self, variant, coll, P, size, rss_dir=None):
        fd, json_path = tempfile.mkstemp(prefix="gl_", suffix=".json",
                                         dir=os.path.join(self.scratch, "runs"))
        os.close(fd)
        cmd = self.gloo_lite_cmd(variant, coll, P, size, json_path, rss_dir)
        with Meter() as m:
            rc, out, err = _run(cmd, self.cfg.timeout, cwd=self.scratch,
                                env=self.gloo_lite_env(variant))
        recs = []
        if rc == 0:
            try:
                with open(json_path) as fh:
                    recs = model.parse_gloo_lite_json(fh.read(), size=size, mode=self.cfg.gl_mode,
                                                      variant=variant)
            except (OSError, ValueError, KeyError) as e:
                err += "\n(compare: cannot parse %s: %s)" % (json_path, e)
                rc = 98
        recs = [r for r in recs if r["coll"] == coll]
        if rc == 0 and not recs:
            rc = 97
            err += "\n(compare: no %s row in %s)" % (coll, json_path)
        os.unlink(json_path) if rc == 0 else None
        return CaseResult(rc == 0, recs, rc, _tail(err + out), m.wall, m.foreign)

    # -- Gloo anchor ---------------------------------------------------------------------------
    def gloo_cmds(self, algo, coll, P, size, store):
        exe = self.bins["gloo_barrier"] if coll == "barrier" else self.bins["gloo_bench"]
        args = [str(P), store, algo, coll, str(max(size, 8)), "%g" % self.cfg.min_time,
                str(self.cfg.min_iters), str(self.cfg.max_iters)]
        return [[exe, str(r)] + args for r in range(P)]

    def run_gloo(self, algo, coll, P, size, rss_dir=None):
        store = tempfile.mkdtemp(prefix="store.", dir=os.path.join(self.anchor_dir, ".run"))
        cmds = self.gloo_cmds(algo, coll, P, size, store)
        if rss_dir:
            cmds = [[self.wrapper, rss_dir] + c for c in cmds]
        with Meter() as m:
            procs = []
            for r in range(P - 1, 0, -1):
                with open(os.path.join(store, "rank%d.log" % r), "w") as errf:
                    procs.append(_popen(cmds[r], cwd=self.anchor_dir, stdout=subprocess.DEVNULL,
                                        stderr=errf))
            rc, out, err = _run(cmds[0], self.cfg.timeout, cwd=self.anchor_dir)
            for p in procs:
                try:
                    prc = _reap(p, timeout=5 if rc != 0 else self.cfg.timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    prc = _reap(p)
                if prc != 0 and rc == 0:
                    rc = 99
        recs = model.parse_anchor_csv(out, size=size) if rc == 0 else []
        if rc == 0:
            shutil.rmtree(store, ignore_errors=True)
        else:
            err += "\n(logs in %s)" % store
        return CaseResult(rc == 0 and bool(recs), recs, rc, _tail(err), m.wall, m.foreign)

    # -- Open MPI anchor -------------------------------------------------------------------------
    def mpi_cmd(self, variant, coll, P, size):
        exe = self.bins["mpi_barrier"] if coll == "barrier" else self.bins["mpi_bench"]
        return (["mpirun"] + MPI_COMMON + MPI_VARIANT_OPTS[variant] + ["-np", str(P), exe,
                variant, coll, str(max(size, 8)), "%g" % self.cfg.min_time,
                str(self.cfg.min_iters), str(self.cfg.max_iters)])

    def run_mpi(self, variant, coll, P, size, rss_dir=None):
        cmd = self.mpi_cmd(variant, coll, P, size)
        if rss_dir:
            i = cmd.index("-np") + 2
            cmd = cmd[:i] + [self.wrapper, rss_dir] + cmd[i:]
        with Meter() as m:
            rc, out, err = _run(cmd, self.cfg.timeout, cwd=self.anchor_dir)
        recs = model.parse_anchor_csv(out, size=size) if rc == 0 else []
        return CaseResult(rc == 0 and bool(recs), recs, rc, _tail(err), m.wall, m.foreign)

    # -- dispatch ------------------------------------------------------------------------------
    def available(self, lib, coll):
        if lib == "gloo_lite":
            return self.build is not None
        if lib == "gloo":
            return ("gloo_barrier" if coll == "barrier" else "gloo_bench") in self.bins
        return ("mpi_barrier" if coll == "barrier" else "mpi_bench") in self.bins

    def run_case(self, lib, variant, coll, P, size, pass_no):
        """Waits for a quiet machine, runs the case (retrying when others loaded the machine),
        and returns the list of Records (one, or a failure record)."""
        fn = {"gloo_lite": self.run_gloo_lite, "gloo": self.run_gloo, "openmpi": self.run_mpi}[lib]
        res = None
        waited_total = 0.0
        quiet = True
        for attempt in range(1, self.cfg.attempts + 1):
            waited, cores, quiet = wait_quiet(self.cfg.quiet_cores, self.cfg.quiet_wait)
            waited_total += waited
            res = fn(variant, coll, P, size)
            if not res.ok or res.foreign <= self.cfg.foreign_cores:
                break
            log("    %s/%s attempt %d: contended (foreign %.2f cores), %s" % (
                lib, variant, attempt, res.foreign,
                "retrying" if attempt < self.cfg.attempts else "keeping it"))
        extra = dict(pass_no=pass_no, attempt=attempt, wall_s=round(res.wall, 2),
                     foreign_cores=round(res.foreign, 3), waited_s=round(waited_total, 1),
                     quiet_before=quiet, load1=loadavg1())
        if not res.ok:
            log("    %s/%s FAILED rc=%s: %s" % (lib, variant, res.rc, res.stderr_tail[-600:]))
            rec = model.Record(lib=lib, variant=variant, coll=coll, P=P, size=size, bytes=size,
                               time_us=0.0, algbw=0.0, busbw=0.0, wrong=0, status="failed",
                               rc=res.rc, error=res.stderr_tail[-600:], **extra)
            return [rec]
        out = []
        for r in res.records:
            r.update(extra)
            # a contended run still counts (the better pass wins), it is only flagged
            r["status"] = "ok"
            r["contended"] = res.foreign > self.cfg.foreign_cores
            if lib == "gloo_lite":
                self.est[(lib, r["variant"], coll, P, size)] = r["time_us"]
            out.append(r)
        return out

    # -- memory ----------------------------------------------------------------------------------
    def peak_rss(self, lib, variant, P, size):
        """Peak RSS per rank (kB, one per rank) of a `size` allreduce, or None."""
        if self.wrapper is None:
            self.wrapper = rss_wrapper(self.scratch)
        rss_dir = tempfile.mkdtemp(prefix="rss.", dir=os.path.join(self.scratch, "runs"))
        fn = {"gloo_lite": self.run_gloo_lite, "gloo": self.run_gloo, "openmpi": self.run_mpi}[lib]
        res = fn(variant, "allreduce", P, size, rss_dir=rss_dir)
        vals = read_rss(rss_dir)
        if not res.ok:
            log("    rss %s/%s P=%d FAILED rc=%s: %s" % (lib, variant, P, res.rc,
                                                       res.stderr_tail[-400:]))
            return None
        shutil.rmtree(rss_dir, ignore_errors=True)
        return vals


def _tail(text, n=2000):
    text = text or ""
    return text[-n:]
