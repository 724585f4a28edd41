"""Compare and tune the greedy planner's potential weights with whole games played inside numba.

Why: a planner-vs-planner 2-player game costs a few milliseconds on the match engine (`agents.match.play_match`, every
game's turns planned in one threaded numba call), so thousands of seeded games measure a weight change to a fraction
of a point. Game i uses seed `--seed + i`; the planner under test
sits in seat i % 2, so each pair of games shares its seeds across seats (common random numbers).

    # the default weights against the pre-habitat-distance weights (terms 12-13 off), 2,000 games
    python -m experiments.train tune-greedy --set tune.against='"no-distance"' --set tune.games=2000
    # the wide planner (beam 800, what MCTS uses) against the default beam 24
    python -m experiments.train tune-greedy --set tune.beam=800
    # random-mutation hill climbing on the weights for 5 minutes, measured against the defaults
    python -m experiments.train tune-greedy --set tune.search_minutes=5

Settings in `[tune]` of experiments/configs/tune_greedy.toml; `--seed` is game 0's seed (and the search's).

Each evaluation prints one JSON line: mean totals, mean margin (and its standard error), win rate (ties broken
by animal cubes, as the rules say; still tied = half a win), mean animal points and turns per game; the last
one is also written to the run folder's summary.json.
"""
from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from agents.greedy import DEFAULT_WEIGHTS, NUM_TERMS, GreedyAgent, planner_settings
from agents.match import play_match, totals_of, win_shares
from harmonies_env.config import GameConfig

from .commands import RunArgs
from .common import ConfigError, atomic_write_json

TUNE = {"weights": [], "beam": 24, "against": "default", "games": 1000, "side": "A", "spirits": False,
        "search_minutes": 0.0}
#: The command's settings (validated at load, `experiments.common.check_config`).
SCHEMAS = {"tune-greedy": {"tune": TUNE}}

#: The weights before the habitat-distance terms (12, 13) existed, for comparison.
NO_DISTANCE_WEIGHTS = np.array([1.36, 3.89, 0.39, 0.46, 1.14, 2.2, 0.42, 1.03, 0.34, 0.2, -0.66, 0.92, 0.0, 0.0])


def compare(wa: np.ndarray, wb: np.ndarray, games: int, beam_a: int = 24, beam_b: int = 24, seed: int = 0,
            config: GameConfig | None = None, threads: int = 2) -> dict:
    """Planner A against planner B over `games` seeded games of `config` (default: 2 players, Side A) on the match
    engine (`agents.match.play_match`: game i has seed `seed + i`, A in seat i % 2): a summary dict (see the module
    docstring)."""
    beam_a, wa = planner_settings(beam_a, wa)
    beam_b, wb = planner_settings(beam_b, wb)
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    res = play_match([GreedyAgent(beam_a, wa, name="a"), GreedyAgent(beam_b, wb, name="b")], games=games, seed=seed,
                     config=config or GameConfig(), threads=threads)
    a, b = totals_of(res, "a"), totals_of(res, "b")
    animals = np.array([r["scores"][r["seats"].index("a")]["animals"] for r in res], dtype=np.float64)
    d = a - b
    return {"games": games, "mean_a": round(float(a.mean()), 2), "mean_b": round(float(b.mean()), 2),
            "margin": round(float(d.mean()), 2), "margin_se": round(float(d.std() / np.sqrt(games)), 2),
            "win_rate_a": round(float(win_shares(res, "a").mean()), 3), "animals_a": round(float(animals.mean()), 2)}


def search(start: np.ndarray, against: np.ndarray, games: int, minutes: float, seed: int, rng_seed: int) -> np.ndarray:
    """Random-mutation hill climbing: mutate 1-3 weights, keep the change if the margin against `against` grows."""
    rng = np.random.default_rng(rng_seed)
    best = start.copy()
    best_margin = compare(best, against, games, seed=seed)["margin"]
    print(json.dumps({"start_margin": best_margin, "weights": [round(float(x), 3) for x in best]}), flush=True)
    stop = time.monotonic() + 60 * minutes
    tries = 0
    while time.monotonic() < stop:
        tries += 1
        w = best.copy()
        for k in rng.choice(NUM_TERMS, size=int(rng.integers(1, 4)), replace=False):
            w[k] = rng.choice([-1, 1]) * rng.uniform(0.02, 0.2) if w[k] == 0 else w[k] * np.exp(rng.normal(0, 0.35))
        r = compare(w, against, games, seed=seed)
        if r["margin"] > best_margin:
            best, best_margin = w, r["margin"]
            print(json.dumps({"try": tries, "margin": best_margin, "weights": [round(float(x), 3) for x in best]}),
                  flush=True)
    return best


def run(args: RunArgs) -> dict[str, Any]:
    """`tune-greedy`: (optionally hill-climb, then) compare the planner under test with the reference one."""
    t = args.config["tune"]
    if t["against"] not in ("default", "no-distance"):
        raise ConfigError(f"[tune] against must be 'default' or 'no-distance', got {t['against']!r}")
    if t["side"] not in ("A", "B"):
        raise ConfigError(f"[tune] side must be 'A' or 'B', got {t['side']!r}")
    if t["weights"] and len(t["weights"]) != NUM_TERMS:
        raise ConfigError(f"[tune] weights must be empty (the defaults) or {NUM_TERMS} numbers")
    w = np.array(t["weights"], dtype=np.float64) if t["weights"] else DEFAULT_WEIGHTS
    other = DEFAULT_WEIGHTS if t["against"] == "default" else NO_DISTANCE_WEIGHTS
    minutes = float(t["search_minutes"])
    if args.max_minutes:
        minutes = min(minutes, args.max_minutes) if minutes else 0.0
    if minutes > 0:
        w = search(w, other, int(t["games"]), minutes, seed=10_000 + args.seed, rng_seed=args.seed)
    r = compare(w, other, int(t["games"]), beam_a=int(t["beam"]), seed=args.seed,
                config=GameConfig(2, t["side"], bool(t["spirits"])))
    out = {"against": t["against"], "beam": int(t["beam"]), **r, "weights": [round(float(x), 3) for x in w]}
    atomic_write_json(args.run / "summary.json", out)
    print(json.dumps(out), flush=True)
    return out
