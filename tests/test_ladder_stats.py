"""The ladder's statistics (harmonies_apps.ladder.stats, .sequential) on simulated games with known ratings."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harmonies_apps.ladder.sequential import (
    PAIR_OUTCOMES,
    SequentialTest,
    elo_llr,
    pair_result,
    pentanomial,
    pentanomial_llr,
    points_llr,
    sprt_bounds,
    sup_loglik,
)
from harmonies_apps.ladder.stats import (
    GameResult,
    bootstrap_intervals,
    category_means,
    elo_to_score,
    fit_ratings,
    nash_average,
    nash_payoff,
    points_margin,
    score_to_elo,
    win_matrix,
)

TRUE = np.array([0.0, 100.0, 200.0, 300.0, 400.0, 250.0])


def simulate(true_elo, seats: int, blocks: int, seed: int, ties: float = 0.0) -> list[GameResult]:
    """Blocks of `seats` distinct bots, every rotation, finishing orders drawn from Plackett-Luce on `true_elo`;
    with probability `ties` the first two places share a victory."""
    rng = np.random.default_rng(seed)
    strength = 10 ** (np.asarray(true_elo) / 400)
    games = []
    for b in range(blocks):
        bots = rng.choice(len(true_elo), size=seats, replace=False)
        for rot in range(seats):
            seat_bots = np.roll(bots, rot)
            left, ranks = list(range(seats)), [0] * seats
            for place in range(seats):
                w = strength[seat_bots[left]]
                ranks[left.pop(rng.choice(len(left), p=w / w.sum()))] = place
            if rng.random() < ties:
                ranks = [max(r - 1, 0) if r else 0 for r in ranks]
            totals = tuple(90 - 10 * r + int(rng.integers(0, 5)) for r in ranks)
            cats = tuple(tuple(int(rng.integers(0, 15)) for _ in range(7)) for _ in range(seats))
            games.append(GameResult(b, tuple(int(x) for x in seat_bots), totals, tuple(ranks), cats))
    return games


@pytest.mark.parametrize("seats", [2, 3, 4])
def test_fit_recovers_known_ratings_and_intervals_cover_them(seats):
    games = simulate(TRUE, seats, 500, seed=20 + seats)
    r = fit_ratings(games, len(TRUE))
    assert r[0] == 0.0
    assert np.max(np.abs(r - TRUE)) < 60  # about two standard errors at these counts
    lo, hi = bootstrap_intervals(games, len(TRUE), seed=1, samples=200)
    assert lo[0] == hi[0] == 0.0
    assert np.all(lo[1:] < r[1:]) and np.all(r[1:] < hi[1:])
    # 95% intervals, all relative to the same estimated anchor (so their misses are correlated)
    assert np.sum((lo <= TRUE) & (TRUE <= hi)) >= 4
    assert np.all(hi[1:] - lo[1:] < 160)


def test_fit_is_order_free_and_anchored():
    games = simulate(TRUE, 3, 200, seed=7, ties=0.1)
    r = fit_ratings(games, len(TRUE))
    rng = np.random.default_rng(0)
    for _ in range(5):
        shuffled = list(games)
        rng.shuffle(shuffled)
        assert np.max(np.abs(fit_ratings(shuffled, len(TRUE)) - r)) <= 1e-9
    r3 = fit_ratings(games, len(TRUE), anchor=3)
    assert r3[3] == 0.0
    assert np.max(np.abs((r - r[3]) - r3)) < 1e-6  # the anchor only shifts the scale
    with pytest.raises(ValueError, match="anchor 6"):
        fit_ratings(games, len(TRUE), anchor=6)
    with pytest.raises(ValueError, match="out of range"):
        fit_ratings(games, 3)


def test_prior_keeps_an_undefeated_bot_finite_and_unrated_bots_are_nan():
    games = [GameResult(b, (1, 0) if b % 2 else (0, 1), (60, 40) if b % 2 else (40, 60), (0, 1) if b % 2 else (1, 0),
                        ((0,) * 7, (0,) * 7)) for b in range(20)]
    r = fit_ratings(games, 3)
    assert np.isfinite(r[1]) and 300 < r[1] < 1500
    assert math.isnan(r[2])  # never played
    assert fit_ratings(games, 3, prior_games=4)[1] < r[1]  # a stronger prior pulls harder
    no_prior = fit_ratings(games, 3, prior_games=0)[1]
    assert no_prior > 5000 or not np.isfinite(no_prior)


def test_two_seat_plackett_luce_is_bradley_terry_with_half_wins():
    """20 games of bot 1 against the anchor: 12 wins, 6 losses, 2 shared victories. Bradley-Terry with the prior
    (2 virtual draws) has score (12 + 1 + 1) / 22 at its maximum: the fit's Elo is that score's."""
    games = []
    for b, (res) in enumerate(["w"] * 12 + ["l"] * 6 + ["d"] * 2):
        ranks = {"w": (0, 1), "l": (1, 0), "d": (0, 0)}[res]
        games.append(GameResult(b, (1, 0), (50, 40), ranks, ((0,) * 7,) * 2))
    r = fit_ratings(games, 2)
    assert abs(r[1] - score_to_elo(14 / 22)) < 1e-9


def test_two_seat_fit_matches_an_independent_bradley_terry_mm_fit():
    """Hunter's (2004) MM iterations for Bradley-Terry on wins (1/2 per shared victory) and games, with the same 2
    virtual draws per pair that met, give the same ratings."""
    games = simulate(TRUE, 2, 120, seed=11, ties=0.1)
    n = len(TRUE)
    won, met = np.zeros(n), np.zeros((n, n))
    for g in games:
        a, b = g.bots
        met[a, b] += 1
        met[b, a] += 1
        won[a] += 1.0 if g.ranks[0] < g.ranks[1] else 0.5 if g.ranks[0] == g.ranks[1] else 0.0
        won[b] += 1.0 if g.ranks[1] < g.ranks[0] else 0.5 if g.ranks[0] == g.ranks[1] else 0.0
    prior = 2.0 * (met > 0)
    met, won = met + prior, won + prior.sum(axis=1) / 2
    gamma = np.ones(n)
    for _ in range(20000):
        gamma = won / (met / (gamma[:, None] + gamma[None, :])).sum(axis=1)
        gamma /= gamma[0]
    assert np.max(np.abs(400 * np.log10(gamma) - fit_ratings(games, n))) < 1e-6


def test_a_shared_place_counts_as_the_mixture_of_its_orders():
    """Two 3-player games with bots 1 and 2 sharing first place weigh exactly as one game of each order."""
    base = simulate(TRUE[:4], 3, 30, seed=8)
    cats = ((0,) * 7,) * 3
    tied = [GameResult(99, (1, 2, 3), (50, 50, 40), (0, 0, 1), cats)] * 2
    both = [GameResult(99, (1, 2, 3), (50, 49, 40), (0, 1, 2), cats),
            GameResult(99, (2, 1, 3), (50, 49, 40), (0, 1, 2), cats)]
    a, b = fit_ratings(base + tied, 4), fit_ratings(base + both, 4)
    assert np.max(np.abs(a - b)) < 1e-9
    assert np.max(np.abs(a - fit_ratings(base, 4))) > 1  # and the games do count


def test_bootstrap_is_deterministic_per_seed():
    games = simulate(TRUE, 2, 60, seed=3)
    a = bootstrap_intervals(games, len(TRUE), seed=5, samples=50)
    b = bootstrap_intervals(list(reversed(games)), len(TRUE), seed=5, samples=50)
    c = bootstrap_intervals(games, len(TRUE), seed=6, samples=50)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_elo_helpers_invert():
    assert elo_to_score(0) == 0.5 and abs(elo_to_score(400) - 10 / 11) < 1e-12
    assert abs(score_to_elo(elo_to_score(123.4)) - 123.4) < 1e-9


#: Fishtest's LLRcalc (server/fishtest/stats/LLRcalc.py, run with scipy): LLR_logistic(0, 10, c),
#: LLR_normalized(0, 10, c), LLR_logistic(-5, 5, c).
FISHTEST = [
    ([10, 20, 40, 25, 5], -0.43748623289102595, -0.2821129156545657, -0.27697877014578615),
    ([1, 3, 5, 2, 0], -0.2734800858830004, -0.15458525491320818, -0.2465241512627609),
    ([0, 0, 8, 0, 0], -0.22762611983297285, -0.010582286893721335, 0.0),
    ([3, 0, 0, 0, 7], 0.11101503518450691, 0.154513513450843, 0.11515875408905067),
    ([50, 160, 400, 260, 70], 6.72941598525203, 5.000366109313009, 8.254953017919158),
]


@pytest.mark.parametrize("counts,logistic,normalized,symmetric", FISHTEST)
def test_pentanomial_llr_is_fishtests(counts, logistic, normalized, symmetric):
    assert abs(pentanomial_llr(counts, 0, 10) - logistic) < 1e-9
    assert abs(pentanomial_llr(counts, 0, 10, model="normalized") - normalized) < 1e-9
    assert abs(pentanomial_llr(counts, -5, 5) - symmetric) < 1e-9


def test_sprt_bounds_and_pentanomial_counts():
    lo, hi = sprt_bounds(0.05, 0.05)
    assert abs(lo + math.log(19)) < 1e-12 and abs(hi - math.log(19)) < 1e-12
    assert list(pentanomial([0, 0.5, 1, 1, 2, 1.5])) == [1, 1, 2, 1, 1]
    assert PAIR_OUTCOMES == (0.0, 0.5, 1.0, 1.5, 2.0)
    with pytest.raises(ValueError):
        pentanomial([0.25])


def simulate_pairs(elo: float, n: int, seed: int, draw: float = 0.2):
    """Pairs of games between NEW (`elo` better) and BASE: per game win/draw/loss, margin ~ N(elo / 20, 12)."""
    rng = np.random.default_rng(seed)
    s = elo_to_score(elo)
    pw, pd = s - draw / 2, draw
    for _ in range(n):
        u = rng.random(2)
        score = float(np.sum(np.where(u < pw, 1.0, np.where(u < pw + pd, 0.5, 0.0))))
        yield score, float(rng.normal(elo / 20, 12))


@pytest.mark.parametrize("kind,bounds", [("elo", (0, 10)), ("points", (0, 1))])
def test_sequential_test_accepts_h1_for_a_clearly_better_bot_and_h0_for_equals(kind, bounds):
    better = SequentialTest(kind, bounds)
    for score, margin in simulate_pairs(120, 2000, seed=1):
        if better.add(score, margin):
            break
    assert better.verdict == "H1" and better.pairs < 400
    assert better.llr >= better.upper and better.trajectory[-1] == better.llr and len(better.trajectory) == better.pairs
    equal = SequentialTest(kind, bounds)
    for score, margin in simulate_pairs(0, 5000, seed=2):
        if equal.add(score, margin):
            break
    assert equal.verdict == "H0" and equal.llr <= equal.lower
    assert sum(equal.counts) == equal.pairs


def test_identical_deterministic_bots_are_confirmed_equal_by_points_not_in_16_pairs_by_elo():
    """Every pair exactly 1-1. The points test accepts H0 in 3 pairs (every margin is 0). The Elo test cannot within
    16 pairs, nor can any test valid at beta = 0.05: a bot at elo1 that draws every pair but sweeps 2 (s1 - s0) of
    them shows 16 straight 1-1 pairs with probability 0.63. It accepts H0 after ~100 pairs."""
    points = SequentialTest("points", (0, 1))
    for _ in range(3):
        points.add(1.0, 0.0)
    assert points.verdict == "H0" and points.decided_at == 3
    elo = SequentialTest("elo", (0, 10))
    while elo.add(1.0, 0.0) is None:
        assert elo.pairs < 200
    assert elo.verdict == "H0" and 90 < elo.decided_at < 120 and max(elo.trajectory) < 0
    assert (1 - 2 * (elo_to_score(10) - 0.5)) ** 16 > 0.6
    assert points_llr([0.0] * 3, 0, 1) < sprt_bounds()[0]


def test_elo_statistic_is_the_gsprt_inside_the_bounds_and_decides_sweeps_fast():
    s0, s1 = 0.5, elo_to_score(10)
    # the e-processes' denominators: the best likelihood under the other composite hypothesis, exactly
    assert abs(sup_loglik([0, 0, 0, 0, 7], s0, "below") - 7 * math.log(0.5)) < 1e-12  # 2-0 pairs: mass s0 on 1
    assert abs(sup_loglik([0, 0, 7, 0, 0], s1, "above") - 7 * math.log(1 - 2 * (s1 - 0.5))) < 1e-12
    below = [6, 20, 50, 20, 5]  # mean score 0.495: already below s0, the constraint does not bind
    free = sum(c * math.log(c / 101) for c in below)
    assert abs(sup_loglik(below, s0, "below") - free) < 1e-12 and sup_loglik(below, s1, "above") < free - 0.3
    inside = [5, 20, 50, 20, 6]  # mean score 0.505, between s0 and s1
    # on those counts the e-processes are far behind: the statistic is the GSPRT's LLR, rescaled to Wald's bounds
    t = SequentialTest("elo", (0, 10))
    for score in np.random.default_rng(1).permutation(np.repeat(PAIR_OUTCOMES, inside)):
        t.add(float(score), 0.0)
    low, _ = sprt_bounds(0.05, 0.05)
    g_low, _ = sprt_bounds(0.9 * 0.05, 0.9 * 0.05)
    assert t.counts == inside and abs(t.llr - pentanomial_llr(inside, 0, 10) * low / g_low) < 1e-12
    # a sweeping bot: every pair 2-0. The GSPRT gains log(s1 / s0) a pair (~100 pairs to H1); the e-process against
    # H0 gains ~log 2 a pair, less its forecasts' cost: H1 after 11 pairs (22 games)
    sweep = SequentialTest("elo", (0, 10))
    while sweep.add(2.0, 10.0) is None:
        pass
    assert sweep.verdict == "H1" and sweep.decided_at == 11 and sweep.llr >= sweep.upper
    assert 0.25 < pentanomial_llr([0, 0, 0, 0, 11], 0, 10) < 0.35
    assert all(b > a for a, b in zip(sweep.trajectory, sweep.trajectory[1:]))
    # and the mirror image: swept, H0 as fast
    swept = SequentialTest("elo", (0, 10))
    while swept.add(0.0, -10.0) is None:
        pass
    assert swept.verdict == "H0" and swept.decided_at <= 12


def test_elo_llr_reaches_the_common_bounds_exactly_when_a_part_reaches_its_own():
    low, up = sprt_bounds(0.05, 0.05)
    g_low, g_up = sprt_bounds(0.045, 0.045)
    assert elo_llr(g_up, 0.0, 0.0, 0.05, 0.05) == up and elo_llr(g_low, 0.0, 0.0, 0.05, 0.05) == low
    assert abs(elo_llr(0.0, math.log(1 / 0.005), 0.0, 0.05, 0.05) - up) < 1e-12
    assert abs(elo_llr(0.0, 0.0, math.log(1 / 0.005), 0.05, 0.05) - low) < 1e-12
    assert low < elo_llr(1.0, 2.0, -5.0, 0.05, 0.05) < up  # in between: the e-process that has gone further


def test_nash_average_on_cycles_transitive_pools_and_copies():
    rps = np.array([[0.0, 1, -1], [-1, 0, 1], [1, -1, 0]])
    p, score = nash_average(rps)
    assert np.allclose(p, 1 / 3, atol=1e-9) and np.allclose(score, 0, atol=1e-9)
    s = np.array([0.0, 1.0, 2.5, 0.5])
    p, score = nash_average(s[:, None] - s[None, :])
    assert np.allclose(p, [0, 0, 1, 0], atol=1e-9) and np.allclose(score, s - 2.5, atol=1e-9)
    # rock, paper, scissors, a bot every one of them beats, and a copy of rock: the copies share rock's third
    a = np.zeros((5, 5))
    a[:3, :3] = rps
    a[3, :3], a[:3, 3] = -0.5, 0.5
    a[4] = [*rps[0], 0.5, 0.0]
    a[:, 4] = -a[4]
    p, score = nash_average(a)
    assert np.allclose(p, [1 / 6, 1 / 3, 1 / 3, 0, 1 / 6], atol=1e-7)
    assert np.allclose(score, [0, 0, 0, -0.5, 0], atol=1e-7)
    p, _ = nash_average(np.array([[0.0, 2, -1], [-2, 0, 1], [1, -1, 0]]))  # weighted cycle
    assert np.allclose(p, [0.25, 0.25, 0.5], atol=1e-9)
    with pytest.raises(ValueError):
        nash_average(np.ones((2, 2)))


def test_win_matrix_and_nash_payoff_from_games():
    g = [GameResult(0, (0, 1), (50, 40), (0, 1), ((0,) * 7,) * 2),
         GameResult(0, (1, 0), (50, 50), (0, 0), ((0,) * 7,) * 2),
         GameResult(1, (0, 1, 2), (3, 2, 1), (0, 1, 2), ((0,) * 7,) * 3)]
    w = win_matrix(g, 4)
    assert w[0, 1] == 2.5 / 3 and w[1, 0] == 0.5 / 3 and w[0, 2] == 1.0 and math.isnan(w[0, 3])
    assert math.isnan(w[0, 0])
    pay = nash_payoff(g, 4)
    assert np.allclose(pay, -pay.T) and pay[0, 3] == 0.0 and np.isfinite(pay[0, 2]) and pay[0, 2] > 0


def test_points_margin_and_category_means_with_block_intervals():
    rng = np.random.default_rng(4)
    games = []
    for b in range(40):
        for seats in ((0, 1), (1, 0)):
            tot = {0: 60 + int(rng.integers(-5, 6)), 1: 55 + int(rng.integers(-5, 6))}
            totals = tuple(tot[s] for s in seats)
            cats = tuple(tuple([s + 1] * 6 + [int(rng.integers(0, 4))]) for s in seats)
            games.append(GameResult(b, seats, totals, (0, 1) if totals[0] >= totals[1] else (1, 0), cats))
    mean, lo, hi = points_margin(games, 0, [1])
    assert lo < 5 < hi and lo < mean < hi and hi - lo < 4
    assert all(math.isnan(v) for v in points_margin(games, 0, [2]))  # never met
    cats = category_means(games, 1)
    assert len(cats) == 7 and cats[0] == (2.0, 2.0, 2.0)  # a constant: zero width
    assert cats[6][1] < 1.5 < cats[6][2]
    single = points_margin(games[:2], 0, [1])
    assert not math.isnan(single[0]) and math.isnan(single[1])  # one block: no interval


def test_pair_result_scores_and_margins():
    a = GameResult(3, (0, 1), (50, 40), (0, 1), ((0,) * 7,) * 2)
    b = GameResult(3, (1, 0), (45, 45), (0, 0), ((0,) * 7,) * 2)
    assert pair_result([a, b], new=0, base=1) == (1.5, 5.0)
    assert pair_result([a, b], new=1, base=0) == (0.5, -5.0)
