"""The match engine: seeded games between batch policies, seats rotated, results by the game's one winner rule.

Every way this project plays bots against each other goes through `play_match`: the tournament and strength
benchmarks (`harmonies_apps.tournament.run_games`), the MLP's evaluation (`experiments.eval_mlp`
and the trainers' periodic evaluations), the greedy planner's tuning (`experiments.tune_greedy`) and a user's own
policy (docs/agents.md). All games advance together: each round, every policy is asked once for the games that wait
on it (`act_batch`, `agents.policy`), and one numba call plays the answers.

Configuration: one `harmonies_env.GameConfig` (players, side, Spirits, river_loops) says the rules of every game of
a match: `play_match(policies, games=8, config=GameConfig(2, "B", river_loops="bga"))`; without one, the default
rules with one seat per policy. There is no loose form: `play_match(policies, 2, 8, "B")` or `side="B"` is a
TypeError.

Seeding (one rule): game i of a match with base seed `seed` and n seats is the game `Game(seed=seed + i)`, or
`seed + i // n` with `paired=True` (every seed played from every seating: common random numbers, as the MLP's
evaluations use); its seats are rotated by i % n (seat k holds policy (k + i) % n); policy j gets the
per-game seed `agent_seed(seed, i, j)` (`reset_batch`). So a game's result is a function of (policies, configuration,
seed, i) alone, whatever other games share its batch: `play_match` over any subset of game indices gives the same
games (the tournament's worker processes split them so). Agents that search for a wall-clock time are the
exception.

Results: one dict per game, `Game`'s own words: "game", "seed", "seats" (policy names by seat), "scores" (breakdown
per seat), "winners" (`Game.winners`: most points, then most animal cubes, else shared), "animal_cubes", "turns",
"suns" (solo) and, with `record=True`, "actions" (every micro-action: `Game.replay` of the record rebuilds the game).
`describe` turns them into per-policy win rates with Wilson intervals and score statistics;
`harmonies_apps.tournament.summarize` adds order-free ratings and intervals on the means.
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from harmonies_env import actions as A
from harmonies_env import rules, stops
from harmonies_env import state as S
from harmonies_env.batch import init_batch, play_plans
from harmonies_env.config import GameConfig, make_config
from harmonies_env.game import Game, IllegalActionError, make_record
from harmonies_env.scoring import CATEGORIES
from harmonies_env.stops import held, ignore_in_worker

from .policy import AgentPolicy, BatchView, is_native


def agent_seed(seed: int, game_index: int, slot: int) -> int:
    """The seed of the policy in slot `slot` for game `game_index` (independent of how games are batched)."""
    return int((seed * 1_000_003 + game_index * 101 + slot * 7 + 12345) % (2**62))


def game_seed(seed: int, game_index: int, seats: int, paired: bool = False) -> int:
    """The game seed of game `game_index`: seed + i, or seed + i // seats when every seed is played from every
    seating (`paired`)."""
    return int(seed) + (int(game_index) // max(1, int(seats)) if paired else int(game_index))


def unique_names(names: Sequence[str]) -> list[str]:
    """Names made distinct: a name given k > 1 times becomes name#1 .. name#k."""
    seen: dict[str, int] = {}
    out = []
    for s in names:
        k = seen.get(s, 0)
        seen[s] = k + 1
        out.append(s if list(names).count(s) == 1 else f"{s}#{k + 1}")
    return out


def policy_of(spec: str, trust: bool | None = None) -> Any:
    """A batch policy from an agent spec (`agents.make_agent`'s): the agent itself where it decides a batch in one go
    (random, greedy, learned, mlp, ppo), else one agent per game seeded with its game's seed
    (`AgentPolicy`)."""
    from . import make_agent

    agent = make_agent(spec, trust=trust)
    if is_native(agent):
        agent.name = spec
        return agent
    return AgentPolicy(lambda s: make_agent(spec, seed=s, trust=trust), name=spec)


