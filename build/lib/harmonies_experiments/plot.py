"""Plot learning curves from run folders' `eval.csv` to a PNG: evaluation figures against training steps (bottom
axis) and training wall minutes (top axis). Needs matplotlib (in `.[train]`).

    python -m experiments.plot runs/solo_ppo --metric mean_score --out benchmarks/img/ppo_solo.png
    python -m experiments.plot runs/vs_random runs/vs_greedy --metric win_rate --metric mean_score \\
        --label "vs random" --label "vs greedy" --ref "mean_score:greedy=89" --out benchmarks/img/ppo_versus.png

Each --metric is one panel; each run one line (its --label, else the folder name). A horizontal reference line
can be drawn in a metric's panel with --ref "METRIC:LABEL=VALUE" (e.g. a heuristic's figure), repeatable.
"""
from __future__ import annotations

import argparse
import io
from pathlib import Path

from .common import atomic_write_bytes, read_csv


def plot(runs: list[Path], metrics: list[str], out: Path, labels: list[str] | None = None,
         refs: list[tuple[str, str, float]] | None = None, title: str = "") -> Path:
    """Write the PNG (atomically); returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    labels = labels or [r.name for r in runs]
    if len(labels) != len(runs):
        raise SystemExit(f"{len(labels)} --label for {len(runs)} runs")
    tables = []
    for r in runs:
        f = r / "eval.csv"
        if not f.exists():
            raise SystemExit(f"{r}: no eval.csv (is it a run folder of python -m experiments.train?)")
        tables.append(read_csv(f))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for rows, label in zip(tables, labels):
            pts = [(int(x["timesteps"]), float(x[metric]), float(x["minutes"]), x.get("cpu_minutes", ""))
                   for x in rows if x.get(metric, "")]
            if not pts:
                continue
            steps, vals, mins, cpu = zip(*pts)
            took = f"{mins[-1]:.0f} min" + (f", {float(cpu[-1]):.0f} CPU-min" if cpu[-1] else "")
            ax.plot(steps, vals, marker="o", markersize=3, label=f"{label} ({took})")
        for ref_metric, name, value in refs or []:
            if ref_metric != metric:
                continue
            ax.axhline(value, color="grey", linestyle="--", linewidth=1)
            ax.annotate(name, (0, value), textcoords="offset points", xytext=(4, 3), fontsize=8, color="grey",
                        xycoords=("axes fraction", "data"))
        ax.xaxis.set_major_formatter(FuncFormatter(_steps_label))
        ax.set_xlim(left=0)
        ax.set_xlabel("training steps (learner actions)")
        ax.set_ylabel(metric.replace("_", " "))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return atomic_write_bytes(out, buf.getvalue())


def _steps_label(x: float, _pos: int) -> str:
    return f"{x / 1e6:g}M" if x >= 1e6 else f"{x / 1e3:g}k" if x else "0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (each with an eval.csv)")
    ap.add_argument("--metric", action="append", default=None, help="eval.csv column, one panel each "
                    "(default: mean_score)")
    ap.add_argument("--label", action="append", default=None, help="legend label per run, in order")
    ap.add_argument("--ref", action="append", default=[], metavar="METRIC:LABEL=VALUE",
                    help="reference line in METRIC's panel")
    ap.add_argument("--title", default="")
    ap.add_argument("--out", type=Path, required=True, help="PNG to write")
    a = ap.parse_args(argv)
    refs = []
    for r in a.ref:
        head, sep, value = r.rpartition("=")
        metric, colon, name = head.partition(":")
        if not sep or not colon:
            raise SystemExit(f"--ref takes METRIC:LABEL=VALUE, got {r!r}")
        refs.append((metric, name, float(value)))
    print(plot(a.runs, a.metric or ["mean_score"], a.out, a.label, refs, a.title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
