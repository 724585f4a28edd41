"""Component facts (tokens, boards, cards), loaded once from the package's JSON and validated at import.

Everything else in the package reads the game's data from here, so a transcription error fails loudly at
import rather than silently skewing scores.
"""
from __future__ import annotations

import json
from pathlib import Path

_PATH = Path(__file__).with_name("data") / "components.json"
_RAW = json.loads(_PATH.read_text())

#: Token colours, in the engine's colour-code order (code = index).
COLOURS: tuple[str, ...] = ("blue", "gray", "brown", "green", "yellow", "red")
#: Tokens of each colour in the pouch at the start, by colour code.
TOKEN_COUNTS: tuple[int, ...] = tuple(int(_RAW["tokens"][c]) for c in COLOURS)
#: Board sides, in side-code order.
SIDES: tuple[str, ...] = ("A", "B")
#: Axial (q, r) cells of each side, in cell-index order.
BOARD_CELLS: dict[str, tuple[tuple[int, int], ...]] = {
    s: tuple((int(q), int(r)) for q, r in _RAW["boards"][s]["cells"]) for s in SIDES
}
#: Pattern labels, in habitat-class order.
LABELS: tuple[str, ...] = (
    "blue", "yellow", "tree1", "tree2", "tree3", "mountain1", "mountain2", "mountain3", "building",
)
ANIMAL_CARDS: tuple[dict, ...] = tuple(_RAW["animal_cards"])
SPIRIT_CARDS: tuple[dict, ...] = tuple(_RAW["spirit_cards"])
#: Every card by id (1..32 animals, 33..42 Nature's Spirits).
CARDS: dict[int, dict] = {c["id"]: c for c in ANIMAL_CARDS + SPIRIT_CARDS}
NUM_ANIMAL_CARDS = 32
NUM_SPIRIT_CARDS = 10
SPIRIT_OF = ("blue", "yellow", "tree", "mountain", "building")

_DIRS = ((0, -1), (1, -1), (1, 0), (0, 1), (-1, 1), (-1, 0))


def _connected(cells: list[tuple[int, int]]) -> bool:
    todo, seen = [cells[0]], {cells[0]}
    while todo:
        q, r = todo.pop()
        for dq, dr in _DIRS:
            n = (q + dq, r + dr)
            if n in cells and n not in seen:
                seen.add(n)
                todo.append(n)
    return len(seen) == len(cells)


def _validate() -> None:
    def check(ok: bool, what: str) -> None:
        if not ok:
            raise ValueError(f"{_PATH.name}: {what}")

    check(sum(TOKEN_COUNTS) == 120, f"tokens sum to {sum(TOKEN_COUNTS)}, expected 120")
    check(len(BOARD_CELLS["A"]) == 23 and len(BOARD_CELLS["B"]) == 25, "Side A needs 23 cells, Side B 25")
    for s in SIDES:
        cells = list(BOARD_CELLS[s])
        check(len(set(cells)) == len(cells) and _connected(cells), f"side {s} cells repeat or are disconnected")
    check(sorted(c["id"] for c in ANIMAL_CARDS) == list(range(1, 33)), "animal card ids must be 1..32")
    check(sorted(c["id"] for c in SPIRIT_CARDS) == list(range(33, 43)), "spirit card ids must be 33..42")
    check(sum(len(c["points"]) for c in ANIMAL_CARDS) == 96, "animal cards must hold 96 cube spaces")
    for c in ANIMAL_CARDS + SPIRIT_CARDS:
        cells = [(q, r) for q, r, _ in c["pattern"]]
        name = f"card {c['id']} ({c['name']})"
        check(2 <= len(cells) <= 4 and len(set(cells)) == len(cells), f"{name}: pattern needs 2-4 distinct cells")
        check(_connected(cells), f"{name}: pattern is not connected")
        check(tuple(c["cube"]) in cells, f"{name}: cube cell is not in the pattern")
        check(all(lab in LABELS for _, _, lab in c["pattern"]), f"{name}: unknown pattern label")
        if "points" in c:
            pts = c["points"]
            check(2 <= len(pts) <= 5 and all(a < b for a, b in zip(pts, pts[1:])), f"{name}: bad points track")
    for c in SPIRIT_CARDS:
        sc = c["scoring"]
        check(sc["kind"] in ("groups", "count") and sc["of"] in SPIRIT_OF, f"spirit {c['id']}: bad scoring")
        check(c["category"] == sc["kind"], f"spirit {c['id']}: category differs from scoring kind")
        # the scoring kernel implements these combinations only
        allowed = ("blue", "yellow", "building") if sc["kind"] == "groups" else ("blue", "tree", "mountain")
        check(sc["of"] in allowed, f"spirit {c['id']}: {sc['kind']} of {sc['of']} is not a rule the engine scores")


_validate()
