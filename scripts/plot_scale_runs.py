#!/usr/bin/env python3
"""Plots of the scaling set written by scripts/scale-runs.sh.

Usage: python3 scripts/plot_scale_runs.py RESULTS.tsv [OUTDIR]

Reads the results table (one line per run and series: date_utc, device, gpus,
section, case, series, ranks, size, time_ms, base_ms, speedup, efficiency,
extra) and writes into OUTDIR (default: the table's folder) one PNG per
section that has rows:
  smooth.png   strong-scaling speed-up and weak-scaling efficiency
  permesh.png  meshes per second and rank busy-time balance (max/mean)
  polylla.png  speed-up (kernels, whole call) and weak-scaling efficiency
  stencil.png  strong-scaling speed-up and weak-scaling efficiency
Where a run was repeated, the last line counts. Without matplotlib it says
so and exits 0 (the markdown tables do not need it).
"""
import csv
import os
import sys


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v else None  # NaN -> None


def extra(row):
    out = {}
    for item in (row.get("extra") or "").split(";"):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def load(path):
    """Rows of the table, the last of each (machine, section, case, series, ranks)."""
    rows = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            ranks = number(row.get("ranks"))
            if not row.get("section") or ranks is None:
                continue
            row["ranks"] = int(ranks)
            key = (row.get("device"), row.get("gpus"), row["section"], row.get("case"),
                   row.get("series"), row["ranks"])
            rows[key] = row
    return list(rows.values())


def series_of(rows, section, case):
    """{label: [(ranks, row), ...]} for one section and case, sorted by ranks."""
    machines = {(r.get("device"), r.get("gpus")) for r in rows}
    out = {}
    for r in rows:
        if r["section"] != section or r.get("case") != case:
            continue
        label = r.get("series") or case
        if len(machines) > 1:
            label += " (%s x %s)" % (r.get("device"), r.get("gpus"))
        out.setdefault(label, []).append((r["ranks"], r))
    for v in out.values():
        v.sort(key=lambda p: p[0])
    return out


def speedup(row):
    s = number(row.get("speedup"))
    if s is None:
        t, b = number(row.get("time_ms")), number(row.get("base_ms"))
        s = b / t if t and b else None
    return s


def curve(ax, series, value, ideal=None):
    """One line per series of value(row) over ranks; returns the ranks seen."""
    seen = set()
    for label, pts in sorted(series.items()):
        xs, ys = [], []
        for x, row in pts:
            y = value(row)
            if y is not None:
                xs.append(x)
                ys.append(y)
        if xs:
            ax.plot(xs, ys, "o-", label=label)
            seen.update(xs)
    if seen and ideal == "linear":
        xs = sorted(seen)
        ax.plot(xs, xs, "k--", lw=0.8, label="ideal")
    elif seen and ideal == "one":
        ax.axhline(1.0, color="k", ls="--", lw=0.8, label="ideal")
    if seen:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(seen))
        ax.set_xticklabels([str(x) for x in sorted(seen)])
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no runs", ha="center", va="center", transform=ax.transAxes)
    return seen


def machine_title(rows, section):
    ms = sorted({"%s x %s" % (r.get("device"), r.get("gpus")) for r in rows if r["section"] == section})
    dates = sorted(r.get("date_utc", "")[:10] for r in rows if r["section"] == section)
    span = dates[0] if dates and dates[0] == dates[-1] else (dates[0] + " to " + dates[-1] if dates else "")
    return "; ".join(ms) + (" (%s UTC)" % span if span else "")


def plot_all(rows, outdir, plt):
    written = []
    specs = {
        "smooth": ("meshbatch partitioned smoothing (bench smooth)",
                   [("strong", "speed-up over one GPU", speedup, "linear", "strong scaling"),
                    ("weak", "weak-scaling efficiency", lambda r: number(r.get("efficiency")),
                     "one", "weak scaling (throughput per GPU)")]),
        "permesh": ("meshbatch per-mesh smoothing (meshbatch run, mixed sizes)",
                    [("per-mesh", "meshes per second",
                      lambda r: number(extra(r).get("meshes_per_s")), None, "throughput"),
                     ("per-mesh", "rank busy time max / mean",
                      lambda r: number(extra(r).get("balance")), "one", "balance")]),
        "polylla": ("meshbatch partitioned Polylla (bench polylla grid2d)",
                    [("strong", "speed-up over one GPU", speedup, "linear", "strong scaling"),
                     ("weak", "weak-scaling efficiency", lambda r: number(r.get("efficiency")),
                      "one", "weak scaling (per triangle per GPU)")]),
        "stencil": ("meshbatch stencil heat steps, one grid over GPUs (bench stencil)",
                    [("strong", "speed-up over one GPU", speedup, "linear", "strong scaling"),
                     ("weak", "weak-scaling efficiency", lambda r: number(r.get("efficiency")),
                      "one", "weak scaling")]),
    }
    for section, (title, panels) in specs.items():
        if not any(r["section"] == section for r in rows):
            continue
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8))
        for ax, (case, ylabel, value, ideal, sub) in zip(axes, panels):
            ser = series_of(rows, section, case)
            if section == "permesh" and ideal is None:  # linear from the one-rank rate
                for label, pts in ser.items():
                    base = [value(r) for x, r in pts if x == 1 and value(r) is not None]
                    if base:
                        xs = [x for x, _ in pts]
                        ax.plot(xs, [base[0] * x for x in xs], "k--", lw=0.8)
            curve(ax, ser, value, ideal)
            ax.set(xlabel="ranks (one GPU each)", ylabel=ylabel, title=sub)
            if ideal == "one" and "efficiency" in ylabel:
                ax.set_ylim(bottom=0)
        fig.suptitle("%s\n%s" % (title, machine_title(rows, section)), fontsize=9)
        fig.tight_layout()
        path = os.path.join(outdir, section + ".png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) > 1 else 2
    path = argv[1]
    outdir = argv[2] if len(argv) > 2 else (os.path.dirname(path) or ".")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots: skipped, matplotlib is not installed (apt-get install python3-matplotlib "
              "or pip install matplotlib, then: python3 scripts/plot_scale_runs.py %s)" % path)
        return 0
    if not os.path.exists(path):
        print("plots: %s not found" % path)
        return 0
    rows = load(path)
    if not rows:
        print("plots: no runs in %s" % path)
        return 0
    for p in plot_all(rows, outdir, plt):
        print("plot: %s" % p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
