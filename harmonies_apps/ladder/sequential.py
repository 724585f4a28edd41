"""The ladder's sequential tests on paired games (`ladder test`): is NEW at least bounds[1] better than BASE (H1), or
at most bounds[0] (H0)?

A pair is one seed played twice with the seats swapped; NEW's score over it is one of five outcomes (the
pentanomial, LL .. WW). The Elo test joins Fishtest's pentanomial GSPRT (efficient near the bounds) with two
e-processes (fast far beyond them); the points test is a normal GLR on the pair's mean points margin. Every function
here is pure numpy and takes arrays of counts row by row, so `sprt_sim.py` simulates thousands of tests with the very
code `ladder test` runs.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from .stats import GameResult, elo_to_score

__all__ = [
    "E_SHARE", "PAIR_OUTCOMES", "PRIOR_COUNT", "SequentialTest", "elo_llr", "e_numerator", "pair_result",
    "pentanomial", "pentanomial_llr", "points_llr", "sprt_bounds", "sup_loglik",
]

#: NEW's possible scores over a pair of games (the pentanomial's five outcomes, LL .. WW).
PAIR_OUTCOMES = (0.0, 0.5, 1.0, 1.5, 2.0)
#: The same outcomes as a score per game (0 .. 1), the scale of the Elo bounds' expected scores.
VALUES = np.arange(5) / 4.0
#: Fishtest's regularisation: an outcome never seen counts 1e-3 times (keeps the MLE inside the simplex).
_EPS_COUNT = 1e-3
#: Normalized Elo per t-value unit (Fishtest's nelo_divided_by_nt).
_NELO_PER_NT = 800.0 / math.log(10.0)
#: The share of alpha (and of beta) the Elo test spends on its e-processes; the GSPRT gets the rest.
E_SHARE = 0.1
#: Pseudo-count per outcome of the e-processes' predictable estimate (small: a sweep is learnt in a pair or two).
PRIOR_COUNT = 0.05
#: What `SequentialTest.method` records for each kind (a stored test is resumed only under the same method).
METHODS = {"elo": "gsprt+e", "points": "normal"}


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's LLR bounds: accept H0 at or below the first, H1 at or above the second."""
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError(f"alpha and beta must be in (0, 1), got {alpha}, {beta}")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def pair_result(pair: Sequence[GameResult], new: int, base: int) -> tuple[float, float]:
    """NEW's score over a pair of games (0, 1/2, .. 2: per game 1 for a better place than BASE, 1/2 for the same) and
    its mean points margin per game over the pair (its total minus BASE's)."""
    score = margin = 0.0
    for g in pair:
        sn, sb = g.bots.index(new), g.bots.index(base)
        score += 1.0 if g.ranks[sn] < g.ranks[sb] else 0.5 if g.ranks[sn] == g.ranks[sb] else 0.0
        margin += g.totals[sn] - g.totals[sb]
    return score, margin / max(len(pair), 1)


def pentanomial(scores: Iterable[float]) -> np.ndarray:
    """Counts of NEW's pair scores over the five PAIR_OUTCOMES (LL, LD+DL, LW+DD+WL, DW+WD, WW)."""
    counts = np.zeros(5, dtype=np.int64)
    for s in scores:
        k = round(2 * s)
        if not (0 <= k <= 4 and abs(2 * s - k) < 1e-9):
            raise ValueError(f"a pair score must be one of {PAIR_OUTCOMES}, got {s}")
        counts[k] += 1
    return counts


