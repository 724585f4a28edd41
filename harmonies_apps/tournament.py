"""Seeded matches between agents: play games, rotate seats, and summarise strength.

Every game is a pure function of (agent specs, configuration, base seed, game index): game i uses game
seed `seed + i`, seat rotation `i % n`, and agent seeds derived from both, so results are identical for any
number of worker processes (`jobs`). Agents with a wall-clock budget (e.g. `mcts:0.5`) are the exception:
how much they search depends on the machine's speed.
"""
from __future__ import annotations

import csv
import json
import math
import multiprocessing as mp
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from harmonies_env.game import Game
from harmonies_env.io import atomic_write_text, atomic_writer
from harmonies_env.scoring import CATEGORIES


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


def agent_seed(seed: int, game_index: int, slot: int) -> int:
    """The seed of the agent in spec slot `slot` for game `game_index` (independent of worker layout)."""
    return int((seed * 1_000_003 + game_index * 101 + slot * 7 + 12345) % (2**62))


def _play_indexed(task: tuple) -> dict:
    """Worker: play game `index` of a match and return its result as plain data."""
    from agents import make_agent

    specs, names, num_players, side, spirits, seed, index = task
    n = len(specs)
    rot = index % n
    seat_slots = [(k + rot) % n for k in range(num_players)]
    agents = [make_agent(specs[j], seed=agent_seed(seed, index, j)) for j in seat_slots]
    game = play_game(agents, num_players, side, spirits, seed=seed + index)
    scores = game.scores()
    winners = game.winners()
    res = {"game": index, "seed": seed + index, "seats": [names[j] for j in seat_slots], "winners": winners,
           "scores": scores, "animal_cubes": game.animal_cubes(), "turns": game.turn}
    if num_players == 1:
        res["suns"] = game.suns()
    return res


def _unique_names(specs: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for s in specs:
        k = seen.get(s, 0)
        seen[s] = k + 1
        names.append(s if specs.count(s) == 1 else f"{s}#{k + 1}")
    return names


def run_games(specs: Sequence[str], num_players: int, games: int, side: str = "A", spirits: bool = False,
              seed: int = 0, jobs: int = 1, progress: bool = True) -> list[dict]:
    """Play `games` seeded games (seats rotated) and return per-game results in game order."""
    from tqdm import tqdm

    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if num_players > 1 and len(specs) != num_players:
        raise ValueError(f"a {num_players}-player match needs {num_players} agents, got {len(specs)}")
    names = _unique_names(list(specs))
    if num_players == 1:
        tasks = [((s,), (nm,), 1, side, spirits, seed, i) for s, nm in zip(specs, names) for i in range(games)]
    else:
        tasks = [(tuple(specs), tuple(names), num_players, side, spirits, seed, i) for i in range(games)]
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
    standard deviation of each score category, suns (solo), and an OpenSkill (Plackett-Luce) rating."""
    from openskill.models import PlackettLuce

    names: list[str] = []
    for r in results:
        for nm in r["seats"]:
            if nm not in names:
                names.append(nm)
    model = PlackettLuce()
    ratings = {nm: model.rating(name=nm) for nm in names}
    per: dict[str, dict[str, list]] = {nm: {"scores": [], "wins": [], "suns": []} for nm in names}
    for r in results:
        seats = r["seats"]
        w = r["winners"]
        for p, nm in enumerate(seats):
            per[nm]["scores"].append(r["scores"][p])
            per[nm]["wins"].append(1.0 / len(w) if p in w else 0.0)
            if "suns" in r:
                per[nm]["suns"].append(r["suns"])
        if len(seats) > 1:
            keys = [(r["scores"][p]["total"], r["animal_cubes"][p]) for p in range(len(seats))]
            ranks = [1 + sum(k2 > k for k2 in keys) for k in keys]
            new = model.rate([[ratings[nm]] for nm in seats], ranks=ranks)
            for nm, team in zip(seats, new):
                ratings[nm] = team[0]
    summary: dict[str, Any] = {"games": len(results), "agents": {}}
    for nm in names:
        d = per[nm]
        n = len(d["scores"])
        entry: dict[str, Any] = {"games": n}
        if results and len(results[0]["seats"]) > 1:
            wins = float(sum(d["wins"]))
            lo, hi = wilson_interval(wins, n)
            entry.update(wins=wins, win_rate=wins / n, win_rate_ci95=[lo, hi])
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

    Each file is written atomically (`harmonies_env.io`): an interrupted run leaves the previous file or none.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"{stem}_games.csv"
    with atomic_writer(csv_path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["game", "seed", "seat", "agent", "winner", *CATEGORIES, "animal_cubes"])
        for r in results:
            for p, nm in enumerate(r["seats"]):
                w.writerow([r["game"], r["seed"], p, nm, int(p in r["winners"]),
                            *[r["scores"][p][c] for c in CATEGORIES], r["animal_cubes"][p]])
    json_path = out / f"{stem}.json"
    atomic_write_text(json_path, json.dumps({"summary": summary, "games": results}, indent=1))
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
    with atomic_writer(png_path, "wb") as f:
        fig.savefig(f, format="png", dpi=90)
    plt.close(fig)
    return [csv_path, json_path, png_path]


def format_summary(summary: dict) -> str:
    """The summary as a readable table."""
    lines = [f"{summary['games']} games"]
    for nm, e in summary["agents"].items():
        head = f"{nm:>14}: mean {e['total']['mean']:.1f} (sd {e['total']['std']:.1f})"
        if "win_rate" in e:
            lo, hi = e["win_rate_ci95"]
            head += (f"  win rate {e['win_rate']:.3f} [{lo:.3f}, {hi:.3f}]"
                     f"  openskill mu {e['openskill']['mu']:.1f} sigma {e['openskill']['sigma']:.2f}")
        if "suns" in e:
            head += f"  suns {e['suns']['mean']:.2f}"
        lines.append(head)
        lines.append(" " * 16 + "  ".join(f"{c} {e[c]['mean']:.1f}" for c in CATEGORIES[:-1]))
    return "\n".join(lines)


__all__ = ["play_game", "run_games", "summarize", "write_outputs", "format_summary", "wilson_interval",
           "agent_seed"]
