"""Both renderings: the text table (`str(game)`) and the picture (`render_image.render_rgb`).

The text board is parsed back cell by cell (row = 2r + q, column = q, four characters per column, see
render.board_lines) and compared with the state. The picture is checked at each cell's centre pixel, which
must show the top token's colour, and at the cube marker.
"""
from __future__ import annotations

import numpy as np
import pytest

from harmonies_env import actions as A
from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.game import Game
from harmonies_env.geometry import CELL_QR, NUM_CELLS
from harmonies_env.render import STACK_LABEL
from harmonies_env.render_image import (
    CUBE_MARK_OFFSET,
    EMPTY_RGB,
    TOKEN_RGB,
    WINNER_RGB,
    cell_centre,
    render_rgb,
    table_layout,
)
from harmonies_env.stacks import (
    S_BROWN1,
    S_BROWN_RED,
    S_GRAY_RED,
    S_MOUNTAIN1,
    S_MOUNTAIN2,
    S_RED1,
    S_RED_RED,
    S_TREE1,
    S_TREE2,
    S_TREE3,
    STACK_AFTER,
    TOP_COLOUR,
)

CONFIGS = [(n, side, spirits) for n in (1, 2, 3, 4) for side in ("A", "B") for spirits in (False, True)]


def play(game: Game, max_actions: int, seed: int) -> Game:
    """Random legal actions, placing a cube whenever one can be placed (so boards get cubes)."""
    rng = np.random.default_rng(seed)
    for _ in range(max_actions):
        if game.is_over:
            break
        legal = game.legal_actions()
        cubes = [a for a in legal if A.decode(a)[0] == "place_cube"]
        game.step(int(rng.choice(cubes or legal)))
    return game


def set_stack(game: Game, player: int, cell: int, code: int) -> None:
    """Put a stack on a cell directly (state kept consistent: stack code and bitboards)."""
    old = int(game.field("stack")[player, cell])
    S.set_stack_at(game._state, player, cell, code)
    bb = S.field(game._state, "bitboard")
    bb[player, old] &= ~(1 << cell)
    bb[player, code] |= 1 << cell
    rules.refresh_habitats(game._state)  # the held cards' answers follow the board


def set_cube(game: Game, player: int, cell: int) -> None:
    S.field(game._state, "cubes")[player] |= 1 << cell


@pytest.fixture(scope="module")
def played_games() -> list[Game]:
    """Finished and mid-game positions for every configuration, with some cubes on the boards."""
    out = []
    for k, (n, side, spirits) in enumerate(CONFIGS):
        g = play(Game(n, side, spirits, seed=100 + k), 40 + 25 * n, seed=k)
        out.append(g)
        out.append(play(g.clone(), 10**6, seed=k))
    return out


# ---- text rendering ------------------------------------------------------------------------------------

def text_boards(game: Game) -> list[dict[int, str]]:
    """Parse str(game): for each player, {cell: the 3-character cell text (label + '*' or ' ')}."""
    lines = str(game).split("\n")
    side = game.side_code
    n = NUM_CELLS[side]
    qs, rs = CELL_QR[side, :n, 0], CELL_QR[side, :n, 1]
    ys = 2 * rs + qs
    y0, nrows = int(ys.min()), int(ys.max() - ys.min() + 1)
    boards = []
    for p in range(game.num_players):
        start = next(i for i, ln in enumerate(lines) if ln.startswith(f"player {p}:"))
        k = start + 1
        if lines[k].startswith("  cards:"):
            k += 1
        rows = lines[k:k + nrows]
        assert all(r.startswith("  ") for r in rows), f"player {p}'s board is not where expected: {rows}"
        assert lines[k + nrows] == "", "the board has more rows than the geometry has"
        rows = [r[2:] for r in rows]
        cells = {}
        for i in range(n):
            row = rows[ys[i] - y0].ljust(4 * (int(qs.max()) + 1))
            cells[i] = row[4 * qs[i]: 4 * qs[i] + 3]
        # nothing else is drawn on the board lines: every label on them belongs to a cell
        labels = sum(len([t for t in r.split() if t.rstrip("*") in STACK_LABEL]) for r in rows)
        assert labels == n, f"player {p}: {labels} cell labels on the board, the side has {n} cells"
        boards.append(cells)
    return boards


