"""Engine speed: whole random games inside numba, and the Python API (Game.step + action_mask()).

Warms up (compiles) first, then times each case; prints one JSON line per case. Also times the
plain-Python reference scorer of the tests against the scoring kernel on the same boards, for a ratio.

    python benchmarks/bench_engine.py [--games 20000] [--api-actions 200000]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harmonies_env import Game, rules  # noqa: E402
from harmonies_env import state as S  # noqa: E402
from harmonies_env.actions import NUM_ACTIONS  # noqa: E402
from harmonies_env.scoring import NUM_CATEGORIES  # noqa: E402

CONFIGS = [(1, "A", False), (2, "A", False), (2, "B", True), (3, "A", True), (4, "B", False)]


def emit(**row) -> None:
    row["machine"] = platform.machine()
    print(json.dumps(row), flush=True)


def bench_numba(games: int) -> None:
    for n, side, sp in CONFIGS:
        sc = 0 if side == "A" else 1
        rules.random_games(n, sc, int(sp), 0, 50)  # warm up
        t = time.perf_counter()
        actions = rules.random_games(n, sc, int(sp), 12345, games)
        dt = time.perf_counter() - t
        emit(case="numba_random_games", players=n, side=side, spirits=sp, games=games,
             games_per_s=round(games / dt), actions_per_s=round(actions / dt),
             actions_per_game=round(actions / games, 1))


def bench_api(target_actions: int) -> None:
    for n, side, sp in [(2, "A", False), (4, "B", True)]:
        rng = np.random.default_rng(0)
        done = 0
        elapsed = 0.0
        seed = 0
        while done < target_actions:
            g = Game(n, side, sp, seed=seed)
            seed += 1
            t = time.perf_counter()
            while not g.is_over:
                mask = g.action_mask()
                legal = np.flatnonzero(mask)
                g.step(int(legal[rng.integers(len(legal))]))
                done += 1
            elapsed += time.perf_counter() - t
        emit(case="python_api_step_and_mask", players=n, side=side, spirits=sp, actions=done,
             actions_per_s=round(done / elapsed), games=seed)


def _board_for_reference(g: Game, p: int) -> tuple:
    """(side, {(q, r): stack bottom->top}, [(card_id, cubes_placed)]) of player p, as tests/reference.py takes."""
    from harmonies_env.geometry import cell_qr
    from harmonies_env.stacks import STACKS

    board = {cell_qr(g.side, i): STACKS[c] for i, c in enumerate(g.field("stack")[p][: g.num_cells]) if c}
    placed = g.field("cubes_placed")[p]
    return g.side, board, [(cid, int(n)) for cid, n in enumerate(placed) if n >= 0]


def bench_reference(boards: int) -> None:
    try:
        sys.path.insert(0, str(ROOT / "tests"))
        import reference  # noqa: I001  (the plain-Python reference of the tests)
    except ImportError:
        emit(case="reference_ratio", skipped="tests/reference.py not found")
        return
    games = []
    for seed in range(boards):
        g = Game(2, "A", False, seed=seed)
        rng = np.random.default_rng(seed)
        while not g.is_over:
            legal = g.legal_actions()
            g.step(legal[rng.integers(len(legal))])
        games.append(g)
    out = np.zeros((S.MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
    for g in games[:5]:
        rules.scores_into(g.state, out)
    t = time.perf_counter()
    for g in games:
        rules.scores_into(g.state, out)
    kernel = (time.perf_counter() - t) / len(games)
    inputs = [_board_for_reference(g, p) for g in games for p in range(2)]
    t = time.perf_counter()
    for args in inputs:
        reference.score(*args)
    ref = (time.perf_counter() - t) / len(games)
    emit(case="reference_ratio", what="score both boards of a finished 2p game", games=len(games),
         kernel_us=round(kernel * 1e6, 2), reference_us=round(ref * 1e6, 1), ratio=round(ref / kernel))


def main(argv: list[str] | None = None) -> int:
    """Parse argv (None: sys.argv[1:]) and run every case; `harmonies bench` calls this with its arguments."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--games", type=int, default=20000, help="whole random games per configuration, in numba")
    ap.add_argument("--api-actions", type=int, default=200000, help="actions timed through Game.step from Python")
    ap.add_argument("--reference-games", type=int, default=300, help="finished games scored by both scorers")
    a = ap.parse_args(argv)
    bench_numba(a.games)
    bench_api(a.api_actions)
    bench_reference(a.reference_games)
    assert NUM_ACTIONS == 268
    return 0


if __name__ == "__main__":
    main()
