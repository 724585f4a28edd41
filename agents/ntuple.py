"""The n-tuple afterstate value function (the `learned` agent, also spelled `ntuple`): weights shared across the board,
costing microseconds. It replaced the MLP of agents/learned.py as `learned` (that one plays on as `learned-mlp`).

Why (issue 30): the learned MLP reads each board as 25 x 15 one-hot cells with no weight shared between cells and
costs a forward pass per decision batch. An n-tuple network (as in the strongest 2048 and Othello programs,
Szubert and Jaskowski 2014) is a sum of table look-ups: each small set of cells (a *tuple*) indexes a table by its
cells' contents, and one table serves every place on the board where that shape fits. It is evaluated in a few
hundred look-ups, learns from every afterstate by TD(lambda), and so can rank every candidate the planner proposes.

What it predicts: the points the mover (the player who just planned its turn) will still score from this
afterstate to the end of the game: `remaining(after)`. A candidate's value for its mover is its own total now
(exact, `scoring.score_into`) plus that prediction; an afterstate after which the mover has no turn left
(`greedy.no_turn_left`) has nothing left to score (0, exactly).

remaining(after) = sum of the tuple weights its board selects + the linear part, with:

* the mover's board only (an opponent's board does not change with the mover's choice); each cell's content is one
  of `VALUES` = 30 numbers: stack code (0..14) + 15 if an animal cube stands on it;
* shapes (`SHAPES`), each a table shared by every placement of the shape on the board and indexed by a key that is
  the same for the shape's mirror images and rotations (scoring, habitats and cards are rotation- and
  mirror-invariant, so the board's symmetries `geometry.SYMMETRIES` and more are shared for free):
  `cell` (one table row per cell *orbit* under the board's 4 symmetries, per side: where on the board matters, e.g.
  the edges), `pair` (two neighbours, unordered), `triangle` (three mutual neighbours, unordered), `line` (three
  cells in a straight line: middle, then the two ends unordered) and `rhombus` (two triangles sharing an edge: the
  two tips unordered, the two shared cells unordered);
* card shapes (`CARD_SHAPES`, layout 2): for each card the mover holds (incomplete, in its slots), the board's
  cells, pairs, triangles and lines again, in a table per card id. Why: an animal card pays for a habitat of 2-4
  cells of given stacks, so what a pattern on the board is worth depends on the cards held, which the board shapes
  alone cannot see (layout 1 networks scored 5 animal points a game fewer than the MLP, `learned-mlp`, which reads
  the cards);
* a linear part over the public non-board afterstate features (`afterstate.afterstate_features` without the
  board one-hots: scores, the greedy planner's potential terms, held cards' progress and habitat distances, the
  market, pouch, turn; every seat's block) plus a bias. Its weights can start at the greedy planner's own
  evaluation (`heuristic_weights`), so an untrained network plays as `greedy:BEAM:spaces` does.

A second weight vector of the same layout can be a *win head* (`win_logit`, `learn_win`): its output is the logit of
the mover's share of the victory, learned from the same games; `NTupleWinAgent` (`ntuple-win`) adds C x its
probability to each candidate's value. `learn_game` can also take a search's value of an afterstate as its target
(expert iteration, experiments/train_ntuple.py).

Layout of the one float32 weight vector: [linear (NUM_LINEAR)] [cell] [pair] [triangle] [line] [rhombus], then in
layout 2 [card_cell] [card_pair] [card_triangle] [card_line] (offsets `OFFSETS`); the kernels read the layout from
the vector's length (`LAYOUT_WEIGHTS`), so a layout-1 network plays exactly as it did. Checkpoints are `NAME.npz`
(one array `weights`, read with `np.load(allow_pickle=False)`) + `NAME.json` (its config with the layout, and the
SHA-256 of NAME.npz, checked before anything plays). A new layout gets a new version in `LAYOUT_WEIGHTS`. The
plain-Python reference in tests/ntuple_reference.py computes the same numbers.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import outcome, play_plan, run_rows
from harmonies_env.cards import NUM_CARDS
from harmonies_env.geometry import MAX_CELLS, NEIGHBOURS, NUM_CELLS, SYMMETRIES
from harmonies_env.io import atomic_write_bytes
from harmonies_env.scoring import NUM_CATEGORIES, score_into
from harmonies_env.validate import parse_json

from .afterstate import FEATURE_VERSION, GLOBAL, NUM_FEATURES, SEAT, SEAT_HEAD, afterstate_features
from .base import PlanAgent
from .checkpoint import CheckpointError, checkpoint_pair, weights_sha256
from .greedy import DEFAULT_WEIGHTS, MAX_BEAM, MAX_PLAN, NUM_TERMS, no_turn_left, plan_candidates, plan_turn
from .policy import PlanRows

#: Layout version of new weight vectors (stored in checkpoints): 2 = the board shapes and the card shapes; layout 1
#: (the board shapes only, the first shipped networks) still loads and plays. Any other is refused.
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
#: Weights of each layout: layout 1 ends where the card tables begin.
LAYOUT_WEIGHTS = {1: int(OFFSETS[len(SHAPES) + 1]), 2: int(OFFSETS[-1])}
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
#: card).
MAX_ACTIVE = (MAX_CELLS + int(COUNTS.sum(axis=1).max())
              + S.MAX_SLOTS * (MAX_CELLS + int(COUNTS[:, :3].sum(axis=1).max())))


# ------------------------------------------------------------------------------------------------ kernels

@njit(cache=True)
def cell_values(s, p: int, out) -> None:
    """Content of each cell of seat p's board: stack code + 15 if an animal cube stands there. out int64 (25,)."""
    cubes = s[S.CUBES + p]
    for i in range(MAX_CELLS):
        out[i] = s[S.STACK + MAX_CELLS * p + i] + (VALUES // 2 if (cubes >> i) & 1 else 0)


@njit(cache=True)
def tuple_indices(s, p: int, idx, cards: bool) -> int:
    """The weights (indices into the weight vector) that seat p's board selects, into idx int64 (>= MAX_ACTIVE,);
    returns how many. Keys are the same for a shape's mirror images and rotations (module docstring). cards (layout
    2): also the card shapes, once for each card p holds."""
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
    for h in range(S.MAX_SLOTS):
        card = s[S.SLOT + S.MAX_SLOTS * p + h]
        if card < 0:
            continue
        for i in range(NUM_CELLS[side]):
            idx[k] = OFFSETS[6] + card * V + v[i]
            k += 1
        for t in range(COUNTS[side, 0]):
            a = v[PAIRS[side, t, 0]]
            b = v[PAIRS[side, t, 1]]
            idx[k] = OFFSETS[7] + (card * V + min(a, b)) * V + max(a, b)
            k += 1
        for t in range(COUNTS[side, 1]):
            a = v[TRIANGLES[side, t, 0]]
            b = v[TRIANGLES[side, t, 1]]
            c = v[TRIANGLES[side, t, 2]]
            lo = min(a, min(b, c))
            hi = max(a, max(b, c))
            idx[k] = OFFSETS[8] + ((card * V + lo) * V + (a + b + c - lo - hi)) * V + hi
            k += 1
        for t in range(COUNTS[side, 2]):
            a = v[LINES[side, t, 0]]
            m = v[LINES[side, t, 1]]
            c = v[LINES[side, t, 2]]
            idx[k] = OFFSETS[9] + ((card * V + m) * V + min(a, c)) * V + max(a, c)
            k += 1
    return k


@njit(cache=True)
def linear_features(s, p: int, feats, lin) -> None:
    """The linear part's inputs for seat p in s: `afterstate_features` (into feats float32 (NUM_FEATURES,),
    scratch) gathered at LINEAR_INDEX, then 1 (the bias), into lin float64 (NUM_LINEAR,)."""
    afterstate_features(s, p, feats)
    for j in range(LINEAR_INDEX.shape[0]):
        lin[j] = feats[LINEAR_INDEX[j]]
    lin[LINEAR_INDEX.shape[0]] = 1.0


@njit(cache=True)
def value_of(w, idx, k: int, lin) -> float:
    """The network's output for selected weights idx[:k] and linear inputs lin: float64 sum."""
    v = 0.0
    for j in range(lin.shape[0]):
        v += float(w[j]) * lin[j]
    for j in range(k):
        v += float(w[idx[j]])
    return v


@njit(cache=True)
def own_total(s, p: int, sc) -> int:
    """Seat p's total score now (sc int64 (NUM_CATEGORIES,) scratch)."""
    cp = S.CUBES_PLACED + _NC * p
    score_into(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], s[cp: cp + _NC], sc, s[S.RIVER_LOOPS])
    return sc[NUM_CATEGORIES - 1]


