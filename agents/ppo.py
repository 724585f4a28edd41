"""An agent that plays a trained MaskablePPO policy (sb3-contrib), deterministically, within the legal mask.

The policy is one over the flat action space (observation `OBS_SIZE` floats, 268 actions), as trained on the
Gymnasium / batched environments (`python -m experiments.train solo-ppo`, `versus-ppo`, `selfplay-ppo`): one
micro-action per call.

No checkpoint ships with the package (an SB3 zip stores pickles; the learned agent replaced the one that shipped):
`PPOAgent` and `make_agent("ppo:PATH")` always name the file.

Two checkpoint formats are read. The training commands write a **weights-only export** (`save_policy`):
`NAME.pt`, a `torch.save` of the policy's state dict (tensors only, read with `torch.load(weights_only=True)`), and
`NAME.json` beside it, everything needed to rebuild the `MaskableActorCriticPolicy` (observation size, action count,
network keyword arguments, activation by name, which kind of policy, the observation encoding's version
`observation_version` (`harmonies_env.observation.OBS_VERSION`), the weights' size and SHA-256): nothing in either
file can run code. A user's Stable-Baselines3 `.zip` is read too.

Observation version: an export whose `observation_version` is not this code's `OBS_VERSION` is refused, naming both
(the network would read entries that mean something else). An export written before the field existed, and an SB3
zip (which cannot say), are accepted as before: by the observation's size alone (OBS_SIZE floats).

Loading never runs code from the file by default (see docs/safety.md). An SB3 `.zip` stores its spaces, schedules
and policy class as pickles (`":serialized:"` entries of its `data` JSON), and `MaskablePPO.load` unpickles them: a
crafted file runs any code it likes. So `load_policy` reads the zip itself: it takes the observation / action
spaces and the network architecture from the JSON's plain (non-pickled) fields, builds a fresh
`MaskableActorCriticPolicy`, and loads `policy.pth` with `torch.load(weights_only=True)`, which only rebuilds
tensors. A checkpoint that cannot be read that way (a custom policy class, pickled `policy_kwargs` such as an
`activation_fn`, other spaces) is refused with `UntrustedCheckpointError`, unless the caller opts in with
`trust=True` (CLI: `--trust-checkpoint`; environment: `HARMONIES_TRUST_CHECKPOINT=1`, which worker processes
inherit), which goes through `MaskablePPO.load` and so may run code from the file.
"""
from __future__ import annotations

import base64
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from harmonies_env.observation import OBS_SIZE, OBS_VERSION

from .base import Agent

NEEDS_PATH = ("the ppo agent needs a checkpoint: ppo:PATH (a training run's model.pt, or a MaskablePPO .zip); no PPO "
              "checkpoint ships with the package")
#: Environment variable that, set to "1", trusts checkpoints (as `trust=True`): they may run code when loaded.
TRUST_ENV = "HARMONIES_TRUST_CHECKPOINT"
#: Largest `data` JSON / `policy.pth` member read from a checkpoint zip (bytes, uncompressed).
MAX_DATA_BYTES = 64 << 20
MAX_WEIGHTS_BYTES = 1 << 30
#: policy_kwargs entries the weights-only loader understands (plain JSON values only).
_SAFE_POLICY_KWARGS = ("net_arch", "ortho_init", "share_features_extractor", "normalize_images")
#: Caps on a declared architecture (`net_arch`), checked before any tensor is allocated: hidden layers per head and
#: units per layer. A checkpoint declaring more is refused in one line.
MAX_LAYERS = 16
MAX_WIDTH = 1 << 14
#: The `format` tag of a weights-only policy export's JSON (`save_policy`); bumped if the layout changes.
POLICY_FORMAT = "harmonies-ppo-policy"
POLICY_VERSION = 1
#: Largest policy-export JSON read (bytes).
MAX_CONFIG_BYTES = 1 << 20
#: Activation functions an export may name (torch.nn class name by JSON name).
_ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
_RISK = ("loading it through Stable-Baselines3 unpickles objects stored in the file, which can run arbitrary "
         "code; only if you trust where it came from, pass trust=True (CLI: --trust-checkpoint)")


