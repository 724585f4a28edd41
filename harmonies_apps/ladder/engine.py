"""Playing a ladder's blocks with the match engine: seeds, seatings, batches, worker processes or Ray, commits.

A block is one seed played from every seating of its bots: game r of block b (r < n, n players) is the match
engine's game index i = b·n + r of a paired match (`agents.match.play_match(paired=True)`) with base seed
`pool seed × SEED_STRIDE`: game seed base + b, seats rotated by r (seat k holds the block's bot (k + r) mod n: 2
games in 2 players, the n cyclic rotations in 3–4, each bot once in every seat), each bot seeded by its seat
(`SeatSeeded`: identical bots mirror each other within a block). So a game is a function of (specs, rules, pool
seed, block, r) alone, and blocks of any bots are batched into one `play_match` call (each bot deciding all its
games of the call at once), whatever else is being played. Tasks (whole blocks, at most `agents.match.MAX_SHARE`
games each) run in this process, in `jobs` processes or on a Ray cluster; a task's blocks are committed in one
transaction as soon as it returns (`Ladder.commit_blocks`), so a killed run loses only the blocks in flight.
"""
from __future__ import annotations

import functools
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from agents.match import MAX_SHARE, MatchTask, agent_seed, play_match, policy_of
from harmonies_env.config import GameConfig

from .stats import GameResult
from .store import Bot, Ladder, now

#: Block b of a ladder with seed S is played with game seed S·SEED_STRIDE + b (a million blocks per ladder seed).
SEED_STRIDE = 1_000_000


def base_seed(pool_seed: int) -> int:
    """The match engine's base seed for a ladder's games."""
    return int(pool_seed) * SEED_STRIDE


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of this checkout ("+dirty" when it has uncommitted changes), or None outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def ranks_of(totals: Sequence[int], cubes: Sequence[int]) -> list[int]:
    """Each seat's place, 0 first, by total then animal cubes (the game's winner rule); ties share a place."""
    keys = list(zip(totals, cubes))
    return [sum(k2 > k for k2 in keys) for k in keys]


class SeatSeeded:
    """A bot's batch policy in the ladder's match-engine call, seeded by the seat it holds in each game
    (`seat_seeds`) whatever index the engine gives it: a game's seeds are a function of its block and seating only,
    and two copies of one deterministic bot play a 2-player block's games as exact mirror images (common random
    numbers), a pair between equals scoring exactly 1 : 1."""

    def __init__(self, policy: Any, seeds: np.ndarray, name: str):
        self.policy, self.seeds, self.name = policy, seeds, name

    def reset_batch(self, seeds: np.ndarray) -> None:
        if callable(getattr(self.policy, "reset_batch", None)):
            self.policy.reset_batch(self.seeds)

    def act_batch(self, batch: Any) -> np.ndarray:
        return self.policy.act_batch(batch)


