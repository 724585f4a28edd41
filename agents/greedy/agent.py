"""The greedy planner as an agent: `GreedyAgent` plans its whole turn with the kernels of `agents.greedy.kernels`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import PlanAgent
from .kernels import MAX_PLAN, plan_candidates, plan_turn, planner_settings


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
        from ..batched_greedy import GreedyPlans

        self.reset()
        self._batch = GreedyPlans(len(seeds), self.beam, self.weights, self.diverse)

    def act_batch(self, batch: Any) -> np.ndarray:
        """Every game's move: the games whose turn starts are planned in one numba call (`batched_greedy`), the
        others continue their plan. The same moves as `act` (a turn holds no chance)."""
        if getattr(self, "_batch", None) is None:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        return self._batch.decide(batch.states, np.asarray(batch.rows), batch.threads)

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        plan = plan_candidates if self.diverse else plan_turn
        n = plan(game.state.copy(), self.weights, self.beam, self._plans, self._lens, self._values)
        return self._plans[0, : self._lens[0]].tolist() if n else []


__all__ = ["GreedyAgent"]
