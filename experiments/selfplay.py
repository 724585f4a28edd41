"""The one self-play learner framework: the loop every afterstate learner (`learned`, `mlp`, a user's own) trains by.

Why: the n-tuple and MLP trainers were written side by side, each with its own loop, evaluation and checkpoints.
Here is one of each; what differs between learners is the *evaluator* (`Evaluator`): what values an afterstate for
its mover and how it learns from a finished game.

- The loop (`Learner.play_turn`): G games at once; each iteration every game plays one whole turn. The mover's
  candidates come from the greedy planner (`greedy.plan_candidates`, `selfplay.candidates` plans at beam
  `selfplay.beam` per central space); each candidate is worth the mover's total at its afterstate plus the
  evaluator's predicted remaining points (`Evaluator.values`); the game plays the best (a uniformly random candidate
  with probability `selfplay.epsilon`); the chosen afterstate is recorded with the prediction made for it. A share
  of the games (`selfplay.greedy_games`) seats the greedy planner (`plan_turn`, beam `eval.opponent_beam`) in one
  seat. A finished game (`Finished`: afterstates, movers, predictions, final totals, who won) goes to
  `Evaluator.learn`; `td_targets` gives its TD(lambda) targets (points gained to the seat's next afterstate plus
  the prediction there, mixed by `train.lam`).
- The evaluator (`agents.evaluator.Evaluator`, a base class): the methods it must define, and optional hooks with
  no-op defaults that the loop calls directly (`HOOKS`; a method named like a hook that is none is refused when the
  class is defined). A hook reads or changes the run only through a `Context` (the run's generator, the games, this
  turn's rows, the iteration). `decide_rows` (default: `agents.afterstate_agent.decide_generic`) may fuse planning
  and valuing into one call (the n-tuple network's numba kernel plans, values, chooses and plays a turn in every game
  in one call, the speed issue 37 is about); the games are the same either way. `after_iteration` learns in batches
  (the MLP's Adam steps over its replay buffer); `expert_turn` takes `expert_share` of the decisions by a search;
  `extra_evaluation` adds columns to the evaluation (the MLP's match against MCTS).
- Workers (`--workers N`, `--ray ADDRESS`): `SelfPlayActor`s in `experiments.selfplay_workers.WorkerPool` (a
  transport that knows no learner) play the games while the driver learns; the same seed and worker count give the
  same weights on either transport.
- Evaluation (`vs_greedy`): every learner, as an agent (`Evaluator.agent`: by default
  `agents.afterstate_agent.AfterstateAgent`), meets the greedy planner through the
  match engine (`agents.match.play_match`) on fixed seeds that training never uses.
- Checkpoints: the complete learner state (`Evaluator.arrays`, games in flight, generator, counters) through
  `experiments.common.save_checkpoint` (atomic, SHA-256 in the JSON record, no pickle); the agent's own checkpoint
  (`Evaluator.save`: weights + `agents.checkpoint` JSON sidecar) as model.* and best.*.
- Config: typed sections (`SelfPlaySection`, `TrainSection`, `EvalSection`, `RunSection`: frozen dataclasses
  whose defaults are the schema, `schema_of`), read from the checked config once (`typed`). The schedule
  (`progress_fraction`) runs over `train.schedule` iterations (0: `train.iterations`) and then stays at its end.
- Commands: a learner is one line of `agents.learners`; `experiments.selfplay_command` is every learner's command.

docs/training.md ("Your own evaluator", "Register it, train it, play it") shows a torch evaluator trained through it.
"""
from __future__ import annotations

import io
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from agents.afterstate_agent import Buffers
from agents.archive import read_npz
from agents.evaluator import HOOKS, Context, Evaluator, Finished
from harmonies_env import state as S
from harmonies_env.batch import outcome
from harmonies_env.config import GameConfig
from harmonies_env.scoring import NUM_CATEGORIES

from .common import ConfigError, atomic_write_csv, iterate, save_checkpoint
from .selfplay_config import (
    EvalSection,
    RunSection,
    SelfPlaySection,
    TrainSection,
    schedule_length,
    settings,
    typed,
)

