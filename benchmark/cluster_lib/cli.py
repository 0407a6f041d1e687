"""Command line of benchmark/cluster (see docs/benchmarking.md, "Clusters")."""

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

from compare_lib import model, runner
from compare_lib import cli as compare_cli

from . import check, netns, topology

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
STORE_PORT = 29500

EPILOG = """
What it builds (root only): a hub namespace with bridge br0 (192.0.2.254) and gloo_lite's TCP
store, one namespace per host (192.0.2.(h+1)), each cabled to the bridge by a veth whose two
directions are shaped with `tc qdisc ... tbf rate LINK burst 256kb latency 100ms` (the host's
NIC). Ranks of a host share its namespace and its GLOO_LITE_HOST_ID (shared memory inside a
host, TCP across). Everything lives inside the new namespaces and is deleted on exit, also on
failure, Ctrl-C or SIGTERM (test/netns/netns_lib.sh's netns_teardown).

Per collective and size: gloo_lite_bench -c 1 with -A ALGOS (all = auto, then every algorithm
of the collective) on every rank; then each Gloo algorithm of the collective (the anchor
gloo_bench, copied from ../shared/anchors and built in the scratch folder, listening on its
host's address); then Open MPI where mpirun runs (--libs mpi, see docs). "of link" is the link
limit (topology.py, docs/benchmarking.md) over the measured time: 1.0 = the wire's full rate.

--check PCT (the CI test test/netns/cluster_test.sh): after the runs, one verdict per gloo_lite
case: every value right in every pass (gloo_lite_bench -c 1), auto ran, and from --check-from on
auto's time within PCT% of the fastest forced algorithm (best over passes and retries).
"""


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="benchmark/cluster", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Collectives across simulated hosts (network namespaces with shaped links): "
                    "gloo_lite under auto and every algorithm, Debian's Gloo, Open MPI.",
        epilog=EPILOG)
    ap.add_argument("--hosts", help="HOSTSxRANKS (4x2) or ranks per host (3,3,2)")
    ap.add_argument("--link", default="1gbit", help="each host's link rate, both directions "
                    "(tc units: 1gbit, 200mbit; default 1gbit)")
    ap.add_argument("--collectives", default="allreduce",
                    help="comma list of allreduce, allgather, reduce_scatter, broadcast, barrier "
                         "(all libraries), reduce, gather, scatter, alltoall (gloo_lite only) "
                         "(default allreduce)")
    ap.add_argument("-s", "--sizes", default="8,64K,1M,4M,16M,64M",
                    help="sizes, K/M/G suffixes, nccl-tests convention (default 8,64K,1M,4M,16M,"
                         "64M)")
    ap.add_argument("--algos", default="all",
                    help="gloo_lite_bench -A: all (auto, then every algorithm), or a comma list "
                         "such as auto,ring (default all)")
    ap.add_argument("--libs", default="gloo_lite,gloo,mpi",
                    help="gloo_lite, gloo, mpi (default all three; mpi is skipped with a reason "
                         "when mpirun is missing)")
    ap.add_argument("--gloo-algos", help="override the Gloo algorithms: coll:algo,...")
    ap.add_argument("--passes", type=int, default=1, help="passes; the faster counts (1)")
    ap.add_argument("--min-time", type=float, default=0.3,
                    help="seconds of timed ops per case and library (0.3)")
    ap.add_argument("--min-iters", type=int, default=3)
    ap.add_argument("--max-iters", type=int, default=100000)
    ap.add_argument("--timeout", type=float, default=300, help="per-case timeout, seconds (300)")
    ap.add_argument("--build", help="gloo_lite build folder (default: build-bench, build, build*)")
    ap.add_argument("--anchors", default=os.path.join(REPO, "..", "shared", "anchors"),
                    help="the anchors to copy (default ../shared/anchors)")
    ap.add_argument("--out", help="scratch folder (default a new /tmp/gloo_lite_cluster.*)")
    ap.add_argument("--plot", metavar="PNG", help="busbw and time against size")
    ap.add_argument("--json", metavar="FILE", help="records, table and metadata as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="the table as markdown")
    ap.add_argument("--check", type=float, metavar="PCT",
                    help="check gloo_lite (what the CI test runs): every value right under auto "
                         "and every algorithm, and from --check-from on auto's time within PCT%% "
                         "of the fastest forced algorithm; a case that misses only on time runs "
                         "again (--retries). Prints the verdicts; exit 1 for wrong values or a "
                         "failure, 3 for time misses only")
    ap.add_argument("--check-from", default="1M", metavar="SIZE",
                    help="the smallest size whose time --check checks (1M)")
    ap.add_argument("--retries", type=int, default=1,
                    help="with --check: reruns of a case that misses on time, auto and the "
                         "fastest forced algorithm only; the faster time counts (1)")
    ap.add_argument("--self-test", action="store_true",
                    help="fixture tests (parsing, link limits, table); no root, runs nothing")
    a = ap.parse_args(argv)
    if a.self_test:
        return a
    if not a.hosts:
        ap.error("--hosts is required (e.g. 4x2 or 3,3,2)")
    try:
        a.shape = topology.parse_hosts(a.hosts)
        a.rate_bits, a.rate_tc = topology.parse_rate(a.link)
        a.size_list = model.parse_sizes(a.sizes)
        a.check_from_bytes = model.parse_size(a.check_from)
    except ValueError as e:
        ap.error(str(e))
    a.coll_list = [c for c in a.collectives.split(",") if c]
    for c in a.coll_list:
        if c not in topology.COLLECTIVES:
            ap.error("unknown collective %s (have %s)" % (c, ", ".join(topology.COLLECTIVES)))
    a.lib_list = [x.strip() for x in a.libs.split(",") if x.strip()]
    for x in a.lib_list:
        if x not in ("gloo_lite", "gloo", "mpi"):
            ap.error("unknown library %s (gloo_lite, gloo, mpi)" % x)
    if a.check is not None and (a.check < 0 or "gloo_lite" not in a.lib_list):
        ap.error("--check PCT needs PCT >= 0 and gloo_lite among --libs")
    if a.retries < 0:
        ap.error("--retries must be >= 0")
    a.gloo_map = model.gloo_algo_map(a.gloo_algos)
    return a


def preflight():
    """Why the harness cannot run here, or None."""
    if os.geteuid() != 0:
        return ("benchmark/cluster needs root: it makes network namespaces, veths and tc "
                "qdiscs (run it as root; --self-test needs nothing)")
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            return "benchmark/cluster needs iproute2's %s" % tool
    return None


# ---------------------------------------------------------------------------------------------
# launching ranks in their namespaces

def launch(cl, shape, cmds, envs, timeout, cwd, logdir, name):
    """Starts rank r's command in its host's namespace (ranks P-1..1 in the background, their
    output to logdir, rank 0 in the foreground), waits for all; kills the rest when one fails.
    Returns (rc, rank 0's stdout, error text)."""
    hosts = topology.host_of_rank(shape)
    procs = []
    for r in range(len(cmds) - 1, 0, -1):
        with open(os.path.join(logdir, "%s.rank%d.log" % (name, r)), "w") as fh:
            procs.append((r, runner._popen(cl.exec_prefix(hosts[r]) + cmds[r], cwd=cwd,
                                           env=envs[r], stdout=fh, stderr=subprocess.STDOUT)))
    rc, out, err = runner._run(cl.exec_prefix(hosts[0]) + cmds[0], timeout, cwd=cwd,
                               env=envs[0])
    for r, p in procs:
        try:
            prc = runner._reap(p, timeout=5 if rc != 0 else timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            prc = runner._reap(p)
        if prc != 0:
            with open(os.path.join(logdir, "%s.rank%d.log" % (name, r))) as fh:
                err += "\n[rank %d rc %d] %s" % (r, prc, fh.read()[-400:])
            if rc == 0:
                rc = 99
    return rc, out, err


def base_env():
    env = dict(os.environ)
    for k in ("GLOO_LITE_HOSTNAME", "GLOO_LITE_IFNAME", "GLOO_LITE_TRANSPORT", "GLOO_LITE_ALGO",
              "GLOO_LITE_RANK", "GLOO_LITE_SIZE", "GLOO_LITE_STORE", "GLOO_LITE_HOST_ID"):
        env.pop(k, None)
    return env


class ClusterRun:
    def __init__(self, cfg, cl, scratch, run, store_port):
        self.cfg, self.cl, self.scratch, self.run = cfg, cl, scratch, run
        self.shape = cfg.shape
        self.P = sum(cfg.shape)
        self.hosts = topology.host_of_rank(cfg.shape)
        self.store = "tcp://%s:%d" % (netns.HUB_ADDRESS, store_port)
        self.logdir = os.path.join(scratch, "runs")
        self.seq = 0

    def annotate(self, recs, coll, size, pass_no, wall):
        for r in recs:
            r["size"] = size
            r["hosts"] = topology.shape_name(self.shape)
            r["link"] = self.cfg.link
            r["link_limit_us"] = topology.link_limit_us(coll, r.get("bytes") or size,
                                                        self.shape, self.cfg.rate_bits)
            r["link_frac"] = topology.fraction(r["link_limit_us"], r.get("time_us"))
            r["pass_no"] = pass_no
            r["wall_s"] = round(wall, 2)
            r.setdefault("status", "ok")
        return recs

    def failed(self, lib, variant, coll, size, rc, err):
        runner.log("    %s/%s FAILED rc=%s: %s" % (lib, variant, rc, (err or "")[-600:]))
        return [model.Record(lib=lib, variant=variant, coll=coll, P=self.P, size=size,
                             bytes=size, time_us=0.0, algbw=0.0, busbw=0.0, wrong=0,
                             status="failed", rc=rc, error=(err or "")[-600:])]

    def gloo_lite(self, coll, size, pass_no, algos=None):
        """One gloo_lite_bench run of every rank: -A `algos` (default --algos)."""
        algos = algos or self.cfg.algos
        self.seq += 1
        name = "gl%d" % self.seq
        json_path = os.path.join(self.logdir, name + ".json")
        bench = self.run.gloo_lite_bench_cmd(algos, coll, self.P, size, json_path)
        cmds, envs = [], []
        for r in range(self.P):
            env = base_env()
            env.update(GLOO_LITE_RANK=str(r), GLOO_LITE_SIZE=str(self.P),
                       GLOO_LITE_PREFIX="cluster.%s" % name, GLOO_LITE_STORE=self.store,
                       GLOO_LITE_HOST_ID=self.cl.namespace(self.hosts[r]),
                       GLOO_LITE_TIMEOUT_MS=str(int(self.cfg.timeout * 1000)))
            cmds.append(bench)
            envs.append(env)
        t0 = time.monotonic()
        rc, out, err = launch(self.cl, self.shape, cmds, envs, self.cfg.timeout, self.scratch,
                              self.logdir, name)
        wall = time.monotonic() - t0
        recs = []
        try:
            # also after a failure: gloo_lite_bench exits 1 after a sweep that found wrong
            # values, and its JSON then says which algorithm computed them
            with open(json_path) as fh:
                recs = model.parse_gloo_lite_json(fh.read(), size=size)
        except (OSError, ValueError, KeyError) as e:
            if rc == 0:
                rc, err = 98, err + "\n(cannot parse %s: %s)" % (json_path, e)
        recs = [r for r in recs if r["coll"] == coll]
        for r in recs:
            if r["wrong"]:
                r["status"] = "wrong"
        if not recs or (rc != 0 and not any(r["wrong"] for r in recs)):
            return self.failed("gloo_lite", algos, coll, size, rc or 97, err + out)
        if rc != 0:
            runner.log("    gloo_lite WRONG VALUES (rc %s) under %s" % (rc, ", ".join(
                r["variant"] for r in recs if r["wrong"])))
        return self.annotate(recs, coll, size, pass_no, wall)

    def gloo(self, algo, coll, size, pass_no):
        store = tempfile.mkdtemp(prefix="store.", dir=os.path.join(self.run.anchor_dir, ".run"))
        cmds = self.run.gloo_cmds(algo, coll, self.P, size, store)
        envs = [dict(base_env(), GLOO_ANCHOR_HOSTNAME=self.cl.address(self.hosts[r]))
                for r in range(self.P)]
        self.seq += 1
        t0 = time.monotonic()
        rc, out, err = launch(self.cl, self.shape, cmds, envs, self.cfg.timeout,
                              self.run.anchor_dir, self.logdir, "gloo%d" % self.seq)
        wall = time.monotonic() - t0
        recs = model.parse_anchor_csv(out, size=size) if rc == 0 else []
        shutil.rmtree(store, ignore_errors=True)
        if rc != 0 or not recs:
            return self.failed("gloo", algo, coll, size, rc or 97, err)
        for r in recs:
            r["variant"] = algo
        return self.annotate(recs, coll, size, pass_no, wall)


    def mpi(self, coll, size, pass_no):
        """Open MPI: mpirun in the hub, one orted per host started by the rsh agent in the
        host's namespace (and its own UTS namespace, see MPI_AGENT), ob1 with TCP across hosts
        and vader inside one."""
        cmd = self.run.mpi_cmd("ob1_tcp", coll, self.P, size)
        tail = cmd[cmd.index("-np"):]
        tail[3] = "ob1_tcp_vader"  # mpi_bench's label
        cmd = ["mpirun", "--hostfile", self.mpi_hostfile, "--map-by", "slot",
               "--mca", "plm_rsh_agent", self.mpi_agent] + MPI_OPTS + tail
        t0 = time.monotonic()
        rc, out, err = runner._run(self.cl.exec_prefix("hub") + cmd, self.cfg.timeout,
                                   cwd=self.run.anchor_dir, env=base_env())
        wall = time.monotonic() - t0
        recs = model.parse_anchor_csv(out, size=size) if rc == 0 else []
        if rc != 0 or not recs:
            return self.failed("openmpi", "ob1_tcp_vader", coll, size, rc or 97, err)
        return self.annotate(recs, coll, size, pass_no, wall)

    def prepare_mpi(self):
        """The rsh agent and the hostfile (one line per host namespace, its ranks as slots)."""
        self.mpi_agent = os.path.join(self.scratch, "netns_agent.sh")
        with open(self.mpi_agent, "w") as fh:
            fh.write(MPI_AGENT)
        os.chmod(self.mpi_agent, 0o755)
        self.mpi_hostfile = os.path.join(self.scratch, "hostfile")
        with open(self.mpi_hostfile, "w") as fh:
            for h, r in enumerate(self.shape):
                fh.write("%s slots=%d\n" % (self.cl.namespace(h), r))


# mpirun's rsh agent: "agent HOST COMMAND..." runs the orted command in namespace HOST. The
# simulated hosts share one kernel hostname, and Open MPI names its per-host files after it
# (session directory, vader's shared-memory segments): under one name, two hosts' local rank 0
# opened the same segment and crashed (SIGSEGV, PMIx NO-PERMISSIONS). Each orted therefore gets
# a UTS namespace with the host's namespace name as its hostname.
MPI_AGENT = """#!/bin/sh
host=$1
shift
exec ip netns exec "$host" unshare --uts /bin/sh -c "hostname $host && exec $*"
"""
# TCP across hosts on the cluster's addresses only, vader (shared memory) inside a host
MPI_OPTS = ["--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1",
            "--mca", "btl", "tcp,vader,self", "--mca", "btl_tcp_if_include", "192.0.2.0/24",
            "--mca", "btl_tcp_disable_family", "6", "--mca", "oob_tcp_if_include",
            "192.0.2.0/24", "--mca", "oob_tcp_disable_ipv6_family", "true"]


def meta_info(cfg, argv):
    return dict(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        command="benchmark/cluster " + " ".join(argv), host=platform.node(),
        cpus=os.cpu_count(), loadavg_start=open("/proc/loadavg").read().split()[:3],
        hosts=topology.shape_name(cfg.shape), ranks=sum(cfg.shape), link=cfg.link,
        link_bits_per_s=cfg.rate_bits,
        gloo_lite_rev=compare_cli._version(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]),
        gloo_version=compare_cli._version(["dpkg-query", "-W", "-f=${Version}", "libgloo-dev"]),
        openmpi_version=compare_cli._version(["dpkg-query", "-W", "-f=${Version}",
                                              "openmpi-bin"]))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cfg = parse_args(argv)
    if cfg.self_test:
        from . import selftest
        return selftest.main()
    why = preflight()
    if why:
        runner.log(why)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)

    scratch = os.path.abspath(cfg.out) if cfg.out else tempfile.mkdtemp(
        prefix="gloo_lite_cluster.%s." % time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.join(scratch, "runs"), exist_ok=True)
    meta = meta_info(cfg, argv)
    cl = netns.Cluster(len(cfg.shape), cfg.rate_tc)
    records, interrupted, rc = [], False, 0
    try:
        _run_all(cfg, cl, scratch, meta, records)
    except KeyboardInterrupt:
        interrupted = True
        runner.log("cluster: interrupted")
    except RuntimeError as e:
        runner.log("cluster: %s" % e)
        rc = 1
    finally:
        # also on failure and Ctrl-C: no rank, store or namespace outlives the run
        # (a second Ctrl-C or SIGTERM must not cut the teardown short)
        stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in stops}
        try:
            runner.kill_active()
            cl.teardown()
            left = cl.leftovers()
            if left:  # a namespace that an interrupted setup's last `ip` made after the listing
                cl.teardown()
                left = cl.leftovers()
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        if left:
            runner.log("cluster: could not delete namespaces %s" % " ".join(left))
            rc = 1
        elif cl.made:
            runner.log("cluster: removed namespaces %s*" % cl.prefix)
    meta["interrupted"] = interrupted
    if not records:
        return rc or (130 if interrupted else 1)
    return report(cfg, meta, records, scratch) or rc or (130 if interrupted else 0)


