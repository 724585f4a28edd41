"""Scoring: rulebook examples, BGA test vectors and final boards, hand-built boards, river loops under both
`river_loops` readings, and the kernel against the plain-Python reference on random boards. Everything goes
through the public `score_board`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonies_env import CATEGORIES, GameConfig, geometry, score_board

DATA = Path(__file__).parent / "data"
VECTORS = json.loads((DATA / "harmonies-components.json").read_text())["test_vectors"]
BGA = json.loads((DATA / "bga-final-boards.json").read_text())

M1, M2, M3 = ("gray",), ("gray", "gray"), ("gray", "gray", "gray")
T1, T2, T3 = ("green",), ("brown", "green"), ("brown", "brown", "green")
W, Y, R = ("blue",), ("yellow",), ("red",)
TRUNK1, TRUNK2 = ("brown",), ("brown", "brown")
BR, GR, RR = ("brown", "red"), ("gray", "red"), ("red", "red")


def check(side, board, cards=(), river_loops="rulebook", **expected):
    """Score with the engine, compare every category with the reference, then with the hand-known values."""
    got = score_board(side, board, cards, river_loops=river_loops)
    assert list(got) == list(CATEGORIES)
    assert got == ref.score(side, board, cards, river_loops), f"engine {got} != reference"
    for k, v in expected.items():
        assert got[k] == v, f"{k}: got {got[k]}, expected {v}"
    return got


# ---- rulebook examples -----------------------------------------------------------------------------------

PAULINE = {
    # a river of 7: a straight line of 5 (SE direction), then two cells S, no shortcut -> 15 + 4 = 19
    (0, 0): W, (1, 0): W, (2, 0): W, (3, 0): W, (4, 0): W, (4, 1): W, (4, 2): W,
    (4, -2): M3, (4, -1): M2,  # two adjacent mountains: 7 + 3 = 10
    (1, 1): T2, (3, 2): T1,  # trees 3 + 1 = 4
    (0, 3): Y, (0, 4): Y, (2, 2): Y, (2, 3): Y,  # two fields of 2 = 10
    (1, 2): GR,  # building, neighbours show yellow, green, brown -> 5 (its gray is not a mountain)
    (0, 2): TRUNK1,
    (3, 1): BR,  # building, neighbours show blue, yellow, green -> 5
}
# Otter 1 cube -> 5, Ray 2 -> 10, Alligator 1 -> 4, Hedgehog 2 -> 12, Fish 4 -> 16, Flamingo 3 -> 16
PAULINE_CARDS = [(4, 1), (2, 2), (1, 1), (12, 2), (3, 4), (7, 3)]


def test_pauline_rulebook_board_116():
    check("A", PAULINE, PAULINE_CARDS, trees=4, mountains=10, fields=10, buildings=10, water=19,
          animals=63, spirit=0, total=116)
    assert ref.river_length("A", PAULINE) == 7


def test_side_b_four_islands_20():
    (v,) = [v for v in VECTORS["islands_side_B"] if "4_islands" in v["name"]]
    check("B", {tuple(c): W for c in v["blue"]}, water=20, total=20)


LION_BOARD = {(0, 0): Y, (0, 2): Y, (0, 3): Y, (2, 0): Y, (2, 1): Y, (3, 1): Y}  # yellow groups of 1, 2, 3


def test_lion_spirit_groups_1_2_3_give_14():
    check("A", LION_BOARD, [(33, 1)], fields=10, spirit=14, total=24)
    check("A", LION_BOARD, [(33, 0)], fields=10, spirit=0, total=10)  # cube not placed: the Spirit scores 0
    check("B", LION_BOARD, [(33, 1)], fields=10, spirit=14, water=5, total=29)


def test_solo_worked_example_suns():
    from harmonies_env.cards import SPIRIT_SUN_BONUS
    from harmonies_env.scoring import solo_suns
    assert solo_suns(130, 0, SPIRIT_SUN_BONUS[33]) == 7
    assert [solo_suns(s, 1, 0) for s in (39, 40, 69, 70, 90, 110, 130, 140, 150, 160, 300)] == [
        0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 8]
    assert solo_suns(0, 0, 2) == 3


# ---- BGA unit-test vectors and real final boards ---------------------------------------------------------

@pytest.mark.parametrize("v", VECTORS["river_side_A"], ids=lambda v: v["name"])
def test_bga_river_vectors(v):
    check("A", {tuple(c): W for c in v["blue"]}, water=v["expected"], total=v["expected"])


@pytest.mark.parametrize("v", VECTORS["islands_side_B"], ids=lambda v: v["name"])
def test_bga_island_vectors(v):
    check("B", {tuple(c): W for c in v["blue"]}, water=v["expected"], total=v["expected"])


@pytest.mark.parametrize("v", VECTORS["spirit_side_B"], ids=lambda v: v["name"])
def test_bga_building_spirit_vectors(v):
    board = {tuple(c): tuple(s) for c, s in v["stacks"]}
    check("B", board, [(v["card"], 1)], spirit=v["expected"])


BGA_PLAYERS = [(g["name"], i, g["side"], p) for g in BGA["games"] for i, p in enumerate(g["players"])]


def test_bga_file_has_ten_boards():
    assert len(BGA_PLAYERS) == 10


@pytest.mark.parametrize("name,seat,side,player", BGA_PLAYERS, ids=[f"{n}-p{i}" for n, i, _, _ in BGA_PLAYERS])
def test_bga_final_boards(name, seat, side, player):
    board = {tuple(c["cell"]): tuple(c["stack"]) for c in player["board"]}
    held = [(c["id"], c["cubes_placed"]) for c in player["cards"]]
    check(side, board, held, total=player["expected_total"])
    check(side, board, held, river_loops="bga", total=player["expected_total"])  # no blue loop on these boards


# ---- hand-built boards with known category scores --------------------------------------------------------

def test_trees():
    check("A", {(0, 0): TRUNK1, (0, 1): TRUNK2}, trees=0, total=0)
    check("A", {(0, 0): T1, (0, 1): T2, (0, 2): T3, (2, 1): T3}, trees=18, total=18)


def test_mountains_need_an_adjacent_mountain():
    check("A", {(2, 1): M3}, mountains=0)
    check("A", {(2, 1): M3, (0, 0): M2}, mountains=0)  # not adjacent
    check("A", {(2, 1): M3, (2, 2): M1}, mountains=8)
    check("A", {(2, 1): M2, (2, 2): M2, (3, 1): M1, (0, 4): M3}, mountains=7)  # the lone M3 scores 0
    # a gray under a red is a Building, not a Mountain: the M2 beside it is alone
    check("A", {(2, 1): M2, (2, 2): GR}, mountains=0, buildings=0)


def test_fields():
    check("A", {(0, 0): Y}, fields=0)
    check("A", {(0, 0): Y, (0, 1): Y, (0, 2): Y, (0, 3): Y}, fields=5)  # a group of 4 is one Field
    check("A", {(0, 0): Y, (0, 1): Y, (0, 3): Y, (0, 4): Y}, fields=10)
    check("A", {(0, 0): Y, (1, 0): Y, (2, -1): Y, (3, -1): Y, (4, -2): Y}, fields=5)  # zigzag is connected


def test_buildings():
    around = {(2, 0): W, (3, 0): Y, (3, 1): T2}  # neighbours of (2, 1): blue, yellow, green tops
    check("A", {(2, 1): R, **around}, buildings=0)  # a lone red is not a Building
    for base in (BR, GR, RR):
        check("A", {(2, 1): base, **around}, buildings=5)
    check("A", {(2, 1): RR, (2, 0): W, (3, 0): Y, (3, 1): W}, buildings=0)  # only 2 colours
    check("A", {(2, 1): RR, (2, 0): W, (3, 0): Y}, buildings=0)  # empty cells show no colour
    check("A", {(2, 1): RR, (2, 0): W, (3, 0): Y, (3, 1): R}, buildings=5)  # red counts as a colour
    # two buildings side by side: (2, 1) sees blue, yellow, red -> 5; (3, 1) sees only yellow and red -> 0
    check("A", {(2, 1): RR, (2, 0): W, (3, 0): Y, (3, 1): GR}, buildings=5)


def test_buildings_see_top_colours_only():
    # neighbours brown-green (green), gray-gray (gray), brown trunk (brown): 3 colours by tops
    check("A", {(2, 1): BR, (2, 0): T2, (3, 0): M2, (3, 1): TRUNK1}, buildings=5)
    # green, green, green tops -> 1 colour, although brown tokens lie under them
    check("A", {(2, 1): BR, (2, 0): T2, (3, 0): T3, (3, 1): T1}, buildings=0)


RIVER7 = [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (4, 1), (4, 2)]


@pytest.mark.parametrize("n,points", list(zip(range(1, 8), [0, 2, 5, 8, 11, 15, 19])))
def test_river_points_by_length(n, points):
    check("A", {c: W for c in RIVER7[:n]}, water=points)


def test_river_no_water_and_best_river_only():
    check("A", {}, water=0, total=0)
    board = {c: W for c in RIVER7[:4]}
    board.update({(0, 2): W, (0, 3): W})  # a second river of 2 does not add
    check("A", board, water=8)


def test_river_loop_gives_no_extra_length():
    ring = [(2, 0), (3, 0), (3, 1), (2, 2), (1, 2), (1, 1)]  # six blues around (2, 1)
    check("A", {c: W for c in ring}, water=8)  # farthest ends are 3 steps apart -> length 4, not 6
    check("A", {c: W for c in ring + [(2, 1)]}, water=5)  # filled flower: diameter 2 -> length 3


# ---- river loops: the rulebook's reading and BGA's (river_loops="bga", docs/rules.md) ----------------------

def bga_cell(col, row):
    """BGA's board cell (odd-q column, row) in our axial (q, r), as tests/data's BGA vectors were converted."""
    return col, row - col // 2


#: Board Game Arena's own unit tests of circular rivers (tests/scoreWaterSideATest.php of mizutismask/bga-harmonies,
#: cells as its setTokensIn(col, row) calls): testScoreWaterCircular, testScoreWaterCircularPlusOneOnSide and
#: testScoreWaterDoubleCircular, each expecting 15 points (a river of 6). BGA's testAll() leaves the last one out
#: ("not sure how it should count, will probably never happen"). Our rulebook reading gives 8, 8 and 11.
RING_BGA = [(1, 0), (1, 1), (2, 0), (2, 2), (3, 0), (3, 1)]  # six blues around BGA cell (2, 1)
BGA_LOOP_CASES = [
    ("circular", RING_BGA, 15, 8),
    ("circular_plus_one_on_side", RING_BGA + [(4, 1)], 15, 8),
    ("double_circular", RING_BGA + [(1, 2), (2, 3), (3, 2)], 15, 11),
]


@pytest.mark.parametrize("name,cells,bga,rulebook", BGA_LOOP_CASES, ids=[c[0] for c in BGA_LOOP_CASES])
def test_bga_loop_cases(name, cells, bga, rulebook):
    board = {bga_cell(*c): W for c in cells}
    check("A", board, river_loops="bga", water=bga, total=bga)
    check("A", board, water=rulebook, total=rulebook)  # the rulebook reading (the default) as before
    assert score_board(None, board, config=GameConfig(river_loops="bga"))["water"] == bga


def test_bga_loop_cases_are_rings_around_an_empty_cell():
    ring = {bga_cell(*c) for c in RING_BGA}
    centre = bga_cell(2, 1)
    assert centre == (2, 0) and ring == ref.neighbours("A", centre)
    assert ref.loop_length("A", ring) == 6


def test_hand_built_loops():
    ring = [(2, 0), (3, 0), (3, 1), (2, 2), (1, 2), (1, 1)]  # six blues around the empty (2, 1)
    board = {c: W for c in ring}
    check("A", board, river_loops="bga", water=15)  # the loop: 6 tokens
    check("A", board, water=8)  # the rulebook: farthest ends 3 steps apart -> 4
    # blue in the hole closes it (a filled flower: diameter 2, length 3); any other token leaves the loop a loop
    check("A", {**board, (2, 1): W}, river_loops="bga", water=5)
    check("A", {**board, (2, 1): Y}, river_loops="bga", water=15)
    # one ring token missing: an open bend, no loop
    check("A", {c: W for c in ring[:-1]}, river_loops="bga", water=11)
    # a ring around two empty cells (2, 1) and (2, 2): 8 tokens around them
    two = [(2, 0), (3, 0), (3, 1), (3, 2), (2, 3), (1, 3), (1, 2), (1, 1)]
    check("A", {c: W for c in two}, river_loops="bga", water=23)
    # a loop with tails: the longer of the loop (6 tokens) and the longest shortest path
    one_tail = {**board, (4, -1): W}  # (4, -1) - (3, 0) - ... - (1, 2): 4 steps, 5 tokens
    check("A", one_tail, water=11)
    check("A", one_tail, river_loops="bga", water=15)
    two_tails = {**one_tail, (4, -2): W, (0, 3): W, (0, 4): W}  # (4, -2) ... (0, 4): 7 steps, 8 tokens
    check("A", two_tails, water=23)
    check("A", two_tails, river_loops="bga", water=23)
    # a triangle of 3 encloses nothing: 2 tokens by both readings
    check("A", {(0, 0): W, (1, 0): W, (0, 1): W}, river_loops="bga", water=2)


def test_a_bend_against_the_board_edge_is_no_loop():
    # (0, 1) is an edge cell: blue on all its board neighbours does not enclose it
    around = ref.neighbours("A", (0, 1))
    assert len(around) < 6
    board = {c: W for c in around}
    assert ref.loop_length("A", set(board)) == 0
    check("A", board, river_loops="bga", water=score_board("A", board)["water"])


def test_side_b_ignores_river_loops():
    ring = {c: W for c in ref.neighbours("B", (2, 1))}
    assert score_board("B", ring, river_loops="bga") == score_board("B", ring)


def test_river_token_beside_an_end_adds_no_length():
    column = {(0, r): W for r in range(5)}
    check("A", column, water=11)
    check("A", {**column, (1, 3): W}, water=11)  # (1, 3) touches (0, 3) and (0, 4): still 4 steps from (0, 0)
    check("A", {**column, (1, 0): W}, water=11)  # likewise at the top end
    check("A", {**column, (1, 0): W, (2, -1): W}, water=15)  # (2, -1) is 5 steps from (0, 4): length 6


def test_islands():
    check("B", {}, water=5, total=5)  # no water: one Island
    check("B", {c: W for c in ref.BOARD_CELLS["B"]}, water=5)  # all water: still at least one Island
    check("B", {(1, 0): W, (1, 1): W, (1, 2): W}, water=10)  # column 1 cuts column 0 off
    check("B", {(0, 0): W}, water=5)  # the board edge neither separates nor joins
    check("B", {(0, 1): W, (1, 0): W}, water=10)  # corner (0, 0) is cut off
    # islands are about tops: a red building is land
    check("B", {(1, 0): W, (1, 1): BR, (1, 2): W}, water=5)
    # side A never scores islands, side B never scores a river
    check("A", {(1, 0): W, (1, 1): W, (1, 2): W}, water=5)


def test_animal_cards():
    check("A", {}, [(1, 0)], animals=0, total=0)  # all cubes still on the card
    check("A", {}, [(1, 1)], animals=4)
    check("A", {}, [(1, 3)], animals=15)  # complete: top value
    check("A", {}, [(5, 5), (31, 5), (13, 2), (24, 1)], animals=15 + 17 + 18 + 5)


SPIRIT_BOARD = {  # only cells that both sides have
    (0, 0): W, (0, 1): W, (0, 3): W,  # blue: a group of 2 and a single
    (1, 0): Y, (2, -1): Y, (3, -1): Y, (4, 1): Y,  # yellow: a group of 3 and a single
    (2, 0): BR, (2, 1): GR, (4, -2): RR, (1, 2): R,  # buildings: a group of 2 and a single; a lone red
    (0, 2): T1, (1, 1): T2, (2, 2): T3,  # trees of height 1, 2, 3
    (3, 0): M1, (3, 1): M2, (4, -1): M3, (4, 0): M2,  # mountains of height 1, 2, 3, 2
}
SPIRIT_EXPECTED = {33: 10 + 2, 34: 5 + 5, 35: 4 + 4, 36: 3 + 3 + 1, 37: 4 + 4, 38: 6, 39: 4 * 3, 40: 3 + 3 + 1 + 3,
                   41: 7, 42: 2 * 3}


@pytest.mark.parametrize("card", sorted(SPIRIT_EXPECTED))
def test_each_spirit_rule(card):
    for side in ("A", "B"):
        check(side, SPIRIT_BOARD, [(card, 1)], spirit=SPIRIT_EXPECTED[card])
        check(side, SPIRIT_BOARD, [(card, 0)], spirit=0)


def test_spirit_mountains_count_when_isolated():
    check("A", {(0, 0): M2, (4, 2): M3}, [(39, 1)], mountains=0, spirit=8)
    check("A", {(0, 0): M1}, [(40, 1)], mountains=0, spirit=3)


# ---- bad input -------------------------------------------------------------------------------------------

def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"side A has no cell at \(q=1, r=4\)"):
        score_board("A", {(1, 4): W})
    with pytest.raises(ValueError, match=r"side B has no cell at \(q=5, r=1\)"):
        score_board("B", {(5, 0): W, (5, 1): W})
    with pytest.raises(ValueError, match=r"cell \(q=0, r=0\).*impossible stack.*'green', 'brown'"):
        score_board("A", {(0, 0): ["green", "brown"]})
    with pytest.raises(ValueError, match=r"cell \(q=2, r=1\).*'purple'"):
        score_board("A", {(2, 1): ["purple"]})
    with pytest.raises(ValueError, match=r"card id must be 1\.\.42, got 43"):
        score_board("A", {}, [(43, 0)])
    with pytest.raises(ValueError, match=r"card id must be 1\.\.42, got 0"):
        score_board("A", {}, [(0, 0)])
    with pytest.raises(ValueError, match=r"card 12 \(Hedgehog\) holds 2 cubes, got cubes_placed=3"):
        score_board("A", {}, [(12, 3)])
    with pytest.raises(ValueError, match=r"card 33 \(Lion Spirit\) holds 1 cubes, got cubes_placed=2"):
        score_board("A", {}, [(33, 2)])
    with pytest.raises(ValueError, match=r"cubes_placed=-1"):
        score_board("A", {}, [(1, -1)])
    with pytest.raises(ValueError, match="listed twice"):
        score_board("A", {}, [(1, 1), (1, 2)])
    with pytest.raises(ValueError, match="at most one Spirit"):
        score_board("A", {}, [(33, 1), (34, 1)])
    with pytest.raises(ValueError, match="'C'"):
        score_board("C", {})
    with pytest.raises(ValueError, match=r"river_loops must be one of 'rulebook', 'bga', got 'loops'"):
        score_board("A", {}, river_loops="loops")
    with pytest.raises(ValueError, match=r"side='B' conflicts with config.side='A'"):
        score_board("B", {}, config=GameConfig())
    with pytest.raises(ValueError, match=r"river_loops='rulebook' conflicts with config.river_loops='bga'"):
        score_board("A", {}, river_loops="rulebook", config=GameConfig(river_loops="bga"))
    with pytest.raises(ValueError, match="needs the board's side"):
        score_board(None, {})


# ---- the kernel against the reference on random boards ---------------------------------------------------

@st.composite
def scored_boards(draw, side):
    """A random legal board (a few favoured stacks so rivers, fields and mountain ranges form) and held cards."""
    favoured = draw(st.lists(st.sampled_from(ref.LEGAL_STACKS), min_size=1, max_size=3))
    pick = st.one_of(st.sampled_from(favoured), st.sampled_from(ref.LEGAL_STACKS))
    board = {c: s for c in ref.BOARD_CELLS[side] if (s := draw(pick))}
    animals = draw(st.lists(st.sampled_from(ref.ANIMAL_IDS), max_size=6, unique=True))
    held = [(cid, draw(st.integers(0, len(ref.CARDS[cid]["points"])))) for cid in animals]
    spirit = draw(st.none() | st.sampled_from(ref.SPIRIT_IDS))
    if spirit is not None:
        held.append((spirit, draw(st.sampled_from([1, 1, 1, 0]))))
    return board, held


@settings(max_examples=500, deadline=None)
@given(scored_boards("A"))
def test_kernel_matches_reference_side_a(bh):
    board, held = bh
    assert score_board("A", board, held) == ref.score("A", board, held)
    assert score_board("A", board, held, river_loops="bga") == ref.score("A", board, held, "bga")


@settings(max_examples=500, deadline=None)
@given(st.sets(st.sampled_from(ref.BOARD_CELLS["A"]), min_size=5), st.sampled_from(("rulebook", "bga")))
def test_kernel_matches_reference_on_blue_boards(blue, river_loops):
    """Boards of blue tokens only, often dense enough to close loops around one or more cells."""
    board = {c: W for c in blue}
    assert score_board("A", board, river_loops=river_loops) == ref.score("A", board, (), river_loops)


@settings(max_examples=500, deadline=None)
@given(scored_boards("B"))
def test_kernel_matches_reference_side_b(bh):
    board, held = bh
    assert score_board("B", board, held) == ref.score("B", board, held)


def mirrored(side, board, k):
    """The board (cell -> stack) under the board's k-th symmetry (`geometry.SYMMETRIES`)."""
    cells = ref.BOARD_CELLS[side]
    perm = geometry.SYMMETRIES[geometry.side_code(side), k]
    return {cells[perm[geometry.cell_index(side, *c)]]: stack for c, stack in board.items()}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(("A", "B")).flatmap(lambda side: st.tuples(st.just(side), scored_boards(side))))
def test_scores_do_not_change_under_the_boards_symmetries(sb):
    """Why the learned network may train on mirror images (`afterstate.symmetry_index`): every category, Spirits
    included, scores a board and its mirror images alike."""
    side, (board, held) = sb
    for river_loops in ("rulebook", "bga"):
        want = score_board(side, board, held, river_loops=river_loops)
        for k in range(1, geometry.NUM_SYMMETRIES):
            assert score_board(side, mirrored(side, board, k), held, river_loops=river_loops) == want