@njit(cache=True)
def remaining(s, p: int, w, idx, feats, lin) -> float:
    """Predicted points seat p still scores after afterstate s: 0 when p has no turn left, else the network."""
    if no_turn_left(s, p):
        return 0.0
    k = tuple_indices(s, p, idx, w.shape[0] > CARD_FROM)
    linear_features(s, p, feats, lin)
    return value_of(w, idx, k, lin)


@njit(cache=True)
def evaluate_batch(states, seats, w, out) -> None:
    """`remaining` of every row: states int64 (B, STATE_SIZE) afterstates, seats int64 (B,) whose view; out float64
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
    values float64 (K,) out; after int64 (STATE_SIZE,) scratch. The first-turn Spirit choice (no afterstate) gets
    the planner's order (-k). Returns the number of candidates."""
    n = plan_candidates(s, planner, beam, plans, lens, pvals)
    if n == 0:
        return 0
    if plans[0, 0] >= A.KEEP_SPIRIT and plans[0, 0] < A.KEEP_SPIRIT + 2:  # the Spirit choice: planner's order
        for k in range(n):
            values[k] = -k
        return n
    p = s[S.CURRENT]
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for k in range(n):
        after[:] = s
        play_plan(after, plans[k], lens[k], True)
        values[k] = own_total(after, p, sc) + remaining(after, p, w, idx, feats, lin)
    return n


