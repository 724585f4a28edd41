"""The greedy evaluation, incrementally: a parent position's cache (`parent_cache`) from which a child board one
token away (`heuristic_value_child`) or a turn's afterstate (`heuristic_value_after`, `after_parts`, `taken_parts`) is
evaluated by recomputing only the parts that read what changed. Exact: every part is the same whole number as
`agents.greedy.terms.heuristic_value_board` computes from scratch."""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import cards as C
from harmonies_env import stacks as ST
from harmonies_env import state as S
from harmonies_env.geometry import NEIGHBOUR_MASK
from harmonies_env.scoring import (
    NUM_CATEGORIES,
    animal_points,
    building_points,
    field_points,
    mountain_points,
    score_into,
    spirit_points,
    spirit_score,
    tree_points,
    water_points,
)

from .habitats import (
    MAX_ROTATIONS,
    NEED_K,
    habitat_near,
    near_after_token,
    near_witness,
    need_grids,
)
from .terms import (
    _ALL,
    _NC,
    _SLOT_AT,
    CARD_CLASSES,
    NUM_TERMS,
    TERMS_SCRATCH,
    _assemble,
    _building_term,
    _card_terms,
    _mountain_term,
    _yellow_term,
    no_turn_left_board,
)

_MOUNTAIN_CODES = sum(1 << k for k in ST.MOUNTAIN_STACKS)


#: Layout of a parent's cache (`parent_cache`), int64: the terms' scratch (need grids, class grids), the score by
#: category, then terms 2 and 3 (whole numbers), whether p holds a card and term 5.
_PC_SCORE = TERMS_SCRATCH


_PC_T2 = _PC_SCORE + NUM_CATEGORIES


#: Then per held slot (`near_witness`): the card's habitat distance D, the cells every nearest placement covers, and
#: per habitat class the cells some nearest placement reads as that class.
_PC_NEAR = _PC_T2 + 4


_NEAR_W = 2 + 9


PARENT_CACHE = _PC_NEAR + S.MAX_SLOTS * _NEAR_W


_BUILDING_CODES = sum(1 << k for k in ST.BUILDING_STACKS)


@njit(cache=True)
def parent_cache(s, p: int, pc, witness: bool) -> None:
    """What `heuristic_value_child` (witness) or `heuristic_value_after` (not witness) reuse of p's board in s, into pc
    int64 (PARENT_CACHE,): the score by category, terms 2, 3 and 5 and the need grids; then for `heuristic_value_child`
    each held card's `near_witness`, for `heuristic_value_after` the class grids and each held card's habitat
    answers."""
    side = s[S.SIDE]
    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
    score_into(side, bb, s[S.CARD_HELD: S.CARD_HELD + _NC], p, pc[_PC_SCORE: _PC_SCORE + NUM_CATEGORIES],
               s[S.RIVER_LOOPS])
    pc[_PC_T2] = int(_mountain_term(side, bb))
    pc[_PC_T2 + 1] = int(_yellow_term(side, bb))
    holds = 0
    for h in range(S.MAX_SLOTS):
        if s[S.SLOT + S.MAX_SLOTS * p + h] >= 0:
            holds = 1
    pc[_PC_T2 + 2] = holds
    pc[_PC_T2 + 3] = int(_building_term(side, bb))
    cubes = s[S.CUBES + p]
    need_grids(side, bb, cubes, pc[:36].reshape((9, 4)))
    if witness:
        rot = np.empty(4 * MAX_ROTATIONS, dtype=np.int64)
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            if card >= 0:
                near_witness(side, cubes, card, pc[:36].reshape((9, 4)), pc, _PC_NEAR + _NEAR_W * h, rot)
        return
    C.class_grids(side, bb, pc[36:_SLOT_AT])
    if holds:
        _card_terms(s, p, bb, pc[:TERMS_SCRATCH], True, True, _ALL, _ALL)


