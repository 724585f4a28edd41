"""The MLP agents: an afterstate value network over whole-turn plans, alone (`mlp`) or inside a search
(`mlp-search`). The first learned agent, kept as a baseline: the spec `learned` now plays the n-tuple network
(agents/ntuple/), which beats it face to face (benchmarks/STRENGTH.md).

Why this design (TD-Gammon's, for a game whose turns hold no chance): the greedy planner proposes whole-turn plans
by its hand-written heuristic; each plan leads to an exact afterstate (`agents.afterstate`), and a small network that
has learned, from self-play outcomes alone, what an afterstate is worth picks among them. How the candidates are
proposed is the checkpoint's `play` entry: the shipped network ranks `greedy.plan_candidates`' 64 plans (a beam of 96
per central space, covering every space and card choice), whose first plan is the heuristic's own choice
(`greedy:96:spaces`), so any gain over that agent is the network's (benchmarks/STRENGTH.md compares the two).

The network (`ValueNet`, float32): an MLP over `NUM_FEATURES` public features with ReLU hidden layers and 8
outputs: the predicted final totals of the 4 relative seats / 100 (seat 0 = the player who just moved) and 4
logits of who wins. A candidate's value for its mover (`decision_values`) = `win` x P(win) + `margin` x (own - best
other) / 100 + `score` x own / 100 (solo: own / 100 only), the outputs optionally averaged over the boards' mirror
images (`mirrored_outputs`). The weights are in the checkpoint's config: `value` (what self-play trained with, and
what the search plays for) and `play.value` (what `mlp` plays for).

Checkpoints are a weights-only file (`NAME.pt`: `torch.save` of a state dict of tensors, loaded with
`torch.load(..., weights_only=True)`, which never unpickles code) plus `NAME.json` (architecture, feature
version, value weights, play settings, how it was trained, and the SHA-256 of `NAME.pt`). `load_checkpoint` checks
the pair before anything plays with it (the hash, then the weights' names, shapes and dtypes against the JSON's
architecture) and refuses anything else with one `CheckpointError` naming the file. Nothing shipped is a pickle.
Inference here runs in numpy (weights converted once), so playing never depends on torch's threads; torch is only
needed to load the file.
"""
from __future__ import annotations

import io
import math
import pickle  # noqa: S403 (only to recognise torch.load's refusal; nothing is unpickled)
import time
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from harmonies_env import state as S
from harmonies_env.batch import run_rows
from harmonies_env.firstrun import install_hint
from harmonies_env.geometry import NUM_SYMMETRIES

from ..afterstate import FEATURE_VERSION, MIRRORS, NUM_FEATURES, candidate_rows, spirit_choice
from ..archive import read_torch
from ..base import PlanAgent, private_copy
from ..checkpoint import CheckpointError, read_checkpoint, weights_sha256, write_checkpoint
from ..greedy import MAX_BEAM, MAX_PLAN, WIDE_BEAM, plan_rows, planner_settings
from ..policy import PlanRows
from .kernels import search_leaves

#: The checkpoint shipped with the package (2 players, Side A, no Spirits, trained from scratch by self-play).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "mlp.pt"
#: Outputs of the network: 4 predicted final totals / 100 (relative seats), then 4 win logits.
NUM_OUTPUTS = 8
#: Most candidates an agent may rank per decision (each holds a NUM_FEATURES float32 row).
MAX_CANDIDATES = 1024
#: Default architecture and decision weights of a new network.
DEFAULT_CONFIG: dict[str, Any] = {
    "feature_version": FEATURE_VERSION,
    "num_features": NUM_FEATURES,
    "hidden": [256, 256],
    "value": {"win": 1.0, "margin": 0.5, "score": 0.25},
    # how the agents propose candidates to the network: `candidates` plans of the planner at `beam` (per central
    # space when `diverse`: `greedy.plan_candidates`; else the plain beam's best, `greedy.plan_turn`). A checkpoint
    # saved before this entry existed played the plain beam 800's best 32.
    # symmetries: the network's outputs averaged over this many mirror images of the boards (1 = none; 4 = each of
    # the board's 4 symmetries applied to every seat's board, `mirrored_outputs`); value: the agents' decision weights
    # (None: `value` above, which is also what self-play used in training).
    "play": {"beam": WIDE_BEAM, "candidates": 32, "diverse": False, "symmetries": 1, "value": None},
}
#: Top-level entries of a checkpoint's NAME.json: `network` (the config above), `sha256` (of NAME.pt, required),
#: `training` and `decision` (how it was trained and chosen: free-form, not read).
CHECKPOINT_KEYS = ("network", "sha256", "training", "decision")
#: The MLP's format name in `agents.checkpoint`'s sidecar.
FORMAT = "mlp"
#: Largest NAME.json / NAME.pt read (bytes): anything bigger is not a checkpoint of this network.
MAX_CONFIG_BYTES = 1 << 20
MAX_WEIGHTS_BYTES = 1 << 30
#: Most hidden layers a network config may declare (checked before its weights are read).
MAX_LAYERS = 16


