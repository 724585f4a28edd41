"""The evaluator interface of the self-play learners: the base class every evaluator derives from (`Evaluator`: the
methods it must have, and every optional hook with a no-op default), what a hook may read or change of the run
(`Context`), the finished game it learns from (`Finished`), its TD(lambda) targets (`td_targets`), its weights' files
(`save_weights`, `load_weights`) and the agent that plays them (`play_saved`).

Why in agents: an evaluator is a value model of afterstates (what an agent plays) plus learning hooks that are pure
functions of arrays and a `Context`; so the class a user writes plays through the agent registry (tournaments, the
play server, a ladder) without the agents layer knowing the trainer. The loop that plays, records and checkpoints is
`experiments.selfplay.Learner`, which calls every hook directly (no hook is looked up by name, so a misspelled one
cannot be silently skipped: `Evaluator` refuses a method whose name is close to a hook's, or starts like one, when
the class is defined). A learner is registered, to be trained and played, by one line in `agents.learners`.
"""
from __future__ import annotations

import abc
import dataclasses
import difflib
import io
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

from .afterstate_agent import AfterstateAgent, Buffers, decide_generic
from .archive import read_npz
from .td import lambda_returns

#: The `agents.checkpoint` format of an evaluator's weights saved by `save_weights`, and their largest size read.
WEIGHTS_FORMAT = "selfplay-evaluator"
MAX_WEIGHTS_BYTES = 1 << 30


class Finished(NamedTuple):
    """A finished game, as `Evaluator.learn` reads it: its recorded afterstates afters[:m] (int32, STATE_SIZE wide),
    their movers, the predictions (remaining points) made for them at play time, the expert targets (NaN: none),
    every seat's final total and who won (int64 (4,))."""

    afters: np.ndarray
    seats: np.ndarray
    preds: np.ndarray
    targets: np.ndarray
    m: int
    totals: np.ndarray
    won: np.ndarray


@dataclasses.dataclass
class Context:
    """What a hook may read or change of the run, and nothing else. rng: the run's one generator (checkpointed with
    it: what a hook draws is part of the run); states: the games in play (int32 (G, STATE_SIZE)); buf: this turn's
    rows (`Buffers`: a row's recorded afterstate, mover and prediction); iteration and progress (iteration /
    train.iterations, at most 1: what step sizes scale by); threads: how many the hook may use; seed: the run's."""

    rng: np.random.Generator
    states: np.ndarray
    buf: Buffers
    iteration: int
    progress: float
    threads: int
    seed: int


#: The optional hooks, each with a no-op default in `Evaluator`.
HOOKS = ("decide_rows", "after_iteration", "expert_turn", "agent", "extra_evaluation", "metrics", "meta",
         "load_meta", "save")
#: What every evaluator must define.
REQUIRED = ("values", "learn", "get_weights", "set_weights", "arrays", "load_arrays")
#: Name beginnings that only a hook may have (a method so named that is not one is a misspelled hook).
_HOOK_PREFIXES = ("after_", "before_", "on_", "decide_", "expert_", "extra_", "load_", "meta", "metric")