@njit(cache=True)
def _card_terms_token(s, p: int, bb, i: int, old: int, new: int, scratch, pc):
    """`_card_terms` of p's board bb = the board of pc's parent with a token placed on cell i (stack code old -> new):
    each held card's distance from its `near_witness` (`near_after_token`), matched again (on the need grids of bb,
    built in scratch from pc's) only where that cannot tell. Whether a habitat stands is distance 0."""
    side = s[S.SIDE]
    t7 = t8 = t10 = t11 = t12 = t13 = 0.0
    cubes = s[S.CUBES + p]
    g = C.to_grid(side, 1 << i)
    need = scratch[:36].reshape((9, 4))
    built = False
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card < 0:
            continue
        t10 += 1.0
        if card >= C.FIRST_SPIRIT:
            gain = float(spirit_score(side, bb, card))
        else:
            k = S.cubes_placed(s, p, card)
            if k >= C.CUBES_ON_CARD[card]:
                continue
            gain = float(C.CARD_POINTS[card, k] - (C.CARD_POINTS[card, k - 1] if k > 0 else 0))
        d = near_after_token(CARD_CLASSES[side, card], g, old, new, pc, _PC_NEAR + _NEAR_W * h)
        if d < 0:
            if not built:  # the parent's need grids with cell i moved from old's levels to new's
                for q in range(36):
                    scratch[q] = pc[q]
                free = ((cubes >> i) & 1) == 0
                for cls in range(9):
                    ko = NEED_K[old, cls]
                    if ko >= 0 and (ko == 0 or free):
                        scratch[4 * cls + ko] &= ~g
                    kn = NEED_K[new, cls]
                    if kn >= 0 and (kn == 0 or free):
                        scratch[4 * cls + kn] |= g
                built = True
            d = habitat_near(side, cubes, card, need)
        if d == 0:
            t7 += gain
            continue
        if card >= C.FIRST_SPIRIT:
            t11 += gain
            continue
        t8 += gain
        if d == 1:
            t12 += gain
        elif d == 2:
            t13 += gain
    return t7, t8, t10, t11, t12, t13


@njit(cache=True)
def heuristic_value_child(s, p: int, bb, i: int, old: int, new: int, w, sc, scratch, pc) -> float:
    """`heuristic_value_board(s, p, bb, ...)` where bb is p's board in s with cell i's stack changed from code old
    to new (a token placed), computed from s's `parent_cache` pc: only the score categories and terms that read a
    changed bitboard are recomputed, and the grids change in one bit. Exact: every part is the same whole number."""
    side = s[S.SIDE]
    touched = (1 << old) | (1 << new)
    for k in range(NUM_CATEGORIES):
        sc[k] = pc[_PC_SCORE + k]
    sc[0] = tree_points(bb)
    if touched & _MOUNTAIN_CODES:
        sc[1] = mountain_points(side, bb)
    if touched & (1 << ST.S_YELLOW):
        sc[2] = field_points(side, bb)
    buildings = bb[ST.S_BROWN_RED] | bb[ST.S_GRAY_RED] | bb[ST.S_RED_RED]
    near = touched & _BUILDING_CODES or buildings & NEIGHBOUR_MASK[side, i]  # else no building sees the change
    if near:
        sc[3] = building_points(side, bb)
    if touched & (1 << ST.S_BLUE):
        sc[4] = water_points(side, bb, s[S.RIVER_LOOPS])
    sc[6] = spirit_points(side, bb, s[S.CARD_HELD: S.CARD_HELD + _NC], p)
    sc[7] = sc[0] + sc[1] + sc[2] + sc[3] + sc[4] + sc[5] + sc[6]
    v = float(sc[NUM_CATEGORIES - 1])
    if no_turn_left_board(s, p, bb[0]):
        return v
    t2 = _mountain_term(side, bb) if touched & _MOUNTAIN_CODES else float(pc[_PC_T2])
    t3 = _yellow_term(side, bb) if touched & (1 << ST.S_YELLOW) else float(pc[_PC_T2 + 1])
    t5 = _building_term(side, bb) if near else float(pc[_PC_T2 + 3])
    t7, t8, t10, t11, t12, t13 = _card_terms_token(s, p, bb, i, old, new, scratch, pc)
    x = _assemble(side, bb, t2, t3, t5, t7, t8, t10, t11, t12, t13)
    for k in range(NUM_TERMS):
        v += w[k] * x[k]
    return v