def seat_seeds(base: int, index: Sequence[int], seating: np.ndarray, policy: int) -> np.ndarray:
    """The seeds of `policy` (a column of `play_match`'s `seating`) in the games `index` (game i = b·n + r of
    block b): `agent_seed(base, b·n, seat)` for the seat it holds there (0 where it does not play)."""
    n = seating.shape[1]
    here = seating == policy
    seats, plays = np.argmax(here, axis=1).tolist(), here.any(axis=1).tolist()
    return np.array([agent_seed(base, (int(i) // n) * n, k) if p else 0 for i, k, p in zip(index, seats, plays)],
                    dtype=np.int64)


def block_seating(blocks: Sequence[tuple[int, Sequence[int]]], index: Sequence[int], n: int) -> tuple[list[int],
                                                                                                     np.ndarray]:
    """(the bot ids of `blocks`, ascending; int (games, n): the position in that list of the bot in each seat of
    each game `index`): game r = i mod n of block b = i // n seats the block's bot (k + r) mod n in seat k."""
    slots_of = {int(b): tuple(int(x) for x in ids) for b, ids in blocks}
    ids = sorted({x for slots in slots_of.values() for x in slots})
    col = {b: c for c, b in enumerate(ids)}
    seating = np.array([[col[slots_of[i // n][(k + i) % n]] for k in range(n)] for i in index], dtype=np.int64)
    return ids, seating.reshape(len(index), n)


def play_share(task: MatchTask) -> list[dict[str, Any]]:
    """Worker: play the games `task.indices` of the ladder's paired match in one `play_match` call (`task.extra`:
    (block, bot ids in slot order) of its blocks; `task.names` the ids of `task.specs`): one policy per bot, seated
    by `block_seating`, so that blocks of different bots share the call and each bot decides all its games of the
    call at once, as in a match of its own; each game's moves depend on its own state and seeds only, whatever
    else shares the call. The match engine's results with "seats" as bot ids, each with the CPU seconds of the call
    shared out over its games ("cpu_seconds")."""
    start = time.process_time()
    n = task.config.num_players
    spec_of = dict(zip(task.names, task.specs))
    index = [int(i) for i in task.indices]
    ids, seating = block_seating(task.extra, index, n)
    players = [SeatSeeded(policy_of(spec_of[str(b)]), seat_seeds(task.seed, index, seating, c), str(b))
               for c, b in enumerate(ids)]
    out = play_match(players, games=index, seed=task.seed, config=task.config, paired=True, seating=seating,
                     names=[str(b) for b in ids])
    cpu = (time.process_time() - start) / max(1, len(out))
    for r in out:
        r["cpu_seconds"] = cpu
    return out


def game_result(result: dict[str, Any], bots: Sequence[int], block: int,
                columns: Sequence[str] | None = None) -> GameResult:
    """One match-engine result (`agents.match.play_match`'s dict) as the statistics see it, for the ladder and
    `harmonies tournament` alike: `bots` the bot index in each seat, `block` its block (paired games share one),
    each seat's finishing place by total then animal cubes (the game's winner rule; tied seats share a place), and
    per seat the scores of `columns` (default the 7 categories stored by the ladder) and, solo, the suns."""
    from harmonies_env.scoring import CATEGORIES

    columns = CATEGORIES[:7] if columns is None else columns
    scores = result["scores"]
    totals = [int(sc["total"]) for sc in scores]
    extra = (int(result["suns"]),) if "suns" in result else ()
    return GameResult(block=int(block), bots=tuple(int(b) for b in bots), totals=tuple(totals),
                      ranks=tuple(ranks_of(totals, [int(c) for c in result["animal_cubes"]])),
                      categories=tuple(tuple(int(sc[c]) for c in columns) + extra for sc in scores))


def game_rows(results: Sequence[dict[str, Any]], bots: dict[str, Bot], n: int, version: str,
              commit: str | None) -> dict[int, list[dict[str, Any]]]:
    """block -> its games as store rows (`store.GAME_COLUMNS`), from match-engine results named by bot id
    (`game_result`'s places and categories)."""
    played = now()
    out: dict[int, list[dict[str, Any]]] = {}
    for r in results:
        seat_bots = [bots[s] for s in r["seats"]]
        g = game_result(r, [b.id for b in seat_bots], r["game"] // n)
        out.setdefault(g.block, []).append({
            "block": g.block, "game_index": r["game"] % n, "seed": int(r["seed"]), "bots": list(g.bots),
            "categories": [list(c) for c in g.categories], "totals": list(g.totals), "ranks": list(g.ranks),
            "winners": [int(w) for w in r["winners"]], "animal_cubes": [int(c) for c in r["animal_cubes"]],
            "turns": int(r["turns"]), "cpu_seconds": float(r["cpu_seconds"]), "version": version,
            "git_commit": commit, "played": played, "sha256": [b.sha256 for b in seat_bots]})
    return out


def tasks_of(blocks: Sequence[tuple[int, Sequence[int]]], bots: Sequence[Bot], config: GameConfig,
             pool_seed: int) -> list[MatchTask]:
    """The blocks as match tasks for `play_share`, in block order, at most MAX_SHARE games each (blocks of any bots
    together: `block_seating`)."""
    n = config.num_players
    blocks = [(int(b), tuple(int(x) for x in ids)) for b, ids in blocks]
    per = max(1, MAX_SHARE // n)
    tasks = []
    for k in range(0, len(blocks), per):
        chunk = blocks[k:k + per]
        used = sorted({i for _, ids in chunk for i in ids})
        tasks.append(MatchTask(tuple(bots[i].spec for i in used), tuple(str(i) for i in used), config,
                               base_seed(pool_seed), [b * n + r for b, _ in chunk for r in range(n)], tuple(chunk)))
    return tasks


def split_for(tasks: list[MatchTask], slots: int, n: int) -> list[MatchTask]:
    """Tasks split (at block boundaries) until there are at least ~2 per worker slot, so the load evens out."""
    out = list(tasks)
    while slots > 1 and len(out) < 2 * slots:
        big = max(range(len(out)), key=lambda k: len(out[k].indices), default=None)
        if big is None or len(out[big].indices) <= n:
            break
        t = out[big]
        half = (len(t.indices) // n // 2) * n
        out[big:big + 1] = [t._replace(indices=t.indices[:half]), t._replace(indices=t.indices[half:])]
    return out


def run_tasks(tasks: Sequence[MatchTask], jobs: int = 1, ray_address: str | None = None,
              worker: Callable[[MatchTask], list[dict]] = play_share) -> Iterable[list[dict[str, Any]]]:
    """Each task's results as its task finishes (any order): in this process, `jobs` worker processes (spawned;
    Ctrl-C ends them) or a Ray cluster (`agents.distributed.RaySession`, in waves of its CPUs)."""
    if ray_address is not None:
        from agents.distributed import RaySession

        with RaySession(ray_address) as session:
            wave = max(1, session.cpus)
            for k in range(0, len(tasks), wave):
                yield from session.map(worker, list(tasks[k:k + wave]))
        return
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield worker(t)
        return
    import multiprocessing as mp

    from harmonies_env.stops import ignore_in_worker

    with mp.get_context("spawn").Pool(min(jobs, len(tasks)), initializer=ignore_in_worker) as pool:
        yield from pool.imap_unordered(worker, tasks, chunksize=1)


def play_blocks(ladder: Ladder, blocks: Sequence[tuple[int, Sequence[int]]], jobs: int = 1,
                ray_address: str | None = None, on_block: Callable[[int, list[dict[str, Any]]], None] | None = None,
                commit: bool = True) -> dict[int, list[dict[str, Any]]]:
    """Play planned `blocks` (number, bot ids in slot order) and commit each task's blocks in one transaction as the
    task returns (unless not `commit`: a test commits its own, in order); on_block(number, rows) after each.
    Returns block -> game rows."""
    from harmonies_env.stops import held

    bots = ladder.bots()
    by_name = {str(b.id): b for b in bots}
    n = ladder.pool.config.num_players
    tasks = tasks_of(blocks, bots, ladder.pool.config, ladder.pool.seed)
    slots = jobs if ray_address is None else 8
    tasks = split_for(tasks, slots, n)
    version, sha = ladder.pool.version, git_commit()
    out: dict[int, list[dict[str, Any]]] = {}
    for results in run_tasks(tasks, jobs, ray_address):
        rows = {b: sorted(g, key=lambda x: x["game_index"]) for b, g in game_rows(results, by_name, n, version,
                                                                                    sha).items()}
        if commit:
            with held():  # a Ctrl-C during the commit waits for it: blocks are stored whole or not at all
                ladder.commit_blocks(rows)
        for number in sorted(rows):
            out[number] = rows[number]
            if on_block is not None:
                on_block(number, rows[number])
    return out


def game_results(games: Sequence[dict[str, Any]]) -> list[GameResult]:
    """Stored game rows (`game_rows`, read back) as the statistics' `GameResult`s again."""
    return [GameResult(block=int(g["block"]), bots=tuple(g["bots"]), totals=tuple(g["totals"]),
                       ranks=tuple(g["ranks"]), categories=tuple(tuple(c) for c in g["categories"])) for g in games]


__all__ = ["SEED_STRIDE", "SeatSeeded", "base_seed", "block_seating", "game_result", "game_results", "game_rows",
           "git_commit", "play_blocks", "play_share", "ranks_of", "run_tasks", "seat_seeds", "split_for", "tasks_of"]
