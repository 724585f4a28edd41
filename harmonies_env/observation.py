"""What one player sees, as a flat float32 vector: the observation kernel shared by every environment.

`encode_observation(s, player, out)` writes seat `player`'s view of the state vector `s` into `out`
(float32 (OBS_SIZE,)); it fills every entry, so `out` may hold anything before. `observe(game, player)`
is the Python convenience. Only public facts and the observer's own secrets go in: never the draw pile's
order, the generator, or other players' Spirit cards that were dealt but not (yet) kept.

Seats are relative: block 0 is the observer's own board, blocks 1..3 the next seats in turn order
((player + k) % num_players); blocks for absent seats (fewer than 4 players) are all zero. Cells are
numbered as in `geometry` (Side A uses cells 0-22; cells 23-24 then stay zero). Counts are scaled to
about [0, 1] by the divisor given in the table.

Per-seat block (PLAYER_BLOCK = 641 floats), block k starts at k * PLAYER_BLOCK:

| offset | size | meaning |
|---|---|---|
| 0   | 375 | stacks, one-hot, code-major: [code * 25 + cell] = 1 if that cell holds stack code (0 = empty .. 14) |
| 375 | 25  | cubes: 1 where the cell holds an animal (or Spirit) cube |
| 400 | 172 | held incomplete cards, 4 slots x 43: one-hot card id - 1 (42), then cubes left / 5 |
| 572 | 42  | completed cards: 1 at card id - 1 for every card whose cubes are all on the board |
| 614 | 10  | kept Spirit, one-hot (Spirit card id - 33); all zero while choosing or with the variant off |
| 624 | 1   | the kept Spirit's cube is on the board |
| 625 | 8   | current score breakdown / 100: trees, mountains, fields, buildings, water, animals, spirit, total |
| 633 | 1   | animal cubes placed / 20 (the tie-break) |
| 634 | 1   | empty cells / 25 |
| 635 | 4   | absolute seat, one-hot (seat 0 starts each round, seat n-1 ends it) |
| 639 | 1   | this seat is in the game |
| 640 | 1   | this seat is to move |

Global part, from GLOBAL = 4 * PLAYER_BLOCK = 2564:

| offset | size | meaning |
|---|---|---|
| 2564 | 160 | face-up market, 5 slots x 32: one-hot animal card id - 1 (empty slot or slot not in play: zero) |
| 2724 | 30  | central board, 5 spaces x 6 colours: tokens of that colour on the space / 3 |
| 2754 | 6   | pouch: tokens left by colour / 30 |
| 2760 | 6   | tokens out of the game by colour / 30 |
| 2766 | 1   | draw pile size / 32 |
| 2767 | 6   | tokens in hand (taken this turn, not yet placed) by colour / 3 |
| 2773 | 1   | tokens were taken from the central board this turn |
| 2774 | 1   | an Animal card was taken this turn |
| 2775 | 5   | central space emptied this turn, one-hot |
| 2780 | 20  | own dealt Spirits while choosing, 2 x 10 one-hot (Spirit card id - 33); zero otherwise |
| 2800 | 1   | the observer must choose a Spirit now |
| 2801 | 1   | round / 25 (round = turns completed // num_players + 1) |
| 2802 | 2   | end triggered: [pouch could not refill, a board has <= 2 empty cells] |
| 2804 | 1   | game over |
| 2805 | 4   | number of players, one-hot (1..4) |
| 2809 | 1   | Side B (islands) |
| 2810 | 1   | Spirit variant on |

OBS_SIZE = 2811. `OBS_LAYOUT` holds the same table as data: (name, offset, size, meaning), per-seat rows
for block 0 (add k * PLAYER_BLOCK for block k).

Raw values: the kernels write an entry as a small integer `raw` and its divisor, so the same kernels fill a
float32 buffer (raw / divisor, the observation above) or an int16 buffer (raw itself: the batched engine's compact
`obs_dtype`, 2 bytes an entry instead of 4). `OBS_DIVISOR` (float64 (OBS_SIZE,), 1 for one-hots) holds every entry's
divisor, and `to_float32(raw)` = (raw / OBS_DIVISOR) as float32 is bit for bit the float32 encoding (each entry is
one float64 division rounded once to float32 in both). Raw values stay below 2**15 (a score below 500).

`OBS_VERSION` numbers this encoding: bump it whenever the layout or the meaning of any entry changes (an offset, a
size, a scale, what an entry counts), even when OBS_SIZE stays the same. Policies trained on the observation record
it (the PPO policy export's `observation_version`, `agents.ppo.save_policy`) and loading refuses a mismatch.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from . import stacks as ST
from . import state as S
from .actions import KEEP_SPIRIT, PLACE_CUBE, PLACE_TOKEN, SOLO_REPLACE, TAKE_CARD
from .cards import CARD_POINTS, CUBES_ON_CARD, FIRST_SPIRIT, NUM_CARDS
from .geometry import FULL_MASK, MAX_CELLS, NEIGHBOUR_MASK, lowest_cell, popcount
from .rules import seat_score
from .scoring import (
    ISLAND_POINTS,
    NUM_CATEGORIES,
    building_count,
    count_groups,
    mountain_walk,
    river_length,
    river_points,
    spirit_score,
)

NUM_SPIRITS = NUM_CARDS + 1 - FIRST_SPIRIT  # 10
NUM_ANIMALS = FIRST_SPIRIT - 1  # 32

OBS_LAYOUT: list[tuple[str, int, int, str]] = []
_DIVISORS: list[tuple[int, int, int]] = []  # (offset, size, divisor) of the scaled blocks, per-seat offsets in block 0
_off = 0
#: Divisors of the scaled entries (raw value / divisor = the float32 entry): the kernels and OBS_DIVISOR use these.
DIV_CUBES_LEFT, DIV_SCORE, DIV_ANIMAL_CUBES, DIV_CELLS = 5, 100, 20, 25
DIV_TOKENS, DIV_SUPPLY, DIV_DECK, DIV_ROUND = 3, 30, 32, 25


def _block(name: str, size: int, meaning: str, divisor: int = 1) -> int:
    global _off
    o = _off
    OBS_LAYOUT.append((name, o, size, meaning))
    if divisor != 1:
        _DIVISORS.append((o, size, divisor))
    _off += size
    return o


# ---- per-seat block (offsets relative to the block's start) ----
P_STACKS = _block("stacks", ST.NUM_STACKS * MAX_CELLS,
                  "one-hot, code-major: [code * 25 + cell] = 1 if that cell holds stack code (0 empty .. 14)")
P_CUBES = _block("cubes", MAX_CELLS, "1 where the cell holds a cube")
P_SLOTS = _block("held_cards", S.MAX_SLOTS * (NUM_CARDS + 1),
                 "4 slots x 43: one-hot card id - 1 (42), then cubes left / 5")  # divisors: OBS_DIVISOR below
P_DONE = _block("completed_cards", NUM_CARDS, "1 at card id - 1 for each card with all its cubes placed")
P_SPIRIT = _block("kept_spirit", NUM_SPIRITS, "kept Spirit one-hot (card id - 33)")
P_SPIRIT_CUBE = _block("spirit_cube_placed", 1, "the kept Spirit's cube is on the board")
P_SCORE = _block("score", NUM_CATEGORIES, "current score breakdown / 100 (trees .. spirit, total)",
                 DIV_SCORE)
P_ANIMAL_CUBES = _block("animal_cubes", 1, "animal cubes placed / 20", DIV_ANIMAL_CUBES)
P_EMPTY = _block("empty_cells", 1, "empty cells / 25", DIV_CELLS)
P_SEAT = _block("seat", S.MAX_PLAYERS, "absolute seat one-hot")
P_PRESENT = _block("present", 1, "this seat is in the game")
P_TO_MOVE = _block("to_move", 1, "this seat is to move")
PLAYER_BLOCK = _off
# ---- global part ----
GLOBAL = _off = S.MAX_PLAYERS * PLAYER_BLOCK
G_MARKET = _block("market", S.MAX_MARKET * NUM_ANIMALS, "5 slots x 32: one-hot animal card id - 1")
G_CENTRAL = _block("central", S.MAX_SPACES * 6, "5 spaces x 6 colours: tokens of that colour / 3",
                   DIV_TOKENS)
G_POUCH = _block("pouch", 6, "tokens left in the pouch by colour / 30", DIV_SUPPLY)
G_DISCARDED = _block("discarded", 6, "tokens out of the game by colour / 30", DIV_SUPPLY)
G_DECK = _block("draw_pile", 1, "draw pile size / 32", DIV_DECK)
G_HAND = _block("hand", 6, "tokens in hand by colour / 3", DIV_TOKENS)
G_TOOK_TOKENS = _block("took_tokens", 1, "tokens were taken this turn")
G_TOOK_CARD = _block("took_card", 1, "an Animal card was taken this turn")
G_TAKEN_SPACE = _block("taken_space", S.MAX_SPACES, "central space emptied this turn, one-hot")
G_DEALT = _block("dealt_spirits", 2 * NUM_SPIRITS, "own dealt Spirits while choosing, 2 x 10 one-hot")
G_CHOOSING = _block("choosing_spirit", 1, "the observer must choose a Spirit now")
G_ROUND = _block("round", 1, "round / 25", DIV_ROUND)
G_END = _block("end_trigger", 2, "[pouch could not refill, a board has <= 2 empty cells]")
G_OVER = _block("game_over", 1, "game over")
G_NUM_PLAYERS = _block("num_players", S.MAX_PLAYERS, "number of players one-hot (1..4)")
G_SIDE_B = _block("side_b", 1, "Side B (islands)")
G_SPIRITS = _block("spirits_variant", 1, "Spirit variant on")
OBS_SIZE = _off
del _off
#: Version of this observation encoding (layout and meaning): bump it whenever either changes, even when OBS_SIZE
#: does not. Recorded in PPO policy exports (`observation_version`), which refuse to load under another version.
OBS_VERSION = 1

#: Bounds of every entry (for Box spaces): one-hots and most counts lie in [0, 1]; scores / 100 stay below 5
#: (at most 25 cells x 7 landscape points + 25 cubes x 9 card points + a Spirit), animal cubes / 20 and
#: round / 25 below 2. float32 (OBS_SIZE,)
OBS_LOW = np.zeros(OBS_SIZE, dtype=np.float32)
OBS_HIGH = np.ones(OBS_SIZE, dtype=np.float32)
for _k in range(S.MAX_PLAYERS):
    OBS_HIGH[_k * PLAYER_BLOCK + P_SCORE: _k * PLAYER_BLOCK + P_SCORE + NUM_CATEGORIES] = 5.0
    OBS_HIGH[_k * PLAYER_BLOCK + P_ANIMAL_CUBES] = 2.0
OBS_HIGH[G_ROUND] = 2.0

#: Every entry's divisor: the float32 observation is raw / OBS_DIVISOR (see `to_float32`). float64 (OBS_SIZE,)
OBS_DIVISOR = np.ones(OBS_SIZE, dtype=np.float64)
for _o, _n, _d in _DIVISORS:
    for _k in range(S.MAX_PLAYERS if _o < PLAYER_BLOCK else 1):
        OBS_DIVISOR[_k * PLAYER_BLOCK + _o: _k * PLAYER_BLOCK + _o + _n] = _d
    del _o, _n, _d
for _k in range(S.MAX_PLAYERS):
    for _h in range(S.MAX_SLOTS):
        OBS_DIVISOR[_k * PLAYER_BLOCK + P_SLOTS + _h * (NUM_CARDS + 1) + NUM_CARDS] = DIV_CUBES_LEFT
#: Output dtypes of the observation kernels: the observation itself, and the raw values.
OBS_DTYPES = (np.dtype(np.float32), np.dtype(np.int16))


def to_float32(raw: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The float32 observation(s) of raw int16 values ((..., OBS_SIZE), e.g. an `obs_dtype=np.int16` batch's
    buffer): raw / OBS_DIVISOR, bit for bit what `encode_observation` writes into a float32 buffer."""
    raw = np.asarray(raw)
    if raw.shape[-1:] != (OBS_SIZE,) or raw.dtype != np.int16:
        raise ValueError(f"raw observations must be int16 (..., {OBS_SIZE}), got {raw.dtype} {raw.shape}")
    if out is None:
        out = np.empty(raw.shape, dtype=np.float32)
    np.divide(raw, OBS_DIVISOR, out=out, casting="same_kind")
    return out