def _run_all(cfg, cl, scratch, meta, records):
    """Builds the cluster and runs every case, appending to `records` (kept when interrupted)."""
    bins = {}
    build = runner.find_build(REPO, cfg.build) if "gloo_lite" in cfg.lib_list else None
    if "gloo_lite" in cfg.lib_list:
        if build is None:
            raise RuntimeError("no gloo_lite build with benchmark/gloo_lite_bench (--build DIR; "
                               "cmake --build build --target gloo_lite_bench gloo_lite_run "
                               "gloo_lite_store)")
        store_bin = os.path.join(build, "tools", "gloo_lite_store")
        if not os.access(store_bin, os.X_OK):
            raise RuntimeError("no %s (cmake --build %s --target gloo_lite_store)"
                               % (store_bin, build))
        meta["build"] = build
        build = runner.snapshot_build(build, scratch)
        shutil.copy2(store_bin, os.path.join(build, "tools", "gloo_lite_store"))
    want_gloo = "gloo" in cfg.lib_list
    want_mpi = "mpi" in cfg.lib_list
    mpi_note = "not asked for"
    if want_mpi and not (shutil.which("mpirun") and shutil.which("unshare")):
        want_mpi = False
        mpi_note = "not run: no mpirun or unshare (scripts/install-bench-deps.sh)"
        runner.log("cluster: Open MPI %s" % mpi_note)
    if want_gloo or want_mpi:
        if os.path.isdir(cfg.anchors):
            bins = runner.prepare_anchors(os.path.abspath(cfg.anchors), scratch, want_gloo,
                                          want_mpi)
        else:
            runner.log("cluster: no anchors at %s; no Gloo or Open MPI" % cfg.anchors)
    if want_mpi:
        mpi_note = "mpirun in the hub, orted per host namespace (rsh agent), ob1 tcp+vader"
    meta["openmpi"] = mpi_note

    cfg.gl_iters, cfg.gl_mode = "auto", "best"
    run = runner.Runner(cfg, scratch, bins, build)
    run.gl_auto_iters = True  # gloo_lite_bench --size-time
    runner.log("cluster: scratch %s; hosts %s (%d ranks), links %s" % (
        scratch, topology.shape_name(cfg.shape), sum(cfg.shape), cfg.link))
    cl.setup()
    meta["qdiscs"] = cl.qdiscs()
    store_log = open(os.path.join(scratch, "runs", "store.log"), "w")
    if build:
        runner._popen(cl.exec_prefix("hub") + [os.path.join(build, "tools", "gloo_lite_store"),
                                               "--host", "0.0.0.0", "--port", str(STORE_PORT)],
                      stdout=store_log, stderr=subprocess.STDOUT)
        for _ in range(50):
            time.sleep(0.1)
            with open(store_log.name) as fh:
                if "tcp://" in fh.read():
                    break
        else:
            raise RuntimeError("gloo_lite_store did not start in the hub namespace")
    cr = ClusterRun(cfg, cl, scratch, run, STORE_PORT)
    if want_mpi:
        cr.prepare_mpi()
    raw = open(os.path.join(scratch, "raw.jsonl"), "a")
    for pass_no in range(1, cfg.passes + 1):
        for coll in cfg.coll_list:
            sizes = [0] if coll == "barrier" else cfg.size_list
            for size in sizes:
                recs = []
                if build:
                    recs += cr.gloo_lite(coll, size, pass_no)
                for algo in cfg.gloo_map.get(coll, ()) if "gloo" in cfg.lib_list else ():
                    if run.available("gloo", coll):
                        recs += cr.gloo(algo, coll, size, pass_no)
                if want_mpi and coll in model.COLLECTIVES and run.available("openmpi", coll):
                    recs += cr.mpi(coll, size, pass_no)
                _keep(recs, raw, records)
    if cfg.check is not None and build:
        _retry_time_misses(cfg, cr, raw, records)


