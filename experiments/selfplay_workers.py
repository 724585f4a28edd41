"""Self-play for the learned agent's trainer on Ray actors: N workers, each with its own batch of games.

Why: the trainer spends its time planning self-play decisions, not in the network's update (benchmarks/RESULTS.md),
and self-play games share nothing but the weights, so more cores mean more decisions. `SelfPlayWorkers(cfg, seed,
workers, address)` starts `workers` Ray actors (`address`: "local" for this machine's cores, "auto" or HOST:PORT for
a cluster: a trainer's `--workers N` and `--ray ADDRESS` would be the same code path). Each actor is a
`train_learned.Trainer` used for its self-play only (its own `selfplay.games` games, its own generator seeded from
(seed, worker index); `worker_seed`), so a decision is made exactly as the single-process trainer makes it.

- `publish(state_dict)`: the learner's newest weights, put once in Ray's object store (by value: no shared files);
  each actor loads them before its next step when their version changed. The learner publishes every K updates.
- `collect(steps)`: every actor plays `steps` decisions in each of its games with the newest weights and returns the
  samples of the games that ended (features and Monte-Carlo targets, as the trainer's own replay buffer stores them),
  in worker order: with the same seed, the same number of workers and the same publishing schedule, the same samples.
- `snapshot()` / `restore(snaps)`: every actor's games in flight and generator state, for the learner's checkpoint,
  so a resumed run goes on exactly where it was saved.
- A worker process that dies is restarted by Ray (`max_restarts`) and the call retried: the restarted actor starts
  fresh games (seeded from its worker index and that it was restarted) and the run goes on.

How the trainer uses it (a hook for `experiments.train_learned`, not wired in here): replace `selfplay_step()` by
`collect(1)` and push the returned samples into the replay buffer (`feed`); publish the weights every K Adam steps; put
`snapshot()` into the trainer's checkpoint and `restore` it on `--resume`.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

#: Times Ray restarts a dead self-play actor (-1: without limit) and retries the call it was making.
MAX_RESTARTS = -1


def worker_seed(seed: int, index: int, incarnation: int = 0) -> int:
    """The generator seed of self-play worker `index` (its `incarnation`-th restart: fresh games, still seeded)."""
    return int((int(seed) * 1_000_003 + 7919 * (int(index) + 1) + 104_729 * int(incarnation)) % (2**62))


class SelfPlayActor:
    """One worker: a Trainer's self-play (its games, planner, generator), the network's weights as published."""

    def __init__(self, cfg: dict, seed: int, index: int):
        from .train_learned import Trainer

        cfg = {k: dict(v) for k, v in cfg.items()}
        games, most = int(cfg["selfplay"]["games"]), int(cfg["selfplay"]["max_decisions"])
        cfg["train"]["buffer"] = 2 * games * most  # a step's finished games always fit: rows are read after each
        self.incarnation = 0
        try:  # a restarted worker (its process died) plays other games than the first one did
            import ray

            if ray.is_initialized() and ray.get_runtime_context().was_current_actor_reconstructed:
                self.incarnation = 1
        except (ImportError, AttributeError, RuntimeError):  # outside a Ray actor: the first incarnation
            pass
        self.trainer = Trainer(cfg, seed=worker_seed(seed, index, self.incarnation),
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
    """Write the workers' samples into the learner's replay buffer (`Trainer.buf_*`, a ring), in worker order, and
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


class SelfPlayWorkers:
    """`workers` self-play actors on Ray (see the module docstring); `close()` (or `with`) ends them."""

    def __init__(self, cfg: dict, seed: int, workers: int, address: str = "local"):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        import ray

        from agents.distributed import RaySession

        self.session = RaySession(address)
        actor = ray.remote(SelfPlayActor).options(num_cpus=1, max_restarts=MAX_RESTARTS, max_task_retries=-1)
        self.actors = [actor.remote(cfg, seed, k) for k in range(workers)]
        self.version = -1
        self.weights: Any = None

    def __enter__(self) -> "SelfPlayWorkers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def publish(self, state_dict: dict[str, Any]) -> int:
        """Put the learner's weights (tensors or arrays) in the object store; the version the workers will load."""
        import ray

        self.version += 1
        self.weights = ray.put({k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v)
                                for k, v in state_dict.items()})
        return self.version

    def collect(self, steps: int = 1) -> list[dict[str, Any]]:
        """Each worker's samples of `steps` decisions in every game (worker order)."""
        import ray

        return ray.get([a.play.remote(self.version, self.weights, steps) for a in self.actors])

    def pids(self) -> list[int]:
        import ray

        return ray.get([a.pid.remote() for a in self.actors])

    def snapshot(self) -> list[dict[str, Any]]:
        import ray

        return ray.get([a.snapshot.remote() for a in self.actors])

    def restore(self, snaps: Sequence[dict[str, Any]]) -> None:
        import ray

        if len(snaps) != len(self.actors):
            raise ValueError(f"a snapshot of {len(snaps)} workers cannot resume {len(self.actors)}")
        ray.get([a.restore.remote(s) for a, s in zip(self.actors, snaps)])

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a, no_restart=True)
        self.actors = []
        self.session.close()


__all__ = ["SelfPlayWorkers", "SelfPlayActor", "feed", "worker_seed"]
