"""Train the n-tuple afterstate value function (`agents.ntuple`) by TD(lambda) from batched self-play.

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
planner (`greedy`, beam `eval.opponent_beam`) on `eval.games` fixed seeds that training never uses (each seed with
both seatings); rows go to `eval.csv` (and TensorBoard `tb/` when installed) and the best by win rate (then mean
score) to `best.npz/.json`. Evaluations draw nothing from the training generator.

`--workers N` (`selfplay.workers`) plays the self-play in N workers instead (`SelfPlayWorker` in
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

import io
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from agents import ntuple as N
from agents.checkpoint import CheckpointError
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN
from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import play_plan, run_rows
from harmonies_env.scoring import NUM_CATEGORIES

from .common import (
    ConfigError,
    atomic_write_csv,
    atomic_write_json,
    iterate,
    latest_checkpoint,
    save_checkpoint,
    section,
)
from .runner import RunArgs

#: Every setting with its default (a config's sections override them; unknown keys are refused).
DEFAULTS: dict[str, dict[str, Any]] = {
    "selfplay": {"games": 32, "players": [2], "sides": ["A"], "beam": 24, "candidates": 128, "epsilon": 0.05,
                 "greedy_games": 0.2, "max_decisions": 96,
                 "threads": 1,  # threads sharing the games' turns (the run is the same for any number)
                 "workers": 0,  # self-play workers, each with its own `games` games (0: in this process)
                 "sync_every": 4},  # with workers: iterations between two publications of the weights to them
    "train": {"iterations": 100_000, "lam": 0.5, "alpha_tuple": 0.03, "alpha_linear": 0.003,
              "alpha_final": 1.0,  # both step sizes scale linearly from 1x at iteration 0 to this at `iterations`
              "coherence": False,  # temporal-coherence step sizes for the tuple weights (`ntuple.kernels.td_step`)
              "win_head": False,  # also learn the win head (`ntuple.learn_win`) from the same games: model-win.npz
              "layout": 2,  # 2: board and card shapes; 1: board shapes only (`ntuple.NTUPLE_VERSION`)
              "init": "greedy"},  # "greedy": the planner's evaluation; "zero": all zero; or an ntuple checkpoint
                                  # (a layout-1 one grows into layout 2 with its card tables at zero)
    # Expert iteration (off at share 0): a share of the network's decisions is taken by a one-turn expectimax
    # (`ntuple.search_values`: the `root` best candidates in `worlds` resampled refills, replies at beam
    # `reply_beam` / `reply_candidates` plans), which the game plays, and whose value of the chosen afterstate
    # becomes its training target (mixed with the lambda-return by `mix`).
    "expert": {"share": 0.0, "worlds": 4, "root": 4, "reply_beam": 8, "reply_candidates": 32, "mix": 1.0},
    "eval": {"every": 400, "games": 64, "seed": 1_000_000, "opponent_beam": 24},
    "run": {"checkpoint_every": 100, "keep": 2,
            "ray": ""},  # with selfplay.workers: "" local processes; a Ray address ("local", "auto", HOST:PORT)
}
#: The one config loader's schema (experiments.common: kinds and unknown keys checked at load; `settings` adds ranges).
SCHEMAS = {"learned": DEFAULTS}
#: Training games' seeds are drawn from [TRAIN_SEED_LOW, 2**62): never a small seed evaluations use.
TRAIN_SEED_LOW = 2**40


def settings(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The validated settings of a config (ConfigError naming a bad section, key or value)."""
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown config section(s) {', '.join(unknown)} (known: {', '.join(DEFAULTS)})")
    cfg = {name: section(config, name, d) for name, d in DEFAULTS.items()}
    sp, tr = cfg["selfplay"], cfg["train"]
    for sec, key, low in (("selfplay", "games", 1), ("selfplay", "beam", 1), ("selfplay", "candidates", 1),
                          ("selfplay", "threads", 1), ("selfplay", "workers", 0), ("selfplay", "sync_every", 1),
                          ("selfplay", "max_decisions", 1), ("train", "iterations", 1), ("eval", "every", 0),
                          ("eval", "games", 0), ("eval", "opponent_beam", 1), ("run", "checkpoint_every", 1),
                          ("run", "keep", 1)):
        v = cfg[sec][key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConfigError(f"[{sec}] {key} must be a whole number >= {low}, got {v!r}")
    if not (isinstance(sp["players"], list) and sp["players"] and all(p in (2, 3, 4) for p in sp["players"])):
        raise ConfigError(f"[selfplay] players must be a list of 2..4, got {sp['players']!r}")
    if not (isinstance(sp["sides"], list) and sp["sides"] and all(s in ("A", "B") for s in sp["sides"])):
        raise ConfigError(f"[selfplay] sides must be a list of \"A\" / \"B\", got {sp['sides']!r}")
    for sec, key, low in (("expert", "worlds", 1), ("expert", "root", 2), ("expert", "reply_beam", 1),
                          ("expert", "reply_candidates", 1)):
        v = cfg[sec][key]
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 1024:
            raise ConfigError(f"[{sec}] {key} must be a whole number {low}..1024, got {v!r}")
    for sec, key in (("selfplay", "epsilon"), ("selfplay", "greedy_games"), ("train", "lam"), ("expert", "share"),
                     ("expert", "mix"), ("train", "alpha_final")):
        v = cfg[sec][key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise ConfigError(f"[{sec}] {key} must be a number in [0, 1], got {v!r}")
    for key in ("alpha_tuple", "alpha_linear"):
        v = tr[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
            raise ConfigError(f"[train] {key} must be a number >= 0, got {v!r}")
    ray = cfg["run"]["ray"]
    if ray:
        from agents.distributed import check_address

        try:
            check_address(ray)
        except ValueError as e:
            raise ConfigError(f"[run] ray: {e}") from None
        if not sp["workers"]:
            raise ConfigError(f"run.ray (--ray {ray}) runs self-play workers on Ray: give selfplay.workers "
                              "(--workers N) too")
    for key in ("win_head", "coherence"):
        if not isinstance(tr[key], bool):
            raise ConfigError(f"[train] {key} must be true or false, got {tr[key]!r}")
    if not isinstance(tr["init"], str) or not tr["init"]:
        raise ConfigError(f"[train] init must be \"greedy\", \"zero\" or an ntuple checkpoint's path, "
                          f"got {tr['init']!r}")
    try:
        N.check_layout(tr["layout"])
    except ValueError as e:
        raise ConfigError(f"[train] {e}") from None
    if tr["init"] not in ("greedy", "zero"):
        try:
            version = N.load_checkpoint(tr["init"])[0]["version"]
        except (CheckpointError, OSError) as e:
            raise ConfigError(f"[train] init: {e}") from None
        if version > tr["layout"]:
            raise ConfigError(f"[train] init: {tr['init']} is a layout-{version} network; layout = {tr['layout']} "
                              f"cannot hold it")
    try:
        N.check_play({"beam": sp["beam"], "candidates": sp["candidates"]})
    except ValueError as e:
        raise ConfigError(f"[selfplay] {e}") from None
    return cfg


class Buffers:
    """The scratch arrays of `decide_rows` for a batch of G games and K candidates, and how many threads share the
    rows (the games do not depend on it: every row depends only on itself)."""

    def __init__(self, G: int, K: int, threads: int = 1):
        self.threads = int(threads)
        self.plans = np.zeros((G, K, MAX_PLAN), dtype=np.int64)
        self.lens = np.zeros((G, K), dtype=np.int64)
        self.pvals = np.zeros((G, K), dtype=np.float64)
        self.values = np.zeros((G, K), dtype=np.float64)
        self.tmp = np.zeros((G, S.STATE_SIZE), dtype=np.int64)
        self.after = np.zeros((G, S.STATE_SIZE), dtype=np.int64)
        self.seat = np.zeros(G, dtype=np.int64)
        self.pred = np.zeros(G, dtype=np.float64)
        self.chosen = np.zeros(G, dtype=np.int64)
        self.recorded = np.zeros(G, dtype=np.bool_)

    def decide(self, states: np.ndarray, kinds: np.ndarray, w: np.ndarray, beam: int, greedy_beam: int,
               explore: np.ndarray, pick: np.ndarray) -> None:
        run_rows(N.decide_rows, states.shape[0], self.threads, states, kinds, w, DEFAULT_WEIGHTS, beam, greedy_beam,
                 explore, pick, self.plans, self.lens, self.pvals, self.values, self.tmp, self.after, self.seat,
                 self.pred, self.chosen, self.recorded, min_rows=2)  # a row costs milliseconds


def play_vs_greedy(w: np.ndarray, games: int, seed: int, beam: int, candidates: int, opponent_beam: int,
                   num_players: int = 2, side: int = 0, threads: int = 1) -> dict[str, float]:
    """The network (as `NTupleAgent` plays it) against the greedy planner (`GreedyAgent`, beam opponent_beam) in
    `games` games on seeds seed + i // 2, game i seating the network at i % 2 (each seed with both seatings).
    Returns its win rate (shared wins split), its mean total and the planner's (the same for any `threads`)."""
    G = int(games)
    states = np.zeros((G, S.STATE_SIZE), dtype=np.int64)
    kinds = np.ones((G, S.MAX_PLAYERS), dtype=np.int64)
    for i in range(G):
        S.init_state(states[i], num_players, side, 0, seed + i // 2)
        kinds[i, i % num_players] = 0
    buf = Buffers(G, candidates, threads)
    none = np.zeros(G, dtype=np.bool_)
    pick = np.zeros(G)
    while not states[:, S.GAME_OVER].all():
        buf.decide(states, kinds, w, beam, opponent_beam, none, pick)
    totals = np.zeros(4, dtype=np.int64)
    won = np.zeros(4, dtype=np.int64)
    wins = mine = theirs = 0.0
    for i in range(G):
        N.final_totals(states[i], totals, won)
        me = i % num_players
        wins += won[me] / max(1, won.sum())
        mine += totals[me]
        theirs += (totals[:num_players].sum() - totals[me]) / (num_players - 1)
    return {"win_rate": wins / G, "mean_score": mine / G, "greedy_score": theirs / G}


class Finished(NamedTuple):
    """A finished game, as `Trainer.learn` reads it: its recorded afterstates afters[:m] (int64, STATE_SIZE wide), their
    movers, the predictions made for them at play time, the expert targets (NaN: none), every seat's final total and
    who won (int64 (4,))."""

    afters: np.ndarray
    seats: np.ndarray
    preds: np.ndarray
    targets: np.ndarray
    m: int
    totals: np.ndarray
    won: np.ndarray


def pack_games(games: list[Finished]) -> dict[str, Any]:
    """Finished games made compact for the wire (afterstates as int16 where they fit, `pack_rows`; only rows < m)."""
    from .selfplay_workers import pack_rows

    ms = np.array([g.m for g in games], dtype=np.int64)

    def cat(parts: list[np.ndarray], dt: type) -> np.ndarray:
        return np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)

    afters = np.concatenate([g.afters[: g.m] for g in games]) if games else np.zeros((0, S.STATE_SIZE), np.int64)
    return {"m": ms, "afters": pack_rows(afters), "seats": cat([g.seats[: g.m] for g in games], np.int8),
            "preds": cat([g.preds[: g.m] for g in games], np.float64),
            "targets": cat([g.targets[: g.m] for g in games], np.float64),
            "totals": np.array([g.totals for g in games], dtype=np.int16).reshape(-1, 4),
            "won": np.array([g.won for g in games], dtype=np.int8).reshape(-1, 4)}


def unpack_games(p: dict[str, Any]) -> list[Finished]:
    """The games `pack_games` packed, exactly."""
    from .selfplay_workers import unpack_rows

    afters = unpack_rows(p["afters"])
    out, at = [], 0
    for i, m in enumerate(p["m"].tolist()):
        sl = slice(at, at + m)
        out.append(Finished(afters[sl], p["seats"][sl].astype(np.int64), p["preds"][sl], p["targets"][sl], m,
                            p["totals"][i].astype(np.int64), p["won"][i].astype(np.int64)))
        at += m
    return out


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


class Trainer:
    """Batched self-play + TD(lambda) of the n-tuple network (module docstring)."""

    def __init__(self, cfg: dict[str, dict[str, Any]], seed: int, run: Path | None, progress: bool = True,
                 init: bool = True):
        self.cfg = cfg
        self.sp, self.tr, self.ev = cfg["selfplay"], cfg["train"], cfg["eval"]
        self.seed = int(seed)
        self.run = run
        self.progress = progress
        self.G, self.K, self.D = int(self.sp["games"]), int(self.sp["candidates"]), int(self.sp["max_decisions"])
        init, layout, start_weights = self.tr["init"], int(self.tr["layout"]), init
        self.w = np.zeros(N.LAYOUT_WEIGHTS[layout], np.float32)
        if not start_weights:  # a self-play worker's: the weights come from the learner (`SelfPlayWorker`)
            pass
        elif init == "greedy":
            self.w[:] = N.heuristic_weights(layout)
        elif init != "zero":  # a checkpoint: a smaller layout's weights are the start of this one's
            start = N.load_checkpoint(init)[1]
            self.w[: start.shape[0]] = start
        self.ex = cfg["expert"]
        self.wwin = np.zeros(N.LAYOUT_WEIGHTS[layout], np.float32) if self.tr["win_head"] and start_weights else None
        # temporal coherence: each head's (E, A) accumulators, float32 (2, len(w)), in the trainer's checkpoint (the
        # learner's only: a self-play worker does not learn)
        learns = self.tr["coherence"] and start_weights
        self.coh = np.zeros((2, self.w.shape[0]), np.float32) if learns else None
        self.coh_win = None if self.coh is None or self.wwin is None else np.zeros_like(self.coh)
        self.win_loss_ema = float("nan")
        self.searched = 0
        self.rng = np.random.default_rng(self.seed)
        self.states = np.zeros((self.G, S.STATE_SIZE), dtype=np.int64)
        self.kinds = np.zeros((self.G, S.MAX_PLAYERS), dtype=np.int64)
        self.pend = np.zeros((self.G, self.D, S.STATE_SIZE), dtype=np.int64)
        self.pend_seat = np.zeros((self.G, self.D), dtype=np.int64)
        self.pend_pred = np.zeros((self.G, self.D), dtype=np.float64)
        self.pend_target = np.full((self.G, self.D), np.nan, dtype=np.float64)
        self.pend_n = np.zeros(self.G, dtype=np.int64)
        self.buf = Buffers(self.G, self.K, int(self.sp["threads"]))
        self.iteration = 0
        self.games_done = 0
        self.decisions = 0
        self.loss_ema = float("nan")
        self.best: list[float] = [-1.0, -1.0]
        self.evals: list[dict[str, Any]] = []
        self.elapsed_before = 0.0
        self.started = time.time()
        self.command = "python -m experiments.train ntuple"  # `run` sets the one typed, with its arguments
        self.pool: Any = None  # the self-play workers (`connect`), when selfplay.workers > 0
        self.published: np.ndarray | None = None  # the weights they play with (a copy)
        self.worker_snaps: list[dict[str, Any]] | None = None  # their games in flight, from a checkpoint
        self._next: list[dict[str, Any]] | None = None  # the next iteration's results, gathered by a checkpoint
        self._rate_from = (time.perf_counter(), 0)  # (when, decisions) this process started: the bar's rate
        for r in range(self.G):
            self._new_game(r)

    def _new_game(self, r: int) -> None:
        n = int(self.rng.choice(np.asarray(self.sp["players"], dtype=np.int64)))
        side = 0 if str(self.rng.choice(np.asarray(self.sp["sides"]))) == "A" else 1
        S.init_state(self.states[r], n, side, 0, int(self.rng.integers(TRAIN_SEED_LOW, 2**62)))
        self.kinds[r] = 0
        if self.rng.random() < float(self.sp["greedy_games"]):
            self.kinds[r, int(self.rng.integers(n))] = 1
        self.pend_n[r] = 0
        self.pend_target[r] = np.nan

    def expert_turn(self, r: int) -> float:
        """Expert iteration: game r's mover (the network) plays the choice of a one-turn expectimax over its `root`
        best candidates in `worlds` worlds (the real state with the chance resampled from the training generator:
        a new pouch-draw seed, the draw pile reshuffled), and b.after/seat/pred[r] record it as `decide_rows` would.
        Returns the search's value of the afterstate (points still to come), or NaN where there was nothing to
        search (one candidate, the Spirit choice; the row is then played as `decide_rows` would)."""
        ex, b, s = self.ex, self.buf, self.states[r]
        n = N.candidate_values(s, self.w, DEFAULT_WEIGHTS, int(self.sp["beam"]), b.plans[r], b.lens[r], b.pvals[r],
                               b.values[r], b.after[r])
        spirit = n > 0 and A.KEEP_SPIRIT <= b.plans[r, 0, 0] < A.KEEP_SPIRIT + 2
        if n <= 1 or spirit:
            return math.nan
        order = np.argsort(-b.values[r, :n], kind="stable")[: int(ex["root"])]
        C, W = len(order), int(ex["worlds"])
        plans, lens = b.plans[r, order].copy(), b.lens[r, order].copy()
        worlds = np.repeat(s[None], W, axis=0)
        cards = int(s[S.DECK_COUNT])
        for j in range(W):
            worlds[j, S.RNG] = int(self.rng.integers(1, 2**62))
            deck = S.field(worlds[j], "deck")
            deck[:cards] = self.rng.permutation(deck[:cards])
        roots = np.tile(worlds, (C, 1))
        which = np.repeat(np.arange(C, dtype=np.int64), W)
        out = np.zeros(C * W)
        N.search_values(roots, which, plans, lens, self.w, DEFAULT_WEIGHTS, int(ex["reply_beam"]),
                        int(ex["reply_candidates"]), out)
        mean = out.reshape(C, W).mean(axis=1)
        c = int(np.argmax(mean))
        p = int(s[S.CURRENT])
        b.after[r] = s
        play_plan(b.after[r], plans[c], lens[c], True)
        play_plan(s, plans[c], lens[c])
        b.seat[r] = p
        out1 = np.zeros(1)
        N.evaluate_batch(b.after[r:r + 1], np.array([p], dtype=np.int64), self.w, out1)
        b.pred[r] = out1[0]
        b.recorded[r] = True
        self.searched += 1
        return float(mean[c] - N.own_total(b.after[r], p, np.zeros(NUM_CATEGORIES, dtype=np.int64)))

    def alpha_scale(self) -> float:
        """The step sizes' factor at this iteration: linear from 1 at iteration 0 to `train.alpha_final` at
        `train.iterations` (a function of the iteration alone, so a resumed run is the same)."""
        frac = min(1.0, self.iteration / max(1, int(self.tr["iterations"])))
        return 1.0 + (float(self.tr["alpha_final"]) - 1.0) * frac

    def step(self) -> None:
        """One whole turn in every game (in this process, or every worker's games); finished games teach the network
        (in worker order) and are replaced."""
        if self.pool is None:
            self.play_turn(self.learn)
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
        if (self.iteration + 1) % int(self.sp["sync_every"]) == 0:
            self.publish()

    def play_turn(self, finish: Callable[[Finished], None]) -> None:
        """One whole turn in every game; each finished game goes to `finish` (views: read them before returning),
        then is replaced by a new one."""
        explore = self.rng.random(self.G) < float(self.sp["epsilon"])
        pick = self.rng.random(self.G)
        b = self.buf
        share = float(self.ex["share"])
        target = np.full(self.G, np.nan)
        if share > 0:  # drawn only when on, so runs without it keep their generator stream
            searched = (self.rng.random(self.G) < share) & ~explore
            held = self.states[:, S.GAME_OVER].copy()
            for r in np.flatnonzero(searched & (held == 0)):
                s = self.states[r]
                if self.kinds[r, int(s[S.CURRENT])] == 0:
                    target[r] = self.expert_turn(int(r))
            done = ~np.isnan(target)
            held = self.states[:, S.GAME_OVER].copy()
            self.states[done, S.GAME_OVER] = 1  # decide_rows skips the rows the search played
            keep = (b.after[done].copy(), b.seat[done].copy(), b.pred[done].copy())
            b.decide(self.states, self.kinds, self.w, int(self.sp["beam"]), int(self.ev["opponent_beam"]), explore,
                     pick)
            self.states[:, S.GAME_OVER] = np.where(done, held, self.states[:, S.GAME_OVER])
            b.after[done], b.seat[done], b.pred[done] = keep
            b.recorded[done] = True
        else:
            b.decide(self.states, self.kinds, self.w, int(self.sp["beam"]), int(self.ev["opponent_beam"]), explore,
                     pick)
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
        for r in np.flatnonzero(self.states[:, S.GAME_OVER]):
            N.final_totals(self.states[r], totals, won)
            finish(Finished(self.pend[r], self.pend_seat[r], self.pend_pred[r], self.pend_target[r],
                            int(self.pend_n[r]), totals, won))
            self.games_done += 1
            self._new_game(int(r))

    def learn(self, g: Finished) -> None:
        """TD(lambda) from one finished game (`ntuple.learn_game`, and `learn_win` for the win head), at this
        iteration's step sizes."""
        scale = self.alpha_scale()
        a_tuple, a_linear = float(self.tr["alpha_tuple"]) * scale, float(self.tr["alpha_linear"]) * scale
        m = g.m
        sse = N.learn_game(self.w, g.afters, g.seats, g.preds, m, g.totals, float(self.tr["lam"]), a_tuple, a_linear,
                           g.targets, float(self.ex["mix"]), self.coh)
        loss = sse / max(1, m)
        self.loss_ema = loss if math.isnan(self.loss_ema) else 0.95 * self.loss_ema + 0.05 * loss
        if self.wwin is not None:
            share = g.won.astype(np.float64) / max(1, int(g.won.sum()))
            xe = N.learn_win(self.wwin, g.afters, g.seats, m, share, float(self.tr["lam"]), a_tuple,
                             a_linear, self.coh_win) / max(1, m)
            self.win_loss_ema = xe if math.isnan(self.win_loss_ema) else 0.95 * self.win_loss_ema + 0.05 * xe

    # ---- self-play on workers ----
    def connect(self, transport: str) -> None:
        """Start `selfplay.workers` self-play workers (`experiments.selfplay_workers.WorkerPool` of `SelfPlayWorker`:
        local processes, or Ray actors at a Ray address), put back a checkpoint's games in flight when resuming, and
        publish the weights they played with (the network's own when starting)."""
        from .selfplay_workers import WorkerPool

        self.pool = WorkerPool(SelfPlayWorker, (self.cfg, self.seed), int(self.sp["workers"]), transport,
                               name="learned-selfplay")
        if self.worker_snaps is not None:
            self.pool.restore(self.worker_snaps)
            self.worker_snaps = None
        if self.published is None:
            self.publish()
        else:
            self.pool.publish({"w": self.published})

    def publish(self) -> None:
        """The network's current weights to the workers (for their next turns)."""
        if self.published is None or self.published.shape != self.w.shape:
            self.published = self.w.copy()
        else:  # one buffer, copied into (a fresh 13 MB array costs more in page faults than the copy)
            self.published[...] = self.w
        self.pool.publish({"w": self.published})

    def close(self) -> None:
        """End the self-play workers (if any)."""
        if self.pool is not None:
            self.pool.close()

    # ---- evaluation ----
    def evaluate(self) -> dict[str, Any]:
        ev = self.ev
        res = play_vs_greedy(self.w, int(ev["games"]), int(ev["seed"]), int(self.sp["beam"]), self.K,
                             int(ev["opponent_beam"]), threads=int(self.sp["threads"]))
        return {"iteration": self.iteration, "games": self.games_done, "decisions": self.decisions,
                "searched": self.searched, "minutes": round(self.elapsed() / 60, 3),
                "loss": None if math.isnan(self.loss_ema) else round(self.loss_ema, 4),
                "win_loss": None if math.isnan(self.win_loss_ema) else round(self.win_loss_ema, 4),
                **{k: round(v, 4) for k, v in res.items()}}

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
    def play(self) -> dict[str, int]:
        return {"beam": int(self.sp["beam"]), "candidates": self.K}

    def _save_model(self, path: Path, extra: dict[str, Any] | None = None) -> None:
        info = {"command": self.command, "seed": self.seed, "iteration": self.iteration,
                "games": self.games_done, "minutes": round(self.elapsed() / 60, 2), "config": self.cfg,
                **(extra or {})}
        N.save_checkpoint(path, self.w, self.play(), info)
        if self.wwin is not None:  # the win head beside it: model.npz -> model-win.npz (`ntuple-win`'s second file)
            N.save_checkpoint(path.with_name(path.name + "-win"), self.wwin, self.play(), info, head="win")

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.started

    def export(self) -> None:
        """model.npz/.json (and the win head's), the agent's checkpoint of the current weights."""
        self._save_model(self.run / "model")

    def save(self) -> None:
        """The complete trainer state as checkpoints/step_<iteration>.npz + .json (with workers: their games in
        flight, `snapshot()`, and the weights they play with), then `export()`."""
        buf = io.BytesIO()
        extra: dict[str, np.ndarray] = {} if self.wwin is None else {"wwin": self.wwin}
        extra.update({k: v for k, v in (("coh", self.coh), ("coh_win", self.coh_win)) if v is not None})
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
            if not np.array_equal(self.published, self.w):
                extra["published"] = self.published
        np.savez(buf, w=self.w, states=self.states, kinds=self.kinds, pend=self.pend, pend_seat=self.pend_seat,
                 pend_pred=self.pend_pred, pend_n=self.pend_n, pend_target=self.pend_target, **extra)
        meta = {"iteration": self.iteration, "games_done": self.games_done, "decisions": self.decisions,
                "loss_ema": None if math.isnan(self.loss_ema) else self.loss_ema, "best": self.best,
                "searched": self.searched,
                "win_loss_ema": None if math.isnan(self.win_loss_ema) else self.win_loss_ema,
                "evals": self.evals, "rng": self.rng.bit_generator.state, "elapsed": self.elapsed(),
                **({"workers": plain, "next": nxt} if self.pool is not None else {})}
        folder = self.run / "checkpoints"
        save_checkpoint(folder, self.iteration, buf.getvalue(), meta, keep=int(self.cfg["run"]["keep"]),
                        suffix=".npz")
        for old in folder.glob("step_*.npz"):  # the states of checkpoints `save_checkpoint` let go (it removes .pt)
            if not old.with_suffix(".json").exists():
                old.unlink(missing_ok=True)
        self.export()

    def load(self, path: Path, record: dict[str, Any]) -> None:
        meta = record["state"]
        with np.load(path, allow_pickle=False) as z:
            names = ["w", "states", "kinds", "pend", "pend_seat", "pend_pred", "pend_n", "pend_target"]
            if self.wwin is not None:
                if "wwin" not in z.files:
                    raise ConfigError(f"{path}: has no win head, but this config learns one (train.win_head)")
                names.append("wwin")
            for name in ("coh", "coh_win"):
                if getattr(self, name) is not None:
                    if name not in z.files:
                        raise ConfigError(f"{path}: has no temporal-coherence state, but this config learns with "
                                          f"it (train.coherence)")
                    names.append(name)
            for name in names:
                if name == "pend_target" and name not in z.files:  # written before expert iteration existed
                    continue
                target = getattr(self, name)
                if z[name].shape != target.shape or z[name].dtype != target.dtype:
                    raise ConfigError(f"{path}: {name} has shape {z[name].shape}, this config needs {target.shape}")
                target[...] = z[name]
            workers, held = int(self.sp["workers"]), meta.get("workers")
            if (held is None and workers) or (held is not None and len(held) != workers):
                had = f"{len(held)} self-play workers" if held else "no self-play workers"
                raise ConfigError(f"{path}: a checkpoint of a run with {had} cannot go on with selfplay.workers = "
                                  f"{workers} (--workers {len(held) if held else 0})")
            if workers:
                self.worker_snaps = [{**{key[len(f"worker{k}_"):]: z[key] for key in z.files
                                         if key.startswith(f"worker{k}_")}, **plain}
                                     for k, plain in enumerate(held)]
                self.published = z["published"] if "published" in z.files else None
                self._next = [_unflatten({key[len(f"next{k}."):]: z[key] for key in z.files
                                          if key.startswith(f"next{k}.")}, rest)
                              for k, rest in enumerate(meta.get("next") or [])] or None
        self.iteration = int(meta["iteration"])
        self.games_done = int(meta["games_done"])
        self.decisions = int(meta["decisions"])
        self.searched = int(meta.get("searched", 0))
        wl = meta.get("win_loss_ema")
        self.win_loss_ema = float("nan") if wl is None else float(wl)
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
        every_ev = int(self.ev["every"]) if int(self.ev["games"]) > 0 else 0
        self._rate_from = (time.perf_counter(), self.decisions)
        iterate(self, int(self.tr["iterations"]), max_minutes, self.step,
                lambda bar: self._record(self.evaluate(), log, bar),
                lambda: {"games": self.games_done, "loss": f"{self.loss_ema:.2f}", "dec/s": f"{self.rate():.0f}"},
                every_ev, int(self.cfg["run"]["checkpoint_every"]), "ntuple", self.progress)


class SelfPlayWorker:
    """A self-play worker of the n-tuple learner (an actor of `experiments.selfplay_workers.WorkerPool`): a
    `Trainer`'s self-play (its own `selfplay.games` games, its own generator seeded from (seed, worker index)), with
    the weights last published; `play` returns its finished games, compact (`pack_games`), for the learner."""

    def __init__(self, cfg: dict[str, dict[str, Any]], seed: int, index: int, incarnation: int = 0):
        from .selfplay_workers import actor_incarnation, worker_seed

        self.incarnation = actor_incarnation(incarnation)  # (a restarted worker starts other games; restored next)
        self.trainer = Trainer(cfg, worker_seed(seed, index, self.incarnation), None, progress=False, init=False)
        self.version = -1

    def pid(self) -> int:
        return os.getpid()

    def play(self, version: int, weights: dict[str, np.ndarray] | None, steps: int) -> dict[str, Any]:
        """Load the weights if newer, play `steps` whole turns in every game; the finished games and counts."""
        tr = self.trainer
        if weights is not None and version != self.version:
            tr.w[...] = weights["w"]
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

        tr = self.trainer
        rows = np.concatenate([tr.pend[r, : tr.pend_n[r]] for r in range(tr.G)])
        packed = pack_rows(rows)
        return {"states": tr.states.copy(), "kinds": tr.kinds.copy(), "pend_seat": tr.pend_seat.copy(),
                "pend_pred": tr.pend_pred.copy(), "pend_target": tr.pend_target.copy(), "pend_n": tr.pend_n.copy(),
                **{f"pend_{k}": v for k, v in packed.items()}, "rng": tr.rng.bit_generator.state,
                "decisions": tr.decisions, "games_done": tr.games_done, "searched": tr.searched}

    def restore(self, snap: dict[str, Any]) -> None:
        from .selfplay_workers import unpack_rows

        tr = self.trainer
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


def run(args: RunArgs) -> dict[str, Any]:
    """The `ntuple` training command (`python -m experiments.train ntuple ...`): train, resume, summarise."""
    cfg = settings(args.config)
    trainer = Trainer(cfg, args.seed, args.run, progress=args.progress)
    trainer.command = args.command or trainer.command
    found = latest_checkpoint(args.run / "checkpoints") if args.resume else None
    if found is not None:
        trainer.load(*found)
    workers = int(cfg["selfplay"]["workers"])
    if workers:
        from .selfplay_workers import PROCESSES

        try:
            trainer.connect(cfg["run"]["ray"] or PROCESSES)
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
        trainer.train(args.max_minutes, log)
    finally:
        restarts = trainer.pool.restarts if trainer.pool is not None else 0
        trainer.close()
        if log is not None:
            log.close()
    summary = {"iteration": trainer.iteration, "games": trainer.games_done, "decisions": trainer.decisions,
               "minutes": round(trainer.elapsed() / 60, 2), "loss": trainer.loss_ema if not
               math.isnan(trainer.loss_ema) else None, "last_eval": trainer.evals[-1] if trainer.evals else None,
               **({"workers": workers, "worker_restarts": restarts} if workers else {})}
    atomic_write_json(args.run / "summary.json", summary)
    return summary
