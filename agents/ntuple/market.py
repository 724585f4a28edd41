"""Layout 4's market features (issue 48): for each card the mover holds and each face-up card, how near its
habitat is on the mover's board and how well the central board's remaining tokens supply what that habitat still
lacks. Pure jitted functions over a state; `kernels` adds their table look-ups to layout 2's.

Why: the board and card shapes cannot tie "card k needs 2 yellow" to "central space s offers 2 yellow"; the linear
part sees the market only as counts. A look-up per card id of (distance, best supply, spaces that supply) can.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import cards as C
from harmonies_env import stacks as ST
from harmonies_env import state as S
from harmonies_env.cards import NUM_CARDS

from ..greedy.habitats import MAX_ROTATIONS, need_grids, rotation_levels

_NC = NUM_CARDS + 1
#: The two market tables, after layout 2's: a table per card id (1..42, row 0 unused) for the cards the mover holds,
#: then one for the face-up cards, each indexed by (distance 0/1/2/3+, best supply 0..3, spaces supplying 0/1/2+).
MARKET_SHAPES = ("held_supply", "market_supply")
#: Rows of one card's table: 4 distances x 4 supplies x 3 space counts.
MARKET_KEYS = 4 * 4 * 3
#: Weights of the two tables together.
MARKET_WEIGHTS = 2 * _NC * MARKET_KEYS
#: Look-ups a state selects: one per held card and one per face-up card.
MARKET_ACTIVE = S.MAX_SLOTS + S.MAX_MARKET
#: A card's need row (`card_need`): the distance, then the tokens missing by colour, then the building bases.
NEED_ROW = 8
#: Scratch of one `card_need` call (each rotation's cost levels, then one placement's missing tokens), then a need
#: row `market_sum` does not keep.
_ROW_AT = 4 * MAX_ROTATIONS + NEED_ROW - 1
CARD_SCRATCH = _ROW_AT + NEED_ROW
_WILD = ST.NUM_COLOURS  # the missing-colour slot of a building's base: a gray, brown or red token


def _missing() -> np.ndarray:
    """MISSING[stack code, habitat class, c] -> tokens of colour c (c = 6: a building's base, any of gray, brown and
    red) still to stack on that code to make the class (all 0 where it cannot)."""
    out = np.zeros((ST.NUM_STACKS, 9, ST.NUM_COLOURS + 1), dtype=np.int64)
    for code, stack in enumerate(ST.STACKS):
        for cls in range(9):
            targets = ([ST.S_BROWN_RED, ST.S_GRAY_RED, ST.S_RED_RED] if C.CLASS_STACK[cls] < 0
                       else [int(C.CLASS_STACK[cls])])
            rests = [ST.STACKS[t][len(stack):] for t in targets if ST.STACKS[t][: len(stack)] == stack]
            if not rests:
                continue
            least = min(len(r) for r in rests)
            rests = sorted({r for r in rests if len(r) == least})
            if len(rests) > 1:  # an empty cell becomes a building: a red token on any of gray, brown and red
                assert code == ST.EMPTY and cls == C.BUILDING_CLASS and least == 2, (code, cls, rests)
                out[code, cls, ST.RED] = 1
                out[code, cls, _WILD] = 1
                continue
            for name in rests[0]:
                out[code, cls, ST.colour_code(name)] += 1
    return out


#: MISSING[stack code, habitat class] -> the tokens by colour (then building bases) still to stack there. int64
#: (15, 9, 7); its sum is `habitats.NEED_K` where that is >= 0.
MISSING = _missing()
_BASE = (1 << ST.GRAY) | (1 << ST.BROWN) | (1 << ST.RED)
_DEBRUIJN = 0x03F79D71B4CB0A89  # (bit * this) >> 58 differs for each of the 64 single bits
#: GRID_CELL[side, (g * _DEBRUIJN >> 58) & 63] -> the board cell at grid bit g of the habitat matcher's grid (-1:
#: none). int64 (2, 64)
GRID_CELL = np.full((2, 64), -1, dtype=np.int64)
for _side in range(2):
    _cell_bits = [b for b in range(63) if (int(C.GRID_CELLS[_side]) >> b) & 1]  # cell i: the i-th lowest of them
    for _b in range(63):
        GRID_CELL[_side, (((1 << _b) * _DEBRUIJN) & (2**64 - 1)) >> 58] = (
            _cell_bits.index(_b) if _b in _cell_bits else -1)


@njit(cache=True)
def card_need(s, p: int, card: int, grid_need, out, o: int, scratch) -> None:
    """What seat p's board in s lacks for `card`'s habitat, into out[o: o + NEED_ROW]: min(3, `habitat_distance`)
    (3 = three or more tokens, or never), then per colour (and building base, `MISSING`) the most tokens of it that
    one of the nearest placements still lacks (all 0 at distance 0 or beyond 3). grid_need: `need_grids` of p's board.

    Why the most per colour over the nearest placements: one row per card and board, shared by every candidate that
    leaves the same board; a space that supplies any nearest placement's tokens counts. The nearest placements are
    found on the matcher's grid, every position of a rotation at once (`rotation_levels`, as `habitat_near`), and only
    they are walked cell by cell. scratch: int64 (>= CARD_SCRATCH,)."""
    side = s[S.SIDE]
    free = ~C.to_grid(side, s[S.CUBES + p])
    rot = scratch[:4 * MAX_ROTATIONS]
    lack = scratch[4 * MAX_ROTATIONS: _ROW_AT]
    r0 = C.GRID_ROT_START[side, card]
    r1 = C.GRID_ROT_START[side, card + 1]
    d = 4  # nearest cost; 4: none within 3 tokens
    for r in range(r0, r1):
        e0, e1, e2, e3 = rotation_levels(side, r, free, grid_need)
        if e0:
            d = 0
            break
        q = 4 * (r - r0)
        rot[q + 1] = e1
        rot[q + 2] = e2
        rot[q + 3] = e3
        if e1 and d > 1:
            d = 1
        elif e2 and d > 2:
            d = 2
        elif e3 and d > 3:
            d = 3
    for c in range(NEED_ROW):
        out[o + c] = 0
    out[o] = min(d, 3)
    if d == 0 or d == 4:
        return
    for r in range(r0, r1):
        w = rot[4 * (r - r0) + d]
        while w:
            pos = w & -w
            w &= w - 1
            for c in range(NEED_ROW - 1):
                lack[c] = 0
            for j in range(4):
                cls = C.GRID_ROT_CLASS[side, r, j]
                if cls < 0:
                    break
                g = _shift(pos, C.GRID_ROT_OFF[side, r, j])
                code = S.stack_at(s, p, GRID_CELL[side, ((g * _DEBRUIJN) >> 58) & 63])
                for c in range(NEED_ROW - 1):
                    lack[c] += MISSING[code, cls, c]
            for c in range(NEED_ROW - 1):
                if lack[c] > out[o + 1 + c]:
                    out[o + 1 + c] = lack[c]


@njit(cache=True, inline="always")
def _shift(m: int, o: int) -> int:
    """m shifted by o grid bits (left for o >= 0): a placement's cube cell to its pattern cell at offset o."""
    return m << o if o >= 0 else m >> -o


