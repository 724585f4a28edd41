"""Throughput of a tournament over local processes (`--jobs`) and on a local Ray instance (`--ray local`): one JSON
line per case (results in benchmarks/RESULTS.md, docs/distributed.md).

    python -m benchmarks.bench_tournament                       # greedy vs random, 200 games, jobs 1 and 2, Ray
    python -m benchmarks.bench_tournament --games 400 --cpus 2 --cases tournament_ray

Cases (each the whole `agents.match.run_match` call, the games identical in every case):
* `tournament_jobs`: `--jobs N` processes of this machine (N = 1 plays in this process; N > 1 includes starting the
  spawn pool, whose workers load the cached numba kernels): games/s;
* `tournament_ray`: Ray tasks on a local instance of `--cpus` CPUs: `start_s` is starting the instance (`ray.init`),
  then games/s of a first match (worker processes start and load the kernels) and of a second (warm workers).
"""
from __future__ import annotations

import argparse
import json
import os
import time

from agents.match import run_match
from harmonies_env.config import GameConfig

COMMAND = "python -m benchmarks.bench_tournament"


def _line(case: str, args: argparse.Namespace, seconds: float, **extra) -> dict:
    return {"table": "distributed", "case": case, "agents": list(args.agents), "games": args.games,
            "seconds": round(seconds, 2), "games_per_s": round(args.games / seconds, 1), **extra,
            "load1": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--agents", nargs=2, default=["greedy", "random"])
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="process counts of tournament_jobs")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    ap.add_argument("--cases", nargs="+", default=["tournament_jobs", "tournament_ray"],
                    choices=["tournament_jobs", "tournament_ray"])
    args = ap.parse_args(argv)
    config = GameConfig(2)
    run_match(list(args.agents), games=2, seed=args.seed, config=config, progress=False)  # compile once, untimed
    reference = None
    if "tournament_jobs" in args.cases:
        for jobs in args.jobs:
            t0 = time.perf_counter()
            out = run_match(list(args.agents), games=args.games, seed=args.seed, config=config, jobs=jobs,
                            progress=False)
            print(json.dumps(_line("tournament_jobs", args, time.perf_counter() - t0, jobs=jobs)), flush=True)
            reference = reference or out
            assert out == reference, "the games differ between backends"
    if "tournament_ray" in args.cases:
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="warning")
        start = time.perf_counter() - t0
        try:
            for warm in (False, True):
                t0 = time.perf_counter()
                out = run_match(list(args.agents), games=args.games, seed=args.seed, config=config, progress=False,
                                ray_address="local")
                print(json.dumps(_line("tournament_ray", args, time.perf_counter() - t0, cpus=args.cpus,
                                       start_s=round(start, 2), warm=warm)), flush=True)
                reference = reference or out
                assert out == reference, "the games differ between backends"
        finally:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
