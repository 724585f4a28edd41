"""The n-tuple agents (`learned`, `learned-win`) and the network's files: weight vectors, play settings,
checkpoints (NAME.npz + NAME.json with its SHA-256). The kernels they call are in kernels.py."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import run_rows

from ..afterstate import FEATURE_VERSION
from ..archive import read_npz
from ..base import PlanAgent
from ..checkpoint import (
    CheckpointError,
    read_checkpoint,
    write_checkpoint,
)
from ..greedy import DEFAULT_WEIGHTS, MAX_BEAM, MAX_PLAN, NUM_TERMS
from ..policy import PlanRows
from .kernels import (
    _TERMS_AT,
    CARD_SHAPES,
    LAYOUT_WEIGHTS,
    LINEAR_INDEX,
    NTUPLE_VERSION,
    SHAPES,
    STAGE_STARTS,
    STAGE_WEIGHTS,
    candidate_values,
    candidate_wins,
    choose_rows,
)
from .market import MARKET_SHAPES

# ------------------------------------------------------------------------------------------------ weights

def heuristic_weights(layout: int = NTUPLE_VERSION) -> np.ndarray:
    """A weight vector (of `layout`) that plays as the greedy planner evaluates: zero tuples, and the linear weights of
    the mover's potential terms (features / 10) set to 10 x `greedy.DEFAULT_WEIGHTS`, so total + remaining =
    `greedy.heuristic_value` (where the mover still has a turn)."""
    layout = check_layout(layout)
    w = np.zeros(LAYOUT_WEIGHTS[1], dtype=np.float32)  # the linear part leads every layout's (and stage's) block
    pos = {int(f): j for j, f in enumerate(LINEAR_INDEX)}
    for k in range(NUM_TERMS):
        w[pos[_TERMS_AT + k]] = 10.0 * DEFAULT_WEIGHTS[k]
    return w if layout == 1 else grown_weights(w, layout)


def grown_weights(start: np.ndarray, layout: int) -> np.ndarray:
    """A network of a smaller layout as the start of a `layout` one: its weights at the beginning of each stage's
    block (layout 3) or of the vector; the tables it lacks (cards, market, other stages' beyond its own) at zero."""
    w = np.zeros(LAYOUT_WEIGHTS[check_layout(layout)], dtype=np.float32)
    start = np.asarray(start, dtype=np.float32)
    if start.shape[0] > w.shape[0] or (start.shape[0] > STAGE_WEIGHTS and start.shape[0] != w.shape[0]):
        raise ValueError(f"a layout-{layout_of(start)} network does not fit layout {layout}")
    if start.shape[0] == w.shape[0]:
        w[:] = start
        return w
    for lo in range(0, w.shape[0] if layout == 3 else 1, STAGE_WEIGHTS):
        w[lo: lo + start.shape[0]] = start
    return w


#: The play settings a checkpoint records and the agent uses unless told otherwise.
DEFAULT_PLAY = {"beam": 24, "candidates": 128}
#: The shipped checkpoint (if any): agents/checkpoints/learned.npz + .json.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "learned.npz"
#: The shipped win head (if any) that `learned-win` adds to the shipped points head.
DEFAULT_WIN_CHECKPOINT = DEFAULT_CHECKPOINT.with_name("learned-win.npz")
#: What a checkpoint's weights predict: "points" (still to come; `remaining`) or "win" (`win_logit`).
HEADS = ("points", "win")
MAX_CANDIDATES = 1024
_MAX_BYTES = 1 << 28


def check_layout(layout: Any) -> int:
    """A known layout version (ValueError otherwise)."""
    if isinstance(layout, bool) or layout not in LAYOUT_WEIGHTS:
        raise ValueError(f"layout must be one of {sorted(LAYOUT_WEIGHTS)}, got {layout!r}")
    return int(layout)


def layout_of(w: np.ndarray) -> int:
    """The layout of a weight vector, from its length (ValueError naming the lengths a layout has)."""
    for layout, n in LAYOUT_WEIGHTS.items():
        if w.shape == (n,):
            return layout
    raise ValueError(f"weights must have shape (n,) with n one of {sorted(LAYOUT_WEIGHTS.values())} (layouts "
                     f"{sorted(LAYOUT_WEIGHTS)}), got {w.shape}")


def network_config(play: dict[str, Any] | None = None, head: str = "points",
                   layout: int = NTUPLE_VERSION) -> dict[str, Any]:
    """The config a checkpoint records: layout (version, sizes, shapes), play settings, and (for a win head) its
    head."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    layout = check_layout(layout)
    shapes = SHAPES + (CARD_SHAPES if layout >= 2 else ()) + (MARKET_SHAPES if layout == 4 else ())
    stages = {"stage_starts": [int(x) for x in STAGE_STARTS]} if layout == 3 else {}
    return {"version": layout, "feature_version": FEATURE_VERSION, "num_weights": LAYOUT_WEIGHTS[layout],
            "shapes": list(shapes), **stages, "play": check_play({**DEFAULT_PLAY, **(play or {})}),
            **({"head": head} if head != "points" else {})}


def check_play(play: Any) -> dict[str, int]:
    """Validated play settings {beam, candidates} (ValueError naming the setting)."""
    if not isinstance(play, dict) or set(play) != set(DEFAULT_PLAY):
        raise ValueError(f"play must be exactly {sorted(DEFAULT_PLAY)}, got {play!r}")
    for key, top in (("beam", MAX_BEAM), ("candidates", MAX_CANDIDATES)):
        v = play[key]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
            raise ValueError(f"play.{key} must be a whole number 1..{top}, got {v!r}")
    return {k: int(v) for k, v in play.items()}


def weights_bytes(w: np.ndarray) -> bytes:
    """The `.npz` bytes of a weight vector (one array `weights`, float32; no pickle)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, weights=np.asarray(w, dtype=np.float32))
    return buf.getvalue()


