"""Seeded matches between agents: play games, rotate seats, and summarise strength.

Every game is a pure function of (agent specs, configuration, base seed, game index): game i uses game
seed `seed + i`, seat rotation `i % n`, and agent seeds derived from both, so results are identical for any
number of worker processes (`jobs`). Agents with a wall-clock budget (`mcts`, `mcts:0.5`) are the exception:
how much they search depends on the machine's speed and load (`time_budget_specs` names them); `mcts:Nit`,
greedy, random and ppo are reproducible.

OpenSkill ratings need the `openskill` package and the PNG needs `matplotlib` (the "train" extra); without
them the summary and outputs leave those parts out and say so in `summary["notes"]`.
"""
from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing as mp
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from harmonies_env.game import Game
from harmonies_env.scoring import CATEGORIES

from .annotate import annotations, watch
from .table import write_bytes_atomic, write_text_atomic


def wilson_interval(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a win rate of `wins` out of `n` (shared wins may count fractionally)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def play_game(agents: Sequence[Any], num_players: int, side: str = "A", spirits: bool = False, seed: int = 0,
              on_turn: Callable[[Game, int, list[str]], None] | None = None) -> Game:
    """Play one game with agents[k] in seat k; each gets its own `PlayerView`. Returns the finished Game.

    on_turn(game, player, descriptions) is called after each whole turn with the actions in words.
    """
    from harmonies_env.view import PlayerView

    if len(agents) != num_players:
        raise ValueError(f"{num_players} players need {num_players} agents, got {len(agents)}")
    game = Game(num_players, side, spirits, seed=seed)
    for a in agents:
        if hasattr(a, "reset"):
            a.reset()
    said: list[str] = []
    while not game.is_over:
        p, turn = game.current_player, game.turn
        a = agents[p].act(PlayerView(game, p))  # a fresh snapshot per decision: views do not follow the game
        if on_turn is not None:
            said.append(game.describe_action(a))
        game.step(a)  # an illegal action raises IllegalActionError naming it
        if on_turn is not None and (game.turn != turn or game.is_over):
            on_turn(game, p, said)
            said = []
    return game


def time_budget_specs(specs: Sequence[str]) -> list[str]:
    """The specs whose agents search for a wall-clock time (`mcts`, `mcts:SECONDS`, `learned-search`,
    `learned-search:SECONDS`): not reproducible."""
    out = []
    for s in specs:
        kind, _, arg = s.partition(":")
        if kind.strip().lower() in ("mcts", "learned-search") and not arg.strip().endswith("it"):
            out.append(s)
    return list(dict.fromkeys(out))


def agent_seed(seed: int, game_index: int, slot: int) -> int:
    """The seed of the agent in spec slot `slot` for game `game_index` (independent of worker layout)."""
    return int((seed * 1_000_003 + game_index * 101 + slot * 7 + 12345) % (2**62))


def _play_indexed(task: tuple) -> dict:
    """Worker: play game `index` of a match and return its result as plain data."""
    from agents import make_agent

    specs, names, num_players, side, spirits, seed, index, save_dir = task
    n = len(specs)
    rot = index % n
    seat_slots = [(k + rot) % n for k in range(num_players)]
    agents = [make_agent(specs[j], seed=agent_seed(seed, index, j)) for j in seat_slots]
    logs = [watch(a) for a in agents] if save_dir is not None else []  # search agents' candidates, for replays
    game = play_game(agents, num_players, side, spirits, seed=seed + index)
    scores = game.scores()
    winners = game.winners()
    res = {"game": index, "seed": seed + index, "seats": [names[j] for j in seat_slots], "winners": winners,
           "scores": scores, "animal_cubes": game.animal_cubes(), "turns": game.turn}
    if num_players == 1:
        res["suns"] = game.suns()
    if save_dir is not None:
        record = dict(game.record(), names=res["seats"])
        if any(log is not None for log in logs):
            record["annotations"] = annotations(record, logs)
        stem = f"game_{index:05d}" if num_players > 1 else f"solo_{_safe(names[0])}_{index:05d}"
        write_text_atomic(Path(save_dir) / f"{stem}.json", json.dumps(record))
    return res


def _safe(name: str) -> str:
    """An agent name usable in a file name (e.g. 'mcts:0.5' -> 'mcts_0.5')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "agent"


def _unique_names(specs: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for s in specs:
        k = seen.get(s, 0)
        seen[s] = k + 1
        names.append(s if specs.count(s) == 1 else f"{s}#{k + 1}")
    return names


def run_games(specs: Sequence[str], num_players: int, games: int, side: str = "A", spirits: bool = False,
              seed: int = 0, jobs: int = 1, progress: bool = True,
              save_games: str | Path | None = None) -> list[dict]:
    """Play `games` seeded games (seats rotated) and return per-game results in game order.

    save_games: a folder to write every game's record to (`Game.record()` plus "names", the agent in each
    seat), one JSON file per game, written atomically; `harmonies replay FOLDER` shows them.
    """
    from tqdm import tqdm

    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if num_players > 1 and len(specs) != num_players:
        raise ValueError(f"a {num_players}-player match needs {num_players} agents, got {len(specs)}")
    names = _unique_names(list(specs))
    save = None if save_games is None else str(save_games)
    if save is not None:
        Path(save).mkdir(parents=True, exist_ok=True)
    if num_players == 1:
        tasks = [((s,), (nm,), 1, side, spirits, seed, i, save) for s, nm in zip(specs, names) for i in range(games)]
    else:
        tasks = [(tuple(specs), tuple(names), num_players, side, spirits, seed, i, save) for i in range(games)]
    bar = tqdm(total=len(tasks), desc="games", disable=not progress, leave=False)
    out: list[dict] = []
    if jobs == 1:
        for t in tasks:
            out.append(_play_indexed(t))
            bar.update()
    else:
        with mp.get_context("spawn").Pool(jobs) as pool:
            for r in pool.imap(_play_indexed, tasks, chunksize=1):
                out.append(r)
                bar.update()
    bar.close()
    return out


def summarize(results: list[dict]) -> dict:
    """Per agent: games, wins (shared victories count 1/k), win rate with Wilson 95% interval, mean and
    standard deviation of each score category, suns (solo), and an OpenSkill (Plackett-Luce) rating when
    the `openskill` package is installed (otherwise `summary["notes"]` says the ratings were left out)."""
    try:
        from openskill.models import PlackettLuce
    except ImportError:
        PlackettLuce = None

    names: list[str] = []
    for r in results:
        for nm in r["seats"]:
            if nm not in names:
                names.append(nm)
    model = PlackettLuce() if PlackettLuce is not None else None
    ratings = {nm: model.rating(name=nm) for nm in names} if model is not None else {}
    per: dict[str, dict[str, list]] = {nm: {"scores": [], "wins": [], "suns": []} for nm in names}
    for r in results:
        seats = r["seats"]
        w = r["winners"]
        for p, nm in enumerate(seats):
            per[nm]["scores"].append(r["scores"][p])
            per[nm]["wins"].append(1.0 / len(w) if p in w else 0.0)
            if "suns" in r:
                per[nm]["suns"].append(r["suns"])
        if len(seats) > 1 and model is not None:
            keys = [(r["scores"][p]["total"], r["animal_cubes"][p]) for p in range(len(seats))]
            ranks = [1 + sum(k2 > k for k2 in keys) for k in keys]
            new = model.rate([[ratings[nm]] for nm in seats], ranks=ranks)
            for nm, team in zip(seats, new):
                ratings[nm] = team[0]
    summary: dict[str, Any] = {"games": len(results), "agents": {}}
    multi = bool(results) and len(results[0]["seats"]) > 1
    if multi and model is None:
        summary["notes"] = ['no OpenSkill ratings: the openskill package is not installed (pip install -e ".[train]")']
    for nm in names:
        d = per[nm]
        n = len(d["scores"])
        entry: dict[str, Any] = {"games": n}
        if multi:
            wins = float(sum(d["wins"]))
            lo, hi = wilson_interval(wins, n)
            entry.update(wins=wins, win_rate=wins / n, win_rate_ci95=[lo, hi])
            if model is not None:
                rt = ratings[nm]
                entry["openskill"] = {"mu": rt.mu, "sigma": rt.sigma, "ordinal": rt.ordinal()}
        for cat in CATEGORIES:
            vals = np.array([sc[cat] for sc in d["scores"]], dtype=float)
            entry[cat] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1)) if n > 1 else 0.0}
        if d["suns"]:
            entry["suns"] = {"mean": float(np.mean(d["suns"])), "std": float(np.std(d["suns"], ddof=1)) if n > 1
                             else 0.0}
        summary["agents"][nm] = entry
    return summary


def write_outputs(results: list[dict], summary: dict, out_dir: str | Path, stem: str = "tournament") -> list[Path]:
    """Write <stem>_games.csv (one row per game and seat), <stem>.json (summary + games) and <stem>.png.

    Each file is written atomically. Without matplotlib the PNG is skipped and a note added to the summary
    (before the JSON is written, so the JSON says so too). Returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib
    except ImportError:
        matplotlib = None
        summary.setdefault("notes", []).append(
            'no PNG: the matplotlib package is not installed (pip install -e ".[train]")')
    csv_path = out / f"{stem}_games.csv"
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["game", "seed", "seat", "agent", "winner", *CATEGORIES, "animal_cubes"])
    for r in results:
        for p, nm in enumerate(r["seats"]):
            w.writerow([r["game"], r["seed"], p, nm, int(p in r["winners"]),
                        *[r["scores"][p][c] for c in CATEGORIES], r["animal_cubes"][p]])
    write_text_atomic(csv_path, buf.getvalue())
    json_path = out / f"{stem}.json"
    write_text_atomic(json_path, json.dumps({"summary": summary, "games": results}, indent=1))
    if matplotlib is None:
        return [csv_path, json_path]
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    png_path = out / f"{stem}.png"
    names = list(summary["agents"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    totals = {nm: [r["scores"][p]["total"] for r in results for p, s in enumerate(r["seats"]) if s == nm]
              for nm in names}
    axes[0].hist([totals[nm] for nm in names], bins=20, label=names, alpha=0.8)
    axes[0].set_xlabel("total score")
    axes[0].set_ylabel("games")
    axes[0].legend()
    cats = CATEGORIES[:-1]
    x = np.arange(len(cats))
    width = 0.8 / max(1, len(names))
    for k, nm in enumerate(names):
        axes[1].bar(x + k * width, [summary["agents"][nm][c]["mean"] for c in cats], width,
                    yerr=[summary["agents"][nm][c]["std"] for c in cats], label=nm)
    axes[1].set_xticks(x + 0.4 - width / 2, cats, rotation=30)
    axes[1].set_ylabel("mean points")
    axes[1].legend()
    fig.suptitle(f"{summary['games']} games")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=90)
    plt.close(fig)
    write_bytes_atomic(png_path, png.getvalue())
    return [csv_path, json_path, png_path]


def format_summary(summary: dict) -> str:
    """The summary as a readable table."""
    lines = [f"{summary['games']} games"]
    for nm, e in summary["agents"].items():
        head = f"{nm:>14}: mean {e['total']['mean']:.1f} (sd {e['total']['std']:.1f})"
        if "win_rate" in e:
            lo, hi = e["win_rate_ci95"]
            head += f"  win rate {e['win_rate']:.3f} [{lo:.3f}, {hi:.3f}]"
            if "openskill" in e:
                head += f"  openskill mu {e['openskill']['mu']:.1f} sigma {e['openskill']['sigma']:.2f}"
        if "suns" in e:
            head += f"  suns {e['suns']['mean']:.2f}"
        lines.append(head)
        lines.append(" " * 16 + "  ".join(f"{c} {e[c]['mean']:.1f}" for c in CATEGORIES[:-1]))
    return "\n".join(lines)


__all__ = ["play_game", "run_games", "summarize", "write_outputs", "format_summary", "wilson_interval",
           "agent_seed", "time_budget_specs"]
