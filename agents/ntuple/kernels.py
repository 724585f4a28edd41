"""The n-tuple network's jitted kernels (pure functions over arrays and scalars): the weight layout, the look-ups a
board selects, the value of afterstates, candidate ranking, batched self-play turns and the search's leaves (the
TD(lambda) updates that train them are `learning.py`'s). The classes that wrap them and the checkpoint files are in
agent.py and search.py; the package docstring (agents/ntuple/__init__.py) says what the network is."""
from __future__ import annotations

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import outcome, play_plan
from harmonies_env.cards import NUM_CARDS
from harmonies_env.geometry import MAX_CELLS, NEIGHBOURS, NUM_CELLS, SYMMETRIES
from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

from ..afterstate import (
    GLOBAL,
    NUM_FEATURES,
    SEAT,
    SEAT_HEAD,
    afterstate_head_features,
    candidate_head_total,
)
from ..greedy import MAX_PLAN, no_turn_left, plan_candidates, plan_turn
from ..greedy.terms import TERMS_SCRATCH
from .market import CARD_SCRATCH, MARKET_ACTIVE, MARKET_WEIGHTS, NEED_ROW, market_keys, market_sum

#: Layout version of new weight vectors (stored in checkpoints): 2 = the board shapes and the card shapes; layout 1
#: (the board shapes only, the first shipped networks) still loads and plays; layout 3 = a layout-2 vector per game
#: stage (`STAGE_STARTS`); layout 4 = layout 2 and the market tables (`market.MARKET_SHAPES`). Any other is refused.
NTUPLE_VERSION = 2
#: Contents a cell can have: stack code 0..14, + 15 with an animal cube.
VALUES = 30
_NC = NUM_CARDS + 1
#: Indices into `afterstate_features` that the linear part reads: the global block and each seat's head (no board).
LINEAR_INDEX = np.concatenate([np.arange(GLOBAL)] + [np.arange(GLOBAL + j * SEAT, GLOBAL + j * SEAT + SEAT_HEAD)
                                                      for j in range(S.MAX_PLAYERS)]).astype(np.int64)
#: Linear weights: one per `LINEAR_INDEX` feature, then the bias.
NUM_LINEAR = len(LINEAR_INDEX) + 1
#: The board shapes and their table sizes (in weight-vector order after the linear part).
SHAPES = ("cell", "pair", "triangle", "line", "rhombus")
_SIZES = (2 * MAX_CELLS * VALUES, VALUES ** 2, VALUES ** 3, VALUES ** 3, VALUES ** 4)
#: Layout 2's card shapes (after the board shapes): a table per held card id (1..42, row 0 unused) of the cells,
#: pairs, triangles and lines of the mover's board, selected once for each card the mover holds.
CARD_SHAPES = ("card_cell", "card_pair", "card_triangle", "card_line")
_CARD_SIZES = (_NC * VALUES, _NC * VALUES ** 2, _NC * VALUES ** 3, _NC * VALUES ** 3)
#: OFFSETS[k] -> first weight of table k (k = 0: the linear part, 1-5: SHAPES, 6-9: CARD_SHAPES); OFFSETS[-1] =
#: NUM_WEIGHTS.
OFFSETS = np.cumsum([0, NUM_LINEAR, *_SIZES, *_CARD_SIZES]).astype(np.int64)
#: Layout 3 (multistage weights, Yeh et al. 2016): the mover's own turn (0-based: completed turns // players, as an
#: afterstate of that turn holds it) from which each stage's layout-2 block values the afterstates. Why: what a pattern
#: is still worth depends on how many turns remain to use it, which one shared table can only average.
STAGE_STARTS = np.array([0, 3, 6], dtype=np.int64)
STAGES = STAGE_STARTS.shape[0]
#: One stage's weights: a whole layout-2 vector.
STAGE_WEIGHTS = int(OFFSETS[-1])
#: Weights of each layout: layout 1 ends where the card tables begin; layout 3 is STAGES layout-2 blocks; layout 4
#: is layout 2 then the market tables.
LAYOUT_WEIGHTS = {1: int(OFFSETS[len(SHAPES) + 1]), 2: int(OFFSETS[-1]), 3: STAGES * int(OFFSETS[-1]),
                  4: int(OFFSETS[-1]) + MARKET_WEIGHTS}
