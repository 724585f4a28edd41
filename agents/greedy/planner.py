"""The candidate planner every learner uses: the greedy turn planner (`plan_turn`), the candidates that `learned`,
`mlp` and the self-play learners rank (`plan_candidates`: a beam per central space) and many games' turns in one
call (`greedy_plans`). The agent that wraps them is `agents.greedy.agent.GreedyAgent`; the evaluation it
maximises is `agents.greedy.terms` (from scratch) and `agents.greedy.incremental` (from a parent).

A turn is a sequence of micro-actions (take a central space, place its 3 tokens, maybe take a card, place
cubes, end). Within a turn nothing is left to chance (the refill happens at END), so a turn can be planned
exactly on any determinized copy. The kernel `plan_turn` searches it as a beam over token placements:

1. every central space that can be taken;
2. token placements, one level per token: every (held colour, legal cell) with cells in non-decreasing
   order, which enumerates each distinct final board once (same-cell placements keep both stacking
   orders); after each level the best `beam` partial turns by `heuristic_value` are kept;
3. for each surviving turn: take no card or any legal market card, then place cubes greedily while any
   habitat stands (cubes are free and final);
4. the value is `heuristic_value` of the position just before END; the best plans are returned, best first.

The beam matters as much as the weights: GreedyAgent's default beam 24 is the reference baseline (kept so its
figures stay comparable); beam 800 (`WIDE_BEAM`) scores more and beats it, because a narrow beam drops turns whose
first token looks poor on its own (figures in benchmarks/STRENGTH.md).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import cards as C
from harmonies_env import state as S
from harmonies_env.geometry import lowest_cell
from harmonies_env.rules import legal_actions, step, token_cells
from harmonies_env.scoring import (
    NUM_CATEGORIES,
)
from harmonies_env.stacks import STACK_AFTER

from .habitats import (
    NEED_CODES,
    NEED_K,
)
from .incremental import (
    PARENT_CACHE,
    after_parts,
    heuristic_value_after,
    heuristic_value_child,
    parent_cache,
    taken_parts,
    weigh,
)
from .terms import (
    _SLOT_AT,
    DEFAULT_WEIGHTS,
    TERMS_SCRATCH,
    heuristic_value_with,
)

MAX_PLAN = 48  # micro-actions in one turn: 1 take + 3 tokens + 1 card + cubes (<= 25) + END


def plan_rows(plans: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Whole-turn plans as the kernels take them: int64 (C, MAX_PLAN) rows, zero-padded, and their lengths int64
    (C,). The one-turn searches' root candidates (`ntuple.search`, `mlp`'s search) are set up so."""
    rows = np.zeros((len(plans), MAX_PLAN), dtype=np.int64)
    lens = np.zeros(len(plans), dtype=np.int64)
    for k, plan in enumerate(plans):
        rows[k, : len(plan)] = plan
        lens[k] = len(plan)
    return rows, lens


#: Beam of the planner that proposes whole-turn candidates to MCTSAgent. Much wider than GreedyAgent's 24; alone
#: (`greedy:800`) it beats beam 24 (figures in benchmarks/STRENGTH.md).
WIDE_BEAM = 800


for _cls in range(9):
    for _k in range(4):
        for _code in range(15):
            if (NEED_CODES[_cls, _k] >> _code) & 1:
                NEED_K[_code, _cls] = _k


@njit(cache=True)
def place_cubes_greedily(s, plan, n: int) -> int:
    """Place cubes while any held card's habitat stands (lowest cell first); append them to plan[n:]. The cells come
    from the state's habitat answers (`habitat`, which `rules.step` keeps up to date): cubes do not change them."""
    p = s[S.CURRENT]
    placed = True
    while placed:
        placed = False
        for h in range(S.MAX_SLOTS):
            m = s[S.HABITAT + S.MAX_SLOTS * p + h] & ~s[S.CUBES + p]  # 0 for a free slot
            if m:
                a = A.PLACE_CUBE + 25 * h + lowest_cell(m)
                if step(s, a) == 0:
                    plan[n] = a
                    n += 1
                    placed = True
                    break
    return n