@pytest.mark.parametrize("num_players", [1, 2, 3, 4])
@pytest.mark.parametrize("side", ["A", "B"])
def test_text_shows_every_board_with_its_cells_stacks_and_cubes(num_players, side):
    g = Game(num_players, side, seed=7)
    # every stack kind somewhere, and a cube on a few cells, differently for each player
    codes = list(range(15))
    for p in range(num_players):
        for i in range(g.num_cells):
            set_stack(g, p, i, codes[(i + 3 * p) % 15])
        for i in range(p, g.num_cells, 4):
            set_cube(g, p, i)
    boards = text_boards(g)
    assert len(boards) == num_players
    for p, cells in enumerate(boards):
        assert len(cells) == g.num_cells == (23 if side == "A" else 25)
        for i, text in cells.items():
            assert text[:2] == STACK_LABEL[g.field("stack")[p, i]], f"player {p} cell {i}: {text!r}"
            has_cube = bool((int(g.field("cubes")[p]) >> i) & 1)
            assert (text[2] == "*") == has_cube, f"player {p} cell {i}: {text!r}, cube {has_cube}"


def test_text_matches_played_games(played_games):
    cubes_seen = 0
    for g in played_games:
        s = str(g)
        assert f"{g.num_players}p  side {g.side}" in s
        assert ("(game over)" in s) == g.is_over
        for p, cells in enumerate(text_boards(g)):
            for i, text in cells.items():
                assert text[:2] == STACK_LABEL[g.field("stack")[p, i]]
                assert (text[2] == "*") == bool((int(g.field("cubes")[p]) >> i) & 1)
            cubes_seen += sum(t[2] == "*" for t in cells.values())
    assert cubes_seen > 0, "the played games should hold cubes, else the cube check tested nothing"


def test_text_of_a_new_board_is_all_empty():
    g = Game(2, "A", seed=1)
    for cells in text_boards(g):
        assert set(cells.values()) == {".. "}


# ---- picture -------------------------------------------------------------------------------------------

def pixel(img: np.ndarray, xy: tuple[int, int]) -> tuple[int, ...]:
    x, y = xy
    return tuple(int(v) for v in img[y, x])


def assert_cells_match(game: Game, img: np.ndarray, width: int | None = None) -> None:
    lay = table_layout(game, width)
    assert img.shape == (lay.height, lay.width, 3)
    for p in range(game.num_players):
        cube_mask = int(game.field("cubes")[p])
        for i in range(game.num_cells):
            code = int(game.field("stack")[p, i])
            want = EMPTY_RGB if code == 0 else TOKEN_RGB[TOP_COLOUR[code]]
            got = pixel(img, cell_centre(lay, p, i))
            assert got == want, f"player {p} cell {i} (stack {code}): centre {got}, expected {want}"
            cx, cy = cell_centre(lay, p, i)
            mark = pixel(img, (cx, int(round(cy - CUBE_MARK_OFFSET * lay.hex_radius))))
            assert (mark == (255, 255, 255)) == bool((cube_mask >> i) & 1), f"player {p} cell {i}: cube mark"


@pytest.mark.parametrize("num_players,side,spirits", CONFIGS)
def test_picture_of_a_new_game(num_players, side, spirits):
    g = Game(num_players, side, spirits, seed=3)
    img = render_rgb(g)
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert img.shape[0] > 200 and img.shape[1] > 400
    assert_cells_match(g, img)


def test_picture_cells_match_played_games(played_games):
    cubes = 0
    for g in played_games:
        assert_cells_match(g, render_rgb(g))
        cubes += sum(bin(int(c)).count("1") for c in g.field("cubes"))
    assert cubes > 0


def test_picture_is_deterministic(played_games):
    for g in played_games[:6]:
        a = render_rgb(g)
        assert np.array_equal(a, render_rgb(g))
        assert np.array_equal(a, render_rgb(g.clone()))
        assert np.array_equal(a, render_rgb(Game.replay(g.record())))


