"""Validation of a state vector handed in from outside (`Game.from_state`, `rollout_batch`, `BatchedGames`).

Why: the kernels trust the state. They index tables with its values (a stack code, a card id, the player to
move, the draw pile size), so a state edited by hand can make them read or write out of bounds (a crash of the
whole process) or reach a position with no legal action. `state_error(s)` checks every field of one state
(int32 (STATE_SIZE,)) against the game's invariants in numba (cheap enough for a batch) and returns 0 or an
error code; `check_state` / `check_states` raise ValueError naming the field and, for a batch, the row.

What is checked, by field: the configuration (num_players 1..4, side 0/1, spirits 0/1, num_spaces / num_market
5, or 3 in solo); every stack code 0..14 on the board's cells and 0 elsewhere (unused bits of `stack_words`
too) and on absent seats; the bitboards
exactly the stack codes' cell masks; cubes only on the board and one per cube moved from a card (animal_cubes
+ the kept Spirit's); the pouch, central board, hands, boards and discarded tokens adding up to the 120 tokens
colour by colour; the market, the draw pile (first deck_count entries, 0 after) and the held cards holding
each Animal card at most once; the held-card slots exactly the incomplete held cards, at most 4; Spirit cards
dealt (distinct, only with the variant), kept (one of the dealt, held); each held card's habitat answer
(`habitat`, exactly the matcher's); the turn flags (0/1, hand tokens only after taking, the taken space empty);
current = turn % num_players (n - 1 once the game is over); end_trigger 0..2, game_over only once triggered; and a
game that is not over has a legal action. The generator (`rng`) may hold any value. A state that passes can be played
to its end by the kernels without error. (river_loops: 0 or 1.)

`parse_json(text, what)` is the one reader of JSON handed in from files (game records, learned checkpoints' configs):
it raises only ValueError naming `what`, also for nesting too deep to walk (`MAX_JSON_DEPTH`), which would otherwise
be a RecursionError in the parser or in whatever walks the value next.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
from numba import njit

from . import rules
from . import state as S
from .actions import NUM_ACTIONS
from .cards import CUBES_ON_CARD, FIRST_SPIRIT, NUM_CARDS
from .data import COLOURS, TOKEN_COUNTS
from .geometry import FULL_MASK, NUM_CELLS, popcount
from .stacks import NUM_STACKS, STACKS

#: (field, what is wrong) by error code of `state_error` (0 = valid).
STATE_ERRORS: tuple[tuple[str, str], ...] = (
    ("", ""),
    ("num_players", "must be 1..4"),
    ("side", "must be 0 (Side A) or 1 (Side B)"),
    ("spirits", "must be 0 or 1"),
    ("num_spaces", "must be 5, or 3 in solo"),
    ("num_market", "must be 5, or 3 in solo"),
    ("stack_words", "stack codes must be 0..14 on the board's cells and 0 on other cells, unused bits and absent "
                    "seats"),
    ("bitboard", "must be exactly the cell masks of each stack code (absent seats: 0)"),
    ("cubes", "cubes must lie on the board's cells (absent seats: 0)"),
    ("pouch", "token counts must be 0..the box's count of that colour"),
    ("central", "tokens must be -1 (none) or a colour 0..5, spaces not in play empty"),
    ("hand", "token counts must be 0..3 in all"),
    ("discarded", "token counts must be non-negative"),
    ("pouch/central/hand/stack/discarded", "together they must hold every colour's tokens exactly (120 in all)"),
    ("market", "slots must hold -1 or an Animal card id 1..32, slots not in play -1"),
    ("deck_count", "must be 0..32"),
    ("deck", "the first deck_count entries must be Animal card ids 1..32, the rest 0"),
    ("card_held", "must be -1 (not held) or holder seat * 8 + 0..the card's cubes, the holder a seat in the "
                  "game; card 0 -1"),
    ("deck/market/card_held", "an Animal card is in more than one place (draw pile, market, held cards)"),
    ("slot", "slots must hold -1 or the incomplete held cards, each once (absent seats: -1)"),
    ("spirit_dealt", "Spirit cards 33..42, all different, dealt only with the variant on (-1 otherwise)"),
    ("spirit_kept", "must be -1 or one of the seat's dealt Spirits (-1 with the variant off)"),
    ("card_held", "only the kept Spirit card may be held among the Spirits"),
    ("animal_cubes", "must equal the cubes moved from the seat's Animal cards"),
    ("cubes", "cubes on a board must equal the cubes moved from that seat's cards"),
    ("habitat", "must be, for each held slot, the cells where its card's habitat stands, cubes aside (0 for a free "
                "slot and absent seats): rules.refresh_habitats(state) computes it"),
    ("took_card", "must be 0 or 1"),
    ("taken_space", "must be -1 before taking tokens, else the emptied space 0..num_spaces-1"),
    ("hand", "tokens are held only after taking them this turn"),
    ("current", "must be turn % num_players (num_players - 1 once the game is over)"),
    ("turn", "must be 0..10000"),
    ("end_trigger", "must be 0, 1 (pouch) or 2 (a board filled)"),
    ("game_over", "must be 0 or 1, and 1 only once the end was triggered"),
    ("central", "no central space holds tokens although this turn has not taken any"),
    ("spirit_kept", "a seat with the variant on must keep a Spirit on its first turn"),
    ("current", "the player to move has no legal action"),
    ("river_loops", "must be 0 (rulebook) or 1 (bga)"),
)

_TOKENS = np.array(TOKEN_COUNTS, dtype=np.int64)
#: STACK_COLOURS[code, c]: tokens of colour c in stack code. int64 (NUM_STACKS, 6)
STACK_COLOURS = np.zeros((NUM_STACKS, len(COLOURS)), dtype=np.int64)
for _k, _st in enumerate(STACKS):
    for _col in _st:
        STACK_COLOURS[_k, COLOURS.index(_col)] += 1
_NUM_ANIMALS = FIRST_SPIRIT - 1
MAX_TURN = 10000


@njit(cache=True, inline="always")
def _is_flag(v) -> bool:
    """A 0/1 field (side, Spirits on, tokens/card taken this turn, game over) holds 0 or 1."""
    return v == 0 or v == 1


@njit(cache=True)
def state_error(s) -> int:
    """0 if s (int32 (STATE_SIZE,)) is a valid game state, else an index into STATE_ERRORS (the first problem)."""
    n = s[S.NUM_PLAYERS]
    if n < 1 or n > S.MAX_PLAYERS:
        return 1
    side = s[S.SIDE]
    if not _is_flag(side):
        return 2
    if not _is_flag(s[S.SPIRITS]):
        return 3
    if not _is_flag(s[S.RIVER_LOOPS]):
        return 36
    want = 3 if n == 1 else 5
    if s[S.NUM_SPACES] != want:
        return 4
    if s[S.NUM_MARKET] != want:
        return 5
    cells = NUM_CELLS[side]
    tokens = np.zeros(6, dtype=np.int64)
    bb = np.zeros(NUM_STACKS, dtype=np.int64)
    for p in range(S.MAX_PLAYERS):
        for k in range(NUM_STACKS):
            bb[k] = 0
        for i in range(8 * S.STACK_WORDS_PER_SEAT):  # every 4-bit entry of the seat's words, unused ones too
            code = S.stack_at(s, p, i)
            if p >= n or i >= cells:
                if code != 0:
                    return 6
                continue
            if code < 0 or code >= NUM_STACKS:
                return 6
            bb[code] |= 1 << i
            for c in range(6):
                tokens[c] += STACK_COLOURS[code, c]
        for k in range(NUM_STACKS):
            if s[S.BITBOARD + 15 * p + k] != (bb[k] if p < n else 0):
                return 7
        cu = s[S.CUBES + p]
        if (p >= n and cu != 0) or (cu & ~FULL_MASK[side]) != 0:
            return 8
    hand = 0
    for c in range(6):
        v = s[S.POUCH + c]
        if v < 0 or v > _TOKENS[c]:
            return 9
        tokens[c] += v
        h = s[S.HAND + c]
        if h < 0 or h > 3:
            return 11
        hand += h
        tokens[c] += h
        d = s[S.DISCARDED + c]
        if d < 0 or d > _TOKENS[c]:
            return 12
        tokens[c] += d
    if hand > 3:
        return 11
    for k in range(3 * S.MAX_SPACES):
        c = s[S.CENTRAL + k]
        if c < -1 or c > 5 or (k >= 3 * s[S.NUM_SPACES] and c != -1):
            return 10
        if c >= 0:
            tokens[c] += 1
    for c in range(6):
        if tokens[c] != _TOKENS[c]:
            return 13
    # cards: each Animal card at most once among the draw pile, the market and the held cards
    seen = np.zeros(NUM_CARDS + 1, dtype=np.int64)
    for m in range(S.MAX_MARKET):
        card = s[S.MARKET + m]
        if card == -1:
            continue
        if m >= s[S.NUM_MARKET] or card < 1 or card > _NUM_ANIMALS:
            return 14
        seen[card] += 1
    dc = s[S.DECK_COUNT]
    if dc < 0 or dc > S.DECK_SIZE:
        return 15
    for k in range(S.DECK_SIZE):
        card = s[S.DECK + k]
        if k >= dc:
            if card != 0:
                return 16
            continue
        if card < 1 or card > _NUM_ANIMALS:
            return 16
        seen[card] += 1
    spirits = s[S.SPIRITS]
    dealt_seen = np.zeros(NUM_CARDS + 1, dtype=np.int64)
    if s[S.CARD_HELD] != -1:
        return 17
    for card in range(1, NUM_CARDS + 1):
        v = s[S.CARD_HELD + card]
        if v != -1 and (v < 0 or (v >> 3) >= n or (v & 7) > CUBES_ON_CARD[card]):
            return 17
    for p in range(S.MAX_PLAYERS):
        animal = 0
        moved = 0
        for card in range(1, NUM_CARDS + 1):
            v = S.cubes_placed(s, p, card)
            if v == -1:
                continue
            if card <= _NUM_ANIMALS:
                seen[card] += 1
                animal += v
            moved += v
        for j in range(2):
            d = s[S.SPIRIT_DEALT + 2 * p + j]
            if p >= n or not spirits:
                if d != -1:
                    return 20
                continue
            if d < FIRST_SPIRIT or d > NUM_CARDS or dealt_seen[d]:
                return 20
            dealt_seen[d] = 1
        kept = s[S.SPIRIT_KEPT + p]
        if kept != -1:
            if p >= n or not spirits or (kept != s[S.SPIRIT_DEALT + 2 * p] and kept != s[S.SPIRIT_DEALT + 2 * p + 1]):
                return 21
        for card in range(FIRST_SPIRIT, NUM_CARDS + 1):
            if S.cubes_placed(s, p, card) != -1 and card != kept:
                return 22
        if kept != -1 and S.cubes_placed(s, p, kept) == -1:
            return 22
        if p < n and spirits and kept == -1 and (s[S.TURN] > p or s[S.GAME_OVER]):
            return 34
        if s[S.ANIMAL_CUBES + p] != animal:
            return 23
        if popcount(s[S.CUBES + p]) != moved:
            return 24
        # slots: exactly the incomplete held cards, each once
        held = 0
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            if card == -1:
                continue
            if p >= n or card < 1 or card > NUM_CARDS:
                return 19
            v = S.cubes_placed(s, p, card)
            if v < 0 or v >= CUBES_ON_CARD[card]:
                return 19
            for h2 in range(h):
                if s[S.SLOT + S.MAX_SLOTS * p + h2] == card:
                    return 19
            held += 1
        incomplete = 0
        for card in range(1, NUM_CARDS + 1):
            v = S.cubes_placed(s, p, card)
            if v >= 0 and v < CUBES_ON_CARD[card]:
                incomplete += 1
        if incomplete != held:
            return 19
    for card in range(1, _NUM_ANIMALS + 1):
        if seen[card] > 1:
            return 18
    for p in range(S.MAX_PLAYERS):  # the habitat answers: exactly what the matcher gives for each held card
        for h in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            # (the slots are checked above: -1 or a card 1..42, and -1 on absent seats)
            if s[S.HABITAT + S.MAX_SLOTS * p + h] != S.habitat_answer(s, p, card):
                return 25
    ts = s[S.TAKEN_SPACE]
    took = S.took_tokens(s)
    if not _is_flag(s[S.TOOK_CARD]):
        return 26
    if not took:
        if ts != -1:
            return 27
        if hand != 0:
            return 28
    else:  # took: ts >= 0 (`state.took_tokens`)
        if ts >= s[S.NUM_SPACES]:
            return 27
        for t in range(3):
            if s[S.CENTRAL + 3 * ts + t] != -1:
                return 27
    turn = s[S.TURN]
    if turn < 0 or turn > MAX_TURN:
        return 30
    et = s[S.END_TRIGGER]
    if et < 0 or et > 2:
        return 31
    go = s[S.GAME_OVER]
    if not _is_flag(go):
        return 32
    if go == 1 and et == 0:
        return 32
    cur = s[S.CURRENT]
    if go == 1:
        if cur != n - 1 or turn % n != 0:
            return 29
    elif cur != turn % n:
        return 29
    if go == 0:
        if not took:
            anything = False
            for sp in range(s[S.NUM_SPACES]):
                if s[S.CENTRAL + 3 * sp] >= 0:
                    anything = True
            if not anything:
                return 33
        buf = np.empty(NUM_ACTIONS, dtype=np.int64)
        if rules.legal_actions(s, buf) == 0:
            return 35
    return 0


def _message(code: int, row: int | None = None) -> str:
    field, what = STATE_ERRORS[code]
    where = f"state field {field!r}" if row is None else f"states row {row}, field {field!r}"
    return f"invalid {where}: {what}"


def check_state(s: np.ndarray) -> np.ndarray:
    """Validate one state vector (int32 (STATE_SIZE,)); returns it, or raises ValueError naming the bad field."""
    if not isinstance(s, np.ndarray) or s.dtype != S.STATE_DTYPE or s.shape != (S.STATE_SIZE,):
        raise ValueError(f"a state is an int32 array ({S.STATE_SIZE},), got "
                         f"{getattr(s, 'dtype', type(s).__name__)} {getattr(s, 'shape', '')}")
    code = state_error(np.ascontiguousarray(s))
    if code:
        raise ValueError(_message(code))
    return s


@njit(cache=True)
def states_errors(states, out) -> int:
    """out[r] = state_error(states[r]) for every row of states (int32 (N, STATE_SIZE)); returns the first bad row
    or -1."""
    first = -1
    for r in range(states.shape[0]):
        out[r] = state_error(states[r])
        if out[r] and first < 0:
            first = r
    return first


def check_states(states: np.ndarray, row_numbers: np.ndarray | None = None) -> np.ndarray:
    """Validate every row of a batch (int32 (N, STATE_SIZE)); ValueError naming the first bad row and field.
    row_numbers: how the message numbers row r (`row_numbers[r]`, e.g. the batch rows being replaced)."""
    if not isinstance(states, np.ndarray) or states.dtype != S.STATE_DTYPE or states.ndim != 2 \
            or states.shape[1] != S.STATE_SIZE:
        raise ValueError(f"states must be an int32 array (N, {S.STATE_SIZE}), got "
                         f"{getattr(states, 'dtype', type(states).__name__)} {getattr(states, 'shape', '')}")
    out = np.zeros(states.shape[0], dtype=np.int64)
    r = states_errors(np.ascontiguousarray(states), out)
    if r >= 0:
        raise ValueError(_message(int(out[r]), r if row_numbers is None else int(row_numbers[r])))
    return states


#: Deepest nesting of JSON arrays / objects `parse_json` accepts (records and checkpoint configs nest at most 5).
MAX_JSON_DEPTH = 32


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """Nesting depth of lists / dicts in a parsed JSON value (a scalar is 0), walked without recursion; the count
    stops at the first level past `limit`."""
    deepest = 0
    todo = [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d > deepest:
            deepest = d
            if deepest > limit:
                break
        todo.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def parse_json(text: str | bytes, what: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The value of JSON text, or ValueError naming `what` (e.g. the file): not JSON, or arrays / objects nested
    deeper than `max_depth` (refused whether Python's parser hits its recursion limit or not, so the caller never
    meets a RecursionError walking the value)."""
    try:
        value = json.loads(text)
    except RecursionError:
        value, deep = None, True
    except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"{what}: not valid JSON ({str(e).splitlines()[0][:200]})") from None
    else:
        deep = json_depth(value, max_depth) > max_depth
    if deep:
        raise ValueError(f"{what}: JSON nested deeper than {max_depth} levels")
    return value


__all__ = ["state_error", "check_state", "check_states", "STATE_ERRORS", "MAX_JSON_DEPTH", "json_depth",
           "parse_json"]
