"""Heuristic moves for many games in one numba call: the greedy planner and uniform random play over rows.

Why: in a batched match (`agents.match.play_match`: `GreedyAgent.act_batch`) and in batched self-play
(`agents.pool_env.PoolVecEnv`) the greedy players of many games move together. Calling `GreedyAgent.act` game by game
costs a determinization and a Python round trip per micro-action; here one call plans a whole turn
(`greedy.plan_turn`, or `greedy.plan_candidates`' first plan for the diverse planner) for every game whose plan ran
out, in threads over row ranges, and each game's plan is kept between calls (`policy.PlanRows`).

The kernel plans on the position it is given, where `GreedyAgent.act` plans on a determinized copy: a turn involves
no chance and the planner reads only what the player to move sees, so both give the same moves
(tests/test_training.py and tests/test_match.py play them side by side).
"""
from __future__ import annotations

import numpy as np

from harmonies_env.batch import run_rows

from ..greedy import DEFAULT_WEIGHTS, MAX_PLAN, planner_settings
from ..policy import PlanRows
from .kernels import greedy_plans, random_rows

__all__ = ["greedy_plans", "random_rows", "GreedyPlans", "DEFAULT_WEIGHTS", "MAX_PLAN"]


class GreedyPlans:
    """The greedy players of a batch of N games: each game's current plan (only one seat moves at a time), planned
    for all games that need one in one threaded numba call (`greedy_plans`)."""

    def __init__(self, num_games: int, beam: int = 24, weights: np.ndarray | None = None, diverse: bool = False):
        self.beam, self.weights = planner_settings(beam, weights)
        self.diverse = bool(diverse)
        self.rows = PlanRows(num_games, MAX_PLAN)

    def forget(self, rows: np.ndarray) -> None:
        """Drop the plans of these rows (they start new games)."""
        self.rows.forget(rows)

    def decide(self, states: np.ndarray, rows: np.ndarray, threads: int = 1) -> np.ndarray:
        """int64 (M,): the greedy move in each game; states int64 (M, STATE_SIZE) the games' positions (public
        copies will do), rows int64 (M,) their rows in the batch (whose plans they continue)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        stale = self.rows.stale(states, rows)
        if stale.size:
            sub = np.ascontiguousarray(states[stale])
            plans = np.zeros((stale.size, MAX_PLAN), dtype=np.int64)
            lens = np.zeros(stale.size, dtype=np.int64)
            run_rows(greedy_plans, stale.size, threads, sub, self.weights, self.beam, self.diverse, plans, lens,
                     min_rows=2)  # a plan costs a millisecond or more: even two rows are worth a thread
            self.rows.store(sub, rows[stale], plans, lens)
        return self.rows.next(rows)

    def actions(self, states: np.ndarray, rows: np.ndarray, threads: int = 1) -> np.ndarray:
        """int64 (len(rows),): the greedy move of the player to move in each listed row of states (N, STATE_SIZE)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        return self.decide(np.asarray(states)[rows], rows, threads)
