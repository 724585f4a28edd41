"""The greedy planner as an agent: `GreedyAgent` plans its whole turn with the kernels of `agents.greedy.planner`;
`GreedyPlans` plans the greedy players of many games in one numba call.

Why batched: in a batched match (`agents.match.play_match`: `GreedyAgent.act_batch`) and in batched self-play
(`agents.pool_env.PoolVecEnv`) the greedy players of many games move together. Calling `GreedyAgent.act` game by game
costs a determinization and a Python round trip per micro-action; `greedy_plans` plans a whole turn (`plan_turn`, or
`plan_candidates`' first plan for the diverse planner) for every game whose plan ran out, in threads over row ranges,
and each game's plan is kept between calls (`policy.PlanRows`). It plans on the position it is given, where
`GreedyAgent.act` plans on a determinized copy: a turn involves no chance and the planner reads only what the player
to move sees, so both give the same moves (tests/test_training.py and tests/test_match.py play them side by side).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from harmonies_env.batch import run_rows

from ..base import PlanAgent
from ..policy import PlanRows
from .planner import MAX_PLAN, greedy_plans, plan_candidates, plan_turn, planner_settings


class GreedyAgent(PlanAgent):
    """Plans its whole turn with `plan_turn` and plays it one micro-action per call.

    The plan is computed on a private determinized copy (a turn involves no chance, so any copy gives the
    same plan) and cached by `PlanAgent`, which plans again when the view is not the position it expects.
    """

    def __init__(self, beam: int = 24, weights: np.ndarray | None = None, seed: int = 0, name: str = "greedy",
                 diverse: bool = False):
        """diverse: plan with a beam of `beam` per central space (`plan_candidates`' first plan: the heuristic's own
        choice among the candidates the learned agent ranks) instead of one beam over all spaces."""
        self.beam, self.weights = planner_settings(beam, weights)
        self.diverse = bool(diverse)
        self.seed = int(seed)
        self.name = name
        self._plans = np.zeros((1, MAX_PLAN), dtype=np.int64)
        self._lens = np.zeros(1, dtype=np.int64)
        self._values = np.zeros(1, dtype=np.float64)
        self.reset()

    def reset_batch(self, seeds: Any) -> None:
        """Plan buffers for a batched match of len(seeds) games (the planner draws nothing: seeds are unused)."""
        self.reset()
        self._batch = GreedyPlans(len(seeds), self.beam, self.weights, self.diverse)

    def act_batch(self, batch: Any) -> np.ndarray:
        """Every game's move: the games whose turn starts are planned in one numba call (`GreedyPlans`), the
        others continue their plan. The same moves as `act` (a turn holds no chance)."""
        if getattr(self, "_batch", None) is None:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        return self._batch.decide(batch.states, np.asarray(batch.rows), batch.threads)

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        plan = plan_candidates if self.diverse else plan_turn
        n = plan(game.state.copy(), self.weights, self.beam, self._plans, self._lens, self._values)
        return self._plans[0, : self._lens[0]].tolist() if n else []


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
        """int64 (M,): the greedy move in each game; states int32 (M, STATE_SIZE) the games' positions (public
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


__all__ = ["GreedyAgent", "GreedyPlans"]
