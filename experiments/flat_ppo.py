"""Flat-action MaskablePPO: one micro-action (268 choices) per step, the masks from the env.

- `solo-ppo`: the solo rules (harmonies/Solo-v0's rewards: the return is the final score).
- `versus-ppo`: 2-4 player games against a fixed opponent: "random" (inside the batched engine) or "greedy"
  (the greedy planner, all games' opponents in one numba call, `agents.pool_env.PoolVecEnv`).
- `selfplay-ppo`: against a pool of its own frozen snapshots and the heuristics (`PoolVecEnv`); every
  `[selfplay] snapshot_every` steps the policy is frozen into the pool; evaluated against greedy.

    python -m experiments.train solo-ppo --config experiments/configs/solo_ppo.toml --max-minutes 10
    python -m experiments.train versus-ppo --config experiments/configs/versus_greedy_ppo.toml
    python -m experiments.train selfplay-ppo --config experiments/configs/selfplay_ppo.toml --run runs/sp
    python -m experiments.train selfplay-ppo --run runs/sp --resume

`[env] vec = "batched"` (default) steps every game in one numba call; "dummy" / "subproc" use one Gymnasium
env per game in SB3's DummyVecEnv / SubprocVecEnv (the per-env path, for comparison); evaluation is a match on
the match engine (`evaluation`, `experiments.ppo.evaluate`), on the seeds of `experiments.ppo.evaluate.EVAL_SEED`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harmonies_env.config import GameConfig

from .common import ConfigError
from .ppo.evaluate import EvalMatch
from .ppo.runner import PPO_SETTINGS, RUN_DEFAULTS, PPOTask, RunArgs, export_policy, train_ppo

SOLO_ENV = {"n_envs": 64, "side": "A", "spirits": False, "reward": "dense", "max_steps": 5000, "vec": "batched"}
VERSUS_ENV = {"n_envs": 64, "players": 2, "side": "A", "spirits": False, "reward": "win", "opponent": "random",
              "greedy_beam": 24, "seat": -1, "max_steps": 5000, "vec": "batched"}
SELFPLAY_ENV = {"n_envs": 32, "players": 2, "side": "A", "spirits": False, "reward": "score",
                "pool": ["random", "greedy"], "greedy_beam": 8, "opponent_sample": False, "vec": "batched"}
SELFPLAY = {"snapshot_every": 50_000, "eval_beam": 8}
VECS = ("batched", "dummy", "subproc")
#: Each command's settings (`experiments.common.check_config` validates a config against them at load).
SCHEMAS = {"solo-ppo": {"run": RUN_DEFAULTS, "env": SOLO_ENV, "ppo": PPO_SETTINGS},
           "versus-ppo": {"run": RUN_DEFAULTS, "env": VERSUS_ENV, "ppo": PPO_SETTINGS},
           "selfplay-ppo": {"run": RUN_DEFAULTS, "env": SELFPLAY_ENV, "selfplay": SELFPLAY, "ppo": PPO_SETTINGS}}


def _check(env: dict[str, Any], vecs: tuple[str, ...] = VECS) -> None:
    if env["vec"] not in vecs:
        raise ConfigError(f"[env] vec must be one of {', '.join(vecs)}, got {env['vec']!r}")
    if int(env["n_envs"]) < 1:
        raise ConfigError(f"[env] n_envs must be positive, got {env['n_envs']!r}")


def _gym_vec(make_one: Any, n: int, vec: str, seed: int) -> Any:
    """n one-game Gymnasium envs (with SB3's Monitor) in a DummyVecEnv / SubprocVecEnv."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [make_one for _ in range(n)]
    venv = SubprocVecEnv(fns) if vec == "subproc" else DummyVecEnv(fns)
    venv.seed(seed)
    return venv


def env_config(env: dict[str, Any], num_players: int | None = None) -> GameConfig:
    """The ONE `GameConfig` of a run's [env] settings (players, side, spirits; `num_players` for a solo run, whose
    [env] has no players): what the envs and the evaluation match are built from."""
    players = int(env["players"]) if num_players is None else int(num_players)
    return GameConfig(players, env["side"], bool(env["spirits"]))


class _SoloThunk:
    def __init__(self, env: dict[str, Any]):
        self.env = env

    def __call__(self) -> Any:
        from stable_baselines3.common.monitor import Monitor

        from harmonies_env.env_gym import SoloEnv

        return Monitor(SoloEnv(config=env_config(self.env, 1), max_steps=self.env["max_steps"]))


class _VersusThunk(_SoloThunk):
    def __call__(self) -> Any:
        from stable_baselines3.common.monitor import Monitor

        from harmonies_env.env_gym import VersusEnv

        e = self.env
        seat = None if int(e["seat"]) < 0 else int(e["seat"])
        return Monitor(VersusEnv(config=env_config(e), reward=e["reward"], seat=seat, max_steps=e["max_steps"]))


def solo_env(env: dict[str, Any], n: int, seed: int, threads: int = 1) -> Any:
    """n solo games on the batched engine ([env] settings), row r from base seed `seed` + r."""
    from harmonies_env.vector import make_sb3_vec_env

    return make_sb3_vec_env(n, config=env_config(env, 1), reward=env["reward"], max_steps=env["max_steps"],
                            num_threads=threads, seed=seed)


def versus_env(env: dict[str, Any], n: int, seed: int, threads: int = 1, device: str = "cpu") -> Any:
    """n Versus games against [env] opponent on the batched engine, row r from base seed `seed` + r."""
    seat = None if int(env["seat"]) < 0 else int(env["seat"])
    if env["opponent"] == "random":
        from harmonies_env.vector import make_sb3_vec_env

        return make_sb3_vec_env(n, config=env_config(env), reward=env["reward"], seat=seat,
                                max_steps=env["max_steps"], num_threads=threads, seed=seed)
    from agents.pool_env import PoolVecEnv

    return PoolVecEnv(n, config=env_config(env), reward=env["reward"], pool=["greedy"],
                      greedy_beam=int(env["greedy_beam"]), seat=seat, max_steps=env["max_steps"], seed=seed,
                      device=device)


def _versus_settings(config: dict[str, Any]) -> dict[str, Any]:
    env = config["env"]
    _check(env)
    if env["opponent"] not in ("random", "greedy"):
        raise ConfigError(f"[env] opponent must be 'random' or 'greedy', got {env['opponent']!r}")
    if env["opponent"] == "greedy" and env["vec"] != "batched":
        raise ConfigError("[env] opponent 'greedy' runs on the batched engine only (vec = \"batched\"); "
                          "selfplay-ppo has a per-env path with agent opponents")
    return env


def evaluation(algo: str, config: dict[str, Any], games: int) -> EvalMatch:
    """The match a solo-ppo / versus-ppo / selfplay-ppo run's policy is evaluated in (`experiments.ppo.evaluate`):
    solo alone; versus against its training opponent in every other seat; selfplay against the greedy planner at
    [selfplay] eval_beam."""
    threads = int(config["run"]["engine_threads"])
    env = config["env"]
    if algo == "solo-ppo":
        return EvalMatch(env_config(env, 1), (), games, threads)
    if algo == "versus-ppo":
        env = _versus_settings(config)
        other = "random" if env["opponent"] == "random" else f"greedy:{int(env['greedy_beam'])}"
        return EvalMatch(env_config(env), (other,) * (int(env["players"]) - 1), games, threads)
    beam = int(config["selfplay"]["eval_beam"])
    return EvalMatch(env_config(env), (f"greedy:{beam}",) * (int(env["players"]) - 1), games, threads)


def solo(args: RunArgs) -> dict[str, Any]:
    """`solo-ppo`: MaskablePPO on the solo rules."""
    env = args.config["env"]
    _check(env)
    if env["vec"] != "batched" and env["reward"] != "dense":
        raise ConfigError("[env] Solo-v0 per env (vec \"dummy\" / \"subproc\") has the \"dense\" reward only")
    run = args.config["run"]
    threads = int(run["engine_threads"])

    def make_env(seed: int) -> Any:
        if env["vec"] == "batched":
            return solo_env(env, int(env["n_envs"]), seed, threads)
        return _gym_vec(_SoloThunk(env), int(env["n_envs"]), env["vec"], seed)

    return train_ppo(args, PPOTask("solo-ppo", make_env, evaluation("solo-ppo", args.config,
                                                                    int(run["eval_episodes"]))))


def versus(args: RunArgs) -> dict[str, Any]:
    """`versus-ppo`: MaskablePPO against a fixed opponent ("random" or "greedy")."""
    env = _versus_settings(args.config)
    run = args.config["run"]
    threads = int(run["engine_threads"])
    device = args.resolved_device()

    def make_env(seed: int) -> Any:
        if env["vec"] == "batched":
            return versus_env(env, int(env["n_envs"]), seed, threads, device)
        return _gym_vec(_VersusThunk(env), int(env["n_envs"]), env["vec"], seed)

    return train_ppo(args, PPOTask(f"versus-ppo-{env['opponent']}", make_env,
                                   evaluation("versus-ppo", args.config, int(run["eval_episodes"]))))


class _Pool:
    """The self-play pool: member names ("random", "greedy") and snapshot files, kept relative to the run
    folder in checkpoints so that a run folder can be moved or resumed from another working directory."""

    def __init__(self, run: Path, members: list[str]):
        self.run = run
        self.members = [self._abs(m) for m in members]
        self.envs: list[Any] = []

    def _abs(self, m: str) -> str:
        return m if m in ("random", "greedy") else str((self.run / m).resolve())

    def _rel(self, m: str) -> str:
        if m in ("random", "greedy"):
            return m
        try:
            return str(Path(m).resolve().relative_to(self.run.resolve()))
        except ValueError:
            return m

    def state(self) -> dict:
        return {"pool": [self._rel(m) for m in self.members]}

    def restore(self, state: dict) -> None:
        self.members = [self._abs(m) for m in state.get("pool", self.members)]

    def snapshot(self, model: Any, timesteps: int) -> None:
        path = export_policy(model, self.run / "pool" / f"step_{timesteps:012d}.pt")  # weights-only (+ .json)
        self.members.append(str(path.resolve()))
        for e in self.envs:
            e.env_method("add_to_pool", str(path.resolve()))


def selfplay(args: RunArgs) -> dict[str, Any]:
    """`selfplay-ppo`: MaskablePPO against a pool of its frozen snapshots and the heuristics."""
    from agents.pool_env import PoolVecEnv

    env = args.config["env"]
    _check(env, ("batched", "dummy", "subproc"))
    sp = args.config["selfplay"]
    if env["opponent_sample"] and env["vec"] != "batched":
        raise ConfigError("[env] opponent_sample is for vec = \"batched\"")
    run = args.config["run"]
    pool = _Pool(args.run, list(env["pool"]))
    device = args.resolved_device()

    def make_env(seed: int) -> Any:
        if env["vec"] == "batched":
            venv = PoolVecEnv(int(env["n_envs"]), config=env_config(env), reward=env["reward"], pool=pool.members,
                              greedy_beam=int(env["greedy_beam"]), opponent_sample=env["opponent_sample"],
                              seed=seed, device=device)
        else:
            venv = _gym_vec(_PoolThunk(env, pool.members), int(env["n_envs"]), env["vec"], seed)
        pool.envs.append(venv)
        return venv

    task = PPOTask("selfplay-ppo", make_env, evaluation("selfplay-ppo", args.config, int(run["eval_episodes"])),
                   state=pool.state, restore=pool.restore,
                   hooks=[(int(sp["snapshot_every"]), pool.snapshot)])
    return train_ppo(args, task)


class _PoolThunk:
    def __init__(self, env: dict[str, Any], members: list[str]):
        self.env, self.members = env, list(members)

    def __call__(self) -> Any:
        from agents.pool_env import PoolOpponents
        from harmonies_env.env_gym import VersusEnv

        e = self.env
        return PoolOpponents(VersusEnv(config=env_config(e), reward=e["reward"]), self.members,
                             greedy_beam=int(e["greedy_beam"]))
