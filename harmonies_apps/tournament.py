"""Seeded matches between agents: play games, rotate seats, and summarise strength.

The games are played by the match engine (`agents.match.play_match`; its seeding, seat rotation and winner rule).
Every game is a pure function of (agent specs, configuration, base seed, game index): game i uses game seed `seed + i`
(`seed + i // n` when paired: each seed played from every seating), seat rotation `i % n`, and agent seeds derived
from both, so results are identical for any number of worker processes (`jobs`: each plays a share of the game
indices). Agents with a wall-clock budget (`mcts`, `mcts:0.5`) are the exception: how much they search depends on
the machine's speed and load (`time_budget_specs` names them); `mcts:Nit`, greedy, random, ppo, the learned agents
(`learned`, `learned-search`, `learned-search:Nit`, `learned-win`) and the MLP (`mlp`, `mlp-search:Nit`) are
reproducible.

Statistics (`summarize`) are those of `harmonies ladder` (`harmonies_apps.ladder.stats`), fitted on all the games at
once, so the same games in any order give the same numbers: Elo ratings by a Bradley-Terry / Plackett-Luce maximum
likelihood fit on each game's finishing order (total, then animal cubes) with BayesElo's virtual-draw prior, anchored at
`random` = 0 when `random` plays (the ladder's anchor, and Leela's), else at the first agent; 95% intervals on the
ratings by a seeded bootstrap over blocks (a game's seed: one block per seed, every seating of it when paired); 95%
t intervals, clustered by seed, on the mean points margin and every category's mean; Wilson intervals on win rates.
The PNG needs `matplotlib` (the "train" extra); without it the outputs leave it out and say so in
`summary["notes"]`.
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from agents.match import MatchTask, agent_seed, describe, play_game, wilson_interval
from harmonies_env.config import GameConfig
from harmonies_env.firstrun import install_hint
from harmonies_env.game import make_record
from harmonies_env.scoring import CATEGORIES

from .annotate import annotations, watch
from .ladder.stats import GameResult, bootstrap_intervals, category_means, fit_ratings, points_margin
from .table import write_bytes_atomic, write_text_atomic


def time_budget_specs(specs: Sequence[str]) -> list[str]:
    """The specs whose agents search for a wall-clock time (`agents.registry.is_timed`: e.g. `mcts`, `mcts:SECONDS`,
    `mlp-search`, `learned-search:SECONDS`): not reproducible."""
    from agents.registry import is_timed

    return list(dict.fromkeys(s for s in specs if is_timed(s)))


def _watched(spec: str, logs: dict[int, Any]) -> Any:
    """A factory seed -> agent of `spec` whose searches are logged (`annotate.watch`) in logs[id(agent)]."""
    from agents import make_agent

    def make(seed: int) -> Any:
        agent = make_agent(spec, seed=seed)
        log = watch(agent)
        if log is not None:
            logs[id(agent)] = log
        return agent

    return make


def _record_name(config: GameConfig, names: Sequence[str], index: int) -> str:
    """The file name of game `index`'s record: game_NNNNN.json, solo_AGENT_NNNNN.json for solo."""
    return f"game_{index:05d}.json" if config.num_players > 1 else f"solo_{_safe(names[0])}_{index:05d}.json"


def _play_share(task: MatchTask) -> list[dict]:
    """`run_match`'s worker when games are saved: play the games `task.indices` (search agents watched one per game,
    for the replays' annotations) and report each game as it ends with its record (`Game.record`'s format, with the
    task's config: river_loops included) as "_record" (file name, JSON text): the process that runs the match writes
    it (`run_games`), so no worker ever leaves a file half written, also on a Ray worker whose filesystem is not the
    driver's."""
    from agents.match import play_match, policy_of, report
    from agents.policy import AgentPolicy

    specs, names, config = task.specs, task.names, task.config
    num_players = config.num_players
    logs: dict[int, Any] = {}
    policies = [policy_of(s) for s in specs]
    policies = [p if not isinstance(p, AgentPolicy) else AgentPolicy(_watched(s, logs), name=s)
                for s, p in zip(specs, policies)]
    rows = {index: row for row, index in enumerate(task.indices)}

    def finished(res: dict) -> None:
        record = {**make_record(config, res["seed"], res.pop("actions")), "names": res["seats"]}
        n = len(specs)
        agents = [p.agents[rows[res["game"]]] if isinstance(p, AgentPolicy) else None for p in policies]
        seat_logs = [logs.get(id(agents[(k + res["game"]) % n])) for k in range(num_players)]
        if any(log is not None for log in seat_logs):
            record["annotations"] = annotations(record, seat_logs)
        res["_record"] = (_record_name(config, names, res["game"]), json.dumps(record))
        report(res)

    return play_match(policies, games=list(task.indices), seed=task.seed, config=config, paired=task.paired,
                      names=names, record=True, on_result=finished)