class UntrustedCheckpointError(ValueError):
    """A checkpoint that cannot be loaded without unpickling (running code from) the file, and trust was not given."""


def trust_from_env() -> bool:
    """True when `HARMONIES_TRUST_CHECKPOINT=1` is set (how `--trust-checkpoint` reaches worker processes)."""
    return os.environ.get(TRUST_ENV, "") == "1"


def _has_serialized(x: Any) -> bool:
    if isinstance(x, dict):
        return ":serialized:" in x or any(_has_serialized(v) for v in x.values())
    if isinstance(x, list):
        return any(_has_serialized(v) for v in x)
    return False


def _int(v: Any, what: str) -> int:
    """An integer stored plainly in the JSON (SB3 writes numpy scalars as their str(), e.g. "8")."""
    if isinstance(v, bool):
        raise ValueError(what)
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    raise ValueError(what)


def _shape(v: Any, what: str) -> tuple[int, ...]:
    if isinstance(v, str):
        try:
            v = json.loads(v.replace("(", "[").replace(")", "]").replace(",]", "]"))
        except json.JSONDecodeError:
            raise ValueError(what) from None
    if not isinstance(v, list):
        raise ValueError(what)
    return tuple(_int(k, what) for k in v)


def read_checkpoint_zip(path: str | Path, check: Any = None) -> tuple[dict, bytes]:
    """(the `data` JSON, the raw `policy.pth` bytes) of an SB3 checkpoint zip, read without unpickling anything.

    Members' declared (uncompressed) sizes are checked before they are read, `data` is depth-limited JSON
    (`validate.parse_json`), and `check(data, policy_size)`, if given, judges `policy.pth`'s declared size before it
    is decompressed. A damaged zip (bad CRC, truncated, not a zip) is one ValueError line, never a traceback."""
    import zlib

    from harmonies_env.validate import parse_json

    from .archive import check_zip

    p = Path(path)
    try:
        with zipfile.ZipFile(p) as zf:
            names = set(zf.namelist())
            for member in ("data", "policy.pth"):
                if member not in names:
                    raise ValueError(f"{p}: not a Stable-Baselines3 checkpoint (no {member!r} in the zip)")
            check_zip(zf, p.stat().st_size, MAX_DATA_BYTES + MAX_WEIGHTS_BYTES + (1 << 20), p)
            size = zf.getinfo("policy.pth").file_size
            if zf.getinfo("data").file_size > MAX_DATA_BYTES or size > MAX_WEIGHTS_BYTES:
                raise ValueError(f"{p}: checkpoint members are implausibly large; refusing to read them")
            try:
                data = parse_json(zf.read("data"), f"{p}: the checkpoint's 'data'")
            except UnicodeDecodeError as e:
                raise ValueError(f"{p}: the checkpoint's 'data' is not JSON ({e})") from None
            if not isinstance(data, dict):
                raise ValueError(f"{p}: the checkpoint's 'data' is not a JSON object")
            if check is not None:
                check(data, size)
            return data, zf.read("policy.pth")
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OverflowError) as e:
        raise ValueError(f"{p}: not a readable Stable-Baselines3 checkpoint (a damaged zip: "
                         f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else 'ends early'})") from None


def _check_torch_members(p: Path) -> None:
    """The torch zips inside an SB3 zip (`*.pth`: the policy, its optimizer, torch variables) declare no more than
    they hold (`agents.archive.check_zip`, stored only as torch writes them), before `MaskablePPO.load` reads them;
    else ValueError naming the member."""
    from .archive import check_zip
    from .checkpoint import CheckpointError

    with zipfile.ZipFile(p) as zf:
        for name in [n for n in zf.namelist() if n.endswith(".pth")]:
            raw = zf.read(name)  # its declared size was checked by read_checkpoint_zip's check_zip
            try:
                with zipfile.ZipFile(io.BytesIO(raw)) as inner:
                    check_zip(inner, len(raw), MAX_WEIGHTS_BYTES, f"{p}: {name}", stored_only=True)
            except zipfile.BadZipFile:
                continue  # not a torch zip: SB3's own reader says what it is
            except CheckpointError as e:
                raise ValueError(str(e)) from None


