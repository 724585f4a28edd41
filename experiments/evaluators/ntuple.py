"""The n-tuple network (`agents.ntuple`, the agent `learned`) as an evaluator of `experiments.selfplay`.

Its value of an afterstate is `ntuple.remaining` (predicted points still to come); it learns by TD(lambda) from each
finished game (`ntuple.learn_game`: each seat's lambda-returns, one update per afterstate, tuple and linear weights
with their own step sizes scaled linearly from 1 to `train.alpha_final` over the schedule (`train.schedule`, or
`train.iterations`); optionally
temporal-coherence step sizes, `train.coherence`, and a win head, `train.win_head`). Its fused fast path
(`decide_rows`: the numba kernel `ntuple.decide_rows` plans, values, chooses and plays a turn in every game in one
call, rows split over `selfplay.threads`) plays the same games as the framework's own loop, faster. Expert iteration
(`[expert]`, off at share 0) is its own capability too (`expert_turn`).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from agents import ntuple as N
from agents.afterstate_agent import Buffers
from agents.checkpoint import CheckpointError
from agents.evaluator import Context, Evaluator, Finished
from agents.greedy import DEFAULT_WEIGHTS
from agents.ntuple.search import distinct_candidates
from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import play_plan, run_rows
from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

from ..common import ConfigError
from ..selfplay_config import (
    EvalSection,
    RunSection,
    SelfPlaySection,
    TrainSection,
    check_unit,
    checked,
    schema_of,
    typed,
)


@dataclasses.dataclass(frozen=True)
class NTupleTrainSection(TrainSection):
    """[train] of the n-tuple network: the framework's keys and its step sizes, heads and start."""

    alpha_tuple: float = 0.03  # the tuple part moves this fraction of the error per afterstate (normalized LMS)
    alpha_linear: float = 0.003  # the linear part's step size
    alpha_final: float = 1.0  # both step sizes scale linearly from 1x at iteration 0 to this at the schedule's end
    coherence: bool = False  # temporal-coherence step sizes for the tuple weights (`ntuple.learning.td_step`)
    win_head: bool = False  # also learn the win head (`ntuple.learn_win`) from the same games: model-win.npz
    layout: int = 2  # 2: board and card shapes; 1: board shapes only; 3: layout 2 per game stage (multistage,
    # `ntuple.STAGE_STARTS`); 4: layout 2 and the market tables (`ntuple.MARKET_SHAPES`)
    init: str = "greedy"  # "greedy": the planner's evaluation; "zero": all zero; or an ntuple checkpoint
    # (a smaller layout's grows into this one: card and market tables at zero, copied into every stage;
    # `ntuple.grown_weights`)


@dataclasses.dataclass(frozen=True)
class ExpertSection:
    """[expert]: expert iteration (off at share 0). A share of the network's decisions is taken by a one-turn
    expectimax (`ntuple.search_values`: the `root` best candidates in `worlds` resampled refills, replies at beam
    `reply_beam` / `reply_candidates` plans), which the game plays, and whose value of the chosen afterstate becomes
    its training target (mixed with the lambda-return by `mix`). `targets`: "chosen" (only that afterstate) or "all"
    (TreeStrap-style: the root is the `root` best candidates that are distinct positions, `search.distinct_candidates`,
    and every other root candidate's afterstate is also trained towards its own search mean, in the trainer's own
    process after each iteration: it needs `selfplay.workers = 0`)."""

    share: float = 0.0
    worlds: int = 4
    root: int = 4
    reply_beam: int = 8
    reply_candidates: int = 32
    mix: float = 1.0
    targets: str = "chosen"


#: [expert] targets: which root candidates a search trains.
EXPERT_TARGETS = ("chosen", "all")


#: Every setting with its default (a config's sections override them; unknown keys are refused): the typed sections'.
DEFAULTS: dict[str, dict[str, Any]] = {
    "selfplay": schema_of(SelfPlaySection), "train": schema_of(NTupleTrainSection), "expert": schema_of(ExpertSection),
    "eval": schema_of(EvalSection), "run": schema_of(RunSection)}


