"""Train the plan-choosing MaskablePPO agent against the greedy agent (the checkpoint that `PPOAgent` ships).

The learner plays one seat of 2-player games (Side A, no Spirits by default) against `GreedyAgent`; at each
of its turns it picks one of the greedy planner's 8 best whole-turn plans (`agents.plan_choice`), so it can
only beat the greedy agent by choosing better than the planner's own heuristic. All games of the batch are
stepped in one numba call (`agents.plan_env.PlanChoiceVecEnv`, `--engine-threads` cores).

Every --eval-freq steps the deterministic policy plays --eval-games fresh games (fixed seeds, seats drawn
per game) against greedy; the win rate (draws count 1/2), mean scores and margin are printed and logged to
TensorBoard, and the best policy so far is saved as `<checkpoint-dir>/best.zip`. Checkpoints every
--checkpoint-freq steps; `--resume PATH` continues a run from a checkpoint (step count, optimizer and
schedule kept). `--warm-start N` first fits a fresh policy to the planner's own first choice on N decisions
(cross-entropy), so PPO starts from the candidates' best plan instead of a uniform pick among 8. The last line
printed is a JSON summary.

    PYTHONPATH=. python experiments/train_plan_ppo.py --timesteps 200000 --n-envs 128 --engine-threads 2
    PYTHONPATH=. python experiments/train_plan_ppo.py --resume checkpoints/plan_ppo/last.zip --timesteps 100000
    tensorboard --logdir runs/plan_ppo
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.common import progress_callback  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="MaskablePPO choosing among the greedy planner's turn plans")
    ap.add_argument("--timesteps", type=int, default=1_000_000, help="learner decisions (whole turns), all games")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-envs", type=int, default=256, help="games stepped together")
    ap.add_argument("--num-players", type=int, default=2, choices=(2, 3, 4))
    ap.add_argument("--side", choices=("A", "B"), default="A")
    ap.add_argument("--spirits", action="store_true", help="Nature's Spirit variant")
    ap.add_argument("--margin-reward", type=float, default=0.02, help="reward per point of final margin")
    ap.add_argument("--lr", type=float, default=3e-4, help="learning rate")
    ap.add_argument("--n-steps", type=int, default=32, help="rollout steps per game per update")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--n-epochs", type=int, default=5)
    ap.add_argument("--gamma", type=float, default=1.0)
    ap.add_argument("--ent-coef", type=float, default=0.01)
    ap.add_argument("--net", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    ap.add_argument("--logdir", default="runs/plan_ppo", help="TensorBoard log directory ('' = none)")
    ap.add_argument("--checkpoint-dir", default="checkpoints/plan_ppo")
    ap.add_argument("--checkpoint-freq", type=int, default=200_000, help="steps between checkpoints (0: none)")
    ap.add_argument("--eval-freq", type=int, default=100_000, help="steps between evaluations (0: none)")
    ap.add_argument("--eval-games", type=int, default=256)
    ap.add_argument("--resume", default=None, help="checkpoint (.zip) to continue from")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--engine-threads", type=int, default=1, help="numba threads stepping the games (0 = all)")
    ap.add_argument("--max-minutes", type=float, default=0.0,
                    help="stop (evaluate and save) after this much wall time, even before --timesteps (0: no limit)")
    ap.add_argument("--warm-start", type=int, default=0,
                    help="fit a fresh policy to the planner's first plan on this many decisions before PPO (0: no)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap.parse_args(argv)


def warm_start(model: Any, env: Any, decisions: int, epochs: int = 4, batch_size: int = 512, lr: float = 1e-3) -> float:
    """Fit the policy to choose plan 0 (the planner's own best) on `decisions` observations of `env`.

    Why: a fresh policy picks uniformly among the candidates and spends most of a run learning that plan 0 is
    usually right. Returns the final agreement with plan 0 on the collected observations.
    """
    import torch

    obs, masks = [], []
    o = env.reset()
    zeros = np.zeros(env.num_envs, dtype=np.int64)
    while len(obs) * env.num_envs < decisions:
        obs.append(o.copy())
        masks.append(env.action_masks().copy())
        o, _, _, _ = env.step(zeros)
    obs_t = torch.as_tensor(np.concatenate(obs))
    mask = np.concatenate(masks)
    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    n = len(obs_t)
    for _ in range(epochs):
        for idx in np.array_split(rng.permutation(n), max(1, n // batch_size)):
            logits = policy.get_distribution(obs_t[idx], action_masks=mask[idx]).distribution.logits
            loss = -torch.log_softmax(logits, dim=1)[:, 0].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        logits = policy.get_distribution(obs_t, action_masks=mask).distribution.logits
        return float((logits.argmax(dim=1) == 0).float().mean())


def make_env(args: argparse.Namespace, n: int, seed: int) -> Any:
    from agents.plan_env import PlanChoiceVecEnv

    return PlanChoiceVecEnv(n, num_players=args.num_players, side=args.side, spirits=args.spirits,
                            margin_reward=args.margin_reward, num_threads=args.engine_threads, seed=seed)


def evaluate(model: Any, env: Any) -> dict[str, float]:
    """The first game of every row of `env` (reset to its seeds), the policy deterministic and masked."""
    obs = env.reset()
    n = env.num_envs
    done = np.zeros(n, dtype=bool)
    won = np.zeros(n)
    mine = np.zeros(n)
    other = np.zeros(n)
    while not done.all():
        actions, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, dones, infos = env.step(actions)
        for r in np.flatnonzero(dones & ~done):
            won[r] = (infos[r]["won"] + 1.0) / 2.0  # 1 win, 1/2 draw, 0 loss
            mine[r] = infos[r]["score"]
            other[r] = infos[r]["opponent_score"]
        done |= dones
    return {"win_rate": float(won.mean()), "mean_score": float(mine.mean()), "opponent_score": float(other.mean()),
            "margin": float((mine - other).mean()), "games": n}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback
    from stable_baselines3.common.utils import set_random_seed

    torch.set_num_threads(args.threads)
    set_random_seed(args.seed)
    venv = make_env(args, args.n_envs, seed=args.seed * 1_000_003)
    eval_env = make_env(args, args.eval_games, seed=10**9 + 7)
    ckdir = Path(args.checkpoint_dir)
    ckdir.mkdir(parents=True, exist_ok=True)

    class EvalCallback(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.last = 0
            self.best = -1.0
            self.results: list[dict] = []

        def _on_training_start(self) -> None:
            self.last = self.num_timesteps

        def _on_step(self) -> bool:
            if args.eval_freq and self.num_timesteps - self.last >= args.eval_freq:
                self.last = self.num_timesteps
                self.run()
            if args.max_minutes and time.time() - t0 > 60 * args.max_minutes:
                print(f"stopping at {self.num_timesteps} steps: --max-minutes {args.max_minutes} reached", flush=True)
                return False
            return True

        def run(self) -> None:
            r = evaluate(self.model, eval_env)
            r["timesteps"] = self.num_timesteps
            self.results.append(r)
            for k in ("win_rate", "mean_score", "opponent_score", "margin"):
                self.logger.record(f"eval/{k}", r[k])
            if r["win_rate"] > self.best:
                self.best = r["win_rate"]
                self.model.save(ckdir / "best.zip")
            print(f"[eval @ {self.num_timesteps}] vs greedy: win rate {r['win_rate']:.3f}, score "
                  f"{r['mean_score']:.1f} - {r['opponent_score']:.1f} (margin {r['margin']:+.1f})", flush=True)

    t0 = time.time()
    eval_cb = EvalCallback()
    callbacks: list[BaseCallback] = [eval_cb]
    if not args.no_progress:
        callbacks.append(progress_callback(args.timesteps, desc="plan ppo"))
    if args.checkpoint_freq:
        callbacks.append(CheckpointCallback(save_freq=max(args.checkpoint_freq // args.n_envs, 1),
                                            save_path=str(ckdir), name_prefix="plan_ppo"))
    if args.resume:
        model = MaskablePPO.load(args.resume, env=venv, device=args.device, tensorboard_log=args.logdir or None)
        print(f"resumed from {args.resume} at {model.num_timesteps} steps", flush=True)
    else:
        model = MaskablePPO("MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps,
                            batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=args.gamma,
                            ent_coef=args.ent_coef, seed=args.seed, verbose=0, tensorboard_log=args.logdir or None,
                            device=args.device, policy_kwargs={"net_arch": list(args.net)})
        if args.warm_start:
            agree = warm_start(model, venv, args.warm_start)
            print(f"warm start: the policy picks the planner's first plan in {agree:.3f} of "
                  f"{args.warm_start} decisions", flush=True)
    start = model.num_timesteps
    model.learn(total_timesteps=args.timesteps, callback=CallbackList(callbacks), tb_log_name="plan_ppo",
                reset_num_timesteps=not args.resume)
    wall = time.time() - t0
    if not eval_cb.results or eval_cb.results[-1]["timesteps"] != model.num_timesteps:
        eval_cb.run()
    model.save(ckdir / "last.zip")
    summary = {"timesteps": int(model.num_timesteps), "wall_s": round(wall, 1),
               "steps_per_s": round((model.num_timesteps - start) / max(wall, 1e-9), 1), "best_win_rate": eval_cb.best,
               "final_eval": eval_cb.results[-1], "evals": eval_cb.results, "checkpoint_dir": str(ckdir),
               "args": vars(args)}
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
