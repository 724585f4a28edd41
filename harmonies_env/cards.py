"""Cards and habitats: card tables, every habitat precomputed, and the engine's habitat matcher.

Two forms of the same habitats: the placement tables (`HABITAT_*`: every placement over 6 rotations x all
translations, as up to 4 (class, mask) requirements plus the cube cell; the greedy agent's habitat distance reads
them) and the grid tables (`GRID_ROT_*`: each distinct rotation once, matched at every position at once by bit
shifts). `habitat_cells` / `habitat_cells_grid` match on the grid: the one habitat matcher of the rules and agents.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import stacks as ST
from .data import BOARD_CELLS, CARDS, LABELS, NUM_ANIMAL_CARDS, SIDES, SPIRIT_CARDS, SPIRIT_OF
from .geometry import NUM_CELLS, cell_index, cell_qr

NUM_CARDS = 42  # ids 1..42; index 0 unused
FIRST_SPIRIT = NUM_ANIMAL_CARDS + 1
#: Habitat classes (LABELS order) -> stack code they need; building (8) is any of 12, 13, 14.
CLASS_STACK = np.array([ST.S_BLUE, ST.S_YELLOW, ST.S_TREE1, ST.S_TREE2, ST.S_TREE3,
                        ST.S_MOUNTAIN1, ST.S_MOUNTAIN2, ST.S_MOUNTAIN3, -1], dtype=np.int64)
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


@njit(cache=True, forceinline=True)
def cubes_of(held, base: int, seat: int, card: int) -> int:
    """Cubes `seat` moved from `card` to its board, from a held-cards table at held[base:] (the state's `card_held`:
    holder seat * 8 + cubes, -1 = not held; each card has one holder, so one entry per card serves every seat);
    -1 when `seat` does not hold the card."""
    v = held[base + card]
    return v & 7 if v >= 0 and (v >> 3) == seat else -1


@njit(cache=True, inline="always")
def class_mask(bb, cls: int) -> int:
    """Cells of habitat class `cls` on a board given its bitboards bb (int64 (15,), one per stack code)."""
    if cls == BUILDING_CLASS:
        return bb[ST.S_BROWN_RED] | bb[ST.S_GRAY_RED] | bb[ST.S_RED_RED]
    return bb[CLASS_STACK[cls]]


# ---------------------------------------------------------------------------------------------------------
# The habitat matcher (the engine's only one: cube legality in `rules.step`, `rules.legal_actions`,
# `rules.write_mask`, and the agents).
#
# Trying a card's ~70-100 placements one by one (the tables above; tests/habitat_reference.py keeps that kernel as
# a test reference) made matching ~90% of `legal_actions`. Here the board is laid on a padded grid where
# translating a pattern is a bit shift (grid bit = q * 8 + r + 3, within 56 bits for both sides), so ONE rotation
# of a card is matched at every position at once: the set of cube cells where the pattern stands is an AND of the
# class masks shifted by each pattern cell's offset from the cube cell, restricted to the cube positions where the
# whole pattern lies on the board.
# ---------------------------------------------------------------------------------------------------------

GRID_W = 8  # grid bits per column of the board
NUM_CLASSES = len(LABELS)  # 9 habitat classes (BUILDING_CLASS = any building)


def _grid_tables():
    rmin = min(r for s in SIDES for _, r in BOARD_CELLS[s])
    assert max(r for s in SIDES for _, r in BOARD_CELLS[s]) - rmin < GRID_W
    assert (max(q for s in SIDES for q, _ in BOARD_CELLS[s]) + 1) * GRID_W <= 62
    cell2grid = np.zeros((2, 4, 256), dtype=np.int64)
    grid2cell = np.zeros((2, 8, 256), dtype=np.int64)
    rots: list[list[list[tuple[int, list[tuple[int, int]]]]]] = [[], []]
    for si, side in enumerate(SIDES):
        cells = BOARD_CELLS[side]
        index = {qr: i for i, qr in enumerate(cells)}
        gbit = [q * GRID_W + r - rmin for q, r in cells]
        for byte in range(4):
            for v in range(256):
                for b in range(8):
                    if (v >> b) & 1 and 8 * byte + b < len(cells):
                        cell2grid[si, byte, v] |= 1 << gbit[8 * byte + b]
        for i, g in enumerate(gbit):
            for v in range(256):
                if (v >> (g % 8)) & 1:
                    grid2cell[si, g // 8, v] |= 1 << i
        for cid in range(1, NUM_CARDS + 1):
            card = CARDS[cid]
            seen = set()
            per_card = []
            for k in range(6):
                cq, cr = rotate(card["cube"][0], card["cube"][1], k)
                rel = tuple(sorted((rotate(q, r, k)[0] - cq, rotate(q, r, k)[1] - cr, LABELS.index(lab))
                                   for q, r, lab in card["pattern"]))
                if rel in seen:
                    continue
                seen.add(rel)
                valid = 0
                for (q, r), i in index.items():
                    if all((q + dq, r + dr) in index for dq, dr, _ in rel):
                        valid |= 1 << gbit[i]
                per_card.append((valid, [(dq * GRID_W + dr, cls) for dq, dr, cls in rel]))
            rots[si].append(per_card)
    most = max(sum(len(c) for c in side) for side in rots)
    start = np.zeros((2, NUM_CARDS + 2), dtype=np.int64)
    valid = np.zeros((2, most), dtype=np.int64)
    cls = np.full((2, most, 4), -1, dtype=np.int64)
    off = np.zeros((2, most, 4), dtype=np.int64)
    for si in range(2):
        n = 0
        for cid in range(1, NUM_CARDS + 1):
            start[si, cid] = n
            for v, elems in rots[si][cid - 1]:
                valid[si, n] = v
                for j, (o, c) in enumerate(elems):
                    off[si, n, j] = o
                    cls[si, n, j] = c
                n += 1
        start[si, NUM_CARDS + 1] = n
    return cell2grid, grid2cell, start, valid, cls, off


#: CELL2GRID[side, byte, v]: grid bits of the cells 8 * byte + (set bits of v). int64 (2, 4, 256)
#: GRID2CELL[side, byte, v]: cell bits of the grid bits 8 * byte + (set bits of v). int64 (2, 8, 256)
#: GRID_ROT_START[side, card] .. [side, card + 1]: the card's distinct rotations; GRID_ROT_VALID[side, r]: grid
#: bits of the cube cells where rotation r lies on the board; GRID_ROT_CLASS / GRID_ROT_OFF[side, r, j]: the
#: j-th pattern cell's habitat class (-1 unused) and grid offset from the cube cell. int64
CELL2GRID, GRID2CELL, GRID_ROT_START, GRID_ROT_VALID, GRID_ROT_CLASS, GRID_ROT_OFF = _grid_tables()
#: CARD_CLASSES[card]: bit set of the habitat classes in the card's pattern. int64 (NUM_CARDS + 1,)
CARD_CLASSES = np.zeros(NUM_CARDS + 1, dtype=np.int64)
for _cid in range(1, NUM_CARDS + 1):
    for _q, _r, _lab in CARDS[_cid]["pattern"]:
        CARD_CLASSES[_cid] |= 1 << LABELS.index(_lab)
#: STACK_CLASSES[code]: bit set of the habitat classes a stack belongs to (0 for none). int64 (NUM_STACKS,)
STACK_CLASSES = np.zeros(ST.NUM_STACKS, dtype=np.int64)
for _cls in range(len(LABELS)):
    for _code in range(ST.NUM_STACKS):
        _bbs = np.zeros(ST.NUM_STACKS, dtype=np.int64)
        _bbs[_code] = 1
        if class_mask.py_func(_bbs, _cls):
            STACK_CLASSES[_code] |= 1 << _cls


@njit(cache=True, inline="always")
def to_grid(side: int, m: int) -> int:
    return (CELL2GRID[side, 0, m & 255] | CELL2GRID[side, 1, (m >> 8) & 255]
            | CELL2GRID[side, 2, (m >> 16) & 255] | CELL2GRID[side, 3, (m >> 24) & 255])


@njit(cache=True, inline="always")
def from_grid(side: int, g: int) -> int:
    m = 0
    k = 0
    while g:
        m |= GRID2CELL[side, k, g & 255]
        g >>= 8
        k += 1
    return m


@njit(cache=True)
def class_grids(side: int, bb, out) -> None:
    """out (int64 (NUM_CLASSES,)) = each habitat class's cells of the board bb (int64 (15,)) as grid bits."""
    for cls in range(NUM_CLASSES):
        out[cls] = to_grid(side, class_mask(bb, cls))