def _net_arch(kwargs: dict, where: Any) -> tuple[list[int], list[int]]:
    """The (policy, value) hidden widths a checkpoint's `net_arch` declares, each within MAX_LAYERS x MAX_WIDTH;
    else ValueError naming the file."""
    arch = kwargs.get("net_arch", [64, 64])
    heads = (arch.get("pi", []), arch.get("vf", [])) if isinstance(arch, dict) else (arch, arch)
    for h in heads:
        if not (isinstance(h, list) and len(h) <= MAX_LAYERS and all(
                isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= MAX_WIDTH for w in h)):
            raise ValueError(f"{where}: net_arch {str(arch)[:80]} is not at most {MAX_LAYERS} layers of 1..{MAX_WIDTH} "
                             f"units per head")
    return list(heads[0]), list(heads[1])


def declared_bytes(kwargs: dict, n_obs: int, n_act: int, where: Any) -> int:
    """Bytes of float32 parameters the declared architecture holds (the policy and value MLPs and their heads):
    what its weights file must at least hold. Checked caps first (`_net_arch`)."""
    total = 0
    for head, out in zip(_net_arch(kwargs, where), (n_act, 1)):
        width = n_obs
        for w in [*head, out]:
            total += width * w + w
            width = w
    return 4 * total


def check_architecture(kwargs: dict, n_obs: int, n_act: int, size: int, where: Any, risk: str = "") -> None:
    """ValueError (one line) unless the declared architecture fits the caps and a weights file of `size` bytes: it
    cannot hold fewer bytes than its parameters, nor (a zip bomb, a crafted size) far more. With `risk` (an SB3
    zip, which `--trust-checkpoint` may still load through SB3) the error is an UntrustedCheckpointError saying so."""
    need = declared_bytes(kwargs, n_obs, n_act, where)
    if size < need or size > 2 * need + (1 << 20):
        error = UntrustedCheckpointError if risk else ValueError
        raise error(f"{where}: the declared architecture holds {need:,} bytes of weights, the weights file "
                    f"{size:,}: not this network's weights{risk}")


def _policy_config(data: dict, p: Path) -> tuple[Any, Any, dict]:
    """(observation space, action space, policy kwargs) from the plain JSON fields; UntrustedCheckpointError if
    they cannot be rebuilt without unpickling."""
    from gymnasium import spaces

    cls = data.get("policy_class")
    ok_cls = isinstance(cls, dict) and cls.get("__module__") == "sb3_contrib.common.maskable.policies"
    if ok_cls:
        try:
            ok_cls = b"MaskableActorCriticPolicy" in base64.b64decode(cls.get(":serialized:", ""), validate=True)
        except (ValueError, TypeError):
            ok_cls = False
    if not ok_cls:
        raise UntrustedCheckpointError(f"{p}: the policy class is not sb3-contrib's MaskableActorCriticPolicy, so the "
                                       f"weights cannot be loaded on their own; {_RISK}")
    obs, act = data.get("observation_space"), data.get("action_space")
    try:
        if not (isinstance(obs, dict) and str(obs.get(":type:", "")).endswith("spaces.box.Box'>")):
            raise ValueError("observation space")
        shape = _shape(obs.get("_shape"), "observation shape")
        if len(shape) != 1 or shape[0] < 1 or obs.get("dtype") != "float32":
            raise ValueError("observation shape")
        if not (isinstance(act, dict) and str(act.get(":type:", "")).endswith("spaces.discrete.Discrete'>")):
            raise ValueError("action space")
        n = _int(act.get("n"), "action count")
        if n < 1 or _int(act.get("start", 0), "action start") != 0:
            raise ValueError("action count")
    except ValueError as e:
        raise UntrustedCheckpointError(f"{p}: the {e} cannot be read from the checkpoint's plain JSON (only a flat "
                                       f"float32 Box and Discrete(n) are); {_RISK}") from None
    kwargs = data.get("policy_kwargs") or {}
    if not isinstance(kwargs, dict) or _has_serialized(kwargs) or set(kwargs) - set(_SAFE_POLICY_KWARGS):
        extra = sorted(set(kwargs) - set(_SAFE_POLICY_KWARGS)) if isinstance(kwargs, dict) else kwargs
        raise UntrustedCheckpointError(f"{p}: policy_kwargs {extra} are pickled or not understood by the weights-only "
                                       f"loader; {_RISK}")
    return (spaces.Box(-np.inf, np.inf, shape, np.float32), spaces.Discrete(n), dict(kwargs))


