"""Game state as one flat int32 vector with named fields, and the kernels that create it.

A game is `s = new_state()` (`np.zeros(STATE_SIZE, STATE_DTYPE)`, 1,024 bytes); a batch of N games is an
(N, STATE_SIZE) array whose rows are games, so every kernel written for one game steps a batch by looping over rows.
Each field below is an offset into the vector with its shape (row-major); every entry is an int32. Players are always
laid out for 4 (unused seats stay zero/-1) so every configuration has the same shape. Why so small: searches,
batches and records hold many states, and a state that stays in cache is listed and copied faster (the int64 layout
of 3,624 bytes cost listing 2x out of cache). Two fields are packed and read through kernels: the stacks (4 bits a
cell: `stack_at`, `set_stack_at`) and the cards held (`cubes_placed`); the generator's 64 bits are two entries
(`chance_below`). `field(s, "stack")` and `field(s, "cubes_placed")` decode them for Python (`VIEWS`). Each held
card's habitat answer (`habitat`) is part of the state, kept up to date by `rules.step` as the boards change, so a
listing reads it instead of matching.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .cards import FIRST_SPIRIT, NUM_CARDS, cubes_of, habitat_cells
from .data import TOKEN_COUNTS
from .geometry import FULL_MASK, MAX_CELLS

#: The state's one dtype: every value fits (masks of 25 cells, card ids, counts); the generator takes two entries.
STATE_DTYPE = np.int32

MAX_PLAYERS = 4
MAX_SPACES = 5
MAX_MARKET = 5
MAX_SLOTS = 4  # incomplete cards held (a kept Spirit whose cube is not placed counts)
DECK_SIZE = 32
STACK_WORDS_PER_SEAT = 4  # 8 cells of 4 bits a word: cells 0-7, 8-15, 16-23, 24

FIELDS: dict[str, tuple[int, tuple[int, ...], str]] = {}
_size = 0


def _field(name: str, shape: tuple[int, ...], doc: str) -> int:
    global _size
    off = _size
    FIELDS[name] = (off, shape, doc)
    _size += int(np.prod(shape)) if shape else 1
    return off


NUM_PLAYERS = _field("num_players", (), "1..4 (1 = solo)")
SIDE = _field("side", (), "0 = Side A (river), 1 = Side B (islands)")
SPIRITS = _field("spirits", (), "1 if the Nature's Spirit variant is on")
RIVER_LOOPS = _field("river_loops", (), "how a river loop scores (Side A): 0 = rulebook, 1 = bga (docs/rules.md)")
NUM_SPACES = _field("num_spaces", (), "central spaces in play: 5, or 3 in solo")
NUM_MARKET = _field("num_market", (), "face-up card slots in play: 5, or 3 in solo")
RNG = _field("rng", (2,), "splitmix64 state of this game's chance, low and high 32 bits (hidden information)")
STACK_WORDS = _field("stack_words", (MAX_PLAYERS, STACK_WORDS_PER_SEAT),
                     "stack code per player and cell, 4 bits a cell: cell i at bits 4 * (i % 8) of word i // 8")
BITBOARD = _field("bitboard", (MAX_PLAYERS, 15), "per player, mask of cells holding each stack code")
CUBES = _field("cubes", (MAX_PLAYERS,), "per player, mask of cells holding a cube")
POUCH = _field("pouch", (6,), "tokens left in the pouch by colour (public by counting)")
CENTRAL = _field("central", (MAX_SPACES, 3), "colour of each token on the central board, -1 = none")
MARKET = _field("market", (MAX_MARKET,), "face-up Animal card ids, -1 = empty slot")
DECK = _field("deck", (DECK_SIZE,), "draw pile card ids, top = DECK[deck_count - 1] (order hidden)")
DECK_COUNT = _field("deck_count", (), "cards left in the draw pile")
SLOT = _field("slot", (MAX_PLAYERS, MAX_SLOTS), "card id of each incomplete held card, -1 = free slot")
HABITAT = _field("habitat", (MAX_PLAYERS, MAX_SLOTS),
                 "cells where each held slot's card has its habitat, cubes aside (0 = free slot); kept by rules.step")
CARD_HELD = _field("card_held", (NUM_CARDS + 1,),
                   "per card id: holder seat * 8 + cubes moved from it to the board, -1 = not held")
SPIRIT_DEALT = _field("spirit_dealt", (MAX_PLAYERS, 2), "the two Spirit cards dealt (hidden to others)")
SPIRIT_KEPT = _field("spirit_kept", (MAX_PLAYERS,), "Spirit card kept, -1 = not chosen yet / variant off")
ANIMAL_CUBES = _field("animal_cubes", (MAX_PLAYERS,), "animal cubes placed (tie-break; Spirit cube excluded)")
HAND = _field("hand", (6,), "tokens taken this turn and not yet placed, by colour")
TOOK_CARD = _field("took_card", (), "1 once an Animal card was taken this turn")
TAKEN_SPACE = _field("taken_space", (), "central space emptied this turn, -1 = none")
CURRENT = _field("current", (), "player to move")
TURN = _field("turn", (), "turns completed so far (all players)")
END_TRIGGER = _field("end_trigger", (), "0 = not triggered, 1 = pouch could not refill, 2 = a board filled")
GAME_OVER = _field("game_over", (), "1 once the final round is finished")
DISCARDED = _field("discarded", (6,), "tokens out of the game by colour (solo leftovers, unplaceable tokens)")
STATE_SIZE = _size

_TOKENS = np.array(TOKEN_COUNTS, dtype=np.int64)

# splitmix64 constants as signed int64 (numba arithmetic wraps modulo 2**64)
_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15
_MIX1 = -4658895280553007687    # 0xBF58476D1CE4E5B9
_MIX2 = -7723592293110705685    # 0x94D049BB133111EB


@njit(cache=True, inline="always")
def _shr(x: int, k: int) -> int:
    """Logical right shift of a 64-bit pattern held in an int64."""
    return (x >> k) & ((1 << (64 - k)) - 1)


@njit(cache=True, forceinline=True)
def next_random(rng, i: int) -> int:
    """Advance the splitmix64 generator stored at rng[i]; return 62 random non-negative bits."""
    x = rng[i] + _GOLDEN
    rng[i] = x
    z = (x ^ _shr(x, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    z = z ^ _shr(z, 31)
    return _shr(z, 2)


@njit(cache=True, forceinline=True)
def random_below(rng, i: int, n: int) -> int:
    """Uniform integer in [0, n) from the generator at rng[i]."""
    return next_random(rng, i) % n


@njit(cache=True, forceinline=True)
def get_rng(s) -> int:
    """The game's 64-bit generator state, from its two int32 halves (RNG: low, RNG + 1: high)."""
    return (np.int64(s[RNG + 1]) << 32) | (np.int64(s[RNG]) & 0xFFFFFFFF)


