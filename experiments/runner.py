"""What every training command shares: the run-level arguments, the run folder and the one MaskablePPO set-up
and training loop (`train_ppo`) that the PPO commands (solo-ppo, versus-ppo, selfplay-ppo) plug their
environments into.

A run folder holds `config.json` (the command, its resolved config and seed: what `--resume` continues),
`checkpoints/` (atomic checkpoints, the newest two kept), `eval.csv` (periodic evaluations, rewritten
atomically), `tb/` (TensorBoard), `model.pt` + `model.json` (the final policy) and `summary.json`.

Checkpoints are weights-only: `step_<timesteps>.pt` is a `torch.save` of tensors and plain values only (the
policy's and the optimizer's state dicts, the step and update counters, the torch / numpy / Python generator
states, SB3's last observations and the training env's games in flight; `checkpoint_bytes`), read back with
`torch.load(weights_only=True)`, which never unpickles code, and `step_<timesteps>.json` (its record: size, SHA-256,
the run's resumable state as JSON). They are taken between rollouts only (`callbacks.RunCallback`), so `--resume`,
which builds a fresh MaskablePPO and training env from the run's `config.json` and loads the checkpoint into them
(`restore_checkpoint`), continues bit-identically to the run never stopped (on the batched engine; docs/training.md
says what is not exact). Nothing written by Stable-Baselines3's pickling `save` is written or read back.
The policy exports — `model.pt` (and self-play's `pool/step_<timesteps>.pt`), each with its
`.json` — are weights-only too (`export_policy`, `agents.ppo.save_policy`: the policy's state dict + a JSON config),
for `ppo:PATH` and `PPOAgent`; `[run] init` reads a `.pt` written here, or a user's SB3 zip weights-only
(`agents.ppo.load_policy`).
"""
from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .common import ConfigError, Setting, atomic_write_json, latest_checkpoint, remove_temp_files


@dataclass
class RunArgs:
    """The run-level settings of one training command (everything else is in `config`: the command's complete
    config, validated against its schema by `experiments.train`, every setting present but [ppo]'s optional ones)."""

    algo: str
    config: dict[str, Any]
    seed: int = 0
    run: Path = Path("runs")
    resume: bool = False
    device: str = "cpu"
    max_minutes: float = 0.0
    progress: bool = True
    command: str = ""  # the command line that started this process, arguments included (the models record it)

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"


#: What a checkpoint's `torch.save` dict says it is (checked when resuming).
CHECKPOINT_FORMAT = "harmonies-ppo-checkpoint-2"
#: Checkpoints of the previous version (no games in flight): still resumed, with new games.
_OLD_FORMAT = "harmonies-ppo-checkpoint-1"

#: Largest resume checkpoint (`step_*.pt`) read, in bytes; its members may declare no more than it holds.
MAX_CHECKPOINT_BYTES = 2 << 30
#: The [run] section: how long to train and how often to evaluate / checkpoint (steps), torch threads.
RUN_DEFAULTS: dict[str, Any] = {"timesteps": 100_000, "eval_every": 50_000, "eval_episodes": 64,
                                "checkpoint_every": 50_000, "keep_checkpoints": 2, "threads": 1,
                                "engine_threads": 1, "init": ""}


#: The [ppo] section: MaskablePPO's own keyword arguments (passed on only when set: the library's defaults hold
#: otherwise) and `net_arch` / `activation` (policy_kwargs; `make_ppo`).
PPO_SETTINGS: dict[str, Any] = {
    **{k: Setting(like=0.0) for k in ("learning_rate", "gamma", "gae_lambda", "clip_range", "clip_range_vf",
                                      "ent_coef", "vf_coef", "max_grad_norm", "target_kl", "n_steps", "batch_size",
                                      "n_epochs", "stats_window_size")},
    "normalize_advantage": Setting(like=True), "net_arch": Setting(like=[64]), "activation": Setting(like="tanh")}


def save_run_config(args: RunArgs) -> None:
    """`run/config.json`: the command, config and seed a `--resume` continues with."""
    atomic_write_json(args.run / "config.json", {"algo": args.algo, "seed": args.seed, "config": args.config})


def make_ppo(venv: Any, ppo: dict[str, Any], seed: int, device: str, tb: str | None) -> Any:
    """The one MaskablePPO set-up: [ppo] keys are MaskablePPO's own keyword arguments, except `net_arch`
    (hidden layer sizes, for both heads) and `activation` ("tanh" / "relu"), which go to policy_kwargs."""
    import torch
    from sb3_contrib import MaskablePPO

    kw = dict(ppo)
    policy_kwargs: dict[str, Any] = {}
    if "net_arch" in kw:
        policy_kwargs["net_arch"] = list(kw.pop("net_arch"))
    if "activation" in kw:
        act = kw.pop("activation")
        acts = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
        if act not in acts:
            raise ConfigError(f"[ppo] activation must be one of {', '.join(acts)}, got {act!r}")
        policy_kwargs["activation_fn"] = acts[act]
    try:
        return MaskablePPO("MlpPolicy", venv, seed=seed, device=device, verbose=0, tensorboard_log=tb,
                           policy_kwargs=policy_kwargs, **kw)
    except TypeError as e:
        raise ConfigError(f"config section [ppo]: {e}") from None


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


