"""A slow, plain-Python statement of the rules (rules.md), used by the tests as an oracle for the kernels.

Nothing here imports the engine: boards, cards and patterns come from the component JSON in tests/data
(the documented reference transcription, with full stacks per pattern cell), and every rule is written
out the way rules.md says it, over dicts and sets. Readability beats speed here.

A board is a dict {(q, r): (colour, ...) bottom -> top}; a missing cell is empty.
Held cards are a list of (card_id, cubes_placed). river_loops: "rulebook" (default) or "bga", as docs/rules.md
states Board Game Arena's reading of a river loop.
"""
from __future__ import annotations

import json
from collections import deque
from pathlib import Path

DATA = json.loads((Path(__file__).parent / "data" / "harmonies-components.json").read_text())

COLOURS = ("blue", "gray", "brown", "green", "yellow", "red")
#: The 15 stacks rules.md lists (bottom -> top), in its order.
LEGAL_STACKS = (
    (), ("blue",), ("yellow",), ("green",), ("gray",), ("gray", "gray"), ("gray", "gray", "gray"),
    ("brown",), ("brown", "brown"), ("brown", "green"), ("brown", "brown", "green"),
    ("red",), ("brown", "red"), ("gray", "red"), ("red", "red"),
)
#: N, NE, SE, S, SW, NW as axial offsets.
DIRECTIONS = ((0, -1), (1, -1), (1, 0), (0, 1), (-1, 1), (-1, 0))
BOARD_CELLS = {side: [tuple(c) for c in DATA["boards"][side]["cells"]] for side in ("A", "B")}
CARDS = {c["id"]: c for c in DATA["animal_cards"] + DATA["spirit_cards"]}
ANIMAL_IDS = tuple(c["id"] for c in DATA["animal_cards"])
SPIRIT_IDS = tuple(c["id"] for c in DATA["spirit_cards"])

Cell = tuple[int, int]
Board = dict[Cell, tuple[str, ...]]


# ---- geometry --------------------------------------------------------------------------------------------

def neighbours(side: str, cell: Cell) -> set[Cell]:
    """The board cells adjacent to `cell` (the board's edge has nothing beyond it)."""
    q, r = cell
    on_board = set(BOARD_CELLS[side])
    return {(q + dq, r + dr) for dq, dr in DIRECTIONS if (q + dq, r + dr) in on_board}


def groups(side: str, cells: set[Cell]) -> list[set[Cell]]:
    """Connected groups of `cells` under board adjacency."""
    todo = set(cells)
    out = []
    while todo:
        start = todo.pop()
        group = {start}
        frontier = [start]
        while frontier:
            c = frontier.pop()
            for n in neighbours(side, c):
                if n in todo:
                    todo.discard(n)
                    group.add(n)
                    frontier.append(n)
        out.append(group)
    return out


