"""Train MaskablePPO (sb3-contrib) on harmonies/Solo-v0: the solo rules, reward = score change.

The env exposes `action_masks()` itself, so masking works in DummyVecEnv and SubprocVecEnv alike (no
ActionMasker). Seeds make runs reproducible (up to torch's own nondeterminism on some hardware).
Every --eval-freq steps the policy plays --eval-episodes solo games (masked, deterministic) and the mean
score and suns are printed and logged to TensorBoard; checkpoints go to --checkpoint-dir.

    PYTHONPATH=. python experiments/train_solo_ppo.py --timesteps 2000 --n-envs 2 --eval-freq 1000
    tensorboard --logdir runs/solo_ppo
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.common import progress_callback  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="MaskablePPO on harmonies/Solo-v0")
    ap.add_argument("--timesteps", type=int, default=1_000_000, help="total environment steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-envs", type=int, default=4, help="parallel environments")
    ap.add_argument("--vec", choices=("batched", "dummy", "subproc"), default="batched",
                    help="batched: all games stepped by the numba batched engine in one call (default); "
                         "dummy/subproc: one Solo-v0 per env in SB3's DummyVecEnv/SubprocVecEnv")
    ap.add_argument("--subproc", action="store_true", help="shorthand for --vec subproc")
    ap.add_argument("--side", choices=("A", "B"), default="A")
    ap.add_argument("--spirits", action="store_true", help="Nature's Spirit variant")
    ap.add_argument("--lr", type=float, default=3e-4, help="learning rate")
    ap.add_argument("--n-steps", type=int, default=512, help="rollout steps per env per update")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--gamma", type=float, default=1.0, help="discount (1.0: the return is the final score)")
    ap.add_argument("--net", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    ap.add_argument("--logdir", default="runs/solo_ppo", help="TensorBoard log directory")
    ap.add_argument("--checkpoint-dir", default="checkpoints/solo_ppo")
    ap.add_argument("--checkpoint-freq", type=int, default=100_000, help="steps between checkpoints (0: none)")
    ap.add_argument("--eval-freq", type=int, default=50_000, help="steps between evaluations (0: none)")
    ap.add_argument("--eval-episodes", type=int, default=20)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (more often hurts on shared CPUs)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap.parse_args(argv)


def make_env(side: str, spirits: bool, seed: int):
    def _thunk():
        import gymnasium as gym
        from stable_baselines3.common.monitor import Monitor

        import harmonies_env.env_gym  # noqa: F401  (registers the envs in this process)

        e = Monitor(gym.make("harmonies/Solo-v0", side=side, spirits=spirits))
        e.reset(seed=seed)
        return e
    return _thunk


def evaluate(model, side: str, spirits: bool, episodes: int, seed: int) -> dict[str, float]:
    """Masked deterministic play of `episodes` solo games; mean/std score, mean suns, legal-action rate."""
    from harmonies_env.env_gym import SoloEnv

    env = SoloEnv(side=side, spirits=spirits)
    scores, suns, illegal, steps = [], [], 0, 0
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        while True:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _, term, trunc, info = env.step(int(action))
            steps += 1
            illegal += "illegal_action" in info
            if term or trunc:
                if term:
                    scores.append(info["scores"]["total"])
                    suns.append(info["suns"])
                break
    return {"mean_score": float(np.mean(scores)) if scores else float("nan"),
            "std_score": float(np.std(scores)) if scores else float("nan"),
            "mean_suns": float(np.mean(suns)) if suns else float("nan"),
            "legal_rate": 1.0 - illegal / max(steps, 1), "episodes": len(scores)}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback
    from stable_baselines3.common.utils import set_random_seed
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(args.threads)
    set_random_seed(args.seed)
    vec = "subproc" if args.subproc else args.vec
    if vec == "batched":
        from harmonies_env.vector import make_sb3_vec_env

        venv = make_sb3_vec_env(args.n_envs, num_players=1, side=args.side, spirits=args.spirits, seed=args.seed)
    else:
        fns = [make_env(args.side, args.spirits, args.seed * 1000 + i) for i in range(args.n_envs)]
        venv = SubprocVecEnv(fns) if vec == "subproc" else DummyVecEnv(fns)
        venv.seed(args.seed)

    class EvalCallback(BaseCallback):
        def __init__(self):
            super().__init__()
            self.last = 0
            self.results: list[dict] = []

        def _on_step(self) -> bool:
            if args.eval_freq and self.num_timesteps - self.last >= args.eval_freq:
                self.last = self.num_timesteps
                self.run()
            return True

        def run(self) -> None:
            r = evaluate(self.model, args.side, args.spirits, args.eval_episodes, seed=10**6 + args.seed)
            r["timesteps"] = self.num_timesteps
            self.results.append(r)
            for k in ("mean_score", "mean_suns", "legal_rate"):
                self.logger.record(f"eval/{k}", r[k])
            print(f"[eval @ {self.num_timesteps}] mean score {r['mean_score']:.1f} (+/- {r['std_score']:.1f}), "
                  f"mean suns {r['mean_suns']:.2f}, legal actions {100 * r['legal_rate']:.1f}%", flush=True)

    eval_cb = EvalCallback()
    callbacks: list[BaseCallback] = [eval_cb]
    if not args.no_progress:
        callbacks.append(progress_callback(args.timesteps))
    if args.checkpoint_freq:
        callbacks.append(CheckpointCallback(save_freq=max(args.checkpoint_freq // args.n_envs, 1),
                                            save_path=args.checkpoint_dir, name_prefix="solo_ppo"))
    model = MaskablePPO("MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps,
                        batch_size=args.batch_size, gamma=args.gamma, seed=args.seed, verbose=0,
                        tensorboard_log=args.logdir, device=args.device,
                        policy_kwargs={"net_arch": list(args.net)})
    t0 = time.time()
    model.learn(total_timesteps=args.timesteps, callback=CallbackList(callbacks),
                tb_log_name=f"side{args.side}_spirits{int(args.spirits)}_s{args.seed}")
    wall = time.time() - t0
    eval_cb.run()  # final evaluation
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    final = Path(args.checkpoint_dir) / "solo_ppo_final.zip"
    model.save(final)
    venv.close()
    summary = {"timesteps": int(model.num_timesteps), "wall_s": round(wall, 1),
               "steps_per_s": round(model.num_timesteps / max(wall, 1e-9)), "final": eval_cb.results[-1],
               "model": str(final)}
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
