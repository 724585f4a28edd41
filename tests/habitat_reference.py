"""Test reference only, never imported by the engine: the placement-by-placement habitat matcher.

It was the engine's first matcher: it tries each of a card's precomputed placements (`cards.HABITAT_START` ..
`HABITAT_CUBE`, built from `cards.habitat_placements`) one by one against the board's bitboards. The engine now
matches habitats with the grid matcher (`cards.habitat_cells`, `cards.habitat_cells_grid`), which is faster;
tests compare the two on random boards (tests/test_cards.py, tests/test_batch.py), next to the plain-Python
reference in `reference.py`.
"""
from __future__ import annotations

from numba import njit

from harmonies_env.cards import HABITAT_CLASS, HABITAT_CUBE, HABITAT_MASK, HABITAT_START, class_mask


@njit(cache=True)
def placement_habitat_cells(side: int, bb, cubes: int, card: int) -> int:
    """Mask of cells that can take a cube from `card` now (same contract as `cards.habitat_cells`).

    bb: int64 (15,) the board's bitboards; cubes: mask of cells holding a cube.
    """
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
