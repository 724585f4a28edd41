"""Greedy turn planner: choose the whole turn that maximises score-after-turn plus a potential heuristic. These are its
kernels, pure functions over arrays; the agent that wraps them is `agents.greedy.agent.GreedyAgent`.

A turn is a sequence of micro-actions (take a central space, place its 3 tokens, maybe take a card, place
cubes, end). Within a turn nothing is left to chance (the refill happens at END), so a turn can be planned
exactly on any determinized copy. The kernel `plan_turn` searches it as a beam over token placements:

1. every central space that can be taken;
2. token placements, one level per token: every (held colour, legal cell) with cells in non-decreasing
   order, which enumerates each distinct final board once (same-cell placements keep both stacking
   orders); after each level the best `beam` partial turns by `evaluate` are kept;
3. for each surviving turn: take no card or any legal market card, then place cubes greedily while any
   habitat stands (cubes are free and final);
4. the value is `evaluate` of the position just before END; the best plans are returned, best first.

`evaluate` = the player's current score + potential (weights in `DEFAULT_WEIGHTS`, by index), except on the
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

The beam matters as much as the weights: GreedyAgent's default beam 24 is the reference baseline (kept so its
figures stay comparable); beam 800 (`WIDE_BEAM`) scores more and beats it, because a narrow beam drops turns whose
first token looks poor on its own (figures in benchmarks/STRENGTH.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import cards as C
from harmonies_env import stacks as ST
from harmonies_env import state as S
from harmonies_env.geometry import NEIGHBOUR_MASK, lowest_cell, popcount
from harmonies_env.rules import legal_actions, step, token_cells
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
from harmonies_env.stacks import STACK_AFTER

#: Potential weights (see the module docstring for each index). float64 (NUM_TERMS,)
DEFAULT_WEIGHTS = np.array([1.36, 3.89, 0.39, 0.46, 1.14, 2.78, 0.42, 1.03, 0.26, 0.17, -0.87, 0.92, 0.34, 0.10],
                           dtype=np.float64)
MAX_PLAN = 48  # micro-actions in one turn: 1 take + 3 tokens + 1 card + cubes (<= 25) + END
#: Beam of the planner that proposes whole-turn candidates to MCTSAgent. Much wider than GreedyAgent's 24; alone
#: (`greedy:800`) it beats beam 24 (figures in benchmarks/STRENGTH.md).
WIDE_BEAM = 800
_NC = C.NUM_CARDS + 1
_FAR = 99  # habitat distance of a pattern that can no longer be formed


#: How many potential terms `potential_terms` computes (the length of the weight vector).
NUM_TERMS = 14


def _need_codes() -> np.ndarray:
    """NEED_CODES[cls, k]: mask over stack codes that become habitat class cls with k more tokens (k = 0..3)."""
    out = np.zeros((9, 4), dtype=np.int64)
    for cls in range(9):
        targets = [ST.S_BROWN_RED, ST.S_GRAY_RED, ST.S_RED_RED] if C.CLASS_STACK[cls] < 0 else [int(C.CLASS_STACK[cls])]
        for code, stack in enumerate(ST.STACKS):
            need = min((len(ST.STACKS[t]) - len(stack) for t in targets if ST.STACKS[t][: len(stack)] == stack),
                       default=_FAR)
            if need <= 3:
                out[cls, need] |= 1 << code
    return out


#: NEED_CODES[habitat class, k] -> stack codes k tokens short of that class (k = 0..3). int64 (9, 4)
NEED_CODES = _need_codes()


#: NEED_K[stack code, habitat class] -> how many tokens that stack is short of the class (0..3), -1 if it cannot
#: become it (NEED_CODES by code, so `need_masks` visits only the codes a board shows). int64 (15, 9)
NEED_K = np.full((15, 9), -1, dtype=np.int64)
for _cls in range(9):
    for _k in range(4):
        for _code in range(15):
            if (NEED_CODES[_cls, _k] >> _code) & 1:
                NEED_K[_code, _cls] = _k
#: COLOUR_CODES[c] -> mask over stack codes whose top token has colour c (a building's neighbour colours).
COLOUR_CODES = np.array([sum(1 << k for k in range(1, 15) if ST.TOP_COLOUR[k] == c) for c in range(6)],
                        dtype=np.int64)


@njit(cache=True)
def need_masks(bb, cubes: int, out) -> None:
    """out[cls, k] = cells k tokens short of habitat class cls (cells under a cube only when k = 0).

    bb: int64 (15,) one board's bitboards; cubes: its cube mask; out: int64 (9, 4).
    """
    for cls in range(9):
        for k in range(4):
            out[cls, k] = 0
    for code in range(15):
        m = bb[code]
        if m == 0:
            continue
        for cls in range(9):
            k = NEED_K[code, cls]
            if k >= 0:
                out[cls, k] |= m
    free = ~cubes
    for cls in range(9):
        for k in range(1, 4):
            out[cls, k] &= free


@njit(cache=True)
def need_grids(side: int, bb, cubes: int, out) -> None:
    """`need_masks` laid on the habitat matcher's grid (`cards.habitat_cells_grid`): out[cls, k] = grid bits of the
    cells k tokens short of habitat class cls (under a cube only when k = 0), out int64 (9, 4)."""
    for cls in range(9):
        for k in range(4):
            out[cls, k] = 0
    for code in range(15):
        m = bb[code]
        if m == 0:
            continue
        g = C._to_grid(side, m)
        for cls in range(9):
            k = NEED_K[code, cls]
            if k >= 0:
                out[cls, k] |= g
    free = ~C._to_grid(side, cubes)
    for cls in range(9):
        for k in range(1, 4):
            out[cls, k] &= free


@njit(cache=True)
def habitat_near(side: int, cubes: int, card: int, grid_need) -> int:
    """min(3, `habitat_distance`): what the potential terms and the afterstate features read (1, 2, or 3 for "3 or
    more, or never"), found for every placement of a rotation at once on the matcher's grid instead of placement by
    placement. grid_need: int64 (9, 4) from `need_grids`.

    Why: `habitat_distance` was most of the planner's evaluation (~600 ns a held card). Per rotation, bit masks
    e0 / e1 / e2 hold the cube cells whose pattern cells so far are 0 / 1 / 2 tokens short in all, as the pattern's
    cells are added (a cell k tokens short shifts a position from e_t to e_t+k)."""
    free = ~C._to_grid(side, cubes)
    best = 3
    for r in range(C.GRID_ROT_START[side, card], C.GRID_ROT_START[side, card + 1]):
        e0 = C.GRID_ROT_VALID[side, r] & free
        e1 = 0
        e2 = 0
        for j in range(4):
            cls = C.GRID_ROT_CLASS[side, r, j]
            if cls < 0:
                break
            o = C.GRID_ROT_OFF[side, r, j]
            if o >= 0:
                a0, a1, a2 = grid_need[cls, 0] >> o, grid_need[cls, 1] >> o, grid_need[cls, 2] >> o
            else:
                a0, a1, a2 = grid_need[cls, 0] << -o, grid_need[cls, 1] << -o, grid_need[cls, 2] << -o
            e2 = (e2 & a0) | (e1 & a1) | (e0 & a2)
            e1 = (e1 & a0) | (e0 & a1)
            e0 = e0 & a0
            if (e0 | e1 | e2) == 0:
                break
        if e0:
            return 0
        if e1:
            best = 1
        elif e2 and best > 2:
            best = 2
    return best


@njit(cache=True)
def habitat_distance(side: int, cubes: int, card: int, need) -> int:
    """Fewest tokens still to place before a habitat of `card` stands with a free cube cell (0 = stands now).

    need: int64 (9, 4) from `need_masks`. Returns `_FAR` (99) when no placement can be formed any more.
    """
    best = _FAR
    for q in range(C.HABITAT_START[side, card], C.HABITAT_START[side, card + 1]):
        if (cubes >> C.HABITAT_CUBE[side, q]) & 1:
            continue
        cost = 0
        for j in range(4):
            cls = C.HABITAT_CLASS[side, q, j]
            if cls < 0:
                break
            m = C.HABITAT_MASK[side, q, j]
            if m & ~(need[cls, 0] | need[cls, 1] | need[cls, 2] | need[cls, 3]):
                cost = _FAR
                break
            cost += popcount(m & need[cls, 1]) + 2 * popcount(m & need[cls, 2]) + 3 * popcount(m & need[cls, 3])
            if cost >= best:
                break
        if cost < best:
            best = cost
            if best == 0:
                break
    return best


@njit(cache=True, inline="always")
def _colour_cells(bb, c: int) -> int:
    """Cells whose top token has colour c."""
    cells = 0
    codes = COLOUR_CODES[c]
    for k in range(1, 15):
        if (codes >> k) & 1:
            cells |= bb[k]
    return cells


#: Scratch of `_terms` (int64 (TERMS_SCRATCH,)): the need grids (9 x 4), the class grids (NUM_CLASSES), then per held
#: slot whether its card's habitat stands and its `habitat_near` (what `evaluate_child` reuses of a parent's).
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
    """The potential terms of player p as a tuple of floats (`evaluate` runs in inner loops: no allocation; the
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
    if card < C.FIRST_SPIRIT and s[S.CUBES_PLACED + _NC * p + card] >= C.CUBES_ON_CARD[card]:
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
    """Term 2: isolated mountains, each x its points (reads the mountain bitboards only)."""
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
def _card_gain(s, p: int, side: int, bb, card: int) -> float:
    """What p's held card `card` pays next: a Spirit its score on board bb, an animal card the points of its next cube;
    -1.0 for an animal card already complete (nothing left to gain). `_card_terms`' and `_card_terms_token`'s."""
    if card >= C.FIRST_SPIRIT:
        return float(spirit_score(side, bb, card))
    k = s[S.CUBES_PLACED + _NC * p + card]
    if k >= C.CUBES_ON_CARD[card]:
        return -1.0
    return float(C.CARD_POINTS[card, k] - (C.CARD_POINTS[card, k - 1] if k > 0 else 0))


@njit(cache=True)
def _tally_gain(d: int, spirit: bool, gain: float, t7: float, t8: float, t11: float, t12: float, t13: float):
    """A held card's gain added to the card terms by its habitat's distance d (0: it stands, term 7; a Spirit that
    does not stand, term 11; else term 8, and 12 / 13 at distance 1 / 2): (t7, t8, t11, t12, t13)."""
    if d == 0:
        t7 += gain
    elif spirit:
        t11 += gain
    else:
        t8 += gain
        if d == 1:
            t12 += gain
        elif d == 2:
            t13 += gain
    return t7, t8, t11, t12, t13


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
        gain = _card_gain(s, p, side, bb, card)
        if gain < 0.0:
            continue
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
            d = 0
        elif card >= C.FIRST_SPIRIT:
            d = -1  # (a Spirit's distance is not read)
        elif not fresh and was == 0 and changed_need != _ALL and (reads & changed_need) == 0:
            d = scratch[_SLOT_AT + 2 * h + 1]
        else:
            if not have_need:
                need_grids(side, bb, cubes, need)
                have_need = True
            d = habitat_near(side, cubes, card, need)
            scratch[_SLOT_AT + 2 * h + 1] = d
        t7, t8, t11, t12, t13 = _tally_gain(d, card >= C.FIRST_SPIRIT, gain, t7, t8, t11, t12, t13)
    return t7, t8, t10, t11, t12, t13


@njit(cache=True)
def potential_terms(s, p: int, t) -> None:
    """The unweighted potential terms of player p (see the module docstring, by index) into t: float64 (NUM_TERMS,).

    What `evaluate` weights; the learned agent's features (`agents.afterstate`) read them raw. Depends only on
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
    if not solo and s[S.TAKEN_SPACE] < 0:  # no space emptied yet: nothing to refill (checked first: evaluate is hot)
        return False
    pouch = 0
    for c in range(6):
        pouch += s[S.POUCH + c]
    return pouch < (3 * s[S.NUM_SPACES] if solo else 3)


@njit(cache=True)
def evaluate(s, p: int, w, sc) -> float:
    """Score of player p now plus the potential heuristic: total + w . potential_terms.

    The potential is left out when p has no turn left (`no_turn_left`): on a player's last turn only points count.
    w: float64 (NUM_TERMS,); sc: int64 (NUM_CATEGORIES,) scratch (left holding p's score by category).
    """
    return evaluate_with(s, p, w, sc, np.empty(TERMS_SCRATCH, dtype=np.int64))


@njit(cache=True)
def evaluate_with(s, p: int, w, sc, scratch) -> float:
    """`evaluate` with the potential's scratch passed in (int64 (TERMS_SCRATCH,)): the planners' inner loops."""
    return evaluate_board(s, p, s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], w, sc, scratch)


@njit(cache=True)
def evaluate_board(s, p: int, bb, w, sc, scratch) -> float:
    """`evaluate_with` of p with its board's bitboards bb (int64 (15,)) instead of s's: the beam values a token
    placement from its parent's state and the child's bitboards, without copying the state and stepping."""
    cp = S.CUBES_PLACED + _NC * p
    score_into(s[S.SIDE], bb, s[cp: cp + _NC], sc, s[S.RIVER_LOOPS])
    v = float(sc[NUM_CATEGORIES - 1])
    if no_turn_left_board(s, p, bb[0]):
        return v
    x = _terms_board(s, p, bb, scratch)
    for k in range(NUM_TERMS):
        v += w[k] * x[k]
    return v


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


@njit(cache=True, inline="always")
def _shift(m: int, o: int) -> int:
    """m shifted by o grid bits (left for o >= 0): a placement's cube cells to its pattern cell at offset o."""
    return m << o if o >= 0 else m >> -o


@njit(cache=True, inline="always")
def _rotation_levels(side: int, r: int, free: int, grid_need):
    """The cube cells (grid bits) where rotation r's placement is exactly 0, 1, 2 and 3 tokens short in all."""
    e0 = C.GRID_ROT_VALID[side, r] & free
    e1 = 0
    e2 = 0
    e3 = 0
    for j in range(4):
        cls = C.GRID_ROT_CLASS[side, r, j]
        if cls < 0:
            break
        o = C.GRID_ROT_OFF[side, r, j]
        a0 = _shift(grid_need[cls, 0], -o)
        a1 = _shift(grid_need[cls, 1], -o)
        a2 = _shift(grid_need[cls, 2], -o)
        a3 = _shift(grid_need[cls, 3], -o)
        e3 = (e3 & a0) | (e2 & a1) | (e1 & a2) | (e0 & a3)
        e2 = (e2 & a0) | (e1 & a1) | (e0 & a2)
        e1 = (e1 & a0) | (e0 & a1)
        e0 = e0 & a0
    return e0, e1, e2, e3


#: Most distinct rotations of a card's pattern (`near_witness` keeps each one's cost levels).
MAX_ROTATIONS = int(np.diff(C.GRID_ROT_START, axis=1).max())


@njit(cache=True)
def near_witness(side: int, cubes: int, card: int, grid_need, out, o: int, rot) -> None:
    """What a token placed on one cell can change of the card's `habitat_near`, into out[o: o + 11]: D = its
    habitat_near now; the grid cells that every placement D tokens short covers (its witnesses); per habitat class,
    the cells some witness reads as that class. `near_after_token` answers a child board from these. rot: int64
    (4 x MAX_ROTATIONS,) scratch.

    Why: a token changes one cell, so only placements over that cell change cost, each by that cell's change in
    tokens short (-1 at best): the answer is D - 1, D, or (only when every witness covers the cell and none keeps its
    cost) computed again."""
    free = ~C._to_grid(side, cubes)
    d = 3
    r0 = C.GRID_ROT_START[side, card]
    for r in range(r0, C.GRID_ROT_START[side, card + 1]):
        e0, e1, e2, e3 = _rotation_levels(side, r, free, grid_need)
        q = 4 * (r - r0)
        rot[q] = e0
        rot[q + 1] = e1
        rot[q + 2] = e2
        rot[q + 3] = e3
        if e0:
            d = 0
        elif e1 and d > 1:
            d = 1
        elif e2 and d > 2:
            d = 2
    out[o] = d
    crit = -1
    for cls in range(9):
        out[o + 2 + cls] = 0
    for r in range(r0, C.GRID_ROT_START[side, card + 1]):
        w = rot[4 * (r - r0) + d]
        if w == 0:
            continue
        for j in range(4):
            cls = C.GRID_ROT_CLASS[side, r, j]
            if cls < 0:
                break
            out[o + 2 + cls] |= _shift(w, C.GRID_ROT_OFF[side, r, j])
        while crit and w:
            pos = w & -w
            w &= w - 1
            cover = 0
            for j in range(4):
                if C.GRID_ROT_CLASS[side, r, j] < 0:
                    break
                cover |= _shift(pos, C.GRID_ROT_OFF[side, r, j])
            crit &= cover
    out[o + 1] = crit


@njit(cache=True, inline="always")
def near_after_token(card_classes: int, g: int, old: int, new: int, pc, o: int) -> int:
    """`habitat_near` of a card on the board of `near_witness`'s answer pc[o: o + 11] with one token placed on the
    cell of grid bit g (stack code old -> new), or -1 when it must be computed again. card_classes: the classes the
    card's pattern reads (CARD_CLASSES)."""
    d = pc[o]
    dec = False
    keep = False
    m = card_classes
    while m:
        cls = lowest_cell(m)
        m &= m - 1
        if pc[o + 2 + cls] & g:
            kn = NEED_K[new, cls]
            if kn >= 0:  # a witness reads g as cls: it was NEED_K[old, cls] short there
                ko = NEED_K[old, cls]
                if kn < ko:
                    dec = True
                elif kn == ko:
                    keep = True
    if dec and d >= 1:
        return d - 1
    if d == 3 or keep or (pc[o + 1] & g) == 0:
        return d
    return -1


@njit(cache=True)
def parent_cache(s, p: int, pc, witness: bool) -> None:
    """What `evaluate_child` (witness) or `evaluate_after` (not witness) reuse of p's board in s, into pc int64
    (PARENT_CACHE,): the score by category, terms 2, 3 and 5 and the need grids; then for `evaluate_child` each held
    card's `near_witness`, for `evaluate_after` the class grids and each held card's habitat answers."""
    side = s[S.SIDE]
    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
    cp = S.CUBES_PLACED + _NC * p
    score_into(side, bb, s[cp: cp + _NC], pc[_PC_SCORE: _PC_SCORE + NUM_CATEGORIES], s[S.RIVER_LOOPS])
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
    g = C._to_grid(side, 1 << i)
    need = scratch[:36].reshape((9, 4))
    built = False
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card < 0:
            continue
        t10 += 1.0
        gain = _card_gain(s, p, side, bb, card)
        if gain < 0.0:
            continue
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
        t7, t8, t11, t12, t13 = _tally_gain(d, card >= C.FIRST_SPIRIT, gain, t7, t8, t11, t12, t13)
    return t7, t8, t10, t11, t12, t13


@njit(cache=True)
def evaluate_child(s, p: int, bb, i: int, old: int, new: int, w, sc, scratch, pc) -> float:
    """`evaluate_board(s, p, bb, ...)` where bb is p's board in s with cell i's stack changed from code old to new (a
    token placed), computed from s's `parent_cache` pc: only the score categories and terms that read a changed
    bitboard are recomputed, and the grids change in one bit. Exact: every part is the same whole number."""
    side = s[S.SIDE]
    touched = (1 << old) | (1 << new)
    for k in range(NUM_CATEGORIES):
        sc[k] = pc[_PC_SCORE + k]
    cp = S.CUBES_PLACED + _NC * p
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
    sc[6] = spirit_points(side, bb, s[cp: cp + _NC])
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
def evaluate_after(s, p: int, w, sc, scratch, pc, parent) -> float:
    """`evaluate_with(s, p, ...)` where p's board in s is the board of `parent`, the state whose `parent_cache` pc
    holds, and only p's cards, cubes and the rest of s may differ (a card taken, cubes placed: the beam's final
    stage). The board's score categories and terms and the class grids are reused; when no cube was placed, so are
    the need grids and each card's habitat answers, and only a card taken is matched. Exact."""
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
    """`evaluate_after`'s parts: (whether p has no turn left, p's total as a float, the potential terms tuple; zeros
    when p has no turn left)."""
    side = s[S.SIDE]
    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
    cp = S.CUBES_PLACED + _NC * p
    for k in range(5):
        sc[k] = pc[_PC_SCORE + k]
    sc[5] = animal_points(s[cp: cp + _NC])
    sc[6] = spirit_points(side, bb, s[cp: cp + _NC])
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


@njit(cache=True, inline="always")
def copy_state(dst, src) -> None:
    """dst[:] = src by an explicit loop (numba's slice copy of a small array is ~4x slower)."""
    for j in range(src.shape[0]):
        dst[j] = src[j]


@njit(cache=True)
def place_cubes_greedily(s, plan, n: int) -> int:
    """Place cubes while any held card's habitat stands (lowest cell first); append them to plan[n:]."""
    p = s[S.CURRENT]
    grids = np.empty(C.NUM_CLASSES, dtype=np.int64)
    C.class_grids(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], grids)
    return place_cubes_on(s, plan, n, grids)


@njit(cache=True)
def place_cubes_on(s, plan, n: int, grids) -> int:
    """`place_cubes_greedily` with the mover's class grids (`cards.class_grids`, int64 (NUM_CLASSES,)) given: cubes
    do not change the board, so the matcher's grids hold for every cube."""
    p = s[S.CURRENT]
    side = s[S.SIDE]
    placed = True
    while placed:
        placed = False
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            if card < 0:
                continue
            m = C.habitat_cells_grid(side, grids, s[S.CUBES + p], card)
            if m:
                a = A.PLACE_CUBE + 25 * h + lowest_cell(m)
                if step(s, a) == 0:
                    plan[n] = a
                    n += 1
                    placed = True
                    break
    return n


@njit(cache=True)
def _spirit_plans(s, plans, lens, values) -> int:
    """First-turn Spirit choice: both options (as many as fit), the one whose rule pays more first."""
    p = s[S.CURRENT]
    v = np.zeros(2, dtype=np.float64)
    for j in range(2):
        card = s[S.SPIRIT_DEALT + 2 * p + j]
        v[j] = float(C.SPIRIT_POINTS[card, 0] + C.SPIRIT_POINTS[card, 1] + C.SPIRIT_POINTS[card, 2])
    first = 1 if v[1] > v[0] else 0
    out = min(2, plans.shape[0])
    for k in range(out):
        j = first if k == 0 else 1 - first
        plans[k, 0] = A.KEEP_SPIRIT + j
        lens[k] = 1
        values[k] = v[j]
    return out


@njit(cache=True)
def plan_turn(s0, w, beam: int, plans, lens, values) -> int:
    """Best turn plans for the player to move in s0 (not modified), best first.

    w: float64 (NUM_TERMS,) potential weights; beam: partial turns kept per token level.
    plans: int64 (K, MAX_PLAN) out, lens: int64 (K,) out, values: float64 (K,) out. Returns how many
    plans were written (<= K). Each plan ends with END_TURN (or is the Spirit choice, which does not end
    the turn: plan again afterwards).
    """
    p = s0[S.CURRENT]
    if s0[S.SPIRITS] and s0[S.SPIRIT_KEPT + p] < 0:
        return _spirit_plans(s0, plans, lens, values)
    fplan, flen, fval, nf = _plan_pool(s0, w, beam, -1)
    order = np.argsort(-fval[:nf], kind="mergesort")
    out = min(plans.shape[0], nf)
    for j in range(out):
        plans[j] = fplan[order[j]]
        lens[j] = flen[order[j]]
        values[j] = fval[order[j]]
    return out


#: Slots of the planner's evaluation memo (a power of 2; a turn's beams evaluate a few thousand boards).
MEMO_SLOTS = 1 << 14


@njit(cache=True)
def new_memo():
    """An empty evaluation memo for `_plan_pool_memo`: keys int64 (MEMO_SLOTS, 2) (a board's 25 stack codes, 4 bits
    each), values float64 (MEMO_SLOTS,), used bool (MEMO_SLOTS,), and how many are used (int64 (1,); the memo stops
    taking boards at half full, so a wide beam still finds free slots). Only for one turn of one position."""
    return (np.empty((MEMO_SLOTS, 2), dtype=np.int64), np.empty(MEMO_SLOTS, dtype=np.float64),
            np.zeros(MEMO_SLOTS, dtype=np.bool_), np.zeros(1, dtype=np.int64))


@njit(cache=True)
def new_final_memo(entries: int):
    """An empty memo of the beam's final stage for up to `entries` boards (0: none), shared by a turn's beams
    (`plan_candidates`): slot keys int64 (S, 2) (the board's two `board_key` words, the second with the takeable
    market slots above bit 40), the entry at each slot int64 (S,) (-1: free), and per entry its turns' rows: how
    many int64 (E,), and per row (6 a board: no card, then each market card) its value float64 (6E,), its actions
    after the tokens int64 (6E, MAX_PLAN) and their count int64 (6E,); then how many entries are used (int64 (1,))."""
    slots = 1
    while slots < 2 * entries:
        slots *= 2
    return (np.empty((slots, 2), dtype=np.int64), np.full(slots, -1, dtype=np.int64),
            np.zeros(max(entries, 1), dtype=np.int64), np.empty(6 * max(entries, 1), dtype=np.float64),
            np.empty((6 * max(entries, 1), MAX_PLAN), dtype=np.int64), np.zeros(6 * max(entries, 1), dtype=np.int64),
            np.zeros(1, dtype=np.int64))


@njit(cache=True, inline="always")
def board_key(s, stack0: int):
    """A board's 25 stack codes (4 bits each) as two words: cells 0-15, cells 16-24."""
    k0 = 0
    for i in range(16):
        k0 |= s[stack0 + i] << (4 * i)
    k1 = 0
    for i in range(16, S.MAX_CELLS):
        k1 |= s[stack0 + i] << (4 * (i - 16))
    return k0, k1


@njit(cache=True, inline="always")
def memo_find(keys, used, k0: int, k1: int) -> int:
    """The memo slot of key (k0, k1): where it is stored, or the free slot where it goes (linear probing)."""
    mask = keys.shape[0] - 1
    h = ((k0 * -7046029254386353131) ^ (k1 * -4658895280553007687)) & 0x7FFFFFFFFFFFFFFF
    slot = (h >> 20) & mask
    while used[slot] and (keys[slot, 0] != k0 or keys[slot, 1] != k1):
        slot = (slot + 1) & mask
    return slot


@njit(cache=True, inline="always")
def memo_put(keys, vals, used, count, slot: int, k0: int, k1: int, v: float) -> None:
    """Store v for key (k0, k1) in its free slot (from `memo_find`), unless the memo is half full."""
    if 2 * count[0] < keys.shape[0]:
        keys[slot, 0] = k0
        keys[slot, 1] = k1
        vals[slot] = v
        used[slot] = True
        count[0] += 1


@njit(cache=True)
def best_first(vals, n: int, k: int, order, topv) -> None:
    """order[:k] = the indices of the k largest of vals[:n], largest first, equal values in index order: the first k
    of `np.argsort(-vals[:n], kind="mergesort")` without sorting all n (the beam keeps 24 of hundreds). topv float64
    (>= k,) scratch."""
    size = 0
    for j in range(n):
        v = vals[j]
        if size == k:
            if not v > topv[k - 1]:
                continue
            pos = k - 1
        else:
            pos = size
            size += 1
        while pos > 0 and topv[pos - 1] < v:
            topv[pos] = topv[pos - 1]
            order[pos] = order[pos - 1]
            pos -= 1
        topv[pos] = v
        order[pos] = j


@njit(cache=True)
def _plan_pool(s0, w, beam: int, only_space: int):
    """Every whole-turn plan the beam keeps for the mover of s0 (not modified), unsorted: (plans int64 (F, MAX_PLAN),
    lens int64 (F,), values float64 (F,), count). only_space >= 0 takes that central space only (-1: any)."""
    return _plan_pool_memo(s0, w, beam, only_space, new_memo(), new_final_memo(0))


@njit(cache=True)
def _plan_pool_memo(s0, w, beam: int, only_space: int, memo, final):
    """`_plan_pool` with a memo of token-level evaluations (`new_memo`) that beams of the same turn share: while
    tokens are placed, `evaluate` of the mover depends only on its board (its cards, cubes, the pouch and the end
    trigger do not change), so a board reached again (another central space's tokens, another order) is looked up
    by its 25 stack codes instead of being copied, stepped and evaluated. `final` (`new_final_memo`) does the same
    for the final stage: a board another space's beam reached gets the turns (card, cubes, value) found for it there,
    which depend only on the board, the held cards and cubes, the market and the pouch, the same for every space."""
    p = s0[S.CURRENT]
    mkeys, mvals, mused, mcount = memo
    fkeys, fat, fn, fv, fsuf, flens, fcount = final
    fslots = fkeys.shape[0]
    fcap = fn.shape[0] if fslots > 1 else 0
    stack0 = S.STACK + S.MAX_CELLS * p
    bb0 = S.BITBOARD + 15 * p
    bbc = np.empty(15, dtype=np.int64)
    buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    scratch = np.empty(TERMS_SCRATCH, dtype=np.int64)
    pc = np.empty(PARENT_CACHE, dtype=np.int64)
    nb = 1
    cap = max(beam, 5)
    states = np.empty((cap, S.STATE_SIZE), dtype=np.int64)  # scratch: every row read was written
    acts = np.zeros((cap, MAX_PLAN), dtype=np.int64)
    alen = np.zeros(cap, dtype=np.int64)
    last = np.zeros(cap, dtype=np.int64)
    states[0] = s0
    # level 0: which central space
    if not s0[S.TOOK_TOKENS]:
        n = legal_actions(s0, buf)
        nb = 0
        for k in range(n):
            a = buf[k]
            if a < A.PLACE_TOKEN and (only_space < 0 or a - A.TAKE_TOKENS == only_space):
                copy_state(states[nb], s0)
                step(states[nb], a)
                acts[nb, 0] = a
                alen[nb] = 1
                nb += 1
    # token levels
    maxc = cap * 6 * 25 + cap
    cpar = np.empty(maxc, dtype=np.int64)
    cact = np.empty(maxc, dtype=np.int64)
    cval = np.empty(maxc, dtype=np.float64)
    tmp = np.empty(S.STATE_SIZE, dtype=np.int64)
    new_states = np.empty((cap, S.STATE_SIZE), dtype=np.int64)
    new_acts = np.zeros((cap, MAX_PLAN), dtype=np.int64)
    new_len = np.zeros(cap, dtype=np.int64)
    new_last = np.zeros(cap, dtype=np.int64)
    order = np.empty(cap, dtype=np.int64)
    topv = np.empty(cap, dtype=np.float64)
    for _level in range(6):
        nc = 0
        any_placed = False
        for b in range(nb):
            sb = states[b]
            placeable = False
            cached = False
            k0, k1 = board_key(sb, stack0)
            for c in range(6):
                if sb[S.HAND + c] <= 0:
                    continue
                full = token_cells(sb, p, c)
                if full:
                    placeable = True
                m = full & ~((1 << last[b]) - 1)
                if m == 0:  # only cells before the last one remain: order no longer matters, allow them
                    m = full
                while m:
                    i = lowest_cell(m)
                    m &= m - 1
                    a = A.PLACE_TOKEN + 25 * c + i
                    new = STACK_AFTER[sb[stack0 + i], c]
                    if i < 16:
                        c0, c1 = (k0 & ~(15 << (4 * i))) | (new << (4 * i)), k1
                    else:
                        c0, c1 = k0, (k1 & ~(15 << (4 * (i - 16)))) | (new << (4 * (i - 16)))
                    slot = memo_find(mkeys, mused, c0, c1)
                    if mused[slot]:
                        v = mvals[slot]
                    else:  # the child's bitboards (as `rules.step` sets them) on the parent's state
                        for q in range(15):
                            bbc[q] = sb[bb0 + q]
                        bit = 1 << i
                        bbc[sb[stack0 + i]] &= ~bit
                        bbc[new] |= bit
                        if not cached:
                            parent_cache(sb, p, pc, True)
                            cached = True
                        v = evaluate_child(sb, p, bbc, i, sb[stack0 + i], new, w, sc, scratch, pc)
                        memo_put(mkeys, mvals, mused, mcount, slot, c0, c1, v)
                    cpar[nc] = b
                    cact[nc] = a
                    cval[nc] = v
                    nc += 1
                    any_placed = True
            if not placeable:  # done with tokens: carries forward unchanged
                cpar[nc] = b
                cact[nc] = -1
                slot = memo_find(mkeys, mused, k0, k1)
                if mused[slot]:
                    cval[nc] = mvals[slot]
                else:
                    v = evaluate_with(sb, p, w, sc, scratch)
                    memo_put(mkeys, mvals, mused, mcount, slot, k0, k1, v)
                    cval[nc] = v
                nc += 1
        if not any_placed:
            break
        nn = min(beam, nc)
        best_first(cval, nc, nn, order, topv)
        for j in range(nn):
            k = order[j]
            b = cpar[k]
            copy_state(new_states[j], states[b])
            for q in range(MAX_PLAN):
                new_acts[j, q] = acts[b, q]
            new_len[j] = alen[b]
            new_last[j] = last[b]
            a = cact[k]
            if a >= 0:
                step(new_states[j], a)
                new_acts[j, new_len[j]] = a
                new_len[j] += 1
                new_last[j] = (a - A.PLACE_TOKEN) % 25
        states, new_states = new_states, states
        acts, new_acts = new_acts, acts
        alen, new_len = new_len, alen
        last, new_last = new_last, last
        nb = nn
    # final stage: card (or none), cubes, value before END
    nf = 0
    fval = np.zeros(nb * 6, dtype=np.float64)
    fplan = np.zeros((nb * 6, MAX_PLAN), dtype=np.int64)
    flen = np.zeros(nb * 6, dtype=np.int64)
    can_take = 0  # market slots whose card step lets the mover take: the same for every turn (tokens change none)
    if nb > 0:
        for m in range(s0[S.NUM_MARKET]):
            if states[0][S.MARKET + m] >= 0:
                copy_state(tmp, states[0])
                if step(tmp, A.TAKE_CARD + m) == 0:
                    can_take |= 1 << m
    side = s0[S.SIDE]
    for b in range(nb):
        sb = states[b]
        fslot = -1
        if fcap > 0:
            hand = 0
            for c in range(6):
                hand += sb[S.HAND + c]
            if hand == 0:  # (tokens left in hand would change what a card step allows)
                k0, k1 = board_key(sb, stack0)
                k1 |= can_take << 40
                h = ((k0 * -7046029254386353131) ^ (k1 * -4658895280553007687)) & 0x7FFFFFFFFFFFFFFF
                fslot = (h >> 20) & (fslots - 1)
                while fat[fslot] >= 0 and (fkeys[fslot, 0] != k0 or fkeys[fslot, 1] != k1):
                    fslot = (fslot + 1) & (fslots - 1)
                e = fat[fslot]
                if e >= 0:  # this board's turns, found by another space's beam
                    for r in range(6 * e, 6 * e + fn[e]):
                        for q in range(alen[b]):
                            fplan[nf, q] = acts[b, q]
                        ln = alen[b]
                        for q in range(flens[r]):
                            fplan[nf, ln + q] = fsuf[r, q]
                        flen[nf] = ln + flens[r]
                        fval[nf] = fv[r]
                        nf += 1
                    continue
        nf0 = nf
        parent_cache(sb, p, pc, False)
        standing = False  # a held card's habitat stands: cubes follow (copy, step, evaluate_after)
        for h in range(S.MAX_SLOTS):
            card = sb[S.SLOT + S.MAX_SLOTS * p + h]
            if card >= 0 and (pc[_SLOT_AT + 2 * h] != 0 or (card < C.FIRST_SPIRIT
                                                            and sb[S.CUBES_PLACED + _NC * p + card]
                                                            >= C.CUBES_ON_CARD[card])):
                standing = True
        parts = after_parts(sb, p, sc, scratch, pc, sb)
        for m in range(-1, s0[S.NUM_MARKET]):  # no card, then each market card that can be taken
            if m >= 0 and not (can_take >> m) & 1:
                continue
            for q in range(alen[b]):
                fplan[nf, q] = acts[b, q]
            ln = alen[b]
            if m >= 0:
                fplan[nf, ln] = A.TAKE_CARD + m
                ln += 1
            fast = not standing
            if fast and m >= 0:
                card = sb[S.MARKET + m]
                fast = not C.habitat_stands_grid(side, pc[36:_SLOT_AT], sb[S.CUBES + p], card)
            if fast:  # no cube to place: valued from this turn's parts
                fval[nf] = weigh(parts if m < 0 else taken_parts(sb, p, sb[S.MARKET + m], pc, parts), w)
            else:
                copy_state(tmp, sb)
                if m >= 0:
                    step(tmp, A.TAKE_CARD + m)
                ln = place_cubes_after(tmp, fplan[nf], ln, pc, sb)
                fval[nf] = evaluate_after(tmp, p, w, sc, scratch, pc, sb)
            fplan[nf, ln] = A.END_TURN
            flen[nf] = ln + 1
            nf += 1
        if fslot >= 0 and fcount[0] < fcap:  # remember this board's turns for the other spaces' beams
            e = fcount[0]
            fcount[0] += 1
            fat[fslot] = e
            fkeys[fslot, 0], fkeys[fslot, 1] = board_key(sb, stack0)
            fkeys[fslot, 1] |= can_take << 40
            fn[e] = nf - nf0
            for r in range(nf0, nf):
                j = 6 * e + r - nf0
                fv[j] = fval[r]
                flens[j] = flen[r] - alen[b]
                for q in range(flens[j]):
                    fsuf[j, q] = fplan[r, alen[b] + q]
    return fplan, flen, fval, nf


@njit(cache=True)
def plan_group(plan, n: int) -> int:
    """What kind of turn a plan is, by its strategic choices: 6 x (central space taken, 0-4; 5 when it was taken
    before the plan) + (market slot of the card taken, 0-4; 5 = none). int in [0, 36)."""
    space = 5
    card = 5
    for j in range(n):
        a = plan[j]
        if a < A.PLACE_TOKEN:
            space = a - A.TAKE_TOKENS
        elif a >= A.TAKE_CARD and a < A.PLACE_CUBE:
            card = a - A.TAKE_CARD
    return 6 * space + card


@njit(cache=True)
def plan_candidates(s0, w, beam: int, plans, lens, values) -> int:
    """Candidate turn plans that cover the turn's strategic choices: the best plan (by `evaluate`) of every
    (central space, card taken or none) pair the beam finds, then the best remaining plans, best first.

    Why: the plain beam's best plans mostly share one central space and one card choice (measured: 1.9 spaces and
    2 card choices among the best 32 of beam 800), so a value network ranking them decides where tokens go but
    hardly which tokens or which card. Here each central space gets its own beam (`beam` partial turns per token
    level, per space), so every space's best turns survive to the end. plans int64 (K, MAX_PLAN), lens (K,),
    values (K,) out, as `plan_turn`'s, in heuristic order within each of the two parts; returns how many.
    """
    K = plans.shape[0]
    p = s0[S.CURRENT]
    if s0[S.SPIRITS] and s0[S.SPIRIT_KEPT + p] < 0:
        return _spirit_plans(s0, plans, lens, values)
    spaces = np.full(S.MAX_SPACES, -1, dtype=np.int64)  # -1 alone: the tokens are taken already, plan the rest
    nsp = 1
    if not s0[S.TOOK_TOKENS]:
        nsp = 0
        for sp in range(s0[S.NUM_SPACES]):
            if s0[S.CENTRAL + 3 * sp] >= 0:
                spaces[nsp] = sp
                nsp += 1
    total = 0
    pools = []
    memo = new_memo()  # every space's beam places tokens on the same board: one memo for all
    final = new_final_memo(min(nsp * max(beam, 5), 1024) if nsp > 1 else 0)
    for j in range(nsp):
        pool = _plan_pool_memo(s0, w, beam, spaces[j], memo, final)
        pools.append(pool)
        total += pool[3]
    allp = np.zeros((total, MAX_PLAN), dtype=np.int64)
    alll = np.zeros(total, dtype=np.int64)
    allv = np.zeros(total, dtype=np.float64)
    o = 0
    for pool in pools:
        nf = pool[3]
        allp[o: o + nf] = pool[0][:nf]
        alll[o: o + nf] = pool[1][:nf]
        allv[o: o + nf] = pool[2][:nf]
        o += nf
    order = np.argsort(-allv, kind="mergesort")
    taken = np.zeros(total, dtype=np.bool_)
    seen = np.zeros(36, dtype=np.bool_)
    out = 0
    for j in range(total):  # the best plan of each group, best groups first
        k = order[j]
        g = plan_group(allp[k], alll[k])
        if not seen[g] and out < K:
            seen[g] = True
            taken[k] = True
            plans[out] = allp[k]
            lens[out] = alll[k]
            values[out] = allv[k]
            out += 1
    for j in range(total):  # then the best of the rest
        if out >= K:
            break
        k = order[j]
        if not taken[k]:
            plans[out] = allp[k]
            lens[out] = alll[k]
            values[out] = allv[k]
            out += 1
    return out



@njit(cache=True)
def place_cubes_after(s, plan, n: int, pc, parent) -> int:
    """`place_cubes_on` in the beam's final stage: s is `parent` (whose `parent_cache` pc holds) with a card taken or
    none, so until a cube is placed, a card the parent held whose habitat did not stand there still does not (pc's
    answer) and is not matched again. The same cubes as `place_cubes_on`, in the same order."""
    p = s[S.CURRENT]
    side = s[S.SIDE]
    grids = pc[36:_SLOT_AT]
    known = 0  # slots whose habitat is known not to stand
    if pc[_PC_T2 + 2] and s[S.CUBES + p] == parent[S.CUBES + p]:
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            if (card >= 0 and card == parent[S.SLOT + S.MAX_SLOTS * p + h] and pc[_SLOT_AT + 2 * h] == 0
                    and (card >= C.FIRST_SPIRIT or s[S.CUBES_PLACED + _NC * p + card] < C.CUBES_ON_CARD[card])):
                known |= 1 << h
    placed = True
    while placed:
        placed = False
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            if card < 0 or (known >> h) & 1:
                continue
            m = C.habitat_cells_grid(side, grids, s[S.CUBES + p], card)
            if m:
                a = A.PLACE_CUBE + 25 * h + lowest_cell(m)
                if step(s, a) == 0:
                    plan[n] = a
                    n += 1
                    placed = True
                    known = 0
                    break
    return n


#: Widest beam accepted (the planner allocates per beam entry; the wide planner uses 800).
MAX_BEAM = 100_000


def planner_settings(beam: int, weights: Any = None) -> tuple[int, np.ndarray]:
    """Validated (beam, weights) for `plan_turn`: beam >= 1; weights float64 (NUM_TERMS,), default `DEFAULT_WEIGHTS`."""
    if isinstance(beam, (bool, np.bool_)) or not isinstance(beam, (int, np.integer)) or not 1 <= beam <= MAX_BEAM:
        raise ValueError(f"beam must be an integer 1..{MAX_BEAM}, got {beam!r}")
    w = np.array(DEFAULT_WEIGHTS if weights is None else weights, dtype=np.float64)
    if w.shape != DEFAULT_WEIGHTS.shape:
        raise ValueError(f"weights must have shape {DEFAULT_WEIGHTS.shape}, got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite numbers")
    return int(beam), w


@njit(cache=True, nogil=True)
def greedy_plans(lo: int, hi: int, states, weights, beam: int, diverse: bool, plans, lens) -> None:
    """The greedy planner's turn for the player to move in rows lo..hi-1 of states (int64 (M, STATE_SIZE), read
    only): plans int64 (M, MAX_PLAN), lens int64 (M,) (0 where the position has no legal action, which a live game
    never has). weights float64 (NUM_TERMS,), beam: as `GreedyAgent(beam=...)`; diverse: `plan_candidates`' first
    plan (a beam per central space) instead of `plan_turn`'s. Releases the GIL: `run_rows` splits rows over threads.
    """
    values = np.zeros(1, dtype=np.float64)
    for j in range(lo, hi):
        if diverse:
            n = plan_candidates(states[j], weights, beam, plans[j:j + 1], lens[j:j + 1], values)
        else:
            n = plan_turn(states[j], weights, beam, plans[j:j + 1], lens[j:j + 1], values)
        if n == 0:
            lens[j] = 0