# The rotation loop is written out in each grid matcher on purpose: as an `inline="always"` helper taking `grids`
# (df48e04) numba bound the array to a new variable, whose incref/decref pair (atomic, opaque calls) stayed in the
# rotation loop and cost random games 25-45%. docs/engine.md, "Hot kernels: what not to do".
@njit(cache=True)
def habitat_cells_grid(side: int, grids, cubes: int, card: int) -> int:
    """Mask of cells that can take a cube from `card` now (as `habitat_cells`), from `class_grids` output.

    For several cards of one board: the class grids are computed once (grids: int64 (NUM_CLASSES,)).
    """
    g = 0
    for r in range(GRID_ROT_START[side, card], GRID_ROT_START[side, card + 1]):
        x = GRID_ROT_VALID[side, r]
        for j in range(4):
            cls = GRID_ROT_CLASS[side, r, j]
            if cls < 0 or x == 0:
                break
            o = GRID_ROT_OFF[side, r, j]
            m = grids[cls]
            x &= (m >> o) if o >= 0 else (m << -o)
        g |= x
    return from_grid(side, g) & ~cubes




@njit(cache=True)
def habitat_stands_grid(side: int, grids, cubes: int, card: int) -> bool:
    """Whether `habitat_cells_grid` is not empty, stopping at the first rotation that stands on a free cube cell (the
    planner's evaluation asks only this)."""
    free = ~to_grid(side, cubes)
    for r in range(GRID_ROT_START[side, card], GRID_ROT_START[side, card + 1]):
        x = GRID_ROT_VALID[side, r] & free
        for j in range(4):
            cls = GRID_ROT_CLASS[side, r, j]
            if cls < 0 or x == 0:
                break
            o = GRID_ROT_OFF[side, r, j]
            m = grids[cls]
            x &= (m >> o) if o >= 0 else (m << -o)
        if x:
            return True
    return False


