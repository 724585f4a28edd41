"""Tokens and stacks: the 15 legal stacks as codes and the (stack, colour) -> stack transition table.

Stack codes (bottom -> top) follow the rulebook's list; a cell always holds exactly one of them.
"""
from __future__ import annotations

import numpy as np

from .data import COLOURS

BLUE, GRAY, BROWN, GREEN, YELLOW, RED = range(6)
NUM_COLOURS = 6

#: The 15 legal stacks, bottom -> top, by stack code.
STACKS: tuple[tuple[str, ...], ...] = (
    (), ("blue",), ("yellow",), ("green",), ("gray",), ("gray", "gray"), ("gray", "gray", "gray"),
    ("brown",), ("brown", "brown"), ("brown", "green"), ("brown", "brown", "green"),
    ("red",), ("brown", "red"), ("gray", "red"), ("red", "red"),
)
NUM_STACKS = 15
EMPTY = 0
S_BLUE, S_YELLOW, S_TREE1, S_MOUNTAIN1, S_MOUNTAIN2, S_MOUNTAIN3 = 1, 2, 3, 4, 5, 6
S_BROWN1, S_BROWN2, S_TREE2, S_TREE3 = 7, 8, 9, 10
S_RED1, S_BROWN_RED, S_GRAY_RED, S_RED_RED = 11, 12, 13, 14
#: Stack-code groups that scoring and habitats need.
TREE_STACKS = (S_TREE1, S_TREE2, S_TREE3)
MOUNTAIN_STACKS = (S_MOUNTAIN1, S_MOUNTAIN2, S_MOUNTAIN3)
BUILDING_STACKS = (S_BROWN_RED, S_GRAY_RED, S_RED_RED)

_CODE = {s: i for i, s in enumerate(STACKS)}
#: STACK_AFTER[stack, colour] -> stack code after placing that colour on top, or -1 if illegal. int64 (15, 6)
STACK_AFTER = np.full((NUM_STACKS, NUM_COLOURS), -1, dtype=np.int64)
for _s, _stack in enumerate(STACKS):
    for _c, _colour in enumerate(COLOURS):
        STACK_AFTER[_s, _c] = _CODE.get(_stack + (_colour,), -1)
#: TOP_COLOUR[stack] -> colour code of the top token, -1 for empty. int64 (15,)
TOP_COLOUR = np.array([COLOURS.index(s[-1]) if s else -1 for s in STACKS], dtype=np.int64)
#: HEIGHT[stack] -> number of tokens. int64 (15,)
HEIGHT = np.array([len(s) for s in STACKS], dtype=np.int64)
#: ACCEPTS[colour] -> bitmask over stack codes that may take a token of that colour. int64 (6,)
ACCEPTS = np.array([sum(1 << s for s in range(NUM_STACKS) if STACK_AFTER[s, c] >= 0)
                    for c in range(NUM_COLOURS)], dtype=np.int64)
#: ACCEPTED_BY[colour] -> the (at most 4) stack codes that may take a token of that colour, padded with EMPTY (which
#: takes every colour), so that a listing ORs 4 bitboards a colour instead of testing 15. int64 (6, 4)
ACCEPTED_BY = np.array([([k for k in range(NUM_STACKS) if (ACCEPTS[c] >> k) & 1] + [EMPTY] * 4)[:4]
                        for c in range(NUM_COLOURS)], dtype=np.int64)
assert all(bin(int(a)).count("1") <= 4 and (int(a) & 1) for a in ACCEPTS)  # ACCEPTED_BY holds every code


def colour_code(name: str) -> int:
    """'blue' -> 0 ... 'red' -> 5; ValueError naming the bad colour otherwise."""
    try:
        return COLOURS.index(name)
    except ValueError:
        raise ValueError(f"unknown token colour {name!r}; colours are {', '.join(COLOURS)}") from None


def stack_code(colours: list[str] | tuple[str, ...]) -> int:
    """Code of a stack given bottom -> top; ValueError if that stack cannot exist."""
    for c in colours:
        colour_code(c)
    code = _CODE.get(tuple(colours))
    if code is None:
        raise ValueError(f"impossible stack (bottom->top) {list(colours)}: legal stacks are "
                         + "; ".join("-".join(s) or "empty" for s in STACKS))
    return code


def stack_kind(code: int) -> str:
    """The landscape a stack forms, in the game's words (e.g. 'tree 3', 'building', 'mountain 2')."""
    if code in TREE_STACKS:
        return f"tree {HEIGHT[code]}"
    if code in MOUNTAIN_STACKS:
        return f"mountain {HEIGHT[code]}"
    if code in BUILDING_STACKS:
        return "building"
    return {0: "empty", 1: "water", 2: "field", 7: "trunk 1", 8: "trunk 2", 11: "red"}[code]
