"""Engine speed: whole random games inside numba, and the Python API (Game.step + action_mask()).

Warms up (compiles) first, then times each case in thread CPU time; prints one JSON line per case. Also times the
plain-Python reference scorer of the tests against the scoring kernel on the same boards, for a ratio, and the
engine's habitat matcher against the placement-by-placement kernel kept as a test reference.

    python -m benchmarks.bench_engine [--games 20000] [--api-actions 200000] [--habitat-boards 100000]
    python -m benchmarks.bench_engine --against REV [--engine REV2] [--rounds 5] [--games 20000]
    python -m benchmarks.bench_engine --c-source PATH/harminies.c [--against REV] [--rounds 5] [--games 20000]

(or `harmonies bench ...`). `--against REV` is the guard of the engine's speed: it plays the same seeded random
games (2p A, and 4p B beside it; `--cases` adds `rollout_batch` and `mcts:200it`) with this checkout's engine (or
REV2's) and with REV's, each engine imported in its own process from its own tree (REV as a clean `git worktree` in
a temp dir) with its own fresh numba cache, both pinned to one core, alternated in one run (A B A B ..., after a
warm-up), and prints per case the ratio of games per thread-CPU-second and both engines' actions per game (equal:
the same games). Run it on every change to `harmonies_env/` and to a numba kernel the agents use, and put the ratio
in the commit message.

`--c-source PATH` adds the Almsev C engine (github.com/Almsev/harmonies-ai, its `harminies.c`; nothing of it is in
this repository) to the random cases: `benchmarks/c_engine_driver.c` is compiled against PATH with the C project's
optimised flags (`cc -O3 -march=native -fstrict-aliasing`, $CC for another compiler) and plays whole random games
(uniform over every legal action, as `random_games` does) in its own process on the same core, alternated with the
others; each row gains its games per thread-CPU-second, actions per game, mean score and ours-to-C ratio. Its games
are its own (another generator), so "same games" holds between our engines only.

The two test-reference cases load `tests/reference.py` and `tests/habitat_reference.py` from the checkout this module
is in (or from `./tests`); without them (an installed wheel has no tests/ folder) each says on stderr, in one line,
that it is skipped and why, and its JSON row has `skipped`.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
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
from harmonies_env.stops import exit_status, quiet_exit, stop_message, stop_on_signals

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
    """One JSON line, with the machine and its load average now (a shared machine's figures move with it)."""
    row["machine"] = platform.machine()
    row.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps(row), flush=True)


def bench_numba(games: int) -> None:
    for n, side, sp in CONFIGS:
        sc = 0 if side == "A" else 1
        rules.random_games(n, sc, int(sp), 0, 50)  # warm up
        t = time.thread_time()
        actions = rules.random_games(n, sc, int(sp), 12345, games)
        dt = time.thread_time() - t
        emit(case="numba_random_games", players=n, side=side, spirits=sp, games=games,
             games_per_cpu_s=round(games / dt), actions_per_cpu_s=round(actions / dt),
             actions_per_game=round(actions / games, 1))


def bench_api(target_actions: int) -> None:
    for n, side, sp in [(2, "A", False), (4, "B", True)]:
        rng = np.random.default_rng(0)
        g = Game(n, side, sp, seed=10**6)  # warm-up: the kernels Game calls load (or compile) before the timing
        while not g.is_over:
            g.step(int(np.flatnonzero(g.action_mask())[0]))
        done = 0
        elapsed = 0.0
        seed = 0
        while done < target_actions:
            g = Game(n, side, sp, seed=seed)
            seed += 1
            t = time.thread_time()
            while not g.is_over:
                mask = g.action_mask()
                legal = np.flatnonzero(mask)
                g.step(int(legal[rng.integers(len(legal))]))
                done += 1
            elapsed += time.thread_time() - t
        emit(case="python_api_step_and_mask", players=n, side=side, spirits=sp, actions=done,
             actions_per_cpu_s=round(done / elapsed), games=seed)


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
    # writable copies, as Game.scores passes its own state: Game.state's read-only view is another numba type (a
    # second compile of the scoring kernels, and not the code the engine runs)
    states = [g.state.copy() for g in games]
    for s in states[:5]:
        rules.scores_into(s, out)
    t = time.thread_time()
    for s in states:
        rules.scores_into(s, out)
    kernel = (time.thread_time() - t) / len(games)
    inputs = [_board_for_reference(g, p) for g in games for p in range(2)]
    t = time.thread_time()
    for args in inputs:
        reference.score(*args)
    ref = (time.thread_time() - t) / len(games)
    emit(case="reference_ratio", what="score both boards of a finished 2p game", games=len(games),
         kernel_us=round(kernel * 1e6, 2), reference_us=round(ref * 1e6, 1), ratio=round(ref / kernel))