def test_picture_changes_where_a_token_is_placed():
    g = Game(2, "A", seed=11)
    space = next(a for a in g.legal_actions() if A.decode(a)[0] == "take_tokens")
    g.step(space)
    before = render_rgb(g)
    place = next(a for a in g.legal_actions() if A.decode(a)[0] == "place_token")
    _, colour, cell = A.decode(place)
    g.step(place)
    after = render_rgb(g)
    assert before.shape == after.shape and not np.array_equal(before, after)
    xy = cell_centre(table_layout(g), 0, cell)
    assert pixel(before, xy) == EMPTY_RGB
    assert pixel(after, xy) == TOKEN_RGB[colour]
    assert g.field("stack")[0, cell] == STACK_AFTER[0, colour]


@pytest.mark.parametrize("a,b", [(S_TREE1, S_TREE2), (S_TREE2, S_TREE3), (S_MOUNTAIN1, S_MOUNTAIN2),
                                 (S_RED1, S_RED_RED), (S_BROWN_RED, S_GRAY_RED), (S_BROWN1, S_TREE2)])
def test_stacks_with_the_same_top_or_base_look_different(a, b):
    """Height and kind are visible: the cell's picture differs between the two stacks."""
    pics = []
    for code in (a, b):
        g = Game(1, "B", seed=2)
        set_stack(g, 0, 5, code)
        lay = table_layout(g)
        cx, cy = cell_centre(lay, 0, 5)
        R = int(lay.hex_radius)
        pics.append(render_rgb(g)[cy - R:cy + R, cx - R:cx + R])
    assert not np.array_equal(pics[0], pics[1])


@pytest.mark.parametrize("width", [300, 640, 1600])
def test_width_scales_the_picture(width):
    g = play(Game(4, "B", True, seed=5), 120, seed=5)
    img = render_rgb(g, width)
    assert img.shape[1] == width and img.dtype == np.uint8
    assert_cells_match(g, img, width)


@pytest.mark.parametrize("bad", [0, 100, -5, 500.5, "800", True])
def test_bad_width_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="width"):
        render_rgb(Game(2, seed=1), bad)


def test_cell_centre_rejects_unknown_player_or_cell():
    lay = table_layout(Game(2, "A", seed=1))
    with pytest.raises(ValueError, match="player"):
        cell_centre(lay, 2, 0)
    with pytest.raises(ValueError, match="cell"):
        cell_centre(lay, 0, 23)


def test_cell_centres_follow_the_axial_layout():
    """Flat-top columns: x grows with q, y with r + q/2, and neighbouring centres are equally far apart."""
    g = Game(1, "B", seed=1)
    lay = table_layout(g)
    side = g.side_code
    n = g.num_cells
    pts = np.array([cell_centre(lay, 0, i) for i in range(n)], dtype=float)
    q, r = CELL_QR[side, :n, 0], CELL_QR[side, :n, 1]
    for i in range(n):
        for j in range(n):
            if (q[j], r[j]) in ((q[i], r[i] + 1), (q[i] + 1, r[i]), (q[i] + 1, r[i] - 1)):
                assert abs(np.hypot(*(pts[j] - pts[i])) - np.sqrt(3) * lay.hex_radius) < 1.5
    assert np.all(np.diff(pts[np.argsort(q, kind="stable"), 0]) >= 0)


def test_game_over_is_shown_in_the_winner_colour():
    g = play(Game(2, "A", seed=21), 10**6, seed=21)
    assert g.is_over
    prev = Game.replay({**g.record(), "actions": g.history[:-1]})
    assert not prev.is_over

    def winner_pixels(game: Game) -> int:
        return int(np.all(render_rgb(game) == np.array(WINNER_RGB, dtype=np.uint8), axis=2).sum())

    assert winner_pixels(prev) == 0
    assert winner_pixels(g) > 500  # status line, winner's panel border and title


@pytest.mark.parametrize("num_players,side", [(1, "A"), (2, "B"), (3, "A"), (4, "B")])
@pytest.mark.parametrize("width", [None, 333, 900])
def test_every_stack_kind_and_cube_shows_at_its_cell(num_players, side, width):
    """All 15 stacks (buildings, trees on trunks, mountains ...) with and without cubes, at several sizes."""
    g = Game(num_players, side, spirits=True, seed=9)
    for p in range(num_players):
        for i in range(g.num_cells):
            set_stack(g, p, i, (i + 2 * p) % 15)
            if (i + p) % 3 == 0:
                set_cube(g, p, i)
    assert_cells_match(g, render_rgb(g, width), width)
