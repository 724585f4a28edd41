"""Self-play throughput: the flagship learner's (`learned`, the n-tuple network) decisions per CPU-second on one
thread, and the MLP's self-play (`mlp`, through the framework) with 1 and 2 workers, local processes vs Ray
actors. One JSON line per case and worker count (results in benchmarks/RESULTS.md, docs/distributed.md). At most 2
minutes with no arguments.

    python -m benchmarks.bench_selfplay                    # every case, the shipped configs
    python -m benchmarks.bench_selfplay --cases selfplay_learned --cpu-seconds 30
    python -m benchmarks.bench_selfplay --workers 2 --seconds 20 --cases selfplay_ray

`selfplay_learned`: the n-tuple learner's self-play decision at its shipped setting (experiments/configs/learned.toml:
`selfplay.candidates` plans at beam `selfplay.beam`, the shipped network's weights), one thread: `selfplay.games`
2-player Side A games, each turn `ntuple.candidate_values` (plan, value every candidate) then the best candidate
played (`play_plan`), finished games replaced, for --cpu-seconds of this process's CPU time (`time.process_time`, so
other jobs on the machine count less; after one warm-up turn). Prints decisions and ranked candidates per
CPU-second. The games are a function of --seed. `selfplay_learned_trainer` (only when named): the n-tuple trainer's
own loop (`Learner.step`: its greedy seats and TD updates included) on one thread, decisions per CPU-second.
`selfplay_learned_workers` (only when named): that loop with N self-play workers (`--workers`; local processes, or
Ray actors with `--ray ADDRESS`) for --learned-seconds of wall time: decisions per wall second over all workers, a
worker's own rate, the driver's learning per finished game, its share of time waiting on the workers and the cost
of one weights sync (docs/distributed.md, section 6).

    python -m benchmarks.bench_selfplay --cases selfplay_learned_workers --workers 1 2 --learned-seconds 40

The MLP's cases (each worker the framework's self-play of the MLP evaluator, its `Learner` as a worker builds it
(`selfplay_command.build`), with its own `selfplay.games` games, warmed up first):
* `selfplay_processes`: N spawned processes, each timing its own `play_turn` loop for --seconds: the decisions/s
  summed;
* `selfplay_ray`: `experiments.selfplay_workers.WorkerPool` of N `selfplay.SelfPlayActor`s on a local Ray instance
  of N CPUs: `play` rounds (each actor a few turns with the published weights) for about --seconds: all decisions /
  wall time, the round trips included.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config(path: str, threads: int) -> dict:
    from experiments.common import load_config
    from experiments.evaluators.mlp import DEFAULTS, settings

    return settings(load_config(path, DEFAULTS, [f"selfplay.threads={threads}"]))


def _process_rate(job: tuple) -> float:
    """One worker process: decisions/s of its own self-play loop."""
    path, threads, seed, seconds = job
    from experiments.selfplay_command import build

    with tempfile.TemporaryDirectory() as tmp:
        tr = build("mlp", _config(path, threads), seed=seed, run=Path(tmp), progress=False, init=False)  # a worker's

        def turn() -> None:
            tr.play_turn(lambda game: None)

        turn()
        d0, t0 = tr.decisions, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            turn()
        return (tr.decisions - d0) / (time.perf_counter() - t0)


def learned_rate(config: str, cpu_seconds: float, seed: int = 0) -> dict:
    """The `selfplay_learned` case: decisions and ranked candidates per CPU-second of the n-tuple learner."""
    import numpy as np

    from agents import ntuple as N
    from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN
    from experiments.common import read_toml
    from experiments.evaluators.ntuple import settings
    from harmonies_env import state as S
    from harmonies_env.batch import play_plan

    sp = settings(read_toml(config))["selfplay"]
    G, K, beam = int(sp["games"]), int(sp["candidates"]), int(sp["beam"])
    w = N.load_checkpoint(N.DEFAULT_CHECKPOINT)[1]
    rng = np.random.default_rng(seed)
    states = np.zeros((G, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    plans = np.zeros((K, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(K, dtype=np.int64)
    pvals = np.zeros(K)
    values = np.zeros(K)
    after = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)

    def new(r: int) -> None:
        S.init_state(states[r], 2, 0, 0, int(rng.integers(1, 2**62)))

    def turn(r: int) -> int:
        s = states[r]
        n = N.candidate_values(s, w, DEFAULT_WEIGHTS, beam, plans, lens, pvals, values, after)
        c = int(np.argmax(values[:n]))
        play_plan(s, plans[c], lens[c])
        if s[S.GAME_OVER]:
            new(r)
        return n

    for r in range(G):
        new(r)
    turn(0)  # warm-up: the kernels load
    decisions = candidates = 0
    t0 = time.process_time()
    while time.process_time() - t0 < cpu_seconds:
        for r in range(G):
            candidates += turn(r)
            decisions += 1
    cpu = time.process_time() - t0
    return {"decisions": decisions, "cpu_s": round(cpu, 2), "decisions_per_cpu_s": round(decisions / cpu, 1),
            "candidates_per_cpu_s": round(candidates / cpu, 1), "candidates": K, "beam": beam, "games": G,
            "threads": 1}


def learned_trainer_rate(config: str, cpu_seconds: float, seed: int = 0) -> dict:
    """The `selfplay_learned_trainer` case: the n-tuple learner's iterations (`Learner.step` of `learned`: the shipped
    config's self-play on one thread, its greedy seats, TD updates at each game's end; no evaluation) per CPU-second,
    from the greedy start (`train.init`)."""
    from experiments.common import read_toml
    from experiments.evaluators.ntuple import settings
    from experiments.selfplay_command import build

    cfg = settings(read_toml(config))
    cfg["selfplay"]["threads"] = 1
    with tempfile.TemporaryDirectory() as tmp:
        tr = build("learned", cfg, seed=seed, run=Path(tmp), progress=False)
        while tr.games_done == 0:  # warm-up until games finish: their TD updates (learn_game) compile too
            tr.step()
        d0, g0, t0 = tr.decisions, tr.games_done, time.process_time()
        while time.process_time() - t0 < cpu_seconds:
            tr.step()
        cpu = time.process_time() - t0
    sp = cfg["selfplay"]
    return {"decisions": tr.decisions - d0, "finished_games": tr.games_done - g0, "cpu_s": round(cpu, 2),
            "decisions_per_cpu_s": round((tr.decisions - d0) / cpu, 1), "candidates": int(sp["candidates"]),
            "beam": int(sp["beam"]), "games": int(sp["games"]), "threads": 1}


def learned_workers_rate(config: str, workers: int, seconds: float, transport: str = "processes",
                         seed: int = 0) -> dict:
    """The `selfplay_learned_workers` case: the n-tuple trainer's loop (`Learner.step`) with `workers` self-play
    workers (the shipped config, one thread each; no evaluation) for about `seconds` of wall time after a warm-up
    iteration: decisions per wall second over all workers, and the costs that limit it: a worker's own decision rate
    (in its play calls), the driver's `learn` per finished game, its wait for the workers (`gather`: they play the
    next iteration while the driver learns), and one weights sync
    (`Learner.publish` + a play call of 0 turns: the weights copied into the shared block and loaded by every worker;
    the median of 5 after 3 warm-up ones) and one snapshot of every worker's games (which the pool takes every
    `held_versions` publications to bound the weights it keeps, and every checkpoint)."""
    import numpy as np

    from experiments.common import read_toml
    from experiments.evaluators.ntuple import settings
    from experiments.selfplay_command import build

    cfg = settings(read_toml(config))
    cfg["selfplay"].update(threads=1, workers=workers)
    tr = build("learned", cfg, seed=seed, run=None, progress=False)
    tr.connect(transport)
    try:
        tr.step()  # warm-up: the workers load the kernels
        tr.iteration += 1
        tr._next = tr.pool.gather()  # (the call in flight: its results are the next iteration's)
        syncs, snaps = [], []
        for _ in range(8):  # the first 3 warm up (buffers allocated, the shared block mapped), 5 timed
            t0 = time.perf_counter()
            tr.pool.snapshot()  # (what the pool does every `held_versions` versions: timed apart)
            t1 = time.perf_counter()
            tr.publish()
            tr.pool.play(0)
            syncs.append(time.perf_counter() - t1)
            snaps.append(t1 - t0)
        sync, snap = float(np.median(syncs[3:])), float(np.median(snaps[3:]))
        costs = {"learn": 0.0, "wait": 0.0, "worker": 0.0}
        learn, gather = tr.learn, tr.pool.gather

        def timed_learn(game):  # noqa: ANN001
            t = time.perf_counter()
            learn(game)
            costs["learn"] += time.perf_counter() - t

        def timed_gather():  # noqa: ANN202
            t = time.perf_counter()
            out = gather()
            costs["wait"] += time.perf_counter() - t
            costs["worker"] += sum(r["seconds"] for r in out)
            return out

        tr.learn, tr.pool.gather = timed_learn, timed_gather
        d0, g0, i0, t0 = tr.decisions, tr.games_done, tr.iteration, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            tr.step()
            tr.iteration += 1
        wall = time.perf_counter() - t0
    finally:
        tr.close()
    d, g = tr.decisions - d0, tr.games_done - g0
    sp = cfg["selfplay"]
    return {"transport": transport, "decisions": d, "finished_games": g, "iterations": tr.iteration - i0,
            "wall_s": round(wall, 2), "decisions_per_s": round(d / wall, 1),
            "worker_decisions_per_s": round(d / max(costs["worker"], 1e-9), 1),
            "learn_ms_per_game": round(1000 * costs["learn"] / max(g, 1), 2),
            "wait_share": round(costs["wait"] / wall, 3), "sync_ms": round(1000 * sync, 1),
            "snapshot_ms": round(1000 * snap, 1),
            "sync_every": int(sp["sync_every"]), "candidates": int(sp["candidates"]), "beam": int(sp["beam"]),
            "games": int(sp["games"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "mlp.toml"),
                    help="the MLP's config (experiments/evaluators/mlp.py)")
    ap.add_argument("--learned-config", default=str(ROOT / "experiments" / "configs" / "learned.toml"),
                    help="the n-tuple learner's config (selfplay_learned: its games, beam and candidates)")
    ap.add_argument("--cpu-seconds", type=float, default=12.0, help="CPU time of the selfplay_learned case")
    ap.add_argument("--threads", type=int, default=1, help="threads of each worker")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seconds", type=float, default=3.0, help="wall time of each MLP case and worker count")
    ap.add_argument("--steps", type=int, default=4, help="self-play steps of each actor per collect round (Ray)")
    ap.add_argument("--learned-seconds", type=float, default=40.0,
                    help="wall time of each selfplay_learned_workers worker count")
    ap.add_argument("--ray", default=None, metavar="ADDRESS",
                    help="selfplay_learned_workers on Ray actors at ADDRESS (local, auto, HOST:PORT), not processes")
    cases = ["selfplay_learned", "selfplay_processes", "selfplay_ray"]
    ap.add_argument("--cases", nargs="+", default=cases,
                    choices=[*cases, "selfplay_learned_trainer", "selfplay_learned_workers"],
                    help="selfplay_learned_trainer (not run by default): the n-tuple trainer's loop for --cpu-seconds; "
                    "selfplay_learned_workers (not run by default): that loop with --workers self-play workers")
    args = ap.parse_args(argv)
    command = " ".join(["python -m benchmarks.bench_selfplay", *(argv if argv is not None else sys.argv[1:])])
    if "selfplay_learned_trainer" in args.cases:
        res = learned_trainer_rate(args.learned_config, args.cpu_seconds)
        print(json.dumps({"table": "learned", "case": "selfplay_learned_trainer", **res, "command": command,
                          "load1": round(os.getloadavg()[0], 2)}), flush=True)
    if "selfplay_learned_workers" in args.cases:
        for n in args.workers:
            res = learned_workers_rate(args.learned_config, n, args.learned_seconds, args.ray or "processes")
            print(json.dumps({"table": "distributed", "case": "selfplay_learned_workers", "workers": n, **res,
                              "command": command, "load1": round(os.getloadavg()[0], 2)}), flush=True)
    if "selfplay_learned" in args.cases:
        res = learned_rate(args.learned_config, args.cpu_seconds)
        print(json.dumps({"table": "learned", "case": "selfplay_learned", **res, "command": command,
                          "load1": round(os.getloadavg()[0], 2)}), flush=True)
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

        from experiments.evaluators.mlp import make
        from experiments.selfplay import SelfPlayActor
        from experiments.selfplay_command import build
        from experiments.selfplay_workers import WorkerPool

        with tempfile.TemporaryDirectory() as tmp:
            weights = {k: v.copy() for k, v in build("mlp", cfg, seed=0, run=Path(tmp), progress=False,
                                                     init=False).evaluator.get_weights().items()}
        for n in args.workers:
            ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False, logging_level="warning")
            try:
                wcfg = {**cfg, "selfplay": {**cfg["selfplay"], "threads": 1}}
                with WorkerPool(SelfPlayActor, (make, wcfg, 0), n, "local", name="mlp-selfplay") as pool:
                    pool.publish(weights)
                    pool.play(1)  # warm-up: the actors start, load the kernels and the weights
                    decisions, t0 = 0, time.perf_counter()
                    while time.perf_counter() - t0 < args.seconds:
                        decisions += sum(r["decisions"] for r in pool.play(args.steps))
                    rate = decisions / (time.perf_counter() - t0)
                print(line("selfplay_ray", n, rate, steps=args.steps), flush=True)
            finally:
                ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