FORMAT = "ntuple"
#: Largest sidecar an n-tuple checkpoint has (its config is a few hundred bytes).
MAX_SIDECAR_BYTES = 1 << 16


def save_checkpoint(path: str | Path, w: np.ndarray, play: dict[str, Any] | None = None,
                    training: dict[str, Any] | None = None, head: str = "points") -> Path:
    """NAME.npz (the weights) then NAME.json (the one sidecar schema of `agents.checkpoint`: config, shapes,
    SHA-256 of NAME.npz, how it was trained), each atomically."""
    w = np.asarray(w)
    return write_checkpoint(Path(path).with_suffix(".npz"), weights_bytes(w), FORMAT,
                            network_config(play, head, layout_of(w)), {"weights": [int(w.shape[0])]}, training)


def _legacy_sidecar(doc: dict[str, Any], meta: Path) -> dict[str, Any]:
    """A sidecar written before the one schema ({ntuple, sha256, training}: the shipped learned.json) as the
    schema's fields."""
    if set(doc) - {"ntuple", "sha256", "training"} or "ntuple" not in doc:
        raise CheckpointError(f"{meta}: not an n-tuple checkpoint config (entries must be ntuple, sha256, training)")
    return {"format": FORMAT, "version": 1, "config": doc["ntuple"], "sha256": doc.get("sha256"),
            "training": doc.get("training", {}), "shapes": {}}


def _declared_fits(cfg: Any, shapes: dict[str, list[int]], size: int) -> None:
    """Before the weights are read: the config is a layout this code has, and any declared shape is its length."""
    version = cfg.get("version") if isinstance(cfg, dict) else None
    version = version if type(version) is int else None  # exactly an int: true is not layout 1
    want_layout = {k: v for k, v in network_config(layout=version if version in LAYOUT_WEIGHTS else NTUPLE_VERSION)
                   .items() if k != "play"}
    if not isinstance(cfg, dict) or {k: cfg.get(k) for k in want_layout} != want_layout:
        got = {k: cfg.get(k) for k in want_layout} if isinstance(cfg, dict) else cfg
        raise ValueError(f"its layout {got!r} is not this code's {want_layout!r}: retrain "
                         f"(python -m experiments.train learned)")
    if shapes and shapes != {"weights": [LAYOUT_WEIGHTS[version]]}:
        raise ValueError(f"shapes {str(shapes)[:80]} are not this layout's {{'weights': [{LAYOUT_WEIGHTS[version]}]}}")