def _actions(policy: Any, name: str, batch: BatchView) -> np.ndarray:
    """The policy's answer for the batch, checked: one integer action per game."""
    out = policy.act_batch(batch)
    arr = np.asarray(out)
    if arr.shape != (len(batch),) or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ValueError(f"policy {name!r}: act_batch must return one integer action per game ({len(batch)},), got "
                         f"{getattr(arr, 'dtype', type(out).__name__)} {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _turn_step(policy: Any, name: str, states: np.ndarray, rows: np.ndarray, threads: int, index: np.ndarray,
               seeds: np.ndarray, history: list[list[int]], on_action: Callable[[int, int], None] | None) -> None:
    """Ask `policy` for one micro-action in each of the games `rows` (it is to move there) and play them; an
    illegal one raises IllegalActionError naming the policy, the game and the reason."""
    acts = _actions(policy, name, BatchView(states, rows, threads))
    # played by the engine's whole-plan stepper, each action a plan of one: `rules.step`, its error code per game
    active = np.zeros(len(states), dtype=np.bool_)
    active[rows] = True
    plans = np.zeros((len(states), 1, 1), dtype=np.int64)
    plans[rows, 0, 0] = acts
    errors = play_plans(states, active, plans, np.ones((len(states), 1), dtype=np.int64),
                        np.zeros(len(states), dtype=np.int64))[rows]
    if errors.any():
        k = int(np.flatnonzero(errors)[0])
        r, a = int(rows[k]), int(acts[k])
        g = Game.from_state(states[r])
        desc = g.describe_action(a, viewer=g.current_player) if 0 <= a < A.NUM_ACTIONS else ""
        raise IllegalActionError(a, f"policy {name!r} in game {int(index[r])} (seed {int(seeds[r])}, seat "
                                    f"{int(states[r, S.CURRENT])}): {rules.ERRORS[int(errors[k])]}", desc)
    if history:
        for r, a in zip(rows.tolist(), acts.tolist()):
            history[r].append(a)
    if on_action is not None:
        for r, a in zip(rows.tolist(), acts.tolist()):
            on_action(int(index[r]), a)


def match_config(config: GameConfig | None, seats: int) -> GameConfig:
    """The `GameConfig` a match runs with: `config`, else the default rules with `seats` players (one per policy or
    agent given)."""
    return make_config(config, {"num_players": seats})


