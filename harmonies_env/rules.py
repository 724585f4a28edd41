"""The rules as kernels over one state vector: legal actions, step, end of turn, scores.

`step` validates its action and returns an error code (0 = done); on error the state is untouched, so
the Python layer can raise a precise IllegalActionError. See `actions` for the action table and `state`
for the fields.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import actions as A
from . import state as S
from .cards import (
    CARD_CLASSES,
    CUBES_ON_CARD,
    FIRST_SPIRIT,
    NUM_CARDS,
    STACK_CLASSES,
)
from .geometry import FAST_BIT_GATHER, MAX_CELLS, NUM_CELLS, deposit, lowest_cell, popcount
from .scoring import NUM_CATEGORIES, score_into
from .stacks import ACCEPTED_BY, HEIGHT, STACK_AFTER

#: Why an action was refused, by step()'s return code.
ERRORS = (
    "",  # 0: ok
    "the game is over",
    "the action index is outside the action space",
    "the Spirit card must be chosen first (Spirit variant, first turn)",
    "tokens were already taken from the central board this turn",
    "that central space holds no tokens",
    "no token of that colour is held",
    "that cell is not on this board",
    "that cell holds an animal cube",
    "that stack cannot take a token of that colour",
    "an Animal card was already taken this turn",
    "that market slot holds no card",
    "4 incomplete cards are already held",
    "no incomplete card is held in that slot",
    "that card's habitat does not stand there with a free cube cell",
    "there is no Spirit card to choose",
    "the turn cannot end before tokens are taken",
    "the turn cannot end while a held token can still be placed",
    "replacing a face-up card is a solo-only action",
    "a card was already taken this turn, so none may be replaced",
    "the draw pile is empty, so no card can be replaced",
)
OK = 0


@njit(cache=True, inline="always")
def _bb(s, p: int):
    return s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15]


@njit(cache=True, forceinline=True)
def token_cells(s, p: int, colour: int) -> int:
    """Mask of player p's cells that can take a token of `colour` now."""
    b = S.BITBOARD + 15 * p
    m = (s[b + ACCEPTED_BY[colour, 0]] | s[b + ACCEPTED_BY[colour, 1]] | s[b + ACCEPTED_BY[colour, 2]]
         | s[b + ACCEPTED_BY[colour, 3]])
    return m & ~s[S.CUBES + p]


@njit(cache=True, forceinline=True)
def held_cards(s, p: int) -> int:
    """Incomplete cards player p holds (a kept Spirit without its cube counts)."""
    n = 0
    for h in range(S.MAX_SLOTS):
        if s[S.SLOT + S.MAX_SLOTS * p + h] >= 0:
            n += 1
    return n


@njit(cache=True, forceinline=True)
def _can_place_any(s, p: int) -> bool:
    for c in range(6):
        if s[S.HAND + c] > 0 and token_cells(s, p, c) != 0:
            return True
    return False


@njit(cache=True)
def legal_mask(s, mask, buf) -> int:
    """Set mask (uint8/int8/bool (NUM_ACTIONS,)) to the legal actions; buf is int64 scratch of that size."""
    for k in range(mask.shape[0]):  # a loop: numba's `mask[:] = 0` is not vectorised
        mask[k] = 0
    n = legal_actions(s, buf)
    for k in range(n):
        mask[buf[k]] = 1
    return n


@njit(cache=True, forceinline=True)
def _match_slot(s, p: int, h: int) -> None:
    """Seat p's habitat answer for held slot h (`habitat`: the cells where its card's habitat stands, cubes aside;
    0 for a free slot), from the board's bitboards."""
    card = s[S.SLOT + S.MAX_SLOTS * p + h]
    s[S.HABITAT + S.MAX_SLOTS * p + h] = S.habitat_answer(s, p, card)


@njit(cache=True, forceinline=True)
def _set_stack(s, p: int, i: int, new: int) -> None:
    """Cell i of seat p becomes stack code `new`: stack word, bitboards, and the habitat answers of the held cards
    whose pattern uses a class the cell left or joined (the others cannot change)."""
    old = S.stack_at(s, p, i)
    bit = 1 << i
    s[S.BITBOARD + 15 * p + old] &= ~bit
    s[S.BITBOARD + 15 * p + new] |= bit
    S.set_stack_at(s, p, i, new)
    changed = STACK_CLASSES[old] | STACK_CLASSES[new]
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card >= 0 and CARD_CLASSES[card] & changed:
            _match_slot(s, p, h)


