"""The one evaluation helper: play the first episode of every row of a batched SB3 VecEnv with the policy
(masked, deterministic by default) and summarise what the rows report when their episode ends.

Works with every env the training commands use: `harmonies_env.vector.SB3VecEnv` (Solo, Versus vs random)
and `agents.pool_env.PoolVecEnv` (vs greedy / a pool). Evaluation envs are seeded from `EVAL_SEED`, far from every
training seed (`train_seed`), so the figures are on games never used in training.

As a command, it evaluates a run's final policy (or a uniformly random policy, for reference) on the run's own
evaluation task, on as many games as asked and on seeds of its own (default `FINAL_SEED`: not even the periodic
evaluations' games):

    python -m experiments.evaluate runs/solo_ppo --games 256
    python -m experiments.evaluate runs/solo_ppo --policy random --games 256
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: Base seed of evaluation games: row r of an evaluation plays the game of seed EVAL_SEED + r.
EVAL_SEED = 10**9 + 7
#: Base seed of `python -m experiments.evaluate` (final figures), away from EVAL_SEED's games.
FINAL_SEED = 2 * 10**9 + 11


def train_seed(seed: int) -> int:
    """Base seed of a run's training games (row r: train_seed(seed) + r); below EVAL_SEED for seeds < 999."""
    return int(seed) * 1_000_003


def play_first_episodes(model: Any, venv: Any, seed: int | None = EVAL_SEED,
                        deterministic: bool = True) -> list[dict[str, Any]]:
    """Reset `venv` (row r to game seed `seed` + r; None: to whatever seeds it holds), step every row with
    `model.predict(obs, action_masks=...)` until each row has ended one episode; the info dict each row
    reported at the end of its first episode, by row."""
    if seed is not None:
        venv.seed(seed)
    obs = venv.reset()
    n = venv.num_envs
    done = np.zeros(n, dtype=bool)
    infos_at_end: list[dict[str, Any]] = [{} for _ in range(n)]
    illegal = steps = 0
    while not done.all():
        actions, _ = model.predict(obs, action_masks=venv.action_masks(), deterministic=deterministic)
        obs, _, dones, infos = venv.step(actions)
        live = ~done
        steps += int(live.sum())
        illegal += sum(1 for r in np.flatnonzero(live) if "illegal_action" in infos[r])
        for r in np.flatnonzero(dones & live):
            infos_at_end[r] = dict(infos[r])
        done |= dones
    for i in infos_at_end:
        i["_legal_rate"] = 1.0 - illegal / max(steps, 1)
    return infos_at_end


def summarize(infos: list[dict[str, Any]]) -> dict[str, float]:
    """Mean figures over ended episodes: score (and its std), suns (solo), win rate (a tie shared among the
    tied winners where the env says so) and the learner's legal-action rate."""
    out: dict[str, float] = {"games": len(infos)}
    scores = np.array([i["score"] for i in infos], dtype=np.float64)
    out["mean_score"] = float(scores.mean())
    out["std_score"] = float(scores.std())
    if all("suns" in i for i in infos):
        out["mean_suns"] = float(np.mean([i["suns"] for i in infos]))
    if all("win_share" in i for i in infos):
        out["win_rate"] = float(np.mean([i["win_share"] for i in infos]))
    elif all("won" in i for i in infos) and "suns" not in infos[0]:
        out["win_rate"] = float(np.mean([bool(i["won"]) for i in infos]))
    if infos and "_legal_rate" in infos[0]:
        out["legal_rate"] = float(infos[0]["_legal_rate"])
    return out


def evaluate(model: Any, venv: Any, seed: int | None = EVAL_SEED, deterministic: bool = True) -> dict[str, float]:
    """`summarize(play_first_episodes(...))`: the policy's figures on the first episodes of `venv`'s rows."""
    return summarize(play_first_episodes(model, venv, seed, deterministic))


class RandomPolicy:
    """A uniformly random legal action per row, seeded; `predict` as SB3's (for reference figures)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def predict(self, obs: Any, action_masks: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        u = self.rng.random(action_masks.shape) * action_masks
        return u.argmax(axis=1), None


def main(argv: list[str] | None = None) -> int:
    import argparse
    import importlib
    import json
    from pathlib import Path

    from .common import atomic_write_json
    from .train import COMMANDS

    ap = argparse.ArgumentParser(description="evaluate a training run's policy on its evaluation task",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("run", type=Path, help="run folder of python -m experiments.train")
    ap.add_argument("--policy", default="model", help="model (the run's model.pt), random, or a checkpoint path")
    ap.add_argument("--games", type=int, default=256)
    ap.add_argument("--seed", type=int, default=FINAL_SEED, help="game r uses seed + r")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=None, help="also write the result here (JSON)")
    a = ap.parse_args(argv)
    saved = json.loads((a.run / "config.json").read_text())
    module = importlib.import_module(COMMANDS[saved["algo"]][0], __package__)
    if not hasattr(module, "eval_env"):
        raise SystemExit(f"{saved['algo']} runs have no evaluation task")
    venv = module.eval_env(saved["algo"], saved["config"], a.games, a.device)
    if a.policy == "random":
        policy: Any = RandomPolicy(a.seed)
    else:
        from agents.ppo import load_policy

        path = a.run / "model.pt" if a.policy == "model" else Path(a.policy)
        policy = load_policy(path, device=a.device)  # weights only: nothing in the file runs
    out = {"run": str(a.run), "algo": saved["algo"], "policy": a.policy, "seed": a.seed,
           **evaluate(policy, venv, a.seed)}
    if a.out:
        atomic_write_json(a.out, out)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