@njit(cache=True, nogil=True)
def choose_rows(lo: int, hi: int, states, w, planner, beam: int, plans, lens, pvals, values, after, counts,
                choice) -> None:
    """`candidate_values` and the best candidate (first argmax, as `NTupleAgent.choose_plan`) for rows lo..hi-1 of
    states (int64 (N, STATE_SIZE), not modified): plans int64 (N, K, MAX_PLAN), lens / pvals / values (N, K), after
    int64 (N, STATE_SIZE) scratch; out counts int64 (N,), choice int64 (N,). Releases the GIL, so row ranges can
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

    states int64 (G, STATE_SIZE), modified (each row plays its chosen plan with END); kinds int64 (G, 4) who plays
    each seat: 0 = this network (`candidate_values`, the best; explore[r]: candidate int(pick[r] x count) instead),
    1 = the greedy planner (`plan_turn` at greedy_beam, its best plan). Scratch per row: plans int64 (G, K,
    MAX_PLAN), lens, pvals, values (G, K), tmp int64 (G, STATE_SIZE). Out per row: after[r] the chosen plan's
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
def selected_norm(idx, k: int) -> float:
    """Squared norm of the tuple part's input: the sum over distinct selected weights of (times selected)^2. A
    board selects the same weight many times (an empty board's pairs are all one key), so a step spread evenly per
    selection moves the output by step x this, not step x k."""
    a = np.sort(idx[:k])
    total = 0.0
    run = 1
    for t in range(1, k + 1):
        if t < k and a[t] == a[t - 1]:
            run += 1
        else:
            total += run * run
            run = 1
    return total


@njit(cache=True)
def learn_game(w, afters, seats, preds, m: int, final, lam: float, alpha_tuple: float, alpha_linear: float,
               targets, mix: float) -> float:
    """TD(lambda) updates from one finished game's recorded afterstates afters[:m] (int64 (>= m, STATE_SIZE)), their
    movers seats[:m] and predictions at play time preds[:m]; final int64 (4,) every seat's final total.

    Per seat, walking its afterstates backwards: the return of afterstate a_k is r_k + (1 - lam) V(a_k+1) + lam G_k+1,
    where r_k is the seat's points gained from a_k to a_k+1 and V the prediction made at play time; the last one's
    is final - total(a_m). Expert iteration: where targets[k] (float64 (>= m,)) is not NaN, a search valued a_k
    (points still to come, `search_values`), and the return becomes mix x targets[k] + (1 - mix) x G_k (earlier
    returns then bootstrap from it). Each afterstate where the seat still has a turn then moves the network towards
    its return by normalized least mean squares: the tuple part's output by alpha_tuple x error (each selection by
    alpha_tuple x error / `selected_norm`), the linear part's by alpha_linear x error (step x input / |input|^2).
    w float32 (a layout's length) is updated in place, afterstates in game order. Returns the sum of squared errors
    (before each update).
    """
    ret = np.zeros(m, dtype=np.float64)
    tot = np.zeros(m, dtype=np.float64)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for j in range(m):
        tot[j] = own_total(afters[j], seats[j], sc)
    nxt = np.full(S.MAX_PLAYERS, -1, dtype=np.int64)
    for j in range(m - 1, -1, -1):
        p = seats[j]
        q = nxt[p]
        if q < 0:
            ret[j] = final[p] - tot[j]
        else:
            ret[j] = (tot[q] - tot[j]) + (1.0 - lam) * preds[q] + lam * ret[q]
        if not np.isnan(targets[j]):
            ret[j] = mix * targets[j] + (1.0 - mix) * ret[j]
        nxt[p] = j
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    sse = 0.0
    for j in range(m):
        s = afters[j]
        p = seats[j]
        if no_turn_left(s, p):
            continue
        k = tuple_indices(s, p, idx, w.shape[0] > CARD_FROM)
        linear_features(s, p, feats, lin)
        err = ret[j] - value_of(w, idx, k, lin)
        sse += err * err
        step = alpha_tuple * err / selected_norm(idx, k)
        for t in range(k):
            w[idx[t]] += np.float32(step)
        lnorm = 0.0
        for t in range(lin.shape[0]):
            lnorm += lin[t] * lin[t]
        step = alpha_linear * err / lnorm
        for t in range(lin.shape[0]):
            if lin[t] != 0.0:
                w[t] += np.float32(step * lin[t])
    return sse


@njit(cache=True)
def win_logit(s, p: int, w, idx, feats, lin) -> float:
    """The win head's output at afterstate s for seat p: the logit of p's share of the victory (w: a weight vector of
    the points head's layout; unlike `remaining`, also where p has no turn left, since the others may)."""
    k = tuple_indices(s, p, idx, w.shape[0] > CARD_FROM)
    linear_features(s, p, feats, lin)
    return value_of(w, idx, k, lin)


@njit(cache=True)
def candidate_wins(s, plans, lens, n: int, w, out) -> None:
    """The win head's probability for the mover of s (not modified) at each candidate's afterstate: plans int64
    (>= n, MAX_PLAN), lens (>= n,); out float64 (>= n,)."""
    p = s[S.CURRENT]
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    after = np.empty(S.STATE_SIZE, dtype=np.int64)
    for k in range(n):
        after[:] = s
        play_plan(after, plans[k], lens[k], True)
        out[k] = 1.0 / (1.0 + np.exp(-win_logit(after, p, w, idx, feats, lin)))


@njit(cache=True)
def learn_win(w, afters, seats, m: int, share, lam: float, alpha_tuple: float, alpha_linear: float) -> float:
    """TD(lambda) of the win head (issue 30's win target) from one finished game's afterstates afters[:m] (int64
    (>= m, STATE_SIZE)) and movers seats[:m]; share float64 (4,) each seat's final share of the victory (1/k for
    a k-way shared win, else 0).

    The head's output z is a logit; its prediction sigma(z). Per seat, walking backwards, the return of a_k is
    (1 - lam) sigma(z_k+1) + lam G_k+1 (the last one's: share), with every prediction taken before any update.
    Each afterstate then moves z by normalized least mean squares with the cross-entropy's gradient, error = G -
    sigma(z) (the tuple part by alpha_tuple, the linear part by alpha_linear, as `learn_game`). w float32
    (a layout's length) in place. Returns the summed cross-entropy (before each update)."""
    idx = np.empty(MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(NUM_LINEAR, dtype=np.float64)
    prob = np.zeros(m, dtype=np.float64)
    for j in range(m):
        prob[j] = 1.0 / (1.0 + np.exp(-win_logit(afters[j], seats[j], w, idx, feats, lin)))
    ret = np.zeros(m, dtype=np.float64)
    nxt = np.full(S.MAX_PLAYERS, -1, dtype=np.int64)
    for j in range(m - 1, -1, -1):
        p = seats[j]
        q = nxt[p]
        ret[j] = share[p] if q < 0 else (1.0 - lam) * prob[q] + lam * ret[q]
        nxt[p] = j
    loss = 0.0
    for j in range(m):
        s = afters[j]
        p = seats[j]
        k = tuple_indices(s, p, idx, w.shape[0] > CARD_FROM)
        linear_features(s, p, feats, lin)
        pr = 1.0 / (1.0 + np.exp(-value_of(w, idx, k, lin)))
        pc = min(max(pr, 1e-7), 1.0 - 1e-7)
        loss -= ret[j] * np.log(pc) + (1.0 - ret[j]) * np.log(1.0 - pc)
        err = ret[j] - pr
        step = alpha_tuple * err / selected_norm(idx, k)
        for t in range(k):
            w[idx[t]] += np.float32(step)
        lnorm = 0.0
        for t in range(lin.shape[0]):
            lnorm += lin[t] * lin[t]
        step = alpha_linear * err / lnorm
        for t in range(lin.shape[0]):
            if lin[t] != 0.0:
                w[t] += np.float32(step * lin[t])
    return loss


@njit(cache=True)
def final_totals(s, totals, won) -> None:
    """Every seat's final total (and who won) of a finished game."""
    tmp = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    outcome(s, totals, tmp, won)


# ------------------------------------------------------------------------------------------------ weights

def heuristic_weights(layout: int = NTUPLE_VERSION) -> np.ndarray:
    """A weight vector (of `layout`) that plays as the greedy planner evaluates: zero tuples, and the linear weights of
    the mover's potential terms (features / 10) set to 10 x `greedy.DEFAULT_WEIGHTS`, so total + remaining =
    `greedy.evaluate` (where the mover still has a turn)."""
    w = np.zeros(LAYOUT_WEIGHTS[check_layout(layout)], dtype=np.float32)
    pos = {int(f): j for j, f in enumerate(LINEAR_INDEX)}
    for k in range(NUM_TERMS):
        w[pos[_TERMS_AT + k]] = 10.0 * DEFAULT_WEIGHTS[k]
    return w


#: The play settings a checkpoint records and the agent uses unless told otherwise.
DEFAULT_PLAY = {"beam": 24, "candidates": 128}
#: The shipped checkpoint (if any): agents/checkpoints/learned.npz + .json.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "learned.npz"
#: The shipped win head (if any) that `ntuple-win` adds to the shipped points head.
DEFAULT_WIN_CHECKPOINT = DEFAULT_CHECKPOINT.with_name("learned-win.npz")
#: What a checkpoint's weights predict: "points" (still to come; `remaining`) or "win" (`win_logit`).
HEADS = ("points", "win")
MAX_CANDIDATES = 1024
_MAX_BYTES = 1 << 28


def check_layout(layout: Any) -> int:
    """A known layout version (ValueError otherwise)."""
    if isinstance(layout, bool) or layout not in LAYOUT_WEIGHTS:
        raise ValueError(f"layout must be one of {sorted(LAYOUT_WEIGHTS)}, got {layout!r}")
    return int(layout)


def layout_of(w: np.ndarray) -> int:
    """The layout of a weight vector, from its length (ValueError naming the lengths a layout has)."""
    for layout, n in LAYOUT_WEIGHTS.items():
        if w.shape == (n,):
            return layout
    raise ValueError(f"weights must have shape (n,) with n one of {sorted(LAYOUT_WEIGHTS.values())} (layouts "
                     f"{sorted(LAYOUT_WEIGHTS)}), got {w.shape}")


def network_config(play: dict[str, Any] | None = None, head: str = "points",
                   layout: int = NTUPLE_VERSION) -> dict[str, Any]:
    """The config a checkpoint records: layout (version, sizes, shapes), play settings, and (for a win head) its
    head."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    layout = check_layout(layout)
    shapes = SHAPES + (CARD_SHAPES if layout >= 2 else ())
    return {"version": layout, "feature_version": FEATURE_VERSION, "num_weights": LAYOUT_WEIGHTS[layout],
            "shapes": list(shapes), "play": check_play({**DEFAULT_PLAY, **(play or {})}),
            **({"head": head} if head != "points" else {})}


def check_play(play: Any) -> dict[str, int]:
    """Validated play settings {beam, candidates} (ValueError naming the setting)."""
    if not isinstance(play, dict) or set(play) != set(DEFAULT_PLAY):
        raise ValueError(f"play must be exactly {sorted(DEFAULT_PLAY)}, got {play!r}")
    for key, top in (("beam", MAX_BEAM), ("candidates", MAX_CANDIDATES)):
        v = play[key]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
            raise ValueError(f"play.{key} must be a whole number 1..{top}, got {v!r}")
    return {k: int(v) for k, v in play.items()}


def weights_bytes(w: np.ndarray) -> bytes:
    """The `.npz` bytes of a weight vector (one array `weights`, float32; no pickle)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, weights=np.asarray(w, dtype=np.float32))
    return buf.getvalue()


def save_checkpoint(path: str | Path, w: np.ndarray, play: dict[str, Any] | None = None,
                    training: dict[str, Any] | None = None, head: str = "points") -> Path:
    """NAME.npz (the weights) then NAME.json (config, SHA-256 of NAME.npz, how it was trained), each atomically."""
    p = Path(path).with_suffix(".npz")
    data = weights_bytes(w)
    atomic_write_bytes(p, data)
    doc = {"ntuple": network_config(play, head, layout_of(np.asarray(w))), "sha256": weights_sha256(data),
           "training": training or {}}
    atomic_write_bytes(p.with_suffix(".json"), (json.dumps(doc, indent=1) + "\n").encode())
    return p


def load_checkpoint(path: str | Path) -> tuple[dict[str, Any], np.ndarray]:
    """(config, float32 weights) from NAME.npz + NAME.json, checked before use: the JSON's layout matches this code,
    NAME.npz has the SHA-256 the JSON records, it is an npz of exactly one finite float32 array `weights` of
    its layout's length, read with allow_pickle=False. Anything else: `CheckpointError` naming the file."""
    p, meta = checkpoint_pair(path, ".npz", "an ntuple checkpoint")
    if meta.stat().st_size > (1 << 20) or p.stat().st_size > _MAX_BYTES:
        raise CheckpointError(f"{p}: larger than an ntuple checkpoint can be")
    try:
        doc = parse_json(meta.read_bytes(), str(meta))
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    if not isinstance(doc, dict) or set(doc) - {"ntuple", "sha256", "training"} or "ntuple" not in doc:
        raise CheckpointError(f"{meta}: not an ntuple checkpoint config (entries must be ntuple, sha256, training)")
    cfg = doc["ntuple"]
    version = cfg.get("version") if isinstance(cfg, dict) else None
    want_layout = {k: v for k, v in network_config(layout=version if version in LAYOUT_WEIGHTS else NTUPLE_VERSION)
                   .items() if k != "play"}
    if not isinstance(cfg, dict) or {k: cfg.get(k) for k in want_layout} != want_layout:
        got = {k: cfg.get(k) for k in want_layout} if isinstance(cfg, dict) else cfg
        raise CheckpointError(f"{meta}: its layout {got!r} is not this code's {want_layout!r}: retrain "
                              f"(python -m experiments.train ntuple)")
    try:
        play = check_play(cfg.get("play"))
    except ValueError as e:
        raise CheckpointError(f"{meta}: {e}") from None
    head = cfg.get("head", "points")
    if head not in HEADS:
        raise CheckpointError(f"{meta}: head must be one of {HEADS}, got {str(head)[:40]!r}")
    data = p.read_bytes()
    want = doc.get("sha256")
    if not (isinstance(want, str) and re.fullmatch(r"[0-9a-f]{64}", want)):
        raise CheckpointError(f"{meta}: 'sha256' of {p.name} must be 64 lowercase hex digits, got {str(want)[:80]!r}")
    actual = weights_sha256(data)
    if actual != want:
        raise CheckpointError(f"{p}: SHA-256 {actual} is not the {want} that {meta.name} records (a damaged, "
                              f"edited or mixed-up pair of files)")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            names = sorted(z.files)
            w = z["weights"] if names == ["weights"] else None
    except Exception as e:  # a damaged archive, or an object array refused without pickle
        raise CheckpointError(f"{p}: not an npz of plain arrays ({type(e).__name__}: {str(e)[:120]})") from None
    if w is None:
        raise CheckpointError(f"{p}: must hold exactly one array 'weights', got {names[:5]}")
    n = LAYOUT_WEIGHTS[version]
    if w.dtype != np.float32 or w.shape != (n,) or not np.isfinite(w).all():
        raise CheckpointError(f"{p}: 'weights' must be {n} finite float32 numbers, got {w.dtype} "
                              f"{w.shape}")
    return ({**network_config(play, head, version), "head": head, "training": doc.get("training", {})},
            np.ascontiguousarray(w))


class NTupleAgent(PlanAgent):
    """Plays the candidate whole-turn plan (`greedy.plan_candidates`, `candidates` plans at beam `beam` per central
    space) whose afterstate is worth most to it: own total there + the n-tuple network's predicted remaining points.

    path: an ntuple checkpoint (NAME.npz + NAME.json), default the shipped one; weights: a float32 vector instead
    (then beam / candidates default to DEFAULT_PLAY). Reads only public information (afterstate features and the
    planner never look at hidden order), so its choice is the same on every determinized copy.
    """

    def __init__(self, path: str | Path | None = None, beam: int | None = None, candidates: int | None = None,
                 seed: int = 0, name: str | None = None, weights: np.ndarray | None = None):
        if weights is None:
            where = DEFAULT_CHECKPOINT if path is None else path
            config, weights = load_checkpoint(where)
            if config["head"] != "points":
                raise CheckpointError(f"{where}: is a {config['head']} head, not the points head `learned` / "
                                      f"`ntuple` plays (a win head goes with ntuple-win)")
            play = config["play"]
        else:
            weights = np.ascontiguousarray(weights, dtype=np.float32)
            layout_of(weights)
            play = dict(DEFAULT_PLAY)
        play = check_play({**play, **{k: v for k, v in (("beam", beam), ("candidates", candidates)) if v is not None}})
        self.weights = weights
        self.beam = play["beam"]
        self.candidates = play["candidates"]
        self.seed = int(seed)
        self.name = name or "ntuple"
        self._plans = np.zeros((self.candidates, MAX_PLAN), dtype=np.int64)
        self._lens = np.zeros(self.candidates, dtype=np.int64)
        self._pvals = np.zeros(self.candidates, dtype=np.float64)
        self._values = np.zeros(self.candidates, dtype=np.float64)
        self._after = np.zeros(S.STATE_SIZE, dtype=np.int64)
        self._batch: PlanRows | None = None
        self._rows: tuple[np.ndarray, ...] | None = None
        self.last_values: np.ndarray = np.zeros(0)
        self.reset()

    def rank(self, game: Any) -> tuple[list[list[int]], np.ndarray]:
        """The candidate plans for the mover of `game` (a private copy) and the value of each for it."""
        n = candidate_values(game.state.copy(), self.weights, DEFAULT_WEIGHTS, self.beam, self._plans, self._lens,
                             self._pvals, self._values, self._after)
        return [self._plans[k, : self._lens[k]].tolist() for k in range(n)], self._values[:n].copy()

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        plans, values = self.rank(game)
        self.last_values = values
        return plans[int(np.argmax(values))] if plans else []

    def reset_batch(self, seeds: Any) -> None:
        """Plan buffers for a batched match of len(seeds) games (the agent draws nothing: seeds are unused)."""
        self.reset()
        self._batch = PlanRows(len(seeds), MAX_PLAN)
        self._rows = None

    def act_batch(self, batch: Any) -> np.ndarray:
        """Every game's move: the games whose turn starts are planned and their candidates valued in one threaded
        numba call (`choose_rows`, the kernel `rank` uses), and each plays its best plan over its turn's
        micro-actions (`PlanRows`); the same moves as `act`."""
        if self._batch is None:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        rows = np.asarray(batch.rows, dtype=np.int64)
        stale = self._batch.stale(batch.states, rows)
        if stale.size:
            m, k = stale.size, self.candidates
            sub = np.ascontiguousarray(batch.states[stale])
            if self._rows is None or self._rows[0].shape[0] < m:  # kept between calls: grown, never shrunk
                self._rows = (np.zeros((m, k, MAX_PLAN), dtype=np.int64), np.zeros((m, k), dtype=np.int64),
                              np.zeros((m, k)), np.zeros((m, k)), np.zeros((m, S.STATE_SIZE), dtype=np.int64),
                              np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64))
            plans, lens, pvals, values, after, counts, choice = self._rows
            run_rows(choose_rows, m, batch.threads, sub, self.weights, DEFAULT_WEIGHTS, self.beam, plans, lens, pvals,
                     values, after, counts, choice, min_rows=2)  # a row costs milliseconds
            j = np.arange(m)
            c = choice[:m]
            self._batch.store(sub, rows[stale], plans[j, c], np.where(counts[:m] > 0, lens[j, c], 0))
        return self._batch.next(rows)


class NTupleWinAgent(NTupleAgent):
    """`ntuple` with the win head (issue 30's targets that match play): each candidate is worth own total +
    remaining points (the points head) + `win_weight` x the win head's probability that the mover wins from its
    afterstate. The points head is `path` (default the shipped one), the win head `win_path` (default
    `DEFAULT_WIN_CHECKPOINT`) or the vector `win_weights`. Public information only, as `ntuple`."""

    def __init__(self, path: str | Path | None = None, win_path: str | Path | None = None, win_weight: float = 20.0,
                 win_weights: np.ndarray | None = None, name: str | None = None, **kwargs: Any):
        if isinstance(win_weight, bool) or not isinstance(win_weight, (int, float)) or not 0 <= win_weight <= 1000:
            raise ValueError(f"win_weight must be a number 0..1000 (points per unit of win probability), "
                             f"got {win_weight!r}")
        super().__init__(path, name=name, **kwargs)
        if win_weights is None:
            where = DEFAULT_WIN_CHECKPOINT if win_path is None else win_path
            config, win_weights = load_checkpoint(where)
            if config["head"] != "win":
                raise CheckpointError(f"{where}: is a {config['head']} head, not a win head")
        win_weights = np.ascontiguousarray(win_weights, dtype=np.float32)
        try:
            layout_of(win_weights)
        except ValueError as e:
            raise ValueError(f"win_{e}") from None
        self.win = win_weights
        self.win_weight = float(win_weight)
        self._wins = np.zeros(self.candidates, dtype=np.float64)
        self.name = name or f"ntuple-win:{self.win_weight:g}"

    # The win head re-ranks per view: the base class's loop over `act` (not `choose_rows`' threads).
    reset_batch = PlanAgent.reset_batch
    act_batch = PlanAgent.act_batch

    def rank(self, game: Any) -> tuple[list[list[int]], np.ndarray]:
        plans, values = super().rank(game)
        n = len(plans)
        if n and not (A.KEEP_SPIRIT <= plans[0][0] < A.KEEP_SPIRIT + 2):
            candidate_wins(game.state.copy(), self._plans, self._lens, n, self.win, self._wins)
            values = values + self.win_weight * self._wins[:n]
        return plans, values


@njit(cache=True)
def search_values(roots, which, plans, lens, w, planner, beam: int, candidates: int, out) -> None:
    """Leaves of `NTupleSearchAgent`: out[i] = what candidate which[i] is worth to the mover of world roots[i]
    (int64 (L, STATE_SIZE), modified) after the chance and the replies it leads to.

    The world plays the candidate with its END (the central board refills from the world's pouch), every other seat
    then plays its turn as the `ntuple` agent would (the network's best of `candidates` plans at beam `beam`), and
    the mover's next turn is valued by the network: the best of its candidates' own total + remaining. A game that
    ends on the way is valued by the mover's final total. plans int64 (C, MAX_PLAN), lens (C,): the root candidates.
    """
    P = np.zeros((candidates, MAX_PLAN), dtype=np.int64)
    Ln = np.zeros(candidates, dtype=np.int64)
    pv = np.zeros(candidates, dtype=np.float64)
    vals = np.zeros(candidates, dtype=np.float64)
    tmp = np.empty(S.STATE_SIZE, dtype=np.int64)
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
                out[i] = own_total(s, me, sc)
                break
            best = int(np.argmax(vals[:n]))
            if s[S.CURRENT] == me:
                out[i] = vals[best]
                break
            play_plan(s, P[best], Ln[best])


class NTupleSearchAgent(NTupleAgent):
    """The n-tuple agent with a one-turn expectimax over the chance: its `root` best candidates (by the network) are
    each played in sampled worlds (`private_copy`: the hidden draw order only from the seed, never the real one;
    every candidate in the same worlds, common random numbers), where the central board refills, the other seats
    reply as the `ntuple` agent would (beam `reply_beam`, `reply_candidates` plans) and the network values the
    mover's best next turn (`search_values`). It plays the candidate with the best mean.

    The budget is `worlds` worlds per candidate (default 8; reproducible: spec `learned-search:Nit`, also spelled
    `ntuple-search:Nit`), or with `seconds` set, worlds added one at a time (every candidate in each) until the next
    would pass that much wall time since the decision began (at least one, at most `worlds`, default 10,000; spec
    `learned-search:SECONDS`): how many fit depends on the machine and its load.
    """

    def __init__(self, path: str | Path | None = None, worlds: int | None = None, root: int = 6, reply_beam: int = 8,
                 reply_candidates: int = 32, seed: int = 0, name: str | None = None, seconds: float | None = None,
                 **kwargs: Any):
        if worlds is None:  # 8 worlds; under a time budget, as many as fit
            worlds = 8 if seconds is None else 10_000
        for what, v in (("worlds", worlds), ("root", root), ("reply_beam", reply_beam),
                        ("reply_candidates", reply_candidates)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 10_000:
                raise ValueError(f"{what} must be a whole number 1..10000, got {v!r}")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not 0 < seconds <= 3600):
            raise ValueError(f"seconds must be a number in (0, 3600], got {seconds!r}")
        super().__init__(path, seed=seed, name=name, **kwargs)
        self.seconds = None if seconds is None else float(seconds)
        self.worlds, self.root = int(worlds), int(root)
        self.reply_beam, self.reply_candidates = int(reply_beam), int(reply_candidates)
        self.name = name or (f"ntuple-search:{self.seconds:g}" if self.seconds else f"ntuple-search:{self.worlds}it")
        self.last_worlds = 0

    # The search decides one view at a time (it samples worlds per decision): the base class's loop over `act`.
    reset_batch = PlanAgent.reset_batch
    act_batch = PlanAgent.act_batch

    def _seed_for(self, turn: int, j: int) -> int:
        return int((self.seed * 0x9E3779B1 + turn * 0x85EBCA77 + j * 0xC2B2AE3D + 0x27D4EB2F) & (2**62 - 1))

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        import time

        from .base import private_copy

        start = time.perf_counter()
        plans, values = self.rank(game)
        self.last_values = values
        if len(plans) <= 1 or (plans[0][0] >= A.KEEP_SPIRIT and plans[0][0] < A.KEEP_SPIRIT + 2):
            return plans[int(np.argmax(values))] if plans else []
        order = np.argsort(-values, kind="stable")[: self.root]
        C = len(order)
        cp = np.zeros((C, MAX_PLAN), dtype=np.int64)
        cl = np.zeros(C, dtype=np.int64)
        for k, o in enumerate(order):
            cp[k, : len(plans[o])] = plans[o]
            cl[k] = len(plans[o])
        which = np.arange(C, dtype=np.int64)
        total = np.zeros(C)
        out = np.zeros(C)
        turn = int(game.turn)
        j = 0
        while j < self.worlds:  # one world at a time, every candidate in it
            t0 = time.perf_counter()
            world = private_copy(view, self._seed_for(turn, j)).state
            search_values(np.repeat(world[None], C, axis=0), which, cp, cl, self.weights, DEFAULT_WEIGHTS,
                          self.reply_beam, self.reply_candidates, out)
            total += out
            j += 1
            if self.seconds is not None:
                now = time.perf_counter()
                if now + (now - t0) > start + self.seconds:
                    break
        self.last_worlds = j
        return plans[int(order[int(np.argmax(total))])]


__all__ = ["NTupleAgent", "NTupleSearchAgent", "NTupleWinAgent", "search_values", "win_logit", "candidate_wins",
           "learn_win", "HEADS", "DEFAULT_WIN_CHECKPOINT",
           "NTUPLE_VERSION", "NUM_WEIGHTS", "NUM_LINEAR", "OFFSETS", "SHAPES", "CARD_SHAPES", "VALUES",
           "LAYOUT_WEIGHTS", "CARD_FROM", "check_layout", "layout_of",
           "LINEAR_INDEX", "MAX_ACTIVE", "DEFAULT_CHECKPOINT", "DEFAULT_PLAY", "tuple_indices", "linear_features",
           "remaining", "evaluate_batch", "candidate_values", "choose_rows", "decide_rows", "learn_game",
           "heuristic_weights",
           "save_checkpoint", "load_checkpoint", "weights_bytes", "network_config", "check_play", "final_totals"]
