"""The n-tuple network's learning kernels: TD(lambda) from a finished game's afterstates for the points head
(`learn_game`, expert iteration's search targets included) and the win head (`learn_win`), by normalized least mean
squares (`td_step`, temporal-coherence step sizes optional). The value and search kernels they train are
`agents.ntuple.kernels`; the lambda-returns are `agents.td.lambda_returns`, every learner's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

from ..afterstate import NUM_FEATURES
from ..greedy import no_turn_left
from ..td import lambda_returns
from .kernels import (
    CARD_FROM,
    MARKET_FROM,
    MAX_ACTIVE,
    NUM_LINEAR,
    linear_features,
    stage_length,
    stage_start,
    tuple_indices,
    value_of,
    win_logit,
)


@njit(cache=True)
def selected_norm(idx, k: int) -> float:
    """Squared norm of the tuple part's input: the sum over distinct selected weights of (times selected)^2. A
    board selects the same weight many times (an empty board's pairs are all one key), so a step spread evenly per
    selection moves the output by step x this, not step x k."""
    a = np.sort(idx[:k])
    total = 0.0
    run = 1
    for t in range(1, k + 1):
        if t < k and a[t] == a[t - 1]:
            run += 1
        else:
            total += run * run
            run = 1
    return total


@njit(cache=True)
def td_step(w, idx, k: int, lin, err: float, alpha_tuple: float, alpha_linear: float, coherence=None) -> None:
    """One normalised gradient step of error `err` on the k selected tuple weights idx[:k] (a step of alpha_tuple
    shared by them) and the linear part's weights (alpha_linear, along lin): the update both heads learn by.

    coherence (float32 (2, len(w)), optional): temporal-coherence step sizes (Beal & Smith 1999, as Jaskowski 2018
    used them for 2048's n-tuple networks): each tuple weight's step is scaled by |E| / A, the size of the sum of its
    past steps over the sum of their sizes (1 before its first step), so a weight whose corrections keep one sign
    moves at full rate and one that only oscillates slows down: a step size per weight that anneals itself.
    coherence[0] holds E, coherence[1] A; both are updated here. Without it, every weight moves at full rate."""
    step = alpha_tuple * err / selected_norm(idx, k)
    if coherence is None:
        for t in range(k):
            w[idx[t]] += np.float32(step)
    else:
        for t in range(k):
            i = idx[t]
            a = coherence[1, i]
            rate = 1.0 if a == 0.0 else abs(coherence[0, i]) / a
            w[i] += np.float32(rate * step)
            coherence[0, i] += np.float32(step)
            coherence[1, i] += np.float32(abs(step))
    lnorm = 0.0
    for t in range(lin.shape[0]):
        lnorm += lin[t] * lin[t]
    step = alpha_linear * err / lnorm
    for t in range(lin.shape[0]):
        if lin[t] != 0.0:
            w[t] += np.float32(step * lin[t])


@njit(cache=True)
def learn_game(w, afters, seats, preds, m: int, final, lam: float, alpha_tuple: float, alpha_linear: float,
               targets, mix: float, coherence=None) -> float:
    """TD(lambda) updates from one finished game's recorded afterstates afters[:m] (int32 (>= m, STATE_SIZE)), their
    movers seats[:m] and predictions at play time preds[:m]; final int64 (4,) every seat's final total.

    Per seat, walking its afterstates backwards: the return of afterstate a_k is r_k + (1 - lam) V(a_k+1) + lam G_k+1,
    where r_k is the seat's points gained from a_k to a_k+1 and V the prediction made at play time; the last one's
    is final - total(a_m). Expert iteration: where targets[k] (float64 (>= m,)) is not NaN, a search valued a_k
    (points still to come, `search_values`), and the return becomes mix x targets[k] + (1 - mix) x G_k (earlier
    returns then bootstrap from it). Each afterstate where the seat still has a turn then moves the network towards
    its return by normalized least mean squares: the tuple part's output by alpha_tuple x error (each selection by
    alpha_tuple x error / `selected_norm`), the linear part's by alpha_linear x error (step x input / |input|^2).
    w float32 (a layout's length) is updated in place, afterstates in game order; coherence (optional): the tuple
    part's temporal-coherence step sizes (`td_step`). Returns the sum of squared errors (before each update).
    """
    ret = np.zeros(m, dtype=np.float64)
    tot = np.zeros(m, dtype=np.float64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for j in range(m):
        tot[j] = seat_score(afters[j], seats[j], sc)
    lambda_returns(seats, m, tot, preds, final, 1.0 - lam, lam, targets, mix, ret)
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    sse = 0.0
    for j in range(m):
        s = afters[j]
        p = seats[j]
        if no_turn_left(s, p):
            continue
        lo, k = _stage_inputs(w, s, p, idx, feats, lin)
        err = ret[j] - value_of(w[lo:lo + stage_length(w)], idx, k, lin)
        sse += err * err
        _learn_step(w, lo, idx, k, lin, err, alpha_tuple, alpha_linear, coherence)
    return sse


@njit(cache=True)
def _stage_inputs(w, s, p: int, idx, feats, lin):
    """(start of s's stage block in w, active tuple count): the active tuple indices written to idx and the linear
    inputs to lin for seat p at afterstate s (a learning step's inputs, `learn_game`'s and `learn_win`'s)."""
    lo = stage_start(w, s)
    k = tuple_indices(s, p, idx, stage_length(w) > CARD_FROM, stage_length(w) > MARKET_FROM)
    linear_features(s, p, feats, lin)
    return lo, k


@njit(cache=True)
def _learn_step(w, lo: int, idx, k: int, lin, err: float, alpha_tuple: float, alpha_linear: float, coherence) -> None:
    """One normalized-LMS step of the stage block of w starting at lo (`td_step`), with the block's temporal-coherence
    step sizes when coherence is given."""
    hi = lo + stage_length(w)
    if coherence is None:
        td_step(w[lo:hi], idx, k, lin, err, alpha_tuple, alpha_linear)
    else:
        td_step(w[lo:hi], idx, k, lin, err, alpha_tuple, alpha_linear, coherence[:, lo:hi])


@njit(cache=True)
def learn_win(w, afters, seats, m: int, share, lam: float, alpha_tuple: float, alpha_linear: float,
              coherence=None) -> float:
    """TD(lambda) of the win head (issue 30's win target) from one finished game's afterstates afters[:m] (int64
    (>= m, STATE_SIZE)) and movers seats[:m]; share float64 (4,) each seat's final share of the victory (1/k for
    a k-way shared win, else 0).

    The head's output z is a logit; its prediction sigma(z). Per seat, walking backwards, the return of a_k is
    (1 - lam) sigma(z_k+1) + lam G_k+1 (the last one's: share), with every prediction taken before any update.
    Each afterstate then moves z by normalized least mean squares with the cross-entropy's gradient, error = G -
    sigma(z) (the tuple part by alpha_tuple, the linear part by alpha_linear, as `learn_game`). w float32
    (a layout's length) in place; coherence as `learn_game`'s (the win head's own). Returns the summed cross-entropy
    (before each update)."""
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    prob = np.zeros(m, dtype=np.float64)
    for j in range(m):
        prob[j] = 1.0 / (1.0 + np.exp(-win_logit(afters[j], seats[j], w, idx, feats, lin)))
    ret = np.zeros(m, dtype=np.float64)
    lambda_returns(seats, m, np.zeros(m, dtype=np.float64), prob, share, 1.0 - lam, lam, np.full(m, np.nan), 0.0,
                   ret)
    loss = 0.0
    for j in range(m):
        s = afters[j]
        p = seats[j]
        lo, k = _stage_inputs(w, s, p, idx, feats, lin)
        pr = 1.0 / (1.0 + np.exp(-value_of(w[lo:lo + stage_length(w)], idx, k, lin)))
        pc = min(max(pr, 1e-7), 1.0 - 1e-7)
        loss -= ret[j] * np.log(pc) + (1.0 - ret[j]) * np.log(1.0 - pc)
        _learn_step(w, lo, idx, k, lin, ret[j] - pr, alpha_tuple, alpha_linear, coherence)
    return loss
