"""The MLP trainer's self-play workers (`experiments.train_mlp`, `--workers N`): `MLPActor`, one worker (a trainer's
self-play with the weights as published), `MLPWorkers`, their pool (`experiments.selfplay_workers.WorkerPool`), and
`feed`, which writes the workers' samples into the learner's replay buffer."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .selfplay_workers import WorkerPool, actor_incarnation, worker_seed


class MLPActor:
    """One worker of the MLP's trainer: a Trainer's self-play (its games, planner, generator), the network's weights
    as published. `make` is the trainer's class (`experiments.train_mlp.Trainer`), given, so that this module needs
    no import of the trainer that starts it."""

    def __init__(self, make: Callable[..., Any], cfg: dict, seed: int, index: int, incarnation: int = 0):
        cfg = {k: dict(v) for k, v in cfg.items()}
        games, most = int(cfg["selfplay"]["games"]), int(cfg["selfplay"]["max_decisions"])
        cfg["train"]["buffer"] = 2 * games * most  # a step's finished games always fit: rows are read after each
        self.incarnation = actor_incarnation(incarnation)  # (a restarted worker plays other games)
        self.trainer = make(cfg, seed=worker_seed(seed, index, self.incarnation),
                               run=Path(tempfile.mkdtemp(prefix="harmonies-selfplay-")), progress=False, init=False)
        self.version = -1

    def pid(self) -> int:
        return os.getpid()

    def play(self, version: int, weights: dict[str, np.ndarray] | None, steps: int) -> dict[str, Any]:
        """Load the weights if newer, make `steps` decisions in every game, return the ended games' samples."""
        import torch

        tr = self.trainer
        if weights is not None and version != self.version:
            tr.net.load_state_dict({k: torch.as_tensor(v) for k, v in weights.items()})
            self.version = version
        cap = tr.buf_x.shape[0]
        parts: list[dict[str, np.ndarray]] = []
        decisions, games = tr.decisions, tr.games_done
        for _ in range(int(steps)):
            before = tr.buf_pos
            tr.selfplay_step()
            rows = (before + np.arange((tr.buf_pos - before) % cap)) % cap  # a step stores < cap rows (__init__)
            parts.append({"x": tr.buf_x[rows], "tot": tr.buf_tot[rows], "win": tr.buf_win[rows],
                          "np": tr.buf_np[rows]})  # copies (fancy indexing), read before the next step writes
        if not parts:  # (a replayed call of 0 steps)
            parts.append({"x": tr.buf_x[:0], "tot": tr.buf_tot[:0], "win": tr.buf_win[:0], "np": tr.buf_np[:0]})
        out = {k: np.concatenate([p[k] for p in parts]) for k in ("x", "tot", "win", "np")}
        out.update(decisions=tr.decisions - decisions, games=tr.games_done - games, version=self.version,
                   incarnation=self.incarnation)
        return out

    def snapshot(self) -> dict[str, Any]:
        """The games in flight and the generator: everything a resumed worker needs to go on identically."""
        tr = self.trainer
        return {"states": tr.states.copy(), "greedy_seat": tr.greedy_seat.copy(), "pend_x": tr.pend_x.copy(),
                "pend_seat": tr.pend_seat.copy(), "pend_n": tr.pend_n.copy(), "pend_v": tr.pend_v.copy(),
                "rng": tr.rng.bit_generator.state, "decisions": tr.decisions, "games_done": tr.games_done}

    def restore(self, snap: dict[str, Any]) -> None:
        tr = self.trainer
        for key in ("states", "greedy_seat", "pend_x", "pend_seat", "pend_n", "pend_v"):
            getattr(tr, key)[...] = snap[key]
        tr.rng.bit_generator.state = snap["rng"]
        tr.decisions, tr.games_done = int(snap["decisions"]), int(snap["games_done"])


def feed(trainer: Any, results: Sequence[dict[str, Any]]) -> int:
    """Write the workers' samples into the MLP learner's replay buffer (`Trainer.buf_*`, a ring), in worker order, and
    count their decisions and games as the trainer's; how many samples were added."""
    cap = trainer.buf_x.shape[0]
    added = 0
    for res in results:
        n = len(res["np"])
        rows = (trainer.buf_pos + np.arange(n)) % cap
        trainer.buf_x[rows], trainer.buf_tot[rows] = res["x"], res["tot"]
        trainer.buf_win[rows], trainer.buf_np[rows] = res["win"], res["np"]
        trainer.buf_pos = int((trainer.buf_pos + n) % cap)
        trainer.buf_size = int(min(cap, trainer.buf_size + n))
        trainer.decisions += int(res["decisions"])
        trainer.games_done += int(res["games"])
        added += n
    return added


class MLPWorkers(WorkerPool):
    """The MLP trainer's pool: `workers` `MLPActor`s of trainer class `make` on local processes ("processes") or Ray
    (a Ray address: "local" for this machine's cores, "auto" or HOST:PORT for a cluster); `collect(steps)` is
    `play(steps)`; the weights of every call since the last checkpoint are kept."""

    def __init__(self, make: Callable[..., Any], cfg: dict, seed: int, workers: int, transport: str = "local"):
        super().__init__(MLPActor, (make, cfg, seed), workers, transport, name="mlp-selfplay", held_versions=None)

    def collect(self, steps: int = 1) -> list[dict[str, Any]]:
        """Each worker's samples of `steps` decisions in every game (worker order)."""
        return self.play(steps)


__all__ = ["MLPActor", "MLPWorkers", "feed"]
