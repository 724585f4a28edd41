"""Seeded random play across every configuration, with the game's invariants checked after EVERY action.

The checker is a numba kernel that plays one game and re-derives, from the stack array and from the
rules text (not from the engine's own tables), what must hold after each micro-action; it returns the
first broken invariant. Python then replays each game's record through `Game.replay` and compares states.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import RULE_STACKS, rule_after_table
from habitat_reference import placement_habitat_cells
from numba import njit

from harmonies_env import actions as A
from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.cards import CUBES_ON_CARD, FIRST_SPIRIT, NUM_CARDS
from harmonies_env.game import Game
from harmonies_env.geometry import MAX_CELLS, NUM_CELLS
from harmonies_env.stacks import STACKS

RULE_AFTER = rule_after_table()
RULE_HEIGHT = np.array([len(st) for st in STACKS], dtype=np.int64)

#: What the checker's return codes mean.
FAILURES = (
    "",
    "no legal action for the player to move while the game is not over",
    "legal_actions listed an action twice",
    "a listed legal action was refused by step",
    "an illegal action was accepted by step",
    "a refused action changed the state",
    "tokens are not all accounted for (120)",
    "a stack code is out of range, or a cell off the board / an unused seat holds tokens",
    "bitboards disagree with the stack array",
    "a cube lies on an empty cell or off the board",
    "cubes on the board disagree with cubes moved off cards",
    "animal cube count disagrees with cubes moved off animal cards",
    "incomplete cards disagree with held slots, or more than 4 are held",
    "a token was placed on a cell holding a cube",
    "a token placement built a stack the rules forbid",
    "a cube placement did not add exactly one cube on an unchanged cell",
    "the mask disagrees with the stacking rule for placing a held token",
    "end of turn legality disagrees with 'tokens taken and none placeable'",
    "take-tokens legality disagrees with the central board / turn state",
    "take-card legality disagrees with the market / 4-card limit / one card per turn",
    "a turn did not place (or discard as unplaceable) exactly 3 tokens",
    "a turn took tokens other than exactly once, or cards more than once",
    "the emptied central space was not refilled although the pouch had tokens",
    "the market was not refilled to its size although the draw pile had cards",
    "solo: the leftover central tokens were not discarded",
    "the game-end trigger disagrees with the board / pouch",
    "the game ended with players on different turn counts, or without a trigger",
    "the game did not end within 5000 actions",
    "Spirit choice: the mask is not exactly 'keep one of the 2 dealt'",
    "a negative count in the pouch or the hand",
    "place-cube legality lists a cell with a cube or an empty cell",
)


@njit(cache=False)
def _popcount(x: int) -> int:
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


@njit(cache=False)
def _board_tokens(s, p: int, height) -> int:
    n = 0
    for i in range(MAX_CELLS):
        n += height[S.stack_at(s, p, i)]
    return n


@njit(cache=False)
def _check_position(s, after, height, cubes_on_card) -> int:
    """Invariants of a position (no history needed); 0 or a FAILURES code."""
    npl = s[S.NUM_PLAYERS]
    ncell = NUM_CELLS[s[S.SIDE]]
    n = 0
    for c in range(6):
        if s[S.POUCH + c] < 0 or s[S.HAND + c] < 0:
            return 29
        n += s[S.POUCH + c] + s[S.HAND + c] + s[S.DISCARDED + c]
    for k in range(15):
        if s[S.CENTRAL + k] >= 0:
            n += 1
    for p in range(S.MAX_PLAYERS):
        for i in range(MAX_CELLS):
            code = S.stack_at(s, p, i)
            if code < 0 or code >= 15 or (code != 0 and (p >= npl or i >= ncell)):
                return 7
            n += height[code]
    if n != 120 or rules.token_total(s) != 120:
        return 6
    for p in range(npl):
        full = (1 << ncell) - 1
        union = 0
        for k in range(15):
            m = 0
            for i in range(ncell):
                if S.stack_at(s, p, i) == k:
                    m |= 1 << i
            if s[S.BITBOARD + 15 * p + k] != m:
                return 8
            union |= m
        if union != full:
            return 8
        cubes = s[S.CUBES + p]
        if cubes & ~full or cubes & s[S.BITBOARD + 15 * p]:
            return 9
        moved = 0
        animal = 0
        incomplete = 0
        for card in range(1, NUM_CARDS + 1):
            k = S.cubes_placed(s, p, card)
            if k < -1 or k > cubes_on_card[card]:
                return 12
            if k > 0:
                moved += k
                if card < FIRST_SPIRIT:
                    animal += k
            if k >= 0 and k < cubes_on_card[card]:
                incomplete += 1
                found = False
                for h in range(S.MAX_SLOTS):
                    if s[S.SLOT + S.MAX_SLOTS * p + h] == card:
                        found = True
                if not found:
                    return 12
        if _popcount(cubes) != moved:
            return 10
        if s[S.ANIMAL_CUBES + p] != animal:
            return 11
        held = 0
        for h in range(S.MAX_SLOTS):
            if s[S.SLOT + S.MAX_SLOTS * p + h] >= 0:
                held += 1
        if held != incomplete or incomplete > 4:
            return 12
    return 0


@njit(cache=False)
def _check_mask(s, buf, mark, after) -> int:
    """The legal list against the rules, re-derived for every action kind but habitats; 0 or a code."""
    n = rules.legal_actions(s, buf)
    if n == 0:
        return 1
    mark[:] = 0
    for k in range(n):
        if mark[buf[k]]:
            return 2
        mark[buf[k]] = 1
    p = s[S.CURRENT]
    if s[S.SPIRITS] and s[S.SPIRIT_KEPT + p] < 0:
        if n != 2 or not mark[A.KEEP_SPIRIT] or not mark[A.KEEP_SPIRIT + 1]:
            return 28
        return 0
    ncell = NUM_CELLS[s[S.SIDE]]
    cubes = s[S.CUBES + p]
    placeable = False
    for c in range(6):
        for i in range(MAX_CELLS):
            ok = (s[S.HAND + c] > 0 and i < ncell and not (cubes >> i) & 1
                  and after[S.stack_at(s, p, i), c] >= 0)
            placeable = placeable or ok
            if ok != (mark[A.PLACE_TOKEN + MAX_CELLS * c + i] == 1):
                return 16
    if (mark[A.END_TURN] == 1) != (s[S.TAKEN_SPACE] >= 0 and not placeable):
        return 17
    for sp in range(5):
        ok = s[S.TAKEN_SPACE] < 0 and sp < s[S.NUM_SPACES] and s[S.CENTRAL + 3 * sp] >= 0
        if ok != (mark[A.TAKE_TOKENS + sp] == 1):
            return 18
    held = 0
    for h in range(S.MAX_SLOTS):
        if s[S.SLOT + S.MAX_SLOTS * p + h] >= 0:
            held += 1
    for m in range(5):
        ok = s[S.TOOK_CARD] == 0 and held < 4 and m < s[S.NUM_MARKET] and s[S.MARKET + m] >= 0
        if ok != (mark[A.TAKE_CARD + m] == 1):
            return 19
    for h in range(S.MAX_SLOTS):
        for i in range(MAX_CELLS):
            if mark[A.PLACE_CUBE + MAX_CELLS * h + i]:
                if (s[S.SLOT + S.MAX_SLOTS * p + h] < 0 or i >= ncell or (cubes >> i) & 1
                        or S.stack_at(s, p, i) == 0):
                    return 30
    return 0


@njit(cache=False)
def _unlisted(mark, start: int) -> int:
    """The first action at or after `start` (cyclically) that is not marked legal.

    A separate kernel on purpose: written inline in play_checked, LLVM -O3 spends minutes on the loop.
    """
    for j in range(A.NUM_ACTIONS):
        b = (start + j) % A.NUM_ACTIONS
        if mark[b] == 0:
            return b
    return -1


@njit(cache=False)
def play_checked(s, seed: int, out_actions, buf, mark, tmp, after, height, cubes_on_card):
    """Play one random game from the set-up state s, checking every action; returns (code, actions)."""
    rng = np.zeros(1, dtype=np.int64)
    rng[0] = seed * 7919 + 17
    npl = s[S.NUM_PLAYERS]
    err = _check_position(s, after, height, cubes_on_card)
    if err:
        return err, 0
    turn_start_tokens = _board_tokens(s, s[S.CURRENT], height)
    takes = 0
    cards = 0
    steps = 0
    while not s[S.GAME_OVER]:
        if steps >= 5000:
            return 27, steps
        err = _check_mask(s, buf, mark, after)
        if err:
            return err, steps
        n = rules.legal_actions(s, buf)
        a = buf[S.random_below(rng, 0, n)]
        # one random illegal action must be refused without any change
        if n < A.NUM_ACTIONS:
            b = _unlisted(mark, S.random_below(rng, 0, A.NUM_ACTIONS))
            tmp[:] = s
            if rules.step(tmp, b) == 0:
                return 4, steps
            for k in range(tmp.shape[0]):
                if tmp[k] != s[k]:
                    return 5, steps
        tmp[:] = s  # the position before the action
        p = s[S.CURRENT]
        if rules.step(s, a) != 0:
            return 3, steps
        out_actions[steps] = a
        steps += 1
        err = _check_position(s, after, height, cubes_on_card)
        if err:
            return err, steps
        if a < A.PLACE_TOKEN:
            takes += 1
        elif a < A.TAKE_CARD:
            c = (a - A.PLACE_TOKEN) // MAX_CELLS
            i = (a - A.PLACE_TOKEN) % MAX_CELLS
            if (tmp[S.CUBES + p] >> i) & 1:
                return 13, steps
            if after[S.stack_at(tmp, p, i), c] != S.stack_at(s, p, i):
                return 14, steps
        elif a < A.PLACE_CUBE:
            cards += 1
        elif a < A.KEEP_SPIRIT:
            i = (a - A.PLACE_CUBE) % MAX_CELLS
            if (s[S.CUBES + p] ^ tmp[S.CUBES + p]) != (1 << i) or (tmp[S.CUBES + p] >> i) & 1:
                return 15, steps
            for k in range(MAX_CELLS):
                if S.stack_at(s, p, k) != S.stack_at(tmp, p, k):
                    return 15, steps
        if s[S.TURN] != tmp[S.TURN]:  # the turn ended with this action
            held = 0
            for c in range(6):
                held += tmp[S.HAND + c]
            if _board_tokens(s, p, height) - turn_start_tokens + held != 3:
                return 20, steps
            if takes != 1 or cards > 1:
                return 21, steps
            pouch_before = 0
            for c in range(6):
                pouch_before += tmp[S.POUCH + c]
            refill_failed = pouch_before < 3 * (s[S.NUM_SPACES] if npl == 1 else 1)
            if npl == 1:
                left = 0
                for k in range(15):
                    if tmp[S.CENTRAL + k] >= 0:
                        left += 1
                disc = 0
                for c in range(6):
                    disc += s[S.DISCARDED + c] - tmp[S.DISCARDED + c]
                if left != 6 or disc != left + held:
                    return 24, steps
            else:
                sp = tmp[S.TAKEN_SPACE]
                full = s[S.CENTRAL + 3 * sp] >= 0 and s[S.CENTRAL + 3 * sp + 2] >= 0
                if full == refill_failed:
                    return 22, steps
            deck = s[S.DECK_COUNT]
            for m in range(s[S.NUM_MARKET]):
                if s[S.MARKET + m] < 0 and deck > 0:
                    return 23, steps
            empty = _popcount(s[S.BITBOARD + 15 * p])
            if tmp[S.END_TRIGGER] == 0:
                want = 1 if refill_failed else (2 if empty <= 2 else 0)
                if s[S.END_TRIGGER] != want:
                    return 25, steps
            elif s[S.END_TRIGGER] != tmp[S.END_TRIGGER]:
                return 25, steps
            if s[S.GAME_OVER]:
                if s[S.TURN] % npl != 0 or s[S.END_TRIGGER] == 0:
                    return 26, steps
            elif s[S.CURRENT] != (p + 1) % npl or (s[S.END_TRIGGER] != 0 and p == npl - 1):
                return 26, steps
            takes = 0
            cards = 0
            turn_start_tokens = _board_tokens(s, s[S.CURRENT], height)
    return 0, steps


CONFIGS = [(n, side, sp) for n in (1, 2, 3, 4) for side in ("A", "B") for sp in (False, True)]
GAMES_PER_CONFIG = 64  # 16 configurations -> 1,024 games


@pytest.mark.parametrize("num_players,side,spirits", CONFIGS)
def test_random_games_keep_every_invariant_and_replay(num_players: int, side: str, spirits: bool) -> None:
    buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    mark = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    tmp = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    acts = np.zeros(5000, dtype=np.int64)
    turns = []
    for g in range(GAMES_PER_CONFIG):
        seed = 1000 * num_players + 100 * (side == "B") + 50 * spirits + g * 7 + 12345
        game = Game(num_players, side, spirits, seed)
        s = game.state.copy()
        code, n = play_checked(s, seed, acts, buf, mark, tmp, RULE_AFTER, RULE_HEIGHT, CUBES_ON_CARD)
        assert code == 0, (f"{num_players}p side {side} spirits={spirits} seed {seed}, after {n} actions "
                           f"{acts[:n].tolist()}: {FAILURES[code]}")
        rec = {"version": 1, "num_players": num_players, "side": side, "spirits": spirits, "seed": seed,
               "actions": acts[:n].tolist()}
        replayed = Game.replay(rec)
        assert replayed.is_over
        assert np.array_equal(replayed.state, s), f"seed {seed}: replaying the record gives another game"
        assert Game.replay(replayed.to_json()).state.tobytes() == s.tobytes()
        turns.append(int(s[S.TURN]))
    if num_players == 1:
        assert max(turns) <= 13, "solo: the 13th turn's refill cannot be completed, so no game is longer"
    else:
        assert max(turns) <= 36, "2-4 players: the pouch runs out after 35 refills, so at most 36 turns"


def test_rule_stacks_are_the_engines_stacks() -> None:
    """The checker's independent stacking table is about the same 15 stacks the engine encodes."""
    assert set(STACKS) == RULE_STACKS and len(STACKS) == 15


