"""Cards and habitats: card tables, every habitat precomputed, and the engine's habitat matcher.

Two forms of the same habitats: the placement tables (`HABITAT_*`: every placement over 6 rotations x all
translations, as up to 4 (class, mask) requirements plus the cube cell; the greedy agent's habitat distance reads
them) and the grid tables (`GRID_ROT_*`: each distinct rotation once, matched at every position at once by bit
shifts; `MATCH_*`: the same rotations laid out for a matcher without branches). `habitat_cells` / `habitat_cells_grid`
match on the grid: the one habitat matcher of the rules and agents.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import stacks as ST
from .data import BOARD_CELLS, CARDS, LABELS, NUM_ANIMAL_CARDS, SIDES, SPIRIT_CARDS, SPIRIT_OF
from .geometry import FAST_BIT_GATHER, NUM_CELLS, cell_index, cell_qr, deposit, extract

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
# whole pattern lies on the board. The matcher (`_stands`) computes the pattern's class grids once per card and ANDs
# all 6 rotations x 4 cells without a branch (`MATCH_*`); a cell mask goes onto the grid and back by one `pdep` /
# `pext` where the CPU has them fast.
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
    grid_bits: list[list[int]] = []
    for si, side in enumerate(SIDES):
        cells = BOARD_CELLS[side]
        index = {qr: i for i, qr in enumerate(cells)}
        gbit = [q * GRID_W + r - rmin for q, r in cells]
        assert gbit == sorted(gbit), "cell i is the i-th lowest grid bit (to_grid / from_grid rely on it)"
        grid_bits.append(gbit)
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
    cells_grid = np.array([sum(1 << g for g in gbits) for gbits in grid_bits], dtype=np.int64)
    return cell2grid, grid2cell, cells_grid, start, valid, cls, off


#: CELL2GRID[side, byte, v]: grid bits of the cells 8 * byte + (set bits of v). int64 (2, 4, 256)
#: GRID2CELL[side, byte, v]: cell bits of the grid bits 8 * byte + (set bits of v). int64 (2, 8, 256)
#: GRID_CELLS[side]: the grid bits of the board's cells. int64 (2,)
#: GRID_ROT_START[side, card] .. [side, card + 1]: the card's distinct rotations; GRID_ROT_VALID[side, r]: grid
#: bits of the cube cells where rotation r lies on the board; GRID_ROT_CLASS / GRID_ROT_OFF[side, r, j]: the
#: j-th pattern cell's habitat class (-1 unused) and grid offset from the cube cell. int64
CELL2GRID, GRID2CELL, GRID_CELLS, GRID_ROT_START, GRID_ROT_VALID, GRID_ROT_CLASS, GRID_ROT_OFF = _grid_tables()
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


def _match_tables():
    """`GRID_ROT_*` laid out for a matcher without branches: for each card, its pattern cells in one class order for
    every rotation (so each class grid is computed once per card), padded to 4 cells by repeating cell 0 (AND-ing a
    term twice changes nothing) and to 6 rotations by rotations that stand nowhere; each grid offset split into a
    right and a left shift, both >= 0."""
    classes = np.zeros((NUM_CARDS + 1, 4), dtype=np.int64)
    shr = np.zeros((2, NUM_CARDS + 1, 6, 4), dtype=np.int64)
    shl = np.zeros((2, NUM_CARDS + 1, 6, 4), dtype=np.int64)
    valid = np.zeros((2, NUM_CARDS + 1, 6), dtype=np.int64)
    for si in range(2):
        for cid in range(1, NUM_CARDS + 1):
            for k, r in enumerate(range(GRID_ROT_START[si, cid], GRID_ROT_START[si, cid + 1])):
                cells = sorted((int(GRID_ROT_CLASS[si, r, j]), int(GRID_ROT_OFF[si, r, j]))
                               for j in range(4) if GRID_ROT_CLASS[si, r, j] >= 0)
                cells += [cells[0]] * (4 - len(cells))
                if si == 0 and k == 0:
                    classes[cid] = [c for c, _ in cells]
                assert [c for c, _ in cells] == list(classes[cid]), "a rotation keeps the pattern's classes"
                valid[si, cid, k] = GRID_ROT_VALID[si, r]
                for j, (_, o) in enumerate(cells):
                    shr[si, cid, k, j] = max(o, 0)
                    shl[si, cid, k, j] = max(-o, 0)
    buildings = [ST.S_BROWN_RED, ST.S_GRAY_RED, ST.S_RED_RED]
    stacks = np.array([buildings if cls == BUILDING_CLASS else [CLASS_STACK[cls]] * 3 for cls in range(NUM_CLASSES)],
                      dtype=np.int64)
    return classes, stacks[classes], shr, shl, valid


#: MATCH_CLASS[card, j]: the habitat class of the card's j-th pattern cell (padded to 4 by repeating cell 0);
#: MATCH_STACKS[card, j]: the 3 stack codes whose cells make that class (one code thrice, or the 3 buildings);
#: MATCH_VALID[side, card, k]: grid bits of the cube cells where the k-th rotation lies on the board (0 past the
#: card's distinct rotations); MATCH_SHR / MATCH_SHL[side, card, k, j]: the j-th cell's grid offset from the cube cell
#: as a right and a left shift. int64 (43, 4), (43, 4, 3), (2, 43, 6), (2, 43, 6, 4)
MATCH_CLASS, MATCH_STACKS, MATCH_SHR, MATCH_SHL, MATCH_VALID = _match_tables()


@njit(cache=True, inline="always")
def _to_grid_table(side: int, m: int) -> int:
    return (CELL2GRID[side, 0, m & 255] | CELL2GRID[side, 1, (m >> 8) & 255]
            | CELL2GRID[side, 2, (m >> 16) & 255] | CELL2GRID[side, 3, (m >> 24) & 255])


@njit(cache=True, inline="always")
def _from_grid_table(side: int, g: int) -> int:
    return (GRID2CELL[side, 0, g & 255] | GRID2CELL[side, 1, (g >> 8) & 255] | GRID2CELL[side, 2, (g >> 16) & 255]
            | GRID2CELL[side, 3, (g >> 24) & 255] | GRID2CELL[side, 4, (g >> 32) & 255]
            | GRID2CELL[side, 5, (g >> 40) & 255] | GRID2CELL[side, 6, (g >> 48) & 255]
            | GRID2CELL[side, 7, (g >> 56) & 255])


@njit(cache=True, inline="always")
def _to_grid_gather(side: int, m: int) -> int:
    return deposit(m, GRID_CELLS[side])


@njit(cache=True, inline="always")
def _from_grid_gather(side: int, g: int) -> int:
    return extract(g, GRID_CELLS[side])


#: to_grid(side, m): the cells of mask m as grid bits; from_grid(side, g): the cells of grid bits g (other bits
#: ignored). Cells are numbered column by column, top to bottom, so cell i is the i-th lowest bit of GRID_CELLS[side]:
#: one `pdep` / `pext` where the CPU has them fast (`geometry.FAST_BIT_GATHER`), byte tables elsewhere (the same
#: answers: tests/test_cards compares them).
to_grid = _to_grid_gather if FAST_BIT_GATHER else _to_grid_table
from_grid = _from_grid_gather if FAST_BIT_GATHER else _from_grid_table


@njit(cache=True)
def class_grids(side: int, bb, out) -> None:
    """out (int64 (NUM_CLASSES,)) = each habitat class's cells of the board bb (int64 (15,)) as grid bits."""
    for cls in range(NUM_CLASSES):
        out[cls] = to_grid(side, class_mask(bb, cls))