def play_match(policies: Sequence[Any], *, games: int | Sequence[int] | None = None, seed: int = 0,
               config: GameConfig | None = None, paired: bool = False, names: Sequence[str] | None = None,
               seating: np.ndarray | None = None,
               record: bool = False, threads: int = 1, progress: Callable[[int], None] | None = None,
               on_action: Callable[[int, int], None] | None = None,
               on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Play seeded games between batch policies, all at once; one result dict per game, in game order.

    config: the games' `GameConfig` (players, side, Spirits, river_loops; default: the default rules, one seat per
    policy). games is required.
    policies: one per seat (num_players of them; one for solo), each an object with `act_batch` (`agents.policy`;
    every `Agent` has it) or an agent spec string (`policy_of`). Pass distinct objects: a policy keeps per-game
    memory for the seat it plays. seating: int (games, seats), which of `policies` sits in each seat of each game,
    in place of the rotation (each game's seats distinct policies; then `policies` may be any number, e.g. one
    per bot of many pairings in one call, each asked once a round for all its games: the ladder's blocks; policy
    j is still seeded `agent_seed(seed, i, j)`). games: how many (indices 0..games-1) or which game indices to
    play (see the module docstring for the seeding and seat rotation). names: the policies' names in the results
    (default: their `name`s, made distinct). record: keep every game's actions ("actions"). threads: how many
    threads a policy may plan with. progress(k) is called with the number of finished games after every round;
    on_action(i, a) after each action a played in game i (how `play_game` follows its one game live);
    on_result(result) with each game's result as soon as that game ends (the games of a batch end in any order;
    how `run_match` streams them back).

    An illegal action raises `IllegalActionError` naming the policy, the game and the reason; a policy's answer of
    the wrong shape, ValueError.
    """
    cfg = match_config(config, len(policies) if seating is None else np.shape(seating)[1])
    n_players = cfg.num_players
    if games is None:
        raise ValueError("games is required: how many games to play, or which game indices")
    pols = [policy_of(p) if isinstance(p, str) else p for p in policies]
    if len(pols) != n_players and seating is None:
        raise ValueError(f"a {n_players}-player match needs {n_players} policies (one per seat), got {len(pols)}")
    if len({id(p) for p in pols}) != len(pols):
        raise ValueError("pass one policy object per seat (a policy keeps per-game memory for its seat)")
    for p in pols:
        if not callable(getattr(p, "act_batch", None)):
            raise ValueError(f"a policy needs act_batch(batch) (agents.policy.BatchPolicy), got {p!r}")
    names = unique_names([str(getattr(p, "name", type(p).__name__)) for p in pols] if names is None else list(names))
    if len(names) != len(pols):
        raise ValueError(f"names must name each of the {len(pols)} policies, got {len(names)}")
    if isinstance(games, (bool, np.bool_)):
        raise ValueError(f"games must be a count or game indices, got {games!r}")
    if isinstance(games, (int, np.integer)):
        if games < 1:
            raise ValueError(f"games must be >= 1, got {games}")
        index = np.arange(int(games), dtype=np.int64)
    else:
        index = np.asarray(list(games), dtype=np.int64)
        if index.ndim != 1 or index.size == 0 or index.min() < 0 or np.unique(index).size != index.size:
            raise ValueError(f"games must list distinct non-negative game indices (at least one), got {games!r}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    G, n = len(index), n_players
    seeds = np.array([game_seed(seed, i, n, paired) for i in index], dtype=np.int64)
    rot = index % n
    slot_of = (np.arange(n)[None, :] + rot[:, None]) % n  # slot_of[r, k]: the policy in seat k of game r
    if seating is not None:
        slot_of = np.asarray(seating)
        if slot_of.shape != (G, n) or not np.issubdtype(slot_of.dtype, np.integer) or slot_of.min() < 0 or \
                slot_of.max() >= len(pols) or any(len(set(row)) != n for row in slot_of.tolist()):
            raise ValueError(f"seating must give each of the {G} games {n} distinct policy indices "
                             f"(0..{len(pols) - 1}), got shape {slot_of.shape}")
    states = np.zeros((G, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    init_batch(states, seeds=seeds, config=cfg)
    for j, p in enumerate(pols):
        if callable(getattr(p, "reset_batch", None)):
            p.reset_batch(np.array([agent_seed(seed, int(i), j) for i in index], dtype=np.int64))
    history: list[list[int]] = [[] for _ in range(G)] if record else []
    all_rows = np.arange(G)
    out: list[dict[str, Any] | None] = [None] * G

    def finish(rows: list[int]) -> None:
        for r in rows:
            g = Game.from_state(states[r])
            res: dict[str, Any] = {"game": int(index[r]), "seed": int(seeds[r]),
                                   "seats": [names[int(k)] for k in slot_of[r]], "winners": g.winners(),
                                   "scores": g.scores(), "animal_cubes": g.animal_cubes(), "turns": g.turn}
            if n == 1:
                res["suns"] = g.suns()
            if record:
                res["actions"] = history[r]
            out[r] = res
            if on_result is not None:
                on_result(res)

    while not states[:, S.GAME_OVER].all():
        for j, p in enumerate(pols):  # each policy plays a whole turn in every game where it is to move
            slot = slot_of[all_rows, states[:, S.CURRENT]]
            rows = np.flatnonzero((states[:, S.GAME_OVER] == 0) & (slot == j))
            turn = states[rows, S.TURN]
            while rows.size:
                stops.checkpoint()  # a stop swallowed where it landed (inside numba's compiler) is raised here
                _turn_step(p, names[j], states, rows, threads, index, seeds, history, on_action)
                going = (states[rows, S.GAME_OVER] == 0) & (states[rows, S.TURN] == turn)
                rows, turn = rows[going], turn[going]
        if on_result is not None:  # the games that ended this round, handed over now
            finish([r for r in np.flatnonzero(states[:, S.GAME_OVER]).tolist() if out[r] is None])
        if progress is not None:
            progress(int(states[:, S.GAME_OVER].sum()))
    finish([r for r in range(G) if out[r] is None])
    return [res for res in out if res is not None]


#: Most games in one task of `run_match` (one `play_match` call): batched agents decide a task's games together,
#: search agents keep one instance per game of it (memory), and the progress bar moves once per task.
MAX_SHARE = 64


class MatchTask(NamedTuple):
    """One task of `run_match`: the games `indices` of a match of agent `specs` (named `names`) under `config` from
    base seed `seed`; `extra` is the caller's (what its worker needs, e.g. where to write records)."""
    specs: tuple[str, ...]
    names: tuple[str, ...]
    config: GameConfig
    seed: int
    indices: list[int]
    extra: Any = None
    paired: bool = False  # every seed from every seating (`game_seed`)