@njit(cache=True)
def refresh_habitats(s) -> None:
    """Recompute every seat's `habitat` answers from its board and slots: for a position built or edited by hand
    (`rules.step` keeps them up to date itself; `Game.from_state` refuses a state whose answers are stale)."""
    for p in range(S.MAX_PLAYERS):
        for h in range(S.MAX_SLOTS):
            if p < s[S.NUM_PLAYERS]:
                _match_slot(s, p, h)
            else:
                s[S.HABITAT + S.MAX_SLOTS * p + h] = 0


@njit(cache=True, forceinline=True)
def close_turn(s) -> None:
    """First part of the end of a turn, before chance: discard what is held (solo: and the central board)."""
    for c in range(6):
        s[S.DISCARDED + c] += s[S.HAND + c]
        s[S.HAND + c] = 0
    if s[S.NUM_PLAYERS] == 1:
        for k in range(3 * s[S.NUM_SPACES]):
            c = s[S.CENTRAL + k]
            if c >= 0:
                s[S.DISCARDED + c] += 1
            s[S.CENTRAL + k] = -1


@njit(cache=True, forceinline=True)
def refill_failed(s) -> None:
    """Note that the pouch could not refill a central space (the end trigger, unless one is already set; solo: the
    end at once). The one rule both refills follow: `refill` here, `chance` in explicit mode."""
    if s[S.NUM_PLAYERS] == 1 or s[S.END_TRIGGER] == 0:
        s[S.END_TRIGGER] = 1


@njit(cache=True, forceinline=True)
def refill(s) -> None:
    """The chance part of the end of a turn: refill the central board from the pouch and the market from the draw
    pile (in explicit-chance mode `chance` resolves these same events one by one instead)."""
    if s[S.NUM_PLAYERS] == 1:
        for sp in range(s[S.NUM_SPACES]):
            if not S.fill_space(s, sp):
                refill_failed(s)
                break
    elif S.took_tokens(s):
        if not S.fill_space(s, s[S.TAKEN_SPACE]):
            refill_failed(s)
    for k in range(s[S.NUM_MARKET]):
        if s[S.MARKET + k] < 0 and s[S.DECK_COUNT] > 0:
            s[S.DECK_COUNT] -= 1
            s[S.MARKET + k] = s[S.DECK + s[S.DECK_COUNT]]
            s[S.DECK + s[S.DECK_COUNT]] = 0


@njit(cache=True, forceinline=True)
def finish_turn(s) -> None:
    """Last part of the end of a turn, after chance: check the end trigger, pass the turn (or end the game)."""
    p = s[S.CURRENT]
    np_ = s[S.NUM_PLAYERS]
    if popcount(s[S.BITBOARD + 15 * p]) <= 2 and s[S.END_TRIGGER] == 0:
        s[S.END_TRIGGER] = 2
    s[S.TURN] += 1
    s[S.TOOK_CARD] = 0
    s[S.TAKEN_SPACE] = -1
    if s[S.END_TRIGGER] and p == np_ - 1:
        s[S.GAME_OVER] = 1
    else:
        # not (p + 1) % np_: a modulo by a variable may raise, and that exit keeps step's reference-count pair
        s[S.CURRENT] = p + 1 if p + 1 < np_ else 0


@njit(cache=True)
def end_turn(s) -> None:
    """Finish the current turn: discard what is held, refill, check the end trigger, pass the turn."""
    close_turn(s)
    refill(s)
    finish_turn(s)


@njit(cache=True, forceinline=True)
def end_turn_action(s, a: int) -> int:
    """Validate an end-of-turn action (END_TURN, or SOLO_REPLACE + m) and do what it does before chance: the solo
    discard of a face-up card, then `close_turn`. Returns 0, or an ERRORS code with s unchanged."""
    p = s[S.CURRENT]
    if not S.took_tokens(s):
        return 16
    if _can_place_any(s, p):
        return 17
    if a < A.END_TURN:
        m = a - A.SOLO_REPLACE
        if s[S.NUM_PLAYERS] != 1:
            return 18
        if s[S.TOOK_CARD]:
            return 19
        if s[S.DECK_COUNT] == 0:
            return 20
        if m >= s[S.NUM_MARKET] or s[S.MARKET + m] < 0:
            return 11
        s[S.MARKET + m] = -1  # the discarded card leaves the game; the refill fills the slot
    close_turn(s)
    return 0