def load_checkpoint(path: str | Path) -> tuple[dict[str, Any], np.ndarray]:
    """(config, float32 weights) from NAME.npz + NAME.json, checked before use (`agents.checkpoint.read_checkpoint`):
    the JSON's layout matches this code, NAME.npz has the SHA-256 the JSON records, its members declare no more
    bytes than the layout's weights (no zip bomb is inflated), and it is an npz of exactly one finite float32 array
    `weights` of its layout's length, read with allow_pickle=False. Anything else: `CheckpointError` naming the file.
    """
    ck = read_checkpoint(path, ".npz", FORMAT, "an n-tuple checkpoint", _MAX_BYTES, legacy=_legacy_sidecar,
                         max_sidecar_bytes=MAX_SIDECAR_BYTES, before_read=_declared_fits)
    p, data, cfg = ck.weights_path, ck.data, ck.config
    version = cfg["version"]
    try:
        play = check_play(cfg.get("play"))
    except ValueError as e:
        raise CheckpointError(f"{ck.sidecar_path}: {e}") from None
    head = cfg.get("head", "points")
    if head not in HEADS:
        raise CheckpointError(f"{ck.sidecar_path}: head must be one of {HEADS}, got {str(head)[:40]!r}")
    n = LAYOUT_WEIGHTS[version]
    z = read_npz(data, 4 * n + 4096, p)  # the one array's bytes and its .npy header, checked before inflating
    names = sorted(z.files)
    w = z["weights"] if names == ["weights"] else None
    if w is None:
        raise CheckpointError(f"{p}: must hold exactly one array 'weights', got {names[:5]}")
    if w.dtype != np.float32 or w.shape != (n,) or not np.isfinite(w).all():
        raise CheckpointError(f"{p}: 'weights' must be {n} finite float32 numbers, got {w.dtype} "
                              f"{w.shape}")
    return ({**network_config(play, head, version), "head": head, "training": ck.training},
            np.ascontiguousarray(w))


class NTupleAgent(PlanAgent):
    """Plays the candidate whole-turn plan (`greedy.plan_candidates`, `candidates` plans at beam `beam` per central
    space) whose afterstate is worth most to it: own total there + the n-tuple network's predicted remaining points.

    path: an ntuple checkpoint (NAME.npz + NAME.json), default the shipped one; weights: a float32 vector instead
    (then beam / candidates default to DEFAULT_PLAY). Reads only public information (afterstate features and the
    planner never look at hidden order), so its choice is the same on every determinized copy.
    """

    def __init__(self, path: str | Path | None = None, beam: int | None = None, candidates: int | None = None,
                 seed: int = 0, name: str | None = None, weights: np.ndarray | None = None):
        if weights is None:
            where = DEFAULT_CHECKPOINT if path is None else path
            config, weights = load_checkpoint(where)
            if config["head"] != "points":
                raise CheckpointError(f"{where}: is a {config['head']} head, not the points head `learned` / "
                                      f"`learned` plays (a win head goes with learned-win)")
            play = config["play"]
        else:
            weights = np.ascontiguousarray(weights, dtype=np.float32)
            layout_of(weights)
            play = dict(DEFAULT_PLAY)
        play = check_play({**play, **{k: v for k, v in (("beam", beam), ("candidates", candidates)) if v is not None}})
        self.weights = weights
        self.beam = play["beam"]
        self.candidates = play["candidates"]
        self.seed = int(seed)
        self.name = name or "learned"
        self._plans = np.zeros((self.candidates, MAX_PLAN), dtype=np.int64)
        self._lens = np.zeros(self.candidates, dtype=np.int64)
        self._pvals = np.zeros(self.candidates, dtype=np.float64)
        self._values = np.zeros(self.candidates, dtype=np.float64)
        self._after = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
        self._batch: PlanRows | None = None
        self._rows: tuple[np.ndarray, ...] | None = None
        self.last_values: np.ndarray = np.zeros(0)
        self.reset()

    def value_candidates(self, game: Any) -> int:
        """How many candidate plans the mover of `game` (a private copy) has; plan k is self._plans[k, :self._lens[k]],
        its value self._values[k] (until the next call). `rank` as arrays: the search reads its root from them
        without a Python list per candidate (1,024 lists cost it ~0.7 ms a decision)."""
        return candidate_values(game.state.copy(), self.weights, DEFAULT_WEIGHTS, self.beam, self._plans, self._lens,
                                self._pvals, self._values, self._after)

    def candidate_plan(self, k: int) -> list[int]:
        """Candidate k of the last `value_candidates` as a list of micro-actions."""
        return self._plans[k, : self._lens[k]].tolist()

    def rank(self, game: Any) -> tuple[list[list[int]], np.ndarray]:
        """The candidate plans for the mover of `game` (a private copy) and the value of each for it."""
        n = self.value_candidates(game)
        return [self.candidate_plan(k) for k in range(n)], self._values[:n].copy()

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        plans, values = self.rank(game)
        self.last_values = values
        return plans[int(np.argmax(values))] if plans else []

    def reset_batch(self, seeds: Any) -> None:
        """Plan buffers for a batched match of len(seeds) games (the agent draws nothing: seeds are unused)."""
        self.reset()
        self._batch = PlanRows(len(seeds), MAX_PLAN)
        self._rows = None

    def act_batch(self, batch: Any) -> np.ndarray:
        """Every game's move: the games whose turn starts are planned and their candidates valued in one threaded
        numba call (`choose_rows`, the kernel `rank` uses), and each plays its best plan over its turn's
        micro-actions (`PlanRows`); the same moves as `act`."""
        if self._batch is None:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        rows = np.asarray(batch.rows, dtype=np.int64)
        stale = self._batch.stale(batch.states, rows)
        if stale.size:
            m, k = stale.size, self.candidates
            sub = np.ascontiguousarray(batch.states[stale])
            if self._rows is None or self._rows[0].shape[0] < m:  # kept between calls: grown, never shrunk
                self._rows = (np.zeros((m, k, MAX_PLAN), dtype=np.int64), np.zeros((m, k), dtype=np.int64),
                              np.zeros((m, k)), np.zeros((m, k)), np.zeros((m, S.STATE_SIZE), dtype=S.STATE_DTYPE),
                              np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64))
            plans, lens, pvals, values, after, counts, choice = self._rows
            run_rows(choose_rows, m, batch.threads, sub, self.weights, DEFAULT_WEIGHTS, self.beam, plans, lens, pvals,
                     values, after, counts, choice, min_rows=2)  # a row costs milliseconds
            j = np.arange(m)
            c = choice[:m]
            self._batch.store(sub, rows[stale], plans[j, c], np.where(counts[:m] > 0, lens[j, c], 0))
        return self._batch.next(rows)


