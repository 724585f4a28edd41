"""Which bots meet next: a round of blocks chosen from the stored games alone, so any run plans the same rounds.

Why rounds: a round (`ROUND_BLOCKS` blocks) is planned from the games stored when it starts, recorded, and then
played in any order, over any number of processes; a new round is planned only once every block of the last one is
stored. So the same file and the same commands give the same blocks for any `--jobs`, for a run split in several,
and for a killed run finished by running it again (it plays the recorded blocks first).

Within a round each block is built around the bot with the fewest games (planned blocks counted), the widest
interval breaking ties (`interval_widths`), then its lowest id; its opponents are drawn without replacement with
probability ∝ p(1−p) (p: the expected score between the two, from the fitted ratings: the most informative games), a
reference's weight never under `REFERENCE_FLOOR` (references are always eligible, however far off they stand). The
draws use a generator seeded by the ladder's seed and the round's number.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .stats import ELO_PER_NAT, PRIOR_GAMES, GameResult, _aggregate, _fit, bootstrap_intervals, fit_ratings
from .store import Bot

#: Blocks in a pairing round (fixed, not a function of --jobs: the rounds must not depend on it).
ROUND_BLOCKS = 32
#: Least pairing weight of a reference (p(1-p) is at most 0.25).
REFERENCE_FLOOR = 0.05


def expected(ratings: np.ndarray, a: int, b: int) -> float:
    """The expected score of bot a against bot b on the Elo scale."""
    return 1.0 / (1.0 + 10.0 ** ((ratings[b] - ratings[a]) / 400.0))


def meetings(games: Sequence[GameResult], num_bots: int) -> np.ndarray:
    """int64 (num_bots, num_bots): how many times each two bots sat at one table (every two seats of a game)."""
    met = np.zeros((num_bots, num_bots), dtype=np.int64)
    for g in games:
        for a in g.bots:
            for b in g.bots:
                met[a, b] += 1
    np.fill_diagonal(met, 0)
    return met


def interval_widths(games: Sequence[GameResult], ratings: np.ndarray) -> np.ndarray:
    """Each bot's interval width up to a constant, for ordering bots only: 1/sqrt of its Fisher information
    Σ p(1−p) over its meetings (every two seats at a table) at the fitted ratings; infinite without games, 0 for
    the anchor. A cheap stand-in for `show`'s bootstrap, refitted every round; order-free (integer meeting counts)."""
    k = len(ratings)
    p = 1.0 / (1.0 + 10.0 ** ((ratings[None, :] - ratings[:, None]) / 400.0))
    info = (meetings(games, k) * (p * (1.0 - p))).sum(axis=1)
    with np.errstate(divide="ignore"):
        width = np.where(info > 0, 1.0 / np.sqrt(info), np.inf)
    width[0] = 0.0
    return width


def plan_round(bots: Sequence[Bot], games: Sequence[GameResult], players: int, seed: int, round_no: int,
               blocks: int = ROUND_BLOCKS, focus: int | None = None) -> list[tuple[int, ...]]:
    """The bots (ids, ascending) of each block of round `round_no`, from the stored games; with `focus` (a bot id:
    `play --bot`), every block is built around that bot."""
    k = len(bots)
    if k < players:
        raise ValueError(f"a {players}-player ladder needs at least {players} bots to play, it has {k}")
    count = np.zeros(k)
    for g in games:
        for b in g.bots:
            count[b] += 1
    if k == players:  # one possible block: nothing to choose
        return [tuple(range(k))] * blocks
    ratings = np.nan_to_num(np.asarray(fit_ratings(list(games), k), dtype=float)) if games else np.zeros(k)
    width = interval_widths(games, ratings)
    reference = np.array([b.reference for b in bots])
    pq = np.array([[expected(ratings, a, b) * (1 - expected(ratings, a, b)) for b in range(k)] for a in range(k)])
    weight = np.where(reference[None, :], np.maximum(pq, REFERENCE_FLOOR), pq) + 1e-12
    rng = np.random.default_rng([int(seed), int(round_no), 44])
    out = []
    for _ in range(blocks):
        centre = focus if focus is not None else min(range(k), key=lambda i: (count[i], -width[i], i))
        others = np.array([i for i in range(k) if i != centre])
        w = weight[centre, others]
        chosen = rng.choice(others, size=players - 1, replace=False, p=w / w.sum())
        block = tuple(sorted([centre, *(int(c) for c in chosen)]))
        for b in block:
            count[b] += players
        out.append(block)
    return out


