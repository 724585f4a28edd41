"""Plot a learned-agent run's evaluations (progress.csv): win rate vs greedy and mean score, against training games
and hours.

    python -m experiments.plot_learning runs/learned/progress.csv --out docs/img/learned_curve.png
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from pathlib import Path

from harmonies_env.io import atomic_write_bytes


def read_progress(path: str | Path) -> list[dict[str, float]]:
    with open(path, newline="") as f:
        # empty cells (no loss before training, MCTS columns only on the rows that met MCTS) read as NaN
        return [{k: float(v) if v not in ("", None) else math.nan for k, v in row.items()}
                for row in csv.DictReader(f)]


def plot(rows: list[dict[str, float]], out: Path, title: str, baselines: dict[str, float] | None = None) -> None:
    """Two panels (win rate, mean score) over training games, hours on a secondary axis; PNG written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = [r["games"] for r in rows]
    hours = [r["hours"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, label in ((axes[0], "win_rate", "win rate vs greedy (beam 24)"),
                           (axes[1], "mean_score", "mean score")):
        ax.plot(games, [r[key] for r in rows], marker="o", ms=3, label="learned (network only)")
        if key == "mean_score":
            ax.plot(games, [r["greedy_score"] for r in rows], ls="--", color="gray", label="greedy opponent")
        mkey = "mcts_" + key
        met = [r for r in rows if not math.isnan(r.get(mkey, math.nan))]
        if met:  # the rarer evaluations against mcts:200it
            ax.plot([r["games"] for r in met], [r[mkey] for r in met], marker="s", ms=5, ls=":", color="tab:green",
                    label="learned vs mcts:200it (few games)")
        for name, value in (baselines or {}).items():
            if name.startswith(key + ":"):
                ax.axhline(value, ls=":", color="tab:red", label=name.split(":", 1)[1])
        ax.set_xlabel("self-play games")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        top = ax.secondary_xaxis("top", functions=(
            lambda g: _interp(g, games, hours), lambda h: _interp(h, hours, games)))
        top.set_xlabel("hours (2-core CPU)")
    axes[0].axhline(0.5, color="black", lw=0.5)
    fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, buf.getvalue())


def _interp(x, xs, ys):
    import numpy as np

    return np.interp(x, xs, ys) if len(xs) > 1 else x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("progress", help="a run's progress.csv")
    ap.add_argument("--out", default="docs/img/learned_curve.png", help="PNG to write")
    ap.add_argument("--title", default="Afterstate value network, trained from scratch by self-play (2p, Side A)")
    ap.add_argument("--baseline", action="append", default=[], metavar="KEY:NAME=VALUE",
                    help="horizontal line, e.g. 'win_rate:greedy:96 plan 0=0.58', repeatable")
    args = ap.parse_args(argv)
    rows = read_progress(args.progress)
    if not rows:
        print(f"{args.progress}: no evaluation rows yet", file=sys.stderr)
        return 2
    base = {}
    for b in args.baseline:
        k, _, v = b.rpartition("=")
        base[k] = float(v)
    plot(rows, Path(args.out), args.title, base)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
