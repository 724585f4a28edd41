"""Self-play throughput of the MLP's trainer (`learned-mlp`) with 1 and 2 workers: local processes vs Ray actors. One
JSON line per case and worker count (results in benchmarks/RESULTS.md, docs/distributed.md).

    python -m benchmarks.bench_selfplay                    # the shipped config, 1 thread a worker, 1 and 2 workers
    python -m benchmarks.bench_selfplay --workers 2 --seconds 20 --cases selfplay_ray

Cases (each worker a `train_learned.Trainer`'s self-play with its own `selfplay.games` games, warmed up first):
* `selfplay_processes`: N spawned processes, each timing its own `selfplay_step` loop for --seconds: the decisions/s
  summed;
* `selfplay_ray`: `experiments.selfplay_workers.SelfPlayWorkers` with N actors on a local Ray instance of N CPUs:
  `collect` rounds (each actor a few steps with the published weights) for about --seconds: all decisions / wall
  time, the round trips included.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config(path: str, threads: int) -> dict:
    from experiments.train_mlp import load_config

    cfg = load_config(path, [f"run.threads={threads}"])
    cfg["train"]["buffer"] = 2 * int(cfg["selfplay"]["games"]) * int(cfg["selfplay"]["max_decisions"])
    return cfg


def _process_rate(job: tuple) -> float:
    """One worker process: decisions/s of its own self-play loop."""
    path, threads, seed, seconds = job
    from experiments.train_mlp import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(_config(path, threads), seed=seed, run=Path(tmp), progress=False, init=False)
        tr.selfplay_step()
        d0, t0 = tr.decisions, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            tr.selfplay_step()
        return (tr.decisions - d0) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "mlp.toml"))
    ap.add_argument("--threads", type=int, default=1, help="threads of each worker")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--steps", type=int, default=4, help="self-play steps of each actor per collect round (Ray)")
    ap.add_argument("--cases", nargs="+", default=["selfplay_processes", "selfplay_ray"],
                    choices=["selfplay_processes", "selfplay_ray"])
    args = ap.parse_args(argv)
    cfg = _config(args.config, args.threads)
    games = int(cfg["selfplay"]["games"])

    def line(case: str, n: int, rate: float, **extra) -> str:
        return json.dumps({"table": "distributed", "case": case, "workers": n, "threads": args.threads,
                           "games": games, "beam": int(cfg["selfplay"]["beam"]),
                           "candidates": int(cfg["selfplay"]["candidates"]), "decisions_per_s": round(rate, 1),
                           **extra, "load1": round(os.getloadavg()[0], 2)})

    if "selfplay_processes" in args.cases:
        for n in args.workers:
            with mp.get_context("spawn").Pool(n) as pool:
                rates = pool.map(_process_rate, [(args.config, args.threads, k, args.seconds) for k in range(n)])
            print(line("selfplay_processes", n, sum(rates)), flush=True)
    if "selfplay_ray" in args.cases:
        import ray

        from experiments.selfplay_workers import SelfPlayWorkers
        from experiments.train_mlp import Trainer

        with tempfile.TemporaryDirectory() as tmp:
            weights = Trainer(cfg, seed=0, run=Path(tmp), progress=False, init=False).net.state_dict()
        for n in args.workers:
            ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False, logging_level="warning")
            try:
                with SelfPlayWorkers(cfg, seed=0, workers=n) as pool:
                    pool.publish(weights)
                    pool.collect(1)  # warm-up: the actors start, load the kernels and the weights
                    decisions, t0 = 0, time.perf_counter()
                    while time.perf_counter() - t0 < args.seconds:
                        decisions += sum(r["decisions"] for r in pool.collect(args.steps))
                    rate = decisions / (time.perf_counter() - t0)
                print(line("selfplay_ray", n, rate, steps=args.steps), flush=True)
            finally:
                ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