@njit(cache=True, forceinline=True)
def set_rng(s, x: int) -> None:
    """Store a 64-bit generator state as two int32 halves (the stores keep the low 32 bits of each)."""
    s[RNG] = x & 0xFFFFFFFF
    s[RNG + 1] = x >> 32


@njit(cache=True, forceinline=True)
def chance_random(s) -> int:
    """Advance the game's own splitmix64 generator (`next_random` over the state's two halves)."""
    x = get_rng(s) + _GOLDEN
    set_rng(s, x)
    z = (x ^ _shr(x, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    z = z ^ _shr(z, 31)
    return _shr(z, 2)


@njit(cache=True, forceinline=True)
def chance_below(s, n: int) -> int:
    """Uniform integer in [0, n) from the game's own generator."""
    return chance_random(s) % n


@njit(cache=True, forceinline=True)
def stack_at(s, p: int, i: int) -> int:
    """Stack code of seat p's cell i (0 = empty)."""
    return (s[STACK_WORDS + STACK_WORDS_PER_SEAT * p + (i >> 3)] >> ((i & 7) << 2)) & 15


@njit(cache=True, forceinline=True)
def set_stack_at(s, p: int, i: int, code: int) -> None:
    """Write the stack code of seat p's cell i (the bitboards are the caller's: `rules._set_stack`)."""
    k = STACK_WORDS + STACK_WORDS_PER_SEAT * p + (i >> 3)
    sh = (i & 7) << 2
    s[k] = (s[k] & ~(15 << sh)) | (code << sh)


@njit(cache=True, forceinline=True)
def board_words(s, p: int):
    """Seat p's 25 stack codes as two int64 words, 4 bits a cell: cells 0-15 (cell i at bits 4i), cells 16-24 (at
    bits 4(i - 16)); the keys of the planners' memo tables, read from the packed words without unpacking."""
    k = STACK_WORDS + STACK_WORDS_PER_SEAT * p
    return ((np.int64(s[k]) & 0xFFFFFFFF) | (np.int64(s[k + 1]) << 32),
            (np.int64(s[k + 2]) & 0xFFFFFFFF) | (np.int64(s[k + 3]) << 32))


@njit(cache=True, forceinline=True)
def cubes_placed(s, p: int, card: int) -> int:
    """Cubes seat p moved from card `card` to its board; -1 when p does not hold that card (`cards.cubes_of` over
    the state's `card_held`: the one decoding, which scoring also reads from a bare held-cards table)."""
    return cubes_of(s, CARD_HELD, p, card)


@njit(cache=True, forceinline=True)
def set_cubes_placed(s, p: int, card: int, n: int) -> None:
    """Seat p holds `card` with n cubes moved from it (n = -1: nobody holds it)."""
    s[CARD_HELD + card] = 8 * p + n if n >= 0 else -1


@njit(cache=True, forceinline=True)
def took_tokens(s) -> bool:
    """Whether tokens were taken this turn: `taken_space` names the central space emptied (-1 before)."""
    return s[TAKEN_SPACE] >= 0


@njit(cache=True, forceinline=True)
def habitat_answer(s, p: int, card: int) -> int:
    """What seat p's `habitat` entry for a slot holding `card` must be: the cells where the card's habitat stands
    on p's board, cubes aside, or 0 for a free slot (card -1, the slot's encoding; ids start at 1). The one rule
    that `rules.step` keeps (`rules._match_slot`) and `validate` checks."""
    return habitat_cells(s[SIDE], s, 0, card, BITBOARD + 15 * p) if card >= 0 else 0


@njit(cache=True, forceinline=True)
def copy_state(dst, src) -> None:
    """dst[:] = src as a loop (numba's slice copy is not vectorised: docs/engine.md, hot kernels)."""
    for k in range(STATE_SIZE):
        dst[k] = src[k]


def as_state_dtype(arr: np.ndarray, what: str = "a state") -> np.ndarray:
    """`arr` (any integer dtype) as a C-contiguous STATE_DTYPE copy; ValueError naming `what` for a non-integer
    dtype or a value the state's int32 cannot hold (refused, never wrapped)."""
    arr = np.asarray(arr)
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what} must be int32 (STATE_SIZE = {STATE_SIZE} entries), got dtype {arr.dtype}")
    lim = np.iinfo(STATE_DTYPE)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < lim.min or hi > lim.max:
            raise ValueError(f"{what}: {hi if hi > lim.max else lo} does not fit the state's int32 entries")
    return np.array(arr, dtype=STATE_DTYPE, copy=True, order="C")


def new_state() -> np.ndarray:
    """A zeroed state vector (int32 (STATE_SIZE,)); `init_state` sets up a game in it."""
    return np.zeros(STATE_SIZE, dtype=STATE_DTYPE)


def new_states(n: int) -> np.ndarray:
    """n zeroed state rows (int32 (n, STATE_SIZE)), a batch."""
    return np.zeros((n, STATE_SIZE), dtype=STATE_DTYPE)


@njit(cache=True, forceinline=True)
def draw_token(s) -> int:
    """Draw one token at random from the pouch; returns its colour, or -1 if the pouch is empty."""
    total = 0
    for c in range(6):
        total += s[POUCH + c]
    if total == 0:
        return -1
    k = chance_below(s, total)
    for c in range(6):
        k -= s[POUCH + c]
        if k < 0:
            s[POUCH + c] -= 1
            return c
    return -1


@njit(cache=True, forceinline=True)
def fill_space(s, space: int) -> bool:
    """Refill an empty central space with 3 tokens; False if the pouch ran short (space partly filled)."""
    for t in range(3):
        c = draw_token(s)
        s[CENTRAL + 3 * space + t] = c
        if c < 0:
            return False
    return True


@njit(cache=True)
def shuffle_range(s, start: int, n: int) -> None:
    """Fisher-Yates shuffle of s[start:start + n] with the game's generator."""
    for i in range(n - 1, 0, -1):
        j = chance_below(s, i + 1)
        t = s[start + i]
        s[start + i] = s[start + j]
        s[start + j] = t


@njit(cache=True)
def init_blank(s, num_players: int, side: int, spirits: int, seed: int, river_loops: int = 0) -> None:
    """Set up everything of a new game in s that chance does not decide: empty boards, a full pouch, an empty
    central board and market, the 32 cards in the draw pile in id order (not yet shuffled), no Spirit dealt, and the
    generator seeded. `init_state` then deals; explicit chance (`chance.init_explicit`) leaves the deal as chance
    nodes. Writes no generator draw beyond the seed's first mix, so both modes draw the same numbers after it."""
    for i in range(s.shape[0]):  # a loop: numba's `s[:] = 0` is not vectorised (docs/engine.md, hot kernels)
        s[i] = 0
    s[NUM_PLAYERS] = num_players
    s[SIDE] = side
    s[SPIRITS] = spirits
    s[RIVER_LOOPS] = river_loops
    solo = num_players == 1
    s[NUM_SPACES] = 3 if solo else 5
    s[NUM_MARKET] = 3 if solo else 5
    set_rng(s, seed)
    chance_random(s)
    for p in range(num_players):
        s[BITBOARD + 15 * p] = FULL_MASK[side]  # every cell holds the empty stack
    for c in range(6):
        s[POUCH + c] = _TOKENS[c]
    s[CENTRAL:CENTRAL + 3 * MAX_SPACES] = -1
    for k in range(DECK_SIZE):
        s[DECK + k] = k + 1
    s[DECK_COUNT] = DECK_SIZE
    s[MARKET:MARKET + MAX_MARKET] = -1
    s[SLOT:SLOT + MAX_PLAYERS * MAX_SLOTS] = -1
    for k in range(NUM_CARDS + 1):
        s[CARD_HELD + k] = -1
    s[SPIRIT_DEALT:SPIRIT_DEALT + 2 * MAX_PLAYERS] = -1
    s[SPIRIT_KEPT:SPIRIT_KEPT + MAX_PLAYERS] = -1
    s[TAKEN_SPACE] = -1


@njit(cache=True)
def shuffled_spirits(s):
    """The 10 Spirit cards in the order the game's generator deals them (seat p gets entries 2p and 2p + 1)."""
    pool = np.empty(10, dtype=np.int64)
    for k in range(10):
        pool[k] = FIRST_SPIRIT + k
    for i in range(9, 0, -1):
        j = chance_below(s, i + 1)
        t = pool[i]
        pool[i] = pool[j]
        pool[j] = t
    return pool


@njit(cache=True)
def init_state(s, num_players: int, side: int, spirits: int, seed: int, river_loops: int = 0) -> None:
    """Set up a new game in s (int32 (STATE_SIZE,)): fill the central board, deal the market and Spirits.

    river_loops: 0 = rulebook, 1 = bga (`config.RIVER_LOOPS`); it changes only scoring, never the deal.
    """
    init_blank(s, num_players, side, spirits, seed, river_loops)
    for sp in range(s[NUM_SPACES]):
        fill_space(s, sp)
    shuffle_range(s, DECK, DECK_SIZE)
    n = DECK_SIZE
    for m in range(s[NUM_MARKET]):
        n -= 1
        s[MARKET + m] = s[DECK + n]
        s[DECK + n] = 0
    s[DECK_COUNT] = n
    if spirits:
        pool = shuffled_spirits(s)
        for p in range(num_players):
            s[SPIRIT_DEALT + 2 * p] = pool[2 * p]
            s[SPIRIT_DEALT + 2 * p + 1] = pool[2 * p + 1]


@njit(cache=True)
def hide_private(s, player: int) -> None:
    """Keep in s (int32 (STATE_SIZE,), in place) only what seat `player` may know: the generator zeroed, the draw
    pile in sorted order (its contents are public, its order is chance), and the Spirit cards dealt to other seats
    and not kept blanked (0, never equal to a kept card, so determinization resamples them). The one rule behind
    `view.public_copy` (one game) and `agents.policy.public_rows` (a batch)."""
    s[RNG] = 0
    s[RNG + 1] = 0
    n = s[DECK_COUNT]
    s[DECK:DECK + n] = np.sort(s[DECK:DECK + n])
    if s[SPIRITS]:
        for o in range(s[NUM_PLAYERS]):
            if o != player:
                kept = s[SPIRIT_KEPT + o]
                for k in range(SPIRIT_DEALT + 2 * o, SPIRIT_DEALT + 2 * o + 2):
                    if s[k] != kept:
                        s[k] = 0


#: Decoded views that `field` gives besides the stored fields: name -> (shape, meaning). Copies, read-only.
VIEWS: dict[str, tuple[tuple[int, ...], str]] = {
    "stack": ((MAX_PLAYERS, MAX_CELLS), "stack code per player and cell (0 = empty), from stack_words"),
    "cubes_placed": ((MAX_PLAYERS, NUM_CARDS + 1), "cubes moved from each card id to the board, -1 = card not "
                     "held, from card_held"),
    "took_tokens": ((), "1 once this turn's central space was taken, from taken_space"),
}


def _decoded(s: np.ndarray, name: str) -> np.ndarray:
    lead = s.shape[:-1]
    if name == "took_tokens":
        took = (s[..., TAKEN_SPACE] >= 0).astype(np.int64)  # took_tokens' rule, over every leading axis
        return took[()] if took.ndim == 0 else read_only_view(np.ascontiguousarray(took))
    if name == "stack":
        words = s[..., STACK_WORDS:STACK_WORDS + MAX_PLAYERS * STACK_WORDS_PER_SEAT].astype(np.int64)
        words = words.reshape(lead + (MAX_PLAYERS, STACK_WORDS_PER_SEAT))
        cells = np.arange(MAX_CELLS)
        out = (words[..., cells >> 3] >> ((cells & 7) << 2)) & 15
    else:
        held = s[..., CARD_HELD:CARD_HELD + NUM_CARDS + 1].astype(np.int64)[..., None, :]
        seats = np.arange(MAX_PLAYERS)[:, None]
        out = np.where((held >= 0) & ((held >> 3) == seats), held & 7, -1)  # cards.cubes_of's rule, vectorised
    return read_only_view(np.ascontiguousarray(out))  # a copy that cannot be made writable (no silent lost write)


def field(s: np.ndarray, name: str) -> np.ndarray:
    """View of a named field of a state vector (or of a batch: leading axes are kept); for the names in `VIEWS`, a
    read-only decoded copy (write those through the kernels: `set_stack_at`, `set_cubes_placed`)."""
    if name in VIEWS:
        return _decoded(s, name)
    off, shape, _ = FIELDS[name]
    size = math.prod(shape)  # 1 for a scalar's (); np.prod would cost ~30 us a call
    v = s[..., off:off + size]
    return v.reshape(s.shape[:-1] + shape) if shape else v[..., 0]


def read_only_view(a: np.ndarray) -> np.ndarray:
    """A live, read-only view of the C-contiguous array `a` that cannot be made writable again.

    Why: the kernels trust a state (they index tables with its values), so the arrays the public API hands out
    (`Game.state`, `BatchedGames.states`, ...) must not be writable. A plain view's `writeable` flag can be switched
    back on; this one is built over a read-only buffer, so numpy refuses that ("cannot set WRITEABLE flag"), and
    numba refuses, when compiling, a kernel that writes into it. Reads follow `a` (no copy).
    """
    if not a.flags.c_contiguous:
        raise ValueError("read_only_view needs a C-contiguous array")
    return np.frombuffer(memoryview(a).toreadonly(), dtype=a.dtype).reshape(a.shape)


def fields(s: np.ndarray, *names: str) -> tuple[np.ndarray, ...]:
    """`field(s, name)` for each name, in order: `stacks, cubes = fields(s, "stack", "cubes")`."""
    return tuple(field(s, n) for n in names)