@njit(cache=False)
def _stale_habitat_answers(num_players, side, spirits, seed, games) -> tuple[int, int, int, int]:
    """Random games that take cards and place cubes whenever they can; at every position, each held slot's habitat
    answer in the state (`habitat`, kept by `rules.step`) against the placement-by-placement reference matcher on the
    board. Returns (answers that differ, answers compared, of which not empty, cubes placed)."""
    s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    rng = np.zeros(1, dtype=np.int64)
    rng[0] = seed
    buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    bb = np.zeros(15, dtype=np.int64)
    bad = 0
    compared = 0
    standing = 0
    cubes = 0
    for g in range(games):
        S.init_state(s, num_players, side, spirits, seed + g)
        while not s[S.GAME_OVER]:
            for p in range(num_players):
                for k in range(15):
                    bb[k] = s[S.BITBOARD + 15 * p + k]
                for h in range(S.MAX_SLOTS):
                    card = s[S.SLOT + S.MAX_SLOTS * p + h]
                    want = placement_habitat_cells(side, bb, 0, card) if card > 0 else 0
                    compared += card > 0
                    standing += want != 0
                    bad += s[S.HABITAT + S.MAX_SLOTS * p + h] != want
            n = rules.legal_actions(s, buf)
            a = buf[S.random_below(rng, 0, n)]
            for k in range(n):  # a cube first, else a card, when there is one: answers change most
                if buf[k] >= A.PLACE_CUBE and buf[k] < A.KEEP_SPIRIT:
                    a = buf[k]
                    cubes += 1
                    break
                if buf[k] >= A.TAKE_CARD and buf[k] < A.PLACE_CUBE:
                    a = buf[k]
            rules.step(s, a)
    return bad, compared, standing, cubes


