"""Cards and habitats: card data against the reference JSON, habitat tables and `habitat_cells` vs the reference."""
from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonies_env import cards, data, geometry, stacks

SIDES = ("A", "B")
ALL_CARDS = ref.ANIMAL_IDS + ref.SPIRIT_IDS
LABEL_STACKS = {"blue": ["blue"], "yellow": ["yellow"], "tree1": ["green"], "tree2": ["brown", "green"],
                "tree3": ["brown", "brown", "green"], "mountain1": ["gray"], "mountain2": ["gray", "gray"],
                "mountain3": ["gray", "gray", "gray"], "building": ["any-base", "red"]}


# ---- card data -------------------------------------------------------------------------------------------

def test_card_counts():
    assert sorted(ref.ANIMAL_IDS) == list(range(1, 33))
    assert sorted(ref.SPIRIT_IDS) == list(range(33, 43))
    assert sum(len(ref.CARDS[i]["points"]) for i in ref.ANIMAL_IDS) == 96
    by_cubes = [len(ref.CARDS[i]["points"]) for i in ref.ANIMAL_IDS]
    assert [by_cubes.count(k) for k in (2, 3, 4, 5)] == [9, 16, 5, 2]
    assert cards.NUM_CARDS == 42 and cards.FIRST_SPIRIT == 33
    assert set(data.CARDS) == set(range(1, 43))


@pytest.mark.parametrize("card_id", ALL_CARDS)
def test_reference_card_is_well_formed(card_id):
    c = ref.CARDS[card_id]
    pattern = c["pattern"]
    cells = [tuple(pc["cell"]) for pc in pattern]
    assert 2 <= len(cells) <= 4 and len(set(cells)) == len(cells)
    # connected under hex adjacency (off-board: use raw offsets)
    seen, todo = {cells[0]}, [cells[0]]
    while todo:
        q, r = todo.pop()
        for dq, dr in ref.DIRECTIONS:
            n = (q + dq, r + dr)
            if n in cells and n not in seen:
                seen.add(n)
                todo.append(n)
    assert seen == set(cells)
    cube_cells = [pc for pc in pattern if pc["cube"]]
    assert len(cube_cells) == 1
    for pc in pattern:
        assert pc["stack"] == LABEL_STACKS[pc["label"]]
    assert c["cube_color"] == cube_cells[0]["stack"][-1]  # the cube sits on its stripe colour
    if "stripe_color" in c:
        assert c["stripe_color"] == c["cube_color"]
    if card_id in ref.ANIMAL_IDS:
        pts = c["points"]
        assert c["cubes"] == len(pts) and 2 <= len(pts) <= 5
        assert all(a < b for a, b in zip(pts, pts[1:]))


@pytest.mark.parametrize("card_id", ALL_CARDS)
def test_package_card_equals_reference(card_id):
    c, mine = ref.CARDS[card_id], data.CARDS[card_id]
    assert mine["name"] == c["name"]
    assert sorted((q, r, lab) for q, r, lab in mine["pattern"]) == sorted(
        (pc["cell"][0], pc["cell"][1], pc["label"]) for pc in c["pattern"])
    assert list(mine["cube"]) == next(pc["cell"] for pc in c["pattern"] if pc["cube"])
    if card_id in ref.ANIMAL_IDS:
        assert list(mine["points"]) == c["points"]
        assert cards.CUBES_ON_CARD[card_id] == len(c["points"])
        assert list(cards.CARD_POINTS[card_id]) == c["points"] + [0] * (5 - len(c["points"]))
        assert cards.SPIRIT_KIND[card_id] == 0
    else:
        assert cards.CUBES_ON_CARD[card_id] == 1
        assert cards.SPIRIT_KIND[card_id] == {"groups": 1, "count": 2}[c["category"]]
        assert cards.SPIRIT_SUN_BONUS[card_id] == c["solo_sun_bonus"]
        assert card_id in cards.SPIRIT_IDS
    assert cards.card_name(card_id) == c["name"] + (" Spirit" if card_id >= 33 else "")


def test_no_pattern_is_chiral():
    """rules.md: rotations only; that is the same as allowing mirrors because no pattern is chiral."""
    for cid in ALL_CARDS:
        pat = frozenset((tuple(pc["cell"]), pc["label"], pc["cube"]) for pc in ref.CARDS[cid]["pattern"])

        def normal(cells):
            q0 = min(q for (q, r), *_ in cells)
            r0 = min(r for (q, r), *_ in cells if q == q0)
            return frozenset(((q - q0, r - r0), lab, cube) for (q, r), lab, cube in cells)

        rotations = {normal({(ref.rotate(q, r, k), lab, cube) for (q, r), lab, cube in pat}) for k in range(6)}
        mirror = normal({((-q - r, r), lab, cube) for (q, r), lab, cube in pat})  # reflect across the q axis
        assert mirror in rotations, f"card {cid} is chiral"


