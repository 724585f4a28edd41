"""The ladder's statistics, pure numpy: order-free batch ratings, block-bootstrap intervals, points and category
margins, and the pairwise matrix with its Nash average (the sequential tests on paired games: `sequential.py`).

Everything here is a function of the games given, never of their order: games are first aggregated into integer
sufficient statistics (sorted), then fitted by Newton's method to machine precision, so the same games in any order
give bit-identical ratings. Ratings are on the Elo scale (400 points = a factor 10 in odds), anchored at one bot.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import permutations, product
from statistics import NormalDist
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "ELO_PER_NAT", "NUM_CATEGORIES", "GameResult", "bootstrap_intervals", "category_means", "elo_to_score",
    "fit_ratings", "nash_average", "nash_payoff", "pairwise_counts", "points_margin", "rating_history",
    "score_to_elo", "win_matrix",
]

#: Elo points per natural-log unit of strength: P(i beats j) = 1 / (1 + 10 ** (-(R_i - R_j) / 400)).
ELO_PER_NAT = 400.0 / math.log(10.0)
#: Scoring categories per seat (trees, mountains, fields, buildings, water, animals, spirit).
NUM_CATEGORIES = 7
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
    s = 1.0 / (1.0 + 10.0 ** (-np.asarray(elo, dtype=float) / 400.0))
    return s if np.ndim(elo) else float(s)


def score_to_elo(score: float | np.ndarray) -> float | np.ndarray:
    """The Elo difference whose expected score is `score` (±inf at 1 and 0)."""
    s = np.asarray(score, dtype=float)
    with np.errstate(divide="ignore"):
        e = -400.0 * np.log10(1.0 / s - 1.0)
    return e if np.ndim(score) else float(e)


# -------------------------------------------------------------------------------------------- sufficient stats


_ORDERS: dict[tuple[int, ...], list[tuple[int, ...]]] = {}


def _orders(ranks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every strict seat order consistent with `ranks` (tied seats in every order among themselves), cached."""
    if ranks not in _ORDERS:
        groups = [[s for s, r in enumerate(ranks) if r == p] for p in sorted(set(ranks))]
        _ORDERS[ranks] = [tuple(s for g in combo for s in g)
                          for combo in product(*(permutations(g) for g in groups))]
    return _ORDERS[ranks]


def _add_game(game: GameResult, unit: int, sets: dict, wins: dict) -> None:
    """Add one game's Plackett-Luce sufficient statistics to `sets` and `wins`, in integer units of 1/`unit` game.

    A tie is the uniform mixture of its consistent strict orders (each weighted 1/k! for k tied seats), so the
    log-likelihood stays concave, a 2-player shared victory counts exactly 1/2 each (Bradley-Terry with half wins),
    and the result does not depend on how the ladder seats tied bots. `sets` is keyed by the sorted tuple of the
    bots still in at each choice; `wins` by the bot chosen.
    """
    orders = _orders(tuple(game.ranks))
    w = unit // len(orders)
    for order in orders:
        seated = [game.bots[s] for s in order]
        for j in range(len(seated) - 1):
            key = tuple(sorted(seated[j:]))
            sets[key] = sets.get(key, 0) + w
            wins[seated[j]] = wins.get(seated[j], 0) + w


@dataclass
class _Stats:
    """Integer sufficient statistics per block: rows are blocks (sorted), columns choice sets (sorted) / bots."""

    blocks: np.ndarray  # block ids, ascending
    sets: list[tuple[int, ...]]
    members: np.ndarray  # (sets, bots) how many times each bot is in each choice set
    set_w: np.ndarray  # (blocks, sets) int64
    wins: np.ndarray  # (blocks, bots) int64
    unit: int
    games: np.ndarray  # games per block


def _aggregate(games: Iterable[GameResult], num_bots: int, anchor: int = 0) -> _Stats:
    if not 0 <= anchor < num_bots:
        raise ValueError(f"anchor {anchor} is not a bot index (0..{num_bots - 1})")
    games = list(games)
    unit = math.factorial(max((len(g.bots) for g in games), default=1))
    per_block: dict[int, tuple[dict, dict]] = {}
    for g in games:
        if any(not 0 <= b < num_bots for b in g.bots):
            raise ValueError(f"game of block {g.block}: bot index out of range 0..{num_bots - 1}: {g.bots}")
        _add_game(g, unit, *per_block.setdefault(g.block, ({}, {})))
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
    per_games = Counter(g.block for g in games)
    return _Stats(np.array(blocks, dtype=np.int64), sets, members, set_w, wins, unit,
                  np.array([per_games[b] for b in blocks], dtype=np.int64))


