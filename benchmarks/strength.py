"""Strength of the bots: seeded matches, one JSON line per case (see benchmarks/STRENGTH.md for results).

    python -m benchmarks.strength                       # every case at its default game count
    python -m benchmarks.strength --cases greedy_vs_greedy_A mcts1_vs_greedy_A --games 20 --jobs 2

(from the repository root; `PYTHONPATH=. python benchmarks/strength.py` is the same)

Each case: agents, players, side, Spirits, games. Seats rotate; game i has seed `--seed + i`. The line
reports per agent the mean total (and its standard deviation), the win rate with its Wilson 95% interval,
suns for solo cases, and the wall time per game. An MCTS agent's time per turn decision is its budget
(`mcts:S` = S seconds of search per turn; the turn's other micro-actions replay the chosen plan at once).
"""
from __future__ import annotations

import argparse
import json
import time

from agents.match import describe, run_match
from harmonies_env.config import GameConfig

#: name -> (agent specs, players, side, spirits, default games)
CASES = {
    "greedy_vs_greedy_A": (["greedy", "greedy"], 2, "A", False, 200),
    "greedy_vs_random_A": (["greedy", "random"], 2, "A", False, 100),
    "greedy_vs_greedy_B": (["greedy", "greedy"], 2, "B", False, 200),
    "greedy_vs_greedy_A_spirits": (["greedy", "greedy"], 2, "A", True, 200),
    "greedy_vs_greedy_B_spirits": (["greedy", "greedy"], 2, "B", True, 200),
    "greedy_4p_A": (["greedy", "greedy", "greedy", "greedy"], 4, "A", False, 100),
    "solo_greedy_A": (["greedy"], 1, "A", False, 200),
    "solo_greedy_B": (["greedy"], 1, "B", False, 200),
    "solo_greedy_A_spirits": (["greedy"], 1, "A", True, 200),
    "mcts200it_vs_greedy_A": (["mcts:200it", "greedy"], 2, "A", False, 200),
    "greedy800_vs_greedy_A": (["greedy:800", "greedy"], 2, "A", False, 200),
    "mcts1_vs_greedy_A": (["mcts:1.0", "greedy"], 2, "A", False, 200),
    "mlp_vs_greedy_A": (["mlp", "greedy"], 2, "A", False, 400),
    "mlp_vs_greedy800_A": (["mlp", "greedy:800"], 2, "A", False, 400),
    "greedy96spaces_vs_greedy_A": (["greedy:96:spaces", "greedy"], 2, "A", False, 400),
    "mlp_vs_greedy96spaces_A": (["mlp", "greedy:96:spaces"], 2, "A", False, 200),
    "mlp_vs_greedy_B": (["mlp", "greedy"], 2, "B", False, 200),
    "mlp_vs_greedy_A_spirits": (["mlp", "greedy"], 2, "A", True, 200),
    "mlp_vs_greedy_B_spirits": (["mlp", "greedy"], 2, "B", True, 200),
    "mlp_3p_A": (["mlp", "greedy", "greedy"], 3, "A", False, 150),
    "mlp_4p_A": (["mlp", "greedy", "greedy", "greedy"], 4, "A", False, 100),
    "solo_mlp_A": (["mlp"], 1, "A", False, 200),
    "solo_mlp_B": (["mlp"], 1, "B", False, 200),
    "solo_mlp_A_spirits": (["mlp"], 1, "A", True, 200),
    "mlp_search_vs_mcts200it_A": (["mlp-search:1.0", "mcts:200it"], 2, "A", False, 200),
    "mlp_search4s_vs_mcts200it_A": (["mlp-search:4.0", "mcts:200it"], 2, "A", False, 60),
    "mlp_search200it_vs_mcts200it_A": (["mlp-search:200it", "mcts:200it"], 2, "A", False, 200),
    "mlp_search300it_vs_mcts200it_A": (["mlp-search:300it", "mcts:200it"], 2, "A", False, 200),
    "learned_vs_greedy_A": (["learned", "greedy"], 2, "A", False, 400),
    "greedy24spaces_vs_greedy_A": (["greedy:24:spaces", "greedy"], 2, "A", False, 200),
    "learned_vs_mlp_A": (["learned", "mlp"], 2, "A", False, 400),
    "learned_search8it_vs_greedy_A": (["learned-search:8it", "greedy"], 2, "A", False, 400),
    "learned_search8it_vs_mlp_A": (["learned-search:8it", "mlp"], 2, "A", False, 400),
    "learned_search8it_vs_mcts200it_A": (["learned-search:8it", "mcts:200it"], 2, "A", False, 200),
    "learned_search1s_vs_greedy_A": (["learned-search:1.0", "greedy"], 2, "A", False, 60),
    "learned_search_vs_greedy_A": (["learned-search", "greedy"], 2, "A", False, 400),
    "learned_search_vs_mcts200it_A": (["learned-search", "mcts:200it"], 2, "A", False, 200),
    "learned_vs_greedy_B": (["learned", "greedy"], 2, "B", False, 200),
    "learned_vs_greedy_A_spirits": (["learned", "greedy"], 2, "A", True, 200),
    "learned_vs_greedy_B_spirits": (["learned", "greedy"], 2, "B", True, 200),
    "learned_3p_A": (["learned", "greedy", "greedy"], 3, "A", False, 150),
    "learned_4p_A": (["learned", "greedy", "greedy", "greedy"], 4, "A", False, 100),
    "solo_learned_A": (["learned"], 1, "A", False, 200),
    "solo_learned_B": (["learned"], 1, "B", False, 200),
    "solo_learned_A_spirits": (["learned"], 1, "A", True, 200),
    "solo_learned_search8it_A": (["learned-search:8it"], 1, "A", False, 200),
    "learned_win20_vs_mlp_A": (["learned-win:20", "mlp"], 2, "A", False, 400),
    "learned_win20_vs_greedy_A": (["learned-win:20", "greedy"], 2, "A", False, 400),
}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES), help=f"cases to run: {', '.join(CASES)}")
    ap.add_argument("--games", type=int, default=None, help="override every case's game count")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; cases are {', '.join(CASES)}")
    run_match(["greedy"], games=1, progress=False, config=GameConfig(1))  # warm up: compile the kernels before timing
    for name in args.cases:
        specs, players, side, spirits, games = CASES[name]
        games = args.games or games
        t0 = time.perf_counter()
        results = run_match(specs, games=games, seed=args.seed, jobs=args.jobs, progress=True,
                            config=GameConfig(players, side, spirits))
        wall = time.perf_counter() - t0
        summary = describe(results)
        row = {"case": name, "players": players, "side": side, "spirits": spirits, "games": games,
               "seed": args.seed, "jobs": args.jobs, "wall_s_per_game": round(wall / games * args.jobs, 3)}
        if players == 1:
            row["wall_s_per_game"] = round(wall / (games * len(specs)) * args.jobs, 3)
        for nm, e in summary["agents"].items():
            a = {"mean": round(e["total"]["mean"], 2), "std": round(e["total"]["std"], 2)}
            if "win_rate" in e:
                a["win_rate"] = round(e["win_rate"], 3)
                a["win_rate_ci95"] = [round(x, 3) for x in e["win_rate_ci95"]]
            if "suns" in e:
                a["suns"] = round(e["suns"]["mean"], 2)
            a["categories"] = {c: round(v["mean"], 1) for c, v in e.items() if isinstance(v, dict) and "mean" in v
                               and c not in ("total", "suns")}
            row[nm] = a
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