@pytest.mark.parametrize("num_players,side,spirits", [(1, 1, 1), (2, 0, 0), (4, 1, 1)])
def test_the_states_habitat_answers_are_the_reference_matchers(num_players: int, side: int, spirits: int) -> None:
    """The habitat answers the state keeps (updated by `step` only for the held cards a placement can change) are,
    at every position, what the reference matcher finds on the board; listings read them."""
    bad, compared, standing, cubes = _stale_habitat_answers(num_players, side, spirits, 4242, 10)
    assert compared > 1000 and standing > 20 and cubes >= 5, (compared, standing, cubes)
    assert bad == 0, f"{bad} of {compared} habitat answers are stale"


@njit(cache=True)
def _counted_differs_from_listed(num_players: int, side: int, spirits: int, seed: int, games: int):
    """At every position of `games` random games: (positions where count_legal / nth_legal disagree with
    legal_actions for some r, positions compared, the most legal actions seen)."""
    s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    listed = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    regions = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    rng = np.zeros(1, dtype=np.int64)
    bad = 0
    compared = 0
    most = 0
    for g in range(games):
        S.init_state(s, num_players, side, spirits, seed + g)
        while not s[S.GAME_OVER]:
            n = rules.legal_actions(s, listed)
            wrong = rules.count_legal(s, regions) != n
            for r in range(n):
                wrong = wrong or rules.nth_legal(s, regions, r) != listed[r]
            bad += wrong
            compared += 1
            most = max(most, n)
            rules.step(s, listed[S.random_below(rng, 0, n)])
    return bad, compared, most


