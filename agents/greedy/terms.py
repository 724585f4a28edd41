"""The greedy planner's evaluation terms: what a position is worth to a player (`heuristic_value`,
`heuristic_value_board`), its potential terms (`potential_terms`, read by the learners' features too) and whether the
player has a turn left.

`heuristic_value` = the player's current score + potential (weights in `DEFAULT_WEIGHTS`, by index), except on the
player's last turn (`no_turn_left`: the end is triggered and the player has played this round, or ending the
turn now triggers it), where only points count:
 0 brown trunk of 1 (a tree 2 or 3 waiting for green)      1 brown trunk of 2
 2 isolated mountain (x its points if it gets a neighbour)  3 yellow cell without a yellow neighbour
 4 lone red token (a building waiting)                      5 building whose neighbours show < 3 colours
 6 blue cell (river growth, Side A only)                    7 held card whose next habitat stands now
   (x the points of its next cube)                          8 held card otherwise (x next cube's points)
 9 empty cells (room left)                                 10 incomplete card held (slot pressure)
11 Spirit kept without its cube (x its rule's points now)  12 held card whose next habitat is 1 token away
13 held card whose next habitat is 2 tokens away              (12, 13: x the points of its next cube)

Terms 12-13 are what makes the planner build towards its cards' habitats over several turns ("habitats nearly
complete"): a habitat's distance is the fewest tokens still to place on its cells, over every placement of the
pattern whose cells can still become what it asks (`habitat_distance`). They raise the planner's score and win
rate against the same planner without them (`experiments/tune_greedy.py` compares; figures in
benchmarks/STRENGTH.md).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import cards as C
from harmonies_env import stacks as ST
from harmonies_env import state as S
from harmonies_env.geometry import NEIGHBOUR_MASK, lowest_cell, popcount
from harmonies_env.scoring import (
    NUM_CATEGORIES,
    score_into,
    spirit_score,
)

from .habitats import (
    _colour_cells,
    habitat_near,
    need_grids,
)

#: Potential weights (see the module docstring for each index). float64 (NUM_TERMS,)
DEFAULT_WEIGHTS = np.array([1.36, 3.89, 0.39, 0.46, 1.14, 2.78, 0.42, 1.03, 0.26, 0.17, -0.87, 0.92, 0.34, 0.10],
                           dtype=np.float64)


_NC = C.NUM_CARDS + 1


#: How many potential terms `potential_terms` computes (the length of the weight vector).
NUM_TERMS = 14


#: Scratch of `_terms` (int64 (TERMS_SCRATCH,)): the need grids (9 x 4), the class grids (NUM_CLASSES), then per held
#: slot whether its card's habitat stands and its `habitat_near` (what `heuristic_value_child` reuses of a parent's).
_SLOT_AT = 36 + C.NUM_CLASSES


TERMS_SCRATCH = _SLOT_AT + 2 * S.MAX_SLOTS


#: CARD_CLASSES[side, card]: mask over the habitat classes the card's pattern reads.
CARD_CLASSES = np.array([[sum(1 << cls for cls in {int(C.GRID_ROT_CLASS[side, r, j])
                                                    for r in range(C.GRID_ROT_START[side, card],
                                                                   C.GRID_ROT_START[side, card + 1])
                                                    for j in range(4)} if cls >= 0)
                          for card in range(_NC)] for side in range(2)], dtype=np.int64)


#: Every class changed (the full evaluation: nothing of a parent is reused).
_ALL = -1


@njit(cache=True)
def _terms(s, p: int, scratch):
    """The potential terms of player p as a tuple of floats (`heuristic_value` runs in inner loops: no allocation; the
    need grids and the class grids are computed into scratch, int64 (TERMS_SCRATCH,), only when a held card asks)."""
    return _terms_board(s, p, s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], scratch)


@njit(cache=True)
def _terms_board(s, p: int, bb, scratch):
    """`_terms` of p with its board's bitboards bb (int64 (15,)) instead of s's (the rest of p's fields from s)."""
    side = s[S.SIDE]
    t7, t8, t10, t11, t12, t13 = _card_terms(s, p, bb, scratch, False, False, _ALL, _ALL)
    return _assemble(side, bb, _mountain_term(side, bb), _yellow_term(side, bb), _building_term(side, bb),
                     t7, t8, t10, t11, t12, t13)


@njit(cache=True)
def terms_and_needs(s, p: int, scratch):
    """`_terms` of p, with scratch (int64 (TERMS_SCRATCH,)) left holding p's need grids (`need_grids`, always) and
    each held slot's answers (whether its card's habitat stands, else its `habitat_near`; `habitat_slot` reads
    them): the afterstate features read these again."""
    side = s[S.SIDE]
    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
    need_grids(side, bb, s[S.CUBES + p], scratch[:36].reshape((9, 4)))
    t7, t8, t10, t11, t12, t13 = _card_terms(s, p, bb, scratch, False, True, _ALL, _ALL)
    return _assemble(side, bb, _mountain_term(side, bb), _yellow_term(side, bb), _building_term(side, bb),
                     t7, t8, t10, t11, t12, t13)


@njit(cache=True)
def habitat_slot(s, p: int, h: int, scratch) -> int:
    """`habitat_near` of the card p holds in slot h (0 when its habitat stands), from scratch as `terms_and_needs`
    left it (its answer, or the need grids for a card whose answer it did not write: a completed card)."""
    card = s[S.SLOT + S.MAX_SLOTS * p + h]
    if card < C.FIRST_SPIRIT and S.cubes_placed(s, p, card) >= C.CUBES_ON_CARD[card]:
        return habitat_near(s[S.SIDE], s[S.CUBES + p], card, scratch[:36].reshape((9, 4)))
    if scratch[_SLOT_AT + 2 * h]:
        return 0
    if card >= C.FIRST_SPIRIT:
        return 3
    return scratch[_SLOT_AT + 2 * h + 1]


@njit(cache=True, inline="always")
def _assemble(side: int, bb, t2: float, t3: float, t5: float, t7: float, t8: float, t10: float, t11: float,
              t12: float, t13: float):
    """The terms tuple (by index) from the computed ones and the popcount ones."""
    t6 = float(popcount(bb[ST.S_BLUE])) if side == 0 else 0.0
    return (float(popcount(bb[ST.S_BROWN1])), float(popcount(bb[ST.S_BROWN2])), t2, t3,
            float(popcount(bb[ST.S_RED1])), t5, t6, t7, t8, float(popcount(bb[0])), t10, t11, t12, t13)


@njit(cache=True)
def _mountain_term(side: int, bb) -> float:
    """Term 2: isolated mountains, each x its points (reads the mountain bitboards only). The engine's
    `scoring.mountain_walk` counts the others; this walk stays written out, as the complement of that one measured
    several times slower per call (docs/engine.md, hot kernels)."""
    t2 = 0.0
    mountains = bb[ST.S_MOUNTAIN1] | bb[ST.S_MOUNTAIN2] | bb[ST.S_MOUNTAIN3]
    m = mountains
    while m:
        i = lowest_cell(m)
        m &= m - 1
        if NEIGHBOUR_MASK[side, i] & mountains == 0:
            bit = 1 << i
            t2 += 1.0 if bb[ST.S_MOUNTAIN1] & bit else (3.0 if bb[ST.S_MOUNTAIN2] & bit else 7.0)
    return t2


@njit(cache=True)
def _yellow_term(side: int, bb) -> float:
    """Term 3: yellow cells without a yellow neighbour (reads the yellow bitboard only)."""
    t3 = 0.0
    y = bb[ST.S_YELLOW]
    m = y
    while m:
        i = lowest_cell(m)
        m &= m - 1
        if NEIGHBOUR_MASK[side, i] & y == 0:
            t3 += 1.0
    return t3


@njit(cache=True)
def _building_term(side: int, bb) -> float:
    """Term 5: buildings whose neighbours show fewer than 3 colours."""
    t5 = 0.0
    buildings = bb[ST.S_BROWN_RED] | bb[ST.S_GRAY_RED] | bb[ST.S_RED_RED]
    if buildings:
        c0, c1, c2 = _colour_cells(bb, 0), _colour_cells(bb, 1), _colour_cells(bb, 2)
        c3, c4, c5 = _colour_cells(bb, 3), _colour_cells(bb, 4), _colour_cells(bb, 5)
        m = buildings
        while m:
            i = lowest_cell(m)
            m &= m - 1
            around = NEIGHBOUR_MASK[side, i]
            colours = (((c0 & around) != 0) + ((c1 & around) != 0) + ((c2 & around) != 0) + ((c3 & around) != 0)
                       + ((c4 & around) != 0) + ((c5 & around) != 0))
            if colours < 3:
                t5 += 1.0
    return t5


@njit(cache=True)
def _card_terms(s, p: int, bb, scratch, grids_ready: bool, need_ready: bool, changed_cls: int, changed_need: int,
                redo: int = 0):
    """Terms 7, 8, 10, 11, 12, 13 (the held cards') of p on the board bb. scratch int64 (TERMS_SCRATCH,): the need
    grids then the class grids, computed here only when a held card asks, or (need_ready, grids_ready) already
    holding bb's (as `need_grids` and `cards.class_grids` write them); its slot part is written (whether each
    card's habitat stands, its distance). changed_cls / changed_need: masks over the classes whose grid / need grids
    may differ from the board whose slot part scratch holds; a card reading none of them keeps that board's answer
    (_ALL: none kept). redo: mask over the slots whose card is not the one the slot part was written for (a card
    taken): those are always computed."""
    side = s[S.SIDE]
    t7 = t8 = t10 = t11 = t12 = t13 = 0.0
    cubes = s[S.CUBES + p]
    need = scratch[:36].reshape((9, 4))
    grids = scratch[36:_SLOT_AT]
    have_need = need_ready
    have_grids = grids_ready
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card < 0:
            continue
        t10 += 1.0
        reads = CARD_CLASSES[side, card]
        if card >= C.FIRST_SPIRIT:
            gain = float(spirit_score(side, bb, card))
        else:
            k = S.cubes_placed(s, p, card)
            if k >= C.CUBES_ON_CARD[card]:
                continue
            gain = float(C.CARD_POINTS[card, k] - (C.CARD_POINTS[card, k - 1] if k > 0 else 0))
        fresh = (redo >> h) & 1
        was = 0 if fresh else scratch[_SLOT_AT + 2 * h]
        if fresh or changed_cls == _ALL or reads & changed_cls:
            if not have_grids:
                C.class_grids(side, bb, grids)
                have_grids = True
            stands = C.habitat_stands_grid(side, grids, cubes, card)
        else:
            stands = was != 0
        scratch[_SLOT_AT + 2 * h] = stands
        if stands:
            t7 += gain
            continue
        if card >= C.FIRST_SPIRIT:
            t11 += gain
            continue
        t8 += gain
        if not fresh and was == 0 and changed_need != _ALL and (reads & changed_need) == 0:
            d = scratch[_SLOT_AT + 2 * h + 1]
        else:
            if not have_need:
                need_grids(side, bb, cubes, need)
                have_need = True
            d = habitat_near(side, cubes, card, need)
            scratch[_SLOT_AT + 2 * h + 1] = d
        if d == 1:
            t12 += gain
        elif d == 2:
            t13 += gain
    return t7, t8, t10, t11, t12, t13


@njit(cache=True)
def potential_terms(s, p: int, t) -> None:
    """The unweighted potential terms of player p (see the module docstring, by index) into t: float64 (NUM_TERMS,).

    What `heuristic_value` weights; the learned agent's features (`agents.afterstate`) read them raw. Depends only on
    public fields (p's board, cubes, held cards and the cubes placed on them).
    """
    x = _terms(s, p, np.empty(TERMS_SCRATCH, dtype=np.int64))
    for k in range(NUM_TERMS):
        t[k] = x[k]


@njit(cache=True)
def no_turn_left(s, p: int) -> bool:
    """Whether player p gets no further turn once the current turn ends (so potential is worth nothing to p).

    True when the game is over; when the end is already triggered and p has played this round (p <= the
    mover); or when p is the mover and ending the turn now triggers the end: p's board has <= 2 empty cells,
    or the pouch cannot refill the central board (3 tokens per space to refill, all spaces in solo). A trigger
    ends the game after the round, which p does not see again.
    """
    return no_turn_left_board(s, p, s[S.BITBOARD + 15 * p])


@njit(cache=True)
def no_turn_left_board(s, p: int, empty: int) -> bool:
    """`no_turn_left` with p's empty cells (mask) given instead of read from s."""
    if s[S.GAME_OVER]:
        return True
    mover = s[S.CURRENT]
    if s[S.END_TRIGGER]:
        return p <= mover
    if p != mover:
        return False
    if popcount(empty) <= 2:
        return True
    solo = s[S.NUM_PLAYERS] == 1
    if not solo and not S.took_tokens(s):  # no space emptied yet: nothing to refill (checked first: hot)
        return False
    pouch = 0
    for c in range(6):
        pouch += s[S.POUCH + c]
    return pouch < (3 * s[S.NUM_SPACES] if solo else 3)


@njit(cache=True)
def heuristic_value(s, p: int, w, sc) -> float:
    """Score of player p now plus the potential heuristic: total + w . potential_terms.

    The potential is left out when p has no turn left (`no_turn_left`): on a player's last turn only points count.
    w: float64 (NUM_TERMS,); sc: int64 (NUM_CATEGORIES,) scratch (left holding p's score by category).
    """
    return heuristic_value_with(s, p, w, sc, np.empty(TERMS_SCRATCH, dtype=np.int64))


@njit(cache=True)
def heuristic_value_with(s, p: int, w, sc, scratch) -> float:
    """`heuristic_value` with the potential's scratch passed in (int64 (TERMS_SCRATCH,)): the planners' inner loops."""
    return heuristic_value_board(s, p, s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], w, sc, scratch)


@njit(cache=True)
def heuristic_value_board(s, p: int, bb, w, sc, scratch) -> float:
    """`heuristic_value_with` of p with its board's bitboards bb (int64 (15,)) instead of s's: the beam values a token
    placement from its parent's state and the child's bitboards, without copying the state and stepping."""
    score_into(s[S.SIDE], bb, s[S.CARD_HELD: S.CARD_HELD + _NC], p, sc, s[S.RIVER_LOOPS])
    v = float(sc[NUM_CATEGORIES - 1])
    if no_turn_left_board(s, p, bb[0]):
        return v
    x = _terms_board(s, p, bb, scratch)
    for k in range(NUM_TERMS):
        v += w[k] * x[k]
    return v
