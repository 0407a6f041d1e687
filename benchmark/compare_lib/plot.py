"""busbw and latency against size, one line per library/variant, one column per P, two rows
(busbw, time) per collective, and a barrier panel (time against P).

Uses matplotlib (Debian's python3-matplotlib). When the interpreter running compare cannot import
it (e.g. a pyenv Python), compare runs this module under /usr/bin/python3:
    python3 -m compare_lib.plot best.json out.png
where best.json is {"records": [...best records...], "title": "..."}.
"""

import json
import sys

from . import model, report

STYLE = {
    ("gloo_lite", None): dict(color="#d62728", lw=2.4, marker="o", ls="-"),
    ("openmpi", "ob1_tcp"): dict(color="#2ca02c", lw=1.6, marker="s", ls="-"),
    ("openmpi", "ob1_vader"): dict(color="#2ca02c", lw=1.2, marker="s", ls=":"),
}
GLOO_COLORS = ["#1f77b4", "#17becf", "#9467bd", "#8c564b", "#7f7f7f", "#bcbd22", "#e377c2",
               "#393b79"]


def label(lib, variant):
    if lib == "gloo_lite":
        return "gloo_lite %s" % variant
    if lib == "gloo":
        return "Gloo %s" % variant
    return {"ob1_tcp": "Open MPI TCP", "ob1_vader": "Open MPI shm",
            "ob1_tcp_vader": "Open MPI TCP+shm"}.get(variant, variant)


def series(records):
    """-> {coll: {P: {(lib, variant): [(size, bytes, time_us, busbw), ...sorted]}}}"""
    out = {}
    for r in records:
        if r.get("status", "ok") != "ok" or not r.get("time_us") or r.get("wrong"):
            continue
        d = out.setdefault(r["coll"], {}).setdefault(r["P"], {}).setdefault(
            (r["lib"], r["variant"]), [])
        d.append((r["size"], r["bytes"], r["time_us"], r["busbw"]))
    for c in out.values():
        for p in c.values():
            for v in p.values():
                v.sort()
    return out


def _style(lib, variant, gloo_idx):
    if lib == "gloo_lite":
        s = dict(STYLE[("gloo_lite", None)])
        if variant != "auto":
            s.update(lw=1.2, ls="-.", color="#ff7f0e")
        return s
    if lib == "gloo":
        return dict(color=GLOO_COLORS[gloo_idx % len(GLOO_COLORS)], lw=1.2, marker="^", ls="--")
    return dict(STYLE.get((lib, variant), dict(color="k", lw=1, marker="x", ls="-")))


def _order(keys):
    rank = {"gloo_lite": 0, "gloo": 1, "openmpi": 2}
    return sorted(keys, key=lambda k: (rank.get(k[0], 9), k[0] != "gloo_lite" or k[1] != "auto",
                                       k[1]))


def draw(records, out_png, title=""):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = series(records)
    # compare's collectives first; benchmark/cluster also runs reduce, gather, scatter, alltoall
    colls = [c for c in model.COLLECTIVES if c in data and c != "barrier"] + sorted(
        c for c in data if c not in model.COLLECTIVES)
    Ps = sorted({p for c in data.values() for p in c})
    has_barrier = "barrier" in data
    nrows = 2 * len(colls) + (1 if has_barrier else 0)
    ncols = max(1, len(Ps))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 2.9 * nrows), squeeze=False)
    gloo_idx = {}
    handles = {}

    def plot_line(ax, key, xs, ys):
        lib, variant = key
        if lib == "gloo" and variant not in gloo_idx:
            gloo_idx[variant] = len(gloo_idx)
        st = _style(lib, variant, gloo_idx.get(variant, 0))
        (h,) = ax.plot(xs, ys, markersize=4, label=label(lib, variant), **st)
        handles.setdefault(label(lib, variant), h)

    for ci, coll in enumerate(colls):
        # busbw of latency-sized messages squashes the axis: leave them out when there is more
        big = any(not report.is_latency_row(coll, p[0]) for d in data[coll].values()
                  for v in d.values() for p in v)
        for pj, P in enumerate(Ps):
            axb, axt = axes[2 * ci][pj], axes[2 * ci + 1][pj]
            for key in _order(data[coll].get(P, {}).keys()):
                pts = data[coll][P][key]
                xs = [max(p[1], 1) for p in pts]
                bw = [(p[1], p[3]) for p in pts if p[3] > 0 and
                      (not big or not report.is_latency_row(coll, p[0]))]
                if bw:
                    plot_line(axb, key, [b[0] for b in bw], [b[1] for b in bw])
                plot_line(axt, key, xs, [p[2] for p in pts])
            for ax, yl in ((axb, "busbw GB/s"), (axt, "time us")):
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.grid(True, which="both", alpha=0.3)
                ax.set_ylabel(yl, fontsize=8)
                ax.tick_params(labelsize=7)
            axb.set_title("%s  P=%d  busbw" % (coll, P), fontsize=9)
            axt.set_title("%s  P=%d  latency" % (coll, P), fontsize=9)
            axt.set_xlabel("bytes", fontsize=8)
    if has_barrier:
        ax = axes[nrows - 1][0]
        for key in _order({k for p in data["barrier"].values() for k in p}):
            pts = sorted((P, v[0][2]) for P, d in data["barrier"].items()
                         for k, v in d.items() if k == key)
            plot_line(ax, key, [p[0] for p in pts], [p[1] for p in pts])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(Ps)
        ax.set_xticklabels([str(p) for p in Ps])
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title("barrier latency", fontsize=9)
        ax.set_xlabel("P", fontsize=8)
        ax.set_ylabel("time us", fontsize=8)
        ax.tick_params(labelsize=7)
        for pj in range(1, ncols):
            axes[nrows - 1][pj].axis("off")
    names = list(handles)
    width_in, height_in = 4.6 * ncols, 2.9 * nrows
    ncol = max(1, min(len(names), int(width_in / 2.0)))
    legend_in = 0.17 * ((len(names) + ncol - 1) // ncol) + 0.15
    title_in = 0.4 if title else 0.0
    fig.set_size_inches(width_in, height_in + legend_in + title_in)
    total = height_in + legend_in + title_in
    if title:
        fig.suptitle(title, fontsize=10, y=1.0 - 0.08 / total, va="top")
    fig.legend([handles[n] for n in names], names, loc="upper center", ncol=ncol,
               fontsize=8, frameon=False, bbox_to_anchor=(0.5, 1.0 - title_in / total))
    fig.tight_layout(rect=(0, 0, 1, 1.0 - (legend_in + title_in) / total))
    fig.savefig(out_png, dpi=80)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        print("usage: python3 -m compare_lib.plot best.json out.png", file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        d = json.load(fh)
    draw(d["records"], argv[2], d.get("title", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