@njit(cache=True)
def step(s, a: int) -> int:
    """Apply action a for the player to move. Returns 0, or an ERRORS code with s unchanged."""
    # One exit, s used once more there, and every helper called here inlined by LLVM (forceinline): each return
    # of its own or call that may raise would keep a reference-count pair of s on every action (docs/engine.md).
    code = 0
    p = s[S.CURRENT]
    choosing = s[S.SPIRITS] and s[S.SPIRIT_KEPT + p] < 0
    side = s[S.SIDE]
    if s[S.GAME_OVER]:
        code = 1
    elif a < 0 or a >= A.NUM_ACTIONS:
        code = 2
    elif a >= A.KEEP_SPIRIT and a < A.SOLO_REPLACE:
        if not choosing:
            code = 15
        else:
            card = s[S.SPIRIT_DEALT + 2 * p + a - A.KEEP_SPIRIT]
            s[S.SPIRIT_KEPT + p] = card
            s[S.SLOT + S.MAX_SLOTS * p] = card  # first turn: every slot is free
            S.set_cubes_placed(s, p, card, 0)
            _match_slot(s, p, 0)
    elif choosing:
        code = 3
    elif a < A.PLACE_TOKEN:
        if S.took_tokens(s):
            code = 4
        elif a >= s[S.NUM_SPACES] or s[S.CENTRAL + 3 * a] < 0:
            code = 5
        else:
            for t in range(3):
                c = s[S.CENTRAL + 3 * a + t]
                if c >= 0:
                    s[S.HAND + c] += 1
                s[S.CENTRAL + 3 * a + t] = -1
            s[S.TAKEN_SPACE] = a
    elif a < A.TAKE_CARD:
        c = (a - A.PLACE_TOKEN) // MAX_CELLS
        i = (a - A.PLACE_TOKEN) % MAX_CELLS
        new = STACK_AFTER[S.stack_at(s, p, i), c] if i < NUM_CELLS[side] else -1
        if s[S.HAND + c] <= 0:
            code = 6
        elif i >= NUM_CELLS[side]:
            code = 7
        elif (s[S.CUBES + p] >> i) & 1:
            code = 8
        elif new < 0:
            code = 9
        else:
            _set_stack(s, p, i, new)
            s[S.HAND + c] -= 1
    elif a < A.PLACE_CUBE:
        m = a - A.TAKE_CARD
        if s[S.TOOK_CARD]:
            code = 10
        elif m >= s[S.NUM_MARKET] or s[S.MARKET + m] < 0:
            code = 11
        elif held_cards(s, p) >= S.MAX_SLOTS:
            code = 12
        else:
            card = s[S.MARKET + m]
            for h in range(S.MAX_SLOTS):
                if s[S.SLOT + S.MAX_SLOTS * p + h] < 0:
                    s[S.SLOT + S.MAX_SLOTS * p + h] = card
                    _match_slot(s, p, h)
                    break
            S.set_cubes_placed(s, p, card, 0)
            s[S.MARKET + m] = -1
            s[S.TOOK_CARD] = 1
    elif a < A.KEEP_SPIRIT:
        h = (a - A.PLACE_CUBE) // MAX_CELLS
        i = (a - A.PLACE_CUBE) % MAX_CELLS
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card < 0:
            code = 13
        elif i >= NUM_CELLS[side]:
            code = 7
        elif not ((s[S.HABITAT + S.MAX_SLOTS * p + h] & ~s[S.CUBES + p]) >> i) & 1:
            code = 14
        else:
            s[S.CUBES + p] |= 1 << i
            k = S.CARD_HELD + card  # held by p: p * 8 + cubes placed
            s[k] += 1
            if card < FIRST_SPIRIT:
                s[S.ANIMAL_CUBES + p] += 1
            if (s[k] & 7) == CUBES_ON_CARD[card]:
                s[S.SLOT + S.MAX_SLOTS * p + h] = -1  # complete: no longer counts toward the 4
                s[S.HABITAT + S.MAX_SLOTS * p + h] = 0
    else:  # end of turn, plain or with a solo card replacement
        code = end_turn_action(s, a)
        if code == 0:
            refill(s)
            finish_turn(s)
    return code + 0 * s.shape[0]