def play_share(task: MatchTask) -> list[dict]:
    """Worker of `run_match`: play the games `task.indices` of a match of agent specs, `report` each as it ends, and
    return their results."""
    return play_match(list(task.specs), games=list(task.indices), seed=task.seed, config=task.config,
                      paired=task.paired, names=task.names, on_result=report)


#: Where `report` hands a finished game while a task of `run_match` runs in this process (None: nowhere).
_reporter: Callable[[dict], None] | None = None
#: A pool worker's queue back to `run_match` (set by `_pool_init`).
_queue: Any = None


def report(result: dict) -> None:
    """A worker of `run_match` hands one finished game's result back at once (`play_match(..., on_result=report)`),
    so that a match stopped halfway keeps every game that ended, not only those of whole tasks."""
    if _reporter is not None:
        _reporter(result)


def _run_task(worker: Callable[[MatchTask], list[dict]], task: MatchTask, emit: Callable[[dict], None]) -> None:
    """Run one task, handing each game's result to `emit` once: as the worker reports it, or (a worker that does not
    report) when it returns."""
    global _reporter
    seen: set[int] = set()

    def reported(res: dict) -> None:
        seen.add(res["game"])
        emit(res)

    before, _reporter = _reporter, reported
    try:
        results = worker(task)
    finally:
        _reporter = before
    for res in results:
        if res["game"] not in seen:
            emit(res)


def _pool_init(queue: Any) -> None:
    """A pool worker's initializer: Ctrl-C is the parent's (`ignore_in_worker`); results go back through `queue`."""
    global _queue
    ignore_in_worker()
    _queue = queue


def _pool_task(worker: Callable[[MatchTask], list[dict]], task: MatchTask) -> None:
    """A task in a pool worker: each game's result is sent to the parent as it ends."""
    _run_task(worker, task, _queue.put)


