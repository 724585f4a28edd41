"""The PPO commands' checkpoints and policy exports, all weights-only.

`step_<timesteps>.pt` is a `torch.save` of tensors and plain values only (the policy's and the optimizer's state
dicts, the step and update counters, the torch / numpy / Python generator states, SB3's last observations and the
training env's games in flight; `checkpoint_bytes`), read back with `torch.load(weights_only=True)`, which never
unpickles code, and `step_<timesteps>.json` (its record: size, SHA-256, the run's resumable state as JSON). They are
taken between rollouts only (`callbacks.RunCallback`), so `--resume`, which builds a fresh MaskablePPO and training
env from the run's `config.json` and loads the checkpoint into them (`restore_checkpoint`), continues bit-identically
to the run never stopped (on the batched engine; docs/training.md says what is not exact). Nothing written by
Stable-Baselines3's pickling `save` is written or read back. The policy exports — `model.pt` (and self-play's
`pool/step_<timesteps>.pt`), each with its `.json` — are weights-only too (`export_policy`,
`agents.ppo.save_policy`: the policy's state dict + a JSON config), for `ppo:PATH` and `PPOAgent`; `[run] init`
reads a `.pt` written here, or a user's SB3 zip weights-only (`agents.ppo.load_policy`).
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..common import ConfigError

#: What a checkpoint's `torch.save` dict says it is (checked when resuming).
CHECKPOINT_FORMAT = "harmonies-ppo-checkpoint-2"
#: Checkpoints of the previous version (no games in flight): still resumed, with new games.
_OLD_FORMAT = "harmonies-ppo-checkpoint-1"
#: Largest resume checkpoint (`step_*.pt`) read, in bytes; its members may declare no more than it holds.
MAX_CHECKPOINT_BYTES = 2 << 30

def checkpoint_bytes(model: Any) -> bytes:
    """A resumable checkpoint of `model`, taken between two rollouts (after a PPO update, before the next step), as
    `torch.save` bytes of tensors and plain values only: the policy's and the optimizer's state dicts,
    `num_timesteps`, the update count, the torch (CPU, and the GPU's when training on one) / numpy / Python
    generator states (the policy samples actions from torch's, SB3 draws minibatches from numpy's), the last
    observations and episode starts SB3 steps from, its episode-statistics window (JSON), and the training env's
    games in flight where the env can say (`get_state()`: `harmonies_env.vector.SB3VecEnv`,
    `agents.pool_env.PoolVecEnv`; arrays as tensors, the rest as JSON). `torch.load(weights_only=True)` reads it
    without unpickling code."""
    import random

    import torch

    _, key, pos, has_gauss, gauss = np.random.get_state()
    version, py_state, py_gauss = random.getstate()
    from harmonies_env.observation import OBS_VERSION

    obj: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT, "observation_version": OBS_VERSION,
        "policy": model.policy.state_dict(), "optimizer": model.policy.optimizer.state_dict(),
        "num_timesteps": int(model.num_timesteps), "n_updates": int(getattr(model, "_n_updates", 0)),
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": {"key": torch.from_numpy(np.asarray(key, dtype=np.int64)), "pos": int(pos),
                      "has_gauss": int(has_gauss), "gauss": float(gauss)},
        "python_rng": {"version": int(version), "state": torch.tensor(py_state, dtype=torch.int64),
                       "gauss": py_gauss},
        "ep_info": json.dumps(list(model.ep_info_buffer or []), default=float)}
    if model.device.type == "cuda":  # on a GPU the policy samples from the device's generator
        obj["cuda_rng"] = torch.cuda.get_rng_state(model.device)
    if model._last_obs is not None:
        obj["last_obs"] = torch.from_numpy(np.array(model._last_obs))
        obj["last_episode_starts"] = torch.from_numpy(np.array(model._last_episode_starts, dtype=bool))
    env = model.get_env()
    if hasattr(env, "get_state"):
        arrays, plain = _split_state(env.get_state())
        obj["env"] = arrays
        obj["env_json"] = json.dumps(plain)
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _split_state(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An env state's numpy arrays (as tensors) and its other, JSON-able, values."""
    import torch

    arrays = {k: torch.from_numpy(np.array(v)) for k, v in state.items() if isinstance(v, np.ndarray)}
    return arrays, {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}


def export_policy(model: Any, path: str | Path) -> Path:
    """Write `model`'s policy as a weights-only export `path` (`NAME.pt` + `NAME.json`, atomically;
    `agents.ppo.save_policy`): what `ppo:PATH`, `PPOAgent`, the self-play pool and `[run] init` read. Never a
    Stable-Baselines3 zip (which stores pickles). Returns the `.pt` path."""
    from agents.ppo import save_policy

    return save_policy(model.policy, path)


def _read_weights(path: Path, device: str) -> dict[str, Any]:
    from agents.archive import read_torch
    from agents.checkpoint import CheckpointError

    try:
        if path.stat().st_size > MAX_CHECKPOINT_BYTES:
            raise CheckpointError(f"{path}: larger than a checkpoint can be ({MAX_CHECKPOINT_BYTES:,} bytes at most)")
        obj = read_torch(path.read_bytes(), MAX_CHECKPOINT_BYTES, path, device)
    except CheckpointError as e:
        raise ConfigError(str(e)) from None
    except Exception as e:  # noqa: BLE001 - torch raises UnpicklingError, RuntimeError, EOFError ...
        raise ConfigError(f"{path}: not a weights-only checkpoint written by these commands "
                          f"({str(e).splitlines()[0][:200]})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{path}: not a checkpoint written by these commands (a {type(obj).__name__})")
    return obj


def _check_observation_version(obj: dict[str, Any], path: Path) -> None:
    """ConfigError (naming both versions) when a `.pt` records another observation version than this code's: a
    checkpoint's own `observation_version`, or a policy export's in its NAME.json (`agents.ppo.save_policy`). One
    that records none (older files) is taken as before, by whether its weights fit."""
    from agents.ppo import check_observation_version

    recorded = obj.get("observation_version")
    if "policy" not in obj and path.with_suffix(".json").is_file():  # a policy export: its config says
        try:
            c = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            c = None
        if isinstance(c, dict) and isinstance(c.get("config"), dict):  # agents.checkpoint's sidecar
            c = c["config"]
        recorded = c.get("observation_version") if isinstance(c, dict) else None
    try:
        check_observation_version(recorded, path)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _load_policy_weights(model: Any, state: Any, path: Path) -> None:
    try:
        model.policy.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, AttributeError, KeyError) as e:
        raise ConfigError(f"{path}: its weights do not fit the network of this run's [ppo] config "
                          f"({str(e).splitlines()[0][:200]})") from None


