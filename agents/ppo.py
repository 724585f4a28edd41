"""An agent that plays a trained MaskablePPO policy (sb3-contrib), deterministically, within the legal mask.

Two kinds of checkpoint are recognised by their spaces:

* a policy over the flat action space (observation `OBS_SIZE` floats, 268 actions), as trained on the
  Gymnasium / batched environments (`python -m experiments.train solo-ppo`, `versus-ppo`, `selfplay-ppo`): one
  micro-action per call;
* a plan-choosing policy (observation `PLAN_OBS_SIZE`, `PLAN_CHOICES` actions; `agents.plan_choice`,
  `python -m experiments.train plan-ppo`): once per turn it picks one of the greedy planner's best whole-turn plans,
  then plays that plan one micro-action per call.

No checkpoint ships with the package (an SB3 zip stores pickles; the learned agent replaced the one that shipped):
`PPOAgent` and `make_agent("ppo:PATH")` always name the file.

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

from harmonies_env.observation import OBS_SIZE

from .base import PlanAgent

NEEDS_PATH = ("the ppo agent needs a checkpoint: ppo:PATH (a MaskablePPO .zip, e.g. a run's model.zip); no PPO "
              "checkpoint ships with the package")
#: Environment variable that, set to "1", trusts checkpoints (as `trust=True`): they may run code when loaded.
TRUST_ENV = "HARMONIES_TRUST_CHECKPOINT"
#: Largest `data` JSON / `policy.pth` member read from a checkpoint zip (bytes, uncompressed).
MAX_DATA_BYTES = 64 << 20
MAX_WEIGHTS_BYTES = 1 << 30
#: policy_kwargs entries the weights-only loader understands (plain JSON values only).
_SAFE_POLICY_KWARGS = ("net_arch", "ortho_init", "share_features_extractor", "normalize_images")
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


def read_checkpoint_zip(path: str | Path) -> tuple[dict, bytes]:
    """(the `data` JSON, the raw `policy.pth` bytes) of an SB3 checkpoint zip, read without unpickling anything."""
    p = Path(path)
    try:
        zf = zipfile.ZipFile(p)
    except zipfile.BadZipFile:
        raise ValueError(f"{p}: not a Stable-Baselines3 checkpoint (not a zip file)") from None
    with zf:
        names = set(zf.namelist())
        for member in ("data", "policy.pth"):
            if member not in names:
                raise ValueError(f"{p}: not a Stable-Baselines3 checkpoint (no {member!r} in the zip)")
        if zf.getinfo("data").file_size > MAX_DATA_BYTES or zf.getinfo("policy.pth").file_size > MAX_WEIGHTS_BYTES:
            raise ValueError(f"{p}: checkpoint members are implausibly large; refusing to read them")
        try:
            data = json.loads(zf.read("data"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{p}: the checkpoint's 'data' is not JSON ({e})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{p}: the checkpoint's 'data' is not a JSON object")
        return data, zf.read("policy.pth")


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


def load_policy(path: str | Path, device: str = "cpu", trust: bool | None = None) -> Any:
    """The MaskableActorCriticPolicy of an SB3 MaskablePPO checkpoint zip, in eval mode.

    By default nothing from the file is unpickled (see the module docstring); trust=True (or None with
    `HARMONIES_TRUST_CHECKPOINT=1`) loads it with `MaskablePPO.load`, which may run code stored in the file.
    FileNotFoundError if absent, UntrustedCheckpointError / ValueError if it cannot be loaded safely.
    """
    import sb3_contrib  # noqa: F401  (first: a missing "train" extra is reported before anything else)
    import torch

    p = Path(path)
    if not p.is_file() and p.suffix != ".zip" and p.with_suffix(".zip").is_file():
        p = p.with_suffix(".zip")
    if not p.is_file():
        raise FileNotFoundError(f"no MaskablePPO checkpoint at {p}")
    if trust is None:
        trust = trust_from_env()
    if trust:
        from sb3_contrib import MaskablePPO
        policy = MaskablePPO.load(str(p), device=device).policy
    else:
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

        data, weights = read_checkpoint_zip(p)
        obs_space, act_space, kwargs = _policy_config(data, p)
        try:
            state = torch.load(io.BytesIO(weights), map_location=device, weights_only=True)
        except Exception as e:  # the restricted unpickler refuses anything but tensors and plain containers
            raise UntrustedCheckpointError(f"{p}: policy.pth holds more than tensors ({type(e).__name__}: "
                                           f"{str(e).splitlines()[0][:200]}); {_RISK}") from None
        policy = MaskableActorCriticPolicy(obs_space, act_space, lambda _: 0.0, **kwargs)
        try:
            policy.load_state_dict(state, strict=True)
        except (RuntimeError, TypeError, AttributeError) as e:
            raise ValueError(f"{p}: the weights in policy.pth do not fit the architecture the checkpoint declares "
                             f"({str(e).splitlines()[0][:200]})") from None
        policy = policy.to(device)
    policy.set_training_mode(False)
    return policy


class PPOAgent(PlanAgent):
    """Loads a MaskablePPO checkpoint (.zip) and plays its most likely legal action (or plan).

    torch / sb3-contrib are imported only here. A flat-action policy reads `view.observation` (float32
    (OBS_SIZE,)) masked with `view.action_mask`; a plan-choosing policy reads `plan_observation` of a private
    determinized copy (public fields only) and is masked by which candidate plans exist. `trust`: see
    `load_policy` (default: never unpickle anything from the file). `model` is the loaded policy.
    """

    def __init__(self, path: str | Path, device: str = "cpu", seed: int = 0, name: str | None = None,
                 trust: bool | None = None):
        from . import plan_choice as P

        if path is None or not str(path).strip():
            raise ValueError(NEEDS_PATH)
        p = Path(path)
        self.model = load_policy(p, device=device, trust=trust)
        self.path = p
        shape = tuple(self.model.observation_space.shape or ())
        n = int(getattr(self.model.action_space, "n", -1))
        if shape == (P.PLAN_OBS_SIZE,) and n == P.PLAN_CHOICES:
            self.kind = "plan"
        elif shape == (OBS_SIZE,):
            self.kind = "action"
        else:
            raise ValueError(f"{p}: observation shape {shape} and {n} actions match neither the flat action space "
                             f"({OBS_SIZE},) nor the plan choice ({P.PLAN_OBS_SIZE},) x {P.PLAN_CHOICES}")
        self.seed = int(seed)
        self.name = name or f"ppo:{p.name}"
        self.reset()

    def act(self, view: Any) -> int:
        mask = np.asarray(view.action_mask, dtype=bool)
        if not mask.any():
            raise ValueError("no legal action: it is not this player's turn or the game is over")
        if self.kind == "plan":
            return super().act(view)
        obs = np.asarray(view.observation, dtype=np.float32)
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        a = int(np.asarray(action).reshape(-1)[0])
        if not mask[a]:  # a policy trained on another observation layout: never play illegally
            a = int(np.flatnonzero(mask)[0])
        return a

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        from .plan_choice import describe

        obs, pmask, plans = describe(game.state)
        if not plans:  # cannot happen on a legal position
            return []
        k, _ = self.model.predict(obs, action_masks=pmask, deterministic=True)
        k = int(np.asarray(k).reshape(-1)[0])
        return list(plans[k if k < len(plans) else 0])