@pytest.mark.parametrize("num_players,side,spirits", [(1, 0, 0), (1, 1, 1), (2, 0, 1), (3, 1, 0), (4, 1, 1)])
def test_random_play_draws_the_listings_rth_action(num_players: int, side: int, spirits: int) -> None:
    """Random play (`random_until`, `random_action`) counts the legal actions and finds only the drawn one; that is
    `legal_actions`' r-th action for every r, so a seeded random game is the one a listing would have played."""
    bad, compared, most = _counted_differs_from_listed(num_players, side, spirits, 99 + num_players, 12)
    assert compared > 500 and most > 40, (compared, most)
    assert bad == 0, f"{bad} of {compared} positions"


@njit(cache=True)
def _nth_bit_disagreements(masks) -> int:
    """(m, r) pairs, r below m's bit count, where the two ways of finding m's r-th set bit disagree or miss it."""
    bad = 0
    for m in masks:
        r = 0
        for i in range(32):
            if (m >> i) & 1:
                bad += rules._nth_bit(m, r) != i or rules._nth_bit_halving(m, r) != i
                r += 1
    return bad


def test_nth_bit_by_deposit_and_by_halving_agree() -> None:
    """`rules._nth_bit` (pdep where the CPU has it fast) and the halving used elsewhere find the same bit, the r-th
    lowest, in every mask below 2**32 tried (single bits, full masks, random ones)."""
    rng = np.random.default_rng(46)
    masks = np.array([1 << i for i in range(32)] + [2**32 - 1, 0x55555555, 0x80000001]
                     + list(rng.integers(1, 2**32, 2000)), dtype=np.int64)
    assert _nth_bit_disagreements(masks) == 0