def cores() -> int:
    """The CPU cores this process may run on (its affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def jobs_note(jobs: int) -> str | None:
    """A one-line note when `jobs` processes are more than this machine's cores (they then only share the cores, and
    each loads its own agents: slower than `cores()` jobs), else None."""
    n = cores()
    if jobs <= n:
        return None
    return (f"--jobs {jobs} is more than the {n} core{'s' if n > 1 else ''} here: the processes share them (slower "
            f"than --jobs {n})")


def run_match(specs: Sequence[str], *, games: int | None = None, seed: int = 0, jobs: int = 1,
              progress: bool = True, worker: Callable[[MatchTask], list[dict]] | None = None, extra: Any = None,
              config: GameConfig | None = None, ray_address: str | None = None, collect: list[dict] | None = None,
              on_result: Callable[[dict], None] | None = None, paired: bool = False) -> list[dict]:
    """A match of agent specs over `jobs` processes, or a Ray cluster's CPUs: `games` seeded games (seats rotated),
    results in game order.

    paired: every seed played from every seating (`play_match`'s: game i has seed `seed + i // seats` and rotation
    i % seats, so games k*seats .. k*seats + seats - 1 are one block of the seed `seed + k`); `games` must then be a
    whole number of blocks (a multiple of the seats).

    config: the games' `GameConfig` (default: the default rules, one seat per spec), as `play_match` takes it.

    The games are split into tasks of consecutive indices (a few per process, at most MAX_SHARE games each), and a
    game depends only on its index, so the results are the same for any `jobs` with reproducible agents. Solo
    (num_players 1): each spec plays `games` games of its own. `worker(task)` plays one task (default `play_share`;
    a caller that also writes records passes its own, a module-level function, with `extra` in each task).
    ray_address: play the tasks on a Ray cluster instead ("local", "auto" or HOST:PORT; `agents.distributed`:
    checkpoints shipped by value, the same results as `jobs`); `jobs` must then be 1. Never more processes start than
    there are tasks (`jobs` above the games is capped; `jobs_note` says when it is above the cores).

    Results stream back one game at a time as each ends (a worker calls `report`; on Ray, one task at a time).
    on_result(result), in this process, is called with each as it arrives (any order), before it is kept: a first
    Ctrl-C or SIGTERM during it is held until it returns (`stops.held`), so e.g. a record written there and the
    result kept go together. collect: a list the results are appended to as they come, sorted into game order when
    the match ends or stops, so that a caller stopped by Ctrl-C or SIGTERM (a KeyboardInterrupt; the worker
    processes are ended) keeps every game that came back."""
    from tqdm import tqdm

    cfg = match_config(config, len(specs))
    num_players = cfg.num_players

    if isinstance(games, bool) or not isinstance(games, (int, np.integer)) or games < 1:
        raise ValueError(f"games must be an integer >= 1, got {games!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if num_players > 1 and len(specs) != num_players:
        raise ValueError(f"a {num_players}-player match needs {num_players} agents, got {len(specs)}")
    if paired and num_players > 1 and games % num_players:
        raise ValueError(f"paired games come in blocks of every seating: games must be a multiple of the "
                         f"{num_players} seats, got {games}")
    if ray_address is not None and jobs != 1:
        raise ValueError(f"jobs ({jobs}) are processes of this machine: give jobs or a Ray cluster, not both")
    worker = worker or play_share
    names = unique_names(list(specs))
    session = None
    if ray_address is not None:
        from .distributed import RaySession

        session = RaySession(ray_address)  # connected before the split: tasks are sized by the cluster's CPUs
    jobs = min(int(jobs), games)
    slots = jobs if session is None else session.cpus
    share = max(1, min(MAX_SHARE, math.ceil(games / (4 * slots))))  # a few tasks per worker: the load evens out
    shares = [list(range(k, min(games, k + share))) for k in range(0, games, share)]
    if num_players == 1:
        tasks = [MatchTask((s,), (nm,), cfg, seed, idx, extra) for s, nm in zip(specs, names) for idx in shares]
    else:
        tasks = [MatchTask(tuple(specs), tuple(names), cfg, seed, idx, extra, bool(paired)) for idx in shares]
    jobs = min(jobs, len(tasks))
    bar = tqdm(total=sum(len(t.indices) for t in tasks), desc="games", disable=not progress, leave=False)
    out: list[dict] = [] if collect is None else collect
    order = {nm: k for k, nm in enumerate(names)}

    def take(res: dict) -> None:
        with held():
            if on_result is not None:
                on_result(res)
            out.append(res)
        bar.update(1)

    try:
        if session is not None:
            with session:
                session.map(worker, tasks, done=lambda i, results: [take(res) for res in results])
        elif jobs == 1:
            for t in tasks:
                _run_task(worker, t, take)
        else:
            import multiprocessing as mp

            ctx = mp.get_context("spawn")
            queue = ctx.Queue()
            errors: list[BaseException] = []

            def failed(e: BaseException) -> None:  # the pool's result thread, here: the error as the pool gave it
                errors.append(e)
                queue.put(None)

            # the workers leave Ctrl-C to this process, which ends them (the pool's exit terminates them)
            with ctx.Pool(jobs, initializer=_pool_init, initargs=(queue,)) as pool:
                for t in tasks:
                    pool.apply_async(_pool_task, (worker, t), error_callback=failed)
                for _ in range(sum(len(t.indices) for t in tasks)):
                    res = queue.get()
                    if res is None:
                        raise errors[0]
                    take(res)
    finally:
        bar.close()
        out.sort(key=lambda res: (order[res["seats"][0]] if num_players == 1 else 0, res["game"]))
    return out


def play_game(agents: Sequence[Any], *, seed: int = 0,
              on_turn: Callable[[Game, int, list[str]], None] | None = None,
              config: GameConfig | None = None) -> Game:
    """Play one game with agents[k] in seat k (`play_match`'s game 0 with base seed `seed`: `Game(seed=seed)`, no
    rotation), each asked one `PlayerView` at a time (`AgentPolicy`). Returns the finished `Game`, with its history.

    config: the game's `GameConfig` (default: the default rules, one seat per agent). on_turn(game, player,
    descriptions) is called after each whole turn with the actions in words.
    """
    cfg = match_config(config, len(agents))
    if len(agents) != cfg.num_players:
        raise ValueError(f"{cfg.num_players} players need {cfg.num_players} agents, got {len(agents)}")
    game = Game(seed=seed, config=cfg)
    said: list[str] = []

    def follow(_: int, a: int) -> None:
        p, turn = game.current_player, game.turn
        if on_turn is not None:
            said.append(game.describe_action(a))
        game.step(a)
        if on_turn is not None and (game.turn != turn or game.is_over):
            on_turn(game, p, list(said))
            said.clear()

    play_match([AgentPolicy(a) for a in agents], games=1, seed=seed, config=cfg, on_action=follow)
    return game


def replay_result(result: dict[str, Any], *, config: GameConfig | None = None) -> Game:
    """The finished `Game` of a result played with record=True (its seed and actions), with its history; config
    (default: the default rules, one seat per seat of the result) must be the match's."""
    if "actions" not in result:
        raise ValueError("this result has no actions: play the match with record=True")
    cfg = match_config(config, len(result["seats"]))
    return Game.replay(make_record(cfg, result["seed"], result["actions"]))