def restore_checkpoint(model: Any, path: str | Path) -> str:
    """Load a checkpoint written by `checkpoint_bytes` into `model` (a fresh MaskablePPO built from the same
    config, on a training env built as the run's first one was): weights, optimizer, counters, generator states,
    the observations SB3 steps from and the env's games in flight. Returns "" when all of that was restored (the
    run then continues exactly as if never stopped), else why the games in flight were not (an older checkpoint,
    the per-env `vec = "dummy"` / `"subproc"` path, an env of another size): the caller must then start new
    games. `torch.load(weights_only=True)`: no code runs."""
    import random
    from collections import deque

    import torch

    path = Path(path)
    obj = _read_weights(path, str(model.device))
    if obj.get("format") not in (CHECKPOINT_FORMAT, _OLD_FORMAT):
        raise ConfigError(f"{path}: checkpoint format {obj.get('format')!r} is not {CHECKPOINT_FORMAT!r}")
    _check_observation_version(obj, path)
    _load_policy_weights(model, obj["policy"], path)
    model.policy.optimizer.load_state_dict(obj["optimizer"])
    model.num_timesteps = int(obj["num_timesteps"])
    model._n_updates = int(obj["n_updates"])
    env = model.get_env()
    why = ""
    if not hasattr(env, "set_state"):
        why = f"this run's env ({type(env).__name__}) cannot take back games in flight"
    elif "env" not in obj or "last_obs" not in obj:
        why = "the checkpoint keeps no games in flight (an older version's, or an env's that cannot keep them)"
    else:
        state = {k: v.cpu().numpy() for k, v in obj["env"].items()}
        state.update(json.loads(obj["env_json"]))
        try:
            env.set_state(state)  # validated first: a state that does not fit leaves the env as it was
        except ValueError as e:
            why = f"its games in flight do not fit this run's env ({e})"
        else:
            model._last_obs = obj["last_obs"].cpu().numpy()
            model._last_episode_starts = obj["last_episode_starts"].cpu().numpy()
    if "ep_info" in obj:
        model.ep_info_buffer = deque(json.loads(obj["ep_info"]), maxlen=model._stats_window_size)
        model.ep_success_buffer = deque(maxlen=model._stats_window_size)  # (our envs report no "is_success")
    torch.set_rng_state(obj["torch_rng"].cpu())  # (read with map_location=device: back to the CPU)
    if "cuda_rng" in obj and model.device.type == "cuda":
        torch.cuda.set_rng_state(obj["cuda_rng"].cpu(), model.device)
    r = obj["numpy_rng"]
    np.random.set_state(("MT19937", r["key"].cpu().numpy().astype(np.uint32), int(r["pos"]), int(r["has_gauss"]),
                         float(r["gauss"])))
    p = obj["python_rng"]
    random.setstate((int(p["version"]), tuple(int(x) for x in p["state"].tolist()), p["gauss"]))
    return why


def init_from(model: Any, path: str | Path) -> None:
    """Start `model` from the policy weights of `path`: a `.pt` written by these commands (a checkpoint's `policy`
    entry, or a policy export such as `model.pt`, whose state dict it is), or an SB3 `.zip` read weights-only
    (`agents.ppo.load_policy`: a zip that would need unpickling is refused). The optimizer and counters start fresh.
    A file that records another observation version than `OBS_VERSION` is refused."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"init: no checkpoint at {path}")
    if path.suffix == ".pt":
        obj = _read_weights(path, str(model.device))
        _check_observation_version(obj, path)
        _load_policy_weights(model, obj.get("policy", obj), path)
        return
    from agents.ppo import load_policy

    try:
        policy = load_policy(path, device=str(model.device), trust=False)
    except ValueError as e:
        raise ConfigError(f"init: {e}") from None
    _load_policy_weights(model, policy.state_dict(), path)
