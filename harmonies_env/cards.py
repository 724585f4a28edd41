"""Cards and habitats: card tables, and every habitat precomputed over 6 rotations x all translations.

A habitat placement is stored as up to 4 (class, mask) requirements plus the cube cell, so matching it
against a board is a handful of AND operations on the board's bitboards (one mask per stack code).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .data import CARDS, LABELS, NUM_ANIMAL_CARDS, SIDES, SPIRIT_CARDS, SPIRIT_OF
from .geometry import NUM_CELLS, cell_index, cell_qr
from .stacks import (
    S_BLUE,
    S_BROWN_RED,
    S_GRAY_RED,
    S_MOUNTAIN1,
    S_MOUNTAIN2,
    S_MOUNTAIN3,
    S_RED_RED,
    S_TREE1,
    S_TREE2,
    S_TREE3,
    S_YELLOW,
)

NUM_CARDS = 42  # ids 1..42; index 0 unused
FIRST_SPIRIT = NUM_ANIMAL_CARDS + 1
#: Habitat classes (LABELS order) -> stack code they need; building (8) is any of 12, 13, 14.
CLASS_STACK = np.array([S_BLUE, S_YELLOW, S_TREE1, S_TREE2, S_TREE3,
                        S_MOUNTAIN1, S_MOUNTAIN2, S_MOUNTAIN3, -1], dtype=np.int64)
BUILDING_CLASS = 8

#: CUBES_ON_CARD[card] -> cube spaces (spirits: 1). int64 (43,)
CUBES_ON_CARD = np.zeros(NUM_CARDS + 1, dtype=np.int64)
#: CARD_POINTS[card, k-1] -> points once k cubes have left the card (0 padding). int64 (43, 5)
CARD_POINTS = np.zeros((NUM_CARDS + 1, 5), dtype=np.int64)
#: SPIRIT_KIND[card] -> 0 not a spirit, 1 groups, 2 count. int64 (43,)
SPIRIT_KIND = np.zeros(NUM_CARDS + 1, dtype=np.int64)
#: SPIRIT_TARGET[card] -> index in SPIRIT_OF (blue, yellow, tree, mountain, building). int64 (43,)
SPIRIT_TARGET = np.full(NUM_CARDS + 1, -1, dtype=np.int64)
#: SPIRIT_POINTS[card] -> points by group size (1, 2, 3+) or by height (1, 2, 3). int64 (43, 3)
SPIRIT_POINTS = np.zeros((NUM_CARDS + 1, 3), dtype=np.int64)
#: SPIRIT_SUN_BONUS[card] -> solo suns for playing with that Spirit (groups 1, count 0). int64 (43,)
SPIRIT_SUN_BONUS = np.zeros(NUM_CARDS + 1, dtype=np.int64)

for _id, _c in CARDS.items():
    if _id < FIRST_SPIRIT:
        CUBES_ON_CARD[_id] = len(_c["points"])
        CARD_POINTS[_id, :len(_c["points"])] = _c["points"]
    else:
        CUBES_ON_CARD[_id] = 1
        _sc = _c["scoring"]
        SPIRIT_KIND[_id] = 1 if _sc["kind"] == "groups" else 2
        SPIRIT_TARGET[_id] = SPIRIT_OF.index(_sc["of"])
        SPIRIT_POINTS[_id] = _sc["by_group_size"] if _sc["kind"] == "groups" else _sc["by_height"]
        SPIRIT_SUN_BONUS[_id] = 1 if _sc["kind"] == "groups" else 0


def rotate(q: int, r: int, k: int) -> tuple[int, int]:
    """Rotate an axial offset by k x 60 degrees clockwise: (q, r) -> (-r, q + r)."""
    for _ in range(k % 6):
        q, r = -r, q + r
    return q, r


def habitat_placements(side: str, card_id: int) -> list[tuple[tuple[tuple[int, int], ...], int]]:
    """Every distinct placement of a card's pattern on a board side.

    Returns a list of (((cell, class), ...) sorted, cube_cell). Plain Python: used to build the tables
    and by tests as a readable statement of what the tables must contain.
    """
    card = CARDS[card_id]
    out = set()
    cube_q, cube_r = card["cube"]
    for k in range(6):
        cells = [(rotate(q, r, k), LABELS.index(lab)) for q, r, lab in card["pattern"]]
        cube = rotate(cube_q, cube_r, k)
        for anchor in range(NUM_CELLS[SIDES.index(side)]):
            aq, ar = cell_qr(side, anchor)
            try:
                placed = tuple(sorted((cell_index(side, aq + q, ar + r), cls) for (q, r), cls in cells))
                cube_cell = cell_index(side, aq + cube[0], ar + cube[1])
            except ValueError:
                continue
            out.add((placed, cube_cell))
    return sorted(out)


def _build_tables():
    per_side = [[habitat_placements(s, cid) for cid in range(1, NUM_CARDS + 1)] for s in SIDES]
    most = max(sum(len(p) for p in side) for side in per_side)
    start = np.zeros((2, NUM_CARDS + 2), dtype=np.int64)
    req_class = np.full((2, most, 4), -1, dtype=np.int64)
    req_mask = np.zeros((2, most, 4), dtype=np.int64)
    cube = np.zeros((2, most), dtype=np.int64)
    for s, side in enumerate(per_side):
        n = 0
        for cid in range(1, NUM_CARDS + 1):
            start[s, cid] = n
            for placed, cube_cell in side[cid - 1]:
                masks: dict[int, int] = {}
                for cell, cls in placed:
                    masks[cls] = masks.get(cls, 0) | (1 << cell)
                for j, (cls, m) in enumerate(sorted(masks.items())):
                    req_class[s, n, j] = cls
                    req_mask[s, n, j] = m
                cube[s, n] = cube_cell
                n += 1
        start[s, NUM_CARDS + 1] = n
    return start, req_class, req_mask, cube


#: HABITAT_START[side, card] .. HABITAT_START[side, card + 1] -> that card's placements. int64 (2, 44)
#: HABITAT_CLASS / HABITAT_MASK[side, p, j] -> j-th requirement: habitat class (-1 unused) and its cells.
#: HABITAT_CUBE[side, p] -> the cell that receives the cube. int64 (2, P)
HABITAT_START, HABITAT_CLASS, HABITAT_MASK, HABITAT_CUBE = _build_tables()


@njit(cache=True, inline="always")
def class_mask(bb, cls: int) -> int:
    """Cells of habitat class `cls` on a board given its bitboards bb (int64 (15,), one per stack code)."""
    if cls == BUILDING_CLASS:
        return bb[S_BROWN_RED] | bb[S_GRAY_RED] | bb[S_RED_RED]
    return bb[CLASS_STACK[cls]]


@njit(cache=True)
def habitat_cells(side: int, bb, cubes: int, card: int) -> int:
    """Mask of cells that can take a cube from `card` now: a placement stands and its cube cell is free."""
    out = 0
    for p in range(HABITAT_START[side, card], HABITAT_START[side, card + 1]):
        c = HABITAT_CUBE[side, p]
        if (cubes >> c) & 1 or (out >> c) & 1:
            continue
        ok = True
        for j in range(4):
            cls = HABITAT_CLASS[side, p, j]
            if cls < 0:
                break
            m = HABITAT_MASK[side, p, j]
            if class_mask(bb, cls) & m != m:
                ok = False
                break
        if ok:
            out |= 1 << c
    return out


def card_name(card_id: int) -> str:
    """The card's name, e.g. 'Fennec Fox' or 'Lion Spirit'."""
    c = CARDS[card_id]
    return c["name"] + (" Spirit" if card_id >= FIRST_SPIRIT else "")


SPIRIT_IDS = tuple(c["id"] for c in SPIRIT_CARDS)
