"""Heuristic moves for many games in one numba call: `GreedyAgent`'s planner and uniform random play over rows.

Why: in batched self-play (`agents.pool_env.PoolVecEnv`) the opponents of many games move together. Calling
`GreedyAgent.act` row by row costs a determinization and a Python round trip per micro-action; here one call
decides every row that needs it, planning a whole turn (`greedy.plan_turn`) only for the rows whose plan ran
out and keeping each row's plan in arrays between calls.

The greedy kernel plans on the real state, where `GreedyAgent` plans on a determinized copy: a turn involves
no chance and the planner reads only what the player to move sees, so both give the same moves
(tests/test_training.py plays them side by side).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import state as S
from harmonies_env.cards import NUM_CLASSES
from harmonies_env.rules import random_action

from .greedy import DEFAULT_WEIGHTS, MAX_PLAN, plan_turn, planner_settings

__all__ = ["greedy_rows", "random_rows", "GreedyPlans", "DEFAULT_WEIGHTS", "MAX_PLAN"]


@njit(cache=True)
def greedy_rows(states, rows, weights, beam: int, plans, lens, pos, owner, out) -> None:
    """The greedy move of the player to move in each listed row, planning a new turn where needed.

    states: int64 (N, STATE_SIZE), read only. rows: int64 (M,) the rows to decide. weights: float64 (NUM_TERMS,)
    potential weights; beam: partial turns kept per token level (as `GreedyAgent(beam=...)`).
    Per-row plan buffers, kept by the caller between calls: plans int64 (N, MAX_PLAN), lens int64 (N,),
    pos int64 (N,) the next index into the plan, owner int64 (N,) the (turn, seat) the plan was made for
    (turn * MAX_PLAYERS + seat). A row replans when its plan is used up or was made for another turn or
    seat; set lens[r] = pos[r] = 0 when row r starts a new game. out: int64 (M,) the actions (-1 where
    the position had no legal action, which a live game never has).
    """
    values = np.zeros(1, dtype=np.float64)
    for j in range(rows.shape[0]):
        r = rows[j]
        s = states[r]
        who = s[S.TURN] * S.MAX_PLAYERS + s[S.CURRENT]
        if pos[r] >= lens[r] or owner[r] != who:
            n = plan_turn(s, weights, beam, plans[r:r + 1], lens[r:r + 1], values)
            pos[r] = 0
            owner[r] = who
            if n == 0:
                lens[r] = 0
                out[j] = -1
                continue
        out[j] = plans[r, pos[r]]
        pos[r] += 1


@njit(cache=True)
def random_rows(states, rows, rng, out, buf) -> None:
    """A uniformly random legal action of the player to move in each listed row.

    states: int64 (N, STATE_SIZE), read only; rows: int64 (M,); rng: int64 (N,) each row's splitmix64
    generator (`state.random_below`), advanced here (`rules.random_action`, the engine's random player);
    out: int64 (M,) the actions (-1 where the game is over, the only position without a legal action);
    buf: int64 (NUM_ACTIONS,) scratch.
    """
    grids = np.empty(NUM_CLASSES, dtype=np.int64)
    for j in range(rows.shape[0]):
        r = rows[j]
        out[j] = -1 if states[r, S.GAME_OVER] else random_action(states[r], rng, r, buf, grids)


class GreedyPlans:
    """Plan buffers of `greedy_rows` for a batch of N games (one plan per game: only one seat moves at a time).

    The buffers are private: `greedy_rows` indexes plans with the lengths and positions kept here."""

    def __init__(self, num_games: int, beam: int = 24, weights: np.ndarray | None = None):
        self.beam, self.weights = planner_settings(beam, weights)
        self._plans = np.zeros((num_games, MAX_PLAN), dtype=np.int64)
        self._lens = np.zeros(num_games, dtype=np.int64)
        self._pos = np.zeros(num_games, dtype=np.int64)
        self._owner = np.full(num_games, -1, dtype=np.int64)

    def forget(self, rows: np.ndarray) -> None:
        """Drop the plans of these rows (they start new games)."""
        self._lens[rows] = 0
        self._pos[rows] = 0
        self._owner[rows] = -1

    def actions(self, states: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """int64 (len(rows),): the greedy move of the player to move in each listed row of states."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.empty(rows.shape[0], dtype=np.int64)
        greedy_rows(states, rows, self.weights, self.beam, self._plans, self._lens, self._pos, self._owner, out)
        return out
