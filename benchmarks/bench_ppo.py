"""Where SB3's MaskablePPO loop spends its time on the batched Solo env, per setting: steps per CPU-second of the
whole loop, of collecting rollouts (engine + policy forward + SB3's buffer) and of the PPO update, and the
engine alone (random legal actions).

Why CPU seconds: on a shared machine wall time depends on the neighbours; with torch and numba held to one
thread, CPU time is the single-core cost. Settings:
- `old-default`: what the first solo PPO script (before `experiments.train`) ran with 64 games (n_steps 512, batch
  256, SB3's 10 epochs, [256, 256]);
- `config`: experiments/configs/solo_ppo.toml (256 games x 32 steps, batch 2048, 2 epochs, [128, 128]);
- `config-256`: the same with [256, 256] hidden layers.

    NUMBA_NUM_THREADS=1 python -m benchmarks.bench_ppo --updates 3
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

SETTINGS: dict[str, dict[str, Any]] = {
    "old-default": {"n_envs": 64, "ppo": {"n_steps": 512, "batch_size": 256, "n_epochs": 10, "gamma": 1.0,
                                          "net_arch": [256, 256]}},
    "config": {"n_envs": 256, "ppo": None},
    "config-256": {"n_envs": 256, "ppo": {"net_arch": [256, 256]}},
}


def engine_only(n_envs: int, steps: int) -> float:
    """Steps per CPU-second of the SB3VecEnv alone, random legal actions."""
    from harmonies_env.vector import make_sb3_vec_env

    env = make_sb3_vec_env(n_envs, num_players=1, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    c = time.process_time()
    done = 0
    while done < steps:
        m = env.action_masks()
        env.step((rng.random(m.shape) * m).argmax(axis=1))
        done += n_envs
    return done / (time.process_time() - c)


def measure(name: str, updates: int) -> dict[str, Any]:
    import tomllib
    from pathlib import Path

    from stable_baselines3.common.callbacks import BaseCallback

    from experiments.ppo.runner import make_ppo
    from harmonies_env.vector import make_sb3_vec_env

    cfg = tomllib.loads((Path(__file__).resolve().parents[1] / "experiments/configs/solo_ppo.toml").read_text())
    s = SETTINGS[name]
    ppo = dict(cfg["ppo"])
    ppo.update(s["ppo"] or {})
    if name == "old-default":
        ppo = dict(s["ppo"])
    venv = make_sb3_vec_env(s["n_envs"], num_players=1, seed=0)
    model = make_ppo(venv, ppo, 0, "cpu", None)
    per_update = s["n_envs"] * ppo["n_steps"]

    class Clock(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rollout = self.train = 0.0
            self.mark = time.process_time()

        def _on_rollout_start(self) -> None:
            now = time.process_time()
            self.train += now - self.mark
            self.mark = now

        def _on_rollout_end(self) -> None:
            now = time.process_time()
            self.rollout += now - self.mark
            self.mark = now

        def _on_step(self) -> bool:
            return True

    model.learn(per_update)  # warm-up: compile, allocate
    clock = Clock()
    c = time.process_time()
    model.learn(per_update * updates, reset_num_timesteps=False, callback=clock)
    total = time.process_time() - c
    clock.train += time.process_time() - clock.mark
    steps = per_update * updates
    return {"setting": name, "n_envs": s["n_envs"], "n_steps": ppo["n_steps"], "batch_size": ppo["batch_size"],
            "n_epochs": ppo["n_epochs"], "net_arch": ppo["net_arch"], "steps": steps,
            "steps_per_cpu_s": round(steps / total), "rollout_steps_per_cpu_s": round(steps / clock.rollout),
            "update_steps_per_cpu_s": round(steps / clock.train), "update_share": round(clock.train / total, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=3, help="PPO updates measured per setting (after one warm-up)")
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    print(json.dumps({"engine_only_steps_per_cpu_s": round(engine_only(256, 200_000))}), flush=True)
    for name in a.settings:
        print(json.dumps(measure(name, a.updates)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
