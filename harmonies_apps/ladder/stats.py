"""The ladder's statistics, pure numpy: order-free batch ratings, block-bootstrap intervals, points and category
margins, the pairwise matrix with its Nash average, and the sequential tests on paired games.

Everything here is a function of the games given, never of their order: games are first aggregated into integer
sufficient statistics (sorted), then fitted by Newton's method to machine precision, so the same games in any order
give bit-identical ratings. Ratings are on the Elo scale (400 points = a factor 10 in odds), anchored at one bot.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import permutations, product
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "ELO_PER_NAT", "NUM_CATEGORIES", "PAIR_OUTCOMES", "GameResult", "SequentialTest", "bootstrap_intervals",
    "elo_to_score", "fit_ratings", "pair_result", "pentanomial", "pentanomial_llr", "points_llr", "score_to_elo",
    "sprt_bounds",
]

#: Elo points per natural-log unit of strength: P(i beats j) = 1 / (1 + 10 ** (-(R_i - R_j) / 400)).
ELO_PER_NAT = 400.0 / math.log(10.0)
#: Scoring categories per seat (trees, mountains, fields, buildings, water, animals, spirit).
NUM_CATEGORIES = 7
#: NEW's possible scores over a pair of games (the pentanomial's five outcomes, LL .. WW).
PAIR_OUTCOMES = (0.0, 0.5, 1.0, 1.5, 2.0)
#: BayesElo's default prior: 2 virtual draws between every two bots that met.
PRIOR_GAMES = 2.0
#: Default number of bootstrap resamples (enough for stable 2.5% / 97.5% percentiles at ladder sizes).
BOOTSTRAP_SAMPLES = 400


@dataclass(frozen=True)
class GameResult:
    """One stored game, seen by the statistics: bot index, total, finishing place and category scores per seat."""

    block: int
    bots: tuple[int, ...]  # bot index per seat, in seat order
    totals: tuple[int, ...]
    ranks: tuple[int, ...]  # finishing place per seat, 0 = first; tied seats share a place
    categories: tuple[tuple[int, ...], ...]  # per seat, the 7 category scores

    def __post_init__(self) -> None:
        n = len(self.bots)
        if n < 1 or len(self.totals) != n or len(self.ranks) != n or len(self.categories) != n:
            raise ValueError(f"game of block {self.block}: bots, totals, ranks and categories need one entry per seat")


# ----------------------------------------------------------------------------------------------------------- Elo


def elo_to_score(elo: float | np.ndarray) -> float | np.ndarray:
    """Expected score of a bot `elo` points stronger than its opponent (logistic Elo)."""
    return 1.0 / (1.0 + 10.0 ** (-np.asarray(elo, dtype=float) / 400.0)) if np.ndim(elo) else \
        1.0 / (1.0 + 10.0 ** (-float(elo) / 400.0))


def score_to_elo(score: float | np.ndarray) -> float | np.ndarray:
    """The Elo difference whose expected score is `score` (±inf at 1 and 0)."""
    s = np.asarray(score, dtype=float)
    with np.errstate(divide="ignore"):
        e = -400.0 * np.log10(1.0 / s - 1.0)
    return e if np.ndim(score) else float(e)


# -------------------------------------------------------------------------------------------- sufficient stats


def _orders(ranks: Sequence[int]) -> list[tuple[int, ...]]:
    """Every strict seat order consistent with `ranks` (tied seats in every order among themselves)."""
    places = sorted(set(ranks))
    groups = [[s for s, r in enumerate(ranks) if r == p] for p in places]
    return [tuple(s for g in combo for s in g) for combo in product(*(permutations(g) for g in groups))]


def _game_stats(game: GameResult, unit: int) -> tuple[Counter, Counter]:
    """Plackett-Luce sufficient statistics of one game, in integer units of 1/`unit` game.

    A tie is the uniform mixture of its consistent strict orders (each weighted 1/k! for k tied seats), so the
    log-likelihood stays concave, a 2-player shared victory counts exactly 1/2 each (Bradley-Terry with half wins),
    and the result does not depend on how the ladder seats tied bots.
    Returns (choice-set weights keyed by the sorted tuple of bots still in, wins per bot).
    """
    orders = _orders(game.ranks)
    w = unit // len(orders)
    sets: Counter = Counter()
    wins: Counter = Counter()
    for order in orders:
        seated = [game.bots[s] for s in order]
        for j in range(len(seated) - 1):
            sets[tuple(sorted(seated[j:]))] += w
            wins[seated[j]] += w
    return sets, wins


@dataclass
class _Stats:
    """Integer sufficient statistics per block: rows are blocks (sorted), columns choice sets (sorted) / bots."""

    blocks: np.ndarray  # block ids, ascending
    sets: list[tuple[int, ...]]
    members: np.ndarray  # (sets, bots) how many times each bot is in each choice set
    set_w: np.ndarray  # (blocks, sets) int64
    wins: np.ndarray  # (blocks, bots) int64
    unit: int


def _aggregate(games: Iterable[GameResult], num_bots: int) -> _Stats:
    games = list(games)
    unit = math.factorial(max((len(g.bots) for g in games), default=1))
    per_block: dict[int, tuple[Counter, Counter]] = {}
    for g in games:
        if any(not 0 <= b < num_bots for b in g.bots):
            raise ValueError(f"game of block {g.block}: bot index out of range 0..{num_bots - 1}: {g.bots}")
        s, w = _game_stats(g, unit)
        bs, bw = per_block.setdefault(g.block, (Counter(), Counter()))
        bs.update(s)
        bw.update(w)
    blocks = sorted(per_block)
    sets = sorted({k for bs, _ in per_block.values() for k in bs})
    index = {k: i for i, k in enumerate(sets)}
    members = np.zeros((len(sets), num_bots), dtype=np.float64)
    for i, k in enumerate(sets):
        for b in k:
            members[i, b] += 1
    set_w = np.zeros((len(blocks), len(sets)), dtype=np.int64)
    wins = np.zeros((len(blocks), num_bots), dtype=np.int64)
    for r, blk in enumerate(blocks):
        bs, bw = per_block[blk]
        for k, v in bs.items():
            set_w[r, index[k]] = v
        for b, v in bw.items():
            wins[r, b] = v
    return _Stats(np.array(blocks, dtype=np.int64), sets, members, set_w, wins, unit)


def _components(members: np.ndarray, weights: np.ndarray, num_bots: int) -> np.ndarray:
    """Connected-component label per bot through the choice sets of positive weight (-1: no games)."""
    parent = list(range(num_bots))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    played = np.zeros(num_bots, dtype=bool)
    for row in members[weights > 0]:
        idx = np.flatnonzero(row)
        played[idx] = True
        for b in idx[1:]:
            parent[find(int(b))] = find(int(idx[0]))
    return np.array([find(b) if played[b] else -1 for b in range(num_bots)])


def _prior_rows(members: np.ndarray, weights: np.ndarray, num_bots: int) -> np.ndarray:
    """The pairs (i < j) of bots that shared a table, as a (pairs, 2) array, sorted."""
    pairs = set()
    for row in members[weights > 0]:
        idx = np.flatnonzero(row)
        pairs.update((int(a), int(b)) for k, a in enumerate(idx) for b in idx[k + 1:])
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def _fit(members: np.ndarray, set_w: np.ndarray, wins: np.ndarray, unit: int, num_bots: int, anchor: int,
         prior_games: float, start: np.ndarray | None = None) -> np.ndarray:
    """Maximum a-posteriori Plackett-Luce strengths (natural-log units, anchor 0, NaN off the anchor's component)."""
    w = set_w.astype(np.float64) / unit
    won = wins.astype(np.float64) / unit
    comp = _components(members, set_w, num_bots)
    out = np.full(num_bots, np.nan)
    if comp[anchor] < 0:
        return out
    live = w > 0
    m, w = members[live], w[live]
    pairs = _prior_rows(m, w, num_bots)
    if prior_games > 0 and len(pairs):
        pm = np.zeros((len(pairs), num_bots))
        pm[np.arange(len(pairs)), pairs[:, 0]] = 1.0
        pm[np.arange(len(pairs)), pairs[:, 1]] = 1.0
        m = np.vstack([m, pm])
        w = np.concatenate([w, np.full(len(pairs), float(prior_games))])
        won = won + 0.5 * prior_games * pm.sum(axis=0)
    rated = comp == comp[anchor]
    free = np.flatnonzero(rated & (np.arange(num_bots) != anchor))
    keep = (m[:, ~rated].sum(axis=1) == 0)
    m, w = m[keep][:, rated], w[keep]
    won = won[rated]
    pos = {b: i for i, b in enumerate(np.flatnonzero(rated))}
    fidx = np.array([pos[int(b)] for b in free], dtype=np.int64)
    r = np.zeros(int(rated.sum()))
    if start is not None:
        r[fidx] = np.nan_to_num(start[free])
        r[pos[anchor]] = 0.0

    def loglik(x: np.ndarray) -> float:
        top = x.max()
        return float(won @ x - w @ (np.log(m @ np.exp(x - top)) + top))

    cur = loglik(r)
    for _ in range(200):
        e = np.exp(r - r.max())
        p = m * e / (m @ e)[:, None]
        expected = w @ p
        g = (won - expected)[fidx]
        h = np.diag(expected) - p.T @ (w[:, None] * p)  # minus the Hessian
        if not len(fidx):
            break
        d = np.linalg.solve(h[np.ix_(fidx, fidx)], g)
        if np.max(np.abs(d)) < 1e-7:  # quadratic convergence from here: take full steps to machine precision
            r[fidx] += d
            if np.max(np.abs(d)) < 1e-14:
                break
            continue
        t = 1.0
        while True:
            trial = r.copy()
            trial[fidx] += t * d
            new = loglik(trial)
            if new >= cur + 1e-4 * t * float(g @ d) or t < 1e-10:
                break
            t *= 0.5
        r, cur = trial, new
    out[rated] = r
    return out


def fit_ratings(games: Iterable[GameResult], num_bots: int, anchor: int = 0,
                prior_games: float = PRIOR_GAMES) -> np.ndarray:
    """Elo ratings of `num_bots` bots from all `games` at once, `anchor` at 0.

    The model is Plackett-Luce on each game's finishing order (Bradley-Terry for 2 seats, a shared place counting
    as the uniform mixture of its orders, so a 2-player shared victory is 1/2 each), fitted by maximum a posteriori
    with `prior_games` virtual 2-player draws between every two bots that shared a table (BayesElo's prior), so a
    bot that always wins stays finite. The fit is order-free (integer sufficient statistics, Newton to machine
    precision). A bot with no games, or one not linked to the anchor through games, gets NaN: it has no rating on
    the anchor's scale. Everything is NaN when the anchor has no games.
    """
    st = _aggregate(games, num_bots)
    if not 0 <= anchor < num_bots:
        raise ValueError(f"anchor {anchor} is not a bot index (0..{num_bots - 1})")
    r = _fit(st.members, st.set_w.sum(axis=0), st.wins.sum(axis=0), st.unit, num_bots, anchor, prior_games)
    return r * ELO_PER_NAT


def bootstrap_intervals(games: Iterable[GameResult], num_bots: int, anchor: int = 0, seed: int = 0,
                        samples: int = BOOTSTRAP_SAMPLES, prior_games: float = PRIOR_GAMES,
                        level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals (95% by default) of `fit_ratings`, by a bootstrap that resamples whole blocks.

    Blocks (one seed, every seating) are the independent units, so resampling them keeps the pairing's correlation.
    Deterministic for a `seed` and order-free (blocks are drawn from their sorted ids). NaN where the bot is unrated.
    """
    st = _aggregate(games, num_bots)
    point = _fit(st.members, st.set_w.sum(axis=0), st.wins.sum(axis=0), st.unit, num_bots, anchor, prior_games)
    nb = len(st.blocks)
    if nb == 0:
        nan = np.full(num_bots, np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    draws = np.empty((samples, num_bots))
    for k in range(samples):
        counts = np.bincount(rng.integers(0, nb, size=nb), minlength=nb)
        draws[k] = _fit(st.members, counts @ st.set_w, counts @ st.wins, st.unit, num_bots, anchor, prior_games,
                        start=point)
    tail = 50.0 * (1.0 - level)
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(point)
        low = np.full(num_bots, np.nan)
        high = np.full(num_bots, np.nan)
        if ok.any():
            low[ok], high[ok] = np.nanpercentile(draws[:, ok], [tail, 100.0 - tail], axis=0)
    return low * ELO_PER_NAT, high * ELO_PER_NAT


# ---------------------------------------------------------------------------------------------- sequential tests


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


#: Fishtest's regularisation: an outcome never seen counts 1e-3 times (keeps the MLE inside the simplex).
_EPS_COUNT = 1e-3
#: Normalized Elo per t-value unit (Fishtest's nelo_divided_by_nt).
_NELO_PER_NT = 800.0 / math.log(10.0)


def _secular(a: np.ndarray, p: np.ndarray) -> float:
    """The root x of sum_i p_i a_i / (1 + x a_i) = 0 between -1/max(a) and -1/min(a) (bisection to the last bit)."""
    lo, hi = -1.0 / a.max() + 1e-9, -1.0 / a.min() - 1e-9
    if not lo < hi:
        raise ValueError("secular equation requires support straddling zero")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if float(np.sum(p * a / (1.0 + mid * a))) > 0:  # the sum decreases in x
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _mle_mean(values: np.ndarray, phat: np.ndarray, s: float) -> np.ndarray:
    """The distribution on `values` nearest (max likelihood) to `phat` with mean `s` (Fishtest's MLE_expected)."""
    a = values - s
    return phat / (1.0 + _secular(a, phat) * a)


def _mle_t(values: np.ndarray, phat: np.ndarray, ref: float, t: float) -> np.ndarray:
    """The distribution on `values` nearest to `phat` with t-value (mean - ref) / sd = t (Fishtest's MLE_t_value)."""
    q = np.full(len(values), 1.0 / len(values))
    for _ in range(10):
        mu = float(q @ values)
        sigma = math.sqrt(float(q @ (values - mu) ** 2))
        a = values - ref - t * sigma * (1.0 + ((mu - values) / sigma) ** 2) / 2.0
        new = phat / (1.0 + _secular(a, phat) * a)
        done = np.max(np.abs(new - q)) < 1e-9
        q = new
        if done:
            break
    return q


def pentanomial_llr(counts: Sequence[float], elo0: float, elo1: float, model: str = "logistic",
                    method: str = "exact") -> float:
    """The generalized log-likelihood ratio of H1 (Elo = elo1) against H0 (Elo = elo0) for pentanomial `counts`,
    as Fishtest computes it (LLRcalc.LLR_logistic / LLR_normalized): empty outcomes count 1e-3 times, the
    empirical distribution of the per-game pair score is projected by maximum likelihood onto each hypothesis
    (mean score L(elo) for `model` "logistic"; t-value elo / (800 / ln 10) * sqrt 2 for "normalized"), and the LLR
    is the total count times the expected log ratio of the two projections.

    `method` "normal" is Fishtest's LLR_alt instead: the GLR of a normal model with unknown variance on the same
    regularised distribution, n/2 log(r0 / r1) with r_k its mean squared deviation from each hypothesis' score.
    They agree when results vary; they part when they do not. If every pair is 1-1 (identical deterministic bots
    on paired seeds) the exact GLR gains only about log(1 - 2 (s1 - s0)) per pair (-0.029 for [0, 10] Elo, ~100
    pairs to accept H0), because H1 can still be a rare 2-0 sweep it has not seen; the normal GLR takes the zero
    spread at its word and accepts H0 within 6 pairs."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (5,) or np.any(c < 0):
        raise ValueError(f"pentanomial counts must be 5 non-negative numbers, got {counts}")
    c = np.where(c == 0, _EPS_COUNT, c)
    n = float(c.sum())
    phat = c / n
    values = np.arange(5) / 4.0
    if method == "normal":
        if model != "logistic":
            raise ValueError("the normal approximation is computed on logistic Elo bounds")
        r0, r1 = (float(phat @ (values - elo_to_score(e)) ** 2) for e in (elo0, elo1))
        return 0.5 * n * math.log(r0 / r1)
    if method != "exact":
        raise ValueError(f"unknown LLR method {method!r}: exact or normal")
    if model == "logistic":
        q0, q1 = (_mle_mean(values, phat, float(elo_to_score(e))) for e in (elo0, elo1))
    elif model == "normalized":
        q0, q1 = (_mle_t(values, phat, 0.5, e / _NELO_PER_NT * math.sqrt(2.0)) for e in (elo0, elo1))
    else:
        raise ValueError(f"unknown Elo model {model!r}: logistic or normalized")
    return n * float(phat @ (np.log(q1) - np.log(q0)))


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
    """A GSPRT fed one pair of games at a time (NEW and BASE on one seed, seats swapped).

    kind "elo": the pentanomial test on NEW's pair scores with Elo `bounds` (elo0, elo1) under `model` and
    `method` (see `pentanomial_llr`);
    kind "points": the normal GLR on the pair's mean points margin with `bounds` (points0, points1).
    The verdict is fixed at the first crossing of `sprt_bounds(alpha, beta)` ("H1": NEW is at least bounds[1]
    better, "H0": at most bounds[0]); pairs added after it still count in `counts`, `llr` and `trajectory`.
    """

    def __init__(self, kind: str = "elo", bounds: tuple[float, float] = (0.0, 10.0), alpha: float = 0.05,
                 beta: float = 0.05, model: str = "logistic", method: str = "exact") -> None:
        if kind not in ("elo", "points"):
            raise ValueError(f"unknown test kind {kind!r}: elo or points")
        if not bounds[0] < bounds[1]:
            raise ValueError(f"test bounds must increase, got {bounds}")
        self.kind, self.bounds, self.alpha, self.beta = kind, (float(bounds[0]), float(bounds[1])), alpha, beta
        self.model, self.method = model, method
        self.lower, self.upper = sprt_bounds(alpha, beta)
        self.scores: list[float] = []
        self.margins: list[float] = []
        self.trajectory: list[float] = []
        self.verdict: str | None = None
        self.decided_at: int | None = None  # pairs played when the verdict was reached

    @property
    def counts(self) -> list[int]:
        """Pentanomial counts of NEW's pair scores so far."""
        return [int(c) for c in pentanomial(self.scores)]

    @property
    def pairs(self) -> int:
        return len(self.scores)

    @property
    def llr(self) -> float:
        return self.trajectory[-1] if self.trajectory else 0.0

    def add(self, score: float, margin: float) -> str | None:
        """Count one pair: NEW's score over it (0 .. 2) and its mean points margin per game; returns the verdict."""
        self.scores.append(float(score))
        self.margins.append(float(margin))
        if self.kind == "elo":
            llr = pentanomial_llr(pentanomial(self.scores), *self.bounds, model=self.model, method=self.method)
        else:
            llr = points_llr(self.margins, *self.bounds)
        self.trajectory.append(llr)
        if self.verdict is None and (llr <= self.lower or llr >= self.upper):
            self.verdict = "H1" if llr >= self.upper else "H0"
            self.decided_at = self.pairs
        return self.verdict