def torch_net(config: dict[str, Any]):
    """The network as a torch module (training): Linear+ReLU per hidden width, then Linear to NUM_OUTPUTS."""
    import torch.nn as nn

    layers: list[Any] = []
    width = int(config["num_features"])
    for h in config["hidden"]:
        layers += [nn.Linear(width, int(h)), nn.ReLU()]
        width = int(h)
    layers.append(nn.Linear(width, NUM_OUTPUTS))
    return nn.Sequential(*layers)


def check_config(config: dict[str, Any]) -> dict[str, Any]:
    """A validated copy of a network config (ValueError naming what is wrong); missing entries take
    DEFAULT_CONFIG's (an older checkpoint may lack `play`), unknown ones are refused."""
    if not isinstance(config, Mapping):
        raise ValueError(f"the network config must be an object {{{', '.join(DEFAULT_CONFIG)}}}, got "
                         f"{type(config).__name__}")
    unknown = [str(k) for k in config if k not in DEFAULT_CONFIG]
    if unknown:
        raise ValueError(f"the network config has unknown entries {sorted(unknown)[:5]} (known: "
                         f"{', '.join(DEFAULT_CONFIG)})")
    cfg = {**DEFAULT_CONFIG, **config}
    if cfg["feature_version"] != FEATURE_VERSION:
        raise ValueError(f"checkpoint features are version {cfg['feature_version']}, this code computes version "
                         f"{FEATURE_VERSION}: retrain (python -m experiments.train mlp)")
    if cfg["num_features"] != NUM_FEATURES:
        raise ValueError(f"checkpoint expects {cfg['num_features']} features, this code computes {NUM_FEATURES}")
    hidden = cfg["hidden"]
    if not (isinstance(hidden, list) and hidden and all(isinstance(h, int) and 0 < h <= 4096 for h in hidden)):
        raise ValueError(f"hidden must be a list of layer widths 1..4096, got {hidden!r}")
    _check_value(cfg["value"], "value")
    play = {**DEFAULT_CONFIG["play"], **cfg["play"]} if isinstance(cfg["play"], dict) else cfg["play"]
    problem = _play_problem(play)
    if problem:
        raise ValueError(f"play must be {{'beam': int 1..{MAX_BEAM}, 'candidates': int 1..{MAX_CANDIDATES}, "
                         f"'diverse': true/false, 'symmetries': 1 or {NUM_SYMMETRIES}, 'value': weights or null}} "
                         f"({problem}), got {cfg['play']!r}")
    cfg["play"] = play
    return cfg


def _play_problem(play: Any) -> str | None:
    """What is wrong with a complete set of `play` settings (the checkpoint's, or an agent's after its overrides),
    naming the setting; None when they are valid. One checker for both, so they cannot drift apart."""
    if not isinstance(play, dict) or set(play) != set(DEFAULT_CONFIG["play"]):
        return f"settings must be exactly {sorted(DEFAULT_CONFIG['play'])}"
    if not (_whole(play["beam"]) and 1 <= play["beam"] <= MAX_BEAM):
        return f"beam must be a whole number 1..{MAX_BEAM}, got {play['beam']!r}"
    if not (_whole(play["candidates"]) and 1 <= play["candidates"] <= MAX_CANDIDATES):
        return f"candidates must be a whole number 1..{MAX_CANDIDATES}, got {play['candidates']!r}"
    if not isinstance(play["diverse"], (bool, np.bool_)):
        return f"diverse must be true or false, got {play['diverse']!r}"
    if not (_whole(play["symmetries"]) and play["symmetries"] in (1, NUM_SYMMETRIES)):
        return f"symmetries must be 1 or {NUM_SYMMETRIES}, got {play['symmetries']!r}"
    if play["value"] is not None:
        try:
            _check_value(play["value"], "value")
        except ValueError as e:
            return str(e)
    return None


def play_settings(play: dict[str, Any], **given: Any) -> dict[str, Any]:
    """A checkpoint's validated `play` settings with the given overrides (None keeps the checkpoint's): what
    `MLPAgent` and `experiments.eval_mlp` play with (ValueError naming the setting that is wrong)."""
    out = {**play, **{k: v for k, v in given.items() if v is not None}}
    problem = _play_problem(out)
    if problem:
        raise ValueError(problem)
    return out


def play_value(config: dict[str, Any]) -> dict[str, float]:
    """The decision weights `mlp` plays a checkpoint with (its validated config): `play.value`, else the `value`
    its self-play trained with. One rule for `MLPAgent` and `experiments.eval_mlp`."""
    play = config["play"]
    return play["value"] if play["value"] is not None else config["value"]