@njit(cache=True)
def _random_boards(bbs, cubes, sides, cards) -> None:
    """Boards met in random games (2p, both sides), each with a card drawn at random: int64 (N, 15), (N,) x 3."""
    s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    buf = np.zeros(NUM_ACTIONS, dtype=np.int64)
    rng = np.array([7], dtype=np.int64)
    g = 0
    S.init_state(s, 2, 0, 0, g)
    for k in range(bbs.shape[0]):
        if s[S.GAME_OVER]:
            g += 1
            S.init_state(s, 2, g % 2, 0, g)
        rules.step(s, rules.random_action(s, rng, 0, buf))
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
            t = time.thread_time()
            f(bbs, cubes, sides, cards)
            best[name] = min(best[name], time.thread_time() - t)
    emit(case="habitat_matcher", what="cells one card's habitat offers, boards from random 2p games",
         boards=boards, grid_ns=round(best["grid"] / boards * 1e9, 1),
         placements_reference_ns=round(best["placements"] / boards * 1e9, 1),
         ratio=round(best["placements"] / best["grid"], 2))


#: The cases of `--against`: name -> (kind, players, side, spirits). "random": `rules.random_games`; "rollout":
#: `batch.rollout_batch` on fresh states in one thread; "mcts": seat 0 `mcts:200it` against a random seat 1.
AGAINST_CASES = {"random_2pA": ("random", 2, "A", False), "random_4pB": ("random", 4, "B", False),
                 "rollout_2pA": ("rollout", 2, "A", False), "mcts200it_2pA": ("mcts", 2, "A", False)}
#: The first game seed of the guard's games (each round plays the same games).
AGAINST_SEED = 12345


