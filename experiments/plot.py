"""The one plot command: learning curves of training runs to a PNG. Needs matplotlib (in `.[train]`).

    python -m experiments.plot runs/solo_ppo --metric mean_score --out benchmarks/img/ppo_solo.png
    python -m experiments.plot runs/vs_random runs/vs_greedy --metric win_rate --metric mean_score \\
        --label "vs random" --label "vs greedy" --ref "mean_score:greedy=89" --out benchmarks/img/ppo_versus.png
    python -m experiments.plot benchmarks/mlp_progress.csv --out docs/img/mlp_curve.png
    python -m experiments.plot benchmarks/learned_progress.csv benchmarks/learned_expert_progress.csv \
        --label "plain TD(lambda) (shipped)" --label "expert iteration, from 44 min" \
        --title "N-tuple network from scratch (2p, Side A), ..." --out docs/img/learned_curve.png

A RUN is a run folder of `python -m experiments.train` or its table: `eval.csv` (the PPO commands: evaluation
figures against training steps, the run's wall minutes in the legend; default metric mean_score) or `progress.csv`
(learned, and an n-tuple run's eval.csv: figures against self-play games, hours on the top axis; default metrics
win_rate and mean_score, the greedy opponent's score and the rarer evaluations against MCTS drawn alongside). Each
--metric is one panel; each run one line (its --label, else the folder name). A horizontal reference line can be
drawn in a metric's panel with --ref "METRIC:LABEL=VALUE" (e.g. a heuristic's figure), repeatable. The runs of one
plot are of one kind.
"""
from __future__ import annotations

import argparse
import io
import math
from pathlib import Path

from .common import atomic_write_bytes, read_csv

#: The tables a run folder holds: file -> (kind, x column, x axis label).
TABLES = {"eval.csv": ("ppo", "timesteps", "training steps (learner actions)"),
          "progress.csv": ("learned", "games", "self-play games")}
#: The columns that tell the tables apart.
_COLUMNS = {"eval.csv": {"timesteps", "minutes"}, "progress.csv": {"iteration", "games", "hours"}}
#: An n-tuple run's eval.csv (`experiments.train learned`) or its copy: drawn as a learned run (against self-play
#: games, hours from its minutes).
_NTUPLE_COLUMNS = {"iteration", "games", "minutes", "win_rate", "mean_score"}
#: The default title of a learned run's plot (the shipped MLP's curve, `mlp`, docs/img/mlp_curve.png).
LEARNED_TITLE = "Afterstate value network, trained from scratch by self-play (2p, Side A)"


def read_run(path: str | Path) -> tuple[str, list[dict[str, float]]]:
    """(kind, rows) of a run folder or its table; cells as floats, empty ones NaN (no loss before training, MCTS
    columns only on the rows that met MCTS)."""
    p = Path(path)
    if p.is_dir():
        found = [p / name for name in TABLES if (p / name).is_file()]
        if not found:
            raise SystemExit(f"{p}: no {' or '.join(TABLES)} (is it a run folder of python -m experiments.train?)")
        p = found[0]
    if not p.is_file():
        raise SystemExit(f"{p}: no such file")
    try:
        raw = read_csv(p)
    except (UnicodeDecodeError, ValueError) as e:
        raise SystemExit(f"{p}: not a CSV table ({e})") from None
    if not raw:
        raise SystemExit(f"{p}: no evaluation rows yet")
    # which table it is, by its columns (a copy may be named otherwise, e.g. benchmarks/mlp_progress.csv)
    name = next((n for n, cols in _COLUMNS.items() if cols <= set(raw[0])), None)
    if name is None and _NTUPLE_COLUMNS <= set(raw[0]):
        rows = [{k: _number(v) for k, v in r.items()} for r in raw]
        return "learned", [{**r, "hours": r["minutes"] / 60} for r in rows]
    if name is None:
        raise SystemExit(f"{p}: neither an eval.csv (columns {', '.join(sorted(_COLUMNS['eval.csv']))}) nor a learned "
                         f"run's progress.csv (columns {', '.join(sorted(_COLUMNS['progress.csv']))})")
    return TABLES[name][0], [{k: _number(v) for k, v in r.items()} for r in raw]


def _number(v: str | None) -> float:
    try:
        return float(v) if v not in ("", None) else math.nan
    except ValueError:
        return math.nan


