"""Self-play MaskablePPO: the learner against a pool of its own frozen past checkpoints and the heuristics.

    python experiments/selfplay_ppo.py --timesteps 200000 --run runs/selfplay --seed 0
    python experiments/selfplay_ppo.py --run runs/selfplay --resume      # carry on after an interruption

Each episode is a 2-4 player `harmonies/Versus-v0` game; at every reset the opponent seats are filled from the
pool (RandomAgent, GreedyAgent and every frozen snapshot so far, drawn with the episode's seed). Every
`--snapshot-every` steps the current policy is frozen into the pool. Writes, under --run: `tb/` (tensorboard),
`checkpoints/` (model + pool list, for --resume), `pool/` (frozen snapshots), `eval.jsonl` (periodic evaluation
against GreedyAgent: win rate and mean score of the learner, as one JSON line each).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents import GreedyAgent, RandomAgent  # noqa: E402
from agents.ppo import PPOAgent  # noqa: E402
from experiments.common import progress_callback  # noqa: E402
from harmonies_env.env_gym import VersusEnv  # noqa: E402


class PoolOpponents(gymnasium.Wrapper):
    """Versus-v0 whose opponents are redrawn from a pool at every reset (seeded by the reset's seed)."""

    def __init__(self, env: VersusEnv, pool: list[str], greedy_beam: int = 8):
        super().__init__(env)
        self.pool = list(pool)
        self.greedy_beam = greedy_beam
        self._loaded: dict[str, Any] = {}
        self._rng = np.random.default_rng()

    def add_to_pool(self, member: str) -> None:
        if member not in self.pool:
            self.pool.append(member)

    def _agent(self, member: str):
        if member not in self._loaded:
            if member == "random":
                self._loaded[member] = RandomAgent(seed=int(self._rng.integers(2**31)))
            elif member == "greedy":
                self._loaded[member] = GreedyAgent(beam=self.greedy_beam)
            else:
                self._loaded[member] = PPOAgent(member)
        return self._loaded[member]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        env = self.env.unwrapped
        env.opponents = [self._agent(self.pool[int(self._rng.integers(len(self.pool)))])
                         for _ in range(env.num_players - 1)]
        for o in env.opponents:
            if hasattr(o, "reset"):
                o.reset()
        return self.env.reset(seed=seed, options=options)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def make_env(args: argparse.Namespace, pool: list[str], rank: int):
    def thunk():
        env = VersusEnv(num_players=args.players, side=args.side, spirits=args.spirits, reward=args.reward)
        env = PoolOpponents(env, pool, greedy_beam=args.greedy_beam)
        env.reset(seed=args.seed * 1000 + rank)
        return env
    return thunk


def evaluate(model, args: argparse.Namespace, episodes: int, seed: int) -> dict:
    """Learner (deterministic, masked) vs GreedyAgent in every other seat: win rate and mean score."""
    env = VersusEnv(num_players=args.players, side=args.side, spirits=args.spirits, reward="win",
                    opponents=GreedyAgent(beam=args.greedy_beam))
    wins, scores = 0.0, []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        info: dict = {}
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _, term, trunc, info = env.step(int(action))
            done = term or trunc
        wins += 1.0 / len(info["winners"]) if info.get("won") else 0.0
        scores.append(info["scores"]["total"])
    return {"win_rate_vs_greedy": wins / episodes, "mean_score": float(np.mean(scores)),
            "std_score": float(np.std(scores)), "episodes": episodes}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timesteps", type=int, default=200_000)
    ap.add_argument("--run", default="runs/selfplay", help="output folder (tensorboard, checkpoints, pool)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--players", type=int, default=2, choices=[2, 3, 4])
    ap.add_argument("--side", default="A", choices=["A", "B"])
    ap.add_argument("--spirits", action="store_true")
    ap.add_argument("--reward", default="score", choices=["win", "score", "dense"])
    ap.add_argument("--n-envs", type=int, default=4)
    ap.add_argument("--subproc", action="store_true", help="SubprocVecEnv workers instead of one process")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--n-steps", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--greedy-beam", type=int, default=8, help="beam of the GreedyAgent in the pool and eval")
    ap.add_argument("--no-heuristics", action="store_true", help="pool of frozen snapshots (and random) only")
    ap.add_argument("--snapshot-every", type=int, default=50_000)
    ap.add_argument("--checkpoint-every", type=int, default=20_000)
    ap.add_argument("--eval-every", type=int, default=50_000)
    ap.add_argument("--eval-episodes", type=int, default=20)
    ap.add_argument("--resume", action="store_true", help="continue from --run/checkpoints/latest.zip")
    args = ap.parse_args(argv)

    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    from tqdm import tqdm

    run = Path(args.run)
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run / "pool").mkdir(parents=True, exist_ok=True)
    state_file = run / "checkpoints" / "state.json"
    pool = ["random"] + ([] if args.no_heuristics else ["greedy"])
    if args.resume:
        if not state_file.exists():
            raise SystemExit(f"--resume: nothing to resume in {run} (no {state_file})")
        pool = json.loads(state_file.read_text())["pool"]
    torch.manual_seed(args.seed)
    fns = [make_env(args, pool, r) for r in range(args.n_envs)]
    venv = SubprocVecEnv(fns) if args.subproc else DummyVecEnv(fns)
    if args.resume:
        model = MaskablePPO.load(str(run / "checkpoints" / "latest.zip"), env=venv, device="cpu",
                                 tensorboard_log=str(run / "tb"))
    else:
        model = MaskablePPO("MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps,
                            batch_size=args.batch_size, seed=args.seed, verbose=0, device="cpu",
                            tensorboard_log=str(run / "tb"))

    class SelfPlay(BaseCallback):
        def _on_step(self) -> bool:
            t = self.num_timesteps
            n = self.training_env.num_envs
            if t % args.checkpoint_every < n:
                self.model.save(run / "checkpoints" / "latest.zip")
                state_file.write_text(json.dumps({"pool": pool, "timesteps": t}))
            if t % args.snapshot_every < n:
                snap = run / "pool" / f"step_{t}.zip"
                self.model.save(snap)
                pool.append(str(snap))
                self.training_env.env_method("add_to_pool", str(snap))
            if t % args.eval_every < n:
                res = evaluate(self.model, args, args.eval_episodes, seed=10_000 + t)
                res["timesteps"] = t
                with open(run / "eval.jsonl", "a") as f:
                    f.write(json.dumps(res) + "\n")
                self.logger.record("eval/win_rate_vs_greedy", res["win_rate_vs_greedy"])
                self.logger.record("eval/mean_score", res["mean_score"])
                tqdm.write(json.dumps(res))
            return True

    callbacks = [SelfPlay(), progress_callback(args.timesteps, "self-play")]
    model.learn(total_timesteps=args.timesteps, callback=callbacks, reset_num_timesteps=not args.resume,
                tb_log_name="selfplay")
    model.save(run / "checkpoints" / "latest.zip")
    state_file.write_text(json.dumps({"pool": pool, "timesteps": int(model.num_timesteps)}))
    res = evaluate(model, args, args.eval_episodes, seed=99_999)
    print(json.dumps({"final": True, **res}))


if __name__ == "__main__":
    main()
