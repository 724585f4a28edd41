"""The greedy planner's need grids and habitat distances: where each card's pattern could still stand and how many
tokens it lacks (`habitat_distance`, `habitat_near` on the need grids), and the near witnesses that keep a distance
from one board to its child (`near_witness`, `near_after_token`). Pure functions over arrays; the terms that read
them are `agents.greedy.terms`."""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import cards as C
from harmonies_env import stacks as ST
from harmonies_env.geometry import lowest_cell, popcount

_FAR = 99  # habitat distance of a pattern that can no longer be formed


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
        g = C.to_grid(side, m)
        for cls in range(9):
            k = NEED_K[code, cls]
            if k >= 0:
                out[cls, k] |= g
    free = ~C.to_grid(side, cubes)
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
    free = ~C.to_grid(side, cubes)
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


@njit(cache=True, inline="always")
def _shift(m: int, o: int) -> int:
    """m shifted by o grid bits (left for o >= 0): a placement's cube cells to its pattern cell at offset o."""
    return m << o if o >= 0 else m >> -o


@njit(cache=True, inline="always")
def rotation_levels(side: int, r: int, free: int, grid_need):
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
    free = ~C.to_grid(side, cubes)
    d = 3
    r0 = C.GRID_ROT_START[side, card]
    for r in range(r0, C.GRID_ROT_START[side, card + 1]):
        e0, e1, e2, e3 = rotation_levels(side, r, free, grid_need)
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
