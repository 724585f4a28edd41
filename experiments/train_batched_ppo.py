"""Train MaskablePPO (sb3-contrib) on the batched engine: N games stepped in one numba call per step.

`harmonies_env.vector.SB3VecEnv` is an SB3 VecEnv over `BatchedGames`: Solo (--num-players 1, reward =
score change, the return is the final score, as harmonies/Solo-v0) or Versus against built-in random
opponents (--num-players 2-4, rewards as harmonies/Versus-v0). MaskablePPO reads the masks from it
directly; no Monitor, DummyVecEnv or SubprocVecEnv is involved. Every --eval-freq steps the policy plays
--eval-episodes games (masked, deterministic, all at once on a separate batch) and the mean score / suns /
win rate and the legal-action rate are printed and logged to TensorBoard; checkpoints go to
--checkpoint-dir. The last line printed is a JSON summary.

    PYTHONPATH=. python experiments/train_batched_ppo.py --timesteps 20000 --n-envs 64 --eval-freq 10000
    PYTHONPATH=. python experiments/train_batched_ppo.py --num-players 2 --reward win --timesteps 200000
    tensorboard --logdir runs/batched_ppo
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.common import progress_callback  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="MaskablePPO on the batched Harmonies engine")
    ap.add_argument("--timesteps", type=int, default=1_000_000, help="total environment steps (all games)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-envs", type=int, default=64, help="games stepped together")
    ap.add_argument("--num-players", type=int, default=1, help="1 = solo rules; 2-4 = Versus random opponents")
    ap.add_argument("--side", choices=("A", "B"), default="A")
    ap.add_argument("--spirits", action="store_true", help="Nature's Spirit variant")
    ap.add_argument("--reward", choices=("dense", "score", "win"), default=None,
                    help="default: dense (solo, points) / win (Versus)")
    ap.add_argument("--seat", type=int, default=None, help="Versus: learner's seat (default: drawn per game)")
    ap.add_argument("--lr", type=float, default=3e-4, help="learning rate")
    ap.add_argument("--n-steps", type=int, default=128, help="rollout steps per game per update")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--n-epochs", type=int, default=4)
    ap.add_argument("--gamma", type=float, default=1.0, help="discount (1.0: the solo return is the final score)")
    ap.add_argument("--ent-coef", type=float, default=0.0)
    ap.add_argument("--net", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    ap.add_argument("--logdir", default="runs/batched_ppo", help="TensorBoard log directory ('' = none)")
    ap.add_argument("--checkpoint-dir", default="checkpoints/batched_ppo")
    ap.add_argument("--checkpoint-freq", type=int, default=200_000, help="steps between checkpoints (0: none)")
    ap.add_argument("--eval-freq", type=int, default=100_000, help="steps between evaluations (0: none)")
    ap.add_argument("--eval-episodes", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--engine-threads", type=int, default=1, help="numba threads stepping the games")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    if args.num_players == 1 and args.seat not in (None, 0):
        ap.error("--seat is for Versus games (--num-players 2-4)")
    return args


def evaluate(model: Any, args: argparse.Namespace, episodes: int, seed: int) -> dict[str, float]:
    """Play `episodes` games at once (masked, deterministic): the first game of each row of a fresh batch."""
    from harmonies_env.batch import BatchedGames

    seat = 0 if args.num_players == 1 else args.seat
    b = BatchedGames(episodes, num_players=args.num_players, side=args.side, spirits=args.spirits, seat=seat,
                     seed=seed, reward=args.reward, max_steps=5000, num_threads=args.engine_threads)
    done = np.zeros(episodes, dtype=bool)
    scores = np.zeros(episodes)
    suns = np.zeros(episodes)
    won = np.zeros(episodes)
    returns = np.zeros(episodes)
    steps = illegal = 0
    while not done.all():
        actions, _ = model.predict(b.obs, action_masks=b.masks, deterministic=True)
        out = b.step(actions)
        live = ~done
        steps += int(live.sum())
        illegal += int((out.illegal & live).sum())
        ended = (out.terminated | out.truncated) & live
        for r in np.flatnonzero(ended):
            s = int(out.seats[r])
            scores[r] = out.final_scores[r, s, -1]
            suns[r] = out.suns[r]
            won[r] = out.final_won[r, s]
            returns[r] = out.episode_returns[r, s]
        done |= ended
    result = {"mean_score": float(scores.mean()), "std_score": float(scores.std()),
              "mean_return": float(returns.mean()), "legal_rate": 1.0 - illegal / max(steps, 1),
              "episodes": episodes}
    if args.num_players == 1:
        result["mean_suns"] = float(suns.mean())
    else:
        result["win_rate"] = float(won.mean())
    return result


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback
    from stable_baselines3.common.utils import set_random_seed

    from harmonies_env.vector import make_sb3_vec_env

    torch.set_num_threads(args.threads)
    set_random_seed(args.seed)
    seat = 0 if args.num_players == 1 else args.seat
    venv = make_sb3_vec_env(args.n_envs, num_players=args.num_players, side=args.side, spirits=args.spirits,
                            reward=args.reward, seat=seat, num_threads=args.engine_threads,
                            seed=args.seed * 1_000_003)

    class EvalCallback(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.last = 0
            self.results: list[dict] = []

        def _on_step(self) -> bool:
            if args.eval_freq and self.num_timesteps - self.last >= args.eval_freq:
                self.last = self.num_timesteps
                self.run()
            return True

        def run(self) -> None:
            r = evaluate(self.model, args, args.eval_episodes, seed=10**9 + args.seed * 10_007)
            r["timesteps"] = self.num_timesteps
            self.results.append(r)
            for k, v in r.items():
                if k not in ("timesteps", "episodes"):
                    self.logger.record(f"eval/{k}", v)
            extra = (f"mean suns {r['mean_suns']:.2f}" if "mean_suns" in r else f"win rate {r['win_rate']:.2f}")
            print(f"[eval @ {self.num_timesteps}] mean score {r['mean_score']:.1f} (+/- {r['std_score']:.1f}), "
                  f"{extra}, legal actions {100 * r['legal_rate']:.1f}%", flush=True)

    eval_cb = EvalCallback()
    callbacks: list[BaseCallback] = [eval_cb]
    if not args.no_progress:
        callbacks.append(progress_callback(args.timesteps))
    name = f"p{args.num_players}_side{args.side}_spirits{int(args.spirits)}_s{args.seed}"
    if args.checkpoint_freq:
        callbacks.append(CheckpointCallback(save_freq=max(args.checkpoint_freq // args.n_envs, 1),
                                            save_path=args.checkpoint_dir, name_prefix=f"batched_ppo_{name}"))
    model = MaskablePPO("MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps, batch_size=args.batch_size,
                        n_epochs=args.n_epochs, gamma=args.gamma, ent_coef=args.ent_coef, seed=args.seed, verbose=0,
                        tensorboard_log=args.logdir or None, device=args.device,
                        policy_kwargs={"net_arch": list(args.net)})
    t0 = time.time()
    model.learn(total_timesteps=args.timesteps, callback=CallbackList(callbacks), tb_log_name=name)
    wall = time.time() - t0
    if not eval_cb.results or eval_cb.results[-1]["timesteps"] != model.num_timesteps:
        eval_cb.run()  # final evaluation
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    final = Path(args.checkpoint_dir) / f"batched_ppo_{name}_final.zip"
    model.save(final)
    summary = {"timesteps": int(model.num_timesteps), "wall_s": round(wall, 1),
               "steps_per_s": round(model.num_timesteps / max(wall, 1e-9), 1), "final_eval": eval_cb.results[-1],
               "evals": eval_cb.results, "checkpoint": str(final), "args": vars(args)}
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
