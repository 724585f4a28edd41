"""Explicit chance: the game's random events as chance nodes with their outcomes and exact probabilities.

In the default mode the engine deals chance inline with the game's generator (`state.init_state`, `rules.refill`).
In explicit mode each random event waits as a chance node until it is resolved, one at a time, in the order the
default mode draws them:

- the set-up: each central space (3 tokens from the pouch), each market slot (a card from the draw pile), then
  each Spirit card dealt (seat 0's two, seat 1's two, ...);
- the end of a turn: the emptied central space (solo: each space in turn, stopping at the first the pouch cannot
  fill), then each empty market slot while the draw pile lasts; then the turn passes (`rules.finish_turn`).

A node's outcomes come from public counts only: a space's outcome is the multiset of colours drawn (multivariate
hypergeometric over the pouch's colour counts), a card's is uniform over the draw pile's contents, a Spirit's is
uniform over the Spirit cards not yet dealt. The pouch order, the draw pile's order and the undealt Spirits'
order are never read to list outcomes. `sample_chance` resolves a node with the game's own generator, drawing
exactly the numbers the default mode draws, so a game sampled throughout IS the default game of its seed.

Outcome ids (one space for every kind of node, `NUM_OUTCOMES` in all): 0..83 a multiset of 0-3 token colours
(`MULTISETS`), 84 + card - 1 a card (Animal 1..32, Spirit 33..42). The chance bookkeeping is a small int64
array `c` (`CHANCE_SIZE`) next to the state; the kernels are pure functions over (s, c).
"""
from __future__ import annotations

import itertools

import numpy as np
from numba import njit

from . import actions as A
from . import rules
from . import state as S
from .cards import FIRST_SPIRIT, NUM_CARDS

# chance bookkeeping: c = int64 (CHANCE_SIZE,)
C_NODE = 0           # the pending node's kind: NODE_NONE (a decision, or the game is over), NODE_SPACE, ...
C_WHERE = 1          # its place: central space, market slot, or 2 * seat + Spirit index
C_CONTEXT = 2        # CONTEXT_SETUP or CONTEXT_TURN (the end of a turn: `rules.finish_turn` follows the last node)
C_K = 3              # tokens a space node draws (3, fewer when the pouch runs short)
C_DECK_SHUFFLED = 4  # 1 once the generator shuffled the draw pile (what `sample_chance` deals from)
C_POOL_SHUFFLED = 5  # 1 once the generator shuffled the Spirit cards into C_POOL
C_POOL = 6           # 10 Spirit card ids in the generator's deal order
CHANCE_SIZE = C_POOL + 10

NODE_NONE, NODE_SPACE, NODE_CARD, NODE_SPIRIT = 0, 1, 2, 3
NODE_KINDS = ("none", "tokens", "card", "spirit")
CONTEXT_SETUP, CONTEXT_TURN = 0, 1

_MS = [ms for k in range(4) for ms in itertools.combinations_with_replacement(range(6), k)]
#: MULTISETS[o] -> the colours (ascending, -1 padding) of token outcome o; int64 (84, 3)
MULTISETS = np.array([list(ms) + [-1] * (3 - len(ms)) for ms in _MS], dtype=np.int64)
#: MULTISET_SIZE[o] -> how many tokens outcome o holds; int64 (84,)
MULTISET_SIZE = np.array([len(ms) for ms in _MS], dtype=np.int64)
#: first outcome id of each multiset size 0..3, and one past the last
MULTISET_START = np.array([0, 1, 7, 28, 84], dtype=np.int64)
#: MULTISET_INDEX[(c1 + 1) * 49 + (c2 + 1) * 7 + (c3 + 1)] -> outcome id of the sorted colours (-1 padding last)
MULTISET_INDEX = np.full(343, -1, dtype=np.int64)
for _o, _m in enumerate(MULTISETS):
    MULTISET_INDEX[(_m[0] + 1) * 49 + (_m[1] + 1) * 7 + _m[2] + 1] = _o
