"""Throughput of the MLP's trainer and of the learned agents' decisions: one JSON line per case (results in
benchmarks/RESULTS.md).

    python -m benchmarks.bench_learned                      # the shipped training config, 2 threads
    python -m benchmarks.bench_learned --threads 1 --seconds 20

Cases (each warmed up first, then timed for about --seconds):
* `selfplay`: the MLP trainer's `Trainer.selfplay_step` alone: self-play decisions/s (planning + features in one
  numba call, one batched forward, playing the chosen plans), with the config's games, beam and candidates;
* `train`: `Trainer.train_step` alone on a filled buffer: training samples/s (Adam steps x batch);
* `iteration`: the trainer's loop as configured (self-play step + `steps_per_iter` training steps): decisions/s;
* `SPEC_decision` (a case per agent spec, named after it: `learned_decision` times `learned`): the agent deciding a
  turn with its checkpoint's play settings, ms per decision: `learned` (the shipped n-tuple network), `learned-win`,
  `learned-search:8it`, `mlp` (the MLP baseline: 64 candidates from a beam of 96 per central space, outputs averaged
  over 4 mirror images) and `mlp-search:300it` (300 leaves per decision, the budget STRENGTH.md measures against
  `mcts:200it`). The line names the spec it timed (`agent`).

    python -m benchmarks.bench_learned --cases learned_decision learned_win_decision learned_search_decision
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments.train_mlp import Trainer, load_config

ROOT = Path(__file__).resolve().parents[1]


#: The decision-time cases: case -> (agent spec, games of 2 players, Side A, seeds 0..games-1).
DECISIONS = {"learned_decision": ("learned", 4), "learned_win_decision": ("learned-win", 4),
             "learned_search_decision": ("learned-search:8it", 2), "mlp_decision": ("mlp", 4),
             "mlp_search_decision": ("mlp-search:300it", 2)}


def _timed(fn, seconds: float) -> tuple[int, float]:
    n = 0
    t0 = time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n, dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "mlp.toml"))
    ap.add_argument("--threads", type=int, default=None, help="override run.threads")
    ap.add_argument("--seconds", type=float, default=15.0, help="timing per case")
    ap.add_argument("--cases", nargs="*", default=["selfplay", "train", "iteration", *DECISIONS])
    args = ap.parse_args(argv)
    sets = [] if args.threads is None else [f"run.threads={args.threads}"]
    cfg = load_config(args.config, sets)
    load = os.getloadavg()[0]
    trainer_cases = {"selfplay", "train", "iteration"} & set(args.cases)
    with tempfile.TemporaryDirectory() as tmp:
        if not trainer_cases:
            tmp = None
        tr = Trainer(cfg, seed=0, run=Path(tmp), progress=False) if tmp else None
        # warm-up: compile the kernels, fill the replay buffer
        while tr is not None and tr.buf_size < max(int(cfg["train"]["batch"]) * 4, 2048):
            tr.selfplay_step()
        if tr is not None:
            tr.train_step()
        sp = cfg["selfplay"]
        base = {"threads": int(cfg["run"]["threads"]), "games": sp["games"], "beam": sp["beam"],
                "candidates": sp["candidates"], "load1": round(load, 2)}
        if "selfplay" in args.cases:
            before = tr.decisions
            n, dt = _timed(tr.selfplay_step, args.seconds)
            print(json.dumps({"case": "selfplay", **base, "decisions_per_s": round((tr.decisions - before) / dt, 1),
                              "s_per_step": round(dt / n, 4)}), flush=True)
        if "train" in args.cases:
            n, dt = _timed(tr.train_step, args.seconds)
            B = int(cfg["train"]["batch"])
            print(json.dumps({"case": "train", **base, "batch": B, "samples_per_s": round(n * B / dt, 1),
                              "ms_per_step": round(1000 * dt / n, 2)}), flush=True)
        if "iteration" in args.cases:
            def it():
                tr.selfplay_step()
                for _ in range(int(cfg["train"]["steps_per_iter"])):
                    tr.train_step()
            before = tr.decisions
            n, dt = _timed(it, args.seconds)
            print(json.dumps({"case": "iteration", **base, "decisions_per_s": round((tr.decisions - before) / dt, 1),
                              "samples_per_s": round(n * int(cfg["train"]["steps_per_iter"]) *
                                                     int(cfg["train"]["batch"]) / dt, 1)}), flush=True)
    for case, (spec, games) in DECISIONS.items():
        if case not in args.cases:
            continue
        from agents import make_agent
        from agents.base import private_copy
        from harmonies_env import Game
        from harmonies_env.view import PlayerView

        agent = make_agent(spec)
        times = []
        for seed in range(games):
            g = Game(2, "A", False, seed=seed)
            while not g.is_over:
                view = PlayerView(g, g.current_player)
                t0 = time.perf_counter()
                plan = agent.choose_plan(view, private_copy(view, 0))
                times.append(time.perf_counter() - t0)
                for a in plan:
                    g.step(a)
        t = np.array(times[2:])  # the first decisions include compilation
        print(json.dumps({"case": case, "agent": spec, "decisions": len(t), "mean_ms": round(1000 * t.mean(), 1),
                          "median_ms": round(1000 * float(np.median(t)), 1),
                          "p95_ms": round(1000 * np.percentile(t, 95), 1), "max_ms": round(1000 * t.max(), 1),
                          "load1": round(os.getloadavg()[0], 2)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
