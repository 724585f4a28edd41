"""Afterstates of whole-turn plans and their public features: what the learned value network reads.

Why afterstates: a Harmonies turn holds no chance (the refill happens at END), so each candidate whole-turn plan
leads to one exact position just before END, its *afterstate*. A value network that scores afterstates can rank
every candidate of every game in one batched forward pass, and is trained by Monte-Carlo targets from self-play
(TD-Gammon's recipe). The candidates come from the greedy planner's beam (`agents.greedy.plan_turn`); the network,
not the beam, decides among them.

Features (float32 (NUM_FEATURES,)) read public fields only: boards, cubes, held cards and cubes placed, scores,
the central board, the market, pouch counts, turn and end trigger. Never the draw pile order, the generator or
other players' dealt Spirits. Seats are relative to the player who just moved (block 0 = the mover, block j =
the j-th seat after it; absent seats are zero), so one network serves every seat and 1-4 players:

* global (`GLOBAL`): players one-hot (4), side, Spirits, turn / 50, end triggered, pouch by colour / 20, pouch
  total / 120, central board colour counts per space (5 x 6) / 3, and per market slot (5): present, the card's
  full points / 20, cubes / 5;
* per seat (`SEAT`), 4 blocks: score by category / 20 (total / 100), the greedy potential terms / 10
  (`greedy.potential_terms`), empty cells / 25, "no turn left", animal cubes / 10; per held slot (4): present,
  Spirit, next cube's points / 10, cubes left / 5, habitat distance one-hot (0, 1, 2, 3+); per market slot (5)
  the habitat distance one-hot of that card for this seat (0, 1, 2, 3+); then the board: stack code one-hot per
  cell (25 x 15) and the cube mask (25).

Bump `FEATURE_VERSION` whenever the layout changes: checkpoints record it and refuse a mismatch.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import play_plan
from harmonies_env.cards import CARD_POINTS, CUBES_ON_CARD, FIRST_SPIRIT, NUM_CARDS
from harmonies_env.geometry import NUM_SYMMETRIES, SYMMETRIES, popcount
from harmonies_env.scoring import NUM_CATEGORIES, score_into

from .greedy.habitats import habitat_near
from .greedy.planner import MAX_PLAN, plan_candidates, plan_turn
from .greedy.terms import NUM_TERMS, TERMS_SCRATCH, habitat_slot, no_turn_left, terms_and_needs

#: Layout version of `afterstate_features` (stored in checkpoints).
FEATURE_VERSION = 1
_NC = NUM_CARDS + 1
_CELLS = 25
_CODES = 15
#: Numbers about the whole position.
GLOBAL = 4 + 2 + 2 + 6 + 1 + S.MAX_SPACES * 6 + S.MAX_MARKET * 3
#: Numbers per seat block, before the board / the board part (stack one-hot + cubes).
SEAT_HEAD = NUM_CATEGORIES + NUM_TERMS + 3 + S.MAX_SLOTS * 8 + S.MAX_MARKET * 4
#: Numbers per seat block that describe the board (stack one-hot per cell, then the cube mask).
SEAT_BOARD = _CELLS * _CODES + _CELLS
SEAT = SEAT_HEAD + SEAT_BOARD
#: Length of one afterstate's feature vector.
NUM_FEATURES = GLOBAL + S.MAX_PLAYERS * SEAT
#: Index of the board-side feature (0 = Side A, 1 = Side B).
SIDE_FEATURE = 4


@njit(cache=True)
def _distance_onehot(d: int, out, o: int) -> None:
    out[o + (d if d < 3 else 3)] = 1.0


@njit(cache=True)
def afterstate_features(s, p: int, out) -> None:
    """Features of state s seen by seat p (the player who just planned its turn) into out: float32 (NUM_FEATURES,).

    s: int32 (STATE_SIZE,), any position (normally a plan's afterstate, just before END); reads public fields only.
    """
    for j in range(out.shape[0]):
        out[j] = 0.0
    _features(s, p, out, True, out[:0], np.empty(NUM_CATEGORIES, dtype=np.int64),
              np.empty(TERMS_SCRATCH, dtype=np.int64), np.empty((0, 2), dtype=np.int64))


@njit(cache=True)
def afterstate_head_features(s, p: int, out) -> None:
    """`afterstate_features` without the boards' one-hots: out (float32 (NUM_FEATURES,)) holds the same numbers in the
    global block and each seat's first SEAT_HEAD numbers; the board parts are left as they were. Why: the n-tuple
    network's linear part reads only these, for every candidate it ranks."""
    _zero_heads(out)
    _features(s, p, out, False, out[:0], np.empty(NUM_CATEGORIES, dtype=np.int64),
              np.empty(TERMS_SCRATCH, dtype=np.int64), np.empty((0, 2), dtype=np.int64))


@njit(cache=True)
def candidate_head_features(s, p: int, out, others) -> None:
    """`afterstate_head_features` of an afterstate s of p's turn, the other seats' blocks taken from others (float32
    (NUM_FEATURES,): `afterstate_head_features` of the position where p's turn began). Why: p's turn changes no
    other seat's board, cards, cubes or score, only the market (a card taken: that slot's habitat distances are
    zero), so ranking a turn's candidates computes the other seats' numbers once (the same numbers)."""
    candidate_head_total(s, p, out, others, np.empty(NUM_CATEGORIES, dtype=np.int64),
                         np.empty(TERMS_SCRATCH, dtype=np.int64), np.empty((0, 2), dtype=np.int64))


@njit(cache=True)
def candidate_head_total(s, p: int, out, others, sc, scratch, near) -> int:
    """`candidate_head_features` with its scratch passed in (sc int64 (NUM_CATEGORIES,), scratch int64
    (TERMS_SCRATCH,)), returning p's total score at s (sc holds p's score by category): the ranking loop reads both.
    near int64 (MAX_MARKET, 2) (or (0, 2): none): the market cards' habitat distances on p's board, (card, distance)
    by slot, read where the card matches and written where computed: candidates on the same board (stacks and
    cubes) share them."""
    _zero_heads(out)
    return _features(s, p, out, False, others, sc, scratch, near)


@njit(cache=True)
def _zero_heads(out) -> None:
    for j in range(GLOBAL):
        out[j] = 0.0
    for q in range(S.MAX_PLAYERS):
        for j in range(GLOBAL + q * SEAT, GLOBAL + q * SEAT + SEAT_HEAD):
            out[j] = 0.0


@njit(cache=True)
def _features(s, p: int, out, boards: bool, others, sc, scratch, near) -> int:
    """The features of `afterstate_features` into out (zero where nothing is written), the boards' one-hots only
    with boards; the other seats' heads copied from others unless it is empty (`candidate_head_features`). sc int64
    (NUM_CATEGORIES,), scratch int64 (TERMS_SCRATCH,): scratch; near: p's market distances (`candidate_head_total`).
    Returns p's total score."""
    n = s[S.NUM_PLAYERS]
    side = s[S.SIDE]
    out[n - 1] = 1.0
    out[SIDE_FEATURE] = side
    out[5] = s[S.SPIRITS]
    out[6] = s[S.TURN] / 50.0
    out[7] = 1.0 if s[S.END_TRIGGER] else 0.0
    total = 0
    for c in range(6):
        out[8 + c] = s[S.POUCH + c] / 20.0
        total += s[S.POUCH + c]
    out[14] = total / 120.0
    o = 15
    for sp in range(S.MAX_SPACES):
        for t in range(3):
            c = s[S.CENTRAL + 3 * sp + t]
            if c >= 0:
                out[o + 6 * sp + c] += 1.0 / 3.0
    o += 6 * S.MAX_SPACES
    for m in range(S.MAX_MARKET):
        card = s[S.MARKET + m]
        if card > 0:
            out[o + 3 * m] = 1.0
            k = CUBES_ON_CARD[card]
            out[o + 3 * m + 1] = CARD_POINTS[card, k - 1] / 20.0 if k > 0 else 0.0
            out[o + 3 * m + 2] = k / 5.0
    need = scratch[:36].reshape((9, 4))
    total = 0
    for j in range(n):
        q = S.STATE_DTYPE((p + j) % n)  # int32 as the planner's seats (the sum is int64): its kernels compile once
        base = GLOBAL + j * SEAT
        if j > 0 and others.shape[0] > 0:
            for k in range(base, base + SEAT_HEAD):
                out[k] = others[k]
            at = base + SEAT_HEAD - 4 * S.MAX_MARKET
            for m in range(S.MAX_MARKET):
                if s[S.MARKET + m] <= 0:
                    for k in range(at + 4 * m, at + 4 * m + 4):
                        out[k] = 0.0
            continue
        bb = s[S.BITBOARD + 15 * q: S.BITBOARD + 15 * q + 15]
        cubes = s[S.CUBES + q]
        score_into(side, bb, s[S.CARD_HELD: S.CARD_HELD + _NC], q, sc, s[S.RIVER_LOOPS])
        for c in range(NUM_CATEGORIES - 1):
            out[base + c] = sc[c] / 20.0
        out[base + NUM_CATEGORIES - 1] = sc[NUM_CATEGORIES - 1] / 100.0
        if j == 0:
            total = sc[NUM_CATEGORIES - 1]
        terms = terms_and_needs(s, q, scratch)
        for k in range(NUM_TERMS):
            out[base + NUM_CATEGORIES + k] = terms[k] / 10.0
        h = base + NUM_CATEGORIES + NUM_TERMS
        out[h] = popcount(bb[0]) / 25.0
        out[h + 1] = 1.0 if no_turn_left(s, q) else 0.0
        out[h + 2] = s[S.ANIMAL_CUBES + q] / 10.0
        h += 3
        for slot in range(S.MAX_SLOTS):
            card = s[S.SLOT + S.MAX_SLOTS * q + slot]
            o = h + 8 * slot
            if card < 0:
                continue
            out[o] = 1.0
            if card >= FIRST_SPIRIT:
                out[o + 1] = 1.0
                out[o + 3] = 0.2
                _distance_onehot(habitat_slot(s, q, slot, scratch), out, o + 4)
                continue
            k = S.cubes_placed(s, q, card)
            left = CUBES_ON_CARD[card] - k
            if left > 0:
                out[o + 2] = (CARD_POINTS[card, k] - (CARD_POINTS[card, k - 1] if k > 0 else 0)) / 10.0
            out[o + 3] = left / 5.0
            _distance_onehot(habitat_slot(s, q, slot, scratch), out, o + 4)
        h += 8 * S.MAX_SLOTS
        for m in range(S.MAX_MARKET):
            card = s[S.MARKET + m]
            if card > 0:
                if j == 0 and near.shape[0] > 0:
                    if near[m, 0] != card:
                        near[m, 0] = card
                        near[m, 1] = habitat_near(side, cubes, card, need)
                    d = near[m, 1]
                else:
                    d = habitat_near(side, cubes, card, need)
                _distance_onehot(d, out, h + 4 * m)
        h += 4 * S.MAX_MARKET
        if not boards:
            continue
        for i in range(_CELLS):
            code = S.stack_at(s, q, i) if i < S.MAX_CELLS else 0
            if code > 0:
                out[h + _CODES * i + code] = 1.0
            elif (bb[0] >> i) & 1:
                out[h + _CODES * i] = 1.0
            if (cubes >> i) & 1:
                out[h + _CODES * _CELLS + i] = 1.0
    return total


def _board_gather() -> np.ndarray:
    """BOARD_GATHER[side, k] -> for each number of a seat's board block after symmetry k, the one it takes from the
    block before: int64 (2, NUM_SYMMETRIES, SEAT_BOARD)."""
    out = np.zeros((2, NUM_SYMMETRIES, SEAT_BOARD), dtype=np.int64)
    for side in range(2):
        for k in range(NUM_SYMMETRIES):
            inv = np.argsort(SYMMETRIES[side, k])  # cell i goes to SYMMETRIES[side, k, i]: new cell j came from inv[j]
            for j in range(_CELLS):
                out[side, k, _CODES * j: _CODES * j + _CODES] = _CODES * inv[j] + np.arange(_CODES)
                out[side, k, _CODES * _CELLS + j] = _CODES * _CELLS + inv[j]
    return out


BOARD_GATHER = _board_gather()


def symmetry_index(sides: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Columns that turn feature rows into those of the same positions with every seat's board mirrored.

    sides int (B,) board side of each row (0 = A, 1 = B); ks int (B, MAX_PLAYERS) the symmetry (0..3,
    `geometry.SYMMETRIES`) applied to each relative seat's board. Returns int64 (B, NUM_FEATURES): x[b, idx[b]] is
    exactly `afterstate_features` of the mirrored position (tested), because every other feature (scores, potential
    terms, habitat distances) is the same for a board and its mirror images. Why: the value of a position does not
    change under these symmetries, so training on random mirror images (data augmentation) stops the network from
    learning a board's cells one by one.
    """
    sides = np.asarray(sides, dtype=np.int64)
    ks = np.asarray(ks, dtype=np.int64)
    idx = np.broadcast_to(np.arange(NUM_FEATURES, dtype=np.int64), (len(sides), NUM_FEATURES)).copy()
    for j in range(S.MAX_PLAYERS):
        start = GLOBAL + j * SEAT + SEAT_HEAD
        idx[:, start: start + SEAT_BOARD] = start + BOARD_GATHER[sides, ks[:, j]]
    return idx


#: MIRRORS[side, k] -> `symmetry_index` with symmetry k applied to every seat's board: int64 (2, NUM_SYMMETRIES,
#: NUM_FEATURES), computed once because the agents mirror every decision's candidates (`agents.mlp.mirrored_outputs`).
MIRRORS = symmetry_index(np.repeat(np.arange(2), NUM_SYMMETRIES),
                         np.repeat(np.tile(np.arange(NUM_SYMMETRIES), 2)[:, None], S.MAX_PLAYERS, axis=1)
                         ).reshape(2, NUM_SYMMETRIES, NUM_FEATURES)


def spirit_choice(first_action):
    """Whether a plan starting with this action (int or int array) is the first-turn Spirit choice, which changes no
    board (the planner's order decides it; no afterstate is recorded for it)."""
    return (first_action >= A.KEEP_SPIRIT) & (first_action < A.KEEP_SPIRIT + 2)


@njit(cache=True)
def plan_afterstate(s, plan, n: int) -> None:
    """Apply plan[:n] to s (int32 (STATE_SIZE,), modified) up to, not including, END_TURN: the exact afterstate
    (`batch.play_plan` with before_end)."""
    play_plan(s, plan, n, True)


@njit(cache=True)
def candidate_features(s, w, beam: int, diverse: bool, plans, lens, values, feats) -> int:
    """Plan the mover's turn in s (not modified) and describe each candidate's afterstate.

    w: float64 (NUM_TERMS,) planner weights; beam: planner beam; diverse: the candidates cover every central space
    and card choice (`greedy.plan_candidates`, a beam per space) instead of the plain beam's best plans
    (`greedy.plan_turn`). plans int64 (K, MAX_PLAN), lens int64 (K,), values float64 (K,) receive the K candidates
    (the planner's best first); feats float32 (K, NUM_FEATURES) their afterstates' features for the mover. Returns the
    number of candidates.
    """
    if diverse:
        n = plan_candidates(s, w, beam, plans, lens, values)
    else:
        n = plan_turn(s, w, beam, plans, lens, values)
    p = s[S.CURRENT]
    t = np.empty_like(s)
    for k in range(n):
        S.copy_state(t, s)
        plan_afterstate(t, plans[k], lens[k])
        afterstate_features(t, p, feats[k])
    return n


@njit(cache=True, nogil=True)
def candidate_rows(lo: int, hi: int, states, active, w, beam: int, diverse: bool, plans, lens, values, feats,
                   counts) -> None:
    """`candidate_features` for rows lo..hi-1 of states (int32 (N, STATE_SIZE)) whose active[r] is True.

    plans int64 (N, K, MAX_PLAN), lens int64 (N, K), values float64 (N, K), feats float32 (N, K, NUM_FEATURES),
    counts int64 (N,) (0 for inactive rows). Releases the GIL, so row ranges can run in threads.
    """
    for r in range(lo, hi):
        if active[r] and not states[r, S.GAME_OVER]:
            counts[r] = candidate_features(states[r], w, beam, diverse, plans[r], lens[r], values[r], feats[r])
        else:
            counts[r] = 0


__all__ = ["FEATURE_VERSION", "NUM_FEATURES", "GLOBAL", "SEAT", "SEAT_BOARD", "MAX_PLAN", "afterstate_features",
           "afterstate_head_features", "candidate_head_features", "SEAT_HEAD",
           "SIDE_FEATURE", "symmetry_index", "MIRRORS", "plan_afterstate", "spirit_choice", "candidate_features",
           "candidate_rows"]