def win_shares(results: Sequence[dict[str, Any]], name: str) -> np.ndarray:
    """float (games,): `name`'s share of each game's victory (1 alone, 1/k among k tied winners, 0 when it lost)."""
    out = np.zeros(len(results))
    for i, r in enumerate(results):
        seats = [p for p, nm in enumerate(r["seats"]) if nm == name]
        out[i] = sum(1.0 / len(r["winners"]) for p in seats if p in r["winners"])
    return out


def totals_of(results: Sequence[dict[str, Any]], name: str) -> np.ndarray:
    """float (games,): `name`'s total score in each game (its mean over its seats if it holds several)."""
    return np.array([np.mean([r["scores"][p]["total"] for p, nm in enumerate(r["seats"]) if nm == name])
                     for r in results], dtype=np.float64)


def wilson_interval(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a win rate of `wins` out of `n` (shared wins may count fractionally)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def describe(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per policy (in order of first appearance): games, and with 2-4 seats wins (a shared victory counts 1/k) and win
    rate with its Wilson 95% interval; mean and standard deviation of each score category, and suns (solo). Ratings
    and intervals on the means need all the games at once: `harmonies_apps.tournament.summarize` adds them."""
    names = list(dict.fromkeys(nm for r in results for nm in r["seats"]))
    per: dict[str, dict[str, list]] = {nm: {"scores": [], "wins": [], "suns": []} for nm in names}
    for r in results:
        w = r["winners"]
        for p, nm in enumerate(r["seats"]):
            per[nm]["scores"].append(r["scores"][p])
            per[nm]["wins"].append(1.0 / len(w) if p in w else 0.0)
            if "suns" in r:
                per[nm]["suns"].append(r["suns"])
    summary: dict[str, Any] = {"games": len(results), "agents": {}}
    multi = bool(results) and len(results[0]["seats"]) > 1
    for nm in names:
        d = per[nm]
        n = len(d["scores"])
        entry: dict[str, Any] = {"games": n}
        if multi:
            wins = float(sum(d["wins"]))
            lo, hi = wilson_interval(wins, n)
            entry.update(wins=wins, win_rate=wins / n, win_rate_ci95=[lo, hi])
        for cat in CATEGORIES:
            vals = np.array([sc[cat] for sc in d["scores"]], dtype=float)
            entry[cat] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1)) if n > 1 else 0.0}
        if d["suns"]:
            entry["suns"] = {"mean": float(np.mean(d["suns"])), "std": float(np.std(d["suns"], ddof=1)) if n > 1
                             else 0.0}
        summary["agents"][nm] = entry
    return summary


__all__ = ["play_match", "play_game", "policy_of", "describe", "wilson_interval", "agent_seed", "game_seed",
           "unique_names", "win_shares", "totals_of", "replay_result", "match_config", "run_match",
           "MatchTask", "play_share", "report"]
