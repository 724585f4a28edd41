"""Temporal-difference targets of a finished game's afterstates: the one lambda-return walk of every learner and
head (the n-tuple network's points head `ntuple.learn_game` and win head `ntuple.learn_win`, the MLP evaluator's
totals and win shares, the self-play framework's `td_targets`).

Why one kernel: the walk (per seat, backwards from its last afterstate) is where the learners' targets come from;
written once, a fix or a check holds for all of them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import state as S


@njit(cache=True)
def lambda_returns(seats, m: int, own, preds, final, keep, lam, targets, mix: float, out) -> None:
    """out[:m]: the lambda-return of each recorded afterstate j < m of one finished game, its mover seats[j].

    Per seat, walking its afterstates backwards: the return of a_j is (own[q] - own[j]) + keep x preds[q] + lam x
    out[q], q being the seat's next afterstate (own: what the seat holds at each afterstate, e.g. its points, or 0
    for a target that is not a gain; preds: the prediction made at play time; keep = 1 - lam, given in the values'
    precision); the seat's last one's is final[seat] - own[j]. Where targets[j] is not NaN (a search valued a_j:
    expert iteration) the return becomes mix x targets[j] + (1 - mix) x that, and earlier returns bootstrap from it.
    Arithmetic is in the arrays' precision (float32 arrays with float32 keep and lam stay float32)."""
    nxt = np.full(S.MAX_PLAYERS, -1, dtype=np.int64)
    for j in range(m - 1, -1, -1):
        p = seats[j]
        q = nxt[p]
        if q < 0:
            out[j] = final[p] - own[j]
        else:
            out[j] = (own[q] - own[j]) + keep * preds[q] + lam * out[q]
        if not np.isnan(targets[j]):
            out[j] = mix * targets[j] + (1.0 - mix) * out[j]
        nxt[p] = j


__all__ = ["lambda_returns"]