@njit(cache=True)
def seat_score(s, p: int, out) -> int:
    """Seat p's score breakdown into out (int64 (NUM_CATEGORIES,)); returns its total. The one reading of a seat's
    score from a state: `scores_into`, the observation, the batched engine's rewards and the learners' own totals.
    The seat is cast to the state's dtype, as the planner passes it, so that `score_into` compiles once."""
    score_into(s[S.SIDE], _bb(s, p), s[S.CARD_HELD: S.CARD_HELD + NUM_CARDS + 1], S.STATE_DTYPE(p), out,
               s[S.RIVER_LOOPS])
    return out[NUM_CATEGORIES - 1]


@njit(cache=True)
def scores_into(s, out) -> None:
    """Score breakdown of every seat into out (int64 (4, NUM_CATEGORIES)); unused seats stay 0."""
    for p in range(out.shape[0]):  # a loop: numba's `out[:] = 0` is not vectorised
        for k in range(out.shape[1]):
            out[p, k] = 0
    for p in range(s[S.NUM_PLAYERS]):
        seat_score(s, p, out[p])


@njit(cache=True)
def token_total(s) -> int:
    """Tokens accounted for: pouch + central board + hand + boards + discarded (always 120)."""
    n = 0
    for c in range(6):
        n += s[S.POUCH + c] + s[S.HAND + c] + s[S.DISCARDED + c]
    for k in range(15):
        if s[S.CENTRAL + k] >= 0:
            n += 1
    for p in range(s[S.NUM_PLAYERS]):
        for i in range(MAX_CELLS):
            n += HEIGHT[S.stack_at(s, p, i)]
    return n


@njit(cache=True)
def random_action(s, rng, i: int, buf) -> int:
    """A uniformly random legal action of the player to move (the game must not be over).

    rng[i]: the player's int64 generator (`state.random_below`), advanced by one draw; buf: int64 (NUM_ACTIONS,)
    scratch.
    """
    return nth_legal(s, buf, S.random_below(rng, i, count_legal(s, buf)))


@njit(cache=True)
def random_until(s, seat: int, rng, i: int, buf) -> int:
    """Play uniformly random legal actions for every seat but `seat` until `seat` is to move or the game ends.

    The engine's one random-play loop: the Versus envs' built-in opponents (`env_gym`, `batch`), whole random
    games (`random_playout`, `random_games`, `batch.rollout_batch`). seat = -1 plays to the end of the game.
    rng[i]: the player's int64 generator (`state.random_below`, kept apart from the game's own chance); buf: int64
    (NUM_ACTIONS,) scratch. Returns the number of actions played.
    """
    steps = 0
    while not s[S.GAME_OVER] and s[S.CURRENT] != seat:
        step(s, nth_legal(s, buf, S.random_below(rng, i, count_legal(s, buf))))
        steps += 1
    return steps


@njit(cache=True)
def random_playout(s, rng, buf) -> int:
    """Play uniformly random legal actions until the game ends; return the number of actions taken.

    rng: int64 (1,) generator state of the player (kept apart from the game's own chance); buf: int64
    scratch of NUM_ACTIONS (`random_until` with seat -1).
    """
    return random_until(s, -1, rng, 0, buf)


@njit(cache=True)
def random_games(num_players: int, side: int, spirits: int, seed: int, games: int) -> int:
    """Play `games` whole uniformly random games inside numba (game seeds seed, seed+1, ...).

    Returns the total number of actions taken. This is the engine's raw speed, with no Python per step.
    """
    s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    rng = np.zeros(1, dtype=np.int64)
    rng[0] = seed ^ 0x5DEECE66D
    buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    total = 0
    for g in range(games):
        S.init_state(s, num_players, side, spirits, seed + g)
        total += random_playout(s, rng, buf)
    return total