def _links(members: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(component label per bot, -1 without games; the pairs i < j that shared a table, sorted), through the choice
    sets of positive weight."""
    occ = (members[weights > 0] > 0).astype(np.float64)
    met = occ.T @ occ > 0
    n = len(met)
    comp = np.where(np.diag(met), np.arange(n), -1)
    for _ in range(n):  # label propagation: each bot takes the smallest label among those it met
        new = np.where(met, comp[None, :], n).min(axis=1, initial=n)
        new = np.where(comp < 0, -1, new)
        if np.array_equal(new, comp):
            break
        comp = new
    return comp, np.argwhere(np.triu(met, 1))


def _fit(members: np.ndarray, set_w: np.ndarray, wins: np.ndarray, unit: int, num_bots: int, anchor: int,
         prior_games: float, start: np.ndarray | None = None) -> np.ndarray:
    """Maximum a-posteriori Plackett-Luce strengths (natural-log units, anchor 0, NaN off the anchor's component)."""
    w = set_w.astype(np.float64) / unit
    won = wins.astype(np.float64) / unit
    comp, pairs = _links(members, set_w)
    out = np.full(num_bots, np.nan)
    if comp[anchor] < 0:
        return out
    live = w > 0
    m, w = members[live], w[live]
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
            cur = loglik(r)
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
    st = _aggregate(games, num_bots, anchor)
    r = _fit(st.members, st.set_w.sum(axis=0), st.wins.sum(axis=0), st.unit, num_bots, anchor, prior_games)
    return r * ELO_PER_NAT


def rating_history(games: Iterable[GameResult], num_bots: int, anchor: int = 0, points: int = 24,
                   prior_games: float = PRIOR_GAMES) -> tuple[list[int], list[int], np.ndarray]:
    """Ratings refitted on the games of blocks <= b, for b every k-th block (and the last), at most `points` + 1
    refits: (block numbers b, games up to each, ratings with one row per b). One aggregation, prefix sums."""
    st = _aggregate(games, num_bots, anchor)
    nb = len(st.blocks)
    if nb == 0:
        return [], [], np.zeros((0, num_bots))
    step = max(1, math.ceil(nb / points))
    marks = list(range(step - 1, nb, step))
    if marks[-1] != nb - 1:
        marks.append(nb - 1)
    cum_w, cum_wins = np.cumsum(st.set_w, axis=0), np.cumsum(st.wins, axis=0)
    out = np.array([_fit(st.members, cum_w[k], cum_wins[k], st.unit, num_bots, anchor, prior_games) for k in marks])
    return ([int(st.blocks[k]) for k in marks], [int(v) for v in np.cumsum(st.games)[marks]],
            out.reshape(len(marks), num_bots) * ELO_PER_NAT)


def bootstrap_intervals(games: Iterable[GameResult], num_bots: int, anchor: int = 0, seed: int = 0,
                        samples: int = BOOTSTRAP_SAMPLES, prior_games: float = PRIOR_GAMES,
                        level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals (95% by default) of `fit_ratings`, by a bootstrap that resamples whole blocks.

    Blocks (one seed, every seating) are the independent units, so resampling them keeps the pairing's correlation.
    Deterministic for a `seed` and order-free (blocks are drawn from their sorted ids). NaN where the bot is unrated;
    a resample that leaves a bot unlinked to the anchor does not count for it.
    """
    st = _aggregate(games, num_bots, anchor)
    point = _fit(st.members, st.set_w.sum(axis=0), st.wins.sum(axis=0), st.unit, num_bots, anchor, prior_games)
    nb = len(st.blocks)
    if nb == 0:
        nan = np.full(num_bots, np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    draws = np.empty((samples, num_bots))
    # Each block touches few choice sets: resample through its nonzero entries (float sums of integers: exact).
    blk, col = np.nonzero(st.set_w)
    val = st.set_w[blk, col].astype(np.float64)
    wins = st.wins.astype(np.float64)
    for k in range(samples):
        counts = np.bincount(rng.integers(0, nb, size=nb), minlength=nb).astype(np.float64)
        set_w = np.bincount(col, weights=counts[blk] * val, minlength=len(st.sets))
        draws[k] = _fit(st.members, set_w, (counts[:, None] * wins).sum(axis=0), st.unit, num_bots, anchor,
                        prior_games, start=point)
    tail = 50.0 * (1.0 - level)
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(point)
        low = np.full(num_bots, np.nan)
        high = np.full(num_bots, np.nan)
        if ok.any():
            low[ok], high[ok] = np.nanpercentile(draws[:, ok], [tail, 100.0 - tail], axis=0)
    return low * ELO_PER_NAT, high * ELO_PER_NAT


# ------------------------------------------------------------------------------------ margins and categories


def _t_quantile(p: float, df: int) -> float:
    """Student's t quantile (exact for 1 and 2 degrees of freedom, Cornish-Fisher to ~1e-4 beyond)."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = NormalDist().inv_cdf(p)
    g = [(z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
         (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
         (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160]
    return z + sum(gk / df ** (k + 1) for k, gk in enumerate(g))


def _clustered_mean(values: Sequence[float], blocks: Sequence[int], level: float = 0.95) -> tuple[float, float, float]:
    """Mean of `values` with a t interval whose standard error treats each block as one independent cluster
    (games of one seed are correlated). (NaN, NaN, NaN) without values; NaN bounds with a single block."""
    x = np.asarray(values, dtype=np.float64)
    if not len(x):
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    ids, inv = np.unique(np.asarray(blocks), return_inverse=True)
    k = len(ids)
    if k < 2:
        return mean, math.nan, math.nan
    resid = np.bincount(inv, weights=x - mean, minlength=k)
    se = math.sqrt(float(resid @ resid) * k / (k - 1)) / len(x)
    half = _t_quantile(0.5 + level / 2, k - 1) * se
    return mean, mean - half, mean + half


def points_margin(games: Iterable[GameResult], bot: int, opponents: Iterable[int]) -> tuple[float, float, float]:
    """Mean points margin of `bot` against `opponents` with its 95% interval (blocks as clusters).

    Per game where `bot` met at least one of `opponents` (other than itself): its total (mean over its seats)
    minus the mean total of the opponents' seats at that table.
    """
    opp = set(opponents) - {bot}
    values, blocks = [], []
    for g in games:
        mine = [t for b, t in zip(g.bots, g.totals) if b == bot]
        theirs = [t for b, t in zip(g.bots, g.totals) if b in opp]
        if mine and theirs:
            values.append(sum(mine) / len(mine) - sum(theirs) / len(theirs))
            blocks.append(g.block)
    return _clustered_mean(values, blocks)


def category_means(games: Iterable[GameResult], bot: int) -> list[tuple[float, float, float]]:
    """Per scoring category, `bot`'s mean score per seat with its 95% interval (blocks as clusters)."""
    rows, blocks = [], []
    for g in games:
        for b, cats in zip(g.bots, g.categories):
            if b == bot:
                rows.append(cats)
                blocks.append(g.block)
    if not rows:
        return [(math.nan, math.nan, math.nan)] * NUM_CATEGORIES
    cols = np.asarray(rows, dtype=np.float64).T
    return [_clustered_mean(c, blocks) for c in cols]


# --------------------------------------------------------------------------------- pairwise matrix and Nash


def pairwise_counts(games: Iterable[GameResult], num_bots: int) -> tuple[np.ndarray, np.ndarray]:
    """(score, meetings): for every two seats of distinct bots at a table, the row bot scores 1 for a better place
    than the column bot, 1/2 for the same place (a 2-player game is one meeting; a 4-player game six)."""
    score = np.zeros((num_bots, num_bots))
    met = np.zeros((num_bots, num_bots))
    for g in games:
        n = len(g.bots)
        for i in range(n):
            for j in range(n):
                a, b = g.bots[i], g.bots[j]
                if a != b:
                    met[a, b] += 1
                    score[a, b] += 1.0 if g.ranks[i] < g.ranks[j] else 0.5 if g.ranks[i] == g.ranks[j] else 0.0
    return score, met


def win_matrix(games: Iterable[GameResult], num_bots: int) -> np.ndarray:
    """Row bot's score rate against the column bot (see `pairwise_counts`); NaN where they never met."""
    score, met = pairwise_counts(games, num_bots)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(met > 0, score / np.where(met > 0, met, 1), np.nan)


def nash_payoff(games: Iterable[GameResult], num_bots: int) -> np.ndarray:
    """The antisymmetric payoff matrix for `nash_average`: the logit of the row bot's score rate against the column
    bot, smoothed by half a virtual win each way (finite for sweeps); 0 where they never met."""
    score, met = pairwise_counts(games, num_bots)
    rate = (score + 0.5) / (met + 1.0)
    return np.where(met > 0, np.log(rate) - np.log1p(-rate), 0.0)


def _lp_max(c: np.ndarray, a_eq: np.ndarray, b_eq: np.ndarray) -> float:
    """max c @ x subject to a_eq @ x = b_eq (b_eq >= 0), x >= 0: a two-phase dense simplex with Bland's rule
    (no cycling). Raises ValueError when infeasible or unbounded."""
    m, n = a_eq.shape
    t = np.zeros((m + 1, n + m + 1))
    t[:m, :n], t[:m, n:n + m], t[:m, -1] = a_eq, np.eye(m), b_eq
    basis = list(range(n, n + m))

    def pivot(r: int, j: int) -> None:
        t[r] /= t[r, j]
        for k in range(m + 1):
            if k != r and t[k, j] != 0.0:
                t[k] -= t[k, j] * t[r]
        basis[r] = j

    def run(cols: int) -> None:
        while True:
            enter = next((j for j in range(cols) if t[-1, j] < -1e-11), None)
            if enter is None:
                return
            col = t[:m, enter]
            rows = [r for r in range(m) if col[r] > 1e-11]
            if not rows:
                raise ValueError("linear program is unbounded")
            best = min(t[r, -1] / col[r] for r in rows)
            pivot(min((r for r in rows if t[r, -1] / col[r] <= best + 1e-12), key=lambda r: basis[r]), enter)

    t[-1, :n], t[-1, -1] = -a_eq.sum(axis=0), -b_eq.sum()  # phase 1: minimise the artificials' sum
    run(n + m)
    if t[-1, -1] < -1e-9:
        raise ValueError("linear program is infeasible")
    for r in range(m):  # drive artificials out of the basis where the row allows it
        if basis[r] >= n:
            j = next((j for j in range(n) if abs(t[r, j]) > 1e-9), None)
            if j is not None:
                pivot(r, j)
    t[-1] = 0.0
    t[-1, :n] = -c  # phase 2: minimise -c @ x over the original columns
    for r in range(m):
        if basis[r] < n:
            t[-1] += c[basis[r]] * t[r]
    run(n)
    x = np.zeros(n + m)
    x[basis] = t[:m, -1]
    return float(c @ x[:n])


def _maxent(e: np.ndarray) -> np.ndarray:
    """The maximum-entropy distribution q with e @ q = 0, by Newton on the dual (q = softmax(e.T @ mu))."""
    mu = np.zeros(len(e))

    def dual(m: np.ndarray) -> float:
        z = e.T @ m
        return float(z.max() + np.log(np.exp(z - z.max()).sum()))

    for _ in range(100):
        z = e.T @ mu
        q = np.exp(z - z.max())
        q /= q.sum()
        g = e @ q
        if np.max(np.abs(g), initial=0.0) < 1e-13:
            break
        h = (e * q) @ e.T - np.outer(g, g)
        d = -np.linalg.lstsq(h, g, rcond=None)[0]
        step, cur = 1.0, dual(mu)
        while dual(mu + step * d) > cur + 1e-4 * step * float(g @ d) and step > 1e-12:
            step *= 0.5
        mu = mu + step * d
    z = e.T @ mu
    q = np.exp(z - z.max())
    return q / q.sum()


def nash_average(payoff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximum-entropy Nash equilibrium of the symmetric zero-sum game with antisymmetric `payoff` (row's gain)
    and each bot's Nash average, its payoff against that mixture (Balduzzi et al. 2018, "Re-evaluating evaluation").

    The equilibria are the distributions p with payoff @ p <= 0. Which bots any equilibrium plays is found by one
    linear program per bot (max p_i); every equilibrium scores 0 against exactly those, so the maxent one is the
    maxent distribution on them with those rows = 0 (Newton on the dual), adding any other row it would break.
    A bot in the support scores 0; one outside it scores below 0. A cycle (rock-paper-scissors) gives uniform
    weights; a transitive pool puts all weight on the strongest. Returns (weights, scores).
    """
    a = np.asarray(payoff, dtype=np.float64)
    n = len(a)
    if a.shape != (n, n) or not np.allclose(a, -a.T, atol=1e-9):
        raise ValueError("the Nash payoff matrix must be square and antisymmetric")
    if n == 0:
        return np.zeros(0), np.zeros(0)
    a_eq = np.vstack([np.hstack([a, np.eye(n)]), np.concatenate([np.ones(n), np.zeros(n)])])
    b_eq = np.concatenate([np.zeros(n), [1.0]])
    support = [i for i in range(n) if _lp_max(np.eye(2 * n)[i], a_eq, b_eq) > 1e-9]
    rows = list(support)
    while True:
        q = _maxent(a[np.ix_(rows, support)])
        p = np.zeros(n)
        p[support] = q
        broken = [i for i in range(n) if i not in rows and a[i] @ p > 1e-9]
        if not broken:
            return p, a @ p
        rows.append(broken[0])
