"""Throughput of the MLP baseline (`mlp`): its trainer's phases and its decisions, one JSON line per case (results in
benchmarks/RESULTS.md and docs/history.md). Each case is named after the spec it times.

    python -m benchmarks.bench_mlp                          # the MLP's shipped training config, 2 threads
    python -m benchmarks.bench_mlp --threads 1 --seconds 20 --cases selfplay_mlp train_mlp iteration_mlp

Cases (each warmed up first, then timed for about --seconds):
* `selfplay_mlp`: the MLP's self-play in the framework (`Learner.play_turn`, the evaluator's `decide_rows`:
  planning + features in one numba call, one batched forward, playing the chosen plans; finished games into the
  replay buffer, `learn`) alone: self-play decisions/s, with the config's games, beam and candidates;
* `train_mlp`: one Adam step of the evaluator (`after_iteration`'s) alone on a filled buffer: training samples/s;
* `iteration_mlp`: the framework's iteration as configured (`Learner.step`: a turn in every game, then
  `steps_per_iter` Adam steps): decisions/s;
* `mlp_decision`, `mlp_search_decision`: the agent deciding a turn with its checkpoint's play settings, ms per
  decision: `mlp` (64 candidates from a beam of 96 per central space, outputs averaged over 4 mirror images) and
  `mlp-search:300it` (300 leaves per decision, the budget STRENGTH.md measures against `mcts:200it`). The line names
  the spec it timed (`agent`).

    python -m benchmarks.bench_mlp --cases mlp_decision mlp_search_decision
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from experiments.common import load_config
from experiments.evaluators.mlp import DEFAULTS, settings
from experiments.selfplay_command import build

from .decisions import decision_line

ROOT = Path(__file__).resolve().parents[1]

#: The trainer cases: each times one phase of the MLP's training (the framework's `Learner` of `mlp`,
#: `experiments.selfplay_command.build`).
TRAINER = ("selfplay_mlp", "train_mlp", "iteration_mlp")
#: The decision-time cases: case -> (agent spec, games of 2 players, Side A, seeds 0..games-1).
DECISIONS = {"mlp_decision": ("mlp", 4), "mlp_search_decision": ("mlp-search:300it", 2)}


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
    ap.add_argument("--threads", type=int, default=None, help="override selfplay.threads")
    ap.add_argument("--seconds", type=float, default=15.0, help="timing per case")
    ap.add_argument("--cases", nargs="*", default=[*TRAINER, *DECISIONS], choices=[*TRAINER, *DECISIONS])
    args = ap.parse_args(argv)
    sets = [] if args.threads is None else [f"selfplay.threads={args.threads}"]
    cfg = settings(load_config(args.config, DEFAULTS, sets))
    load = os.getloadavg()[0]
    trainer_cases = set(TRAINER) & set(args.cases)
    with tempfile.TemporaryDirectory() as tmp:
        if not trainer_cases:
            tmp = None
        tr = build("mlp", cfg, seed=0, run=Path(tmp), progress=False) if tmp else None
        ev = tr.evaluator if tr is not None else None
        # warm-up: compile the kernels, fill the replay buffer
        while ev is not None and ev.buf_size < max(int(cfg["train"]["batch"]) * 4, 2048):
            tr.play_turn(tr.learn)
        if ev is not None:
            ev._adam_step(tr.context())
        sp = cfg["selfplay"]
        base = {"threads": int(sp["threads"]), "games": sp["games"], "beam": sp["beam"],
                "candidates": sp["candidates"], "load1": round(load, 2)}
        if "selfplay_mlp" in args.cases:
            before = tr.decisions
            n, dt = _timed(lambda: tr.play_turn(tr.learn), args.seconds)
            print(json.dumps({"case": "selfplay_mlp", **base, "decisions_per_s": round((tr.decisions - before) / dt, 1),
                              "s_per_step": round(dt / n, 4)}), flush=True)
        if "train_mlp" in args.cases:
            ctx = tr.context()
            n, dt = _timed(lambda: ev._adam_step(ctx), args.seconds)
            B = int(cfg["train"]["batch"])
            print(json.dumps({"case": "train_mlp", **base, "batch": B, "samples_per_s": round(n * B / dt, 1),
                              "ms_per_step": round(1000 * dt / n, 2)}), flush=True)
        if "iteration_mlp" in args.cases:
            before = tr.decisions
            n, dt = _timed(tr.step, args.seconds)
            print(json.dumps({"case": "iteration_mlp", **base,
                              "decisions_per_s": round((tr.decisions - before) / dt, 1),
                              "samples_per_s": round(n * int(cfg["train"]["steps_per_iter"]) *
                                                     int(cfg["train"]["batch"]) / dt, 1)}), flush=True)
    for case, (spec, games) in DECISIONS.items():
        if case in args.cases:
            print(json.dumps(decision_line(case, spec, games)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