@njit(cache=True)
def heuristic_value_after(s, p: int, w, sc, scratch, pc, parent) -> float:
    """`heuristic_value_with(s, p, ...)` where p's board in s is the board of `parent`, the state whose
    `parent_cache` pc holds, and only p's cards, cubes and the rest of s may differ (a card taken, cubes placed: the
    beam's final stage). The board's score categories and terms and the class grids are reused; when no cube was
    placed, so are the need grids and each card's habitat answers, and only a card taken is matched. Exact."""
    return weigh(after_parts(s, p, sc, scratch, pc, parent), w)


@njit(cache=True, inline="always")
def weigh(parts, w) -> float:
    """The evaluation from `after_parts`: the total, plus w . terms unless p has no turn left."""
    ntl, v, x = parts
    if ntl:
        return v
    for k in range(NUM_TERMS):
        v += w[k] * x[k]
    return v


@njit(cache=True)
def after_parts(s, p: int, sc, scratch, pc, parent):
    """`heuristic_value_after`'s parts: (whether p has no turn left, p's total as a float, the potential terms tuple;
    zeros when p has no turn left)."""
    side = s[S.SIDE]
    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
    for k in range(5):
        sc[k] = pc[_PC_SCORE + k]
    sc[5] = animal_points(s[S.CARD_HELD: S.CARD_HELD + _NC], p)
    sc[6] = spirit_points(side, bb, s[S.CARD_HELD: S.CARD_HELD + _NC], p)
    sc[7] = sc[0] + sc[1] + sc[2] + sc[3] + sc[4] + sc[5] + sc[6]
    v = float(sc[NUM_CATEGORIES - 1])
    if no_turn_left_board(s, p, bb[0]):
        return True, v, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if s[S.CUBES + p] == parent[S.CUBES + p]:
        for q in range(TERMS_SCRATCH):
            scratch[q] = pc[q]
        redo = 0
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            if card != parent[S.SLOT + S.MAX_SLOTS * p + h] or not pc[_PC_T2 + 2]:
                redo |= 1 << h
        t7, t8, t10, t11, t12, t13 = _card_terms(s, p, bb, scratch, True, True, 0, 0, redo)
    else:
        for q in range(36, _SLOT_AT):
            scratch[q] = pc[q]
        t7, t8, t10, t11, t12, t13 = _card_terms(s, p, bb, scratch, True, False, _ALL, _ALL)
    return False, v, _assemble(side, bb, float(pc[_PC_T2]), float(pc[_PC_T2 + 1]), float(pc[_PC_T2 + 3]), t7, t8,
                               t10, t11, t12, t13)


@njit(cache=True)
def taken_parts(s, p: int, card: int, pc, parts):
    """`after_parts` of s (p's board and cubes those of pc's parent) with `card` taken from the market, its habitat
    not standing (so no cube follows), from s's own parts: the total is the same (no cube on the new card) and the
    card adds to terms 8 or 11, 10 and 12 or 13 as `_card_terms` counts it. Why: the beam's final stage values
    each market card for each of its turns; this skips copying the state, stepping and matching the held cards.
    Exact (whole-number terms)."""
    ntl, v, x = parts
    if ntl:
        return parts
    side = s[S.SIDE]
    t8, t11, t12, t13 = x[8], x[11], x[12], x[13]
    if card >= C.FIRST_SPIRIT:
        t11 += float(spirit_score(side, s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], card))
    else:
        gain = float(C.CARD_POINTS[card, 0])
        t8 += gain
        d = habitat_near(side, s[S.CUBES + p], card, pc[:36].reshape((9, 4)))
        if d == 1:
            t12 += gain
        elif d == 2:
            t13 += gain
    return False, v, (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], t8, x[9], x[10] + 1.0, t11, t12, t13)
