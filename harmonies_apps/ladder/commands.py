"""What each `harmonies ladder` command does, as functions of an open ladder (the CLI in `cli.py` prints them).

init and add check every spec before anything is written; play and test re-check every bot's weights and the
engine's version before a game is played; verify re-plays stored games; export writes one JSON line per game.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

import numpy as np

from harmonies_env.config import GameConfig
from harmonies_env.stops import held

from .bots import ANCHOR, check_bots, check_spec
from .engine import game_results, play_blocks, play_share, run_tasks, tasks_of
from .pairing import plan_round, widest_interval
from .sequential import SequentialTest, pair_result
from .store import Bot, Ladder, LadderError, create_ladder, open_ladder


def init(path: str | Path, config: GameConfig, seed: int, references: Sequence[str]) -> Ladder:
    """A new ladder for the pool `config`, with `random` (the anchor, bot 0) and `references` as references; every
    spec is checked first, so a bad one leaves no file."""
    specs = [ANCHOR, *(s for s in dict.fromkeys(references) if s != ANCHOR)]
    checked = [(s, *check_spec(s)) for s in specs]
    ladder = create_ladder(path, config, seed)
    for spec, sha, reproducible in checked:
        ladder.add_bot(spec, spec, sha, reproducible, reference=True)
    return ladder


def add(ladder: Ladder, spec: str, name: str | None = None, reference: bool = False) -> Bot:
    """Add a bot (named by its spec unless `name`); its spec is checked and its weights' SHA-256 taken first."""
    name = spec if name is None else name.strip()
    if not name:
        raise LadderError("a bot's name cannot be empty")
    if any(b.name == name for b in ladder.bots()):
        raise LadderError(f"{ladder.path} already has a bot named {name!r} (give another --name)")
    sha, reproducible = check_spec(spec)
    return ladder.add_bot(name, spec, sha, reproducible, reference)


def ready(ladder: Ladder) -> list[Bot]:
    """The bots, after checking that this engine and every bot's weights are the ones the ladder was played with."""
    ladder.check_engine()
    bots = ladder.bots()
    check_bots(bots)
    return bots


def play(ladder: Ladder, until_games: int | None, until_ci: float | None = None, jobs: int = 1,
         ray_address: str | None = None, say: Callable[[str], None] = lambda s: None,
         on_block: Callable[[int, list[dict]], None] | None = None, bot: str | None = None) -> int:
    """Play rounds until the ladder holds `until_games` games, or sooner once every bot's 95% interval is at most
    ±`until_ci` Elo (checked between rounds); the recorded blocks of an unfinished round are played first. Returns
    the blocks committed by this call. `bot` (a name or spec: placing one bot): every new round's blocks are
    built around it and `until_ci` looks at its placement interval only (`pairing.placement_interval`: against the
    ladder as it stands). `until_games` is required: an interval alone may never get there (a bot that
    sweeps another stands above it by what the prior allows, and its interval narrows very slowly)."""
    if until_games is None:
        raise LadderError("give --until-games N (with --until-ci ELO: whichever is reached first)"
                          if until_ci is None else
                          "--until-ci needs --until-games N as well, a cap: an interval may never narrow to "
                          f"±{until_ci:g} Elo (a bot that sweeps another is rated above it by what the prior allows)")
    if until_games < 1:
        raise LadderError(f"--until-games must be at least 1, got {until_games}")
    if until_ci is not None and not until_ci > 0:
        raise LadderError(f"--until-ci must be a number of Elo above 0, got {until_ci}")
    bots = ready(ladder)
    target = None if bot is None else ladder.bot(bot)
    n = ladder.pool.config.num_players
    if target is not None and target.id == 0:
        raise LadderError(f"{target.name!r} is the anchor, at 0 Elo with no interval to narrow: name another --bot")
    if len(bots) < n:
        raise LadderError(f"a {n}-player ladder needs at least {n} bots to play, {ladder.path} has {len(bots)}")
    committed = 0
    results = game_results(ladder.games())  # read once, then extended by this run's blocks (the fits are order-free)
    while True:
        pending = ladder.pending_blocks()
        stored = len(results)
        if stored >= until_games:
            return committed
        if pending:
            todo = pending[:math.ceil((until_games - stored) / n)]
            played = play_blocks(ladder, todo, jobs, ray_address, on_block=on_block)
            results += game_results([g for games in played.values() for g in games])
            committed += len(played)
            continue
        if until_ci is not None:
            widest = widest_interval(results, len(bots), ladder.pool.seed, until_ci,
                                     None if target is None else target.id)
            say(f"{len(results)} games, " + ("widest 95% interval" if target is None else
                                             f"{target.name}'s 95% placement interval") + f" ±{widest:.1f} Elo")
            if widest <= until_ci:
                return committed
        round_no, first = ladder.rounds(), ladder.next_block()
        planned = plan_round(bots, results, n, ladder.pool.seed, round_no,
                             focus=None if target is None else target.id)
        ladder.plan_blocks([(first + k, b) for k, b in enumerate(planned)], round_no)