@njit(cache=True)
def _spirit_plans(s, plans, lens, values) -> int:
    """First-turn Spirit choice: both options (as many as fit), the one whose rule pays more first."""
    p = s[S.CURRENT]
    v = np.zeros(2, dtype=np.float64)
    for j in range(2):
        card = s[S.SPIRIT_DEALT + 2 * p + j]
        v[j] = float(C.SPIRIT_POINTS[card, 0] + C.SPIRIT_POINTS[card, 1] + C.SPIRIT_POINTS[card, 2])
    first = 1 if v[1] > v[0] else 0
    out = min(2, plans.shape[0])
    for k in range(out):
        j = first if k == 0 else 1 - first
        plans[k, 0] = A.KEEP_SPIRIT + j
        lens[k] = 1
        values[k] = v[j]
    return out


@njit(cache=True)
def plan_turn(s0, w, beam: int, plans, lens, values) -> int:
    """Best turn plans for the player to move in s0 (not modified), best first.

    w: float64 (NUM_TERMS,) potential weights; beam: partial turns kept per token level.
    plans: int64 (K, MAX_PLAN) out, lens: int64 (K,) out, values: float64 (K,) out. Returns how many
    plans were written (<= K). Each plan ends with END_TURN (or is the Spirit choice, which does not end
    the turn: plan again afterwards).
    """
    p = s0[S.CURRENT]
    if s0[S.SPIRITS] and s0[S.SPIRIT_KEPT + p] < 0:
        return _spirit_plans(s0, plans, lens, values)
    # np.int64: a literal -1 would compile `_plan_pool_memo` a second time beside `plan_candidates`' int64 spaces
    fplan, flen, fval, nf = _plan_pool(s0, w, beam, np.int64(-1))
    order = np.argsort(-fval[:nf], kind="mergesort")
    out = min(plans.shape[0], nf)
    for j in range(out):
        plans[j] = fplan[order[j]]
        lens[j] = flen[order[j]]
        values[j] = fval[order[j]]
    return out


#: Slots of the planner's evaluation memo (a power of 2; a turn's beams evaluate a few thousand boards).
MEMO_SLOTS = 1 << 14


@njit(cache=True)
def new_memo():
    """An empty evaluation memo for `_plan_pool_memo`: keys int64 (MEMO_SLOTS, 2) (a board's 25 stack codes, 4 bits
    each), values float64 (MEMO_SLOTS,), used bool (MEMO_SLOTS,), and how many are used (int64 (1,); the memo stops
    taking boards at half full, so a wide beam still finds free slots). Only for one turn of one position."""
    return (np.empty((MEMO_SLOTS, 2), dtype=np.int64), np.empty(MEMO_SLOTS, dtype=np.float64),
            np.zeros(MEMO_SLOTS, dtype=np.bool_), np.zeros(1, dtype=np.int64))


@njit(cache=True)
def new_final_memo(entries: int):
    """An empty memo of the beam's final stage for up to `entries` boards (0: none), shared by a turn's beams
    (`plan_candidates`): slot keys int64 (S, 2) (the board's two `state.board_words`, the second with the takeable
    market slots above bit 40), the entry at each slot int64 (S,) (-1: free), and per entry its turns' rows: how
    many int64 (E,), and per row (6 a board: no card, then each market card) its value float64 (6E,), its actions
    after the tokens int64 (6E, MAX_PLAN) and their count int64 (6E,); then how many entries are used (int64 (1,))."""
    slots = 1
    while slots < 2 * entries:
        slots *= 2
    return (np.empty((slots, 2), dtype=np.int64), np.full(slots, -1, dtype=np.int64),
            np.zeros(max(entries, 1), dtype=np.int64), np.empty(6 * max(entries, 1), dtype=np.float64),
            np.empty((6 * max(entries, 1), MAX_PLAN), dtype=np.int64), np.zeros(6 * max(entries, 1), dtype=np.int64),
            np.zeros(1, dtype=np.int64))


@njit(cache=True, inline="always")
def memo_find(keys, used, k0: int, k1: int) -> int:
    """The memo slot of key (k0, k1): where it is stored, or the free slot where it goes (linear probing)."""
    mask = keys.shape[0] - 1
    h = ((k0 * -7046029254386353131) ^ (k1 * -4658895280553007687)) & 0x7FFFFFFFFFFFFFFF
    slot = (h >> 20) & mask
    while used[slot] and (keys[slot, 0] != k0 or keys[slot, 1] != k1):
        slot = (slot + 1) & mask
    return slot