# ---------------------------------------------------------------------------------------------------------
# Legal actions. The rules of legality are written once, as bit sets per region of the action table (the
# `_*_bits` helpers below, and `token_cells` / `cards.habitat_cells_grid`); `legal_actions` lists them as action
# indices and `write_mask` writes them into a bool mask, the whole mask or only some regions (the batched engine
# rewrites only what an action can have changed). Both give the actions in the same ascending order.
# ---------------------------------------------------------------------------------------------------------
@njit(cache=True, forceinline=True)
def _choosing_spirit(s, p: int) -> bool:
    """Whether player p must first keep one of the two dealt Spirit cards (its only legal actions)."""
    return s[S.SPIRITS] != 0 and s[S.SPIRIT_KEPT + p] < 0


@njit(cache=True, forceinline=True)
def _space_bits(s) -> int:
    """Central spaces that can be taken now (bit sp): none once tokens were taken this turn."""
    m = 0
    if not S.took_tokens(s):
        for sp in range(s[S.NUM_SPACES]):
            if s[S.CENTRAL + 3 * sp] >= 0:
                m |= 1 << sp
    return m


@njit(cache=True, forceinline=True)
def _card_bits(s, held: int) -> int:
    """Market slots whose card can be taken now (bit k), given the number of incomplete cards held."""
    m = 0
    if not s[S.TOOK_CARD] and held < S.MAX_SLOTS:
        for k in range(s[S.NUM_MARKET]):
            if s[S.MARKET + k] >= 0:
                m |= 1 << k
    return m


@njit(cache=True, forceinline=True)
def _replace_bits(s) -> int:
    """Market slots whose card may be replaced at the end of the turn (bit k): solo only, no card taken, a
    draw pile to refill from."""
    m = 0
    if s[S.NUM_PLAYERS] == 1 and not s[S.TOOK_CARD] and s[S.DECK_COUNT] > 0:
        for k in range(s[S.NUM_MARKET]):
            if s[S.MARKET + k] >= 0:
                m |= 1 << k
    return m


@njit(cache=True, forceinline=True)
def _may_end(s, placeable: bool) -> bool:
    """Whether the turn may end: tokens were taken and no held token can be placed."""
    return S.took_tokens(s) and not placeable


#: The action table's regions, in the listing's order: 0 central spaces, 1-6 token colours, 7 market cards, 8-11 held
#: card slots, 12 solo replacements (END_TURN follows them all); `_region_base` gives each one's first action.
NUM_REGIONS = 13


@njit(cache=True, forceinline=True)
def _region_base(region: int) -> int:
    """The first action of a region of the action table (`NUM_REGIONS`): a constant wherever region is one."""
    base = A.SOLO_REPLACE
    if region == 0:
        base = A.TAKE_TOKENS
    elif region <= 6:
        base = A.PLACE_TOKEN + MAX_CELLS * (region - 1)
    elif region == 7:
        base = A.TAKE_CARD
    elif region <= 11:
        base = A.PLACE_CUBE + MAX_CELLS * (region - 8)
    return base


@njit(cache=True, forceinline=True)
def _region_bits(s, p: int, region: int, held: int, placeable: bool) -> int:
    """The legal actions of one region of the action table (bit k: `_region_base(region)` + k), for player p holding
    `held` incomplete cards; `placeable`: whether a held token can be placed (regions 1-6 say it), which the solo
    replacements need. The one statement of legality that `legal_actions` and `count_legal` read."""
    m = 0
    if region == 0:
        m = _space_bits(s)
    elif region <= 6:  # a product, not a branch: whether a colour is in hand is a coin toss to the predictor
        m = token_cells(s, p, region - 1) * (s[S.HAND + region - 1] > 0)
    elif region == 7:
        m = _card_bits(s, held)
    elif region <= 11:
        m = s[S.HABITAT + S.MAX_SLOTS * p + region - 8] & ~s[S.CUBES + p]  # 0 for a free slot
    elif _may_end(s, placeable):
        m = _replace_bits(s)
    return m + 0 * s.shape[0]  # s used on every path: one exit keeps its reference counts prunable (docs/engine.md)