#: `widest_interval` runs the bootstrap only once the Fisher estimate of the widest half-width is under this many
#: times the target: the bootstrap (`show`'s intervals) costs seconds, the estimate microseconds.
GATE = 1.25


def widest_interval(games: Sequence[GameResult], num_bots: int, seed: int, target: float = math.inf,
                    only: int | None = None) -> float:
    """The largest half-width of a bot's 95% interval (the anchor's is 0; an unrated bot's infinite), as `show`
    computes it (the seeded block bootstrap), or bot `only`'s placement interval (`placement_interval`); while a
    cheap Fisher estimate says it is still above GATE × `target`, that estimate instead."""
    if not games:
        return float("inf")
    ratings = np.nan_to_num(np.asarray(fit_ratings(list(games), num_bots), dtype=float))
    widths = interval_widths(games, ratings)
    estimate = float(np.max(widths if only is None else widths[only])) * 1.96 * ELO_PER_NAT
    if estimate > GATE * target:
        return estimate
    if only is not None:
        return placement_interval(games, num_bots, only, seed)
    low, high = bootstrap_intervals(list(games), num_bots, seed=seed)
    return float(np.max(np.nan_to_num((np.asarray(high) - np.asarray(low)) / 2.0, nan=np.inf)))


#: Resamples of `placement_interval`.
PLACEMENT_SAMPLES = 200


def placement_interval(games: Sequence[GameResult], num_bots: int, bot: int, seed: int,
                       samples: int = PLACEMENT_SAMPLES) -> float:
    """The half-width (Elo) of `bot`'s 95% interval against the ladder as it stands: a bootstrap that resamples the
    blocks `bot` played and keeps every other game, refitting all at each draw. `show`'s interval (every block
    resampled) also carries the references' own uncertainty from `random`, which does not narrow while every
    reference sweeps `random`; this one narrows as 1/sqrt of the bot's own games. Infinite without games."""
    st = _aggregate(games, num_bots)
    mine = np.isin(st.blocks, sorted({g.block for g in games if bot in g.bots}))
    if not mine.any():
        return float("inf")
    point = _fit(st.members, st.set_w.sum(axis=0), st.wins.sum(axis=0), st.unit, num_bots, 0, PRIOR_GAMES)
    if np.isnan(point[bot]):
        return float("inf")
    fixed_w, fixed_wins = st.set_w[~mine].sum(axis=0), st.wins[~mine].sum(axis=0)
    own_w, own_wins = st.set_w[mine].astype(np.float64), st.wins[mine].astype(np.float64)
    rng = np.random.default_rng([int(seed), int(bot), 45])
    m = int(mine.sum())
    draws = np.empty(samples)
    for k in range(samples):
        counts = np.bincount(rng.integers(0, m, size=m), minlength=m).astype(np.float64)
        draws[k] = _fit(st.members, fixed_w + counts @ own_w, fixed_wins + counts @ own_wins, st.unit, num_bots, 0,
                        PRIOR_GAMES, start=point)[bot]
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return float((high - low) / 2.0 * ELO_PER_NAT)


__all__ = ["GATE", "PLACEMENT_SAMPLES", "REFERENCE_FLOOR", "ROUND_BLOCKS", "expected", "interval_widths", "meetings",
           "placement_interval", "plan_round", "widest_interval"]