#: Where layout 4's market tables begin (a longer vector than this that is not layout 3's has them).
MARKET_FROM = LAYOUT_WEIGHTS[2]
_MULTI = LAYOUT_WEIGHTS[3]
#: Layout 1's length: a longer vector has the card tables (the kernels read the layout from the vector's length).
CARD_FROM = LAYOUT_WEIGHTS[1]
NUM_WEIGHTS = LAYOUT_WEIGHTS[NTUPLE_VERSION]
#: Where the greedy planner's potential terms sit among the linear weights (the mover's seat block).
_TERMS_AT = GLOBAL + NUM_CATEGORIES


def _placements() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every placement of each shape on each side's board, from `geometry.NEIGHBOURS` (computed once).

    Returns ORBIT int64 (2, 25) (a cell's orbit under the side's symmetries: the smallest cell it maps to), PAIRS,
    TRIANGLES, LINES, RHOMBI int64 (2, max, k) (cells; -1 padded) and COUNTS int64 (2, 4) (placements per shape).
    Lines are (end, middle, end); rhombi are (tip, shared, shared, tip).
    """
    orbit = np.zeros((2, MAX_CELLS), dtype=np.int64)
    found: list[list[list[tuple[int, ...]]]] = [[[], [], [], []], [[], [], [], []]]
    for side in range(2):
        n = int(NUM_CELLS[side])
        for i in range(MAX_CELLS):
            orbit[side, i] = int(SYMMETRIES[side, :, i].min())
        nb = [set(int(j) for j in NEIGHBOURS[side, i] if j >= 0) for i in range(n)]
        for i in range(n):
            for j in sorted(nb[i]):
                if j > i:
                    found[side][0].append((i, j))
                    common = sorted(nb[i] & nb[j])
                    for k in common:
                        if k > j:
                            found[side][1].append((i, j, k))
                    if len(common) == 2:
                        found[side][3].append((common[0], i, j, common[1]))
            for d in range(3):  # N, NE, SE: each straight line once
                m = int(NEIGHBOURS[side, i, d])
                e = int(NEIGHBOURS[side, m, d]) if m >= 0 else -1
                if e >= 0:
                    found[side][2].append((i, m, e))
    counts = np.array([[len(found[s][k]) for k in range(4)] for s in range(2)], dtype=np.int64)
    out = []
    for k, width in enumerate((2, 3, 3, 4)):
        a = np.full((2, int(counts[:, k].max()), width), -1, dtype=np.int64)
        for side in range(2):
            if found[side][k]:
                a[side, : len(found[side][k])] = np.array(found[side][k], dtype=np.int64)
        out.append(a)
    return orbit, out[0], out[1], out[2], out[3], counts


ORBIT, PAIRS, TRIANGLES, LINES, RHOMBI, COUNTS = _placements()
#: Most tuple weights one board selects (a look-up per placement of every shape, and of every card shape per held
#: card, and a market look-up per held and face-up card).
MAX_ACTIVE = (MAX_CELLS + int(COUNTS.sum(axis=1).max())
              + S.MAX_SLOTS * (MAX_CELLS + int(COUNTS[:, :3].sum(axis=1).max())) + MARKET_ACTIVE)


# ------------------------------------------------------------------------------------------------ kernels

@njit(cache=True, inline="always")
def stage_of(s) -> int:
    """The game stage of afterstate s (0..STAGES-1): where the mover's own turn index stands in `STAGE_STARTS`."""
    t = s[S.TURN] // max(1, s[S.NUM_PLAYERS])
    st = 0
    for i in range(1, STAGES):
        if t >= STAGE_STARTS[i]:
            st = i
    return st


@njit(cache=True, inline="always")
def stage_start(w, s) -> int:
    """Where the weights that value afterstate s begin in w: 0 for layouts 1 and 2, its stage's block in layout 3
    (they run for `stage_length(w)`)."""
    return stage_of(s) * STAGE_WEIGHTS if w.shape[0] == _MULTI else 0