def _put(out, i, raw, div):
    """out[i] = raw / div for a float output, raw itself for an integer one (the raw values); numba only."""
    raise NotImplementedError("a numba kernel helper")


@overload(_put, inline="always")
def _put_typed(out, i, raw, div):
    if isinstance(out.dtype, types.Float):
        def put_scaled(out, i, raw, div):
            out[i] = raw / div
        return put_scaled

    def put_raw(out, i, raw, div):
        out[i] = raw
    return put_raw



@njit(cache=True)
def _encode_cards(s, p: int, b: int, out) -> None:
    """Seat p's held cards, completed cards and Spirit into block b (those entries must be zero before)."""
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card > 0:
            o = b + P_SLOTS + h * (NUM_CARDS + 1)
            out[o + card - 1] = 1
            _put(out, o + NUM_CARDS, CUBES_ON_CARD[card] - S.cubes_placed(s, p, card), DIV_CUBES_LEFT)
    for card in range(1, NUM_CARDS + 1):
        if S.cubes_placed(s, p, card) >= 0 and S.cubes_placed(s, p, card) == CUBES_ON_CARD[card]:
            out[b + P_DONE + card - 1] = 1
    kept = s[S.SPIRIT_KEPT + p]
    if kept > 0:
        out[b + P_SPIRIT + kept - FIRST_SPIRIT] = 1
        if S.cubes_placed(s, p, kept) >= 1:
            out[b + P_SPIRIT_CUBE] = 1


