#!/usr/bin/env python3
"""Plot the split-grid stencil scaling of docs/benchmarks.md from the log of
scripts/gpu-stencil.sh (bench-scaling.log): heat steps per second of the
strong-scaling grid and the weak-scaling efficiency, against the GPU count,
for each halo transport in the log.

Usage: python3 scripts/plot_stencil_scaling.py bench-scaling.log OUT.png
Each "### strong|weak SHAPE, N ranks, halo H[, step S][, blocks B]" section ends with
the benchmark's line "one rank (...) T1 ms per step, N ranks TN ms per
step: ..."; the one-rank figure is the same invocation's. Where a section
holds two such lines (gpu-stencil.sh's STEP=both: the faces-first step,
then the fused one), the last, the fused step's, is plotted.
"""
import re
import sys


def parse(path):
    """{(kind, halo): {gpus: (t1_ms, tn_ms)}} and the shapes per kind."""
    runs, shapes, head = {}, {}, None
    sect = re.compile(r"^### (strong|weak) (\S+?)(?: per rank)?, (\d+) ranks, halo (\w+)"
                      r"(?:, step ([\w-]+))?(?:, blocks (\S+))?")
    line = re.compile(r"one rank \(.*?\) ([\d.]+) ms per step, (\d+) ranks ([\d.]+) ms per step")
    with open(path) as f:
        for text in f:
            m = sect.match(text)
            if m:
                head = (m.group(1), m.group(4) + "".join(
                    f" {k} {v}" for k, v in (("step", m.group(5)), ("blocks", m.group(6))) if v))
                shapes[m.group(1)] = m.group(2)
                continue
            m = line.search(text)
            if m and head:
                runs.setdefault(head, {})[int(m.group(2))] = (float(m.group(1)), float(m.group(3)))
    return runs, shapes


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs, shapes = parse(sys.argv[1])
    if not runs:
        sys.exit("no scaling lines in " + sys.argv[1])
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot (apt-get install python3-matplotlib)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_w) = plt.subplots(1, 2, figsize=(10, 4))
    for (kind, halo), by_n in sorted(runs.items()):
        ns = [1] + sorted(by_n)
        t1 = by_n[ns[1]][0]
        if kind == "strong":
            steps = [1e3 / t1] + [1e3 / by_n[n][1] for n in ns[1:]]
            ax_s.plot(ns, steps, "o-", label=f"halo {halo}")
        else:
            eff = [1.0] + [t1 / by_n[n][1] for n in ns[1:]]
            ax_w.plot(ns, eff, "o-", label=f"halo {halo}")
    for kind, ax in (("strong", ax_s), ("weak", ax_w)):
        ns = sorted({n for (k, _), by_n in runs.items() if k == kind for n in by_n} | {1})
        if kind == "strong" and ns:
            base = [by_n for (k, _), by_n in runs.items() if k == "strong"]
            if base:
                t1 = next(iter(base[0].values()))[0]
                ax.plot(ns, [n * 1e3 / t1 for n in ns], "k--", label="ideal")
        ax.set_xticks(ns)
        ax.set_xlabel("GPUs")
        ax.grid(alpha=0.3)
        ax.legend()
    ax_s.set_ylabel("heat steps per second")
    ax_s.set_title(f"strong scaling, {shapes.get('strong', '?')} float32")
    ax_w.set_ylabel("efficiency (one-GPU step time / N-GPU step time)")
    ax_w.set_ylim(0, 1.1)
    ax_w.set_title(f"weak scaling, {shapes.get('weak', '?')} per GPU")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()