#: Training games' seeds are drawn from [TRAIN_SEED_LOW, 2**62): never a small seed evaluations use.
TRAIN_SEED_LOW = 2**40


# ------------------------------------------------------------------------------------------------ the loop's parts

def pack_games(games: list[Finished]) -> dict[str, Any]:
    """Finished games made compact for the wire (afterstates as int16 where they fit, `pack_rows`; only rows < m)."""
    from .selfplay_workers import pack_rows

    ms = np.array([g.m for g in games], dtype=np.int64)

    def cat(parts: list[np.ndarray], dt: type) -> np.ndarray:
        return np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)

    afters = np.concatenate([g.afters[: g.m] for g in games]) if games else np.zeros((0, S.STATE_SIZE), S.STATE_DTYPE)
    return {"m": ms, "afters": pack_rows(afters), "seats": cat([g.seats[: g.m] for g in games], np.int8),
            "preds": cat([g.preds[: g.m] for g in games], np.float64),
            "targets": cat([g.targets[: g.m] for g in games], np.float64),
            "totals": np.array([g.totals for g in games], dtype=np.int16).reshape(-1, 4),
            "won": np.array([g.won for g in games], dtype=np.int8).reshape(-1, 4)}


def unpack_games(p: dict[str, Any]) -> list[Finished]:
    """The games `pack_games` packed, exactly."""
    from .selfplay_workers import unpack_rows

    afters = unpack_rows(p["afters"])
    # writable copies: arrays that come back from Ray's object store are read-only, and a read-only array handed to
    # a kernel compiles a second variant of it (and of every kernel it calls)
    preds, targets = np.array(p["preds"], dtype=np.float64), np.array(p["targets"], dtype=np.float64)
    out, at = [], 0
    for i, m in enumerate(p["m"].tolist()):
        sl = slice(at, at + m)
        out.append(Finished(afters[sl], p["seats"][sl].astype(np.int64), preds[sl], targets[sl], m,
                            p["totals"][i].astype(np.int64), p["won"][i].astype(np.int64)))
        at += m
    return out


def vs_greedy(policy: Any, games: int, seed: int, opponent_beam: int, config: GameConfig | None = None,
              threads: int = 1) -> dict[str, float]:
    """`policy` (an agent or batch policy, named by its `name`) against the greedy planner (`GreedyAgent`, beam
    `opponent_beam`, in every other seat) in `games` games of `config` (default: 2 players, Side A) on seeds
    seed + i // players, seats rotated (`agents.match.play_match`, paired): every learner's periodic evaluation.
    Returns its win rate (shared wins split), its mean total and the other seats' mean total."""
    from agents.greedy import GreedyAgent
    from agents.match import play_match, totals_of, win_shares

    cfg = config or GameConfig()
    name = str(getattr(policy, "name", "learner"))
    n = cfg.num_players
    others = [GreedyAgent(beam=int(opponent_beam), name="greedy") for _ in range(1, n)]
    results = play_match([policy, *others], games=int(games), seed=int(seed), config=cfg, paired=True,
                         threads=int(threads))
    totals = np.array([[sc["total"] for sc in r["scores"]] for r in results], dtype=np.int64)
    mine = totals_of(results, name)
    theirs = (totals.sum(axis=1) - mine) / max(1, n - 1)
    return {"win_rate": float(win_shares(results, name).mean()), "mean_score": float(mine.mean()),
            "greedy_score": float(theirs.mean())}


def _flatten(d: dict[str, Any], prefix: str = "") -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A nested dict's arrays by dotted key (for an .npz) and its other values (for JSON), nested as they were."""
    arrays: dict[str, np.ndarray] = {}
    rest: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            a, r = _flatten(v, f"{prefix}{k}.")
            arrays.update(a)
            if r:
                rest[k] = r
        elif isinstance(v, np.ndarray):
            arrays[f"{prefix}{k}"] = v
        else:
            rest[k] = v
    return arrays, rest


def _unflatten(arrays: dict[str, np.ndarray], rest: dict[str, Any]) -> dict[str, Any]:
    """The nested dict `_flatten` split."""
    out: dict[str, Any] = json.loads(json.dumps(rest))
    for key, v in arrays.items():
        *path, last = key.split(".")
        node = out
        for p in path:
            node = node.setdefault(p, {})
        node[last] = v
    return out


