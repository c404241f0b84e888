#!/usr/bin/env python3
"""Plot the partitioned-smoothing scaling figures of docs/benchmarks.md.

Usage: python3 scripts/plot_scaling.py OUT.png
The numbers are those printed by `meshbatch bench smooth --distribute
partitioned` on 2026-11-21 (2x and 4x NVIDIA H200, one host); edit the
tables below when new runs are made.
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# strong scaling: igea subdivided 4 levels (34.4 M vertices), float32 uniform
STRONG_GPUS = [1, 2, 4]
STRONG_MS = [0.7250, 0.4155, 0.2494]
T1 = 0.7188  # per-mesh kernel on one GPU, same invocation as the 1-GPU run
# weak scaling: about 8.6 M vertices per GPU (igea 3 levels on 1, 4 levels on 4)
WEAK_GPUS = [1, 4]
WEAK_MS = [0.1907, 0.2494]


def main(out):
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    a.plot(STRONG_GPUS, [T1 / t for t in STRONG_MS], "o-", label="measured")
    a.plot(STRONG_GPUS, STRONG_GPUS, "k--", lw=0.8, label="ideal")
    a.set(xlabel="GPUs (H200)", ylabel="speed-up over 1 GPU", xticks=STRONG_GPUS,
          title="strong scaling, 34.4 M vertices")
    a.legend()
    b.plot(WEAK_GPUS, [WEAK_MS[0] / t for t in WEAK_MS], "o-", label="measured")
    b.axhline(1.0, color="k", ls="--", lw=0.8, label="ideal")
    b.set(xlabel="GPUs (H200)", ylabel="weak-scaling efficiency", xticks=[1, 2, 4],
          ylim=(0, 1.1), title="weak scaling, 8.6 M vertices per GPU")
    b.legend()
    fig.suptitle("meshbatch partitioned Taubin pass (float32, uniform weights)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "scaling.png")