#: Blocks a test plays between two looks at its statistic, per worker process (the test still looks after each
#: block, in block order; blocks played past its verdict are not stored).
TEST_STEP = 4


def run_test(ladder: Ladder, new: str, base: str, kind: str, bounds: tuple[float, float], alpha: float, beta: float,
             max_games: int, jobs: int = 1, ray_address: str | None = None,
             on_block: Callable[[int, list[dict]], None] | None = None) -> dict[str, Any]:
    """A sequential test of NEW against BASE on paired blocks (one seed, seats swapped), looked at after every
    block (`sequential.SequentialTest`): stops at a bound or `max_games`; stored with its LLR trajectory, and its
    games count in the ladder. A test of the same settings that was stopped before it finished (Ctrl-C, a kill) is
    resumed from its stored pairs."""
    n = ladder.pool.config.num_players
    if n != 2:
        raise LadderError(f"ladder test plays head-to-head pairs: it needs a 2-player ladder, {ladder.path} has {n} "
                          f"players")
    if max_games < 2:
        raise LadderError(f"--max-games must be at least 2 (one pair), got {max_games}")
    ready(ladder)
    a, b = ladder.bot(new), ladder.bot(base)
    if a.id == b.id:
        raise LadderError(f"NEW and BASE are the same bot ({a.name!r})")
    seq = SequentialTest(kind, bounds, alpha, beta)  # checked before anything is stored
    settings = (a.id, b.id, kind, seq.method, bounds, alpha, beta, max_games)
    test = ladder.unfinished_test(*settings)
    if test is None:
        test = ladder.start_test(*settings)
    else:  # the same test stopped before: its stored pairs first, then on from there
        for games in ladder.test_blocks(test).values():
            if seq.add(*pair_result(game_results(games), a.id, b.id)) is not None:
                break
    results: dict[str, Any] = {}
    try:
        while seq.verdict is None and 2 * seq.pairs + 2 <= max_games:
            first = ladder.next_block()
            k = min(TEST_STEP * max(1, jobs), (max_games - 2 * seq.pairs) // 2)
            blocks = [(first + j, (a.id, b.id)) for j in range(k)]
            played = play_blocks(ladder, blocks, jobs, ray_address, commit=False)
            for number in sorted(played):
                games = played[number]
                with held():
                    ladder.commit_blocks({number: games}, test=test, bots=(a.id, b.id))
                if on_block is not None:
                    on_block(number, games)
                seq.add(*pair_result(game_results(games), a.id, b.id))
                if seq.verdict is not None:
                    break
    except BaseException:  # stopped (Ctrl-C) or failed: its progress kept, the same command resumes it
        ladder.finish_test(test, seq.verdict, seq.llr, 2 * seq.pairs, seq.counts, seq.trajectory, finished=False)
        raise
    ladder.finish_test(test, seq.verdict, seq.llr, 2 * seq.pairs, seq.counts, seq.trajectory)
    results.update(test=test, new=a.name, base=b.name, statistic=kind, method=seq.method, bounds=list(bounds),
                   alpha=alpha, beta=beta, verdict=seq.verdict or "undecided", games=2 * seq.pairs, pairs=seq.pairs,
                   llr=seq.llr, llr_bounds=[seq.lower, seq.upper], counts=seq.counts,
                   mean_margin=float(np.mean(seq.margins)) if seq.margins else 0.0)
    return results


def verify(ladder: Ladder, sample: int, jobs: int = 1, say: Callable[[str], None] = lambda s: None) -> list[str]:
    """Re-play a seeded sample of `sample` stored games (of reproducible bots) from their specs and seeds; one line
    per game whose stored result differs (empty: every score re-played identically)."""
    bots = ready(ladder)
    n = ladder.pool.config.num_players
    games = [g for g in ladder.games() if all(bots[i].reproducible for i in g["bots"])]
    skipped = ladder.game_count() - len(games)
    if skipped:
        say(f"{skipped} games of bots with a time budget are not reproducible: not re-played")
    if sample < len(games):
        pick = np.random.default_rng(ladder.pool.seed).choice(len(games), size=sample, replace=False)
        games = [games[i] for i in sorted(pick)]
    from harmonies_env.scoring import CATEGORIES

    slots = dict(ladder.conn.execute("SELECT number, bots FROM blocks").fetchall())
    wanted: dict[int, set[int]] = {}
    for g in games:
        wanted.setdefault(g["block"], set()).add(g["game_index"])
    by_block = [(b, tuple(json.loads(slots[b]))) for b in sorted(wanted)]
    tasks = tasks_of(by_block, bots, ladder.pool.config, ladder.pool.seed)
    tasks = [t._replace(indices=[i for i in t.indices if i % n in wanted[i // n]]) for t in tasks]
    fresh: dict[tuple[int, int], dict] = {}
    for results in run_tasks(tasks, jobs):
        for r in results:
            fresh[(r["game"] // n, r["game"] % n)] = r
    bad = []
    for g in games:
        r = fresh[(g["block"], g["game_index"])]
        got = {"bots": [int(s) for s in r["seats"]], "totals": [int(sc["total"]) for sc in r["scores"]],
               "categories": [[int(sc[c]) for c in CATEGORIES[:7]] for sc in r["scores"]],
               "winners": [int(w) for w in r["winners"]], "turns": int(r["turns"]), "seed": int(r["seed"])}
        diff = [k for k, v in got.items() if g[k] != v]
        if diff:
            bad.append(f"game {g['id']} (block {g['block']}, seating {g['game_index']}): stored "
                       + ", ".join(f"{k} {g[k]}" for k in diff) + " but re-played " +
                       ", ".join(f"{k} {got[k]}" for k in diff))
    say(f"re-played {len(games)} games" if games else "no stored games to re-play")
    return bad


def export(ladder: Ladder, out: TextIO) -> int:
    """Write every stored game as one JSON line (bots by name and spec, scores by category); returns the count."""
    from harmonies_env.scoring import CATEGORIES

    bots = ladder.bots()
    games = ladder.games()
    for g in games:
        row = {"id": g["id"], "block": g["block"], "game_index": g["game_index"], "seed": g["seed"],
               "bots": [bots[i].name for i in g["bots"]], "specs": [bots[i].spec for i in g["bots"]],
               "scores": [{**dict(zip(CATEGORIES[:7], c)), "total": t} for c, t in zip(g["categories"], g["totals"])],
               "ranks": g["ranks"], "winners": g["winners"], "animal_cubes": g["animal_cubes"], "turns": g["turns"],
               "cpu_seconds": g["cpu_seconds"], "version": g["version"], "git_commit": g["git_commit"],
               "played": g["played"], "sha256": g["sha256"]}
        out.write(json.dumps(row) + "\n")
    return len(games)


def report(ladder: Ladder) -> dict[str, Any]:
    """The leaderboard (`report.build_report`), refitted from every stored game."""
    from .report import build_report

    bots = ladder.bots()
    bot_rows = [{"name": b.name, "spec": b.spec, "sha256": b.sha256, "reproducible": b.reproducible,
                 "reference": b.reference} for b in bots]
    tests = [{**t, "kind": t["statistic"], "bounds": [t["bound0"], t["bound1"]],
              "verdict": t["verdict"] or "stopped (the same command resumes it)",
              "llr": math.nan if t["llr"] is None else t["llr"]} for t in ladder.tests()]
    return build_report(bot_rows, game_results(ladder.games()), tests, [b.id for b in bots if b.reference],
                        ladder.pool.seed)


__all__ = ["TEST_STEP", "add", "export", "init", "open_ladder", "play", "play_share", "ready", "report", "run_test",
           "verify"]