@njit(cache=True, inline="always")
def memo_put(keys, vals, used, count, slot: int, k0: int, k1: int, v: float) -> None:
    """Store v for key (k0, k1) in its free slot (from `memo_find`), unless the memo is half full."""
    if 2 * count[0] < keys.shape[0]:
        keys[slot, 0] = k0
        keys[slot, 1] = k1
        vals[slot] = v
        used[slot] = True
        count[0] += 1


@njit(cache=True)
def best_first(vals, n: int, k: int, order, topv) -> None:
    """order[:k] = the indices of the k largest of vals[:n], largest first, equal values in index order: the first k
    of `np.argsort(-vals[:n], kind="mergesort")` without sorting all n (the beam keeps 24 of hundreds). topv float64
    (>= k,) scratch."""
    size = 0
    for j in range(n):
        v = vals[j]
        if size == k:
            if not v > topv[k - 1]:
                continue
            pos = k - 1
        else:
            pos = size
            size += 1
        while pos > 0 and topv[pos - 1] < v:
            topv[pos] = topv[pos - 1]
            order[pos] = order[pos - 1]
            pos -= 1
        topv[pos] = v
        order[pos] = j


@njit(cache=True)
def _plan_pool(s0, w, beam: int, only_space: int):
    """Every whole-turn plan the beam keeps for the mover of s0 (not modified), unsorted: (plans int64 (F, MAX_PLAN),
    lens int64 (F,), values float64 (F,), count). only_space >= 0 takes that central space only (-1: any)."""
    return _plan_pool_memo(s0, w, beam, only_space, new_memo(), new_final_memo(np.int64(0)))  # not a literal, as above