@njit(cache=True, inline="always")
def stage_length(w) -> int:
    """How many weights value one afterstate: w's length in layouts 1, 2 and 4, a layout-2 block in layout 3."""
    return STAGE_WEIGHTS if w.shape[0] == _MULTI else w.shape[0]


@njit(cache=True, inline="always")
def stage_weights(w, s):
    """The weights that value afterstate s, a view: w (layouts 1, 2, 4) or its stage's layout-2 block (layout 3)."""
    lo = stage_start(w, s)
    return w[lo: lo + stage_length(w)]


@njit(cache=True)
def cell_values(s, p: int, out) -> None:
    """Content of each cell of seat p's board: stack code + 15 if an animal cube stands there. out int64 (25,)."""
    cubes = s[S.CUBES + p]
    for i in range(MAX_CELLS):
        out[i] = S.stack_at(s, p, i) + (VALUES // 2 if (cubes >> i) & 1 else 0)


@njit(cache=True)
def tuple_indices(s, p: int, idx, cards: bool, market: bool = False) -> int:
    """The weights (indices into the weight vector) that seat p's board selects, into idx int64 (>= MAX_ACTIVE,);
    returns how many. Keys are the same for a shape's mirror images and rotations (module docstring). cards (layout
    2): also the card shapes, once for each card p holds; market (layout 4, with cards): then the market tables'
    look-ups (`market.market_keys`)."""
    side = s[S.SIDE]
    v = np.empty(MAX_CELLS, dtype=np.int64)
    cell_values(s, p, v)
    V = VALUES
    k = 0
    for i in range(NUM_CELLS[side]):
        idx[k] = OFFSETS[1] + (side * MAX_CELLS + ORBIT[side, i]) * V + v[i]
        k += 1
    for t in range(COUNTS[side, 0]):
        a = v[PAIRS[side, t, 0]]
        b = v[PAIRS[side, t, 1]]
        idx[k] = OFFSETS[2] + min(a, b) * V + max(a, b)
        k += 1
    for t in range(COUNTS[side, 1]):
        a = v[TRIANGLES[side, t, 0]]
        b = v[TRIANGLES[side, t, 1]]
        c = v[TRIANGLES[side, t, 2]]
        lo = min(a, min(b, c))
        hi = max(a, max(b, c))
        idx[k] = OFFSETS[3] + (lo * V + (a + b + c - lo - hi)) * V + hi
        k += 1
    for t in range(COUNTS[side, 2]):
        a = v[LINES[side, t, 0]]
        m = v[LINES[side, t, 1]]
        c = v[LINES[side, t, 2]]
        idx[k] = OFFSETS[4] + (m * V + min(a, c)) * V + max(a, c)
        k += 1
    for t in range(COUNTS[side, 3]):
        a = v[RHOMBI[side, t, 0]]
        b = v[RHOMBI[side, t, 1]]
        c = v[RHOMBI[side, t, 2]]
        d = v[RHOMBI[side, t, 3]]
        idx[k] = OFFSETS[5] + ((min(a, d) * V + max(a, d)) * V + min(b, c)) * V + max(b, c)
        k += 1
    if not cards:
        return k
    n = NUM_CELLS[side]
    kp = n  # the board's pair, triangle and line indices, as keys: a card table adds its base and the card's block
    kt = kp + COUNTS[side, 0]
    kl = kt + COUNTS[side, 1]
    ke = kl + COUNTS[side, 2]
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card < 0:
            continue
        for i in range(n):
            idx[k] = OFFSETS[6] + card * V + v[i]
            k += 1
        o = OFFSETS[7] + card * V * V - OFFSETS[2]
        for t in range(kp, kt):
            idx[k] = o + idx[t]
            k += 1
        o = OFFSETS[8] + card * V * V * V - OFFSETS[3]
        for t in range(kt, kl):
            idx[k] = o + idx[t]
            k += 1
        o = OFFSETS[9] + card * V * V * V - OFFSETS[4]
        for t in range(kl, ke):
            idx[k] = o + idx[t]
            k += 1
    if market:
        m = np.empty(MARKET_ACTIVE, dtype=np.int64)
        km = market_keys(s, p, m, np.empty(NEED_ROW, dtype=np.int64))
        for t in range(km):
            idx[k] = MARKET_FROM + m[t]
            k += 1
    return k


@njit(cache=True)
def linear_features(s, p: int, feats, lin) -> None:
    """The linear part's inputs for seat p in s: `afterstate_features` (into feats float32 (NUM_FEATURES,),
    scratch; only the non-board numbers, `afterstate_head_features`) gathered at LINEAR_INDEX, then 1 (the bias),
    into lin float64 (NUM_LINEAR,)."""
    afterstate_head_features(s, p, feats)
    _gather(feats, lin)


@njit(cache=True)
def _gather(feats, lin) -> None:
    """lin = feats at LINEAR_INDEX, then 1 (the bias)."""
    for j in range(LINEAR_INDEX.shape[0]):
        lin[j] = feats[LINEAR_INDEX[j]]
    lin[LINEAR_INDEX.shape[0]] = 1.0


@njit(cache=True, inline="always")
def linear_sum(w, lin) -> float:
    """The linear part, w[j] x lin[j] added in order from 0, skipping the zero inputs (most are: absent seats,
    one-hots): bit for bit the full sum for finite weights, since a product with a zero input is +-0 and adding +-0
    to a sum that starts at +0 changes nothing."""
    v = 0.0
    for j in range(lin.shape[0]):
        x = lin[j]
        if x != 0.0:
            v += float(w[j]) * x
    return v


@njit(cache=True)
def value_of(w, idx, k: int, lin) -> float:
    """The network's output for selected weights idx[:k] and linear inputs lin: float64 sum."""
    v = linear_sum(w, lin)
    for j in range(k):
        v += float(w[idx[j]])
    return v


@njit(cache=True)
def remaining(s, p: int, w, idx, feats, lin) -> float:
    """Predicted points seat p still scores after afterstate s: 0 when p has no turn left, else the network (the
    same sum as `value_of` over `tuple_indices`, in the same order, without writing the indices: idx is unused)."""
    if no_turn_left(s, p):
        return 0.0
    linear_features(s, p, feats, lin)
    return network(s, p, w, lin)


@njit(cache=True)
def network(s, p: int, w, lin) -> float:
    """The network's output for seat p at s given its linear inputs lin: the linear part, then the tuple weights
    (`tuple_sum`), summed in `value_of`'s order (layout 3: s's stage's block of w)."""
    ws = stage_weights(w, s)
    return tuple_sum(s, p, ws, linear_sum(ws, lin))


#: Keys `tuple_sum` computes once per board: cell values, then the pair, triangle and line keys (a card table's index is
#: its base + the card's block + the same key as the board's table).
_KEYS = MAX_CELLS + int(COUNTS[:, 0].max()) + int(COUNTS[:, 1].max()) + int(COUNTS[:, 2].max())


@njit(cache=True, inline="always")
def _key_starts(side: int):
    """Where `board_keys` puts the pair, triangle and line keys in val (after the MAX_CELLS cell values)."""
    kt = MAX_CELLS + COUNTS[side, 0]
    return MAX_CELLS, kt, kt + COUNTS[side, 1]


@njit(cache=True, inline="always")
def board_keys(s, p: int, val) -> None:
    """Seat p's tuple keys into val int64 (_KEYS,): its cell values (stack code + 15 under a cube) at 0.., then the
    pair, triangle and line keys (a card table's index is its base + the card's block + the same key)."""
    side = s[S.SIDE]
    V = VALUES
    cubes = s[S.CUBES + p]
    for i in range(MAX_CELLS):
        val[i] = S.stack_at(s, p, i) + (V // 2 if (cubes >> i) & 1 else 0)
    kp, kt, kl = _key_starts(side)
    for t in range(COUNTS[side, 0]):
        a = val[PAIRS[side, t, 0]]
        b = val[PAIRS[side, t, 1]]
        val[kp + t] = min(a, b) * V + max(a, b)
    for t in range(COUNTS[side, 1]):
        a = val[TRIANGLES[side, t, 0]]
        b = val[TRIANGLES[side, t, 1]]
        c = val[TRIANGLES[side, t, 2]]
        lo = min(a, min(b, c))
        hi = max(a, max(b, c))
        val[kt + t] = (lo * V + (a + b + c - lo - hi)) * V + hi
    for t in range(COUNTS[side, 2]):
        a = val[LINES[side, t, 0]]
        m = val[LINES[side, t, 1]]
        c = val[LINES[side, t, 2]]
        val[kl + t] = (m * V + min(a, c)) * V + max(a, c)


@njit(cache=True, inline="always")
def board_sum(side: int, w, val, v: float) -> float:
    """v + the board tables' weights (cells, pairs, triangles, lines, rhombi) for the keys `board_keys` wrote, added
    one by one in `tuple_indices` order."""
    V = VALUES
    kp, kt, kl = _key_starts(side)
    o = OFFSETS[1] + side * MAX_CELLS * V
    for i in range(NUM_CELLS[side]):
        v += float(w[o + ORBIT[side, i] * V + val[i]])
    o = OFFSETS[2]
    for t in range(kp, kt):
        v += float(w[o + val[t]])
    o = OFFSETS[3]
    for t in range(kt, kl):
        v += float(w[o + val[t]])
    o = OFFSETS[4]
    for t in range(kl, kl + COUNTS[side, 2]):
        v += float(w[o + val[t]])
    o = OFFSETS[5]
    for t in range(COUNTS[side, 3]):
        a = val[RHOMBI[side, t, 0]]
        b = val[RHOMBI[side, t, 1]]
        c = val[RHOMBI[side, t, 2]]
        d = val[RHOMBI[side, t, 3]]
        v += float(w[o + ((min(a, d) * V + max(a, d)) * V + min(b, c)) * V + max(b, c)])
    return v


@njit(cache=True, inline="always")
def card_sum(side: int, card: int, w, val, v: float) -> float:
    """v + one held card's tables (cells, pairs, triangles, lines) for the keys `board_keys` wrote, in
    `tuple_indices` order."""
    V = VALUES
    kp, kt, kl = _key_starts(side)
    o = OFFSETS[6] + card * V
    for i in range(NUM_CELLS[side]):
        v += float(w[o + val[i]])
    o = OFFSETS[7] + card * V * V
    for t in range(kp, kt):
        v += float(w[o + val[t]])
    o = OFFSETS[8] + card * V * V * V
    for t in range(kt, kl):
        v += float(w[o + val[t]])
    o = OFFSETS[9] + card * V * V * V
    for t in range(kl, kl + COUNTS[side, 2]):
        v += float(w[o + val[t]])
    return v


@njit(cache=True)
def tuple_sum(s, p: int, w, v: float) -> float:
    """v + the tuple weights seat p's board selects, added one by one in `tuple_indices` order (so the float64 sum
    is bit for bit `value_of`'s), reading the layout from w's length. Each pair, triangle and line key is computed
    once and reused by every held card's table (the card tables index by card, then the board table's key)."""
    side = s[S.SIDE]
    val = np.empty(_KEYS, dtype=np.int64)
    board_keys(s, p, val)
    v = board_sum(side, w, val, v)
    if w.shape[0] <= CARD_FROM:
        return v
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card >= 0:
            v = card_sum(side, card, w, val, v)
    if w.shape[0] > MARKET_FROM:  # layout 4 (w is one stage's block in layout 3)
        m = np.empty(MARKET_ACTIVE, dtype=np.int64)
        km = market_keys(s, p, m, np.empty(NEED_ROW, dtype=np.int64))
        for t in range(km):
            v += float(w[MARKET_FROM + m[t]])
    return v


@njit(cache=True)
def evaluate_batch(states, seats, w, out) -> None:
    """`remaining` of every row: states int32 (B, STATE_SIZE) afterstates, seats int64 (B,) whose view; out float64
    (B,). One jitted call for a batch of afterstates."""
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    for b in range(states.shape[0]):
        out[b] = remaining(states[b], seats[b], w, idx, feats, lin)


@njit(cache=True)
def candidate_values(s, w, planner, beam: int, plans, lens, pvals, values, after) -> int:
    """Plan the mover's turn in s (not modified) with `greedy.plan_candidates` (beam `beam` per central space, as
    many candidates as plans has rows) and value each for the mover: its total at the afterstate + `remaining`.
    values float64 (K,) out; after int32 (STATE_SIZE,) scratch. The first-turn Spirit choice (no afterstate) gets
    the planner's order (-k). Returns the number of candidates.

    Why it is fast: most candidates share their board with others (they differ in the card taken), so the tuple
    sums are kept per distinct board: the board tables once, and each held card's tables once per board and card
    (`board_sum`, `card_sum`); a candidate adds its linear part, its board's sum and its cards' sums. That is the
    same value as `remaining` up to float64 rounding (~1e-13: the weights are added in another order)."""
    n = plan_candidates(s, planner, beam, plans, lens, pvals)
    if n == 0:
        return 0
    if plans[0, 0] >= A.KEEP_SPIRIT and plans[0, 0] < A.KEEP_SPIRIT + 2:  # the Spirit choice: planner's order
        for k in range(n):
            values[k] = -k
        return n
    p = s[S.CURRENT]
    side = s[S.SIDE]
    ws = stage_weights(w, s)  # every candidate's afterstate is of this turn: one stage (layout 3)
    cards = ws.shape[0] > CARD_FROM
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    scratch = np.empty(TERMS_SCRATCH, dtype=np.int64)
    others = np.empty(NUM_FEATURES, dtype=np.float32)  # the other seats' features: the same after every candidate
    afterstate_head_features(s, p, others)
    # the distinct boards (p's stack codes and cubes), by an open-addressing table of 2^b >= 2n slots
    slots = 1
    while slots < 2 * n:
        slots *= 2
    hkey = np.empty((slots, 3), dtype=np.int64)
    hat = np.full(slots, -1, dtype=np.int64)
    keys = np.empty((n, _KEYS), dtype=np.int64)
    bsum = np.empty(n, dtype=np.float64)
    csum = np.empty((n, _NC), dtype=np.float64)
    cdone = np.zeros((n, _NC), dtype=np.bool_)
    near = np.full((n, S.MAX_MARKET, 2), -1, dtype=np.int64)
    market = ws.shape[0] > MARKET_FROM  # layout 4: each board's need rows per card (`market.market_sum`)
    mrows = np.empty((n if market else 0, MARKET_ACTIVE * NEED_ROW), dtype=np.int64)
    mdone = np.zeros((n if market else 0, MARKET_ACTIVE), dtype=np.bool_)
    mlocal = np.full(_NC, -1, dtype=np.int64)
    mlocal[0] = 0
    need = np.empty((9, 4), dtype=np.int64)
    mscratch = np.empty(CARD_SCRATCH, dtype=np.int64)
    boards = 0
    # the states after each distinct prefix of tokens (central space and placements), played once
    pcap = min(n, 256)
    pslots = 1
    while pslots < 2 * pcap:
        pslots *= 2
    pkey = np.empty((pslots, 2), dtype=np.int64)
    pat = np.full(pslots, -1, dtype=np.int64)
    prefixed = np.empty((pcap, s.shape[0]), dtype=np.int64)
    prefixes = 0
    for k in range(n):
        plan = plans[k]
        m = 0  # the prefix: the central space and the tokens (actions below TAKE_CARD), at most 7
        while m < lens[k] and plan[m] < A.TAKE_CARD:
            m += 1
        slot = -1
        if 0 < m <= 7:
            q0 = 0
            q1 = m
            for j in range(m):
                if j < 4:
                    q0 |= plan[j] << (16 * j)
                else:
                    q1 |= plan[j] << (16 * (j - 3))
            h = ((q0 * -7046029254386353131) ^ (q1 * -4658895280553007687)) & 0x7FFFFFFFFFFFFFFF
            slot = (h >> 20) & (pslots - 1)
            while pat[slot] >= 0 and (pkey[slot, 0] != q0 or pkey[slot, 1] != q1):
                slot = (slot + 1) & (pslots - 1)
        if slot >= 0 and pat[slot] >= 0:
            row = prefixed[pat[slot]]
            for j in range(s.shape[0]):
                after[j] = row[j]
            play_plan(after, plan[m:], lens[k] - m, True)
        else:
            for j in range(s.shape[0]):
                after[j] = s[j]
            if slot >= 0 and prefixes < pcap and play_plan(after, plan, m, True) == 0:
                row = prefixed[prefixes]
                for j in range(s.shape[0]):
                    row[j] = after[j]
                pat[slot] = prefixes
                pkey[slot, 0] = q0
                pkey[slot, 1] = q1
                prefixes += 1
                play_plan(after, plan[m:], lens[k] - m, True)
            elif slot < 0 or prefixes >= pcap:
                play_plan(after, plan, lens[k], True)
            # (else a refused token: the plan stops there, as `play_plan` of the whole plan does)
        if no_turn_left(after, p):
            values[k] = seat_score(after, p, sc)
            continue
        k0, k1 = S.board_words(after, p)
        cb = after[S.CUBES + p]
        h = (((k0 * -7046029254386353131) ^ (k1 * -4658895280553007687) ^ (cb * 0x2545F4914F6CDD1D))
             & 0x7FFFFFFFFFFFFFFF) >> 20
        slot = h & (slots - 1)
        while hat[slot] >= 0 and (hkey[slot, 0] != k0 or hkey[slot, 1] != k1 or hkey[slot, 2] != cb):
            slot = (slot + 1) & (slots - 1)
        b = hat[slot]
        if b < 0:
            b = boards
            boards += 1
            hat[slot] = b
            hkey[slot, 0] = k0
            hkey[slot, 1] = k1
            hkey[slot, 2] = cb
            board_keys(after, p, keys[b])
            bsum[b] = board_sum(side, ws, keys[b], 0.0)
        # `remaining`'s linear inputs, the other seats' reused, the market's habitat distances shared by the board
        total = candidate_head_total(after, p, feats, others, sc, scratch, near[b])
        _gather(feats, lin)
        v = linear_sum(ws, lin) + bsum[b]
        if cards:
            for q in range(S.MAX_SLOTS):
                card = after[S.SLOT + S.MAX_SLOTS * p + q]
                if card < 0:
                    continue
                if not cdone[b, card]:
                    csum[b, card] = card_sum(side, card, ws, keys[b], 0.0)
                    cdone[b, card] = True
                v += csum[b, card]
        if market:
            v = market_sum(after, p, ws, MARKET_FROM, v, need, mrows[b], mdone[b], mlocal, mscratch)
        values[k] = total + v
    return n


@njit(cache=True, nogil=True)
def choose_rows(lo: int, hi: int, states, w, planner, beam: int, plans, lens, pvals, values, after, counts,
                choice) -> None:
    """`candidate_values` and the best candidate (first argmax, as `NTupleAgent.choose_plan`) for rows lo..hi-1 of
    states (int32 (N, STATE_SIZE), not modified): plans int64 (N, K, MAX_PLAN), lens / pvals / values (N, K), after
    int32 (N, STATE_SIZE) scratch; out counts int64 (N,), choice int64 (N,). Releases the GIL, so row ranges can
    run in threads (`NTupleAgent.act_batch`)."""
    for r in range(lo, hi):
        n = candidate_values(states[r], w, planner, beam, plans[r], lens[r], pvals[r], values[r], after[r])
        counts[r] = n
        choice[r] = np.argmax(values[r, :n]) if n > 0 else 0


@njit(cache=True, nogil=True)
def decide_rows(lo: int, hi: int, states, kinds, w, planner, beam: int, greedy_beam: int, explore, pick, plans, lens,
                pvals, values, tmp, after, seat_out, pred_out, chosen, recorded) -> None:
    """One whole turn in every unfinished game of rows lo..hi-1 of a batch, in one call: plan, value, choose, record,
    play. Every row depends only on itself and w is only read, so row ranges can run in threads (`run_rows`) and
    give the same games whatever the split.

    states int32 (G, STATE_SIZE), modified (each row plays its chosen plan with END); kinds int64 (G, 4) who plays
    each seat: 0 = this network (`candidate_values`, the best; explore[r]: candidate int(pick[r] x count) instead),
    1 = the greedy planner (`plan_turn` at greedy_beam, its best plan). Scratch per row: plans int64 (G, K,
    MAX_PLAN), lens, pvals, values (G, K), tmp int32 (G, STATE_SIZE). Out per row: after[r] the chosen plan's
    afterstate, seat_out[r] the mover, pred_out[r] `remaining` there (at these weights), chosen[r] the candidate
    index, recorded[r] whether an afterstate was made (False for finished games and the first-turn Spirit choice).
    """
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    for r in range(lo, hi):
        recorded[r] = False
        s = states[r]
        if s[S.GAME_OVER]:
            continue
        p = s[S.CURRENT]
        P, Ln = plans[r], lens[r]
        if kinds[r, p] == 1:
            n = plan_turn(s, planner, greedy_beam, P[:1], Ln[:1], pvals[r, :1])
            c = 0
        else:
            n = candidate_values(s, w, planner, beam, P, Ln, pvals[r], values[r], tmp[r])
            c = int(pick[r] * n) if explore[r] else int(np.argmax(values[r, :n]))
            if c >= n:
                c = n - 1
        if n == 0:
            s[S.GAME_OVER] = 1  # cannot happen on a legal position; end the game rather than loop
            continue
        chosen[r] = c
        if not (P[c, 0] >= A.KEEP_SPIRIT and P[c, 0] < A.KEEP_SPIRIT + 2):
            after[r] = s
            play_plan(after[r], P[c], Ln[c], True)
            seat_out[r] = p
            pred_out[r] = remaining(after[r], p, w, idx, feats, lin)
            recorded[r] = True
        play_plan(s, P[c], Ln[c])


@njit(cache=True)
def win_logit(s, p: int, w, idx, feats, lin) -> float:
    """The win head's output at afterstate s for seat p: the logit of p's share of the victory (w: a weight vector of
    the points head's layout; unlike `remaining`, also where p has no turn left, since the others may)."""
    ws = stage_weights(w, s)
    k = tuple_indices(s, p, idx, ws.shape[0] > CARD_FROM, ws.shape[0] > MARKET_FROM)
    linear_features(s, p, feats, lin)
    return value_of(ws, idx, k, lin)


@njit(cache=True)
def candidate_wins(s, plans, lens, n: int, w, out) -> None:
    """The win head's probability for the mover of s (not modified) at each candidate's afterstate: plans int64
    (>= n, MAX_PLAN), lens (>= n,); out float64 (>= n,)."""
    p = s[S.CURRENT]
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    after = np.empty(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    for k in range(n):
        S.copy_state(after, s)
        play_plan(after, plans[k], lens[k], True)
        out[k] = 1.0 / (1.0 + np.exp(-win_logit(after, p, w, idx, feats, lin)))


@njit(cache=True)
def search_values(roots, which, plans, lens, w, planner, beam: int, candidates: int, out) -> None:
    """Leaves of `NTupleSearchAgent`: out[i] = what candidate which[i] is worth to the mover of world roots[i]
    (int32 (L, STATE_SIZE), modified) after the chance and the replies it leads to.

    The world plays the candidate with its END (the central board refills from the world's pouch), every other seat
    then plays its turn as the `ntuple` agent would (the network's best of `candidates` plans at beam `beam`), and
    the mover's next turn is valued by the network: the best of its candidates' own total + remaining. A game that
    ends on the way is valued by the mover's final total. plans int64 (C, MAX_PLAN), lens (C,): the root candidates.
    """
    P = np.zeros((candidates, MAX_PLAN), dtype=np.int64)
    Ln = np.zeros(candidates, dtype=np.int64)
    pv = np.zeros(candidates, dtype=np.float64)
    vals = np.zeros(candidates, dtype=np.float64)
    tmp = np.empty(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    totals = np.zeros(4, dtype=np.int64)
    won = np.zeros(4, dtype=np.int64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for i in range(roots.shape[0]):
        s = roots[i]
        me = s[S.CURRENT]
        c = which[i]
        play_plan(s, plans[c], lens[c])
        while True:
            if s[S.GAME_OVER]:
                outcome(s, totals, sc, won)
                out[i] = totals[me]
                break
            n = candidate_values(s, w, planner, beam, P, Ln, pv, vals, tmp)
            if n == 0:
                out[i] = seat_score(s, me, sc)
                break
            best = int(np.argmax(vals[:n]))
            if s[S.CURRENT] == me:
                out[i] = vals[best]
                break
            play_plan(s, P[best], Ln[best])