def test_rotate():
    assert [cards.rotate(0, -1, k) for k in range(6)] == list(ref.DIRECTIONS)
    for k in range(12):
        assert cards.rotate(2, -1, k) == ref.rotate(2, -1, k)


# ---- habitat tables --------------------------------------------------------------------------------------

def engine_placements(side: str, card_id: int) -> list[tuple[frozenset, tuple[int, int]]]:
    s = geometry.side_code(side)
    cells = ref.BOARD_CELLS[side]
    out = []
    for p in range(cards.HABITAT_START[s, card_id], cards.HABITAT_START[s, card_id + 1]):
        req = set()
        for j in range(4):
            cls = cards.HABITAT_CLASS[s, p, j]
            if cls < 0:
                assert (cards.HABITAT_CLASS[s, p, j:] == -1).all()
                break
            m = int(cards.HABITAT_MASK[s, p, j])
            assert m
            req |= {(cells[i], data.LABELS[cls]) for i in range(len(cells)) if (m >> i) & 1}
        out.append((frozenset(req), cells[cards.HABITAT_CUBE[s, p]]))
    return out


@pytest.mark.parametrize("side", SIDES)
def test_habitat_tables_equal_reference_placements(side):
    s = geometry.side_code(side)
    assert cards.HABITAT_START[s, 1] == 0
    total = 0
    for cid in ALL_CARDS:
        got = engine_placements(side, cid)
        expected = ref.placements(side, cid)
        assert len(got) == len(set(got)), f"card {cid}: duplicate placements"
        assert set(got) == expected, f"side {side} card {cid}"
        total += len(expected)
    assert cards.HABITAT_START[s, cards.NUM_CARDS + 1] == total


def test_placement_counts_by_shape():
    """Sanity of the reference itself: a pair of two different cells fits on every board edge both ways."""
    for side, edges in (("A", 50), ("B", 54)):
        assert len(ref.placements(side, 3)) == 2 * edges  # Fish: mountain3 + blue(cube)
        assert len(ref.placements(side, 39)) == 2 * edges  # Ram: mountain2 + mountain3(cube)


@pytest.mark.parametrize("side", SIDES)
def test_every_placement_is_found_on_a_board_built_for_it(side):
    """For each card and each placement: build exactly that pattern; the cube cell is offered, and is not once
    it holds a cube; break one pattern cell and that placement alone no longer offers it."""
    s = geometry.side_code(side)
    for cid in ALL_CARDS:
        by_label = {pc["label"]: pc for pc in ref.CARDS[cid]["pattern"]}
        for cells, cube in sorted(ref.placements(side, cid), key=repr)[::3]:
            board = {c: tuple(by_label[lab]["stack"]) if lab != "building" else ("gray", "red") for c, lab in cells}
            bb = board_bits(side, board)
            got = cards.habitat_cells(s, bb, 0, cid)
            assert (got >> geometry.cell_index(side, *cube)) & 1, f"card {cid} on {board}"
            assert mask_cells(side, got) == ref.habitat_cells(side, board, set(), cid)
            cube_bit = 1 << geometry.cell_index(side, *cube)
            assert not (cards.habitat_cells(s, bb, cube_bit, cid) & cube_bit)


@pytest.mark.parametrize("side", SIDES)
def test_grid_conversions_agree_with_the_board_layout(side):
    """to_grid / from_grid (pdep / pext where the CPU has them fast) and their byte-table forms (every other CPU)
    give the same answers, and those of the grid's definition: cell (q, r) is grid bit q * 8 + r - min r."""
    s = geometry.side_code(side)
    rmin = min(r for sd in SIDES for _, r in data.BOARD_CELLS[sd])
    gbit = [q * cards.GRID_W + r - rmin for q, r in data.BOARD_CELLS[side]]
    rng = np.random.default_rng(46)
    masks = [1 << i for i in range(len(gbit))] + [int(m) for m in rng.integers(0, 1 << len(gbit), 300)]
    for m in masks:
        want = sum(1 << g for i, g in enumerate(gbit) if (m >> i) & 1)
        assert cards.to_grid(s, m) == cards._to_grid_table(s, m) == want
        noise = int(rng.integers(0, 1 << 62)) & ~int(cards.GRID_CELLS[s])  # bits off the board are ignored
        assert cards.from_grid(s, want | noise) == cards._from_grid_table(s, want | noise) == m
    if geometry.FAST_BIT_GATHER:
        assert cards.to_grid is cards._to_grid_gather


# ---- habitat_cells on random boards ----------------------------------------------------------------------

def board_bits(side: str, board) -> np.ndarray:
    bb = np.zeros(15, dtype=np.int64)
    for c in ref.BOARD_CELLS[side]:
        bb[stacks.stack_code(list(board.get(c, ())))] |= 1 << geometry.cell_index(side, *c)
    return bb