@njit(cache=True)
def _plan_pool_memo(s0, w, beam: int, only_space: int, memo, final):
    """`_plan_pool` with a memo of token-level evaluations (`new_memo`) that beams of the same turn share: while
    tokens are placed, `heuristic_value` of the mover depends only on its board (its cards, cubes, the pouch and the end
    trigger do not change), so a board reached again (another central space's tokens, another order) is looked up
    by its 25 stack codes instead of being copied, stepped and evaluated. `final` (`new_final_memo`) does the same
    for the final stage: a board another space's beam reached gets the turns (card, cubes, value) found for it there,
    which depend only on the board, the held cards and cubes, the market and the pouch, the same for every space."""
    p = s0[S.CURRENT]
    mkeys, mvals, mused, mcount = memo
    fkeys, fat, fn, fv, fsuf, flens, fcount = final
    fslots = fkeys.shape[0]
    fcap = fn.shape[0] if fslots > 1 else 0
    bb0 = S.BITBOARD + 15 * p
    bbc = np.empty(15, dtype=np.int64)
    buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    scratch = np.empty(TERMS_SCRATCH, dtype=np.int64)
    pc = np.empty(PARENT_CACHE, dtype=np.int64)
    nb = 1
    cap = max(beam, 5)
    states = np.empty((cap, S.STATE_SIZE), dtype=S.STATE_DTYPE)  # scratch: every row read was written
    acts = np.zeros((cap, MAX_PLAN), dtype=np.int64)
    alen = np.zeros(cap, dtype=np.int64)
    last = np.zeros(cap, dtype=np.int64)
    states[0] = s0
    # level 0: which central space
    if not S.took_tokens(s0):
        n = legal_actions(s0, buf)
        nb = 0
        for k in range(n):
            a = buf[k]
            if a < A.PLACE_TOKEN and (only_space < 0 or a - A.TAKE_TOKENS == only_space):
                S.copy_state(states[nb], s0)
                step(states[nb], a)
                acts[nb, 0] = a
                alen[nb] = 1
                nb += 1
    # token levels
    maxc = cap * 6 * 25 + cap
    cpar = np.empty(maxc, dtype=np.int64)
    cact = np.empty(maxc, dtype=np.int64)
    cval = np.empty(maxc, dtype=np.float64)
    tmp = np.empty(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    new_states = np.empty((cap, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    new_acts = np.zeros((cap, MAX_PLAN), dtype=np.int64)
    new_len = np.zeros(cap, dtype=np.int64)
    new_last = np.zeros(cap, dtype=np.int64)
    order = np.empty(cap, dtype=np.int64)
    topv = np.empty(cap, dtype=np.float64)
    for _level in range(6):
        nc = 0
        any_placed = False
        for b in range(nb):
            sb = states[b]
            placeable = False
            cached = False
            k0, k1 = S.board_words(sb, p)
            for c in range(6):
                if sb[S.HAND + c] <= 0:
                    continue
                full = token_cells(sb, p, c)
                if full:
                    placeable = True
                m = full & ~((1 << last[b]) - 1)
                if m == 0:  # only cells before the last one remain: order no longer matters, allow them
                    m = full
                while m:
                    i = lowest_cell(m)
                    m &= m - 1
                    a = A.PLACE_TOKEN + 25 * c + i
                    new = STACK_AFTER[S.stack_at(sb, p, i), c]
                    if i < 16:
                        c0, c1 = (k0 & ~(15 << (4 * i))) | (new << (4 * i)), k1
                    else:
                        c0, c1 = k0, (k1 & ~(15 << (4 * (i - 16)))) | (new << (4 * (i - 16)))
                    slot = memo_find(mkeys, mused, c0, c1)
                    if mused[slot]:
                        v = mvals[slot]
                    else:  # the child's bitboards (as `rules.step` sets them) on the parent's state
                        for q in range(15):
                            bbc[q] = sb[bb0 + q]
                        bit = 1 << i
                        bbc[S.stack_at(sb, p, i)] &= ~bit
                        bbc[new] |= bit
                        if not cached:
                            parent_cache(sb, p, pc, True)
                            cached = True
                        v = heuristic_value_child(sb, p, bbc, i, S.stack_at(sb, p, i), new, w, sc, scratch, pc)
                        memo_put(mkeys, mvals, mused, mcount, slot, c0, c1, v)
                    cpar[nc] = b
                    cact[nc] = a
                    cval[nc] = v
                    nc += 1
                    any_placed = True
            if not placeable:  # done with tokens: carries forward unchanged
                cpar[nc] = b
                cact[nc] = -1
                slot = memo_find(mkeys, mused, k0, k1)
                if mused[slot]:
                    cval[nc] = mvals[slot]
                else:
                    v = heuristic_value_with(sb, p, w, sc, scratch)
                    memo_put(mkeys, mvals, mused, mcount, slot, k0, k1, v)
                    cval[nc] = v
                nc += 1
        if not any_placed:
            break
        nn = min(beam, nc)
        best_first(cval, nc, nn, order, topv)
        for j in range(nn):
            k = order[j]
            b = cpar[k]
            S.copy_state(new_states[j], states[b])
            for q in range(MAX_PLAN):
                new_acts[j, q] = acts[b, q]
            new_len[j] = alen[b]
            new_last[j] = last[b]
            a = cact[k]
            if a >= 0:
                step(new_states[j], a)
                new_acts[j, new_len[j]] = a
                new_len[j] += 1
                new_last[j] = (a - A.PLACE_TOKEN) % 25
        states, new_states = new_states, states
        acts, new_acts = new_acts, acts
        alen, new_len = new_len, alen
        last, new_last = new_last, last
        nb = nn
    # final stage: card (or none), cubes, value before END
    nf = 0
    fval = np.zeros(nb * 6, dtype=np.float64)
    fplan = np.zeros((nb * 6, MAX_PLAN), dtype=np.int64)
    flen = np.zeros(nb * 6, dtype=np.int64)
    can_take = 0  # market slots whose card step lets the mover take: the same for every turn (tokens change none)
    if nb > 0:
        for m in range(s0[S.NUM_MARKET]):
            if states[0][S.MARKET + m] >= 0:
                S.copy_state(tmp, states[0])
                if step(tmp, A.TAKE_CARD + m) == 0:
                    can_take |= 1 << m
    side = s0[S.SIDE]
    for b in range(nb):
        sb = states[b]
        fslot = -1
        if fcap > 0:
            hand = 0
            for c in range(6):
                hand += sb[S.HAND + c]
            if hand == 0:  # (tokens left in hand would change what a card step allows)
                k0, k1 = S.board_words(sb, p)
                k1 |= can_take << 40
                h = ((k0 * -7046029254386353131) ^ (k1 * -4658895280553007687)) & 0x7FFFFFFFFFFFFFFF
                fslot = (h >> 20) & (fslots - 1)
                while fat[fslot] >= 0 and (fkeys[fslot, 0] != k0 or fkeys[fslot, 1] != k1):
                    fslot = (fslot + 1) & (fslots - 1)
                e = fat[fslot]
                if e >= 0:  # this board's turns, found by another space's beam
                    for r in range(6 * e, 6 * e + fn[e]):
                        for q in range(alen[b]):
                            fplan[nf, q] = acts[b, q]
                        ln = alen[b]
                        for q in range(flens[r]):
                            fplan[nf, ln + q] = fsuf[r, q]
                        flen[nf] = ln + flens[r]
                        fval[nf] = fv[r]
                        nf += 1
                    continue
        nf0 = nf
        parent_cache(sb, p, pc, False)
        standing = False  # a held card's habitat stands: cubes follow (copy, step, heuristic_value_after)
        for h in range(S.MAX_SLOTS):
            card = sb[S.SLOT + S.MAX_SLOTS * p + h]
            if card >= 0 and (pc[_SLOT_AT + 2 * h] != 0 or (card < C.FIRST_SPIRIT
                                                            and S.cubes_placed(sb, p, card)
                                                            >= C.CUBES_ON_CARD[card])):
                standing = True
        parts = after_parts(sb, p, sc, scratch, pc, sb)
        for m in range(-1, s0[S.NUM_MARKET]):  # no card, then each market card that can be taken
            if m >= 0 and not (can_take >> m) & 1:
                continue
            for q in range(alen[b]):
                fplan[nf, q] = acts[b, q]
            ln = alen[b]
            if m >= 0:
                fplan[nf, ln] = A.TAKE_CARD + m
                ln += 1
            fast = not standing
            if fast and m >= 0:
                card = sb[S.MARKET + m]
                fast = not C.habitat_stands_grid(side, pc[36:_SLOT_AT], sb[S.CUBES + p], card)
            if fast:  # no cube to place: valued from this turn's parts
                fval[nf] = weigh(parts if m < 0 else taken_parts(sb, p, sb[S.MARKET + m], pc, parts), w)
            else:
                S.copy_state(tmp, sb)
                if m >= 0:
                    step(tmp, A.TAKE_CARD + m)
                ln = place_cubes_greedily(tmp, fplan[nf], ln)
                fval[nf] = heuristic_value_after(tmp, p, w, sc, scratch, pc, sb)
            fplan[nf, ln] = A.END_TURN
            flen[nf] = ln + 1
            nf += 1
        if fslot >= 0 and fcount[0] < fcap:  # remember this board's turns for the other spaces' beams
            e = fcount[0]
            fcount[0] += 1
            fat[fslot] = e
            fkeys[fslot, 0], fkeys[fslot, 1] = S.board_words(sb, p)
            fkeys[fslot, 1] |= can_take << 40
            fn[e] = nf - nf0
            for r in range(nf0, nf):
                j = 6 * e + r - nf0
                fv[j] = fval[r]
                flens[j] = flen[r] - alen[b]
                for q in range(flens[j]):
                    fsuf[j, q] = fplan[r, alen[b] + q]
    return fplan, flen, fval, nf


@njit(cache=True)
def plan_group(plan, n: int) -> int:
    """What kind of turn a plan is, by its strategic choices: 6 x (central space taken, 0-4; 5 when it was taken
    before the plan) + (market slot of the card taken, 0-4; 5 = none). int in [0, 36)."""
    space = 5
    card = 5
    for j in range(n):
        a = plan[j]
        if a < A.PLACE_TOKEN:
            space = a - A.TAKE_TOKENS
        elif a >= A.TAKE_CARD and a < A.PLACE_CUBE:
            card = a - A.TAKE_CARD
    return 6 * space + card


@njit(cache=True)
def plan_candidates(s0, w, beam: int, plans, lens, values) -> int:
    """Candidate turn plans that cover the turn's strategic choices: the best plan (by `heuristic_value`) of every
    (central space, card taken or none) pair the beam finds, then the best remaining plans, best first.

    Why: the plain beam's best plans mostly share one central space and one card choice (measured: 1.9 spaces and
    2 card choices among the best 32 of beam 800), so a value network ranking them decides where tokens go but
    hardly which tokens or which card. Here each central space gets its own beam (`beam` partial turns per token
    level, per space), so every space's best turns survive to the end. plans int64 (K, MAX_PLAN), lens (K,),
    values (K,) out, as `plan_turn`'s, in heuristic order within each of the two parts; returns how many.
    """
    K = plans.shape[0]
    p = s0[S.CURRENT]
    if s0[S.SPIRITS] and s0[S.SPIRIT_KEPT + p] < 0:
        return _spirit_plans(s0, plans, lens, values)
    spaces = np.full(S.MAX_SPACES, -1, dtype=np.int64)  # -1 alone: the tokens are taken already, plan the rest
    nsp = 1
    if not S.took_tokens(s0):
        nsp = 0
        for sp in range(s0[S.NUM_SPACES]):
            if s0[S.CENTRAL + 3 * sp] >= 0:
                spaces[nsp] = sp
                nsp += 1
    total = 0
    pools = []
    memo = new_memo()  # every space's beam places tokens on the same board: one memo for all
    final = new_final_memo(min(nsp * max(beam, 5), 1024) if nsp > 1 else 0)
    for j in range(nsp):
        pool = _plan_pool_memo(s0, w, beam, spaces[j], memo, final)
        pools.append(pool)
        total += pool[3]
    allp = np.zeros((total, MAX_PLAN), dtype=np.int64)
    alll = np.zeros(total, dtype=np.int64)
    allv = np.zeros(total, dtype=np.float64)
    o = 0
    for pool in pools:
        nf = pool[3]
        allp[o: o + nf] = pool[0][:nf]
        alll[o: o + nf] = pool[1][:nf]
        allv[o: o + nf] = pool[2][:nf]
        o += nf
    order = np.argsort(-allv, kind="mergesort")
    taken = np.zeros(total, dtype=np.bool_)
    seen = np.zeros(36, dtype=np.bool_)
    out = 0
    for j in range(total):  # the best plan of each group, best groups first
        k = order[j]
        g = plan_group(allp[k], alll[k])
        if not seen[g] and out < K:
            seen[g] = True
            taken[k] = True
            plans[out] = allp[k]
            lens[out] = alll[k]
            values[out] = allv[k]
            out += 1
    for j in range(total):  # then the best of the rest
        if out >= K:
            break
        k = order[j]
        if not taken[k]:
            plans[out] = allp[k]
            lens[out] = alll[k]
            values[out] = allv[k]
            out += 1
    return out


#: Widest beam accepted (the planner allocates per beam entry; the wide planner uses 800).
MAX_BEAM = 100_000


def planner_settings(beam: int, weights: Any = None) -> tuple[int, np.ndarray]:
    """Validated (beam, weights) for `plan_turn`: beam >= 1; weights float64 (NUM_TERMS,), default `DEFAULT_WEIGHTS`."""
    if isinstance(beam, (bool, np.bool_)) or not isinstance(beam, (int, np.integer)) or not 1 <= beam <= MAX_BEAM:
        raise ValueError(f"beam must be an integer 1..{MAX_BEAM}, got {beam!r}")
    w = np.array(DEFAULT_WEIGHTS if weights is None else weights, dtype=np.float64)
    if w.shape != DEFAULT_WEIGHTS.shape:
        raise ValueError(f"weights must have shape {DEFAULT_WEIGHTS.shape}, got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite numbers")
    return int(beam), w


@njit(cache=True, nogil=True)
def greedy_plans(lo: int, hi: int, states, weights, beam: int, diverse: bool, plans, lens) -> None:
    """The greedy planner's turn for the player to move in rows lo..hi-1 of states (int32 (M, STATE_SIZE), read
    only): plans int64 (M, MAX_PLAN), lens int64 (M,) (0 where the position has no legal action, which a live game
    never has). weights float64 (NUM_TERMS,), beam: as `GreedyAgent(beam=...)`; diverse: `plan_candidates`' first
    plan (a beam per central space) instead of `plan_turn`'s. Releases the GIL: `run_rows` splits rows over threads.
    """
    values = np.zeros(1, dtype=np.float64)
    for j in range(lo, hi):
        if diverse:
            n = plan_candidates(states[j], weights, beam, plans[j:j + 1], lens[j:j + 1], values)
        else:
            n = plan_turn(states[j], weights, beam, plans[j:j + 1], lens[j:j + 1], values)
        if n == 0:
            lens[j] = 0
