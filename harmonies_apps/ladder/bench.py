"""The ladder's cost (`harmonies ladder`, docs/ladder.md): one JSON line per case.

    python -m harmonies_apps.ladder.bench                                   # both cases, small
    python -m harmonies_apps.ladder.bench --cases ladder_speed --games 400 --repeats 3
    python -m harmonies_apps.ladder.bench --cases ladder_test --matchup greedy:800 greedy --seeds 0 1 2 3 4

Cases:
* `ladder_speed`: `ladder play --until-games N --jobs 1` on a fresh ladder of `--agents` (pairing fits, the planned
  rounds and every block's commit included) against the match engine alone playing the very same games as one match
  per pairing of bots (the ladder's worker, `engine.play_share`, on each pairing's blocks in calls of
  `agents.match.MAX_SHARE` games, as `run_match --jobs 1` batches one match; the script checks the games are equal).
  Process CPU seconds of each, alternated `--repeats` times after an untimed warm-up; `ratio` = engine seconds /
  ladder seconds (1.0: the ladder costs nothing on top).
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

from harmonies_env.config import GameConfig

COMMAND = "python -m harmonies_apps.ladder.bench"


def _ladder(folder: Path, name: str, specs: list[str], seed: int):
    from harmonies_apps.ladder import commands

    return commands.init(folder / name, GameConfig(2), seed, specs)


def speed(args: argparse.Namespace) -> dict:
    from harmonies_apps.ladder import commands
    from harmonies_apps.ladder.engine import play_share, tasks_of

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
                replayed += play_share(t)
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
                    choices=["ladder_speed", "ladder_test"])
    ap.add_argument("--agents", nargs="+", default=["random", "greedy"], help="ladder_speed's bots (2 or more)")
    ap.add_argument("--games", type=int, default=200, help="ladder_speed's games")
    ap.add_argument("--repeats", type=int, default=3, help="ladder_speed's timed rounds (after a warm-up)")
    ap.add_argument("--seed", type=int, default=0, help="ladder_speed's ladder seed")
    ap.add_argument("--matchup", nargs=2, default=["greedy:4", "greedy:2"], metavar=("NEW", "BASE"),
                    help="ladder_test's bots")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="ladder_test's ladder seeds")
    ap.add_argument("--max-games", type=int, default=400, help="ladder_test's cap")
    args = ap.parse_args(argv)
    if "ladder_speed" in args.cases:
        print(json.dumps(speed(args)), flush=True)
    if "ladder_test" in args.cases:
        for line in test_games(args):
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