@njit(cache=True, forceinline=True)
def _stands(side: int, card: int, g0: int, g1: int, g2: int, g3: int) -> int:
    """Grid bits of the cube cells where some rotation of `card`'s pattern stands, given the grids of its 4 pattern
    cells' classes (`MATCH_CLASS` order): per rotation, the AND of those grids each shifted by its cell's offset.
    No branch: the loop that left a rotation at its first failing cell took 1.8x the time (mispredicted exits). Scalars
    only, so that no array's reference count is taken here (docs/engine.md, "Hot kernels")."""
    g = 0
    for k in range(6):
        g |= (MATCH_VALID[side, card, k]
              & ((g0 >> MATCH_SHR[side, card, k, 0]) << MATCH_SHL[side, card, k, 0])
              & ((g1 >> MATCH_SHR[side, card, k, 1]) << MATCH_SHL[side, card, k, 1])
              & ((g2 >> MATCH_SHR[side, card, k, 2]) << MATCH_SHL[side, card, k, 2])
              & ((g3 >> MATCH_SHR[side, card, k, 3]) << MATCH_SHL[side, card, k, 3]))
    return g


@njit(cache=True)
def habitat_cells_grid(side: int, grids, cubes: int, card: int) -> int:
    """Mask of cells that can take a cube from `card` now (as `habitat_cells`), from `class_grids` output.

    For several cards of one board: the class grids are computed once (grids: int64 (NUM_CLASSES,)).
    """
    g = _stands(side, card, grids[MATCH_CLASS[card, 0]], grids[MATCH_CLASS[card, 1]], grids[MATCH_CLASS[card, 2]],
                grids[MATCH_CLASS[card, 3]])
    return from_grid(side, g) & ~cubes