def mask_cells(side: str, m: int) -> set:
    return {c for i, c in enumerate(ref.BOARD_CELLS[side]) if (m >> i) & 1}


@st.composite
def boards_with_cubes(draw):
    """A random legal board; a few favoured stacks per board so that rivers, fields and patterns do form."""
    side = draw(st.sampled_from(SIDES))
    favoured = draw(st.lists(st.sampled_from(ref.LEGAL_STACKS), min_size=1, max_size=4))
    pick = st.one_of(st.sampled_from(favoured), st.sampled_from(ref.LEGAL_STACKS))
    board = {c: s for c in ref.BOARD_CELLS[side] if (s := draw(pick))}
    cubes = {c for c in ref.BOARD_CELLS[side] if draw(st.integers(0, 4)) == 0}
    return side, board, cubes


@settings(max_examples=250, deadline=None)
@given(boards_with_cubes())
def test_habitat_cells_match_reference_on_random_boards(sbc):
    side, board, cubes = sbc
    s = geometry.side_code(side)
    bb = board_bits(side, board)
    cube_mask = sum(1 << geometry.cell_index(side, *c) for c in cubes)
    for cid in ALL_CARDS:
        got = mask_cells(side, cards.habitat_cells(s, bb, cube_mask, cid))
        assert got == ref.habitat_cells(side, board, cubes, cid), f"card {cid}"


@settings(max_examples=150, deadline=None)
@given(boards_with_cubes())
def test_habitats_follow_the_boards_symmetries(sbc):
    """A habitat stands on a mirror image of the board exactly where the mirror image of the original one stands
    (every pattern is allowed in all rotations and none is chiral)."""
    side, board, cubes = sbc
    s = geometry.side_code(side)
    cells = ref.BOARD_CELLS[side]
    bb = board_bits(side, board)
    cube_mask = sum(1 << geometry.cell_index(side, *c) for c in cubes)
    for k in range(1, geometry.NUM_SYMMETRIES):
        perm = geometry.SYMMETRIES[s, k]
        mb = board_bits(side, {cells[perm[geometry.cell_index(side, *c)]]: st_ for c, st_ in board.items()})
        mc = geometry.permute_mask(cube_mask, perm)
        for cid in ALL_CARDS:
            want = geometry.permute_mask(int(cards.habitat_cells(s, bb, cube_mask, cid)), perm)
            assert cards.habitat_cells(s, mb, mc, cid) == want, f"card {cid}, symmetry {k}"


def test_fennec_fox_and_shrew_sequence():
    """Rulebook: a cube placed while its habitat stands stays after red covers a gray; the habitat itself goes."""
    side, s = "A", 0
    board = {(0, 1): ("yellow",), (1, 1): ("gray",), (2, 1): ("gray",)}  # Fennec Fox: yellow, M1, M1(cube) line
    fox = 23
    assert (2, 1) in ref.habitat_cells(side, board, set(), fox)
    got = mask_cells(side, cards.habitat_cells(s, board_bits(side, board), 0, fox))
    assert (2, 1) in got
    cubes = {(2, 1)}
    board[(1, 1)] = ("gray", "red")  # a red on the middle gray: Building; the fox habitat is broken
    assert ref.habitat_cells(side, board, cubes, fox) == set()
    cube_mask = 1 << geometry.cell_index(side, 2, 1)
    assert cards.habitat_cells(s, board_bits(side, board), cube_mask, fox) == 0
    # Shrew (yellow, Building(cube), yellow bent) now stands on the new building at (1, 1)
    board[(2, 0)] = ("yellow",)
    board[(0, 2)] = ("yellow",)
    shrew = 9
    expected = ref.habitat_cells(side, board, cubes, shrew)
    assert (1, 1) in expected
    assert mask_cells(side, cards.habitat_cells(s, board_bits(side, board), cube_mask, shrew)) == expected


def test_heights_must_match_exactly():
    side = "A"
    fish = 3  # mountain3 + blue(cube)
    board = {(1, 1): ("gray", "gray"), (2, 1): ("blue",)}
    assert ref.habitat_cells(side, board, set(), fish) == set()
    assert cards.habitat_cells(0, board_bits(side, board), 0, fish) == 0
    board[(1, 1)] = ("gray", "gray", "gray")
    assert mask_cells(side, cards.habitat_cells(0, board_bits(side, board), 0, fish)) == {(2, 1)}
    duck = 6  # building + blue(cube): a lone red is not a building, red-red is
    board = {(1, 1): ("red",), (2, 1): ("blue",)}
    assert cards.habitat_cells(0, board_bits(side, board), 0, duck) == 0
    for base in ("red", "gray", "brown"):
        board[(1, 1)] = (base, "red")
        assert mask_cells(side, cards.habitat_cells(0, board_bits(side, board), 0, duck)) == {(2, 1)}