@njit(cache=True, forceinline=True)
def _emit(out, n: int, base: int, m: int) -> int:
    """Write base + each set bit of m into out from out[n] on, ascending; return the new count."""
    while m:
        out[n] = base + lowest_cell(m)
        m &= m - 1
        n += 1
    return n + 0 * out.shape[0]  # one exit, out used on it (docs/engine.md)


@njit(cache=True)
def legal_actions(s, out) -> int:
    """Write the legal action indices into out (int64, >= NUM_ACTIONS long), ascending; return how many.

    A held card's cells come from the state's habitat answers (`habitat`, kept up to date by `step`), so a listing
    matches no habitat.
    """
    # One exit, one listing loop written here: an early return, an inlined helper handed `out` or a slice of `s` each
    # leave reference-count calls on every listing (docs/engine.md, "Hot kernels").
    n = 0
    p = s[S.CURRENT]
    if s[S.GAME_OVER]:
        n = 0
    elif _choosing_spirit(s, p):
        out[0] = A.KEEP_SPIRIT
        out[1] = A.KEEP_SPIRIT + 1
        n = 2
    else:
        # the regions in the listing's order, the loop split by region kind so that each call's region tests fold
        # away (one loop over the 13 regions took twice as long)
        held = held_cards(s, p)
        placeable = False
        n = _emit(out, n, _region_base(0), _region_bits(s, p, 0, held, placeable))
        for region in range(1, 7):
            m = _region_bits(s, p, region, held, placeable)
            if m:
                placeable = True
            n = _emit(out, n, _region_base(region), m)
        n = _emit(out, n, _region_base(7), _region_bits(s, p, 7, held, placeable))
        for region in range(8, 12):
            n = _emit(out, n, _region_base(region), _region_bits(s, p, region, held, placeable))
        n = _emit(out, n, _region_base(12), _region_bits(s, p, 12, held, placeable))
        if _may_end(s, placeable):
            out[n] = A.END_TURN
            n += 1
    # The arrays used once more here, on every path, so that each dies in this one block: numba's pruner then
    # removes the reference-count pair of each argument (decrefs spread over the paths were left in place).
    return n + 0 * (s.shape[0] + out.shape[0])


@njit(cache=True, forceinline=True)
def count_legal(s, regions) -> int:
    """How many actions are legal (the game must not be over), writing each region's legal set into regions[0:13]
    (int64 scratch) for `nth_legal`. With it, random play draws `legal_actions`' r-th action without listing: the
    sets are counted by popcounts and only the drawn action is found."""
    p = s[S.CURRENT]
    n = 2
    if not _choosing_spirit(s, p):
        held = held_cards(s, p)
        placeable = False
        m = _region_bits(s, p, 0, held, placeable)
        regions[0] = m
        n = popcount(m)
        for region in range(1, 7):  # the loop split by region kind: each call's region tests fold away
            m = _region_bits(s, p, region, held, placeable)
            if m:
                placeable = True
            regions[region] = m
            n += popcount(m)
        m = _region_bits(s, p, 7, held, placeable)
        regions[7] = m
        n += popcount(m)
        for region in range(8, 12):
            m = _region_bits(s, p, region, held, placeable)
            regions[region] = m
            n += popcount(m)
        m = _region_bits(s, p, 12, held, placeable)
        regions[12] = m
        n += popcount(m)
        if _may_end(s, placeable):
            n += 1
    return n + 0 * (s.shape[0] + regions.shape[0])  # one exit, every array used (as above)


@njit(cache=True, forceinline=True)
def _nth_bit_deposit(m: int, r: int) -> int:
    return lowest_cell(deposit(1 << r, m))


@njit(cache=True, forceinline=True)
def _nth_bit_halving(m: int, r: int) -> int:
    at = 0
    for width in (16, 8, 4, 2, 1):
        low = popcount(m & ((1 << width) - 1))
        if r >= low:
            r -= low
            m >>= width
            at += width
    return at  # after the step of width w the bit sought is among m's lowest w: after width 1, it is bit 0