@njit(cache=True)
def habitat_stands_grid(side: int, grids, cubes: int, card: int) -> bool:
    """Whether `habitat_cells_grid` is not empty (the planner's evaluation asks only this)."""
    g = _stands(side, card, grids[MATCH_CLASS[card, 0]], grids[MATCH_CLASS[card, 1]], grids[MATCH_CLASS[card, 2]],
                grids[MATCH_CLASS[card, 3]])
    return (g & ~to_grid(side, cubes)) != 0


@njit(cache=True, forceinline=True)
def habitat_cells(side: int, bb, cubes: int, card: int, base: int = 0) -> int:
    """Mask of cells that can take a cube from `card` now: a placement stands and its cube cell is free.

    bb[base:base + 15]: the board's bitboards (one per stack code; the rules pass the state and an offset, as a
    slice would cost a reference-count pair); cubes: mask of cells holding a cube. The grid matcher for one card:
    only the classes the card's pattern uses are laid on the grid, with no scratch array.
    """
    g0 = to_grid(side, bb[base + MATCH_STACKS[card, 0, 0]] | bb[base + MATCH_STACKS[card, 0, 1]]
                 | bb[base + MATCH_STACKS[card, 0, 2]])
    g1 = to_grid(side, bb[base + MATCH_STACKS[card, 1, 0]] | bb[base + MATCH_STACKS[card, 1, 1]]
                 | bb[base + MATCH_STACKS[card, 1, 2]])
    g2 = to_grid(side, bb[base + MATCH_STACKS[card, 2, 0]] | bb[base + MATCH_STACKS[card, 2, 1]]
                 | bb[base + MATCH_STACKS[card, 2, 2]])
    g3 = to_grid(side, bb[base + MATCH_STACKS[card, 3, 0]] | bb[base + MATCH_STACKS[card, 3, 1]]
                 | bb[base + MATCH_STACKS[card, 3, 2]])
    return from_grid(side, _stands(side, card, g0, g1, g2, g3)) & ~cubes


def card_name(card_id: int) -> str:
    """The card's name, e.g. 'Fennec Fox' or 'Lion Spirit'."""
    c = CARDS[card_id]
    return c["name"] + (" Spirit" if card_id >= FIRST_SPIRIT else "")


SPIRIT_IDS = tuple(c["id"] for c in SPIRIT_CARDS)
