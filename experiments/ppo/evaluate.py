"""The PPO commands' evaluation: the policy plays a match against agents on the match engine
(`agents.match.play_match`, the one that plays every bot against every other: seeds, seat rotation, the game's
winner rule), and the results are summarised.

What each command's policy meets is an `EvalMatch` (`flat_ppo.evaluation`): solo-ppo plays the solo rules alone,
versus-ppo its training opponent (random, or greedy at the config's beam) in every other seat, selfplay-ppo the
greedy planner. Evaluation games have seeds from `EVAL_SEED` on, far from every training seed (`train_seed`), so
the figures are on games never used in training; the policy plays its most likely legal action
(`agents.ppo.policy_actions`, the one batched PPO decision), so an evaluation draws from no generator and does not
change the run.

As a command, it evaluates a run's final policy (or a uniformly random policy, for reference) in the run's own
evaluation match, on as many games as asked and on seeds of its own (default `FINAL_SEED`: not even the periodic
evaluations' games):

    python -m experiments.ppo.evaluate runs/solo_ppo --games 256
    python -m experiments.ppo.evaluate runs/solo_ppo --policy random --games 256
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from harmonies_env.config import GameConfig

#: Base seed of evaluation games: game i of an evaluation is the game of seed EVAL_SEED + i.
EVAL_SEED = 10**9 + 7
#: Base seed of `python -m experiments.ppo.evaluate` (final figures), away from EVAL_SEED's games.
FINAL_SEED = 2 * 10**9 + 11


def train_seed(seed: int) -> int:
    """Base seed of a run's training games (row r: train_seed(seed) + r); below EVAL_SEED for seeds < 999."""
    return int(seed) * 1_000_003


@dataclass(frozen=True)
class EvalMatch:
    """The match a command's policy is evaluated in: `games` games of `config`, the policy against `opponents` (one
    agent spec per other seat; none: solo), seats rotated game by game."""

    config: GameConfig
    opponents: tuple[str, ...]
    games: int
    threads: int = 1


class ModelPolicy:
    """A flat-action PPO policy (a MaskablePPO's `.policy`, or `agents.ppo.load_policy`'s) as a batch policy: the
    most likely legal action in every game, in one forward pass (`agents.ppo.policy_actions`)."""

    def __init__(self, policy: Any, name: str = "policy"):
        self.policy, self.name = getattr(policy, "policy", policy), name  # a MaskablePPO model: its policy

    def act_batch(self, batch: Any) -> np.ndarray:
        from agents.ppo import policy_actions

        if not len(batch):
            return np.zeros(0, dtype=np.int64)
        return policy_actions(self.policy, np.array(batch.observations, dtype=np.float32),
                              np.array(batch.action_masks, dtype=bool))  # writable copies, as torch wants


class RandomPolicy:
    """A uniformly random legal action in every game, seeded (for reference figures)."""

    def __init__(self, seed: int = 0, name: str = "policy"):
        self.rng, self.name = np.random.default_rng(seed), name

    def act_batch(self, batch: Any) -> np.ndarray:
        masks = np.asarray(batch.action_masks, dtype=bool)
        return (self.rng.random(masks.shape) * masks).argmax(axis=1).astype(np.int64)


def summarize(results: Sequence[dict[str, Any]], name: str = "policy") -> dict[str, float]:
    """`name`'s figures over a match's results: games, mean score (and its std), suns (solo), win rate (a tie's
    victory shared among the tied winners: `agents.match.win_shares`, the game's winner rule)."""
    from agents.match import totals_of, win_shares

    scores = totals_of(results, name)
    out: dict[str, float] = {"games": len(results), "mean_score": float(scores.mean()),
                             "std_score": float(scores.std())}
    if results and "suns" in results[0]:
        out["mean_suns"] = float(np.mean([r["suns"] for r in results]))
    else:
        out["win_rate"] = float(win_shares(results, name).mean())
    return out


def evaluate(policy: Any, match: EvalMatch, seed: int = EVAL_SEED) -> dict[str, float]:
    """The policy's figures in `match` (game i: seed `seed` + i): `policy` a MaskablePPO model, an SB3 policy or a
    batch policy (`act_batch`)."""
    from agents.match import play_match

    pol = policy if callable(getattr(policy, "act_batch", None)) else ModelPolicy(policy)
    pol.name = "policy"
    results = play_match([pol, *match.opponents], games=match.games, seed=seed, config=match.config,
                         threads=match.threads)
    return summarize(results)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import importlib
    import json
    from pathlib import Path

    from ..commands import commands, saved_run, schema
    from ..common import atomic_write_json, check_config

    ap = argparse.ArgumentParser(description="evaluate a training run's policy on its evaluation task",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("run", type=Path, help="run folder of python -m experiments.train")
    ap.add_argument("--policy", default="model", help="model (the run's model.pt), random, or a checkpoint path")
    ap.add_argument("--games", type=int, default=256)
    ap.add_argument("--seed", type=int, default=FINAL_SEED, help="game r uses seed + r")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=None, help="also write the result here (JSON)")
    a = ap.parse_args(argv)
    saved = saved_run(a.run)  # runs saved under the commands' old names read as today's
    if saved is None:
        raise SystemExit(f"{a.run} holds no run (no config.json)")
    module = importlib.import_module(commands()[saved["algo"]][0], __package__.rpartition(".")[0])
    if saved["algo"] == "mlp":  # its own evaluation command, on the same match engine
        raise SystemExit(f"an mlp run: python -m experiments.eval_mlp --checkpoint {a.run / 'model.pt'}")
    if not hasattr(module, "evaluation"):
        raise SystemExit(f"{saved['algo']} runs have no evaluation match")
    config = check_config(saved["config"], schema(saved["algo"]), str(a.run / "config.json"))
    match = module.evaluation(saved["algo"], config, a.games)
    if a.policy == "random":
        policy: Any = RandomPolicy(a.seed)
    else:
        from agents.ppo import load_policy

        path = a.run / "model.pt" if a.policy == "model" else Path(a.policy)
        policy = load_policy(path, device=a.device)  # weights only: nothing in the file runs
    out = {"run": str(a.run), "algo": saved["algo"], "policy": a.policy, "seed": a.seed,
           **evaluate(policy, match, a.seed)}
    if a.out:
        atomic_write_json(a.out, out)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
