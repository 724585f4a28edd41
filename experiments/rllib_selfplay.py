"""Self-play PPO with Ray RLlib on the PettingZoo AEC env, with action masking; runs locally or on a Ray cluster.

Every seat (`player_0` .. `player_{n-1}`) is mapped to ONE shared policy ("shared"), so the policy plays
against copies of itself. The policy is `MaskedPPOModule`: RLlib's default PPO torch module on the
`"observation"` part of the AEC env's Dict observation, whose logits of illegal actions are pushed to
-inf with the `"action_mask"` part, so only legal actions are ever sampled (the AEC env's
TerminateIllegalWrapper, which ends a game on an illegal action, never fires).

Needs the optional extra: `pip install -e .[distributed]` (Ray RLlib; see docs/distributed.md).

    python -m experiments.train rllib-ppo --set rllib.iterations=20 --set rllib.num_env_runners=2   # here
    python -m experiments.train rllib-ppo --set rllib.address='"auto"' --set rllib.num_env_runners=32  # cluster

Settings in experiments/configs/rllib_ppo.toml. Every `[rllib] checkpoint_every` iterations it writes a
weights-only checkpoint `<run>/iter_NNNNN/`: `module.pt`, a `torch.save` of the shared policy's weights (tensors
only, read with `torch.load(weights_only=True)`), and `module.json`, `agents.checkpoint`'s one sidecar (format
"rllib", the weights' size and SHA-256, their shapes, the settings that rebuild the algorithm as its config, the
iteration as its training record); `restore` rebuilds the algorithm from the sidecar and loads the weights. Folders
written before that schema (`checkpoint.json` beside `module.pt`) still restore. Not RLlib's own `save_to_path`
folders: those store pickles (`class_and_ctor_args.pkl`,
state pickles), which `Algorithm.from_checkpoint` unpickles, i.e. a crafted folder runs code. The checkpoint holds
the policy, not the optimizer or the sampling state: it is for playing, evaluating and starting a new run, not
an exact resume. Prints one JSON line per iteration (episode return mean, episode length mean, steps sampled,
time) and keeps them in `<run>/progress.csv` (rewritten atomically).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from harmonies_env.firstrun import install_hint

try:
    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.tune.registry import register_env
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(f"experiments.rllib_selfplay needs Ray RLlib: {install_hint('distributed')}") from e

from agents.archive import read_torch
from agents.checkpoint import CheckpointError, read_checked_weights, read_checkpoint, read_sidecar, write_checkpoint
from harmonies_env import env_aec
from harmonies_env.config import GameConfig

from .commands import RunArgs
from .common import atomic_write_csv

ENV_NAME = "harmonies_aec"
POLICY = "shared"
#: The `agents.checkpoint` format of a weights-only RLlib checkpoint (`save_checkpoint`, `restore`).
CHECKPOINT_FORMAT = "rllib"
#: The format tag and version of the folders' `checkpoint.json` before the one sidecar schema (still restored).
LEGACY_FORMAT, LEGACY_VERSION = "harmonies-rllib-checkpoint", 1
#: Largest module.pt restored (the shared policy of a few wide layers is a few MiB).
MAX_WEIGHTS_BYTES = 256 << 20
#: The game fields of a checkpoint's settings (`GameConfig`'s); legacy sidecars held num_players/side/spirits loose.
_GAME = ("num_players", "side", "spirits", "river_loops")
#: The `build_config` settings a checkpoint records (how many runners / learners is the restoring machine's choice).
_SETTINGS = ("config", "reward", "train_batch_size", "minibatch_size", "num_epochs", "lr",
             "hidden", "seed")
_FLOAT_MIN = -3.4e38


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """PPO torch module over the Dict observation {"observation": float32 (2811,), "action_mask": int8 (268,)}.

    The networks see only "observation"; "action_mask" turns illegal actions' logits into a very large
    negative number before the action distribution is built, in exploration, inference and training alike.
    """

    def __init__(self, *, observation_space=None, **kwargs: Any):
        self.observation_space_with_mask = observation_space
        super().__init__(observation_space=observation_space["observation"], **kwargs)

    def setup(self) -> None:
        super().setup()
        self.observation_space = self.observation_space_with_mask

    @staticmethod
    def _split(batch: dict) -> tuple[Any, dict]:
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            mask = obs["action_mask"]
            batch = dict(batch)
            batch[Columns.OBS] = obs["observation"]
            batch["action_mask"] = mask
        return batch["action_mask"], batch

    @staticmethod
    def _mask(out: dict, mask: Any) -> dict:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = torch.where(mask.bool(), logits, torch.full_like(logits, _FLOAT_MIN))
        return out

    def _forward_inference(self, batch: dict, **kwargs: Any) -> dict:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict, **kwargs: Any) -> dict:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict, **kwargs: Any) -> dict:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict, embeddings: Any = None) -> Any:
        _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


def make_env(config: dict | None = None) -> PettingZooEnv:
    """The AEC env (with PettingZoo's classic wrappers) as an RLlib MultiAgentEnv; config = env_aec.env kwargs
    (`build_config` passes {"config": GameConfig, "reward": ...})."""
    cfg = dict(config or {})
    return PettingZooEnv(env_aec.env(**cfg))


def build_config(config: GameConfig | None = None, reward: str = "win", num_env_runners: int = 0,
                 envs_per_runner: int = 1, train_batch_size: int = 4000,
                 minibatch_size: int = 512, num_epochs: int = 4, lr: float = 3e-4, hidden: tuple[int, ...] = (256, 256),
                 seed: int | None = 0, num_learners: int = 0, num_gpus_per_learner: float = 0.0) -> PPOConfig:
    """PPOConfig for self-play on games of `config` (default: 2 players, Side A): every seat -> the shared masked
    policy. num_env_runners=0 samples in-process."""
    register_env(ENV_NAME, make_env)
    env_config = {"config": config or GameConfig(), "reward": reward}
    module = RLModuleSpec(module_class=MaskedPPOModule,
                          model_config={"fcnet_hiddens": list(hidden), "fcnet_activation": "relu",
                                        "vf_share_layers": False})
    config = (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config, disable_env_checking=True)  # its random probe is unmasked
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=envs_per_runner,
                     num_cpus_per_env_runner=1)
        .learners(num_learners=num_learners, num_gpus_per_learner=num_gpus_per_learner)
        .multi_agent(policies={POLICY}, policy_mapping_fn=lambda agent_id, episode, **kw: POLICY,
                     policies_to_train=[POLICY])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={POLICY: module}))
        .training(train_batch_size_per_learner=train_batch_size, minibatch_size=minibatch_size,
                  num_epochs=num_epochs, lr=lr, gamma=1.0, lambda_=0.95, entropy_coeff=0.01)
        .debugging(seed=seed)
    )
    return config


def _settings_json(settings: dict[str, Any]) -> dict[str, Any]:
    """`build_config` settings as the sidecar's JSON config: the GameConfig as its fields, tuples as lists."""
    out = {}
    for k, v in settings.items():
        if isinstance(v, GameConfig):
            v = {f: getattr(v, f) for f in _GAME}
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _settings_of(doc: Any, where: Path) -> dict[str, Any]:
    """The `build_config` keyword arguments of a sidecar's settings (a legacy sidecar's loose num_players / side /
    spirits become the GameConfig), or CheckpointError naming `where`."""
    if not isinstance(doc, dict):
        raise CheckpointError(f"{where}: its settings are missing")
    kw = dict(doc)
    game = kw.pop("config", None)
    game = dict(game) if isinstance(game, dict) else {}
    for k in _GAME:
        if k in kw:
            game[k] = kw.pop(k)
    if set(kw) - set(_SETTINGS) or set(game) - set(_GAME):
        raise CheckpointError(f"{where}: its settings hold unknown keys")
    try:
        kw["config"] = GameConfig(**game)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{where}: {e}") from None
    if "hidden" in kw:
        kw["hidden"] = tuple(kw["hidden"])
    return kw


def save_checkpoint(algo: Any, folder: str | Path, settings: dict[str, Any], iteration: int) -> Path:
    """Write the shared policy of `algo` (built by `build_config(**settings, ...)`) as a weights-only checkpoint
    `folder/`: `module.pt` (its learner's weights: a `torch.save` of tensors) then `module.json`
    (`agents.checkpoint.write_checkpoint`: format "rllib", the settings as config, the iteration as training), each
    atomically. Returns the folder. Read back by `restore`."""
    import io

    folder = Path(folder)
    state = algo.learner_group.get_weights([POLICY])[POLICY]
    if not isinstance(state, dict) or not all(hasattr(v, "shape") for v in state.values()):
        raise TypeError("the RLModule's state is not a flat dict of arrays; cannot write it weights-only")
    unknown = set(settings) - set(_SETTINGS)
    if unknown:
        raise ValueError(f"unknown checkpoint settings {sorted(unknown)}")
    buf = io.BytesIO()
    torch.save({k: torch.as_tensor(np.asarray(v)).clone() for k, v in state.items()}, buf)
    write_checkpoint(folder / "module.pt", buf.getvalue(), CHECKPOINT_FORMAT,
                     {"module": POLICY, "settings": _settings_json(settings)},
                     shapes={k: list(np.shape(v)) for k, v in state.items()},
                     training={"iteration": int(iteration)})
    return folder


def _legacy_weights(folder: Path) -> tuple[bytes, dict[str, Any]]:
    """(weights, settings) of a folder written before the one sidecar schema: `checkpoint.json` (format
    LEGACY_FORMAT) beside `module.pt`, read and checked by `agents.checkpoint`'s readers."""
    cpath = folder / "checkpoint.json"
    c = read_sidecar(cpath, ("format", "version", "iteration", "module", "settings", "weights", "weights_bytes",
                             "weights_sha256"), "format", "an RLlib checkpoint")
    if c.get("format") != LEGACY_FORMAT or type(c.get("version")) is not int or c["version"] != LEGACY_VERSION:
        raise CheckpointError(f"{cpath}: not a {LEGACY_FORMAT!r} version {LEGACY_VERSION} checkpoint")
    path = folder / "module.pt"
    if path.is_file() and path.stat().st_size != c.get("weights_bytes"):
        raise CheckpointError(f"{path}: does not match the size recorded in {cpath.name}")
    return read_checked_weights(path, cpath, c.get("weights_sha256"), MAX_WEIGHTS_BYTES, "an RLlib checkpoint"), \
        _settings_of(c.get("settings"), cpath)


def restore(path: str | Path, num_env_runners: int = 0) -> Any:
    """An Algorithm rebuilt from a checkpoint folder written by `save_checkpoint` (or its `module.pt` / sidecar):
    `build_config` from the recorded settings, then the weights loaded with `torch.load(weights_only=True)` into
    its learner and synced to its env runners. Nothing from the folder is unpickled. `agents.checkpoint.
    CheckpointError` (a ValueError, one line naming the file) for a folder that is not such a checkpoint, or whose
    weights do not match their record (a torn write); a folder of the older `checkpoint.json` still restores."""

    folder = Path(path)
    if folder.suffix in (".json", ".pt"):
        folder = folder.parent
    if (folder / "module.json").is_file():
        ck = read_checkpoint(folder / "module.pt", ".pt", CHECKPOINT_FORMAT, "an RLlib checkpoint", MAX_WEIGHTS_BYTES)
        config = ck.config if isinstance(ck.config, dict) else {}
        weights, settings = ck.data, _settings_of(config.get("settings"), ck.sidecar_path)
    elif (folder / "checkpoint.json").is_file():
        weights, settings = _legacy_weights(folder)
    elif (folder / "class_and_ctor_args.pkl").exists() or (folder / "rllib_checkpoint.json").exists():
        raise ValueError(f"{folder}: an RLlib save_to_path checkpoint (it stores pickles, which load by running "
                         "code from the folder); only weights-only checkpoints written by this script are read. "
                         "If you trust it: ray.rllib.algorithms.algorithm.Algorithm.from_checkpoint")
    else:
        raise FileNotFoundError(f"no module.json (or older checkpoint.json) in {folder}")
    try:
        state = read_torch(weights, MAX_WEIGHTS_BYTES, folder / "module.pt")
    except CheckpointError:
        raise
    except Exception as e:  # noqa: BLE001 - the restricted unpickler refuses anything but tensors and containers
        raise CheckpointError(f"{folder / 'module.pt'}: holds more than tensors ({type(e).__name__})") from None
    algo = build_config(**settings, num_env_runners=num_env_runners).build_algo()
    try:
        algo.learner_group.set_weights({POLICY: {k: v.numpy() for k, v in state.items()}})
        algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True)
    except Exception:
        algo.stop()
        raise
    return algo


