"""The SB3 callbacks of the PPO commands' training loop (`experiments.ppo.runner.train_ppo`): a progress bar and
`RunCallback` (evaluation, atomic checkpoints, extra periodic hooks, the wall-time limit and a time budget of where
the seconds went).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from stable_baselines3.common.callbacks import BaseCallback

from ..common import atomic_write_csv, save_checkpoint
from .checkpoint import checkpoint_bytes


class ProgressBar(BaseCallback):
    """A tqdm bar over the `total` steps this `learn()` call will take (SB3's own bar needs `rich`).

    Counts from the model's step count at the start, so a resumed run's bar also starts at 0.
    """

    def __init__(self, total: int, desc: str = "training", disable: bool = False):
        super().__init__()
        self.total, self.desc, self.disable = total, desc, disable

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.start = self.num_timesteps
        self.bar = tqdm(total=self.total, unit="step", desc=self.desc, dynamic_ncols=True, disable=self.disable)

    def _on_step(self) -> bool:
        self.bar.update(self.num_timesteps - self.start - self.bar.n)
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


class StopTraining(Exception):
    """Raised by `RunCallback` between two rollouts when the wall-time limit is reached: `learn()` stops there,
    after a PPO update and before the next step, the one point where a checkpoint catches everything."""


def crossed(before: int, now: int, every: int) -> bool:
    """Whether a multiple of `every` lies in (before, now] (every <= 0: never)."""
    return every > 0 and now // every > before // every


class RunCallback(BaseCallback):
    """Evaluation, checkpoints and hooks at fixed step intervals; stops at the wall-time limit.

    - every `eval_every` steps: `evaluate(model) -> dict` is run, the row (plus `timesteps` and `minutes`)
      appended to `evals`, `run/eval.csv` rewritten atomically, each number logged to TensorBoard as
      `eval/<key>` and printed as one JSON line;
    - every `checkpoint_every` steps, at the next rollout boundary (after the PPO update, before the next step:
      nothing is half done there, so a resume is exact): an atomic weights-only checkpoint in `run/checkpoints`
      whose record carries `state()` (the caller's resumable state, e.g. a self-play pool) and the evaluations
      so far;
    - `hooks`: (every, fn(model, timesteps)) pairs, e.g. freezing a snapshot into a self-play pool;
    - after `max_minutes` of wall time (0: no limit) `learn()` is stopped at the next rollout boundary
      (`StopTraining`); the caller writes the last checkpoint there.
    `seconds` splits the wall time into rollout (collecting steps), train (PPO updates) and eval. Evaluation
    rows carry the training wall `minutes` and the process's `cpu_minutes` (all its threads), both counted
    over the run's earlier processes too: on a shared machine CPU time is the fairer measure of compute.
    """

    def __init__(self, run: Path, evaluate: Callable[[Any], dict] | None, eval_every: int, checkpoint_every: int,
                 state: Callable[[], dict] | None = None, evals: list[dict] | None = None, keep: int = 2,
                 hooks: list[tuple[int, Callable[[Any, int], None]]] | None = None, max_minutes: float = 0.0,
                 elapsed_minutes: float = 0.0, elapsed_cpu_minutes: float = 0.0):
        super().__init__()
        self.run = Path(run)
        self.evaluate, self.eval_every, self.checkpoint_every = evaluate, eval_every, checkpoint_every
        self.state = state or (lambda: {})
        self.evals: list[dict] = list(evals or [])
        self.keep, self.hooks, self.max_minutes = keep, list(hooks or []), max_minutes
        self.elapsed0 = elapsed_minutes  # minutes trained before this process (resumed runs)
        self.cpu0 = elapsed_cpu_minutes
        self.t0 = time.perf_counter()
        self.c0 = time.process_time()
        self.seconds = {"rollout": 0.0, "train": 0.0, "eval": 0.0, "checkpoint": 0.0}
        self.stopped_by_time = False
        self._last = 0
        self._saved = 0  # steps at the last checkpoint (or the start)
        self._mark = self.t0

    # ---- time accounting ----------------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        self._last = self._saved = self.num_timesteps
        if self.evaluate is not None and self.eval_every > 0 and self.num_timesteps == 0 and not self.evals:
            self.run_eval()  # the untrained policy: where the curve starts
        self._mark = time.perf_counter()

    def _on_rollout_start(self) -> None:
        """A rollout boundary (the PPO update done, no step of the next rollout taken): checkpoints and the time
        limit act here only, so that a checkpoint holds the whole state of training."""
        now = time.perf_counter()
        self.seconds["train"] += now - self._mark  # since the end of the last rollout: the PPO update
        if crossed(self._saved, self.num_timesteps, self.checkpoint_every):
            self.checkpoint()
        t = time.perf_counter()
        self.seconds["checkpoint"] += t - now
        self._mark = t
        if self.max_minutes and self.minutes() >= self.max_minutes:
            self.stopped_by_time = True
            raise StopTraining

    def _on_rollout_end(self) -> None:
        now = time.perf_counter()
        self.seconds["rollout"] += now - self._mark
        self._mark = now

    def minutes(self) -> float:
        """Wall minutes of training so far, this run's earlier processes included."""
        return self.elapsed0 + (time.perf_counter() - self.t0) / 60

    def cpu_minutes(self) -> float:
        """CPU minutes of training so far (this process's threads), this run's earlier processes included."""
        return self.cpu0 + (time.process_time() - self.c0) / 60

    # ---- the periodic work ---------------------------------------------------------------------------------
    def _on_step(self) -> bool:
        before, now = self._last, self.num_timesteps
        self._last = now
        t = time.perf_counter()
        for every, fn in self.hooks:
            if crossed(before, now, every):
                fn(self.model, now)
        if self.evaluate is not None and crossed(before, now, self.eval_every):
            self.run_eval()
        t1 = time.perf_counter()
        self.seconds["eval"] += t1 - t
        self._mark += t1 - t  # not rollout time
        return True

    def run_eval(self) -> dict:
        """Evaluate now; record, log and print the row; return it."""
        row = dict(self.evaluate(self.model))
        row = {"timesteps": int(self.num_timesteps), "minutes": round(self.minutes(), 3),
               "cpu_minutes": round(self.cpu_minutes(), 3), **row}
        self.evals.append(row)
        atomic_write_csv(self.run / "eval.csv", self.evals)
        for k, v in row.items():
            if k not in ("timesteps", "games") and isinstance(v, (int, float)):
                self.logger.record(f"eval/{k}", v)
        from tqdm import tqdm

        tqdm.write(json.dumps(row))
        return row

    def checkpoint(self) -> Path:
        """An atomic checkpoint of the model now (call it between rollouts), with the caller's state and the
        evaluations so far."""
        self._saved = int(self.model.num_timesteps)
        state = {**self.state(), "evals": self.evals, "minutes": round(self.minutes(), 4),
                 "cpu_minutes": round(self.cpu_minutes(), 4)}
        return save_checkpoint(self.run / "checkpoints", int(self.model.num_timesteps), checkpoint_bytes(self.model),
                               state, keep=self.keep)