def _root(a: np.ndarray, p: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float) -> np.ndarray:
    """Per row, the x in [lo, hi] where f(x) = sum_i p_i a_i / (1 + x a_i), decreasing there, crosses zero; the end
    of [lo, hi] where f keeps its sign (lo if f(lo) <= 0, hi if f(hi) >= 0). Outcomes with p_i = 0 do not count; an
    end at a pole of a counted outcome is +inf at lo, -inf at hi. Newton's method kept inside a shrinking bracket
    (bisection when a step would leave it), to the last bit, all rows at once."""
    a, p = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(p, dtype=np.float64))
    rows = a.shape[:-1]
    lo = np.array(np.broadcast_to(lo, rows), dtype=np.float64)
    hi = np.array(np.broadcast_to(hi, rows), dtype=np.float64)
    live = p > 0

    def f(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = 1.0 + x[..., None] * a
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(live, p * a / d, 0.0)
            return t.sum(axis=-1), -np.where(live, t * a / d, 0.0).sum(axis=-1)

    with np.errstate(invalid="ignore"):
        flo = np.where(np.any(live & (1.0 + lo[..., None] * a <= 0), axis=-1), np.inf, f(lo)[0])
        fhi = np.where(np.any(live & (1.0 + hi[..., None] * a <= 0), axis=-1), -np.inf, f(hi)[0])
    out = np.where(flo <= 0, lo, np.where(fhi >= 0, hi, np.nan))
    todo = np.isnan(out)
    x = np.where((lo < 0) & (hi > 0), 0.0, 0.5 * (lo + hi))
    for _ in range(200):
        if not todo.any():
            break
        fx, dfx = f(x)
        lo = np.where(todo & (fx > 0), x, lo)
        hi = np.where(todo & (fx < 0), x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            nx = x - fx / dfx
        nx = np.where((nx > lo) & (nx < hi), nx, 0.5 * (lo + hi))
        fin = todo & ((fx == 0) | (np.abs(nx - x) <= 1e-16 * np.maximum(1.0, np.abs(x))) | ~(lo < hi))
        out = np.where(fin, np.where(fx == 0, x, nx), out)
        todo &= ~fin
        x = np.where(todo, nx, x)
    return np.where(np.isnan(out), x, out)


def _mle_mean(phat: np.ndarray, s: np.ndarray | float) -> np.ndarray:
    """Per row, the distribution on VALUES nearest (max likelihood) to `phat` (positive) with mean `s` (Fishtest's
    MLE_expected)."""
    a = VALUES - np.asarray(s, dtype=np.float64)[..., None]
    x = _root(a, phat, -1.0 / a.max(axis=-1) + 1e-9, -1.0 / a.min(axis=-1) - 1e-9)
    return phat / (1.0 + x[..., None] * a)


def _mle_t(phat: np.ndarray, ref: float, t: float) -> np.ndarray:
    """The distribution on VALUES nearest to `phat` with t-value (mean - ref) / sd = t (Fishtest's MLE_t_value)."""
    q = np.full(5, 0.2)
    for _ in range(10):
        mu = float(q @ VALUES)
        sigma = math.sqrt(float(q @ (VALUES - mu) ** 2))
        a = VALUES - ref - t * sigma * (1.0 + ((mu - VALUES) / sigma) ** 2) / 2.0
        new = phat / (1.0 + _root(a, phat, -1.0 / a.max() + 1e-9, -1.0 / a.min() - 1e-9) * a)
        done = np.max(np.abs(new - q)) < 1e-9
        q = new
        if done:
            break
    return q


def pentanomial_llr(counts: Sequence[float] | np.ndarray, elo0: float, elo1: float,
                    model: str = "logistic") -> float | np.ndarray:
    """Fishtest's pentanomial GSPRT statistic (LLRcalc.LLR_logistic / LLR_normalized): the log-likelihood ratio of
    H1 (Elo = elo1) against H0 (Elo = elo0) for `counts` (5, or rows of 5). Empty outcomes count 1e-3 times, the
    empirical distribution of the per-game pair score is projected by maximum likelihood onto each hypothesis (mean
    score L(elo) for `model` "logistic"; t-value elo / (800 / ln 10) * sqrt 2 for "normalized", single rows only),
    and the LLR is the total count times the expected log ratio of the two projections.

    It is the efficient statistic near the bounds, and a slow one beyond them: it weighs the two points elo0 and
    elo1 only, so a bot that sweeps (far above both) gains log(s1 / s0) ~ 0.03 per 2-0 pair (~100 pairs for H1), and
    two identical deterministic bots (every pair 1-1) lose about log(1 - 2 (s1 - s0)) = -0.029 per pair (~100 pairs
    for H0), as H1 could still be a rare sweep not seen yet. `elo_llr` adds what decides the first case fast; the
    second is a limit of any valid test (see `SequentialTest`). The composite GLR, l(max(s_hat, s1)) -
    l(min(s_hat, s0)) with l this profile log-likelihood, would decide both faster but is not valid: simulated
    (`sprt_sim.py`, 2,000 runs a case), its false-H1 rate at elo0 reached 0.14 and its false H0 at elo1 0.13 (this
    GSPRT: 0.045-0.0575; benchmarks/LADDER.md)."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape[-1:] != (5,) or np.any(c < 0):
        raise ValueError(f"pentanomial counts must be 5 non-negative numbers, got {counts}")
    c = np.where(c == 0, _EPS_COUNT, c)
    n = c.sum(axis=-1)
    phat = c / n[..., None]
    if model == "logistic":
        q0, q1 = (_mle_mean(phat, float(elo_to_score(e))) for e in (elo0, elo1))
    elif model == "normalized":
        if c.ndim != 1:
            raise ValueError("the normalized model takes one row of counts")
        q0, q1 = (_mle_t(phat, 0.5, e / _NELO_PER_NT * math.sqrt(2.0)) for e in (elo0, elo1))
    else:
        raise ValueError(f"unknown Elo model {model!r}: logistic or normalized")
    out = n * (phat * (np.log(q1) - np.log(q0))).sum(axis=-1)
    return float(out) if out.ndim == 0 else out


def sup_loglik(counts: Sequence[float] | np.ndarray, s: float, where: str) -> float | np.ndarray:
    """The exact maximum log-likelihood of `counts` (rows of 5, no regularisation) over every distribution of the
    pair outcomes whose mean score per game is at most `s` (`where` "below") or at least `s` ("above"): the
    denominator of an e-process against that composite hypothesis. The maximiser is phat_i / (1 + x (v_i - s)), x
    from the dual's one-dimensional concave problem, at an end of its range when the unseen extreme outcome takes the
    missing mass (all 2-0 pairs against mean <= s: s per pair)."""
    c = np.asarray(counts, dtype=np.float64)
    n = c.sum(axis=-1)
    phat = c / np.maximum(n, 1.0)[..., None]
    a = VALUES - s
    lo, hi = (0.0, -1.0 / a.min()) if where == "below" else (-1.0 / a.max(), 0.0)
    x = _root(a, phat, lo, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(c > 0, c * np.log(phat / (1.0 + x[..., None] * a)), 0.0).sum(axis=-1)
    return float(out) if out.ndim == 0 else out


def e_numerator(counts: Sequence[float] | np.ndarray, s: float, where: str) -> np.ndarray:
    """The e-process's predictable forecast of the next pair's outcome: the counts so far plus PRIOR_COUNT each,
    projected (max likelihood) onto mean score >= `s` (`where` "above") or <= `s` ("below") when outside it."""
    c = np.asarray(counts, dtype=np.float64) + PRIOR_COUNT
    est = c / c.sum(axis=-1)[..., None]
    mean = est @ VALUES
    outside = mean < s if where == "above" else mean > s
    return np.where(outside[..., None], _mle_mean(est, s), est)


def elo_llr(gsprt: np.ndarray | float, log_e1: np.ndarray | float, log_e0: np.ndarray | float, alpha: float,
            beta: float) -> np.ndarray | float:
    """The Elo test's statistic on Wald's scale `sprt_bounds(alpha, beta)`: it reaches the upper bound exactly when
    the GSPRT's LLR `gsprt` reaches its own upper bound at level (1 - E_SHARE) alpha, or the e-process against H0
    (`log_e1`: log of the forecasts' product over the best likelihood with Elo <= elo0) reaches log 1 / (E_SHARE
    alpha); likewise the lower bound for H0 with beta and `log_e0`. In between it shows the GSPRT's LLR, replaced by
    an e-process where that one has gone further (each rescaled so its own bound lands on the common one)."""
    low, up = sprt_bounds(alpha, beta)
    g_low, g_up = sprt_bounds((1.0 - E_SHARE) * alpha, (1.0 - E_SHARE) * beta)
    g = np.asarray(gsprt, dtype=np.float64)
    g = np.where(g >= 0, g * (up / g_up), g * (low / g_low))
    e1 = np.asarray(log_e1, dtype=np.float64) * (up / -math.log(E_SHARE * alpha))
    e0 = np.asarray(log_e0, dtype=np.float64) * (low / -math.log(E_SHARE * beta))
    high, down = np.maximum(g, e1), np.minimum(g, e0)
    h1, h0 = high >= up, down <= low
    out = np.where(h1 & ~(h0 & (low - down > high - up)), high, np.where(h0, down, high + down - g))
    return float(out) if out.ndim == 0 else out


def points_llr(margins: Sequence[float], points0: float, points1: float, resolution: float = 1.0) -> float:
    """The generalized LLR of H1 (mean margin = points1) against H0 (= points0) for per-pair points margins.

    The margins are modelled as normal with unknown variance: the GLR is n/2 log(r0 / r1), r_k the mean squared
    deviation from points_k (Fishtest's LLR_alt on a continuous score). Margins are whole points, known only to
    `resolution`; each r_k is floored by that rounding error's variance, resolution**2 / 12 (Sheppard), so pairs
    that all end with the same margin (identical bots) give a finite LLR that still favours the nearer hypothesis.
    """
    x = np.asarray(margins, dtype=np.float64)
    if len(x) == 0:
        return 0.0
    floor = resolution ** 2 / 12.0
    r0, r1 = (float(np.mean((x - p) ** 2)) + floor for p in (points0, points1))
    return 0.5 * len(x) * math.log(r0 / r1)


class SequentialTest:
    """A sequential test fed one pair of games at a time (NEW and BASE on one seed, seats swapped).

    kind "elo", Elo `bounds` (elo0, elo1): H1 "NEW is at least elo1 better", H0 "at most elo0", both composite.
    Fishtest's GSPRT (`pentanomial_llr`) at (1 - E_SHARE) of alpha and beta, joined with two e-processes at
    E_SHARE of them (`elo_llr`): the product of predictable forecasts (`e_numerator`, from the pairs before each one)
    over the best likelihood under the other hypothesis (`sup_loglik`). Under any distribution with Elo <= elo0 the
    e-process against H0 is a nonnegative supermartingale of mean <= 1, so by Ville's inequality it ever reaches
    1 / (E_SHARE alpha) with probability at most E_SHARE alpha: the false-H1 rate stays within alpha (GSPRT's share
    plus this) and likewise false H0 within beta. It decides a sweeping bot in ~11 pairs where the GSPRT needs ~100.
    Simulated (`sprt_sim.py`, 2,000 runs each of five shapes at elo0 and elo1, bounds [0, 10]): error rates at most
    0.0525 +- 0.005 for alpha = beta = 0.05, for 2-5% more pairs than the GSPRT alone near the bounds.
    Two identical deterministic bots (every pair 1-1) still need ~100 pairs for H0, and no valid test does better:
    a bot at elo1 that draws every pair but sweeps 2 (s1 - s0) of them shows n straight 1-1 pairs with probability
    (1 - 2 (s1 - s0))^n, above beta until n ~ 100 for [0, 10] Elo. The points test (kind "points") sees them equal
    in 3 pairs: every margin is exactly 0.
    kind "points": the normal GLR on the pair's mean points margin with `bounds` (points0, points1).
    The verdict is fixed at the first crossing of `sprt_bounds(alpha, beta)` ("H1": NEW is at least bounds[1]
    better, "H0": at most bounds[0]); pairs added after it still count in `counts`, `llr` and `trajectory`.
    """

    def __init__(self, kind: str = "elo", bounds: tuple[float, float] = (0.0, 10.0), alpha: float = 0.05,
                 beta: float = 0.05) -> None:
        if kind not in METHODS:
            raise ValueError(f"unknown test kind {kind!r}: elo or points")
        if not bounds[0] < bounds[1]:
            raise ValueError(f"test bounds must increase, got {bounds}")
        self.kind, self.bounds, self.alpha, self.beta = kind, (float(bounds[0]), float(bounds[1])), alpha, beta
        self.method = METHODS[kind]
        self.lower, self.upper = sprt_bounds(alpha, beta)
        self.scores: list[float] = []
        self.margins: list[float] = []
        self.trajectory: list[float] = []
        self.verdict: str | None = None
        self.decided_at: int | None = None  # pairs played when the verdict was reached
        self._counts = np.zeros(5, dtype=np.int64)
        self._s = tuple(float(elo_to_score(e)) for e in self.bounds)
        self._forecast = [0.0, 0.0]  # log products of the e-processes' forecasts: against H0, against H1

    @property
    def counts(self) -> list[int]:
        """Pentanomial counts of NEW's pair scores so far."""
        return [int(c) for c in self._counts]

    @property
    def pairs(self) -> int:
        return len(self.scores)

    @property
    def llr(self) -> float:
        return self.trajectory[-1] if self.trajectory else 0.0

    def add(self, score: float, margin: float) -> str | None:
        """Count one pair: NEW's score over it (0 .. 2) and its mean points margin per game; returns the verdict."""
        outcome = pentanomial([score])
        if self.kind == "elo":  # the forecasts come from the pairs before this one
            s0, s1 = self._s
            k = int(np.argmax(outcome))
            self._forecast[0] += math.log(e_numerator(self._counts, s1, "above")[k])
            self._forecast[1] += math.log(e_numerator(self._counts, s0, "below")[k])
        self._counts += outcome
        self.scores.append(float(score))
        self.margins.append(float(margin))
        if self.kind == "elo":
            s0, s1 = self._s
            llr = elo_llr(pentanomial_llr(self._counts, *self.bounds),
                          self._forecast[0] - sup_loglik(self._counts, s0, "below"),
                          self._forecast[1] - sup_loglik(self._counts, s1, "above"), self.alpha, self.beta)
        else:
            llr = points_llr(self.margins, *self.bounds)
        self.trajectory.append(llr)
        if self.verdict is None and (llr <= self.lower or llr >= self.upper):
            self.verdict = "H1" if llr >= self.upper else "H0"
            self.decided_at = self.pairs
        return self.verdict
