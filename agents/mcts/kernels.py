"""MCTSAgent's jitted kernel: greedy rollouts with a squashed margin (the class is in `agents.mcts`)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env.batch import play_plan
from harmonies_env.rules import scores_into
from harmonies_env.scoring import NUM_CATEGORIES
from harmonies_env.state import GAME_OVER, MAX_PLAYERS, NUM_PLAYERS, STATE_DTYPE

from ..greedy.planner import MAX_PLAN, plan_turn
from ..greedy.terms import heuristic_value


@njit(cache=True)
def rollout_value(s, me: int, w, beam: int, turns: int, scale: float) -> float:
    """Play `turns` whole turns (or to the end) with the greedy planner; return me's squashed margin.

    s: int32 state vector (modified). w: float64 (NUM_TERMS,) weights. Returns a value in (0, 1).
    """
    seat = STATE_DTYPE(me)  # the seat as the state holds it, as the planner passes it: `heuristic_value` compiles once
    plans = np.zeros((1, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(1, dtype=np.int64)
    vals = np.zeros(1, dtype=np.float64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    t = 0
    while not s[GAME_OVER] and t < turns:
        n = plan_turn(s, w, beam, plans, lens, vals)
        if n == 0:
            break
        play_plan(s, plans[0], lens[0])
        if plans[0, lens[0] - 1] == A.END_TURN:
            t += 1
    np_ = s[NUM_PLAYERS]
    if s[GAME_OVER]:
        out = np.zeros((MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
        scores_into(s, out)
        mine = float(out[seat, NUM_CATEGORIES - 1])
        best = -1e9
        for o in range(np_):
            if o != seat and out[o, NUM_CATEGORIES - 1] > best:
                best = float(out[o, NUM_CATEGORIES - 1])
    else:
        mine = heuristic_value(s, seat, w, sc)
        best = -1e9
        for o in range(np_):
            if o != seat:
                v = heuristic_value(s, o, w, sc)
                if v > best:
                    best = v
    if np_ == 1:
        return 1.0 / (1.0 + math.exp(-(mine - 100.0) / scale))
    return 1.0 / (1.0 + math.exp(-(mine - best) / scale))
