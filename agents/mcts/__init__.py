"""Information-set Monte Carlo tree search over whole-turn macro actions.

Design (why it looks like this):

* **Macro actions.** A Harmonies turn is 5-30 micro-actions with no chance inside it, so searching
  micro-actions wastes the budget on orderings. The root's children are the `candidates` best whole-turn
  plans of the greedy planner (`agents.greedy.plan_turn`, beam `beam`, `WIDE_BEAM` = 800 by default: much wider
  than the greedy agent's 24; it runs once per turn and proposes better plans than narrower beams, see
  benchmarks/STRENGTH.md), which keeps the tree shallow.
* **Information sets.** Each iteration draws ONE determinization of the hidden information (pouch draws,
  draw-pile order, unseen Spirits) from the view (`agents.base.private_copy`, seeded by the agent's seed,
  the public turn number and the iteration number only), so the search never sees the real hidden order
  and every child's statistics average over possible worlds (single-observer ISMCTS with one tree level:
  the opponents' replies are not branched on, they are simulated).
* **Selection.** UCB1 over the root children (exploration constant `c`), every child tried once first.
* **Rollouts.** From the chosen plan, every following turn (opponents and self) is played by the greedy
  planner with a narrow beam (`rollout_beam`) inside numba, for `rollout_turns` turns (or to the end of
  the game). The leaf value is the searching player's margin over the best opponent (exact final scores
  at the game end, otherwise score + potential from `greedy.heuristic_value`), squashed to [0, 1] by a logistic
  of scale `scale` (a win-probability-like reward that still prefers bigger margins).
* **Budget.** `iterations` per decision, or `seconds` of wall time per decision (checked between
  iterations), whichever is given (iterations wins if both). The chosen child is the one with the best
  mean reward; its plan is then played one micro-action per call like the greedy agent's.
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from harmonies_env.batch import play_plan

from ..base import PlanAgent, private_copy
from ..greedy import DEFAULT_WEIGHTS, MAX_PLAN, WIDE_BEAM, GreedyAgent, plan_turn, planner_settings
from .kernels import rollout_value


class MCTSAgent(PlanAgent):
    """ISMCTS over the greedy planner's whole-turn plans (see the module docstring for the design)."""

    def __init__(self, iterations: int | None = None, seconds: float | None = None, seed: int = 0,
                 candidates: int = 16, beam: int = WIDE_BEAM, rollout_beam: int = 3, rollout_turns: int = 8,
                 c: float = 0.4, scale: float = 10.0, name: str | None = None):
        if iterations is None and seconds is None:
            iterations = 100
        if iterations is not None and (isinstance(iterations, (bool, np.bool_))
                                       or not isinstance(iterations, (int, np.integer)) or iterations < 1):
            raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}")
        if seconds is not None and (isinstance(seconds, (bool, np.bool_))
                                    or not isinstance(seconds, (int, float, np.integer, np.floating))
                                    or not math.isfinite(seconds) or seconds <= 0):
            raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
        if isinstance(candidates, (bool, np.bool_)) or not isinstance(candidates, (int, np.integer)) or candidates < 1:
            raise ValueError(f"candidates must be an integer >= 1, got {candidates!r}")
        self.iterations = None if iterations is None else int(iterations)
        self.seconds = None if seconds is None else float(seconds)
        self.seed = int(seed)
        self.candidates = int(candidates)
        self.beam, _ = planner_settings(beam)
        self.rollout_beam, _ = planner_settings(rollout_beam)
        self.rollout_turns = int(rollout_turns)
        self.c = float(c)
        self.scale = float(scale)
        self.weights = DEFAULT_WEIGHTS.copy()
        self.name = name or ("mcts" + (f":{self.seconds:g}s" if self.iterations is None else f":{self.iterations}it"))
        self.last_iterations = 0
        self.reset()

    def _seed_for(self, turn: int, i: int) -> int:
        x = (self.seed * 0x9E3779B1 + turn * 0x85EBCA77 + i * 0xC2B2AE3D + 0x27D4EB2F) & (2**62 - 1)
        return int(x)

    def search(self, view: Any) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
        """Run the search from the view; return (candidate plans, visit counts, mean rewards)."""
        g0 = private_copy(view, self._seed_for(0, 0))
        s0 = g0.state.copy()  # a writable copy (`Game.state` is a read-only view)
        turn = int(g0.turn)
        plans = np.zeros((self.candidates, MAX_PLAN), dtype=np.int64)
        lens = np.zeros(self.candidates, dtype=np.int64)
        vals = np.zeros(self.candidates, dtype=np.float64)
        k = plan_turn(s0, self.weights, self.beam, plans, lens, vals)
        cands = [plans[j, : lens[j]].tolist() for j in range(k)]
        visits = np.zeros(k, dtype=np.int64)
        total = np.zeros(k, dtype=np.float64)
        self.last_iterations = 0
        if k <= 1:
            return cands, visits, total
        me = view.player
        start = time.perf_counter()
        i = 0
        while True:
            if self.iterations is not None:
                if i >= self.iterations:
                    break
            elif i >= k and time.perf_counter() - start >= self.seconds:
                break
            if i < k:
                j = i
            else:
                logn = math.log(i)
                ucb = total / visits + self.c * np.sqrt(logn / visits)
                j = int(np.argmax(ucb))
            s = private_copy(view, self._seed_for(turn, i + 1)).state.copy()  # played in place below
            play_plan(s, plans[j], lens[j])
            r = rollout_value(s, me, self.weights, self.rollout_beam, self.rollout_turns, self.scale)
            visits[j] += 1
            total[j] += r
            i += 1
        self.last_iterations = i
        return cands, visits, total / np.maximum(visits, 1)

    def plan_seed(self, view: Any) -> int:
        return self._seed_for(0, 0)

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        cands, visits, means = self.search(view)
        if not cands:
            return []
        j = int(np.argmax(np.where(visits > 0, means, -1.0))) if visits.sum() else 0
        return list(cands[j])


__all__ = ["MCTSAgent", "rollout_value", "GreedyAgent"]