#: MULTISET_COUNTS[o, colour] -> tokens of that colour in outcome o; int64 (84, 6)
MULTISET_COUNTS = np.array([[ms.count(c) for c in range(6)] for ms in _MS], dtype=np.int64)
#: MULTISET_ORDERS[o] -> the draw orders giving outcome o's multiset (k! / prod of count!); int64 (84,)
MULTISET_ORDERS = np.array([len(set(itertools.permutations(ms))) for ms in _MS], dtype=np.int64)
TOKEN_OUTCOMES = len(_MS)  # 84
CARD_OUTCOME = TOKEN_OUTCOMES  # outcome of card id x: CARD_OUTCOME + x - 1
NUM_OUTCOMES = CARD_OUTCOME + NUM_CARDS  # 126

#: Why `apply_chance` refused an outcome, by its return code.
ERRORS = (
    "",
    "this is not a chance node",
    "that outcome is not possible at this chance node",
)


@njit(cache=True)
def _seek(s, c, node: int, where: int) -> None:
    """Make the first pending event at or after (node, where) the chance node; if none is left, the node is
    NODE_NONE and, at the end of a turn, the turn passes."""
    ctx = c[C_CONTEXT]
    if node == NODE_SPACE:
        limit = s[S.NUM_SPACES] if ctx == CONTEXT_SETUP or s[S.NUM_PLAYERS] == 1 else where + 1
        if 0 <= where < limit:
            total = 0
            for col in range(6):
                total += s[S.POUCH + col]
            if total == 0:  # nothing to draw: the space stays empty, with no draw of the generator
                rules.refill_failed(s)
            else:
                c[C_NODE] = NODE_SPACE
                c[C_WHERE] = where
                c[C_K] = min(3, total)
                return
        node, where = NODE_CARD, 0
    if node == NODE_CARD:
        for m in range(where, s[S.NUM_MARKET]):
            if s[S.MARKET + m] < 0 and s[S.DECK_COUNT] > 0:
                c[C_NODE] = NODE_CARD
                c[C_WHERE] = m
                return
        node, where = NODE_SPIRIT, 0
    if node == NODE_SPIRIT and ctx == CONTEXT_SETUP and s[S.SPIRITS] and where < 2 * s[S.NUM_PLAYERS]:
        c[C_NODE] = NODE_SPIRIT
        c[C_WHERE] = where
        return
    c[C_NODE] = NODE_NONE
    c[C_WHERE] = 0
    if ctx == CONTEXT_TURN:
        rules.finish_turn(s)
    else:  # the set-up is over: forget the Spirits' deal order (hidden information, never needed again)
        for k in range(C_POOL_SHUFFLED, CHANCE_SIZE):
            c[k] = 0


@njit(cache=True)
def init_explicit(s, c, num_players: int, side: int, spirits: int, seed: int, river_loops: int = 0) -> None:
    """Set up a new game in s with its deal left as chance nodes (c: int64 (CHANCE_SIZE,), written)."""
    S.init_blank(s, num_players, side, spirits, seed, river_loops)
    for k in range(CHANCE_SIZE):
        c[k] = 0
    c[C_CONTEXT] = CONTEXT_SETUP
    _seek(s, c, NODE_SPACE, 0)


@njit(cache=True)
def step_explicit(s, c, a: int) -> int:
    """`rules.step` for a game in explicit mode (not at a chance node): an end-of-turn action stops before the
    refills, which become chance nodes. Returns 0, or a `rules.ERRORS` code with s unchanged."""
    if a < A.SOLO_REPLACE or a > A.END_TURN or s[S.GAME_OVER] or (s[S.SPIRITS] and s[S.SPIRIT_KEPT + s[S.CURRENT]] < 0):
        return rules.step(s, a)  # not an end of turn, or refused by the rules with their reason
    code = rules.end_turn_action(s, a)
    if code:
        return code
    c[C_CONTEXT] = CONTEXT_TURN
    _seek(s, c, NODE_SPACE, 0 if s[S.NUM_PLAYERS] == 1 else s[S.TAKEN_SPACE])
    return 0


