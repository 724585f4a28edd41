"""Board geometry: cells, neighbours and the bitmask kernels against a set-based reference."""
from __future__ import annotations

import pytest
import reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonies_env import data, geometry

SIDES = ("A", "B")


def mask_of(side, cells):
    return sum(1 << geometry.cell_index(side, *c) for c in cells)


def cells_of(side, mask):
    return {ref.BOARD_CELLS[side][i] for i in range(geometry.NUM_CELLS[geometry.side_code(side)]) if (mask >> i) & 1}


def test_cell_counts_and_columns():
    assert list(geometry.NUM_CELLS) == [23, 25]
    for side, heights in (("A", [5, 4, 5, 4, 5]), ("B", [4, 3, 4, 3, 4, 3, 4])):
        cells = ref.BOARD_CELLS[side]
        assert [sum(1 for q, _ in cells if q == col) for col in range(len(heights))] == heights
        assert len(set(cells)) == len(cells)


@pytest.mark.parametrize("side", SIDES)
def test_cells_match_the_reference_data(side):
    s = geometry.side_code(side)
    assert list(data.BOARD_CELLS[side]) == ref.BOARD_CELLS[side]
    n = len(ref.BOARD_CELLS[side])
    for i, qr in enumerate(ref.BOARD_CELLS[side]):
        assert tuple(geometry.CELL_QR[s, i]) == qr
        assert geometry.cell_qr(side, i) == qr
        assert geometry.cell_index(side, *qr) == i
    assert (geometry.CELL_QR[s, n:] == -99).all()
    assert geometry.FULL_MASK[s] == (1 << n) - 1


@pytest.mark.parametrize("side", SIDES)
def test_neighbours_match_reference_and_are_symmetric(side):
    s = geometry.side_code(side)
    cells = ref.BOARD_CELLS[side]
    n = len(cells)
    for i, c in enumerate(cells):
        expected = ref.neighbours(side, c)
        assert cells_of(side, geometry.NEIGHBOUR_MASK[s, i]) == expected
        got = {cells[j] for j in geometry.NEIGHBOURS[s, i] if j >= 0}
        assert got == expected
        for d, j in enumerate(geometry.NEIGHBOURS[s, i]):
            dq, dr = geometry.DIRECTIONS[d]
            if j >= 0:
                assert cells[j] == (c[0] + dq, c[1] + dr)
                assert geometry.NEIGHBOURS[s, j, (d + 3) % 6] == i  # opposite direction comes back
            else:
                assert (c[0] + dq, c[1] + dr) not in cells
        assert not (geometry.NEIGHBOUR_MASK[s, i] >> i) & 1
    assert (geometry.NEIGHBOURS[s, n:] == -1).all()
    assert (geometry.NEIGHBOUR_MASK[s, n:] == 0).all()


def test_known_neighbour_counts():
    """Interior cells have 6 neighbours, corners fewer; the total number of adjacencies is fixed by the shape."""
    a = geometry.side_code("A")
    for side, inner in (("A", 7), ("B", 7)):  # counted by hand from the board drawings
        s = geometry.side_code(side)
        assert [bin(int(m)).count("1") for m in geometry.NEIGHBOUR_MASK[s]].count(6) == inner
    assert geometry.NEIGHBOUR_MASK[a, geometry.cell_index("A", 2, 1)] == mask_of(
        "A", [(2, 0), (3, 0), (3, 1), (2, 2), (1, 2), (1, 1)])
    assert geometry.NEIGHBOUR_MASK[a, geometry.cell_index("A", 0, 0)] == mask_of("A", [(0, 1), (1, 0)])
    for side, edges in (("A", 50), ("B", 54)):
        s = geometry.side_code(side)
        assert sum(bin(int(m)).count("1") for m in geometry.NEIGHBOUR_MASK[s]) == 2 * edges


def test_bad_cells_and_sides():
    with pytest.raises(ValueError, match=r"side A has no cell at \(q=1, r=4\)"):
        geometry.cell_index("A", 1, 4)
    with pytest.raises(ValueError, match=r"side B has no cell at \(q=0, r=4\)"):
        geometry.cell_index("B", 0, 4)
    assert geometry.cell_index("A", 0, 4) == 4
    with pytest.raises(ValueError, match="'C'"):
        geometry.side_code("C")


@st.composite
def side_and_mask(draw):
    side = draw(st.sampled_from(SIDES))
    n = len(ref.BOARD_CELLS[side])
    return side, draw(st.integers(0, (1 << n) - 1))


@settings(max_examples=300, deadline=None)
@given(side_and_mask())
def test_bit_kernels_match_sets(sm):
    side, m = sm
    s = geometry.side_code(side)
    cells = cells_of(side, m)
    assert geometry.popcount(m) == len(cells)
    if m:
        assert geometry.lowest_cell(m) == min(i for i in range(25) if (m >> i) & 1)
    grown = set().union(*[ref.neighbours(side, c) for c in cells]) if cells else set()
    assert cells_of(side, geometry.grow(s, m)) == grown
    groups = ref.groups(side, cells)
    for g in groups:
        for c in g:
            i = geometry.cell_index(side, *c)
            assert cells_of(side, geometry.component_of(s, i, m)) == g
            assert geometry.eccentricity(s, i, m) == max(ref.distances_from(side, c, g).values())


@pytest.mark.parametrize("side", SIDES)
def test_symmetries_are_the_boards_mirror_images(side):
    """Identity, left-right, top-bottom and the half turn: each maps the board onto itself and keeps adjacency."""
    s = geometry.side_code(side)
    n = len(ref.BOARD_CELLS[side])
    perms = geometry.SYMMETRIES[s]
    assert perms.shape == (geometry.NUM_SYMMETRIES, geometry.MAX_CELLS)
    assert (perms[0] == range(geometry.MAX_CELLS)).all()
    assert len({tuple(p) for p in perms}) == geometry.NUM_SYMMETRIES
    cols = max(q for q, _ in ref.BOARD_CELLS[side])
    for k, p in enumerate(perms):
        assert sorted(p[:n]) == list(range(n)) and (p[n:] == range(n, geometry.MAX_CELLS)).all()
        assert (p[p] == range(geometry.MAX_CELLS)).all()  # mirror images undo themselves
        for i in range(n):
            assert geometry.NEIGHBOUR_MASK[s, p[i]] == geometry.permute_mask(int(geometry.NEIGHBOUR_MASK[s, i]), p)
            q, r = ref.BOARD_CELLS[side][i]
            q2, _ = ref.BOARD_CELLS[side][p[i]]
            assert q2 == (cols - q if k in (1, 3) else q)  # left-right mirrors columns, top-bottom keeps them
    # the top-left corner goes to each corner
    corner = geometry.cell_index(side, 0, 0)
    corners = {ref.BOARD_CELLS[side][perms[k, corner]] for k in range(4)}
    assert corners == {(0, 0), (cols, -(cols // 2)), (0, len([c for c in ref.BOARD_CELLS[side] if c[0] == 0]) - 1),
                       (cols, -(cols // 2) + len([c for c in ref.BOARD_CELLS[side] if c[0] == cols]) - 1)}