def check_observation_version(recorded: Any, where: Any) -> None:
    """ValueError (one line, naming both versions) when a checkpoint's recorded `observation_version` is not this
    code's `OBS_VERSION`; None (not recorded: an older export) passes, the observation's size then decides."""
    if recorded is None:
        return
    if isinstance(recorded, bool) or not isinstance(recorded, int):
        raise ValueError(f"{where}: observation_version must be an integer, got {recorded!r}")
    if recorded != OBS_VERSION:
        raise ValueError(f"{where}: the policy was trained on observation version {recorded}, this code encodes "
                         f"observation version {OBS_VERSION} (harmonies_env.observation.OBS_VERSION): retrain it")


def policy_kind(obs_size: int, actions: int) -> str | None:
    """"action" (a policy over the flat action space) or None (spaces no agent here plays), from its spaces."""
    if obs_size == OBS_SIZE:
        return "action"
    return None


def policy_config(policy: Any) -> dict[str, Any]:
    """The JSON config of a weights-only export of `policy` (a MaskableActorCriticPolicy): what rebuilds it.

    ValueError for a policy the config cannot describe exactly (another class, feature extractor, activation or
    spaces), rather than write a file that loads as a different network."""
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if type(policy) is not MaskableActorCriticPolicy:
        raise ValueError(f"only sb3-contrib's MaskableActorCriticPolicy can be exported weights-only, not "
                         f"{type(policy).__name__}")
    obs, act = policy.observation_space, policy.action_space
    if not (isinstance(obs, spaces.Box) and len(obs.shape) == 1 and isinstance(act, spaces.Discrete)
            and int(act.start) == 0):
        raise ValueError(f"only a flat Box observation and Discrete(n) actions can be exported, not {obs} / {act}")
    if policy.features_extractor_class is not FlattenExtractor or policy.features_extractor_kwargs:
        raise ValueError("only the default FlattenExtractor can be exported")
    names = {getattr(torch.nn, v): k for k, v in _ACTIVATIONS.items()}
    if policy.activation_fn not in names:
        raise ValueError(f"activation {policy.activation_fn.__name__} cannot be exported (only "
                         f"{', '.join(_ACTIVATIONS)})")
    net_arch = policy.net_arch
    net_arch = {k: [int(x) for x in v] for k, v in net_arch.items()} if isinstance(net_arch, dict) \
        else [int(x) for x in net_arch]
    n_obs, n_act = int(obs.shape[0]), int(act.n)
    return {"policy_class": "sb3_contrib.common.maskable.policies.MaskableActorCriticPolicy",
            "kind": policy_kind(n_obs, n_act), "observation_size": n_obs,
            "observation_version": OBS_VERSION if policy_kind(n_obs, n_act) == "action" else None, "actions": n_act,
            "activation": names[policy.activation_fn],
            "policy_kwargs": {"net_arch": net_arch, "ortho_init": bool(policy.ortho_init),
                              "share_features_extractor": bool(policy.share_features_extractor),
                              "normalize_images": bool(policy.normalize_images)}}