def _check_value(v: Any, name: str) -> None:
    if not (isinstance(v, dict) and set(v) == {"win", "margin", "score"}
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v.values())):
        raise ValueError(f"{name} must be {{'win', 'margin', 'score'}} finite weights, got {v!r}")


def _whole(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def state_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The state dict a (validated) config's network has, name -> shape: `torch_net`'s Linear layers, which sit at
    even indices of its Sequential (weight (out, in), bias (out,))."""
    widths = [int(config["num_features"]), *map(int, config["hidden"]), NUM_OUTPUTS]
    out: dict[str, tuple[int, ...]] = {}
    for j, (i, o) in enumerate(zip(widths[:-1], widths[1:])):
        out[f"{2 * j}.weight"] = (o, i)
        out[f"{2 * j}.bias"] = (o,)
    return out


def _state_problem(state: Any, shapes: dict[str, tuple[int, ...]], tensor_type: Any = None) -> str | None:
    """What is wrong with a state dict for a network of these `shapes` (None: nothing), naming the entry: the names
    exactly `shapes`' keys; each value a numpy array or torch tensor (with tensor_type given: only a dense float32
    tensor of that type, as a checkpoint file must hold) of that shape, finite."""
    if not isinstance(state, Mapping):
        return f"the weights must be a state dict (name -> tensor), got {type(state).__name__}"
    if set(state) != set(shapes):
        missing = sorted(set(shapes) - set(state))
        unknown = sorted(str(k) for k in set(state) - set(shapes))
        return (f"the state dict must hold exactly {sorted(shapes)} for this config (missing {missing[:5]}, "
                f"unknown {unknown[:5]})")
    for name, shape in shapes.items():
        v = state[name]
        if tensor_type is not None:
            if not isinstance(v, tensor_type) or str(v.layout) != "torch.strided":
                return f"{name!r} must be a (dense) tensor, got {type(v).__name__}"
            if str(v.dtype) != "torch.float32":
                return f"{name!r} must be float32, got {str(v.dtype).replace('torch.', '')}"
        elif not (isinstance(v, np.ndarray) or hasattr(v, "detach")):
            return f"{name!r} must be a numpy array or a torch tensor, got {type(v).__name__}"
        got = tuple(int(d) for d in v.shape)
        if got != shape:
            return f"{name!r} must have shape {shape} for this config, got {got}"
        a = _numpy(v)
        if not (np.issubdtype(a.dtype, np.floating) and np.isfinite(a).all()):
            return f"{name!r} must hold finite floating-point numbers"
    return None


class ValueNet:
    """The value network for inference, in numpy: weights float32 [(out, in)], biases float32 [(out,)]."""

    def __init__(self, config: dict[str, Any], state_dict: dict[str, Any]):
        self.config = check_config(config)
        shapes = state_shapes(self.config)
        problem = _state_problem(state_dict, shapes)
        if problem:
            raise ValueError(problem)
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []
        for j in range(len(shapes) // 2):
            w = np.asarray(_numpy(state_dict[f"{2 * j}.weight"]), dtype=np.float32)
            b = np.asarray(_numpy(state_dict[f"{2 * j}.bias"]), dtype=np.float32)
            self.weights.append(np.ascontiguousarray(w.T))
            self.biases.append(b)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Outputs float32 (B, NUM_OUTPUTS) for features float32 (B, NUM_FEATURES)."""
        h = np.asarray(x, dtype=np.float32)
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w + b
            if k < last:
                np.maximum(h, 0.0, out=h)
        return h

    @classmethod
    def load(cls, path: str | Path) -> "ValueNet":
        """Load NAME.pt (weights only) and NAME.json beside it, checked by `load_checkpoint` (CheckpointError naming
        the file). No pickle is ever run."""
        config, state = load_checkpoint(path)
        return cls(config, state)