#: _nth_bit(m, r): the index of the r-th lowest set bit of m (a mask below 2**32 with more than r bits set). Bit r
#: deposited on m's set bits where the CPU has a fast `pdep` (`geometry.FAST_BIT_GATHER`), else by halving (a loop
#: clearing r bits ends after a number of turns the predictor cannot guess). tests/test_random_play compares them.
_nth_bit = _nth_bit_deposit if FAST_BIT_GATHER else _nth_bit_halving


@njit(cache=True, forceinline=True)
def nth_legal(s, regions, r: int) -> int:
    """`legal_actions(s, out)` then `out[r]`, from `count_legal(s, regions)`'s sets (0 <= r < its count)."""
    a = A.END_TURN
    if _choosing_spirit(s, s[S.CURRENT]):
        a = A.KEEP_SPIRIT + r
    else:
        for region in range(NUM_REGIONS):
            m = regions[region]
            c = popcount(m)
            if r < c:
                a = _region_base(region) + _nth_bit(m, r)
                break
            r -= c
    return a + 0 * (s.shape[0] + regions.shape[0])  # one exit, every array used (as above)


#: Regions of the action mask that `write_mask` can rewrite on their own (bit flags).
MASK_TOKENS, MASK_PLACE, MASK_CARD, MASK_CUBE, MASK_TAIL = 1, 2, 4, 8, 16
MASK_ALL = 31


@njit(cache=True, inline="always")
def _set_bits(mask, base: int, m: int) -> None:
    """Set mask[base + each set bit of m]."""
    while m:
        mask[base + lowest_cell(m)] = 1
        m &= m - 1


@njit(cache=True, inline="always")
def _clear(mask, lo: int, hi: int, clear: bool) -> None:
    if clear:
        for k in range(lo, hi):
            mask[k] = 0


@njit(cache=True)
def write_mask(s, mask, regions: int, cube_slots: int) -> None:
    """Rewrite the `regions` (MASK_* flags) of mask (bool (NUM_ACTIONS,)) to the legal actions of s.

    MASK_ALL gives exactly `legal_mask` (the same rules as `legal_actions`, from the same helpers). A part of the
    regions suffices after an action that cannot have changed the others (the batched engine's incremental
    masks: see `batch`); MASK_CUBE rewrites only the held-card slots in `cube_slots` (bit h = slot h; 15 = all).
    """
    full = regions == MASK_ALL
    p = s[S.CURRENT]
    if full:
        for k in range(A.NUM_ACTIONS):
            mask[k] = 0
        if s[S.GAME_OVER]:
            return
        if _choosing_spirit(s, p):
            mask[A.KEEP_SPIRIT] = 1
            mask[A.KEEP_SPIRIT + 1] = 1
            return
    part = not full
    if regions & MASK_TOKENS:
        _clear(mask, A.TAKE_TOKENS, A.PLACE_TOKEN, part)
        _set_bits(mask, A.TAKE_TOKENS, _space_bits(s))
    if regions & (MASK_PLACE | MASK_TAIL):
        placeable = False
        if regions & MASK_PLACE:
            _clear(mask, A.PLACE_TOKEN, A.TAKE_CARD, part)
        for c in range(6):
            if s[S.HAND + c] > 0:
                m = token_cells(s, p, c)
                if m:
                    placeable = True
                    if regions & MASK_PLACE:
                        _set_bits(mask, A.PLACE_TOKEN + MAX_CELLS * c, m)
        if regions & MASK_TAIL:
            _clear(mask, A.SOLO_REPLACE, A.NUM_ACTIONS, part)
            if _may_end(s, placeable):
                _set_bits(mask, A.SOLO_REPLACE, _replace_bits(s))
                mask[A.END_TURN] = 1
    if regions & (MASK_CARD | MASK_CUBE):
        held = held_cards(s, p)
        if regions & MASK_CARD:
            _clear(mask, A.TAKE_CARD, A.PLACE_CUBE, part)
            _set_bits(mask, A.TAKE_CARD, _card_bits(s, held))
        if regions & MASK_CUBE:
            for h in range(S.MAX_SLOTS):
                if (cube_slots >> h) & 1:
                    base = A.PLACE_CUBE + MAX_CELLS * h
                    _clear(mask, base, base + MAX_CELLS, part)
                    _set_bits(mask, base, s[S.HABITAT + S.MAX_SLOTS * p + h] & ~s[S.CUBES + p])