class EngineProcess:
    """One engine in its own process (`engine_worker.py`), importing `harmonies_env` from `root`, with its own numba
    cache in `cache_dir`."""

    def __init__(self, root: Path, cache_dir: str) -> None:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, NUMBA_NUM_THREADS="1", PYTHONPATH=str(root))
        worker = Path(__file__).resolve().with_name("engine_worker.py")
        self.proc = subprocess.Popen([sys.executable, str(worker), str(root)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=root)
        self.imported = self.read()["harmonies_env"]

    def send(self, **ask) -> None:
        self.proc.stdin.write(json.dumps(ask) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the engine process of {self.imported if hasattr(self, 'imported') else '?'} "
                               f"ended (exit {self.proc.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


#: The C project's flags for its optimised native build (its CMakeLists.txt, `harminies_test_optimized`).
C_FLAGS = ["-O3", "-march=native", "-fstrict-aliasing"]


class CEngineProcess:
    """The C engine's random games in its own process (`c_engine_driver.c` compiled against `source` in `tmp`), with
    `EngineProcess`'s questions and answers for the random cases (board 0/1 is Side A/B)."""

    def __init__(self, source: Path, tmp: Path) -> None:
        if not source.is_file():
            raise ValueError(f"--c-source {source}: no such file")
        binary = tmp / "c-engine"
        driver = Path(__file__).resolve().with_name("c_engine_driver.c")
        cc = os.environ.get("CC", "cc")
        built = subprocess.run([cc, *C_FLAGS, f'-DHARMINIES_SOURCE="{source.resolve()}"', str(driver), "-o",
                                str(binary)], capture_output=True, text=True)
        if built.returncode != 0:
            last = (built.stderr.strip().splitlines() or ["no message"])[-1]
            raise ValueError(f"--c-source {source}: {cc} could not build the C engine: {last}")
        self.imported = f"C engine {source.resolve()} ({cc} {' '.join(C_FLAGS)})"
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pending: dict | None = None

    def send(self, **ask) -> None:
        if "core" in ask:
            os.sched_setaffinity(self.proc.pid, {int(ask["core"])})
            self.pending = {"pinned": ask["core"]}
            return
        if ask.get("kind", "random") != "random":
            raise ValueError("the C engine plays the random cases only")
        self.proc.stdin.write(f"{ask['players']} {ask['side']} {ask['seed']} {ask['games']}\n")
        self.proc.stdin.flush()
        self.pending = None

    def read(self) -> dict:
        if self.pending is not None:
            answer, self.pending = self.pending, None
            return answer
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the C engine's process ended (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


def resolve(root: Path, rev: str) -> str:
    """rev's full commit hash, or ValueError naming it."""
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise ValueError(f"unknown revision {rev!r} in {root}") from None


def against_games(kind: str, games: int, mcts_games: int) -> int:
    """Games per round of a case: --games random games, a tenth of them as rollout rows, --mcts-games searches."""
    return {"random": games, "rollout": max(1, games // 10), "mcts": mcts_games}[kind]


def bench_against(against: str | None, engine: str | None, cases: list[str], games: int, mcts_games: int,
                  rounds: int, core: int, argv: list[str], c_source: Path | None = None) -> bool:
    """The guard: this checkout's engine (or `engine`'s) against `against`'s on the same games, and/or against the C
    engine built from `c_source` on the random cases; one JSON line per case. Returns whether our two engines played
    the same games (same actions, or same choices, each round); True with no `against`."""
    root = Path(__file__).resolve().parents[1]
    revs = {} if against is None else {"against": resolve(root, against)}
    if engine is not None:
        revs["engine"] = resolve(root, engine)
    label = revs.get("engine") or (f"working tree of {git(root, 'rev-parse', 'HEAD')}"
                                   + (" (modified)" if git(root, "status", "--porcelain", "--untracked-files=no")
                                      else ""))
    tmp = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    trees: list[Path] = []
    procs: dict[str, EngineProcess | CEngineProcess] = {}
    try:
        c_engine = None if c_source is None else CEngineProcess(c_source, tmp)
        roots = {"engine": root}
        for name, sha in revs.items():
            roots[name] = tmp / f"{name}-{sha[:10]}"
            git(root, "worktree", "add", "--detach", str(roots[name]), sha)
            trees.append(roots[name])
        for name in ("engine", "against"):
            if name in roots:
                procs[name] = EngineProcess(roots[name], str(tmp / f"numba-cache-{name}"))
        if c_engine is not None:
            procs["c"] = c_engine

        def asked(case: str, name: str) -> bool:
            return name != "c" or AGAINST_CASES[case][0] == "random"

        for case in cases:  # warm up: compile, all at once (not yet pinned)
            kind, players, side, spirits = AGAINST_CASES[case]
            for name, p in procs.items():
                if asked(case, name):
                    p.send(kind=kind, players=players, side="AB".index(side), spirits=int(spirits), seed=0,
                           games=1 if kind == "mcts" else 50)
            for name, p in procs.items():
                if asked(case, name):
                    p.read()
        for p in procs.values():
            p.send(core=core)
            p.read()
        same = True
        for case in cases:
            kind, players, side, spirits = AGAINST_CASES[case]
            names = [name for name in procs if asked(case, name)]
            if names == ["engine"]:
                print(f"{prog()}: {case} skipped: the C engine plays the random cases only", file=sys.stderr)
                continue
            n = against_games(kind, games, mcts_games)
            load = os.getloadavg()
            cpu: dict[str, list[float]] = {name: [] for name in names}
            actions: dict[str, list[int]] = {name: [] for name in names}
            score = 0
            for _ in range(rounds + 1):  # A B C A B C ...; the first round warms all up and is not counted
                for name in names:
                    procs[name].send(kind=kind, players=players, side="AB".index(side), spirits=int(spirits),
                                     seed=AGAINST_SEED, games=n)
                    answer = procs[name].read()
                    cpu[name].append(answer["cpu_s"])
                    actions[name].append(answer["actions"])
                    if name == "c":
                        score = answer["score"]  # every round plays the same games
            cpu = {name: c[1:] for name, c in cpu.items()}
            speed = {name: n * rounds / sum(c) for name, c in cpu.items()}
            digits = 1 if kind == "mcts" else None
            row = dict(case=case, guard=True, kind=kind, players=players, side=side, spirits=spirits,
                       games=n, rounds=rounds, engine=label, engine_games_per_cpu_s=round(speed["engine"], digits))
            if "against" in names:
                same_here = actions["engine"] == actions["against"]
                same = same and same_here
                row.update(against=revs["against"], against_games_per_cpu_s=round(speed["against"], digits),
                           ratio=round(speed["engine"] / speed["against"], 3),
                           round_ratios=[round(b / a, 3) for a, b in zip(cpu["engine"], cpu["against"])])
                if kind == "mcts":
                    row.update(same_choices=same_here)
                else:
                    row.update(engine_actions_per_game=round(actions["engine"][0] / n, 2),
                               against_actions_per_game=round(actions["against"][0] / n, 2), same_games=same_here)
            else:
                row.update(engine_actions_per_game=round(actions["engine"][0] / n, 2))
            row.update(engine_ns_per_action=round(sum(cpu["engine"]) * 1e9 / (actions["engine"][0] * rounds), 1)
                       if kind == "random" else None)
            if "c" in names:
                row.update(c_engine=procs["c"].imported, c_games_per_cpu_s=round(speed["c"]),
                           c_actions_per_game=round(actions["c"][0] / n, 2),
                           c_mean_score=round(score / (n * players), 2),
                           c_ns_per_action=round(sum(cpu["c"]) * 1e9 / (actions["c"][0] * rounds), 1),
                           ratio_to_c=round(speed["engine"] / speed["c"], 3),
                           round_ratios_to_c=[round(b / a, 3) for a, b in zip(cpu["engine"], cpu["c"])])
            emit(**row, core=core, load=[round(x, 2) for x in load],
                 load_after=[round(x, 2) for x in os.getloadavg()], command=" ".join([PROG, *argv]))
        return same
    finally:
        for p in procs.values():
            p.close()
        for tree in trees:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], check=False,
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


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
    ap.add_argument("--against", metavar="REV", help="only the guard: this engine against REV's on the same games")
    ap.add_argument("--engine", metavar="REV", help="with --against: REV's engine instead of this working tree's")
    ap.add_argument("--rounds", type=int, default=5,
                    help="with --against or --c-source: timed rounds per engine and case")
    ap.add_argument("--cases", nargs="+", choices=list(AGAINST_CASES), default=["random_2pA", "random_4pB"],
                    help="with --against or --c-source: the cases (rollout_2pA plays a tenth of --games as rows)")
    ap.add_argument("--mcts-games", type=int, default=2,
                    help="with --against: games per round of mcts200it_2pA (seat 0 searches)")
    ap.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)),
                    help="with --against or --c-source: the core every engine is pinned to")
    ap.add_argument("--c-source", type=Path, metavar="PATH",
                    help="the C engine's harminies.c: time it on the random cases beside ours (and REV's)")
    argv = sys.argv[1:] if argv is None else list(argv)
    a = ap.parse_args(argv)
    for option in ("games", "api_actions", "reference_games", "habitat_boards", "rounds", "mcts_games"):
        if getattr(a, option) < 1:
            print(f"{ap.prog}: --{option.replace('_', '-')} must be >= 1, got {getattr(a, option)}", file=sys.stderr)
            return 2
    if a.engine is not None and a.against is None:
        print(f"{ap.prog}: --engine needs --against", file=sys.stderr)
        return 2
    if a.core not in os.sched_getaffinity(0):
        print(f"{ap.prog}: --core {a.core} is not a core this process may use", file=sys.stderr)
        return 2
    if a.against is not None or a.c_source is not None:
        try:
            same = bench_against(a.against, a.engine, a.cases, a.games, a.mcts_games, a.rounds, a.core, argv,
                                 a.c_source)
        except ValueError as e:
            print(f"{ap.prog}: {e}", file=sys.stderr)
            return 2
        if not same:
            print(f"{ap.prog}: the two engines played different games (actions differ)", file=sys.stderr)
            return 1
        return 0
    say_if_compiling()  # a first run's 30 s compile, said on a terminal
    bench_numba(a.games)
    bench_api(a.api_actions)
    bench_reference(a.reference_games)
    bench_habitat(a.habitat_boards)
    assert NUM_ACTIONS == 268
    return 0


def run_as_script() -> int:
    """`main` as `python -m benchmarks.bench_engine` runs it: Ctrl-C or SIGTERM is one line and 130 / 143, as through
    `harmonies bench` (the engine processes and the C engine's are closed, their temp folder removed, on the way)."""
    try:
        with stop_on_signals():
            return main()
    except KeyboardInterrupt as e:
        print(stop_message(prog(), e), file=sys.stderr)
        quiet_exit()
        return exit_status(e)


if __name__ == "__main__":
    sys.exit(run_as_script())