def distances_from(side: str, start: Cell, within: set[Cell]) -> dict[Cell, int]:
    """Breadth-first shortest-path step counts from `start` to every cell reachable inside `within`."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        c = queue.popleft()
        for n in neighbours(side, c):
            if n in within and n not in dist:
                dist[n] = dist[c] + 1
                queue.append(n)
    return dist


# ---- stacking --------------------------------------------------------------------------------------------

def can_place(stack: tuple[str, ...], colour: str) -> bool:
    """May a token of `colour` go on top of `stack`? The bullet list of rules.md, literally."""
    if len(stack) == 0:
        return True  # always allowed on an empty cell
    if colour == "gray":
        return stack in (("gray",), ("gray", "gray"))
    if colour == "brown":
        return stack == ("brown",)
    if colour == "green":
        return stack in (("brown",), ("brown", "brown"))
    if colour == "red":
        return stack in (("brown",), ("gray",), ("red",))
    return False  # blue and yellow only ever go on an empty cell


def top(stack: tuple[str, ...]) -> str | None:
    return stack[-1] if stack else None


def is_tree(stack) -> bool:
    return len(stack) >= 1 and stack[-1] == "green" and all(t == "brown" for t in stack[:-1])


def is_mountain(stack) -> bool:
    return len(stack) >= 1 and all(t == "gray" for t in stack)


def is_building(stack) -> bool:
    """Red on exactly one brown, gray or red token; a lone red is not a Building."""
    return len(stack) == 2 and stack[1] == "red" and stack[0] in ("brown", "gray", "red")


# ---- habitats --------------------------------------------------------------------------------------------

def rotate(q: int, r: int, k: int) -> Cell:
    """k x 60 degrees clockwise: (q, r) -> (-r, q + r)."""
    for _ in range(k % 6):
        q, r = -r, q + r
    return q, r


def cell_matches(stack: tuple[str, ...], pattern_cell: dict) -> bool:
    """A pattern cell stands on a board cell: the exact stack, or any Building for a building cell."""
    if pattern_cell["label"] == "building":
        return is_building(stack)
    return tuple(stack) == tuple(pattern_cell["stack"])


def placements(side: str, card_id: int) -> set[tuple[frozenset, Cell]]:
    """Every way the card's pattern fits on the board: {(frozenset((cell, pattern_index)), cube_cell)}.

    6 rotations, every translation that keeps every pattern cell on the board. Pattern cells are
    identified by their index in the card's pattern list, so a placement also says what each cell needs.
    """
    card = CARDS[card_id]
    on_board = set(BOARD_CELLS[side])
    out = set()
    for k in range(6):
        rotated = [rotate(*pc["cell"], k) for pc in card["pattern"]]
        for target in BOARD_CELLS[side]:  # put the first pattern cell on each board cell
            dq, dr = target[0] - rotated[0][0], target[1] - rotated[0][1]
            cells = [(q + dq, r + dr) for q, r in rotated]
            if not all(c in on_board for c in cells):
                continue
            cube = [c for c, pc in zip(cells, card["pattern"]) if pc["cube"]]
            assert len(cube) == 1, f"card {card_id} needs exactly one cube cell"
            # key by label, not index, so two rotations that put equal labels on equal cells coincide
            key = frozenset((c, pc["label"]) for c, pc in zip(cells, card["pattern"]))
            out.add((key, cube[0]))
    return out


def habitat_cells(side: str, board: Board, cubes: set[Cell], card_id: int) -> set[Cell]:
    """Cells that can take a cube of `card_id` now: some placement stands, and its cube cell has no cube."""
    card = CARDS[card_id]
    by_label = {pc["label"]: pc for pc in card["pattern"]}
    out = set()
    for cells, cube in placements(side, card_id):
        if cube in cubes:
            continue
        if all(cell_matches(board.get(c, ()), by_label[label]) for c, label in cells):
            out.add(cube)
    return out


# ---- scoring ---------------------------------------------------------------------------------------------

HEIGHT_POINTS = {1: 1, 2: 3, 3: 7}
RIVER_POINTS = {0: 0, 1: 0, 2: 2, 3: 5, 4: 8, 5: 11, 6: 15}


def river_points(length: int) -> int:
    return RIVER_POINTS[length] if length <= 6 else 15 + 4 * (length - 6)


def loop_length(side: str, group: set[Cell]) -> int:
    """BGA's reading (docs/rules.md): the most tokens of the blue group around one hole, 0 without a hole.

    Spill outward from the board's edge (cells with fewer than 6 neighbours on the board) through every cell that
    is not in the group; the cells never reached are enclosed by the group. Each connected set of them is a hole,
    and the tokens around it are the group's cells that touch it.
    """
    free = set(BOARD_CELLS[side]) - group
    reached = {c for c in free if len(neighbours(side, c)) < 6}
    frontier = list(reached)
    while frontier:
        for n in neighbours(side, frontier.pop()):
            if n in free and n not in reached:
                reached.add(n)
                frontier.append(n)
    holes = groups(side, free - reached)
    return max((len({n for c in hole for n in neighbours(side, c)} & group) for hole in holes), default=0)


def river_length(side: str, board: Board, river_loops: str = "rulebook") -> int:
    """Best river: over each blue group, the largest shortest-path distance between two of its cells, plus 1;
    with river_loops "bga", the larger of that and the group's `loop_length`."""
    assert river_loops in ("rulebook", "bga")
    blue = {c for c, s in board.items() if tuple(s) == ("blue",)}
    best = 0
    for group in groups(side, blue):
        for c in group:
            best = max(best, max(distances_from(side, c, group).values()) + 1)
        if river_loops == "bga":
            best = max(best, loop_length(side, group))
    return best


