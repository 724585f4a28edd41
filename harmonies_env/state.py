"""Game state as one flat int64 vector with named fields, and the kernels that create it.

A game is `s = np.zeros(STATE_SIZE, int64)`; a batch of N games is an (N, STATE_SIZE) array whose rows
are games, so every kernel written for one game steps a batch by looping over rows. Each field below is
an offset into the vector with its shape (row-major); all fields are int64. Players are always laid out
for 4 (unused seats stay zero/-1) so every configuration has the same shape.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .cards import FIRST_SPIRIT, NUM_CARDS
from .data import TOKEN_COUNTS
from .geometry import FULL_MASK, MAX_CELLS

MAX_PLAYERS = 4
MAX_SPACES = 5
MAX_MARKET = 5
MAX_SLOTS = 4  # incomplete cards held (a kept Spirit whose cube is not placed counts)
DECK_SIZE = 32

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
RNG = _field("rng", (), "splitmix64 state of this game's chance (hidden information)")
STACK = _field("stack", (MAX_PLAYERS, MAX_CELLS), "stack code per player and cell (0 = empty)")
BITBOARD = _field("bitboard", (MAX_PLAYERS, 15), "per player, mask of cells holding each stack code")
CUBES = _field("cubes", (MAX_PLAYERS,), "per player, mask of cells holding a cube")
POUCH = _field("pouch", (6,), "tokens left in the pouch by colour (public by counting)")
CENTRAL = _field("central", (MAX_SPACES, 3), "colour of each token on the central board, -1 = none")
MARKET = _field("market", (MAX_MARKET,), "face-up Animal card ids, -1 = empty slot")
DECK = _field("deck", (DECK_SIZE,), "draw pile card ids, top = DECK[deck_count - 1] (order hidden)")
DECK_COUNT = _field("deck_count", (), "cards left in the draw pile")
SLOT = _field("slot", (MAX_PLAYERS, MAX_SLOTS), "card id of each incomplete held card, -1 = free slot")
CUBES_PLACED = _field("cubes_placed", (MAX_PLAYERS, NUM_CARDS + 1),
                      "cubes moved from each card id to the board, -1 = card not held")
SPIRIT_DEALT = _field("spirit_dealt", (MAX_PLAYERS, 2), "the two Spirit cards dealt (hidden to others)")
SPIRIT_KEPT = _field("spirit_kept", (MAX_PLAYERS,), "Spirit card kept, -1 = not chosen yet / variant off")
ANIMAL_CUBES = _field("animal_cubes", (MAX_PLAYERS,), "animal cubes placed (tie-break; Spirit cube excluded)")
HAND = _field("hand", (6,), "tokens taken this turn and not yet placed, by colour")
TOOK_TOKENS = _field("took_tokens", (), "1 once this turn's central space was taken")
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
def draw_token(s) -> int:
    """Draw one token at random from the pouch; returns its colour, or -1 if the pouch is empty."""
    total = 0
    for c in range(6):
        total += s[POUCH + c]
    if total == 0:
        return -1
    k = random_below(s, RNG, total)
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
        j = random_below(s, RNG, i + 1)
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
    s[RNG] = seed
    next_random(s, RNG)
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
    s[CUBES_PLACED:CUBES_PLACED + MAX_PLAYERS * (NUM_CARDS + 1)] = -1
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
        j = random_below(s, RNG, i + 1)
        t = pool[i]
        pool[i] = pool[j]
        pool[j] = t
    return pool


@njit(cache=True)
def init_state(s, num_players: int, side: int, spirits: int, seed: int, river_loops: int = 0) -> None:
    """Set up a new game in s (int64 (STATE_SIZE,)): fill the central board, deal the market and Spirits.

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
    """Keep in s (int64 (STATE_SIZE,), in place) only what seat `player` may know: the generator zeroed, the draw
    pile in sorted order (its contents are public, its order is chance), and the Spirit cards dealt to other seats
    and not kept blanked (0, never equal to a kept card, so determinization resamples them). The one rule behind
    `view.public_copy` (one game) and `agents.policy.public_rows` (a batch)."""
    s[RNG] = 0
    n = s[DECK_COUNT]
    s[DECK:DECK + n] = np.sort(s[DECK:DECK + n])
    if s[SPIRITS]:
        for o in range(s[NUM_PLAYERS]):
            if o != player:
                kept = s[SPIRIT_KEPT + o]
                for k in range(SPIRIT_DEALT + 2 * o, SPIRIT_DEALT + 2 * o + 2):
                    if s[k] != kept:
                        s[k] = 0


def field(s: np.ndarray, name: str) -> np.ndarray:
    """View of a named field of a state vector (or of a batch: leading axes are kept)."""
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