def _keep(recs, raw, records):
    """Logs the records of one case, appends them to raw.jsonl and to `records`."""
    for r in recs:
        raw.write(json.dumps(r) + "\n")
        status = r.get("status")
        runner.log("  %-14s %6s %-9s %-18s %s" % (
            r["coll"], topology._size(r["size"]), r["lib"], r["variant"],
            "WRONG VALUES (%d)" % r["wrong"] if status == "wrong" else "FAILED"
            if status != "ok" else "%.1f us, %s of link%s" % (
                r["time_us"], "-" if r.get("link_frac") is None else "%.2f" % r["link_frac"],
                " (ran %s)" % r.get("chosen") if r["variant"] == "auto" else "")))
    raw.flush()
    records.extend(recs)


def _retry_time_misses(cfg, cr, raw, records):
    """--check: runs each case that missed only on time again, auto and the fastest forced
    algorithm only (not the whole case: the CI test's time), up to --retries times."""
    for attempt in range(1, cfg.retries + 1):
        misses = check.time_misses(check.verdicts(records, cfg.check / 100.0,
                                                  cfg.check_from_bytes))
        if not misses:
            return
        runner.log("cluster: --check: %d case(s) slower than allowed, running them again (%d "
                   "of %d)" % (len(misses), attempt, cfg.retries))
        for v in misses:
            recs = cr.gloo_lite(v["coll"], v["size"], cfg.passes + attempt,
                                algos="auto," + v["best"])
            for r in recs:
                r["retry"] = attempt
            _keep(recs, raw, records)