def save_policy(policy: Any, path: str | Path) -> Path:
    """Write `policy` (a MaskableActorCriticPolicy, e.g. `model.policy`) as a weights-only export: `NAME.pt` (its
    state dict: tensors only) and `NAME.json` (`agents.checkpoint`'s sidecar: format `POLICY_FORMAT`, `policy_config`
    as its config, the tensors' shapes and the weights' size and SHA-256, which tells a torn pair from a complete
    one). Both writes are atomic, the weights first; the folder is made if needed. `path` is `NAME.pt` (or `NAME`);
    returns the `.pt` path. Read back by `load_policy`."""
    import torch

    from .checkpoint import write_checkpoint

    p = Path(path)
    if p.suffix != ".pt":
        p = p.with_name(p.name + ".pt")
    config = policy_config(policy)
    tensors = {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}
    buf = io.BytesIO()
    torch.save(tensors, buf)
    return write_checkpoint(p, buf.getvalue(), POLICY_FORMAT, config, {k: list(v.shape) for k, v in tensors.items()})


def _legacy_export(c: dict[str, Any], cpath: Path) -> dict[str, Any]:
    """An export written before `agents.checkpoint`'s schema (the policy config flat, with `weights_bytes` and
    `weights_sha256`) as that schema's fields."""
    from .checkpoint import CheckpointError

    if c.get("format") != POLICY_FORMAT:
        raise CheckpointError(f"{cpath}: not a policy export (its format is not {POLICY_FORMAT!r}; a resume "
                              f"checkpoint's step_*.pt is read by --resume / [run] init, not as ppo:PATH)")
    if type(c.get("version")) is not int or c["version"] != POLICY_VERSION:
        raise CheckpointError(f"{cpath}: policy export version {str(c.get('version'))[:20]!r} is not "
                              f"{POLICY_VERSION} (written by another version of harmonies-env)")
    config = {k: v for k, v in c.items() if k not in ("format", "version", "weights", "weights_bytes",
                                                      "weights_sha256")}
    return {"format": POLICY_FORMAT, "version": 1, "config": config, "sha256": c.get("weights_sha256")}


def _policy_from_weights(weights: bytes, obs_space: Any, act_space: Any, kwargs: dict, p: Path, what: str,
                         device: str, risk: str = "") -> Any:
    """A MaskableActorCriticPolicy of the given spaces and keyword arguments with `weights` (a `torch.save` of its
    state dict) loaded strictly by the weights-only unpickler; `what` names the weights in errors."""
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from .archive import read_torch
    from .checkpoint import CheckpointError

    try:
        state = read_torch(weights, MAX_WEIGHTS_BYTES, f"{p}: {what}", device)
    except CheckpointError as e:
        raise (UntrustedCheckpointError if risk else ValueError)(f"{e}{risk}") from None
    except Exception as e:  # the restricted unpickler refuses anything but tensors and plain containers
        raise UntrustedCheckpointError(f"{p}: {what} holds more than tensors ({type(e).__name__}: "
                                       f"{str(e).splitlines()[0][:200]}){risk}") from None
    try:
        policy = MaskableActorCriticPolicy(obs_space, act_space, lambda _: 0.0, **kwargs)
    except (TypeError, ValueError, AssertionError) as e:
        raise ValueError(f"{p}: the declared policy_kwargs do not describe a network ({e})") from None
    try:
        policy.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, AttributeError) as e:
        raise ValueError(f"{p}: the weights in {what} do not fit the architecture the checkpoint declares "
                         f"({str(e).splitlines()[0][:200]})") from None
    return policy.to(device)


