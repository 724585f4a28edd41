"""The flat discrete action space: one micro-action per index, identical for every configuration.

| index range | count | meaning |
|---|---|---|
| 0 - 4     | 5   | take the 3 tokens of central space s (solo: s < 3) |
| 5 - 154   | 150 | place a held token of colour c on cell i: 5 + 25 c + i (blue gray brown green yellow red) |
| 155 - 159 | 5   | take the face-up Animal card in market slot m (solo: m < 3) |
| 160 - 259 | 100 | place a cube from held card slot h on cell i: 160 + 25 h + i |
| 260 - 261 | 2   | keep dealt Spirit card j (first turn, Spirit variant) |
| 262 - 266 | 5   | solo: discard face-up card m, replace it from the draw pile, and end the turn |
| 267       | 1   | end the turn |

Cells are numbered as in `geometry` (Side A 0-22, Side B 0-24). Optional actions (take a card, place
cubes) interleave freely with the three token placements; the turn ends only by an explicit action, once
the three tokens are placed (or the tokens still held can go nowhere: they are then discarded).
"""
from __future__ import annotations

from .geometry import MAX_CELLS

TAKE_TOKENS = 0
PLACE_TOKEN = 5
TAKE_CARD = PLACE_TOKEN + 6 * MAX_CELLS  # 155
PLACE_CUBE = TAKE_CARD + 5  # 160
KEEP_SPIRIT = PLACE_CUBE + 4 * MAX_CELLS  # 260
SOLO_REPLACE = KEEP_SPIRIT + 2  # 262
END_TURN = SOLO_REPLACE + 5  # 267
NUM_ACTIONS = END_TURN + 1  # 268

KINDS = ("take_tokens", "place_token", "take_card", "place_cube", "keep_spirit", "solo_replace", "end_turn")


def decode(a: int) -> tuple[str, int, int]:
    """Action index -> (kind, first argument, second argument); unused arguments are -1."""
    a = int(a)
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action {a} is outside the action space 0..{NUM_ACTIONS - 1}")
    if a < PLACE_TOKEN:
        return "take_tokens", a, -1
    if a < TAKE_CARD:
        c, i = divmod(a - PLACE_TOKEN, MAX_CELLS)
        return "place_token", c, i
    if a < PLACE_CUBE:
        return "take_card", a - TAKE_CARD, -1
    if a < KEEP_SPIRIT:
        h, i = divmod(a - PLACE_CUBE, MAX_CELLS)
        return "place_cube", h, i
    if a < SOLO_REPLACE:
        return "keep_spirit", a - KEEP_SPIRIT, -1
    if a < END_TURN:
        return "solo_replace", a - SOLO_REPLACE, -1
    return "end_turn", -1, -1


def take_tokens(space: int) -> int:
    return TAKE_TOKENS + space


def place_token(colour: int, cell: int) -> int:
    return PLACE_TOKEN + MAX_CELLS * colour + cell


def take_card(slot: int) -> int:
    return TAKE_CARD + slot


def place_cube(slot: int, cell: int) -> int:
    return PLACE_CUBE + MAX_CELLS * slot + cell


def keep_spirit(j: int) -> int:
    return KEEP_SPIRIT + j


def solo_replace(slot: int) -> int:
    return SOLO_REPLACE + slot