@njit(cache=True)
def chance_outcomes(s, c, out, probs) -> int:
    """Write the pending node's outcome ids (ascending) into out (int64, >= 84 long) and their probabilities into
    probs (float64, same length); return how many (0 when no chance node is pending). Every probability is > 0."""
    node = c[C_NODE]
    n = 0
    if node == NODE_SPACE:
        k = c[C_K]
        total = 0
        for col in range(6):
            total += s[S.POUCH + col]
        # P(multiset) = orders x P(one draw order) = orders x prod over draws of (left of that colour) / (left)
        den = 1
        for t in range(k):
            den *= total - t
        for o in range(MULTISET_START[k], MULTISET_START[k + 1]):
            num = MULTISET_ORDERS[o]
            prev = -1
            same = 0
            for t in range(k):
                col = MULTISETS[o, t]
                same = same + 1 if col == prev else 0
                num *= s[S.POUCH + col] - same
                prev = col
            if num > 0:
                out[n] = o
                probs[n] = num / den
                n += 1
    elif node == NODE_CARD:
        d = s[S.DECK_COUNT]
        present = 0
        for k in range(d):
            present |= 1 << s[S.DECK + k]
        for card in range(1, FIRST_SPIRIT):
            if (present >> card) & 1:
                out[n] = CARD_OUTCOME + card - 1
                probs[n] = 1.0 / d
                n += 1
    elif node == NODE_SPIRIT:
        for card in range(FIRST_SPIRIT, NUM_CARDS + 1):
            if not _spirit_dealt(s, card):
                out[n] = CARD_OUTCOME + card - 1
                n += 1
        for k in range(n):
            probs[k] = 1.0 / n
    return n


@njit(cache=True, inline="always")
def _spirit_dealt(s, card: int) -> bool:
    for k in range(2 * S.MAX_PLAYERS):
        if s[S.SPIRIT_DEALT + k] == card:
            return True
    return False


@njit(cache=True)
def _after_space(s, c) -> None:
    """Move on from a resolved space node: a short draw means the pouch ran out (the end trigger; solo stops
    refilling), otherwise the next space (set-up, solo) or the market."""
    if c[C_K] < 3:
        rules.refill_failed(s)
        _seek(s, c, NODE_CARD, 0)
    elif c[C_CONTEXT] == CONTEXT_SETUP or s[S.NUM_PLAYERS] == 1:
        _seek(s, c, NODE_SPACE, c[C_WHERE] + 1)
    else:
        _seek(s, c, NODE_CARD, 0)


@njit(cache=True)
def _deal_card(s, c, k: int) -> None:
    """Deal draw-pile entry k into the pending market slot and move on."""
    d = s[S.DECK_COUNT] - 1
    card = s[S.DECK + k]
    s[S.DECK + k] = s[S.DECK + d]
    s[S.DECK + d] = 0
    s[S.DECK_COUNT] = d
    s[S.MARKET + c[C_WHERE]] = card
    _seek(s, c, NODE_CARD, c[C_WHERE] + 1)


@njit(cache=True)
def apply_chance(s, c, o: int) -> int:
    """Resolve the pending node with outcome o. Returns 0, or an `ERRORS` code with s and c unchanged.

    A space's tokens are written in ascending colour order (their order within a space means nothing in the
    rules); a card comes out of the draw pile wherever it lies (the rest keep their order but for the top card,
    which takes its place)."""
    node = c[C_NODE]
    if node == NODE_NONE:
        return 1
    if node == NODE_SPACE:
        k = c[C_K]
        if o < MULTISET_START[k] or o >= MULTISET_START[k + 1]:
            return 2
        for col in range(6):
            if MULTISET_COUNTS[o, col] > s[S.POUCH + col]:
                return 2
        base = S.CENTRAL + 3 * c[C_WHERE]
        for t in range(3):
            s[base + t] = MULTISETS[o, t] if t < k else -1
        for col in range(6):
            s[S.POUCH + col] -= MULTISET_COUNTS[o, col]
        _after_space(s, c)
        return 0
    card = o - CARD_OUTCOME + 1
    if node == NODE_CARD:
        for k in range(s[S.DECK_COUNT]):
            if s[S.DECK + k] == card and card >= 1:
                _deal_card(s, c, k)
                return 0
        return 2
    if card < FIRST_SPIRIT or card > NUM_CARDS or _spirit_dealt(s, card):
        return 2
    s[S.SPIRIT_DEALT + c[C_WHERE]] = card
    _seek(s, c, NODE_SPIRIT, c[C_WHERE] + 1)
    return 0