class Evaluator(abc.ABC):
    """What a self-play learner learns: a value of afterstates for their movers. The framework plays, records and
    checkpoints; the evaluator values, learns and saves. Its weights travel to the workers as a dict of arrays.

    Built by its maker as `make(cfg, learns, seed)` (the class itself, or a module-level function, so that workers
    can build it): cfg the checked config, learns False for a self-play worker (weights only: they come from the
    learner), seed the run's. A subclass defines the `REQUIRED` methods and any of the `HOOKS`; defining a method
    whose name looks like a hook's but is none is a TypeError when the class is defined. `expert_share` (a share of
    the evaluator's own decisions that `expert_turn` takes) is 0: off."""

    expert_share: float = 0.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        known = set(HOOKS) | set(REQUIRED) | set(dir(Evaluator))
        for name, value in vars(cls).items():
            if name.startswith("_") or name in known or not callable(value):
                continue
            close = difflib.get_close_matches(name, [*HOOKS, *REQUIRED], n=1, cutoff=0.8)
            if close or name.startswith(_HOOK_PREFIXES):
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise TypeError(f"{cls.__name__}.{name} is no evaluator hook{hint}: the hooks are "
                                f"{', '.join(HOOKS)}; name a helper with a leading underscore")

    # ---- required ----
    @abc.abstractmethod
    def values(self, afters: np.ndarray, movers: np.ndarray, out: np.ndarray) -> None:
        """out[i] (float64): the points mover[i] still scores after afterstate afters[i] (int32 (B, STATE_SIZE))."""

    @abc.abstractmethod
    def learn(self, game: Finished, progress: float) -> float:
        """Learn from one finished game (`td_targets` gives TD(lambda) targets) at `progress` (0..1) of the
        schedule; its loss (NaN: none, e.g. an evaluator that only stores the game and learns in `after_iteration`)."""

    @abc.abstractmethod
    def get_weights(self) -> dict[str, np.ndarray]:
        """The weights the workers play with (arrays; copied by the pool)."""

    @abc.abstractmethod
    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Play with these weights (a worker's copy of the learner's)."""

    @abc.abstractmethod
    def arrays(self) -> dict[str, np.ndarray]:
        """The learner-side state a checkpoint holds (weights, optimizer state, ...), by name."""

    @abc.abstractmethod
    def load_arrays(self, arrays: dict[str, np.ndarray], where: str) -> None:
        """Take back `arrays()` from a checkpoint (ConfigError naming `where` and what does not fit)."""

    # ---- optional hooks: every one a no-op here ----
    def decide_rows(self, buf: Buffers, states: np.ndarray, kinds: np.ndarray, beam: int, greedy_beam: int,
                    explore: np.ndarray, pick: np.ndarray) -> None:
        """One whole turn in every unfinished game, written to `buf`: by default `decide_generic` (plans, then ONE
        `values` call for every candidate of every game). An evaluator may fuse planning and valuing (the n-tuple
        network's numba kernel), playing the same games faster."""
        decide_generic(self, buf, states, kinds, beam, greedy_beam, explore, pick)

    def after_iteration(self, ctx: Context) -> float:
        """After each iteration's finished games were learnt (an evaluator that learns in batches: `learn` buffers,
        this trains); its loss, NaN: none."""
        return math.nan

    def expert_turn(self, ctx: Context, r: int) -> float:
        """With `expert_share` > 0: play game r's turn by a search (recording its afterstate in ctx.buf as
        `decide_rows` would) and return the search's value of it (the afterstate's target), or NaN where nothing was
        searched (the row is then played as `decide_rows` would)."""
        return math.nan

    def agent(self, beam: int, candidates: int) -> Any:
        """The agent the periodic evaluation plays (by default `AfterstateAgent` of this evaluator's `values`)."""
        return AfterstateAgent(self, beam, candidates, name="evaluator")

    def extra_evaluation(self, ctx: Context) -> dict[str, float]:
        """Columns of the evaluation row beside `vs_greedy`'s, at ctx.iteration (e.g. a match against another
        agent every so many iterations); drawing nothing from ctx.rng, so the run does not depend on it."""
        return {}

    def metrics(self) -> dict[str, Any]:
        """The evaluation row's own columns (plain values)."""
        return {}

    def meta(self) -> dict[str, Any]:
        """Plain values the checkpoint's JSON record keeps beside `arrays()`."""
        return {}

    def load_meta(self, meta: dict[str, Any]) -> None:
        """Take back `meta()` from a checkpoint's record."""

    def save(self, path: Path, play: dict[str, int], info: dict[str, Any]) -> None:
        """The agent's checkpoint at `path` (weights + JSON sidecar, `agents.checkpoint`), which its agent spec
        loads. By default `get_weights()` by `save_weights`, with how it plays (`play`) and the run's checked config
        (info["config"]), from which `play_saved` builds it again."""
        save_weights(path, self.get_weights(), {"play": play, "settings": info.get("config")}, info)


def td_targets(game: Finished, lam: float) -> np.ndarray:
    """TD(lambda) targets (remaining points) of a finished game's afterstates: for each seat's afterstates in order,
    the points it gained to its next afterstate plus lam x that one's target + (1 - lam) x its prediction; the last
    one's is the final total minus its total there."""
    m = int(game.m)
    out = np.zeros(m)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    own = np.array([seat_score(game.afters[i], int(game.seats[i]), sc) for i in range(m)], dtype=np.float64)
    lambda_returns(np.ascontiguousarray(game.seats[:m], dtype=np.int64), m, own,
                   np.asarray(game.preds[:m], dtype=np.float64), np.asarray(game.totals, dtype=np.float64),
                   1.0 - lam, lam, np.full(m, np.nan), 0.0, out)
    return out


def save_weights(path: str | Path, arrays: dict[str, np.ndarray], config: dict[str, Any],
                 training: dict[str, Any] | None = None) -> Path:
    """An evaluator's weights as NAME.npz + NAME.json (`agents.checkpoint`'s sidecar: SHA-256, shapes, `config`,
    how it was trained; atomic; no pickle). Returns the .npz's path."""
    from .checkpoint import write_checkpoint

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    shapes = {k: list(v.shape) for k, v in arrays.items()}
    return write_checkpoint(Path(path).with_suffix(".npz"), buf.getvalue(), WEIGHTS_FORMAT, config, shapes, training)


def load_weights(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(config, arrays) of a checkpoint `save_weights` wrote, its SHA-256 checked (CheckpointError naming it)."""
    from .checkpoint import read_checkpoint

    ck = read_checkpoint(path, ".npz", WEIGHTS_FORMAT, "an evaluator's weights", MAX_WEIGHTS_BYTES)
    return ck.config, dict(read_npz(ck.data, MAX_WEIGHTS_BYTES, ck.weights_path))


def play_saved(make: Any, path: str | Path, seed: int = 0, name: str = "") -> Any:
    """The agent of an evaluator's weights saved by the default `Evaluator.save` (NAME.npz + NAME.json): its maker
    `make(settings, False, seed)` (a self-play worker's: weights only) given the saved config, the saved weights set,
    playing as its `agent` hook says at the saved beam and candidates, named `name`. CheckpointError naming a file
    that is not one; ValueError for weights saved without the config to rebuild them."""
    config, arrays = load_weights(path)
    if not isinstance(config, dict) or not isinstance(config.get("settings"), dict) \
            or not isinstance(config.get("play"), dict):
        raise ValueError(f"{path}: saved without the run's settings and play (not by Evaluator.save's default)")
    evaluator = make(config["settings"], False, int(seed))
    evaluator.set_weights(arrays)
    play = config["play"]
    agent = evaluator.agent(int(play["beam"]), int(play["candidates"]))
    if name:
        agent.name = name
    return agent


__all__ = ["HOOKS", "MAX_WEIGHTS_BYTES", "REQUIRED", "WEIGHTS_FORMAT", "AfterstateAgent", "Buffers", "Context",
           "Evaluator", "Finished", "decide_generic", "load_weights", "play_saved", "save_weights", "td_targets"]