def settings(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The validated settings of a config (ConfigError naming a bad section, key or value)."""
    cfg = checked(config, DEFAULTS)
    sp, tr = cfg["selfplay"], cfg["train"]
    for sec, key, low in (("expert", "worlds", 1), ("expert", "root", 2), ("expert", "reply_beam", 1),
                          ("expert", "reply_candidates", 1)):
        v = cfg[sec][key]
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 1024:
            raise ConfigError(f"[{sec}] {key} must be a whole number {low}..1024, got {v!r}")
    check_unit("expert", cfg["expert"], ("share", "mix"))
    ex = cfg["expert"]
    if ex["targets"] not in EXPERT_TARGETS:
        raise ConfigError(f"[expert] targets must be \"chosen\" or \"all\", got {ex['targets']!r}")
    if ex["targets"] == "all" and ex["share"] > 0 and sp["workers"] > 0:
        raise ConfigError(f"[expert] targets = \"all\" needs selfplay.workers = 0 (the root candidates' targets are "
                          f"learnt in the trainer's own process), got workers = {sp['workers']}")
    check_unit("train", tr, ("alpha_final",))
    for key in ("alpha_tuple", "alpha_linear"):
        v = tr[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
            raise ConfigError(f"[train] {key} must be a number >= 0, got {v!r}")
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
            config, start = N.load_checkpoint(tr["init"])
        except (CheckpointError, OSError) as e:
            raise ConfigError(f"[train] init: {e}") from None
        try:  # a smaller layout grows into this one; a layout 3 or 4 network only into its own
            N.grown_weights(start, tr["layout"])
        except ValueError:
            raise ConfigError(f"[train] init: {tr['init']} is a layout-{config['version']} network; layout = "
                              f"{tr['layout']} cannot hold it") from None
    try:
        N.check_play({"beam": sp["beam"], "candidates": sp["candidates"]})
    except ValueError as e:
        raise ConfigError(f"[selfplay] {e}") from None
    return cfg


class NTupleEvaluator(Evaluator):
    """The n-tuple network as an `agents.evaluator.Evaluator` with a fused `decide_rows` (module docstring).
    learns: False for a self-play worker (weights only; no win head, no accumulators: it does not learn)."""

    def __init__(self, cfg: dict[str, dict[str, Any]], learns: bool = True, seed: int = 0):
        self.tr: NTupleTrainSection = typed(NTupleTrainSection, cfg["train"], "train")
        self.ex: ExpertSection = typed(ExpertSection, cfg["expert"], "expert")
        self.beam = int(cfg["selfplay"]["beam"])
        layout = self.tr.layout
        self.w = np.zeros(N.LAYOUT_WEIGHTS[layout], np.float32)
        if not learns:  # a self-play worker's: the weights come from the learner
            pass
        elif self.tr.init == "greedy":
            self.w[:] = N.heuristic_weights(layout)
        elif self.tr.init != "zero":  # a checkpoint: a smaller layout's weights are the start of this one's
            self.w[:] = N.grown_weights(N.load_checkpoint(self.tr.init)[1], layout)
        self.wwin = np.zeros(N.LAYOUT_WEIGHTS[layout], np.float32) if self.tr.win_head and learns else None
        # temporal coherence: each head's (E, A) accumulators, float32 (2, len(w)), in the learner's checkpoint
        self.coh = np.zeros((2, self.w.shape[0]), np.float32) if self.tr.coherence and learns else None
        self.coh_win = None if self.coh is None or self.wwin is None else np.zeros_like(self.coh)
        self.win_loss_ema = float("nan")
        self.expert_share = float(self.ex.share)
        #: targets = "all": the root candidates' (afterstate, mover, search target) rows of this iteration's searches,
        #: learnt by `after_iteration` (so none is pending at a checkpoint)
        self.root_rows: list[tuple[np.ndarray, int, float]] = []

    # ---- valuing ----
    def values(self, afters: np.ndarray, movers: np.ndarray, out: np.ndarray) -> None:
        N.evaluate_batch(afters, movers, self.w, out)

    def decide_rows(self, buf: Buffers, states: np.ndarray, kinds: np.ndarray, beam: int, greedy_beam: int,
                    explore: np.ndarray, pick: np.ndarray) -> None:
        """The fused fast path: `ntuple.decide_rows` over the rows, split over `buf.threads` threads."""
        run_rows(N.decide_rows, states.shape[0], buf.threads, states, kinds, self.w, DEFAULT_WEIGHTS, beam,
                 greedy_beam, explore, pick, buf.plans, buf.lens, buf.pvals, buf.values, buf.tmp, buf.after,
                 buf.seat, buf.pred, buf.chosen, buf.recorded, min_rows=2)  # a row costs milliseconds

    def agent(self, beam: int, candidates: int) -> Any:
        return N.NTupleAgent(weights=self.w, beam=beam, candidates=candidates, name="ntuple")

    # ---- learning ----
    def learn(self, g: Finished, progress: float) -> float:
        """TD(lambda) from one finished game (`ntuple.learn_game`, and `learn_win` for the win head), step sizes
        scaled by the schedule at `progress` (0..1); the mean squared error."""
        a_tuple, a_linear = self._alphas(progress)
        m = g.m
        sse = N.learn_game(self.w, g.afters, g.seats, g.preds, m, g.totals, float(self.tr.lam), a_tuple, a_linear,
                           g.targets, float(self.ex.mix), self.coh)
        if self.wwin is not None:
            share = g.won.astype(np.float64) / max(1, int(g.won.sum()))
            xe = N.learn_win(self.wwin, g.afters, g.seats, m, share, float(self.tr.lam), a_tuple,
                             a_linear, self.coh_win) / max(1, m)
            self.win_loss_ema = xe if math.isnan(self.win_loss_ema) else 0.95 * self.win_loss_ema + 0.05 * xe
        return sse / max(1, m)

    def _alphas(self, progress: float) -> tuple[float, float]:
        """The tuple and linear step sizes at `progress` (0..1) of the schedule."""
        scale = 1.0 + (float(self.tr.alpha_final) - 1.0) * progress
        return float(self.tr.alpha_tuple) * scale, float(self.tr.alpha_linear) * scale

    def after_iteration(self, ctx: Context) -> float:
        """targets = "all": each root candidate recorded by this iteration's searches (`root_rows`) moves towards its
        search target, by `learn_game` with every return a target (mix 1: the target itself; the same step sizes,
        skip of afterstates without a turn left and temporal coherence as the chosen afterstates'). NaN: the loss is
        the games' alone."""
        if self.root_rows:
            k = len(self.root_rows)
            afters = np.stack([a for a, _, _ in self.root_rows])
            seats = np.array([q for _, q, _ in self.root_rows], dtype=np.int64)
            targets = np.array([v for _, _, v in self.root_rows])
            a_tuple, a_linear = self._alphas(ctx.progress)
            N.learn_game(self.w, afters, seats, np.zeros(k), k, np.zeros(4, dtype=np.int64), float(self.tr.lam),
                         a_tuple, a_linear, targets, 1.0, self.coh)
            self.root_rows = []
        return math.nan

    def metrics(self) -> dict[str, Any]:
        """The eval row's own columns: the win head's loss."""
        return {"win_loss": None if math.isnan(self.win_loss_ema) else round(self.win_loss_ema, 4)}

    def meta(self) -> dict[str, Any]:
        return {"win_loss_ema": None if math.isnan(self.win_loss_ema) else self.win_loss_ema}

    def load_meta(self, meta: dict[str, Any]) -> None:
        wl = meta.get("win_loss_ema")
        self.win_loss_ema = float("nan") if wl is None else float(wl)

    # ---- weights ----
    def get_weights(self) -> dict[str, np.ndarray]:
        return {"w": self.w}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.w[...] = weights["w"]

    def arrays(self) -> dict[str, np.ndarray]:
        named = (("w", self.w), ("wwin", self.wwin), ("coh", self.coh), ("coh_win", self.coh_win))
        return {k: v for k, v in named if v is not None}

    def load_arrays(self, arrays: dict[str, np.ndarray], where: str) -> None:
        if self.wwin is not None and "wwin" not in arrays:
            raise ConfigError(f"{where}: has no win head, but this config learns one (train.win_head)")
        if self.coh is not None and "coh" not in arrays:
            raise ConfigError(f"{where}: has no temporal-coherence state, but this config learns with it "
                              "(train.coherence)")
        for name, target in self.arrays().items():
            got = arrays[name]
            if got.shape != target.shape or got.dtype != target.dtype:
                raise ConfigError(f"{where}: {name} has shape {got.shape}, this config needs {target.shape}")
            target[...] = got

    def save(self, path: Path, play: dict[str, int], info: dict[str, Any]) -> None:
        """NAME.npz + NAME.json (`ntuple.save_checkpoint`), and the win head beside it as NAME-win (`ntuple-win`'s)."""
        N.save_checkpoint(path, self.w, play, info)
        if self.wwin is not None:
            N.save_checkpoint(path.with_name(path.name + "-win"), self.wwin, play, info, head="win")

    # ---- expert iteration ----
    def expert_turn(self, ctx: Context, r: int) -> float:
        """Expert iteration: game r's mover (the network) plays the choice of a one-turn expectimax over its `root`
        best candidates in `worlds` worlds (the real state with the chance resampled from the run's generator,
        ctx.rng: a new pouch-draw seed, the draw pile reshuffled), and ctx.buf.after/seat/pred[r] record it as
        `decide_rows` would. Returns the search's value of the afterstate (points still to come), or NaN where there
        was nothing to search (one candidate, the Spirit choice; the row is then played as `decide_rows` would)."""
        ex, b, s = self.ex, ctx.buf, ctx.states[r]
        n = N.candidate_values(s, self.w, DEFAULT_WEIGHTS, self.beam, b.plans[r], b.lens[r], b.pvals[r],
                               b.values[r], b.after[r])
        spirit = n > 0 and A.KEEP_SPIRIT <= b.plans[r, 0, 0] < A.KEEP_SPIRIT + 2
        if n <= 1 or spirit:
            return math.nan
        if ex.targets == "all":  # distinct positions only: a repeat would be trained twice towards one mean
            order = distinct_candidates(s, b.plans[r], b.lens[r], b.values[r, :n], int(ex.root))
        else:
            order = np.argsort(-b.values[r, :n], kind="stable")[: int(ex.root)]
        C, W = len(order), int(ex.worlds)
        plans, lens = b.plans[r, order].copy(), b.lens[r, order].copy()
        worlds = np.repeat(s[None], W, axis=0)
        cards = int(s[S.DECK_COUNT])
        for j in range(W):
            S.set_rng(worlds[j], int(ctx.rng.integers(1, 2**62)))
            deck = S.field(worlds[j], "deck")
            deck[:cards] = ctx.rng.permutation(deck[:cards])
        roots = np.tile(worlds, (C, 1))
        which = np.repeat(np.arange(C, dtype=np.int64), W)
        out = np.zeros(C * W)
        N.search_values(roots, which, plans, lens, self.w, DEFAULT_WEIGHTS, int(ex.reply_beam),
                        int(ex.reply_candidates), out)
        mean = out.reshape(C, W).mean(axis=1)
        c = int(np.argmax(mean))
        p = int(s[S.CURRENT])
        sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
        if ex.targets == "all":  # the other root candidates: their own search means, as points still to come
            for i in range(C):
                if i != c:
                    a = s.copy()
                    play_plan(a, plans[i], lens[i], True)
                    self.root_rows.append((a, p, float(mean[i] - seat_score(a, p, sc))))
        b.after[r] = s
        play_plan(b.after[r], plans[c], lens[c], True)
        play_plan(s, plans[c], lens[c])
        b.seat[r] = p
        out1 = np.zeros(1)
        N.evaluate_batch(b.after[r:r + 1], np.array([p], dtype=np.int64), self.w, out1)
        b.pred[r] = out1[0]
        b.recorded[r] = True
        return float(mean[c] - seat_score(b.after[r], p, sc))


def make(cfg: dict[str, dict[str, Any]], learns: bool = True, seed: int = 0) -> NTupleEvaluator:
    """The framework's `Factory` of the n-tuple evaluator (its start does not depend on the seed)."""
    return NTupleEvaluator(cfg, learns, seed)