@njit(cache=True)
def sample_chance(s, c) -> int:
    """Resolve the pending node with the game's own generator, drawing what the default mode draws there (a space:
    its tokens one by one from the pouch; the first card: the whole draw pile's shuffle, then the top card; the first
    Spirit: the shuffle of the 10 Spirit cards). Returns the outcome id, or -1 if no chance node is pending."""
    node = c[C_NODE]
    if node == NODE_NONE:
        return -1
    if node == NODE_SPACE:
        base = S.CENTRAL + 3 * c[C_WHERE]
        S.fill_space(s, c[C_WHERE])
        key = 0
        for t in range(3):
            key = key * 7 + s[base + t] + 1
        _after_space(s, c)
        return MULTISET_INDEX[_sorted_key(key)]
    if node == NODE_CARD:
        if not c[C_DECK_SHUFFLED]:
            S.shuffle_range(s, S.DECK, s[S.DECK_COUNT])
            c[C_DECK_SHUFFLED] = 1
        card = s[S.DECK + s[S.DECK_COUNT] - 1]
        _deal_card(s, c, s[S.DECK_COUNT] - 1)
        return CARD_OUTCOME + card - 1
    if not c[C_POOL_SHUFFLED]:
        pool = S.shuffled_spirits(s)
        for k in range(10):
            c[C_POOL + k] = pool[k]
        c[C_POOL_SHUFFLED] = 1
    for k in range(10):
        card = c[C_POOL + k]
        if not _spirit_dealt(s, card):
            s[S.SPIRIT_DEALT + c[C_WHERE]] = card
            _seek(s, c, NODE_SPIRIT, c[C_WHERE] + 1)
            return CARD_OUTCOME + card - 1
    return -1


@njit(cache=True)
def _sorted_key(key: int) -> int:
    """The MULTISET_INDEX key of three (colour + 1) digits in base 7, digits sorted with the zeros (-1) last."""
    d = np.array([key // 49, (key // 7) % 7, key % 7])
    for i in range(3):
        if d[i] == 0:
            d[i] = 7  # padding sorts last
    d.sort()
    for i in range(3):
        if d[i] == 7:
            d[i] = 0
    return d[0] * 49 + d[1] * 7 + d[2]


def describe_outcome(o: int) -> str:
    """An outcome id in the game's words: 'tokens blue, gray, gray' or 'card 12 (Bear)'."""
    from .cards import card_name
    from .data import COLOURS

    if not 0 <= o < NUM_OUTCOMES:
        raise ValueError(f"chance outcome {o!r} is outside 0..{NUM_OUTCOMES - 1}")
    if o < TOKEN_OUTCOMES:
        cols = [COLOURS[x] for x in MULTISETS[o] if x >= 0]
        return "tokens " + (", ".join(cols) if cols else "(none)")
    card = o - CARD_OUTCOME + 1
    return f"card {card} ({card_name(card)})"


@njit(cache=True)
def playout(s, c, seed: int, rng, buf) -> int:
    """Play the explicit-chance game (s, c), in place, to its end at random: the game's generator reseeded from seed,
    the draw pile reshuffled (its order was never dealt), the pending chance sampled, then uniformly random actions
    with rng[0] (`rules.random_playout`) and chance dealt inline. The fast rollout of `openspiel.RolloutEvaluator`.
    buf: int64 (NUM_ACTIONS,) scratch. Returns the number of actions played."""
    S.set_rng(s, seed)
    S.chance_random(s)
    S.shuffle_range(s, S.DECK, s[S.DECK_COUNT])
    c[C_DECK_SHUFFLED] = 1
    while c[C_NODE] != NODE_NONE:
        sample_chance(s, c)
    return rules.random_until(s, -1, rng, 0, buf)
