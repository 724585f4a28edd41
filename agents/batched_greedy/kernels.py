"""The batched greedy planner's jitted kernels: many games' turns in one call (the class that drives them is
`agents.batched_greedy.GreedyPlans`)."""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import state as S
from harmonies_env.cards import NUM_CLASSES
from harmonies_env.rules import random_action

from ..greedy import plan_candidates, plan_turn


@njit(cache=True, nogil=True)
def greedy_plans(lo: int, hi: int, states, weights, beam: int, diverse: bool, plans, lens) -> None:
    """The greedy planner's turn for the player to move in rows lo..hi-1 of states (int64 (M, STATE_SIZE), read
    only): plans int64 (M, MAX_PLAN), lens int64 (M,) (0 where the position has no legal action, which a live game
    never has). weights float64 (NUM_TERMS,), beam: as `GreedyAgent(beam=...)`; diverse: `plan_candidates`' first
    plan (a beam per central space) instead of `plan_turn`'s. Releases the GIL: `run_rows` splits rows over threads.
    """
    values = np.zeros(1, dtype=np.float64)
    for j in range(lo, hi):
        if diverse:
            n = plan_candidates(states[j], weights, beam, plans[j:j + 1], lens[j:j + 1], values)
        else:
            n = plan_turn(states[j], weights, beam, plans[j:j + 1], lens[j:j + 1], values)
        if n == 0:
            lens[j] = 0


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
