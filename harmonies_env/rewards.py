"""Rewards shared by every environment: the Gymnasium envs (`env_gym`), the PettingZoo AEC env (`env_aec`) and
the batched engine (`batch`, which computes the same rewards inside numba).

Why one module: the reward kinds, their scale and the end-of-game bookkeeping must mean the same thing in every
env, so they are written once here and the envs import them (none imports another env's helpers).

Kinds (points are divided by `SCORE_SCALE` with opponents):
"win": at the end, +1 to a sole winner, +1/k to each of k < n tied winners (ties broken by animal cubes first),
-1 to the others, 0 to everybody if all n tie; solo: the suns earned. "score": at the end, own total minus the
best other total (solo: own total). "dense": after each action, the change of the player's own total.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import rules
from . import state as S
from .game import Game
from .scoring import NUM_CATEGORIES

#: Reward kinds, in the order the envs document them.
REWARDS = ("win", "score", "dense")
#: Points are divided by this in the "score" and "dense" rewards of multiplayer games.
SCORE_SCALE = 100.0


def check_reward(reward: Any) -> str:
    """The reward kind, or a ValueError naming the kinds there are."""
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(map(repr, REWARDS))}, got {reward!r}")
    return reward


def check_reward_scale(reward_scale: Any) -> float:
    """The points-to-reward factor as a float, or a ValueError naming it (a finite number is required)."""
    number = isinstance(reward_scale, (int, float, np.integer, np.floating))
    if isinstance(reward_scale, (bool, np.bool_)) or not number or not np.isfinite(reward_scale):
        raise ValueError(f"reward_scale must be a finite number, got {reward_scale!r}")
    return float(reward_scale)


def totals(game: Game) -> np.ndarray:
    """Current total score of every seat: int64 (num_players,)."""
    out = np.zeros((S.MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
    rules.scores_into(game._state, out)
    return out[: game.num_players, -1].copy()


def final_rewards(game: Game, reward: str, scale: float = 1.0 / SCORE_SCALE) -> np.ndarray:
    """End-of-game reward of every seat (float64 (num_players,)) for "win" or "score"; zeros for "dense".

    "score" is in points times `scale` (default 1 / SCORE_SCALE, the AEC env's); "win" is never scaled."""
    n = game.num_players
    if reward == "win":
        if n == 1:
            return np.array([float(game.suns())])
        winners = game.winners()
        if len(winners) == n:
            return np.zeros(n)
        r = np.full(n, -1.0)
        r[winners] = 1.0 / len(winners)
        return r
    if reward == "score":
        t = totals(game).astype(np.float64)
        if n == 1:
            return t * scale
        best_other = np.array([np.max(np.delete(t, p)) for p in range(n)])
        return (t - best_other) * scale
    return np.zeros(n)


def end_infos(game: Game) -> list[dict[str, Any]]:
    """Per seat: the final score breakdown, the winners and (solo) the suns."""
    scores = game.scores()
    winners = game.winners()
    infos = [{"scores": scores[p], "winners": winners} for p in range(game.num_players)]
    if game.num_players == 1:
        infos[0]["suns"] = game.suns()
    return infos


__all__ = ["REWARDS", "SCORE_SCALE", "check_reward", "check_reward_scale", "totals", "final_rewards", "end_infos"]