class NTupleWinAgent(NTupleAgent):
    """`ntuple` with the win head (issue 30's targets that match play): each candidate is worth own total +
    remaining points (the points head) + `win_weight` x the win head's probability that the mover wins from its
    afterstate. The points head is `path` (default the shipped one), the win head `win_path` (default
    `DEFAULT_WIN_CHECKPOINT`) or the vector `win_weights`. Public information only, as `ntuple`."""

    def __init__(self, path: str | Path | None = None, win_path: str | Path | None = None, win_weight: float = 20.0,
                 win_weights: np.ndarray | None = None, name: str | None = None, **kwargs: Any):
        if isinstance(win_weight, bool) or not isinstance(win_weight, (int, float)) or not 0 <= win_weight <= 1000:
            raise ValueError(f"win_weight must be a number 0..1000 (points per unit of win probability), "
                             f"got {win_weight!r}")
        super().__init__(path, name=name, **kwargs)
        if win_weights is None:
            where = DEFAULT_WIN_CHECKPOINT if win_path is None else win_path
            config, win_weights = load_checkpoint(where)
            if config["head"] != "win":
                raise CheckpointError(f"{where}: is a {config['head']} head, not a win head")
        win_weights = np.ascontiguousarray(win_weights, dtype=np.float32)
        try:
            layout_of(win_weights)
        except ValueError as e:
            raise ValueError(f"win_{e}") from None
        self.win = win_weights
        self.win_weight = float(win_weight)
        self._wins = np.zeros(self.candidates, dtype=np.float64)
        self.name = name or f"learned-win:{self.win_weight:g}"

    # The win head re-ranks per view: the base class's loop over `act` (not `choose_rows`' threads).
    reset_batch = PlanAgent.reset_batch
    act_batch = PlanAgent.act_batch

    def rank(self, game: Any) -> tuple[list[list[int]], np.ndarray]:
        plans, values = super().rank(game)
        n = len(plans)
        if n and not (A.KEEP_SPIRIT <= plans[0][0] < A.KEEP_SPIRIT + 2):
            candidate_wins(game.state.copy(), self._plans, self._lens, n, self.win, self._wins)
            values = values + self.win_weight * self._wins[:n]
        return plans, values