def _read_export(p: Path, device: str) -> Any:
    """The policy of a weights-only export `p` (`NAME.pt` + `NAME.json`, written by `save_policy`)."""
    import torch

    from .checkpoint import read_checkpoint

    cpath = p.with_suffix(".json")
    if not cpath.is_file():
        raise ValueError(f"{p}: no {cpath.name} beside it (a weights-only policy is NAME.pt + NAME.json, as the "
                         f"training commands write them)")
    ck = read_checkpoint(p, ".pt", POLICY_FORMAT, "a PPO policy export", MAX_WEIGHTS_BYTES, legacy=_legacy_export,
                         max_sidecar_bytes=MAX_CONFIG_BYTES)
    c, weights = ck.config, ck.data
    if not isinstance(c, dict):
        raise ValueError(f"{cpath}: the policy config must be an object")
    try:
        n_obs, n_act = _int(c.get("observation_size"), "observation_size"), _int(c.get("actions"), "actions")
        if n_obs < 1 or n_act < 1:
            raise ValueError("observation_size / actions")
        act = c.get("activation")
        if act not in _ACTIVATIONS:
            raise ValueError("activation")
        kwargs = c.get("policy_kwargs")
        if not isinstance(kwargs, dict) or set(kwargs) - set(_SAFE_POLICY_KWARGS):
            raise ValueError("policy_kwargs")
        if c.get("kind") != policy_kind(n_obs, n_act):
            raise ValueError("kind")
    except ValueError as e:
        raise ValueError(f"{cpath}: field {e} is missing or invalid") from None
    check_observation_version(c.get("observation_version"), cpath)
    check_architecture(kwargs, n_obs, n_act, len(weights), p)
    from gymnasium import spaces

    return _policy_from_weights(weights, spaces.Box(-np.inf, np.inf, (n_obs,), np.float32), spaces.Discrete(n_act),
                                {**kwargs, "activation_fn": getattr(torch.nn, _ACTIVATIONS[act])}, p, p.name, device)


def load_policy(path: str | Path, device: str = "cpu", trust: bool | None = None) -> Any:
    """The MaskableActorCriticPolicy of a checkpoint, in eval mode: a weights-only export (`NAME.pt` + `NAME.json`,
    `save_policy`; `NAME.json` or `NAME` name it too) or an SB3 MaskablePPO checkpoint zip.

    An export never runs code, whatever `trust` says; one that records another `observation_version` than
    `OBS_VERSION` is refused (ValueError naming both), one that records none loads by its observation size.
    For a zip, by default nothing from the file is unpickled (see the module docstring); trust=True (or None with
    `HARMONIES_TRUST_CHECKPOINT=1`) loads it with `MaskablePPO.load`, which may run code stored in the file.
    FileNotFoundError if absent, UntrustedCheckpointError / ValueError if it cannot be loaded safely.
    """
    import sb3_contrib  # noqa: F401  (first: a missing "train" extra is reported before anything else)

    p = Path(path)
    if p.suffix == ".json" and p.with_suffix(".pt").is_file():
        p = p.with_suffix(".pt")
    if not p.is_file() and p.suffix not in (".pt", ".zip"):
        for ext in (".pt", ".zip"):
            if p.with_name(p.name + ext).is_file():
                p = p.with_name(p.name + ext)
                break
    if not p.is_file():
        raise FileNotFoundError(f"no MaskablePPO checkpoint at {p}")
    if p.suffix == ".pt":
        policy = _read_export(p, device)
        policy.set_training_mode(False)
        return policy
    if trust is None:
        trust = trust_from_env()
    if trust:
        from sb3_contrib import MaskablePPO
        read_checkpoint_zip(p, lambda data, size: None)  # a damaged zip or deep JSON: one line, before SB3 reads it
        _check_torch_members(p)  # trusted to run code, still not to inflate a zip bomb
        try:
            policy = MaskablePPO.load(str(p), device=device).policy
        except Exception as e:  # what the file holds decides; say it in one line
            raise ValueError(f"{p}: MaskablePPO.load could not load it ({type(e).__name__}: "
                             f"{(str(e).strip().splitlines() or [''])[0][:160]})") from None
    else:
        def fits(data: dict, size: int) -> None:
            obs_space, act_space, kwargs = _policy_config(data, p)
            check_architecture(kwargs, obs_space.shape[0], act_space.n, size, f"{p}: policy.pth", f"; {_RISK}")

        data, weights = read_checkpoint_zip(p, fits)
        obs_space, act_space, kwargs = _policy_config(data, p)
        policy = _policy_from_weights(weights, obs_space, act_space, kwargs, p, "policy.pth", device, f"; {_RISK}")
    policy.set_training_mode(False)
    return policy


