"""Explicit chance and the OpenSpiel game: what listing a chance node's outcomes costs, and OpenSpiel random
simulations against the project's own `Game` loop (the same run, so their ratio holds under any load).

Cases (one JSON line each):
- `chance_outcomes`: listing one chance node's outcomes with their probabilities, by kind of node (tokens, card,
  Spirit), over the chance nodes of random 3-player Spirit games: inside numba (an expectimax's inner loop), one
  Python->njit call (`chance.chance_outcomes`), and `Game.chance_outcomes()` (a Python list of pairs).
- `openspiel_random_sims`: whole 2-player random games through pyspiel (`python_harmonies`: chance drawn from
  `chance_outcomes()`, uniform random legal actions, every call through OpenSpiel's Python-game bridge), against
  the same random games on `Game` from Python (default mode, chance dealt inside the engine).

    python -m benchmarks.bench_chance [--seconds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
from numba import njit

from harmonies_env import Game
from harmonies_env import chance as C


def emit(case: str, **fields) -> None:
    print(json.dumps({"case": case, **fields, "load1": round(os.getloadavg()[0], 2),
                      "python": platform.python_version()}), flush=True)


def chance_nodes(games: int) -> dict[str, list[Game]]:
    """Copies of every chance node met in `games` random 3-player Spirit games, by kind."""
    nodes: dict[str, list[Game]] = {"tokens": [], "card": [], "spirit": []}
    rng = np.random.default_rng(0)
    for seed in range(games):
        g = Game(3, "A", True, seed, explicit_chance=True)
        while not g.is_over:
            if g.is_chance_node():
                nodes[g.chance_event()[0]].append(g.clone())
                g.sample_chance()
            else:
                legal = g.legal_actions()
                g.step(legal[rng.integers(len(legal))])
    return nodes


@njit(cache=True)
def _list_all(states, chances, reps, out, probs) -> int:
    """List every node's outcomes `reps` times inside numba; returns the outcomes listed."""
    total = 0
    for _ in range(reps):
        for r in range(states.shape[0]):
            total += C.chance_outcomes(states[r], chances[r], out, probs)
    return total


def timed(fn, seconds: float) -> tuple[int, float]:
    """Call fn() (which returns a count of units) until `seconds` pass; (units, elapsed)."""
    units, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        units += fn()
    return units, time.perf_counter() - t0


def bench_chance_outcomes(seconds: float) -> None:
    nodes = chance_nodes(20)
    out = np.empty(C.TOKEN_OUTCOMES, dtype=np.int64)
    probs = np.empty(C.TOKEN_OUTCOMES, dtype=np.float64)
    for kind, games in nodes.items():
        states = np.array([g._state for g in games])
        chances = np.array([g._chance for g in games])
        n = len(games)
        outcomes = _list_all(states, chances, 1, out, probs) / n
        reps = max(1, 20000 // n)
        listed, dt = timed(lambda: _list_all(states, chances, reps, out, probs), seconds)
        numba_us = dt / (listed / outcomes) * 1e6

        def one_call(states=states, chances=chances):
            for r in range(n):
                C.chance_outcomes(states[r], chances[r], out, probs)
            return n

        calls, dt = timed(one_call, seconds)
        call_us = dt / calls * 1e6

        def game_call(games=games):
            for g in games:
                g.chance_outcomes()
            return n

        calls, dt = timed(game_call, seconds)
        emit("chance_outcomes", node=kind, nodes=n, outcomes_per_node=round(outcomes, 1),
             numba_us=round(numba_us, 3), njit_call_us=round(call_us, 3), game_us=round(dt / calls * 1e6, 3))


def bench_openspiel(seconds: float) -> None:
    import pyspiel

    import harmonies_env.openspiel  # noqa: F401  (registers python_harmonies)

    game = pyspiel.load_game("python_harmonies", {"players": 2})

    def openspiel_game(seed: int) -> int:
        rng = np.random.default_rng(seed)
        state = game.new_initial_state()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, p = zip(*state.chance_outcomes())
                state.apply_action(outcomes[rng.choice(len(outcomes), p=p)])
            else:
                legal = state.legal_actions()
                state.apply_action(legal[rng.integers(len(legal))])
                n += 1
        return n

    def game_loop(seed: int) -> int:
        rng = np.random.default_rng(seed)
        g = Game(2, "A", False, seed)
        n = 0
        while not g.is_over:
            legal = g.legal_actions()
            g.step(legal[rng.integers(len(legal))])
            n += 1
        return n

    openspiel_game(0)
    game_loop(0)
    res = {}
    for name, fn in (("openspiel", openspiel_game), ("game", game_loop)):
        seed = [0]

        def one(fn=fn, seed=seed):
            seed[0] += 1
            fn(seed[0])
            return 1

        games, dt = timed(one, seconds)
        res[name] = (games / dt, games)
    emit("openspiel_random_sims", players=2, side="A", spirits=False,
         openspiel_games_per_s=round(res["openspiel"][0], 1), game_games_per_s=round(res["game"][0], 1),
         ratio=round(res["game"][0] / res["openspiel"][0], 2), games=res["openspiel"][1] + res["game"][1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    args = ap.parse_args(argv)
    bench_chance_outcomes(args.seconds)
    bench_openspiel(args.seconds)


if __name__ == "__main__":
    main()
