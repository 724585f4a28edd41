"""Scoring of a board: every landscape category, both water sides, animal cards and Nature's Spirits.

All of it works on the board's bitboards (int64 (15,), one mask per stack code), so it needs no
per-cell loops except to walk groups. Categories are returned in CATEGORIES order.

River loops (Side A): `loops` = 0 scores a river by the rulebook (its longest shortest path), 1 as Board Game
Arena does (a river that closes around enclosed cells counts the tokens around them, when that is longer). The
option is the state's `river_loops` field (`harmonies_env.config.RIVER_LOOPS`); docs/rules.md states both readings.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import stacks as ST
from .cards import (
    CARD_POINTS,
    CUBES_ON_CARD,
    FIRST_SPIRIT,
    NUM_CARDS,
    SPIRIT_KIND,
    SPIRIT_POINTS,
    SPIRIT_TARGET,
    cubes_of,
)
from .geometry import FULL_MASK, NEIGHBOUR_MASK, NUM_CELLS, component_of, eccentricity, grow, lowest_cell, popcount

CATEGORIES = ("trees", "mountains", "fields", "buildings", "water", "animals", "spirit", "total")
NUM_CATEGORIES = len(CATEGORIES)
#: RIVER_POINTS[length] for lengths 0..6; beyond 6, +4 per token.
RIVER_POINTS = np.array([0, 0, 2, 5, 8, 11, 15], dtype=np.int64)
ISLAND_POINTS = 5
#: Solo sun thresholds: a score of at least SUN_THRESHOLDS[k] earns k + 1 suns.
SUN_THRESHOLDS = np.array([40, 70, 90, 110, 130, 140, 150, 160], dtype=np.int64)

#: RIM_MASK[side]: the board's edge cells (fewer than 6 neighbours on the board). A set of cells that holds one
#: of them is open to the outside, so no river encloses it. int64 (2,)
RIM_MASK = np.array([sum(1 << i for i in range(NUM_CELLS[s]) if bin(int(NEIGHBOUR_MASK[s, i])).count("1") < 6)
                     for s in range(2)], dtype=np.int64)

# stack codes whose top token is each colour, as a bitmask over stack codes
_TOP_STACKS = np.array([sum(1 << s for s in range(ST.NUM_STACKS) if ST.TOP_COLOUR[s] == c) for c in range(6)],
                       dtype=np.int64)


@njit(cache=True, inline="always")
def _union(bb, stack_set: int) -> int:
    m = 0
    for s in range(ST.NUM_STACKS):
        if (stack_set >> s) & 1:
            m |= bb[s]
    return m


@njit(cache=True)
def group_sizes_points(side: int, cells: int, by_size) -> int:
    """Sum over the connected groups of `cells` of by_size[min(size, 3) - 1]."""
    total = 0
    while cells:
        comp = component_of(side, lowest_cell(cells), cells)
        cells &= ~comp
        total += by_size[min(popcount(comp), 3) - 1]
    return total


@njit(cache=True)
def count_groups(side: int, cells: int, min_size: int) -> int:
    """Number of connected groups of `cells` with at least min_size cells."""
    n = 0
    while cells:
        comp = component_of(side, lowest_cell(cells), cells)
        cells &= ~comp
        if popcount(comp) >= min_size:
            n += 1
    return n


@njit(cache=True)
def loop_length(side: int, group: int) -> int:
    """Board Game Arena's loop length of one connected blue group: the most tokens of the group around one hole,
    0 without a hole.

    A hole is a connected set of cells that are not in the group (empty, other tokens, other blue) with no edge
    cell among them (RIM_MASK): the group closes all the way around it. The tokens around it are the group's
    cells adjacent to it (a ring around one cell: 6).
    """
    others = FULL_MASK[side] & ~group
    todo = others & ~RIM_MASK[side]
    best = 0
    while todo:
        hole = component_of(side, lowest_cell(todo), others)
        todo &= ~hole
        if hole & RIM_MASK[side]:
            continue  # open to the board's edge: not enclosed
        n = popcount(grow(side, hole) & group)
        if n > best:
            best = n
    return best


@njit(cache=True)
def river_length(side: int, blue: int, loops: int = 0) -> int:
    """Longest river: max over blue groups of (largest shortest-path distance + 1); 0 without blue.

    loops = 1 (Board Game Arena's reading): a group's length is the larger of that and its `loop_length`.
    """
    best = 0
    todo = blue
    while todo:
        comp = component_of(side, lowest_cell(todo), todo)
        todo &= ~comp
        if popcount(comp) <= best:
            continue  # a group cannot be longer than its size
        if loops != 0 and popcount(comp) >= 6:  # a hole needs 6 tokens around it
            d = loop_length(side, comp)
            if d > best:
                best = d
        cells = comp
        while cells:
            i = lowest_cell(cells)
            cells &= cells - 1
            d = eccentricity(side, i, comp) + 1
            if d > best:
                best = d
    return best


@njit(cache=True)
def river_points(length: int) -> int:
    if length <= 6:
        return RIVER_POINTS[length]
    return RIVER_POINTS[6] + 4 * (length - 6)


@njit(cache=True)
def building_count(side: int, bb) -> int:
    """Buildings whose neighbours' top tokens show at least 3 different colours."""
    buildings = bb[ST.S_BROWN_RED] | bb[ST.S_GRAY_RED] | bb[ST.S_RED_RED]
    n = 0
    while buildings:
        i = lowest_cell(buildings)
        buildings &= buildings - 1
        around = NEIGHBOUR_MASK[side, i]
        colours = 0
        for c in range(6):
            if _union(bb, _TOP_STACKS[c]) & around:
                colours += 1
        if colours >= 3:
            n += 1
    return n


@njit(cache=True)
def spirit_score(side: int, bb, card: int) -> int:
    """Points of a Nature's Spirit card's own rule on this board (whether its cube was placed is not checked)."""
    target = SPIRIT_TARGET[card]
    pts = SPIRIT_POINTS[card]
    if SPIRIT_KIND[card] == 1:  # groups
        if target == 0:
            cells = bb[ST.S_BLUE]
        elif target == 1:
            cells = bb[ST.S_YELLOW]
        else:
            cells = bb[ST.S_BROWN_RED] | bb[ST.S_GRAY_RED] | bb[ST.S_RED_RED]
        return group_sizes_points(side, cells, pts)
    if target == 0:
        return pts[0] * popcount(bb[ST.S_BLUE])
    if target == 2:
        return pts[0] * popcount(bb[ST.S_TREE1]) + pts[1] * popcount(bb[ST.S_TREE2]) + pts[2] * popcount(bb[ST.S_TREE3])
    return (pts[0] * popcount(bb[ST.S_MOUNTAIN1]) + pts[1] * popcount(bb[ST.S_MOUNTAIN2])
            + pts[2] * popcount(bb[ST.S_MOUNTAIN3]))


@njit(cache=True)
def tree_points(bb) -> int:
    """Trees category (reads the tree bitboards only)."""
    return popcount(bb[ST.S_TREE1]) + 3 * popcount(bb[ST.S_TREE2]) + 7 * popcount(bb[ST.S_TREE3])


@njit(cache=True)
def mountain_walk(side: int, m1: int, m2: int, m3: int) -> int:
    """Points of the mountains that have a mountain neighbour, from the bitboards of mountains 1, 2 and 3 high: the
    one walk of the mountains category, for `mountain_points` and the observation's score update (greedy's
    isolated-mountain term keeps its own walk: docs/engine.md, hot kernels). Why scalars: a hot caller hands no
    array, so no reference count is taken per call."""
    mountains = m1 | m2 | m3
    m = 0
    cells = mountains
    while cells:
        i = lowest_cell(cells)
        cells &= cells - 1
        if NEIGHBOUR_MASK[side, i] & mountains:
            bit = 1 << i
            m += 1 if m1 & bit else (3 if m2 & bit else 7)
    return m


@njit(cache=True)
def mountain_points(side: int, bb) -> int:
    """Mountains category: mountains with a mountain neighbour (reads the mountain bitboards only)."""
    return mountain_walk(side, bb[ST.S_MOUNTAIN1], bb[ST.S_MOUNTAIN2], bb[ST.S_MOUNTAIN3])


@njit(cache=True)
def field_points(side: int, bb) -> int:
    """Fields category: groups of 2+ yellow cells (reads the yellow bitboard only)."""
    return 5 * count_groups(side, bb[ST.S_YELLOW], 2)


@njit(cache=True)
def building_points(side: int, bb) -> int:
    """Buildings category (reads every bitboard: a building's neighbours' colours)."""
    return 5 * building_count(side, bb)


@njit(cache=True)
def water_points(side: int, bb, river_loops: int) -> int:
    """Water category: the river (Side A) or the islands (Side B) (reads the blue bitboard only)."""
    if side == 0:
        return river_points(river_length(side, bb[ST.S_BLUE], river_loops))
    return ISLAND_POINTS * max(1, count_groups(side, FULL_MASK[side] & ~bb[ST.S_BLUE], 1))


@njit(cache=True)
def animal_points(held, seat: int) -> int:
    """Animals category: the points under the last cube placed on each animal card `seat` holds (held: the
    `card_held` table, int (43,))."""
    animals = 0
    for card in range(1, FIRST_SPIRIT):
        k = cubes_of(held, 0, seat, card)
        if k > 0:
            animals += CARD_POINTS[card, k - 1]
    return animals


@njit(cache=True)
def spirit_points(side: int, bb, held, seat: int) -> int:
    """Spirit category: the rules of the Spirits whose cube `seat` placed."""
    spirit = 0
    for card in range(FIRST_SPIRIT, NUM_CARDS + 1):
        if cubes_of(held, 0, seat, card) == CUBES_ON_CARD[card]:
            spirit += spirit_score(side, bb, card)
    return spirit


@njit(cache=True)
def score_into(side: int, bb, held, seat: int, out, river_loops: int = 0) -> None:
    """Write the score breakdown (CATEGORIES order) of one board into out (int64 (8,)).

    bb: (15,) bitboards by stack code. held: (43,) the `card_held` table (holder seat * 8 + cubes moved from the
    card, -1 = not held; for one board alone, seat 0's entries are just the cubes placed); seat: whose cards score.
    A Spirit scores only when its single cube was placed.
    river_loops: the state's `river_loops` field (0 = rulebook, 1 = Board Game Arena's loops; Side A only).
    """
    out[0] = tree_points(bb)
    out[1] = mountain_points(side, bb)
    out[2] = field_points(side, bb)
    out[3] = building_points(side, bb)
    out[4] = water_points(side, bb, river_loops)
    animals = animal_points(held, seat)
    spirit = spirit_points(side, bb, held, seat)
    out[5] = animals
    out[6] = spirit
    out[7] = out[0] + out[1] + out[2] + out[3] + out[4] + animals + spirit


@njit(cache=True)
def solo_suns(score: int, side: int, spirit_bonus: int) -> int:
    """Suns of a solo result: by score, +1 on Side A, + the Spirit bonus (2 without a Spirit)."""
    suns = 0
    for t in SUN_THRESHOLDS:
        if score >= t:
            suns += 1
    return suns + (1 if side == 0 else 0) + spirit_bonus
