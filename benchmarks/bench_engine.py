"""Engine speed: whole random games inside numba, and the Python API (Game.step + action_mask()).

Warms up (compiles) first, then times each case; prints one JSON line per case. Also times the
plain-Python reference scorer of the tests against the scoring kernel on the same boards, for a ratio, and the
engine's habitat matcher against the placement-by-placement kernel kept as a test reference.

    python -m benchmarks.bench_engine [--games 20000] [--api-actions 200000] [--habitat-boards 100000]

(or `harmonies bench ...`). The two test-reference cases load `tests/reference.py` and `tests/habitat_reference.py`
from the checkout this module is in (or from `./tests`); without them (an installed wheel has no tests/ folder) each
says on stderr, in one line, that it is skipped and why, and its JSON row has `skipped`.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from numba import njit

from harmonies_env import Game, rules
from harmonies_env import state as S
from harmonies_env.actions import NUM_ACTIONS
from harmonies_env.cards import NUM_CARDS, habitat_cells
from harmonies_env.firstrun import say_if_compiling
from harmonies_env.scoring import NUM_CATEGORIES

CONFIGS = [(1, "A", False), (2, "A", False), (2, "B", True), (3, "A", True), (4, "B", False)]
#: How usage lines and messages name this benchmark when it is run as a module.
PROG = "python -m benchmarks.bench_engine"


def prog() -> str:
    """`harmonies bench` when the `harmonies` command forwards here (it sets sys.argv[0] so), else `PROG`."""
    return sys.argv[0] if sys.argv and sys.argv[0].startswith("harmonies ") else PROG


def reference_dirs() -> list[Path]:
    """Where the tests' reference modules may be: the checkout holding this module, then ./tests."""
    return [Path(__file__).resolve().parents[1] / "tests", Path.cwd() / "tests"]


def load_test_module(name: str) -> ModuleType | None:
    """tests/<name>.py, loaded from its file (the tests/ folder is no package, and an unrelated installed `tests`
    package may shadow it), or None where no checkout is found."""
    for folder in reference_dirs():
        path = folder / f"{name}.py"
        if path.is_file():
            key = f"_bench_tests_{name}"
            if key not in sys.modules:
                spec = importlib.util.spec_from_file_location(key, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[key] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[key]
                    raise
            return sys.modules[key]
    return None


def skip(case: str, name: str) -> None:
    """A case that needs a test reference absent here: one line on stderr saying so, and a JSON row `skipped`."""
    why = f"tests/{name}.py not found (it is in a checkout of the repository, not in an installed package)"
    print(f"{prog()}: {case} skipped: {why}", file=sys.stderr, flush=True)
    emit(case=case, skipped=why)


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
    reference = load_test_module("reference")  # the plain-Python reference scorer of the tests
    if reference is None:
        return skip("reference_ratio", "reference")
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


@njit(cache=True)
def _random_boards(bbs, cubes, sides, cards) -> None:
    """Boards met in random games (2p, both sides), each with a card drawn at random: int64 (N, 15), (N,) x 3."""
    s = np.zeros(S.STATE_SIZE, dtype=np.int64)
    buf = np.zeros(NUM_ACTIONS, dtype=np.int64)
    grids = np.zeros(9, dtype=np.int64)
    rng = np.array([7], dtype=np.int64)
    g = 0
    S.init_state(s, 2, 0, 0, g)
    for k in range(bbs.shape[0]):
        if s[S.GAME_OVER]:
            g += 1
            S.init_state(s, 2, g % 2, 0, g)
        rules.step(s, rules.random_action(s, rng, 0, buf, grids))
        p = s[S.CURRENT]
        bbs[k] = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
        cubes[k] = s[S.CUBES + p]
        sides[k] = s[S.SIDE]
        cards[k] = 1 + S.random_below(rng, 0, NUM_CARDS)


def _match_all(matcher):
    @njit
    def run(bbs, cubes, sides, cards) -> int:
        found = 0
        for k in range(bbs.shape[0]):
            found += matcher(sides[k], bbs[k], cubes[k], cards[k]) != 0
        return found
    return run


def bench_habitat(boards: int) -> None:
    habitat_reference = load_test_module("habitat_reference")  # test reference, not the engine's
    if habitat_reference is None:
        return skip("habitat_matcher", "habitat_reference")
    # Compiled afresh, not from numba's cache: the tests import that file as `habitat_reference` (pytest puts tests/
    # on the path), so a cache they wrote names that module, which this process cannot import.
    placement_habitat_cells = njit(habitat_reference.placement_habitat_cells.py_func)
    bbs = np.zeros((boards, 15), dtype=np.int64)
    cubes, sides, cards = (np.zeros(boards, dtype=np.int64) for _ in range(3))
    _random_boards(bbs, cubes, sides, cards)
    runs = {"grid": _match_all(habitat_cells), "placements": _match_all(placement_habitat_cells)}
    assert len({f(bbs, cubes, sides, cards) for f in runs.values()}) == 1  # same answers (and compiled)
    best = dict.fromkeys(runs, np.inf)
    for _ in range(5):  # interleaved, best of 5: both see the same machine load
        for name, f in runs.items():
            t = time.perf_counter()
            f(bbs, cubes, sides, cards)
            best[name] = min(best[name], time.perf_counter() - t)
    emit(case="habitat_matcher", what="cells one card's habitat offers, boards from random 2p games",
         boards=boards, grid_ns=round(best["grid"] / boards * 1e9, 1),
         placements_reference_ns=round(best["placements"] / boards * 1e9, 1),
         ratio=round(best["placements"] / best["grid"], 2))


def main(argv: list[str] | None = None) -> int:
    """Parse argv (None: sys.argv[1:]) and run every case; `harmonies bench` calls this with its arguments.
    A count below 1 is one line on stderr naming the option, and 2."""
    ap = argparse.ArgumentParser(prog=prog(), description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--games", type=int, default=20000, help="whole random games per configuration, in numba")
    ap.add_argument("--api-actions", type=int, default=200000, help="actions timed through Game.step from Python")
    ap.add_argument("--reference-games", type=int, default=300, help="finished games scored by both scorers")
    ap.add_argument("--habitat-boards", type=int, default=100000,
                    help="boards on which the habitat matcher and its test reference are timed")
    a = ap.parse_args(argv)
    for option in ("games", "api_actions", "reference_games", "habitat_boards"):
        if getattr(a, option) < 1:
            print(f"{ap.prog}: --{option.replace('_', '-')} must be >= 1, got {getattr(a, option)}", file=sys.stderr)
            return 2
    say_if_compiling()  # a first run's 30 s compile, said on a terminal
    bench_numba(a.games)
    bench_api(a.api_actions)
    bench_reference(a.reference_games)
    bench_habitat(a.habitat_boards)
    assert NUM_ACTIONS == 268
    return 0


if __name__ == "__main__":
    sys.exit(main())