def _numpy(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _declared_fits(config: Any, shapes: dict[str, list[int]], size: int) -> None:
    """Before the weights are read: the config is valid (`check_config`: widths 1..4096), has at most MAX_LAYERS
    hidden layers, its declared shapes (if any) are its layers, and a weights file of `size` bytes can hold them and
    not far more (ValueError naming what does not fit)."""
    cfg = check_config(config)
    if len(cfg["hidden"]) > MAX_LAYERS:
        raise ValueError(f"hidden has {len(cfg['hidden'])} layers, at most {MAX_LAYERS}")
    want = {k: list(v) for k, v in state_shapes(cfg).items()}
    if shapes and shapes != want:
        raise ValueError(f"the declared shapes are not the network config's layers ({want})")
    need = 4 * sum(math.prod(v) for v in want.values())
    if not need <= size <= 2 * need + (1 << 20):
        raise ValueError(f"the network config holds {need:,} bytes of weights, the weights file {size:,}: not this "
                         f"network's weights")


def _legacy_sidecar(doc: dict[str, Any], meta: Path) -> dict[str, Any]:
    """A sidecar written before `agents.checkpoint`'s schema (`{network, sha256, training, decision}`, e.g. the
    shipped mlp.json) as that schema's fields; unknown entries or no `network` are refused by name."""
    if "network" not in doc:
        raise CheckpointError(f"{meta}: not an MLP checkpoint config (no 'network' entry)")
    unknown = [str(k) for k in doc if k not in CHECKPOINT_KEYS]
    if unknown:
        raise CheckpointError(f"{meta}: unknown entries {sorted(unknown)[:5]} (an MLP checkpoint's are "
                              f"{', '.join(CHECKPOINT_KEYS)})")
    training = doc.get("training")
    return {"format": FORMAT, "version": 1, "config": doc["network"], "sha256": doc.get("sha256"),
            "training": {**(training if isinstance(training, dict) else {"training": training}),
                         **({"decision": doc["decision"]} if "decision" in doc else {})}}


def save_checkpoint(path: str | Path, state_dict: dict[str, Any], config: dict[str, Any],
                    training: dict[str, Any] | None = None) -> Path:
    """NAME.pt (`torch.save` of the state dict's tensors, weights only) + NAME.json (`agents.checkpoint`'s sidecar:
    format "mlp", the network config, the tensors' shapes, the SHA-256, `training`), atomically, the weights first.
    Read back by `load_checkpoint`."""
    import torch

    tensors = {k: v.detach().cpu().clone() for k, v in state_dict.items()}
    buf = io.BytesIO()
    torch.save(tensors, buf)
    shapes = {k: list(v.shape) for k, v in tensors.items()}
    return write_checkpoint(Path(path).with_suffix(".pt"), buf.getvalue(), FORMAT, config, shapes, training)


def load_checkpoint(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(validated network config, state dict of float32 tensors) from NAME.pt + NAME.json.

    Checked before anything plays with them, in this order; any failure is a `CheckpointError` (a ValueError) with
    a one-line message naming the file: NAME.json is `agents.checkpoint`'s sidecar of format "mlp" (or the older
    `{network, sha256, training, decision}`; JSON, depth-limited, at most MAX_CONFIG_BYTES) whose config
    `check_config` accepts; NAME.pt is at most MAX_WEIGHTS_BYTES and has the recorded SHA-256 (a damaged, edited or
    mixed-up pair is refused); the shapes the sidecar declares are the config's; it loads with
    `torch.load(weights_only=True)`, which refuses code (pickled objects); it is a state dict of exactly the
    config's layers (`state_shapes`), each a finite float32 tensor of the right shape. FileNotFoundError if either
    file is missing; ImportError if torch is not installed.
    """
    try:
        import torch
    except ImportError:
        raise ImportError(f"the MLP agents load their weights with torch: {install_hint('train')}") from None
    ck = read_checkpoint(path, ".pt", FORMAT, "an MLP checkpoint", MAX_WEIGHTS_BYTES, legacy=_legacy_sidecar,
                         max_sidecar_bytes=MAX_CONFIG_BYTES, before_read=_declared_fits)
    p, data, config = ck.weights_path, ck.data, check_config(ck.config)
    try:
        with warnings.catch_warnings():  # e.g. a pickle protocol note: the refusal below says all there is to say
            warnings.simplefilter("ignore")
            state = read_torch(data, MAX_WEIGHTS_BYTES, p)
    except CheckpointError:
        raise
    except Exception as e:  # the weights-only unpickler refuses code; a damaged file fails to parse
        raise CheckpointError(f"{p}: not a weights-only state dict of tensors ({_load_error(e)})") from None
    problem = _state_problem(state, state_shapes(config), torch.Tensor)
    if problem:
        raise CheckpointError(f"{p}: {problem}")
    return config, dict(state)


def _load_error(e: Exception) -> str:
    """torch.load's refusal in a few words: the weights-only unpickler's reason (its message opens with advice to
    turn weights_only off, which is exactly what must not be done), else the first line."""
    text = str(e)
    if isinstance(e, pickle.UnpicklingError):
        _, found, after = text.partition("WeightsUnpickler error:")
        advice = ("Weights only load failed", "Check the documentation", "Please file an issue", "(1)", "(2)")
        lines = [s.strip() for s in (after if found else text).splitlines()]
        reason = next((s for s in lines if s and not s.startswith(advice)), "not a plain pickle of tensors")
        return f"torch.load(weights_only=True) refused it: {reason.split('. ')[0][:200]}"
    first = (text.strip().splitlines() or [""])[0].split(". ")[0][:200]
    return f"{type(e).__name__}: {first}" if first else f"{type(e).__name__}: the file ends early or is empty"


def mirrored_outputs(net: Any, x: np.ndarray, side_code: int, symmetries: int) -> np.ndarray:
    """The network's outputs for feature rows x (float32 (B, NUM_FEATURES), positions on board `side_code`) averaged
    over `symmetries` mirror images of the boards: 1 = x alone, 4 = each of the board's symmetries applied to every
    seat's board (`afterstate.MIRRORS`). Why: a position and its mirror images are worth the same, and the
    network, which sees boards cell by cell, errs differently on each; the average errs less (benchmarks/STRENGTH.md).
    """
    out = net(x)
    for k in range(1, symmetries):
        out = out + net(x[:, MIRRORS[side_code, k]])
    return out / symmetries if symmetries > 1 else out


def blend(p_win: np.ndarray, tot: np.ndarray, seat: int, n: int, value: dict[str, float]) -> np.ndarray:
    """The one decision rule: value for `seat` of rows with P(it wins) p_win (B,) and every seat's total / 100
    tot (B, >= n): win x P(win) + margin x (its total - best other) + score x its total. Solo: its total."""
    own = tot[:, seat]
    if n == 1:
        return own
    others = np.delete(tot[:, :n], seat, axis=1).max(axis=1)
    return value["win"] * p_win + value["margin"] * (own - others) + value["score"] * own


def decision_values(out: np.ndarray, players: int, value: dict[str, float], seat: int = 0) -> np.ndarray:
    """Value for relative seat `seat` of each row of network outputs out (B, NUM_OUTPUTS): float64 (B,).

    `blend` of P(seat wins) (softmax over the present seats' logits) and the predicted totals (outputs are
    totals / 100).
    """
    n = int(players)
    tot = out[:, :4].astype(np.float64)
    if n == 1:
        return tot[:, 0]
    logits = out[:, 4: 4 + n].astype(np.float64)
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    return blend(p[:, seat], tot, seat, n, value)


class Candidates:
    """Candidate whole-turn plans of N games and their afterstates' features: what the network ranks.

    plans int64 (N, K, MAX_PLAN), lens int64 (N, K), values float64 (N, K) (the planner's own values, best first),
    feats float32 (N, K, NUM_FEATURES), counts int64 (N,). `propose` fills them for every active game in one
    threaded numba call (`afterstate.candidate_rows`; the buffers may hold more rows than the states given: rows past
    them are left as they were). The one proposer of the MLP agents (`MLPAgent.rank`
    and `act_batch`) and of its training's self-play (`experiments.evaluators.mlp`).
    """

    def __init__(self, num_games: int, candidates: int):
        n, k = int(num_games), int(candidates)
        self.plans = np.zeros((n, k, MAX_PLAN), dtype=np.int64)
        self.lens = np.zeros((n, k), dtype=np.int64)
        self.values = np.zeros((n, k), dtype=np.float64)
        self.feats = np.empty((n, k, NUM_FEATURES), dtype=np.float32)
        self.counts = np.zeros(n, dtype=np.int64)

    def propose(self, states: np.ndarray, active: np.ndarray, weights: np.ndarray, beam: int, diverse: bool,
                threads: int = 1) -> np.ndarray:
        """Plan the mover's turn in every active game of states (int32 (N, STATE_SIZE), not modified): the planner
        `greedy.plan_candidates` (diverse) or `greedy.plan_turn` at `beam`, K candidates each. Returns counts."""
        run_rows(candidate_rows, len(states), threads, states, active, weights, int(beam), bool(diverse), self.plans,
                 self.lens, self.values, self.feats, self.counts, min_rows=2)  # a row costs milliseconds
        return self.counts

    def spirit(self) -> np.ndarray:
        """bool (N,): the games whose candidates are the first-turn Spirit choice (the planner's order decides)."""
        return (self.counts > 0) & spirit_choice(self.plans[:, 0, 0])


def candidate_outputs(forward: Any, feats: np.ndarray, counts: np.ndarray,
                      rows: np.ndarray) -> dict[int, np.ndarray]:
    """Network outputs for every candidate of the given rows, in ONE forward pass: row -> float32 (counts[r], 8).

    feats float32 (N, K, NUM_FEATURES), counts int64 (N,), rows int64 (R,); forward maps float32 (B, NUM_FEATURES)
    to (B, 8) (the numpy `ValueNet`, `mirrored_outputs` of it, or the trainer's torch module)."""
    if not len(rows):
        return {}
    k = counts[rows]
    out = forward(np.concatenate([feats[r, : k[i]] for i, r in enumerate(rows)]))
    ofs = np.concatenate([[0], np.cumsum(k)])
    return {int(r): out[ofs[i]: ofs[i + 1]] for i, r in enumerate(rows)}


class MLPAgent(PlanAgent):
    """Plays the candidate whole-turn plan whose afterstate the value network rates best (network only).

    beam / candidates / diverse: the planner that proposes the plans (heuristic order): `greedy.plan_candidates`
    (a beam per central space, covering every space and card choice) when diverse, else `greedy.plan_turn`; None
    takes the checkpoint's `play` settings (how it was measured to play best), as does symmetries (outputs averaged
    over 1 or 4 mirror images of the boards, `mirrored_outputs`). value: decision weights (win, margin, score), None
    for the checkpoint's (`play.value`, else `value`). The first-turn Spirit choice (Spirit variant) is left to the
    planner's order.
    """

    def __init__(self, path: str | Path | None = None, beam: int | None = None, candidates: int | None = None,
                 seed: int = 0, name: str | None = None, net: ValueNet | None = None, diverse: bool | None = None,
                 value: dict[str, float] | None = None, symmetries: int | None = None):
        self.net = net if net is not None else ValueNet.load(DEFAULT_CHECKPOINT if path is None else path)
        play = play_settings(self.net.config["play"], beam=beam, candidates=candidates, diverse=diverse,
                             symmetries=symmetries)
        self.beam, self.planner_weights = planner_settings(play["beam"], None)
        self.candidates = int(play["candidates"])
        self.diverse = bool(play["diverse"])
        self.symmetries = int(play["symmetries"])
        if value is None:
            value = self.default_value()
        _check_value(value, "value")
        self.value = dict(value)
        self.seed = int(seed)
        self.name = name or "mlp"
        self._one = Candidates(1, self.candidates)
        self._batch: PlanRows | None = None
        self._cands: Candidates | None = None
        self.last_values: np.ndarray = np.zeros(0)
        self.reset()

    def default_value(self) -> dict[str, float]:
        """Decision weights when none are given: the checkpoint's `play.value`, else its `value`."""
        return play_value(self.net.config)

    def propose(self, states: np.ndarray, active: np.ndarray, cands: Candidates, threads: int = 1) -> np.ndarray:
        """This agent's candidates (its planner settings) for every active game of states: `Candidates.propose`."""
        return cands.propose(states, active, self.planner_weights, self.beam, self.diverse, threads)

    def values(self, states: np.ndarray, cands: Candidates, rows: np.ndarray) -> dict[int, np.ndarray]:
        """The one decision rule, for many games at once: row -> float64 (counts[r],) the value of each candidate of
        the game states[r] for its mover: `decision_values` of the network's outputs (averaged over `symmetries`
        mirror images), all rows' candidates in one forward pass per board side; the first-turn Spirit choice gets
        the planner's order (-0, -1, ...). Rows without candidates are left out."""
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[cands.counts[rows] > 0]
        spirit = cands.spirit()[rows]
        out = {int(r): -np.arange(cands.counts[r], dtype=np.float64) for r in rows[spirit]}
        todo = rows[~spirit]
        for side in np.unique(states[todo, S.SIDE]):
            some = todo[states[todo, S.SIDE] == side]

            def forward(x: np.ndarray, side_code: int = int(side)) -> np.ndarray:
                return mirrored_outputs(self.net, x, side_code, self.symmetries)

            for r, o in candidate_outputs(forward, cands.feats, cands.counts, some).items():
                out[r] = decision_values(o, int(states[r, S.NUM_PLAYERS]), self.value)
        return out

    def rank(self, game: Any) -> tuple[list[list[int]], np.ndarray, bool]:
        """Candidate plans for the mover of `game` (a private copy), the network's value of each, and whether this
        is the first-turn Spirit choice (then the values are the planner's order, not the network's): the batch of
        one of `propose` and `values`."""
        s = game.state.copy()[None]  # writable, as the kernels are compiled for (`Game.state` is a read-only view)
        c = self._one
        n = int(self.propose(s, np.ones(1, dtype=np.bool_), c)[0])
        plans = [c.plans[0, k, : c.lens[0, k]].tolist() for k in range(n)]
        if n == 0:
            return plans, np.zeros(0), False
        return plans, self.values(s, c, np.zeros(1, dtype=np.int64))[0], bool(c.spirit()[0])

    def reset_batch(self, seeds: Any) -> None:
        """Plan buffers for a batched match of len(seeds) games (the agent draws nothing: seeds are unused)."""
        self.reset()
        self._batch = PlanRows(len(seeds), MAX_PLAN)
        self._cands: Candidates | None = None

    def act_batch(self, batch: Any) -> np.ndarray:
        """Every game's move: the games whose turn starts are planned in one threaded numba call, all their
        candidates valued in one forward pass (`values`), and each plays its best plan over its turn's micro-actions;
        the same moves as `act`."""
        if self._batch is None:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        rows = np.asarray(batch.rows, dtype=np.int64)
        stale = self._batch.stale(batch.states, rows)
        if stale.size:
            sub = np.ascontiguousarray(batch.states[stale])
            if self._cands is None or self._cands.counts.size < stale.size:  # kept: its pages are touched once
                self._cands = Candidates(stale.size, self.candidates)
            c = self._cands
            self.propose(sub, np.ones(stale.size, dtype=np.bool_), c, batch.threads)  # rows 0..len(sub)-1 of c
            choice = np.zeros(stale.size, dtype=np.int64)
            for j, v in self.values(sub, c, np.arange(stale.size)).items():
                choice[j] = int(np.argmax(v))
            k = np.arange(stale.size)
            lens = np.where(c.counts[: stale.size] > 0, c.lens[k, choice], 0)
            self._batch.store(sub, rows[stale], c.plans[k, choice], lens)
        return self._batch.next(rows)

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        plans, values, _ = self.rank(game)
        self.last_values = values
        return plans[int(np.argmax(values))] if plans else []


class MLPSearchAgent(MLPAgent):
    """Sequential-halving search over the network's best candidate plans, with the network's value at the leaves.

    Why: the network alone judges an afterstate before the refill and the opponents' replies; the search samples
    them. Each leaf plays a candidate on its own determinized copy (`private_copy`, so the real hidden order is
    never seen), refills, plays the next `turns` whole turns (everyone's, ours included) with the greedy planner
    (beam `reply_beam`), like MCTSAgent's rollouts, and asks the network what the last of those turns' afterstate is
    worth to us (or reads the exact result if the game ended): a truncated rollout with the network's value at its
    end. `turns=None` judges after the opponents' replies only (n - 1 turns; 0 in solo). The leaf value mixes the
    network's with the hand-written evaluation's (`mix` x `heuristic_values` of `greedy.heuristic_value`'s
    estimates, on the same scale): the two err differently. benchmarks/STRENGTH.md measures each step against
    `mcts:200it`. The root keeps the network's `root` best candidates; sequential halving (as in Gumbel MuZero) spends
    the budget in rounds, halving the candidates each round by mean leaf value plus `prior` x the network's own value.
    Every candidate alive in a round is played in the same sampled worlds (common random numbers), so the
    comparison between candidates is not drowned by the luck of the draws.
    Budget: `iterations` leaves per decision, or `seconds` of wall time (split evenly over the rounds).
    """

    def __init__(self, path: str | Path | None = None, iterations: int | None = None, seconds: float | None = None,
                 root: int = 8, reply_beam: int = 3, prior: float = 1.0, turns: int | None = 7, mix: float = 0.5,
                 seed: int = 0, name: str | None = None, **kwargs: Any):
        if iterations is None and seconds is None:
            seconds = 1.0
        if iterations is not None and (isinstance(iterations, bool) or int(iterations) < 1):
            raise ValueError(f"iterations must be a whole number >= 1, got {iterations!r}")
        if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"seconds must be finite and > 0, got {seconds!r}")
        if root < 1 or reply_beam < 1:
            raise ValueError(f"root and reply_beam must be >= 1, got {root}, {reply_beam}")
        if turns is not None and (isinstance(turns, bool) or int(turns) != turns or turns < 0):
            raise ValueError(f"turns must be a whole number >= 0, got {turns!r}")
        self.turns = None if turns is None else int(turns)
        if isinstance(mix, bool) or not (isinstance(mix, (int, float)) and 0.0 <= mix <= 1.0):
            raise ValueError(f"mix must be a number in [0, 1], got {mix!r}")
        self.mix = float(mix)
        super().__init__(path, seed=seed, name=name, **kwargs)
        self.iterations = None if iterations is None else int(iterations)
        self.seconds = None if seconds is None else float(seconds)
        self.root = int(root)
        self.reply_beam = int(reply_beam)
        self.prior = float(prior)
        self.name = name or ("mlp-search" + (f":{self.seconds:g}" if self.iterations is None
                                                     else f":{self.iterations}it"))
        self.last_iterations = 0

    def default_value(self) -> dict[str, float]:
        """The search plays for the win: the checkpoint's `value`, the weights its self-play trained with (P(win) and
        margin first), not `play.value` (measured in benchmarks/STRENGTH.md: against `mcts:200it`, ranking by own
        total scored 3.2 points more and won 13.5 points less often: 57.8% against 71.3%)."""
        return self.net.config["value"]

    def _seed_for(self, turn: int, i: int) -> int:
        return int((self.seed * 0x9E3779B1 + turn * 0x85EBCA77 + i * 0xC2B2AE3D + 0x165667B1) & (2**62 - 1))

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        plans, values, spirit = self.rank(game)
        self.last_values = values
        if len(plans) <= 1 or spirit:
            return plans[0] if plans else []
        width = self.root if self.iterations is None else max(1, min(self.root, self.iterations))
        order = np.argsort(-values, kind="stable")[:width]
        cand = [plans[k] for k in order]
        prior = values[order]
        C = len(cand)
        cp, cl = plan_rows(cand)
        me = int(view.player)
        n = int(game.num_players)
        turn = int(game.turn)
        total = np.zeros(C)
        count = np.zeros(C)
        alive = list(range(C))
        rounds = max(1, math.ceil(math.log2(C)))
        start = time.perf_counter()
        used = 0
        nworld = 0
        for r in range(rounds):
            if self.iterations is not None:
                if self.iterations - used < len(alive):  # budget spent: decide on what was seen
                    break
                per = max(1, (self.iterations - used) // ((rounds - r) * len(alive)))
                deadline = None
            else:
                per = None
                deadline = start + self.seconds * (r + 1) / rounds
            while True:
                reps = per if per is not None else 1
                # common random numbers: every alive candidate is played in the same `reps` sampled worlds
                worlds = [private_copy(view, self._seed_for(turn, nworld + j + 1)).state for j in range(reps)]
                nworld += reps
                which = np.repeat(np.array(alive, dtype=np.int64), reps)
                roots = np.stack([worlds[j] for j in np.tile(np.arange(reps), len(alive))])
                vals = self._leaves(roots, which, cp, cl, me, n)
                np.add.at(total, which, vals)
                np.add.at(count, which, 1.0)
                used += len(which)
                if per is not None or time.perf_counter() >= deadline:
                    break
            if len(alive) > 1 and r < rounds - 1:
                score = total[alive] / np.maximum(count[alive], 1) + self.prior * prior[alive]
                keep = max(1, len(alive) // 2)
                alive = [alive[k] for k in np.argsort(-score, kind="stable")[:keep]]
        self.last_iterations = used
        score = total[alive] / np.maximum(count[alive], 1) + self.prior * prior[alive]
        return cand[alive[int(np.argmax(score))]]

    def _leaves(self, roots: np.ndarray, which: np.ndarray, cp: np.ndarray, cl: np.ndarray, me: int,
                n: int) -> np.ndarray:
        """Values for `me` of playing candidate which[i] in world roots[i] (int32 (L, STATE_SIZE), modified)."""
        L = len(which)
        feats = np.zeros((L, NUM_FEATURES), dtype=np.float32)
        seat = np.zeros(L, dtype=np.int64)
        exact = np.zeros(L, dtype=np.bool_)
        et = np.zeros((L, 4), dtype=np.int64)
        ew = np.zeros((L, 4), dtype=np.int64)
        turns = (n - 1) if self.turns is None else self.turns
        heur = np.zeros((L if self.mix > 0 else 0, 4))
        search_leaves(roots, cp, cl, which, self.planner_weights, self.reply_beam, turns, feats, seat, exact, et, ew,
                      heur)
        out = np.zeros(L)
        v = self.value
        todo = np.flatnonzero(~exact)
        if len(todo):
            o = mirrored_outputs(self.net, feats[todo], roots[0, S.SIDE], self.symmetries)
            for j in np.unique(seat[todo]):
                rows = todo[seat[todo] == j]
                out[rows] = decision_values(o[seat[todo] == j], n, v, seat=int(j))
            if self.mix > 0:
                out[todo] = (1 - self.mix) * out[todo] + self.mix * heuristic_values(heur[todo], me, n, v)
        for i in np.flatnonzero(exact):
            out[i] = exact_value(et[i], ew[i], me, n, v)
        return out


def heuristic_values(totals: np.ndarray, me: int, n: int, value: dict[str, float], scale: float = 10.0) -> np.ndarray:
    """`blend` of the heuristic's estimated final totals (L, 4) by absolute seat, P(win) taken as a logistic of the
    margin over the best other (scale `scale` points, MCTSAgent's)."""
    tot = totals / 100.0
    if n == 1:
        return tot[:, me]
    margin = totals[:, me] - np.delete(totals[:, :n], me, axis=1).max(axis=1)
    return blend(1.0 / (1.0 + np.exp(-margin / scale)), tot, me, n, value)


def exact_value(totals: np.ndarray, won: np.ndarray, me: int, n: int, value: dict[str, float]) -> float:
    """`blend` of a finished game for seat me (absolute): the true totals, P(win) = its share of the victory."""
    pw = np.array([won[me] / max(1, int(won[:n].sum()))])
    return float(blend(pw, np.asarray(totals, dtype=np.float64)[None, :] / 100.0, me, n, value)[0])


__all__ = ["Candidates", "CheckpointError", "MLPAgent", "MLPSearchAgent", "ValueNet", "candidate_outputs",
           "decision_values", "load_checkpoint", "mirrored_outputs", "play_settings", "play_value", "state_shapes",
           "torch_net", "weights_sha256", "CHECKPOINT_KEYS", "DEFAULT_CHECKPOINT", "DEFAULT_CONFIG", "MAX_CANDIDATES",
           "NUM_OUTPUTS", "FORMAT", "save_checkpoint", "check_config", "heuristic_values", "exact_value", "blend"]