@njit(cache=True)
def supply_key(s, row, o: int) -> int:
    """A card's row in its table (< MARKET_KEYS) from its need row row[o: o + NEED_ROW] (`card_need`) and the
    central board of s: (distance, the most of the missing tokens one central space's tokens supply (0..3), how many
    spaces supply at least one: 0, 1, 2+)."""
    d = row[o]
    best = 0
    spaces = 0
    if d > 0:
        for sp in range(s[S.NUM_SPACES]):
            got = 0
            wild = row[o + 1 + _WILD]
            used = 0  # tokens of this space already matched, by colour (a 3-token space: 2 bits a colour)
            for t in range(3):
                col = s[S.CENTRAL + 3 * sp + t]
                if col < 0:
                    continue
                if row[o + 1 + col] > ((used >> (2 * col)) & 3):
                    used += 1 << (2 * col)
                    got += 1
                elif wild > 0 and (_BASE >> col) & 1:
                    wild -= 1
                    got += 1
            if got > 0:
                spaces += 1
                if got > best:
                    best = got
    return (d * 4 + best) * 3 + min(spaces, 2)


@njit(cache=True)
def market_keys(s, p: int, out, rows) -> int:
    """The market tables' rows (offsets from their start, < MARKET_WEIGHTS) that seat p's afterstate s selects, into
    out (>= MARKET_ACTIVE,): one per card p holds, then one per face-up card; returns how many. rows int64
    (>= NEED_ROW,) scratch."""
    need = np.empty((9, 4), dtype=np.int64)
    need_grids(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], s[S.CUBES + p], need)
    scratch = np.empty(CARD_SCRATCH, dtype=np.int64)
    k = 0
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card >= 0:
            card_need(s, p, card, need, rows, 0, scratch)
            out[k] = card * MARKET_KEYS + supply_key(s, rows, 0)
            k += 1
    for i in range(S.MAX_MARKET):
        card = s[S.MARKET + i]
        if card >= 0:
            card_need(s, p, card, need, rows, 0, scratch)
            out[k] = (_NC + card) * MARKET_KEYS + supply_key(s, rows, 0)
            k += 1
    return k


@njit(cache=True)
def market_sum(s, p: int, w, lo: int, v: float, need, rows, done, local, scratch) -> float:
    """v + the market tables' weights (starting at w[lo]) that seat p's afterstate s selects, added in `market_keys`
    order. The need rows are shared by every afterstate of one board: rows int64 (MARKET_ACTIVE x NEED_ROW,) and done
    bool (MARKET_ACTIVE,) are that board's (a card's row is made once, `card_need`), at the card's index in local
    int64 (_NC,) (-1: none yet; local[0] counts the cards given one: every afterstate of one turn holds or shows at
    most MARKET_ACTIVE cards; any more are valued without keeping their rows); need int64 (9, 4) and scratch int64
    (>= CARD_SCRATCH,) scratch."""
    masks = False
    for h in range(S.MAX_SLOTS + S.MAX_MARKET):
        held = h < S.MAX_SLOTS
        card = s[S.SLOT + S.MAX_SLOTS * p + h] if held else s[S.MARKET + h - S.MAX_SLOTS]
        if card < 0:
            continue
        t = card if held else _NC + card
        c = local[card]
        if c < 0 and local[0] < MARKET_ACTIVE:
            c = local[0]
            local[card] = c
            local[0] = c + 1
        if c < 0:  # more cards than a turn can show: this one's row is not kept
            need_grids(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], s[S.CUBES + p], need)
            masks = True
            card_need(s, p, card, need, scratch, _ROW_AT, scratch)
            v += float(w[lo + t * MARKET_KEYS + supply_key(s, scratch, _ROW_AT)])
            continue
        if not done[c]:
            if not masks:
                need_grids(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], s[S.CUBES + p], need)
                masks = True
            card_need(s, p, card, need, rows, c * NEED_ROW, scratch)
            done[c] = True
        v += float(w[lo + t * MARKET_KEYS + supply_key(s, rows, c * NEED_ROW)])
    return v