# ------------------------------------------------------------------------------------------------ the learner

#: An evaluator's maker: (checked config, whether it learns, the run's seed) -> the evaluator. A self-play worker's
#: does not learn (no learner-side state: its weights come from the learner). A module-level class or function
#: (workers import it).
Factory = Callable[[dict[str, dict[str, Any]], bool, int], Evaluator]


def framework_section(cls: type, values: dict[str, Any]) -> Any:
    """The framework's typed section `cls` of a checked config section, which an evaluator's own keys may extend (an
    evaluator reads its own section class, e.g. `NTupleTrainSection`, from the same values)."""
    import dataclasses

    return cls(**{f.name: tuple(values[f.name]) if isinstance(values[f.name], list) else values[f.name]
                  for f in dataclasses.fields(cls)})


class Learner:
    """Batched self-play + learning of one evaluator (module docstring). cfg: a checked config (its framework
    sections are read once into `sp`, `tr`, `ev`, `rn`); make: the evaluator's `Factory`; init: False for a
    self-play worker (the weights come from the learner)."""

    name = "selfplay"

    def __init__(self, cfg: dict[str, dict[str, Any]], seed: int, run: Path | None, make: Factory,
                 progress: bool = True, init: bool = True):
        self.cfg = cfg
        self.make = make
        self.sp: SelfPlaySection = framework_section(SelfPlaySection, cfg["selfplay"])
        self.tr: TrainSection = framework_section(TrainSection, cfg["train"])
        self.ev: EvalSection = framework_section(EvalSection, cfg["eval"])
        self.rn: RunSection = framework_section(RunSection, cfg["run"])
        self.seed = int(seed)
        self.run = run
        self.progress = progress
        self.evaluator = make(cfg, init, self.seed)
        if not isinstance(self.evaluator, Evaluator):
            raise TypeError(f"{make!r} made a {type(self.evaluator).__name__}, not an agents.evaluator.Evaluator "
                            f"(derive from it: its hooks are {', '.join(HOOKS)})")
        self.G, self.K, self.D = self.sp.games, self.sp.candidates, self.sp.max_decisions
        self.searched = 0
        self.rng = np.random.default_rng(self.seed)
        self.states = np.zeros((self.G, S.STATE_SIZE), dtype=S.STATE_DTYPE)
        self.kinds = np.zeros((self.G, S.MAX_PLAYERS), dtype=np.int64)
        self.pend = np.zeros((self.G, self.D, S.STATE_SIZE), dtype=S.STATE_DTYPE)
        self.pend_seat = np.zeros((self.G, self.D), dtype=np.int64)
        self.pend_pred = np.zeros((self.G, self.D), dtype=np.float64)
        self.pend_target = np.full((self.G, self.D), np.nan, dtype=np.float64)
        self.pend_n = np.zeros(self.G, dtype=np.int64)
        self.buf = Buffers(self.G, self.K, self.sp.threads)
        self.iteration = 0
        self.games_done = 0
        self.decisions = 0
        self.loss_ema = float("nan")
        self.best: list[float] = [-1.0, -1.0]
        self.evals: list[dict[str, Any]] = []
        self.elapsed_before = 0.0
        self.started = time.time()
        self.command = f"python -m experiments.train {self.name}"  # `run_learner` sets the one typed
        self.pool: Any = None  # the self-play workers (`connect`), when selfplay.workers > 0
        self.published: dict[str, np.ndarray] | None = None  # the weights they play with (a copy)
        self.worker_snaps: list[dict[str, Any]] | None = None  # their games in flight, from a checkpoint
        self._next: list[dict[str, Any]] | None = None  # the next iteration's results, gathered by a checkpoint
        self._rate_from = (time.perf_counter(), 0)  # (when, decisions) this process started: the bar's rate
        for r in range(self.G):
            self._new_game(r)

    def _new_game(self, r: int) -> None:
        n = int(self.rng.choice(np.asarray(self.sp.players, dtype=np.int64)))
        side = 0 if str(self.rng.choice(np.asarray(self.sp.sides))) == "A" else 1
        S.init_state(self.states[r], n, side, 0, int(self.rng.integers(TRAIN_SEED_LOW, 2**62)))
        self.kinds[r] = 0
        if self.rng.random() < float(self.sp.greedy_games):
            self.kinds[r, int(self.rng.integers(n))] = 1
        self.pend_n[r] = 0
        self.pend_target[r] = np.nan

    def progress_fraction(self) -> float:
        """How far the schedule is: iteration / its length (`train.schedule`, or `train.iterations` when 0), at most 1
        (a function of the iteration alone, so a resumed run is the same); what `Evaluator.learn` scales its step
        sizes by."""
        return min(1.0, self.iteration / max(1, schedule_length(self.cfg["train"])))

    def context(self) -> Context:
        """What the evaluator's hooks may read or change of this run (`agents.evaluator.Context`)."""
        return Context(self.rng, self.states, self.buf, self.iteration, self.progress_fraction(), self.sp.threads,
                       self.seed)

    def decide(self, explore: np.ndarray, pick: np.ndarray) -> None:
        """One whole turn in every unfinished game into `buf` (`Evaluator.decide_rows`: by default
        `decide_generic`)."""
        self.evaluator.decide_rows(self.buf, self.states, self.kinds, self.sp.beam, self.ev.opponent_beam, explore,
                                   pick)

    def step(self) -> None:
        """One whole turn in every game (in this process, or every worker's games); finished games teach the
        evaluator (in worker order) and are replaced."""
        if self.pool is None:
            self.play_turn(self.learn)
            self._after_iteration()
            return
        if self._next is not None:  # gathered by a checkpoint (or read from one)
            results, self._next = self._next, None
        else:
            if not self.pool.busy:
                self.pool.submit(1)
            results = self.pool.gather()
        self.pool.submit(1)  # the next iteration's turns, played while the driver learns this one's games
        for res in results:
            for game in unpack_games(res["games"]):
                self.learn(game)
            self.decisions += int(res["decisions"])
            self.games_done += int(res["finished"])
            self.searched += int(res["searched"])
        self._after_iteration()
        if (self.iteration + 1) % self.sp.sync_every == 0:
            self.publish()

    def _after_iteration(self) -> None:
        self._fold_loss(self.evaluator.after_iteration(self.context()))

    def _fold_loss(self, loss: float) -> None:
        """The loss's moving average (a NaN loss, none this time, leaves it)."""
        if not math.isnan(loss):
            self.loss_ema = loss if math.isnan(self.loss_ema) else 0.95 * self.loss_ema + 0.05 * loss

    def play_turn(self, finish: Callable[[Finished], None]) -> None:
        """One whole turn in every game; each finished game goes to `finish` (views: read them before returning),
        then is replaced by a new one. An evaluator with `expert_share` > 0 takes that share of its own decisions by
        a search (`expert_turn`), whose value becomes the afterstate's target."""
        explore = self.rng.random(self.G) < float(self.sp.epsilon)
        pick = self.rng.random(self.G)
        b = self.buf
        ev = self.evaluator
        share = float(ev.expert_share)
        target = np.full(self.G, np.nan)
        if share > 0:  # drawn only when on, so runs without it keep their generator stream
            searched = (self.rng.random(self.G) < share) & ~explore
            held = self.states[:, S.GAME_OVER].copy()
            ctx = self.context()
            for r in np.flatnonzero(searched & (held == 0)):
                s = self.states[r]
                if self.kinds[r, int(s[S.CURRENT])] == 0:
                    target[r] = ev.expert_turn(ctx, int(r))
                    self.searched += int(not math.isnan(target[r]))
            done = ~np.isnan(target)
            held = self.states[:, S.GAME_OVER].copy()
            self.states[done, S.GAME_OVER] = 1  # the turn skips the rows the search played
            keep = (b.after[done].copy(), b.seat[done].copy(), b.pred[done].copy())
            self.decide(explore, pick)
            self.states[:, S.GAME_OVER] = np.where(done, held, self.states[:, S.GAME_OVER])
            b.after[done], b.seat[done], b.pred[done] = keep
            b.recorded[done] = True
        else:
            self.decide(explore, pick)
        for r in np.flatnonzero(b.recorded):
            j = self.pend_n[r]
            if j < self.D:
                self.pend[r, j] = b.after[r]
                self.pend_seat[r, j] = b.seat[r]
                self.pend_pred[r, j] = b.pred[r]
                self.pend_target[r, j] = target[r]
                self.pend_n[r] = j + 1
        self.decisions += int(b.recorded.sum())
        totals = np.zeros(4, dtype=np.int64)
        won = np.zeros(4, dtype=np.int64)
        sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
        for r in np.flatnonzero(self.states[:, S.GAME_OVER]):
            outcome(self.states[r], totals, sc, won)
            finish(Finished(self.pend[r], self.pend_seat[r], self.pend_pred[r], self.pend_target[r],
                            int(self.pend_n[r]), totals, won))
            self.games_done += 1
            self._new_game(int(r))

    def learn(self, g: Finished) -> None:
        """The evaluator learns from one finished game at this iteration's point of the schedule."""
        self._fold_loss(self.evaluator.learn(g, self.progress_fraction()))

    # ---- self-play on workers ----
    def connect(self, transport: str) -> None:
        """Start `selfplay.workers` self-play workers (`WorkerPool` of `SelfPlayActor`: local processes, or Ray
        actors at a Ray address), put back a checkpoint's games in flight when resuming, and publish the weights they
        played with (the evaluator's own when starting)."""
        from .selfplay_workers import WorkerPool

        # each worker plays its games on one thread (the workers are the parallelism; `selfplay.threads` stays the
        # driver's, for its evaluations): the games are the same for any number of threads
        wcfg = {**self.cfg, "selfplay": {**self.cfg["selfplay"], "threads": 1}}
        self.pool = WorkerPool(SelfPlayActor, (self.make, wcfg, self.seed), self.sp.workers, transport,
                               name=f"{self.name}-selfplay")
        if self.worker_snaps is not None:
            self.pool.restore(self.worker_snaps)
            self.worker_snaps = None
        if self.published is None:
            self.publish()
        else:
            self.pool.publish(self.published)

    def publish(self) -> None:
        """The evaluator's current weights to the workers (for their next turns), into one kept copy."""
        weights = self.evaluator.get_weights()
        same = self.published is not None and self.published.keys() == weights.keys() and all(
            self.published[k].shape == v.shape for k, v in weights.items())
        if not same:
            self.published = {k: np.array(v, copy=True) for k, v in weights.items()}
        else:  # copied into (a fresh 13 MB array costs more in page faults than the copy)
            for k, v in weights.items():
                self.published[k][...] = v
        self.pool.publish(self.published)

    def close(self) -> None:
        """End the self-play workers (if any)."""
        if self.pool is not None:
            self.pool.close()

    # ---- evaluation ----
    def play(self) -> dict[str, int]:
        """How the agent plays: the candidates' planner beam and count."""
        return {"beam": self.sp.beam, "candidates": self.K}

    def evaluate(self) -> dict[str, Any]:
        """The evaluator, as its agent plays, against the greedy planner (`vs_greedy`); an eval.csv row."""
        policy = self.evaluator.agent(self.sp.beam, self.K)
        res = vs_greedy(policy, self.ev.games, self.ev.seed,
                        self.ev.opponent_beam, threads=self.sp.threads)
        more = self.evaluator.extra_evaluation(self.context())
        return {"iteration": self.iteration, "games": self.games_done, "decisions": self.decisions,
                "searched": self.searched, "minutes": round(self.elapsed() / 60, 3),
                "loss": None if math.isnan(self.loss_ema) else round(self.loss_ema, 4), **self.evaluator.metrics(),
                **{k: round(v, 4) for k, v in {**res, **more}.items()}}

    def _record(self, row: dict[str, Any], log: Any, bar: Any) -> None:
        self.evals.append(row)
        atomic_write_csv(self.run / "eval.csv", self.evals)
        if log is not None:
            for k in ("win_rate", "mean_score", "loss", "win_loss"):
                if row.get(k) is not None:
                    log.add_scalar(f"eval/{k}", row[k], row["games"])
        bar.write(json.dumps(row))
        key = [row["win_rate"], row["mean_score"]]
        if key > self.best:
            self.best = key
            self._save_model(self.run / "best", {"eval": row})

    # ---- checkpoints ----
    def _save_model(self, path: Path, extra: dict[str, Any] | None = None) -> None:
        info = {"command": self.command, "seed": self.seed, "iteration": self.iteration,
                "games": self.games_done, "minutes": round(self.elapsed() / 60, 2), "config": self.cfg,
                **(extra or {})}
        self.evaluator.save(path, self.play(), info)

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.started

    def export(self) -> None:
        """model.* (and what the evaluator saves beside it): the agent's checkpoint of the current weights."""
        self._save_model(self.run / "model")

    def save(self) -> None:
        """The complete learner state as checkpoints/step_<iteration>.npz + .json (with workers: their games in
        flight and the weights they play with), then `export()`."""
        buf = io.BytesIO()
        extra: dict[str, np.ndarray] = dict(self.evaluator.arrays())
        plain: list[dict[str, Any]] = []
        nxt: list[dict[str, Any]] = []
        if self.pool is not None:
            if self.pool.busy:  # the next iteration's turns: their results go into the checkpoint, to learn next
                self._next = self.pool.gather()
            for k, snap in enumerate(self.pool.snapshot()):
                extra.update({f"worker{k}_{key}": v for key, v in snap.items() if isinstance(v, np.ndarray)})
                plain.append({key: v for key, v in snap.items() if not isinstance(v, np.ndarray)})
            for k, res in enumerate(self._next or []):
                arrays, rest = _flatten(res)
                extra.update({f"next{k}.{key}": v for key, v in arrays.items()})
                nxt.append(rest)
            current = self.evaluator.get_weights()
            for key, v in self.published.items():
                if not np.array_equal(v, current[key]):
                    extra[f"published.{key}"] = v
        np.savez(buf, states=self.states, kinds=self.kinds, pend=self.pend, pend_seat=self.pend_seat,
                 pend_pred=self.pend_pred, pend_n=self.pend_n, pend_target=self.pend_target, **extra)
        meta = {"iteration": self.iteration, "games_done": self.games_done, "decisions": self.decisions,
                "loss_ema": None if math.isnan(self.loss_ema) else self.loss_ema, "best": self.best,
                "searched": self.searched, **self.evaluator.meta(),
                "evals": self.evals, "rng": self.rng.bit_generator.state, "elapsed": self.elapsed(),
                **({"workers": plain, "next": nxt} if self.pool is not None else {})}
        folder = self.run / "checkpoints"
        save_checkpoint(folder, self.iteration, buf.getvalue(), meta, keep=self.rn.keep, suffix=".npz")
        for old in folder.glob("step_*.npz"):  # the states of checkpoints `save_checkpoint` let go (it removes .pt)
            if not old.with_suffix(".json").exists():
                old.unlink(missing_ok=True)
        self.export()

    def load(self, path: Path, record: dict[str, Any]) -> None:
        """Take back a checkpoint `save` wrote: its .npz `path` and its JSON record."""
        meta = record["state"]
        with read_npz(path, path.stat().st_size, path, stored_only=True) as z:
            mine = {"states", "kinds", "pend", "pend_seat", "pend_pred", "pend_n", "pend_target"}
            for name in sorted(mine):
                if name == "pend_target" and name not in z.files:  # written before expert iteration existed
                    continue
                target = getattr(self, name)
                if z[name].shape != target.shape or z[name].dtype != target.dtype:
                    raise ConfigError(f"{path}: {name} has shape {z[name].shape}, this config needs {target.shape}")
                target[...] = z[name]
            theirs = {k: z[k] for k in z.files if k not in mine and not k.startswith(("worker", "next", "published"))}
            self.evaluator.load_arrays(theirs, str(path))
            workers, held = self.sp.workers, meta.get("workers")
            if (held is None and workers) or (held is not None and len(held) != workers):
                had = f"{len(held)} self-play workers" if held else "no self-play workers"
                raise ConfigError(f"{path}: a checkpoint of a run with {had} cannot go on with selfplay.workers = "
                                  f"{workers} (--workers {len(held) if held else 0})")
            if workers:
                self.worker_snaps = [{**{key[len(f"worker{k}_"):]: z[key] for key in z.files
                                         if key.startswith(f"worker{k}_")}, **plain}
                                     for k, plain in enumerate(held)]
                current = self.evaluator.get_weights()
                self.published = {key: np.array(z[f"published.{key}"] if f"published.{key}" in z.files else v)
                                  for key, v in current.items()}
                if "published" in z.files:  # written by the n-tuple trainer before the framework: its one array
                    self.published = {"w": np.array(z["published"])}
                self._next = [_unflatten({key[len(f"next{k}."):]: z[key] for key in z.files
                                          if key.startswith(f"next{k}.")}, rest)
                              for k, rest in enumerate(meta.get("next") or [])] or None
        self.iteration = int(meta["iteration"])
        self.games_done = int(meta["games_done"])
        self.decisions = int(meta["decisions"])
        self.searched = int(meta.get("searched", 0))
        self.evaluator.load_meta(meta)
        self.loss_ema = float("nan") if meta["loss_ema"] is None else float(meta["loss_ema"])
        self.best = [float(x) for x in meta["best"]]
        self.evals = list(meta["evals"])
        self.rng.bit_generator.state = meta["rng"]
        self.elapsed_before = float(meta["elapsed"])
        self.started = time.time()

    # ---- the loop ----
    def rate(self) -> float:
        """Decisions per second (wall) of this process's run so far, over all workers."""
        when, decisions = self._rate_from
        return (self.decisions - decisions) / max(1e-9, time.perf_counter() - when)

    def train(self, max_minutes: float = 0.0, log: Any = None) -> None:
        every_ev = self.ev.every if self.ev.games > 0 else 0
        self._rate_from = (time.perf_counter(), self.decisions)
        iterate(self, self.tr.iterations, max_minutes, self.step,
                lambda bar: self._record(self.evaluate(), log, bar),
                lambda: {"games": self.games_done, "loss": f"{self.loss_ema:.2f}", "dec/s": f"{self.rate():.0f}"},
                every_ev, self.rn.checkpoint_every, self.name, self.progress)


