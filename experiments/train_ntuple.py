"""Train the n-tuple afterstate value function (`agents.ntuple`) by TD(lambda) from batched self-play: the command
`learned`, a thin entry of the one self-play learner framework (`experiments.selfplay`, with the n-tuple network as
its evaluator, `experiments.evaluators.ntuple`). The names below are kept for the tests and benchmarks that use them.

    python -m experiments.train learned --config experiments/configs/learned.toml --run runs/learned --max-minutes 45
    python -m experiments.train ntuple --run runs/ntuple --resume                # after a kill, or to extend it

Each iteration every game of the batch plays one whole turn in ONE numba call (`ntuple.decide_rows`): the mover's
candidates come from the greedy planner (`plan_candidates`, `selfplay.candidates` plans at beam `selfplay.beam`
per central space: the same generator and objective the `ntuple` agent plays with), the network values each
afterstate (own total + predicted remaining points), the game plays the best (a uniformly random candidate with
probability `epsilon`), and the chosen afterstate is recorded with the prediction made for it. A fraction of the
games (`greedy_games`) seats the greedy planner (`plan_turn`, beam `eval.opponent_beam`) in one seat. When a game
ends, `ntuple.learn_game` walks its afterstates: each seat's lambda-returns (points gained to its next afterstate
plus the prediction there, mixed by `lam`; the final total at the end) and one TD update per afterstate, tuple
weights and linear weights with their own step sizes. No replay buffer, no torch: the update is a few hundred
additions.

Every `eval.every` iterations (and before the first) the network, as the `ntuple` agent plays it, meets the greedy
planner (`greedy`, beam `eval.opponent_beam`) through the match engine (`selfplay.vs_greedy`) on `eval.games` fixed
seeds that training never uses (each seed with both seatings); rows go to `eval.csv` (and TensorBoard `tb/` when
installed) and the best by win rate (then mean score) to `best.npz/.json`.
Evaluations draw nothing from the training generator.

`--workers N` (`selfplay.workers`) plays the self-play in N workers instead (`selfplay.SelfPlayActor` in
`experiments.selfplay_workers.WorkerPool`: local processes, or Ray actors with `--ray ADDRESS`, `run.ray`), each
with its own `selfplay.games` games and generator seeded from (seed, worker index); an iteration is a turn in every
game of every worker, whose finished games the learner applies `learn_game` to in worker order (while the workers
play the next iteration's turns), and the weights are published to the workers every `selfplay.sync_every`
iterations. The same seed and worker count give the same
weights on either transport; checkpoints hold the workers' games in flight, so `--resume` is exact, and a worker that
dies is put back where it was (docs/distributed.md, section 6).

Reproducible and kill-safe: the run is a function of its config and seed (one numpy generator, checkpointed); every
`run.checkpoint_every` iterations the complete trainer state (weights, games in flight, their recorded afterstates,
generator, counters) is written as `checkpoints/step_<iteration>.npz` + `.json` (`experiments.common
.save_checkpoint`: atomic, the record names the npz's size and SHA-256; no pickle), so a run killed at any moment
and resumed ends bit-identical to one never interrupted. `model.npz/.json` (the agent's checkpoint, `learned:PATH`
or `ntuple:PATH`) is written with every checkpoint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents import ntuple as N
from harmonies_env.config import GameConfig

from .commands import RunArgs
from .evaluators.ntuple import DEFAULTS, make, settings
from .selfplay import (
    TRAIN_SEED_LOW,
    Buffers,
    Finished,
    Learner,
    pack_games,
    run_learner,
    unpack_games,
    vs_greedy,
)

#: The one config loader's schema (experiments.common: kinds and unknown keys checked at load; `settings` adds ranges).
SCHEMAS = {"learned": DEFAULTS}

__all__ = ["DEFAULTS", "SCHEMAS", "TRAIN_SEED_LOW", "Buffers", "Finished", "Trainer", "make", "pack_games",
           "play_vs_greedy", "run", "settings", "unpack_games"]


def play_vs_greedy(w: np.ndarray, games: int, seed: int, beam: int, candidates: int, opponent_beam: int,
                   config: GameConfig | None = None, threads: int = 1) -> dict[str, float]:
    """The network (as `NTupleAgent` plays it, beam `beam`, `candidates` plans) against the greedy planner
    (`GreedyAgent`, beam opponent_beam) in `games` games of `config` (default: 2 players, Side A), through the one
    evaluation of every learner (`experiments.selfplay.vs_greedy`, the match engine). Its win rate (shared wins
    split), its mean total and the planner's (the same for any `threads`)."""
    return vs_greedy(N.NTupleAgent(weights=w, beam=beam, candidates=candidates, name="ntuple"), games, seed,
                     opponent_beam, config, threads)


class Trainer(Learner):
    """The framework's `Learner` of the n-tuple evaluator; `w`, `wwin`, `coh`, `coh_win` are the evaluator's."""

    name = "learned"

    def __init__(self, cfg: dict[str, dict[str, Any]], seed: int, run: Path | None, progress: bool = True,
                 init: bool = True):
        super().__init__(cfg, seed, run, make, progress=progress, init=init)

    @property
    def w(self) -> np.ndarray:
        return self.evaluator.w

    @property
    def wwin(self) -> np.ndarray | None:
        return self.evaluator.wwin

    @property
    def coh(self) -> np.ndarray | None:
        return self.evaluator.coh

    @property
    def coh_win(self) -> np.ndarray | None:
        return self.evaluator.coh_win


def run(args: RunArgs) -> dict[str, Any]:
    """The `learned` training command (`python -m experiments.train learned ...`): train, resume, summarise."""
    cfg = settings(args.config)
    return run_learner(args, Trainer(cfg, args.seed, args.run, progress=args.progress))
