"""The ladder's cost (`harmonies ladder`, docs/ladder.md): one JSON line per case.

    python -m harmonies_apps.ladder.bench                                   # both cases, small
    python -m harmonies_apps.ladder.bench --cases ladder_speed --games 400 --repeats 3
    python -m harmonies_apps.ladder.bench --cases ladder_test --matchup greedy:800 greedy --seeds 0 1 2 3 4

Cases:
* `ladder_speed`: `ladder play --until-games N --jobs 1` on a fresh ladder of `--agents` (pairing fits, the planned
  rounds and every block's commit included) against the match engine alone playing the very same games as one match
  per pairing of bots (`agents.match.play_match` with one policy per seat, on each pairing's blocks in calls of
  `agents.match.MAX_SHARE` games, as `run_match --jobs 1` batches one match; each policy seeded as the ladder seeds
  the bot in that seat, so that the games are the same, which the script checks).
  Process CPU seconds of each, alternated `--repeats` times after an untimed warm-up; `ratio` = engine seconds /
  ladder seconds (1.0: the ladder costs nothing on top).
* `ladder_place`: a ladder of `--references` played to `--settle` games (the references settled), then `add NEW`
  (`--new`) and `play --bot NEW --until-ci 25` (`--target`): the CPU seconds of this process and its children
  (every worker) until NEW's placement interval (docs/ladder.md) is within the target, the games it took, and
  NEW's rating with both its placement interval and `show`'s.
* `ladder_test`: `ladder test NEW BASE` on ladders of seeds `--seeds`, once with Elo bounds [0, 10] and once with
  points bounds [0, 1], up to `--max-games`: the games each needed and its verdict, then a summary line: the games
  and verdicts per statistic, their means, the ratio of the mean points games to the mean Elo games and the mean
  of the per-seed ratios. NEW = BASE tests two identical bots (the second a copy under another name).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from harmonies_env.config import GameConfig

COMMAND = "python -m harmonies_apps.ladder.bench"


def _ladder(folder: Path, name: str, specs: list[str], seed: int):
    from harmonies_apps.ladder import commands

    return commands.init(folder / name, GameConfig(2), seed, specs)


def _engine_match(task) -> list[dict]:
    """One pairing's blocks (a task of `engine.tasks_of` holding blocks of one pairing of bots) as the match engine
    alone plays them: one policy per slot, seats rotated, each asked once a round for all its games."""
    from agents.match import play_match, policy_of
    from harmonies_apps.ladder.engine import SeatSeeded, block_seating, seat_seeds

    n = task.config.num_players
    ids, seating = block_seating(task.extra, task.indices, n)
    assert len(ids) == n and (seating == (np.arange(n)[None, :] + np.array(task.indices)[:, None]) % n).all()
    spec = dict(zip(task.names, task.specs))
    players = [SeatSeeded(policy_of(spec[str(b)]), seat_seeds(task.seed, task.indices, seating, c), str(b))
               for c, b in enumerate(ids)]
    return play_match(players, games=list(task.indices), seed=task.seed, config=task.config, paired=True)


def speed(args: argparse.Namespace) -> dict:
    from harmonies_apps.ladder import commands
    from harmonies_apps.ladder.engine import tasks_of

    ladder_s, engine_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeats + 1):  # the first round warms up, untimed
            with _ladder(Path(tmp), f"l{k}.db", list(args.agents), args.seed) as ladder:
                t0 = time.process_time()
                commands.play(ladder, until_games=args.games)
                lad = time.process_time() - t0
                blocks = [(int(n), tuple(json.loads(b))) for n, b in ladder.conn.execute(
                    "SELECT number, bots FROM blocks WHERE done = 1 ORDER BY number")]
                stored = [(g["block"], g["game_index"], g["totals"]) for g in ladder.games()]
                pairs: dict[tuple, list] = {}
                for b, ids in blocks:
                    pairs.setdefault(ids, []).append((b, ids))
                tasks = [t for group in pairs.values()
                         for t in tasks_of(group, ladder.bots(), ladder.pool.config, ladder.pool.seed)]
            t0 = time.process_time()
            replayed = []
            for t in tasks:  # one match per pairing, MAX_SHARE games a call
                replayed += _engine_match(t)
            eng = time.process_time() - t0
            again = sorted((r["game"] // 2, r["game"] % 2, [s["total"] for s in r["scores"]]) for r in replayed)
            assert again == sorted(stored), "the match engine's games differ from the ladder's"
            if k:
                ladder_s.append(lad)
                engine_s.append(eng)
    ls, es = min(ladder_s), min(engine_s)
    return {"table": "ladder", "case": "ladder_speed", "agents": list(args.agents), "games": args.games,
            "ladder_cpu_s": round(ls, 2), "engine_cpu_s": round(es, 2),
            "ladder_games_per_cpu_s": round(args.games / ls, 1), "engine_games_per_cpu_s": round(args.games / es, 1),
            "ratio": round(es / ls, 3),
            "repeats": args.repeats, "load1": round(os.getloadavg()[0], 2), "command": COMMAND}


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the workers of --jobs)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def place(args: argparse.Namespace) -> dict:
    from harmonies_apps.ladder import commands
    from harmonies_apps.ladder.engine import game_results
    from harmonies_apps.ladder.pairing import placement_interval

    with tempfile.TemporaryDirectory() as tmp, _ladder(Path(tmp), "p.db", list(args.references), args.seed) as ladder:
        t0 = _cpu()
        commands.play(ladder, until_games=args.settle, jobs=args.jobs)
        settle_cpu = _cpu() - t0
        settled = {b["name"]: round((b["ci_high"] - b["ci_low"]) / 2, 1) for b in commands.report(ladder)["bots"]}
        bot = commands.add(ladder, args.new)
        before = ladder.game_count()
        last = ladder.conn.execute("SELECT COALESCE(MAX(id), 0) FROM games").fetchone()[0]
        t0 = _cpu()
        commands.play(ladder, until_ci=args.target, until_games=before + args.cap, jobs=args.jobs, bot=bot.name)
        cpu = _cpu() - t0
        games = ladder.game_count() - before
        row = next(b for b in commands.report(ladder)["bots"] if b["name"] == bot.name)
        results = game_results(ladder.games())
        placed = placement_interval(results, len(ladder.bots()), bot.id, ladder.pool.seed)
        opponents: dict[str, int] = {}
        names = {b.id: b.name for b in ladder.bots()}
        for g in ladder.games("WHERE id > ?", (last,)):
            for b in g["bots"]:
                if b != bot.id:
                    opponents[names[b]] = opponents.get(names[b], 0) + 1
    return {"table": "ladder", "case": "ladder_place", "references": list(args.references), "new": args.new,
            "settle_games": args.settle, "settle_cpu_s": round(settle_cpu, 1), "settled_half_width": settled,
            "target": args.target, "placed": placed <= args.target, "games": games, "opponents": opponents,
            "cpu_s": round(cpu, 1), "rating": round(row["rating"], 1), "placement_half_width": round(placed, 1),
            "show_half_width": round((row["ci_high"] - row["ci_low"]) / 2, 1), "jobs": args.jobs,
            "load1": round(os.getloadavg()[0], 2), "command": COMMAND}


def test_games(args: argparse.Namespace) -> list[dict]:
    from harmonies_apps.ladder import commands

    new, base = args.matchup
    lines, ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            used = {}
            for kind, bounds in (("elo", (0.0, 10.0)), ("points", (0.0, 1.0))):
                with _ladder(Path(tmp), f"t{seed}{kind}.db", ["random", new, base], seed) as ladder:
                    if new == base:  # identical bots: a second copy under another name
                        commands.add(ladder, new, name=f"{new} (copy)")
                    t0 = time.process_time()
                    out = commands.run_test(ladder, f"{new} (copy)" if new == base else new, base, kind, bounds,
                                            0.05, 0.05, args.max_games)
                    cpu = time.process_time() - t0
                used[kind] = out["games"]
                lines.append({"table": "ladder", "case": "ladder_test", "new": new, "base": base, "seed": seed,
                              "statistic": kind, "method": out["method"], "bounds": list(bounds),
                              "verdict": out["verdict"],
                              "games": out["games"], "llr": round(out["llr"], 3), "cpu_s": round(cpu, 1),
                              "max_games": args.max_games, "load1": round(os.getloadavg()[0], 2),
                              "command": COMMAND})
                print(json.dumps(lines[-1]), flush=True)
            ratios.append(used["points"] / max(1, used["elo"]))
    games = {k: [r["games"] for r in lines if r["statistic"] == k] for k in ("elo", "points")}
    summary = {"table": "ladder", "case": "ladder_test_summary", "new": new, "base": base, "seeds": list(args.seeds),
               **{f"{k}_{f}": [r[f] for r in lines if r["statistic"] == k]
                  for k in games for f in ("games", "verdict")},
               "mean_elo_games": round(sum(games["elo"]) / len(games["elo"]), 1),
               "mean_points_games": round(sum(games["points"]) / len(games["points"]), 1),
               "points_to_elo_mean_games": round(sum(games["points"]) / max(1, sum(games["elo"])), 3),
               "mean_points_to_elo_games": round(sum(ratios) / len(ratios), 3), "max_games": args.max_games,
               "load1": round(os.getloadavg()[0], 2), "command": COMMAND}
    return [summary]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["ladder_speed", "ladder_test"],
                    choices=["ladder_speed", "ladder_place", "ladder_test"])
    ap.add_argument("--agents", nargs="+", default=["random", "greedy"], help="ladder_speed's bots (2 or more)")
    ap.add_argument("--games", type=int, default=200, help="ladder_speed's games")
    ap.add_argument("--repeats", type=int, default=3, help="ladder_speed's timed rounds (after a warm-up)")
    ap.add_argument("--seed", type=int, default=0, help="ladder_speed's ladder seed")
    ap.add_argument("--references", nargs="+", default=["random", "greedy:2", "greedy", "greedy:96:spaces"],
                    help="ladder_place's references")
    ap.add_argument("--settle", type=int, default=2000, help="ladder_place: the references' games before NEW")
    ap.add_argument("--new", default="greedy:48", help="ladder_place's new bot")
    ap.add_argument("--target", type=float, default=25.0, help="ladder_place: NEW's --until-ci")
    ap.add_argument("--cap", type=int, default=4000, help="ladder_place: most games NEW may play")
    ap.add_argument("--jobs", type=int, default=1, help="ladder_place's worker processes")
    ap.add_argument("--matchup", nargs=2, default=["greedy:4", "greedy:2"], metavar=("NEW", "BASE"),
                    help="ladder_test's bots")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="ladder_test's ladder seeds")
    ap.add_argument("--max-games", type=int, default=400, help="ladder_test's cap")
    args = ap.parse_args(argv)
    if "ladder_speed" in args.cases:
        print(json.dumps(speed(args)), flush=True)
    if "ladder_place" in args.cases:
        print(json.dumps(place(args)), flush=True)
    if "ladder_test" in args.cases:
        for line in test_games(args):
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