def policy_actions(policy: Any, obs: np.ndarray, masks: np.ndarray,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """The flat-action policy's move in many games in ONE forward pass: int64 (M,) for observations float32
    (M, OBS_SIZE) and legal masks bool (M, NUM_ACTIONS): the most likely legal action, or (rng given) one sampled from
    the masked distribution. Never an illegal one (a policy trained on another layout, or rounding at a sample's
    edge, falls back to the first legal action). The one batched PPO decision: `PPOAgent.act_batch` and the self-play
    pool's frozen snapshots (`agents.pool_env`)."""
    import torch

    # torch cannot wrap a read-only array (the engine's views are) without warning that writes to it would be
    # undefined: hand it writable copies
    obs, masks = (a if a.flags.writeable else a.copy() for a in (obs, masks))
    obs_t, _ = policy.obs_to_tensor(obs)
    with torch.no_grad():
        probs = policy.get_distribution(obs_t, action_masks=masks).distribution.probs.cpu().numpy()
    if rng is not None:
        cdf = np.cumsum(probs, axis=1, dtype=np.float64)
        u = (1.0 - rng.random(len(obs))) * cdf[:, -1]
        a = np.minimum((cdf < u[:, None]).sum(axis=1), masks.shape[1] - 1)
    else:
        a = probs.argmax(axis=1)
    bad = ~masks[np.arange(len(a)), a]
    if bad.any():
        a[bad] = masks[bad].argmax(axis=1)
    return a.astype(np.int64)


class PPOAgent(Agent):
    """Loads a PPO checkpoint (a weights-only `.pt` export or a MaskablePPO `.zip`) and plays its most likely legal
    action.

    torch / sb3-contrib are imported only here. The policy reads `view.observation` (float32 (OBS_SIZE,)) masked
    with `view.action_mask`. `trust`: see `load_policy` (default: never unpickle anything from the file). `model` is
    the loaded policy.
    """

    def __init__(self, path: str | Path, device: str = "cpu", seed: int = 0, name: str | None = None,
                 trust: bool | None = None):
        if path is None or not str(path).strip():
            raise ValueError(NEEDS_PATH)
        p = Path(path)
        self.model = load_policy(p, device=device, trust=trust)
        self.path = p
        shape = tuple(self.model.observation_space.shape or ())
        n = int(getattr(self.model.action_space, "n", -1))
        kind = policy_kind(shape[0], n) if len(shape) == 1 else None
        if kind is not None:
            self.kind = kind
        else:
            raise ValueError(f"{p}: observation shape {shape} ({n} actions) is not the flat action space's "
                             f"observation ({OBS_SIZE},)")
        self.seed = int(seed)
        self.name = name or f"ppo:{p.name}"

    def act(self, view: Any) -> int:
        mask = np.asarray(view.action_mask, dtype=bool)
        if not mask.any():
            raise ValueError("no legal action: it is not this player's turn or the game is over")
        obs = np.asarray(view.observation, dtype=np.float32)
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        a = int(np.asarray(action).reshape(-1)[0])
        if not mask[a]:  # a policy trained on another observation layout: never play illegally
            a = int(np.flatnonzero(mask)[0])
        return a

    def act_batch(self, batch: Any) -> np.ndarray:
        """Every game's most likely legal action in ONE forward pass. The same moves as `act`."""
        if not len(batch):
            return np.zeros(0, dtype=np.int64)
        return policy_actions(self.model, np.asarray(batch.observations, dtype=np.float32),
                              np.asarray(batch.action_masks, dtype=bool))