@njit(cache=True, forceinline=True)
def habitat_cells(side: int, bb, cubes: int, card: int, base: int = 0) -> int:
    """Mask of cells that can take a cube from `card` now: a placement stands and its cube cell is free.

    bb[base:base + 15]: the board's bitboards (one per stack code; the rules pass the state and an offset, as a
    slice would cost a reference-count pair); cubes: mask of cells holding a cube. The grid matcher for one card:
    only the classes the card's pattern uses are laid on the grid, with no scratch array.
    """
    g = 0
    for r in range(GRID_ROT_START[side, card], GRID_ROT_START[side, card + 1]):
        x = GRID_ROT_VALID[side, r]
        for j in range(4):
            cls = GRID_ROT_CLASS[side, r, j]
            if cls < 0 or x == 0:
                break
            o = GRID_ROT_OFF[side, r, j]
            if cls == BUILDING_CLASS:
                m = bb[base + ST.S_BROWN_RED] | bb[base + ST.S_GRAY_RED] | bb[base + ST.S_RED_RED]
            else:
                m = bb[base + CLASS_STACK[cls]]
            m = to_grid(side, m)
            x &= (m >> o) if o >= 0 else (m << -o)
        g |= x
    return from_grid(side, g) & ~cubes


def card_name(card_id: int) -> str:
    """The card's name, e.g. 'Fennec Fox' or 'Lion Spirit'."""
    c = CARDS[card_id]
    return c["name"] + (" Spirit" if card_id >= FIRST_SPIRIT else "")


SPIRIT_IDS = tuple(c["id"] for c in SPIRIT_CARDS)