def plot(runs: list[Path], metrics: list[str] | None, out: Path, labels: list[str] | None = None,
         refs: list[tuple[str, str, float]] | None = None, title: str | None = None) -> Path:
    """Write the PNG (atomically); returns its path. metrics None: the kind's default."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    labels = labels or [_name(Path(r)) for r in runs]
    if len(labels) != len(runs):
        raise SystemExit(f"{len(labels)} --label for {len(runs)} runs")
    tables = [read_run(r) for r in runs]
    kinds = {k for k, _ in tables}
    if len(kinds) > 1:
        raise SystemExit("the runs of one plot must be of one kind (all eval.csv or all progress.csv)")
    kind = kinds.pop()
    _, x, xlabel = next(v for v in TABLES.values() if v[0] == kind)
    learned = kind == "learned"
    metrics = metrics or (["win_rate", "mean_score"] if learned else ["mean_score"])
    title = (LEARNED_TITLE if learned else "") if title is None else title
    fig, axes = plt.subplots(1, len(metrics), figsize=((5.5 if learned else 5.2) * len(metrics), 4.2 if learned
                                                       else 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for (_, rows), label in zip(tables, labels):
            pts = [r for r in rows if not math.isnan(r.get(metric, math.nan))]
            if not pts:
                continue
            if learned:
                ax.plot([r[x] for r in pts], [r[metric] for r in pts], marker="o", ms=3, label=label)
                if metric == "mean_score" and "greedy_score" in pts[0]:
                    ax.plot([r[x] for r in pts], [r["greedy_score"] for r in pts], ls="--", color="gray",
                            label="greedy opponent" if len(tables) == 1 else f"{label}: greedy opponent")
                met = [r for r in rows if not math.isnan(r.get("mcts_" + metric, math.nan))]
                if met:  # the rarer evaluations against mcts:200it
                    ax.plot([r[x] for r in met], [r["mcts_" + metric] for r in met], marker="s", ms=5, ls=":",
                            color="tab:green", label=f"{label} vs mcts:200it (few games)")
            else:
                cpu = pts[-1].get("cpu_minutes", math.nan)
                took = f"{pts[-1]['minutes']:.0f} min" + (f", {cpu:.0f} CPU-min" if not math.isnan(cpu) else "")
                ax.plot([r[x] for r in pts], [r[metric] for r in pts], marker="o", markersize=3,
                        label=f"{label} ({took})")
        for ref_metric, name, value in refs or []:
            if ref_metric != metric:
                continue
            ax.axhline(value, color="grey", linestyle="--", linewidth=1)
            ax.annotate(name, (0, value), textcoords="offset points", xytext=(4, 3), fontsize=8, color="grey",
                        xycoords=("axes fraction", "data"))
        if learned:
            games, hours = [r["games"] for r in tables[0][1]], [r["hours"] for r in tables[0][1]]
            top = ax.secondary_xaxis("top", functions=(lambda g, xs=games, ys=hours: _interp(g, xs, ys),
                                                       lambda h, xs=hours, ys=games: _interp(h, xs, ys)))
            top.set_xlabel("hours (2-core CPU)")
            ax.xaxis.set_major_formatter(FuncFormatter(_steps_label))  # 125k, not 125000 running into its neighbour
            if metric == "win_rate":
                ax.axhline(0.5, color="black", lw=0.5)
        else:
            ax.xaxis.set_major_formatter(FuncFormatter(_steps_label))
            ax.set_xlim(left=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric.replace("_", " ") + (" vs greedy (beam 24)" if learned and metric == "win_rate" else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return atomic_write_bytes(out, buf.getvalue())


def _name(run: Path) -> str:
    """A run's default label: its folder's name (a table named otherwise: its own)."""
    return run.name if run.is_dir() else run.parent.name if run.name in TABLES else run.stem


def _interp(x, xs, ys):
    import numpy as np

    return np.interp(x, xs, ys) if len(xs) > 1 else x


def _steps_label(x: float, _pos: int) -> str:
    return f"{x / 1e6:g}M" if x >= 1e6 else f"{x / 1e3:g}k" if x else "0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.plot", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                    help="run folders (each with an eval.csv or a progress.csv), or such tables")
    ap.add_argument("--metric", action="append", default=None, help="a column of the tables, one panel each "
                    "(default: mean_score; learned: win_rate and mean_score)")
    ap.add_argument("--label", action="append", default=None, help="legend label per run, in order")
    ap.add_argument("--ref", action="append", default=[], metavar="METRIC:LABEL=VALUE",
                    help="reference line in METRIC's panel")
    ap.add_argument("--title", default=None, help="(default: none; learned: the shipped network's)")
    ap.add_argument("--out", type=Path, required=True, help="PNG to write")
    a = ap.parse_args(argv)
    refs = []
    for r in a.ref:
        head, sep, value = r.rpartition("=")
        metric, colon, name = head.partition(":")
        try:
            if not sep or not colon:
                raise ValueError
            refs.append((metric, name, float(value)))
        except ValueError:
            raise SystemExit(f"--ref takes METRIC:LABEL=VALUE (VALUE a number), got {r!r}") from None
    print(plot(a.runs, a.metric, a.out, a.label, refs, a.title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