@njit(cache=True, inline="always")
def _write_score(score, b: int, out) -> None:
    for c in range(NUM_CATEGORIES):
        _put(out, b + P_SCORE + c, score[c], DIV_SCORE)


@njit(cache=True)
def _encode_global(s, player: int, out) -> None:
    """The global part (from GLOBAL) of seat `player`'s observation; those entries must be zero before."""
    n = s[S.NUM_PLAYERS]
    for m in range(s[S.NUM_MARKET]):
        card = s[S.MARKET + m]
        if card > 0:
            out[G_MARKET + m * NUM_ANIMALS + card - 1] = 1
    for sp in range(s[S.NUM_SPACES]):
        o = S.CENTRAL + 3 * sp
        for t in range(3):
            c = s[o + t]
            if c >= 0:  # how many tokens of colour c the space holds (written once per such token: the same value)
                _put(out, G_CENTRAL + 6 * sp + c, (s[o] == c) + (s[o + 1] == c) + (s[o + 2] == c), DIV_TOKENS)
    for c in range(6):
        _put(out, G_POUCH + c, s[S.POUCH + c], DIV_SUPPLY)
        _put(out, G_DISCARDED + c, s[S.DISCARDED + c], DIV_SUPPLY)
        _put(out, G_HAND + c, s[S.HAND + c], DIV_TOKENS)
    _put(out, G_DECK, s[S.DECK_COUNT], DIV_DECK)
    out[G_TOOK_TOKENS] = 1 if S.took_tokens(s) else 0
    out[G_TOOK_CARD] = s[S.TOOK_CARD]
    if S.took_tokens(s):
        out[G_TAKEN_SPACE + s[S.TAKEN_SPACE]] = 1
    if s[S.SPIRITS] and s[S.SPIRIT_KEPT + player] < 0:
        for j in range(2):
            card = s[S.SPIRIT_DEALT + 2 * player + j]
            if card > 0:
                out[G_DEALT + j * NUM_SPIRITS + card - FIRST_SPIRIT] = 1
        if s[S.CURRENT] == player and not s[S.GAME_OVER]:
            out[G_CHOOSING] = 1
    _put(out, G_ROUND, s[S.TURN] // n + 1, DIV_ROUND)
    if s[S.END_TRIGGER] > 0:
        out[G_END + s[S.END_TRIGGER] - 1] = 1
    out[G_OVER] = s[S.GAME_OVER]
    out[G_NUM_PLAYERS + n - 1] = 1
    out[G_SIDE_B] = s[S.SIDE]
    out[G_SPIRITS] = s[S.SPIRITS]


@njit(cache=True)
def encode_observation(s, player: int, out) -> None:
    """Write seat `player`'s observation of state s (int32 (STATE_SIZE,)) into out: float32 (OBS_SIZE,), or
    int16 for the raw values (`to_float32` turns them into the float32 observation)."""
    for i in range(out.shape[0]):  # a loop: numba's `out[:] = 0.0` is not vectorised
        out[i] = 0
    n = s[S.NUM_PLAYERS]
    score = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for k in range(n):
        p = (player + k) % n
        b = k * PLAYER_BLOCK
        for code in range(ST.NUM_STACKS):
            m = s[S.BITBOARD + 15 * p + code]
            base = b + P_STACKS + code * MAX_CELLS
            while m:  # visit set bits only: 23-25 cells per board in all
                out[base + lowest_cell(m)] = 1
                m &= m - 1
        m = s[S.CUBES + p]
        while m:
            out[b + P_CUBES + lowest_cell(m)] = 1
            m &= m - 1
        _encode_cards(s, p, b, out)
        seat_score(s, p, score)
        _write_score(score, b, out)
        _put(out, b + P_ANIMAL_CUBES, s[S.ANIMAL_CUBES + p], DIV_ANIMAL_CUBES)
        _put(out, b + P_EMPTY, popcount(s[S.BITBOARD + 15 * p]), DIV_CELLS)
        out[b + P_SEAT + p] = 1
        out[b + P_PRESENT] = 1
        if p == s[S.CURRENT] and not s[S.GAME_OVER]:
            out[b + P_TO_MOVE] = 1
    _encode_global(s, player, out)


#: STACK_BELOW[code] -> the stack code under its top token (0 for one token or none). int64 (15,)
STACK_BELOW = np.zeros(ST.NUM_STACKS, dtype=np.int64)
for _code, _stack in enumerate(ST.STACKS):
    if len(_stack) > 1:
        STACK_BELOW[_code] = ST.STACKS.index(_stack[:-1])


@njit(cache=True)
def action_card(s, a: int) -> int:
    """The card an action moves, read BEFORE the action is played (`update_observation` needs it): the
    market card for a take-card, the held card for a place-cube; 0 otherwise."""
    if a >= TAKE_CARD and a < PLACE_CUBE:
        m = a - TAKE_CARD
        return s[S.MARKET + m] if m < s[S.NUM_MARKET] else 0
    if a >= PLACE_CUBE and a < KEEP_SPIRIT:
        return s[S.SLOT + S.MAX_SLOTS * s[S.CURRENT] + (a - PLACE_CUBE) // MAX_CELLS]
    return 0


@njit(cache=True)
def score_update(s, p: int, a: int, card: int, score) -> None:
    """Update score (int64 (NUM_CATEGORIES,)), seat p's breakdown before p played the legal placement `a`, to
    the breakdown after it (what `scoring.score_into` gives), recomputing only the categories it can change.

    A token on cell i changes trees and mountains (cheap: always recomputed), fields only if it is yellow,
    water only if blue, buildings only if it is or touches a building (the building rule counts the top
    colours around), and a placed Spirit's own rule. A cube changes only animals, or the Spirit it completes.
    card: the held card of a place-cube (`action_card`, read before the action).
    """
    side = s[S.SIDE]
    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]
    if a < TAKE_CARD:
        i = (a - PLACE_TOKEN) % MAX_CELLS
        new = S.stack_at(s, p, i)
        score[0] = popcount(bb[ST.S_TREE1]) + 3 * popcount(bb[ST.S_TREE2]) + 7 * popcount(bb[ST.S_TREE3])
        score[1] = mountain_walk(side, bb[ST.S_MOUNTAIN1], bb[ST.S_MOUNTAIN2], bb[ST.S_MOUNTAIN3])
        if new == ST.S_YELLOW:
            score[2] = 5 * count_groups(side, bb[ST.S_YELLOW], 2)
        buildings = bb[ST.S_BROWN_RED] | bb[ST.S_GRAY_RED] | bb[ST.S_RED_RED]
        if (buildings >> i) & 1 or NEIGHBOUR_MASK[side, i] & buildings:
            score[3] = 5 * building_count(side, bb)
        if new == ST.S_BLUE:
            if side == 0:
                score[4] = river_points(river_length(side, bb[ST.S_BLUE], s[S.RIVER_LOOPS]))
            else:
                score[4] = ISLAND_POINTS * max(1, count_groups(side, FULL_MASK[side] & ~bb[ST.S_BLUE], 1))
        kept = s[S.SPIRIT_KEPT + p]
        if kept > 0 and S.cubes_placed(s, p, kept) == CUBES_ON_CARD[kept]:
            score[6] = spirit_score(side, bb, kept)
    else:
        if card < FIRST_SPIRIT:
            animals = 0
            for c in range(1, FIRST_SPIRIT):
                k = S.cubes_placed(s, p, c)
                if k > 0:
                    animals += CARD_POINTS[c, k - 1]
            score[5] = animals
        elif S.cubes_placed(s, p, card) == CUBES_ON_CARD[card]:
            score[6] = spirit_score(side, bb, card)
    score[7] = score[0] + score[1] + score[2] + score[3] + score[4] + score[5] + score[6]


@njit(cache=True)
def update_observation(s, a: int, mover: int, card: int, player: int, out, score) -> bool:
    """Bring `out`, seat `player`'s observation BEFORE `mover` played the legal action `a`, up to date with
    the state s after it, writing only the entries the action can change (a full rewrite where the change is
    global: a Spirit choice re-encodes, a turn end rewrites the global part and the to-move flags).

    The result is exactly `encode_observation(s, player, out)`. card: `action_card(s, a)` read before the
    action. score: int64 (NUM_CATEGORIES,), the mover's score breakdown before the action, updated in place
    (`score_update`). Returns True when the action changed the mover's board (token or cube placed).
    """
    n = s[S.NUM_PLAYERS]
    b = ((mover - player) % n) * PLAYER_BLOCK
    if a < PLACE_TOKEN:  # take the tokens of central space a
        for c in range(6):
            out[G_CENTRAL + 6 * a + c] = 0
            _put(out, G_HAND + c, s[S.HAND + c], DIV_TOKENS)
        out[G_TOOK_TOKENS] = 1 if S.took_tokens(s) else 0
        out[G_TAKEN_SPACE + a] = 1
        return False
    if a < TAKE_CARD:  # place a token of colour c on cell i
        c = (a - PLACE_TOKEN) // MAX_CELLS
        i = (a - PLACE_TOKEN) % MAX_CELLS
        new = S.stack_at(s, mover, i)
        old = STACK_BELOW[new]
        out[b + P_STACKS + old * MAX_CELLS + i] = 0
        out[b + P_STACKS + new * MAX_CELLS + i] = 1
        if old == 0:
            _put(out, b + P_EMPTY, popcount(s[S.BITBOARD + 15 * mover]), DIV_CELLS)
        _put(out, G_HAND + c, s[S.HAND + c], DIV_TOKENS)
        score_update(s, mover, a, card, score)
        _write_score(score, b, out)
        return True
    if a < PLACE_CUBE:  # take the market card `card` into the first free slot
        m = a - TAKE_CARD
        out[G_MARKET + m * NUM_ANIMALS + card - 1] = 0
        for h in range(S.MAX_SLOTS):
            if s[S.SLOT + S.MAX_SLOTS * mover + h] == card:
                o = b + P_SLOTS + h * (NUM_CARDS + 1)
                out[o + card - 1] = 1
                _put(out, o + NUM_CARDS, CUBES_ON_CARD[card] - S.cubes_placed(s, mover, card), DIV_CUBES_LEFT)
        out[G_TOOK_CARD] = s[S.TOOK_CARD]
        return False
    if a < KEEP_SPIRIT:  # place a cube of held card `card` (slot h) on cell i
        h = (a - PLACE_CUBE) // MAX_CELLS
        i = (a - PLACE_CUBE) % MAX_CELLS
        out[b + P_CUBES + i] = 1
        o = b + P_SLOTS + h * (NUM_CARDS + 1)
        if s[S.SLOT + S.MAX_SLOTS * mover + h] == card:
            _put(out, o + NUM_CARDS, CUBES_ON_CARD[card] - S.cubes_placed(s, mover, card), DIV_CUBES_LEFT)
        else:  # the card is complete: its slot is free
            out[o + card - 1] = 0
            out[o + NUM_CARDS] = 0
            out[b + P_DONE + card - 1] = 1
        if card == s[S.SPIRIT_KEPT + mover] and S.cubes_placed(s, mover, card) >= 1:
            out[b + P_SPIRIT_CUBE] = 1
        _put(out, b + P_ANIMAL_CUBES, s[S.ANIMAL_CUBES + mover], DIV_ANIMAL_CUBES)
        score_update(s, mover, a, card, score)
        _write_score(score, b, out)
        return True
    if a < SOLO_REPLACE:  # a Spirit choice (once per player and game)
        encode_observation(s, player, out)
        return False
    # the turn ended (plain or with a solo card replacement): the global part, and who is to move
    for i in range(GLOBAL, out.shape[0]):  # a loop: numba's `out[GLOBAL:] = 0` is not vectorised
        out[i] = 0
    _encode_global(s, player, out)
    for k in range(n):
        p = (player + k) % n
        out[k * PLAYER_BLOCK + P_TO_MOVE] = 1 if p == s[S.CURRENT] and not s[S.GAME_OVER] else 0
    return False


@njit(cache=True)
def scores_of(s, out) -> None:
    """Every seat's score breakdown (int64 (4 * NUM_CATEGORIES,), seat-major; absent seats untouched)."""
    for p in range(s[S.NUM_PLAYERS]):
        seat_score(s, p, out[NUM_CATEGORIES * p: NUM_CATEGORIES * (p + 1)])


@njit(cache=True)
def encode_batch(states, players, out) -> None:
    """encode_observation over rows: states int32 (N, STATE_SIZE), players int64 (N,), out float32 (N, OBS_SIZE)
    (or int16: raw values)."""
    for r in range(states.shape[0]):
        encode_observation(states[r], players[r], out[r])


def observe(game, player: int | None = None) -> np.ndarray:
    """The observation (float32 (OBS_SIZE,)) of `game` seen by `player` (default: the player to move)."""
    if player is None:
        player = game.current_player
    if isinstance(player, bool) or not isinstance(player, (int, np.integer)) or not 0 <= player < game.num_players:
        raise ValueError(f"player must be a seat 0..{game.num_players - 1}, got {player!r}")
    out = np.empty(OBS_SIZE, dtype=np.float32)
    encode_observation(game._state, int(player), out)
    return out


def layout_table() -> str:
    """OBS_LAYOUT as a markdown table (per-seat rows for block 0, then the global part)."""
    rows = ["| offset | size | name | meaning |", "|---|---|---|---|"]
    rows += [f"| {o} | {n} | {name} | {meaning} |" for name, o, n, meaning in OBS_LAYOUT]
    return "\n".join(rows)


__all__ = ["OBS_SIZE", "OBS_VERSION", "OBS_LAYOUT", "OBS_LOW", "OBS_HIGH", "OBS_DIVISOR", "OBS_DTYPES", "to_float32",
           "PLAYER_BLOCK", "GLOBAL",
           "encode_observation", "update_observation", "action_card", "score_update", "scores_of", "encode_batch",
           "observe", "layout_table"]
