"""Self-play for the MLP's trainer (`mlp`) on Ray actors: N workers, each with its own batch of games.

Why: the trainer spends its time planning self-play decisions, not in the network's update (benchmarks/RESULTS.md),
and self-play games share nothing but the weights, so more cores mean more decisions. `SelfPlayWorkers(cfg, seed,
workers, address)` starts `workers` Ray actors (`address`: "local" for this machine's cores, "auto" or HOST:PORT for
a cluster: a trainer's `--workers N` and `--ray ADDRESS` would be the same code path). Each actor is a
`train_mlp.Trainer` used for its self-play only (its own `selfplay.games` games, its own generator seeded from
(seed, worker index); `worker_seed`), so a decision is made exactly as the single-process trainer makes it.

- `publish(state_dict)`: the learner's newest weights, put once in Ray's object store (by value: no shared files);
  each actor loads them before its next step when their version changed. The learner publishes every K updates.
- `collect(steps)`: every actor plays `steps` decisions in each of its games with the newest weights and returns the
  samples of the games that ended (features and Monte-Carlo targets, as the trainer's own replay buffer stores them),
  in worker order: with the same seed, the same number of workers and the same publishing schedule, the same samples.
- `snapshot()` / `restore(snaps)`: every actor's games in flight and generator state, for the learner's checkpoint,
  so a resumed run goes on exactly where it was saved.
- A worker process that dies is restarted by Ray (`max_restarts`); the driver then puts the restarted actor back
  where the dead one was: it restores the worker's last snapshot (taken by `snapshot()`/`restore()`, or when the
  pool started) and replays that worker's calls since (the same weights versions, results dropped), then makes the
  failed call again. So a dead worker costs the replay of its share since the last snapshot, and the run's samples
  are those of a run where no worker died.

How the trainer uses it (`experiments.train_mlp` with `selfplay.workers` > 0): `collect(1)` in place of its
own `selfplay_step()`, the samples pushed into the replay buffer (`feed`); the weights published every
`selfplay.publish_every` Adam steps; `snapshot()` in the trainer's checkpoint, `restore` on `--resume`.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

#: Times Ray restarts a dead self-play actor (-1: without limit).
MAX_RESTARTS = -1
#: Times in a row the driver puts a dead worker back (restore + replay) before it gives up on the call.
MAX_RECOVERIES = 10


def worker_seed(seed: int, index: int, incarnation: int = 0) -> int:
    """The generator seed of self-play worker `index` (its `incarnation`-th restart: fresh games, still seeded)."""
    return int((int(seed) * 1_000_003 + 7919 * (int(index) + 1) + 104_729 * int(incarnation)) % (2**62))


class SelfPlayActor:
    """One worker: a Trainer's self-play (its games, planner, generator), the network's weights as published."""

    def __init__(self, cfg: dict, seed: int, index: int):
        from .train_mlp import Trainer

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
        # no retries by Ray: a call on a dead worker fails here, and the driver replays it where it was (_recover)
        actor = ray.remote(SelfPlayActor).options(num_cpus=1, max_restarts=MAX_RESTARTS, max_task_retries=0)
        self.actors = [actor.remote(cfg, seed, k) for k in range(workers)]
        self.version = -1
        self.weights: Any = None
        self.restarts = 0  # workers put back after their process died
        self._base: list[Any] = []  # each worker's last snapshot (object refs) ...
        self._history: list[tuple[int, Any, int]] = []  # ... and the calls since: (version, weights, steps)
        self._base = [ray.put(s) for s in self.snapshot()]

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

        call = (self.version, self.weights, int(steps))
        self._history.append(call)
        pending = [a.play.remote(*call) for a in self.actors]
        return [self._get(k, ref, lambda a: a.play.remote(*call)) for k, ref in enumerate(pending)]

    def _get(self, k: int, ref: Any, again: Any) -> Any:
        """ray.get(ref) of worker k's call; when the worker died, put it back (`_recover`) and make `again(actor)`."""
        import ray
        from ray.exceptions import RayActorError

        for attempt in range(MAX_RECOVERIES + 1):
            try:
                if ref is None:  # the worker died: put it back where it was, then make the call again
                    self._recover(k)
                    ref = again(self.actors[k])
                return ray.get(ref)
            except RayActorError as e:
                if attempt == MAX_RECOVERIES:
                    raise
                self.restarts += ref is not None  # (not again while it is being put back)
                last, ref = e, None
                time.sleep(min(5.0, 0.2 * 2 ** attempt))  # while Ray restarts its process
        raise last

    def _recover(self, k: int) -> None:
        """Worker k's process died and Ray restarted it: restore its last snapshot, replay its calls since but the
        last one (results dropped), so it is where the dead worker was before that call."""
        import ray

        actor = self.actors[k]
        ray.get(actor.restore.remote(self._base[k]))
        for call in self._history[:-1]:
            ray.get(actor.play.remote(*call))

    def pids(self) -> list[int]:
        import ray

        return ray.get([a.pid.remote() for a in self.actors])

    def snapshot(self) -> list[dict[str, Any]]:
        """Every worker's games in flight and generator (worker order); also where a dead worker is put back."""
        import ray

        self._history.append((self.version, self.weights, 0))  # (a replayed call of 0 steps plays nothing)
        pending = [a.snapshot.remote() for a in self.actors]
        snaps = [self._get(k, ref, lambda a: a.snapshot.remote()) for k, ref in enumerate(pending)]
        self._base, self._history = [ray.put(s) for s in snaps], []
        return snaps

    def restore(self, snaps: Sequence[dict[str, Any]]) -> None:
        import ray

        if len(snaps) != len(self.actors):
            raise ValueError(f"a snapshot of {len(snaps)} workers cannot resume {len(self.actors)}")
        self._base, self._history = [ray.put(s) for s in snaps], []
        ray.get([a.restore.remote(s) for a, s in zip(self.actors, self._base)])

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a, no_restart=True)
        self.actors = []
        self.session.close()


__all__ = ["SelfPlayWorkers", "SelfPlayActor", "feed", "worker_seed"]