def score_trees(side: str, board: Board) -> int:
    return sum(HEIGHT_POINTS[len(s)] for s in board.values() if is_tree(s))


def score_mountains(side: str, board: Board) -> int:
    mountains = {c for c, s in board.items() if is_mountain(s)}
    return sum(HEIGHT_POINTS[len(board[c])] for c in mountains if neighbours(side, c) & mountains)


def score_fields(side: str, board: Board) -> int:
    yellow = {c for c, s in board.items() if top(s) == "yellow"}
    return 5 * sum(1 for g in groups(side, yellow) if len(g) >= 2)


def score_buildings(side: str, board: Board) -> int:
    total = 0
    for c, s in board.items():
        if is_building(s):
            colours = {top(board.get(n, ())) for n in neighbours(side, c)} - {None}
            if len(colours) >= 3:
                total += 5
    return total


def score_water(side: str, board: Board, river_loops: str = "rulebook") -> int:
    if side == "A":
        return river_points(river_length(side, board, river_loops))
    land = {c for c in BOARD_CELLS[side] if top(board.get(c, ())) != "blue"}
    return 5 * max(1, len(groups(side, land)))


def score_animals(cards) -> int:
    total = 0
    for card_id, placed in cards:
        if card_id in ANIMAL_IDS and placed > 0:
            total += CARDS[card_id]["points"][placed - 1]
    return total


def spirit_points(side: str, board: Board, card_id: int) -> int:
    """The Nature's Spirit card's own rule (as printed; see harmonies-components.md), cube placed or not."""
    yellow = {c for c, s in board.items() if top(s) == "yellow"}
    blue = {c for c, s in board.items() if top(s) == "blue"}
    buildings = {c for c, s in board.items() if is_building(s)}
    trees = [len(s) for s in board.values() if is_tree(s)]  # heights
    mountains = [len(s) for s in board.values() if is_mountain(s)]  # heights, isolated ones included
    name = CARDS[card_id]["name"]
    if name == "Lion":  # 2 per group of 1-2 yellow, 10 per group of 3+
        return sum(10 if len(g) >= 3 else 2 for g in groups(side, yellow))
    if name == "Butterfly":  # 5 per yellow group, any size
        return 5 * len(groups(side, yellow))
    if name == "Deer":  # 4 per tree of height 2 or 3
        return 4 * sum(1 for h in trees if h in (2, 3))
    if name == "Owl":  # 3 per tree of height 1 or 2, 1 per tree of height 3
        return sum(3 if h in (1, 2) else 1 for h in trees)
    if name == "Cat":  # 4 per group of Buildings, any size
        return 4 * len(groups(side, buildings))
    if name == "Crane":  # 6 per group of 2+ Buildings
        return 6 * sum(1 for g in groups(side, buildings) if len(g) >= 2)
    if name == "Ram":  # 4 per mountain of height 2 or 3
        return 4 * sum(1 for h in mountains if h in (2, 3))
    if name == "Marmot":  # 3 per mountain of height 1 or 2, 1 per mountain of height 3
        return sum(3 if h in (1, 2) else 1 for h in mountains)
    if name == "Dragonfly":  # 7 per group of 2+ blue
        return 7 * sum(1 for g in groups(side, blue) if len(g) >= 2)
    if name == "Tortoise":  # 2 per blue token
        return 2 * len(blue)
    raise KeyError(f"no Spirit rule for card {card_id} ({name})")


def score(side: str, board: Board, cards=(), river_loops: str = "rulebook") -> dict[str, int]:
    """Full breakdown, same category names as the engine's CATEGORIES."""
    board = {tuple(c): tuple(s) for c, s in board.items() if len(s)}
    for c, s in board.items():
        assert c in BOARD_CELLS[side], f"cell {c} is not on side {side}"
        assert s in LEGAL_STACKS, f"illegal stack {s} at {c}"
    out = {
        "trees": score_trees(side, board),
        "mountains": score_mountains(side, board),
        "fields": score_fields(side, board),
        "buildings": score_buildings(side, board),
        "water": score_water(side, board, river_loops),
        "animals": score_animals(cards),
        "spirit": sum(spirit_points(side, board, cid) for cid, placed in cards if cid in SPIRIT_IDS and placed == 1),
    }
    out["total"] = sum(out.values())
    return out