@dataclass
class PPOTask:
    """How a PPO command differs from the others.

    make_env(seed) -> the training VecEnv whose row r plays games from base seed `seed` + r;
    evaluation: the match the policy is evaluated in (`experiments.evaluate.EvalMatch`; None: none);
    state() / restore(state): extra resumable state (e.g. the self-play pool); hooks: periodic (every,
    fn(model, timesteps)).
    """

    name: str
    make_env: Callable[[int], Any]
    evaluation: Any = None
    state: Callable[[], dict] | None = None
    restore: Callable[[dict], None] | None = None
    hooks: list[tuple[int, Callable[[Any, int], None]]] = field(default_factory=list)


def train_ppo(args: RunArgs, task: PPOTask) -> dict[str, Any]:
    """Train (or resume) a MaskablePPO run; returns the summary also written to `run/summary.json`.

    Checkpoints are taken between rollouts (`RunCallback`), so a resumed run on the batched engine continues
    bit-identically: same weights, same evaluation rows (but their wall/CPU minutes) as the run never stopped.
    `--resume` on a run folder without a complete checkpoint (killed before its first) starts it from scratch."""
    import torch
    from stable_baselines3.common.utils import set_random_seed

    from .callbacks import ProgressBar, RunCallback, StopTraining
    from .evaluate import EVAL_SEED, evaluate, train_seed

    cfg = args.config["run"]
    torch.set_num_threads(int(cfg["threads"]))
    set_random_seed(args.seed)
    run = args.run
    tb = str(run / "tb")
    device = args.resolved_device()
    if args.resume:  # what killed writes left behind
        for folder in (run / "checkpoints", run / "pool", run):  # pool/: the self-play opponents' exports
            remove_temp_files(folder)
    ck = latest_checkpoint(run / "checkpoints") if args.resume else None
    if args.resume and ck is None:
        print(f"--resume: no complete checkpoint in {run / 'checkpoints'} (killed before its first): "
              "starting the run from scratch", flush=True)
    if ck and ck[0].suffix != ".pt":
        raise SystemExit(f"--resume: {ck[0]} is a Stable-Baselines3 zip from an older version of this code; "
                         "resuming reads only weights-only .pt checkpoints (start the run again)")
    state = ck[1]["state"] if ck else {}
    if ck and task.restore is not None:
        task.restore(state)
    start = int(ck[1]["timesteps"]) if ck else 0
    venv = task.make_env(train_seed(args.seed))  # built as the run's first env was: a checkpoint's games go into it
    model = make_ppo(venv, args.config.get("ppo", {}), args.seed, device, tb)
    venv.seed(train_seed(args.seed))  # the model's own seeding reseeded the env: the run's games again
    if ck:
        why = restore_checkpoint(model, ck[0])  # last: the generators are the checkpoint's when learn() starts
        if why:
            venv.seed(train_seed(args.seed) + start)  # new games, not the run's first ones again
            print(f"note: {why}: the run goes on with new games, not bit-identical to the run never stopped "
                  "(docs/training.md)", flush=True)
        print(f"resumed {args.algo} from {ck[0]} at {start} steps", flush=True)
    elif cfg["init"]:
        init = Path(cfg["init"]).expanduser()
        init_from(model, init)
        print(f"initialised from {init}", flush=True)

    def run_eval(m: Any) -> dict:
        return evaluate(m, task.evaluation, EVAL_SEED)

    cb = RunCallback(run, run_eval if task.evaluation is not None else None, int(cfg["eval_every"]),
                     int(cfg["checkpoint_every"]), state=task.state, evals=state.get("evals", []),
                     keep=int(cfg["keep_checkpoints"]), hooks=task.hooks, max_minutes=args.max_minutes,
                     elapsed_minutes=float(state.get("minutes", 0.0)),
                     elapsed_cpu_minutes=float(state.get("cpu_minutes", 0.0)))
    remaining = int(cfg["timesteps"]) - start
    bar = ProgressBar(remaining, task.name, disable=not args.progress)
    t0 = time.perf_counter()
    if remaining > 0:
        try:
            model.learn(total_timesteps=remaining, reset_num_timesteps=not ck and not cfg["init"],
                        callback=[cb, bar], tb_log_name=task.name)
        except StopTraining:  # the time limit, met between two rollouts (where checkpoints are exact)
            cb.on_training_end()
            bar.on_training_end()
    else:  # nothing left to train (a finished run resumed): evaluate and save all the same
        cb.init_callback(model)
    wall = time.perf_counter() - t0
    steps = int(model.num_timesteps) - start
    # the checkpoint first: an evaluation off the eval_every grid (at the end, or at a time stop) is not carried
    # into it, so a resumed or extended run's eval.csv is the unstopped run's
    cb.checkpoint()
    if task.evaluation is not None and (not cb.evals or cb.evals[-1]["timesteps"] != model.num_timesteps):
        cb.run_eval()
    model_path = export_policy(model, run / "model.pt")
    summary = {"algo": args.algo, "timesteps": int(model.num_timesteps), "this_process_steps": steps,
               "wall_s": round(wall, 1), "steps_per_s": round(steps / max(wall, 1e-9), 1),
               "seconds": {k: round(v, 1) for k, v in cb.seconds.items()},
               "stopped_by_time": cb.stopped_by_time, "minutes": round(cb.minutes(), 2),
               "cpu_minutes": round(cb.cpu_minutes(), 2),
               "final_eval": cb.evals[-1] if cb.evals else None, "model": str(model_path),
               "seed": args.seed, **(task.state() if task.state else {})}
    atomic_write_json(run / "summary.json", summary)
    print(json.dumps(summary), flush=True)
    return summary