def report(cfg, meta, records, scratch):
    best = model.best_of_passes(records)
    rows = topology.table_rows(best)
    head = "benchmark/cluster %s: hosts %s (%d ranks), links %s both ways, %s, %d CPUs" % (
        meta["date"], meta["hosts"], meta["ranks"], meta["link"], meta["host"], meta["cpus"])
    text = head + "\n\n" + topology.render_text(rows) + "\n\n" + (
        "time: max over ranks of the mean per call; busbw: nccl-tests factors over all ranks; "
        "of link: the link limit / time (docs/benchmarking.md); * the fastest of its size\n")
    if meta.get("interrupted"):
        text += "INTERRUPTED: partial results\n"
    sys.stdout.write(text)
    md = topology.render_markdown(rows)
    for path in [os.path.join(scratch, "table.md")] + ([cfg.markdown] if cfg.markdown else []):
        with open(path, "w") as fh:
            fh.write(md + "\n")
    with open(os.path.join(scratch, "table.txt"), "w") as fh:
        fh.write(text)
    result = dict(meta=meta, config={k: v for k, v in vars(cfg).items()
                                     if isinstance(v, (str, int, float, bool, list, type(None)))},
                  records=best, table=[dict(zip(topology.COLUMNS, r)) for r in rows])
    for path in [os.path.join(scratch, "results.json")] + ([cfg.json] if cfg.json else []):
        with open(path, "w") as fh:
            json.dump(result, fh, indent=1)
    if cfg.plot:
        title = "cluster %s x links %s, %s" % (meta["hosts"], meta["link"], meta["date"])
        if compare_cli.make_plot(best, cfg.plot, title):
            runner.log("cluster: plot written to %s" % cfg.plot)
    runner.log("cluster: results in %s (table.txt, table.md, results.json, raw.jsonl)" % scratch)
    if cfg.check is not None:
        return _report_check(cfg, records, scratch)
    bad = [r for r in records if r["lib"] == "gloo_lite" and (r.get("status") != "ok"
                                                              or r.get("wrong"))]
    return 1 if bad else 0


def _report_check(cfg, records, scratch):
    """--check: prints the verdicts (also to check.txt and check.json); the exit status."""
    tol = cfg.check / 100.0
    vs = check.verdicts(records, tol, cfg.check_from_bytes)
    text = check.render(vs, tol, cfg.check_from_bytes)
    sys.stdout.write("\n" + text + "\n")
    with open(os.path.join(scratch, "check.txt"), "w") as fh:
        fh.write(text + "\n")
    with open(os.path.join(scratch, "check.json"), "w") as fh:
        json.dump(dict(tolerance=tol, check_from=cfg.check_from_bytes, verdicts=vs), fh,
                  indent=1)
    return check.exit_status(vs)