def _safe(name: str) -> str:
    """An agent name usable in a file name (e.g. 'mcts:0.5' -> 'mcts_0.5')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "agent"


def run_games(specs: Sequence[str], *, games: int | None = None, seed: int = 0, jobs: int = 1,
              progress: bool = True, save_games: str | Path | None = None, config: GameConfig | None = None,
              ray_address: str | None = None, collect: list[dict] | None = None,
              paired: bool = False) -> list[dict]:
    """Play `games` seeded games (seats rotated) over `jobs` processes, or on a Ray cluster (`ray_address`: "local",
    "auto" or HOST:PORT, `agents.distributed`), and return per-game results in game order (`agents.match.run_match`,
    identical for any `jobs` or cluster with reproducible agents).

    config: the games' `GameConfig` (players, side, Spirits, river_loops; default: the default rules, one seat per
    spec). paired: each seed played from every seating, in blocks of `seats` consecutive games (2 players: the
    seats swapped; 3-4: the seat rotations with the seed held), so seat and deal luck cancel within a block; games
    must be a multiple of the seats.

    Solo (num_players 1): each spec plays `games` games of its own. save_games: a folder to write every game's
    record to (`Game.record()` plus "names", the agent in each seat), one JSON file per game, written atomically by
    this process as each game comes back (from `--jobs` workers or Ray alike), so that the records on disk are
    exactly the games kept; `harmonies replay FOLDER` shows them. collect: `run_match`'s (every game that came back,
    for a caller that is stopped).
    """
    from agents.match import match_config, run_match

    config = match_config(config, len(specs))
    if save_games is None:
        return run_match(specs, games=games, seed=seed, jobs=jobs, progress=progress, config=config,
                         ray_address=ray_address, collect=collect, paired=paired)
    save = Path(save_games)
    save.mkdir(parents=True, exist_ok=True)

    def write_record(res: dict) -> None:  # as each game comes back, before it is kept (a signal waits for both)
        name, text = res.pop("_record")
        write_text_atomic(save / name, text)

    return run_match(specs, games=games, seed=seed, jobs=jobs, progress=progress, worker=_play_share,
                     config=config, ray_address=ray_address, collect=collect, on_result=write_record, paired=paired)


#: Seed of the ratings' bootstrap: the intervals are a function of the games alone.
BOOTSTRAP_SEED = 0


def agent_order(results: Sequence[dict]) -> list[str]:
    """The agents' names in the match's order (its --agents) whatever the order of `results`: read off the game of
    lowest index, whose seat k holds agent (k + i) % n; solo: in order of first appearance."""
    if not results:
        return []
    if len(results[0]["seats"]) == 1:
        return list(dict.fromkeys(r["seats"][0] for r in results))
    first = min(results, key=lambda r: r["game"])
    n, i = len(first["seats"]), first["game"]
    return [first["seats"][(j - i) % n] for j in range(n)]


def game_results(results: Sequence[dict], names: Sequence[str]) -> list[GameResult]:
    """The games as the ladder's statistics see them (`harmonies_apps.ladder.engine.game_result`, the ladder's own
    conversion): bot = index in `names`, block = the game's seed (paired games share it), finishing place by
    (total, animal cubes), tied seats sharing a place. `categories` holds every one of `CATEGORIES` (the 7 and the
    total) and, solo, the suns, so that `category_means` gives each of them its interval."""
    from .ladder.engine import game_result

    index = {nm: k for k, nm in enumerate(names)}
    return [game_result(r, [index[nm] for nm in r["seats"]], int(r["seed"]), CATEGORIES) for r in results]


def default_anchor(names: Sequence[str]) -> str:
    """The agent rated 0: `random` when it plays (the first of several), else the first agent."""
    return next((nm for nm in names if nm.split("#")[0] == "random"), names[0])


def _num(x: float) -> float | None:
    """A JSON number: None for NaN (no interval from a single seed, or unrated)."""
    return float(x) if np.isfinite(x) else None


def summarize(results: Sequence[dict], anchor: str | None = None) -> dict:
    """`agents.match.describe`'s statistics (games, wins, win rate with its Wilson interval, mean and standard
    deviation per score category, suns solo), agents in the match's order, plus: a 95% interval on every mean
    ("ci95", clustered by seed: null from a single seed); with 2-4 seats an Elo rating with its bootstrap 95%
    interval ("elo", "elo_ci95"; `anchor`, default `default_anchor`, at 0; null where unrated) and the mean points
    margin over the other agents ("margin", with "ci95"); "ratings" says how they were made. A function of the games
    alone: `results` in any order give the same summary."""
    names = agent_order(results)
    described = describe(results)
    summary: dict[str, Any] = {"games": len(results), "agents": {nm: described["agents"][nm] for nm in names}}
    if not results:
        return summary
    games = game_results(results, names)
    multi = len(results[0]["seats"]) > 1
    if multi:
        anchor = default_anchor(names) if anchor is None else anchor
        if anchor not in names:
            raise ValueError(f"the anchor {anchor!r} is not one of the agents ({', '.join(names)})")
        k0 = names.index(anchor)
        rating = fit_ratings(games, len(names), k0)
        low, high = bootstrap_intervals(games, len(names), k0, seed=BOOTSTRAP_SEED)
        summary["ratings"] = {"scale": "Elo", "anchor": anchor,
                              "model": "Bradley-Terry / Plackett-Luce on the finishing order, fitted on all games "
                                       "at once, 2 virtual draws per pair of agents (harmonies_apps.ladder.stats)",
                              "interval": f"95% bootstrap over seeds (seed {BOOTSTRAP_SEED})"}
    columns = list(CATEGORIES) + ([] if multi else ["suns"])
    for k, nm in enumerate(names):
        entry = summary["agents"][nm]
        if multi:
            m, lo, hi = points_margin(games, k, [j for j in range(len(names)) if j != k])
            entry.update(elo=_num(rating[k]), elo_ci95=[_num(low[k]), _num(high[k])],
                         margin={"mean": _num(m), "ci95": [_num(lo), _num(hi)]})
        for c, (_, lo, hi) in zip(columns, category_means(games, k)):
            entry[c]["ci95"] = [_num(lo), _num(hi)]
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
            f"no PNG: the matplotlib package is not installed ({install_hint('train')})")
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
        e = summary["agents"][nm]
        means = np.array([e[c]["mean"] for c in cats])
        bounds = np.array([[np.nan if v is None else v for v in e[c]["ci95"]] for c in cats])
        yerr = np.nan_to_num(np.abs(bounds.T - means))  # the 95% interval (none from a single seed)
        axes[1].bar(x + k * width, means, width, yerr=yerr, capsize=2, label=nm)
    axes[1].set_xticks(x + 0.4 - width / 2, cats, rotation=30)
    axes[1].set_ylabel("mean points (95% interval)")
    axes[1].legend()
    fig.suptitle(f"{summary['games']} games")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=90)
    plt.close(fig)
    write_bytes_atomic(png_path, png.getvalue())
    return [csv_path, json_path, png_path]


def _ci(bounds: Sequence[float | None], fmt: str) -> str:
    """[low, high] in `fmt`, '-' for a missing bound."""
    return "[" + ", ".join("-" if v is None else fmt.format(v) for v in bounds) + "]"


def format_summary(summary: dict) -> str:
    """The summary as a readable table: means, rates and ratings with their 95% intervals."""
    lines = [f"{summary['games']} games, 95% intervals"]
    if "ratings" in summary:
        lines[0] += f"; Elo from all games at once, {summary['ratings']['anchor']} = 0"
    for nm, e in summary["agents"].items():
        head = f"{nm:>14}: mean {e['total']['mean']:.1f} {_ci(e['total']['ci95'], '{:.1f}')}"
        if "win_rate" in e:
            head += f"  win rate {e['win_rate']:.3f} {_ci(e['win_rate_ci95'], '{:.3f}')}"
            if nm == summary["ratings"]["anchor"]:
                head += "  elo 0 (anchor)"
            else:
                elo = "-" if e["elo"] is None else f"{e['elo']:+.0f}"
                head += f"  elo {elo} {_ci(e['elo_ci95'], '{:+.0f}')}"
            if e["margin"]["mean"] is not None:
                head += f"  margin {e['margin']['mean']:+.1f} {_ci(e['margin']['ci95'], '{:+.1f}')}"
        if "suns" in e:
            head += f"  suns {e['suns']['mean']:.2f} {_ci(e['suns']['ci95'], '{:.2f}')}"
        lines.append(head)
        lines.append(" " * 16 + "  ".join(f"{c} {e[c]['mean']:.1f}" for c in CATEGORIES[:-1]))
    return "\n".join(lines)


__all__ = ["play_game", "run_games", "summarize", "agent_order", "game_results", "default_anchor", "write_outputs",
           "format_summary", "wilson_interval", "agent_seed", "time_budget_specs"]
