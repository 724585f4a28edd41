"""The MLP agents' jitted kernels: pure functions over arrays (the classes that wrap them are in `agents.mlp.agent`)."""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import outcome, play_plan
from harmonies_env.scoring import NUM_CATEGORIES

from ..afterstate import afterstate_features
from ..greedy.planner import MAX_PLAN, plan_turn
from ..greedy.terms import heuristic_value


@njit(cache=True)
def search_leaves(roots, plans, lens, which, w, beam: int, turns: int, feats, leaf_seat, exact, exact_totals,
                  exact_won, heuristic) -> None:
    """Leaves of the search: for each leaf i, play candidate which[i] on its own determinized root, then play the next
    `turns` whole turns (every player's, the searcher's own included) with the greedy planner (beam `beam`) and stop
    just before the END of the last of them, where the network judges that turn's afterstate.

    roots int32 (L, STATE_SIZE) (modified); plans int64 (C, MAX_PLAN), lens int64 (C,); which int64 (L,).
    Out: feats float32 (L, NUM_FEATURES) the last opponent's afterstate (just before its END) seen by that opponent;
    leaf_seat int64 (L,) the searcher's seat relative to that opponent; exact bool (L,) True where the game ended
    (then exact_totals / exact_won int64 (L, 4) hold the outcome by absolute seat and feats are not written);
    heuristic float64 (L, 4): every seat's `greedy.heuristic_value` (score + potential) at the leaf, by absolute seat
    (pass a (0, 4) array to skip it: the value is then the network's alone).
    """
    tp = np.zeros((1, MAX_PLAN), dtype=np.int64)
    tl = np.zeros(1, dtype=np.int64)
    tv = np.zeros(1, dtype=np.float64)
    tmp = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for i in range(roots.shape[0]):
        s = roots[i]
        me = s[S.CURRENT]
        n = s[S.NUM_PLAYERS]
        c = which[i]
        play_plan(s, plans[c], lens[c])
        exact[i] = False
        played = 0
        while True:
            if s[S.GAME_OVER]:
                exact[i] = True
                outcome(s, exact_totals[i], tmp, exact_won[i])
                break
            mover = s[S.CURRENT]
            if turns == 0:  # value the searcher's own position as it stands
                afterstate_features(s, me, feats[i])
                leaf_seat[i] = 0
                if heuristic.shape[0] > 0:
                    for o in range(n):
                        heuristic[i, o] = heuristic_value(s, o, w, tmp)
                break
            k = plan_turn(s, w, beam, tp, tl, tv)
            last = played == turns - 1
            if k == 0:
                exact[i] = True
                outcome(s, exact_totals[i], tmp, exact_won[i])
                break
            if last and tp[0, tl[0] - 1] == A.END_TURN:
                play_plan(s, tp[0], tl[0] - 1)
                afterstate_features(s, mover, feats[i])
                leaf_seat[i] = (me - mover) % n
                if heuristic.shape[0] > 0:
                    for o in range(n):
                        heuristic[i, o] = heuristic_value(s, o, w, tmp)
                break
            play_plan(s, tp[0], tl[0])
            if tp[0, tl[0] - 1] == A.END_TURN:
                played += 1


__all__ = ["search_leaves"]