class SelfPlayActor:
    """One self-play worker (an actor of `experiments.selfplay_workers.WorkerPool`): a `Learner`'s self-play (its own
    `selfplay.games` games, its own generator seeded from (seed, worker index)) with the weights last published;
    `play` returns its finished games, compact (`pack_games`), for the learner."""

    learner_class: type = Learner

    def __init__(self, make: Factory, cfg: dict[str, dict[str, Any]], seed: int, index: int, incarnation: int = 0):
        from .selfplay_workers import actor_incarnation, worker_seed

        self.incarnation = actor_incarnation(incarnation)  # (a restarted worker starts other games; restored next)
        self.learner = self.learner_class(cfg, worker_seed(seed, index, self.incarnation), None, make,
                                          progress=False, init=False)
        self.version = -1

    def pid(self) -> int:
        return os.getpid()

    def play(self, version: int, weights: dict[str, np.ndarray] | None, steps: int) -> dict[str, Any]:
        """Load the weights if newer, play `steps` whole turns in every game; the finished games and counts."""
        tr = self.learner
        if weights is not None and version != self.version:
            tr.evaluator.set_weights(weights)
            self.version = version
        games: list[Finished] = []

        def keep(g: Finished) -> None:  # copies: the game's rows are reused once it is replaced
            games.append(Finished(g.afters[: g.m].copy(), g.seats[: g.m].copy(), g.preds[: g.m].copy(),
                                  g.targets[: g.m].copy(), g.m, g.totals.copy(), g.won.copy()))

        decisions, finished, searched = tr.decisions, tr.games_done, tr.searched
        t0 = time.perf_counter()
        for _ in range(int(steps)):
            tr.play_turn(keep)
        return {"games": pack_games(games), "decisions": tr.decisions - decisions, "finished": tr.games_done - finished,
                "searched": tr.searched - searched, "version": self.version, "incarnation": self.incarnation,
                "seconds": time.perf_counter() - t0}  # (its play's wall time: benchmarks/bench_selfplay.py)

    def snapshot(self) -> dict[str, Any]:
        """The games in flight (their recorded afterstates compact) and the generator: what a worker put back needs
        to go on identically."""
        from .selfplay_workers import pack_rows

        tr = self.learner
        rows = np.concatenate([tr.pend[r, : tr.pend_n[r]] for r in range(tr.G)])
        packed = pack_rows(rows)
        return {"states": tr.states.copy(), "kinds": tr.kinds.copy(), "pend_seat": tr.pend_seat.copy(),
                "pend_pred": tr.pend_pred.copy(), "pend_target": tr.pend_target.copy(), "pend_n": tr.pend_n.copy(),
                **{f"pend_{k}": v for k, v in packed.items()}, "rng": tr.rng.bit_generator.state,
                "decisions": tr.decisions, "games_done": tr.games_done, "searched": tr.searched}

    def restore(self, snap: dict[str, Any]) -> None:
        from .selfplay_workers import unpack_rows

        tr = self.learner
        for key in ("states", "kinds", "pend_seat", "pend_pred", "pend_target", "pend_n"):
            got = np.asarray(snap[key])
            if got.shape != getattr(tr, key).shape:
                raise ValueError(f"a worker snapshot's {key} has shape {got.shape}, this config needs "
                                 f"{getattr(tr, key).shape}")
            getattr(tr, key)[...] = got
        rows = unpack_rows({k: np.asarray(snap[f"pend_{k}"]) for k in ("small", "cols", "wide")})
        at = 0
        for r in range(tr.G):
            n = int(tr.pend_n[r])
            tr.pend[r, :n] = rows[at:at + n]
            at += n
        tr.rng.bit_generator.state = snap["rng"]
        tr.decisions, tr.games_done = int(snap["decisions"]), int(snap["games_done"])
        tr.searched = int(snap["searched"])