def summarize(result: dict, iteration: int, started: float) -> dict:
    """The few numbers worth a log line from an RLlib result dict (keys differ a little across versions)."""
    er = result.get("env_runners", {})

    def num(x: Any) -> float | None:
        return None if x is None else round(float(x), 4)

    return {"iteration": iteration,
            "episode_return_mean": num(er.get("episode_return_mean")),
            "episode_len_mean": num(er.get("episode_len_mean")),
            "episodes": num(er.get("num_episodes")),
            "env_steps_sampled": num(result.get("num_env_steps_sampled_lifetime",
                                                er.get("num_env_steps_sampled_lifetime"))),
            "seconds": round(time.time() - started, 1)}


ENV = {"num_players": 2, "side": "A", "spirits": False, "reward": "win"}
RLLIB = {"iterations": 10, "num_env_runners": 0, "envs_per_runner": 1, "num_learners": 0, "gpus_per_learner": 0.0,
         "address": "", "checkpoint_every": 5}
PPO = {"train_batch_size": 4000, "minibatch_size": 512, "num_epochs": 4, "lr": 3e-4, "hidden": [256, 256]}
#: The command's settings (validated at load, `experiments.common.check_config`).
SCHEMAS = {"rllib-ppo": {"env": ENV, "rllib": RLLIB, "ppo": PPO}}


