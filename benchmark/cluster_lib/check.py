"""benchmark/cluster --check PCT: the verdicts that the CI test (test/netns/cluster_test.sh) rests
on, one per (collective, size) of gloo_lite. Pure functions over the records: the self-test
covers them without root.

A case passes when
  - every run of it finished and computed the right values: gloo_lite_bench -c 1 compares
    every output element on every rank with bench_values' reference and exits 1 on a wrong
    one; the harness keeps its per-algorithm counts (status 'wrong') or the failure. Every
    pass and retry counts here: a wrong value is never outvoted by a later good run;
  - auto ran, and on the checked sizes at least one forced algorithm;
  - on sizes from `from_size` on (the large ones, where the link and not latency bounds the
    time), auto's time is at most (1 + tolerance) times the fastest forced algorithm's. Times
    are the best over passes and retries (model.best_of_passes), so that one noisy moment of a
    shared machine does not decide. Barrier moves no bytes and has no large size: its timing is
    not checked.
"""

from compare_lib import model

from . import topology

OK, WRONG, FAILED, SLOW = "ok", "WRONG VALUES", "FAILED", "SLOW"


def _case(r):
    return (r["coll"], r["size"])


def verdicts(records, tolerance, from_size):
    """records: every gloo_lite record of every pass and retry (others are ignored). Returns
    one dict per (collective, size), in the table's order: coll, size, verdict (OK, WRONG,
    FAILED or SLOW), why, auto_us, chosen (what auto ran), best (the fastest forced
    algorithm), best_us, ratio (auto / best), checked (whether the time was checked)."""
    order = {c: i for i, c in enumerate(topology.COLLECTIVES)}
    mine = [r for r in records if r["lib"] == "gloo_lite"]
    cases = sorted({_case(r) for r in mine}, key=lambda k: (order.get(k[0], 99), k[1]))
    best = model.best_of_passes([r for r in mine if r.get("status", "ok") == "ok"])
    out = []
    for coll, size in cases:
        runs = [r for r in mine if _case(r) == (coll, size)]
        fast = {r["variant"]: r for r in best if _case(r) == (coll, size)}
        auto = fast.get("auto")
        forced = [r for v, r in fast.items() if v != "auto"]
        top = min(forced, key=lambda r: r["time_us"]) if forced else None
        v = dict(coll=coll, size=size, verdict=OK, why="", auto_us=auto and auto["time_us"],
                 chosen=auto and auto.get("chosen"), best=top and top["variant"],
                 best_us=top and top["time_us"], ratio=None,
                 checked=coll != "barrier" and size >= from_size)
        if auto and top:
            v["ratio"] = auto["time_us"] / top["time_us"]
        wrong = sorted({"%s (%d wrong)" % (r["variant"], r["wrong"]) for r in runs
                        if r.get("wrong")})
        failed = [r for r in runs if r.get("status", "ok") not in ("ok", "wrong")]
        if wrong:
            v["verdict"], v["why"] = WRONG, "wrong values under " + ", ".join(wrong)
        elif failed:
            v["verdict"] = FAILED
            v["why"] = "; ".join("pass %s, -A %s: rc %s: %s" % (
                r.get("pass_no"), r["variant"], r.get("rc"),
                " ".join((r.get("error") or "").split())[-300:]) for r in failed)
        elif not auto:
            v["verdict"], v["why"] = FAILED, "auto did not run"
        elif v["checked"] and not top:
            # nothing to compare auto with: a check that could not fail must not pass
            v["verdict"] = FAILED
            v["why"] = "no forced algorithm ran to compare auto with (--algos all)"
        elif v["checked"] and v["ratio"] is not None and v["ratio"] > 1.0 + tolerance:
            v["verdict"] = SLOW
            v["why"] = "auto (ran %s) %.0f%% slower than %s, allowed %.0f%%" % (
                v["chosen"], (v["ratio"] - 1) * 100, v["best"], tolerance * 100)
        out.append(v)
    return out


def time_misses(vs):
    """The cases worth running again: only a timing miss is retried, never a wrong value or a
    failure."""
    return [v for v in vs if v["verdict"] == SLOW]


def exit_status(vs):
    """1 when a case computed wrong values or failed, 3 when only timing missed, else 0."""
    if any(v["verdict"] in (WRONG, FAILED) for v in vs):
        return 1
    return 3 if any(v["verdict"] == SLOW for v in vs) else 0


CHECK_COLUMNS = ("collective", "size", "auto (us)", "auto ran", "best forced", "best (us)",
                 "auto/best", "verdict")


def render(vs, tolerance, from_size):
    """The verdicts as a text table, misses explained below it."""
    rows = []
    for v in vs:
        rows.append([v["coll"], "-" if v["coll"] == "barrier" else topology._size(v["size"]),
                     "-" if v["auto_us"] is None else "%.1f" % v["auto_us"],
                     v["chosen"] or "-", v["best"] or "-",
                     "-" if v["best_us"] is None else "%.1f" % v["best_us"],
                     "-" if v["ratio"] is None else "%.2f%s" % (
                         v["ratio"], "" if v["checked"] else " (not checked)"),
                     v["verdict"]])
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(CHECK_COLUMNS)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa
    bad = [v for v in vs if v["verdict"] != OK]
    head = ("check: values right under auto and every algorithm (gloo_lite_bench -c 1), and "
            "from %s on auto within %.0f%% of the fastest forced algorithm: %s" % (
                topology._size(from_size), tolerance * 100,
                "PASS" if not bad else "%d of %d cases MISS" % (len(bad), len(vs))))
    text = [head, "", line(CHECK_COLUMNS), line(["-" * w for w in widths])]
    text += [line(r) for r in rows]
    text += ["%s %s %s: %s" % (v["verdict"], v["coll"], topology._size(v["size"]), v["why"])
             for v in bad]
    return "\n".join(text)