def run_learner(args: Any, learner: Learner) -> dict[str, Any]:
    """A training command of a `Learner` (`python -m experiments.train NAME ...`, `args` an
    `experiments.commands.RunArgs`): resume, connect the workers, train, summarise (summary.json)."""
    from .common import atomic_write_json, latest_checkpoint

    learner.command = args.command or learner.command
    found = latest_checkpoint(args.run / "checkpoints") if args.resume else None
    if found is not None and found[0].suffix != ".npz":
        raise ConfigError(f"--resume: {found[0]} is a checkpoint of a trainer before the self-play framework "
                          f"(issue 45); its run cannot go on: start another --run (its model still plays)")
    if found is not None:
        learner.load(*found)
    workers = learner.sp.workers
    if workers:
        from .selfplay_workers import PROCESSES

        try:
            learner.connect(learner.rn.ray or PROCESSES)
        except ImportError as e:
            from harmonies_env.firstrun import install_hint

            raise ConfigError(f"--ray needs {e.name or 'ray'}, from the \"distributed\" extra: "
                              f"{install_hint('distributed')}") from None
        except ValueError as e:
            raise ConfigError(str(e)) from None
    log = None
    try:
        from torch.utils.tensorboard import SummaryWriter

        log = SummaryWriter(str(args.run / "tb"))
    except ImportError:  # TensorBoard is optional: eval.csv holds the same curves
        pass
    try:
        learner.train(args.max_minutes, log)
    finally:
        restarts = learner.pool.restarts if learner.pool is not None else 0
        learner.close()
        if log is not None:
            log.close()
    summary = {"iteration": learner.iteration, "games": learner.games_done, "decisions": learner.decisions,
               "minutes": round(learner.elapsed() / 60, 2), "loss": learner.loss_ema if not
               math.isnan(learner.loss_ema) else None, "last_eval": learner.evals[-1] if learner.evals else None,
               **({"workers": workers, "worker_restarts": restarts} if workers else {})}
    atomic_write_json(args.run / "summary.json", summary)
    return summary


#: The framework's public names: the loop (here) and its config (`selfplay_config`); the evaluator interface is
#: `agents.evaluator`'s, its registry `agents.learners`.
__all__ = ["EvalSection", "Factory", "Learner", "RunSection", "SelfPlayActor", "SelfPlaySection", "TrainSection",
           "pack_games", "run_learner", "settings", "typed", "unpack_games", "vs_greedy"]