def run(args: RunArgs) -> dict[str, Any]:
    """`rllib-ppo`: train for `[rllib] iterations`, checkpointing into the run folder."""
    env = args.config["env"]
    r = args.config["rllib"]
    p = args.config["ppo"]
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(address=r["address"] or None, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    settings = {"config": GameConfig(env["num_players"], env["side"], env["spirits"]), "reward": env["reward"],
                "train_batch_size": p["train_batch_size"],
                "minibatch_size": p["minibatch_size"], "num_epochs": p["num_epochs"], "lr": p["lr"],
                "hidden": tuple(p["hidden"]), "seed": args.seed}
    config = build_config(**settings, num_env_runners=r["num_env_runners"], envs_per_runner=r["envs_per_runner"],
                          num_learners=r["num_learners"], num_gpus_per_learner=r["gpus_per_learner"])
    algo = config.build_algo()
    started = time.time()
    rows: list[dict] = []
    try:
        for it in range(1, int(r["iterations"]) + 1):
            rows.append(summarize(algo.train(), it, started))
            atomic_write_csv(args.run / "progress.csv", rows)
            print(json.dumps(rows[-1]), flush=True)
            every = int(r["checkpoint_every"])
            if every and (it % every == 0 or it == int(r["iterations"])):
                path = save_checkpoint(algo, args.run / f"iter_{it:05d}", settings, it)  # weights-only
                print(json.dumps({"checkpoint": str(path)}), flush=True)
            if args.max_minutes and time.time() - started > 60 * args.max_minutes:
                break
    finally:
        algo.stop()
        ray.shutdown()
    return rows[-1] if rows else {}


def legal_action_rate(algo: Any, games: int = 2, seed: int = 0, config: GameConfig | None = None) -> float:
    """Play `games` games of `config` (default: 2 players) with the trained shared policy (greedy) and return the
    share of legal actions (1.0)."""
    module = algo.get_module(POLICY)
    e = env_aec.raw_env(config=config or GameConfig())
    legal = total = 0
    for g in range(games):
        e.reset(seed=seed + g)
        while not all(e.terminations.values()):
            ob = e.observe(e.agent_selection)
            batch = {Columns.OBS: {"observation": torch.from_numpy(ob["observation"][None]),
                                   "action_mask": torch.from_numpy(ob["action_mask"][None])}}
            with torch.no_grad():
                logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0].numpy()
            act = int(np.argmax(logits))
            total += 1
            legal += bool(ob["action_mask"][act])
            if not ob["action_mask"][act]:
                break
            e.step(act)
    return legal / max(total, 1)

