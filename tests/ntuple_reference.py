"""A plain-Python evaluation of the n-tuple network (agents/ntuple/), written from its description, not its code:
the shapes are found again from the board's axial coordinates, each key built from a cell list by the rules in the
module docstring. tests/test_ntuple.py checks that the numba kernels give the same numbers."""
from __future__ import annotations

import itertools

import numpy as np

from agents.afterstate import GLOBAL, NUM_FEATURES, SEAT, SEAT_HEAD, afterstate_features
from agents.greedy import no_turn_left
from agents.ntuple import LAYOUT_WEIGHTS, MARKET_FROM, OFFSETS, STAGE_STARTS, VALUES
from harmonies_env import cards as C
from harmonies_env import stacks as ST
from harmonies_env import state as S
from harmonies_env.data import BOARD_CELLS, COLOURS, SIDES
from harmonies_env.geometry import SYMMETRIES

_DIRS = ((0, -1), (1, -1), (1, 0), (0, 1), (-1, 1), (-1, 0))


def _shapes(side: int) -> dict[str, list[tuple[int, ...]]]:
    cells = BOARD_CELLS[SIDES[side]]
    at = {tuple(qr): i for i, qr in enumerate(cells)}

    def nb(i: int) -> set[int]:
        q, r = cells[i]
        return {at[(q + dq, r + dr)] for dq, dr in _DIRS if (q + dq, r + dr) in at}

    n = len(cells)
    pairs = [(i, j) for i in range(n) for j in nb(i) if i < j]
    tris = [(i, j, k) for i, j in pairs for k in nb(i) & nb(j) if k > j]
    lines = []
    for i in range(n):
        q, r = cells[i]
        for dq, dr in _DIRS[:3]:
            m, e = (q + dq, r + dr), (q + 2 * dq, r + 2 * dr)
            if m in at and e in at:
                lines.append((i, at[m], at[e]))
    rhombi = []
    for i, j in pairs:
        common = sorted(nb(i) & nb(j))
        if len(common) == 2:
            rhombi.append((common[0], i, j, common[1]))
    return {"pair": pairs, "triangle": tris, "line": lines, "rhombus": rhombi, "n": [n]}


def reference_remaining(s: np.ndarray, p: int, w: np.ndarray) -> float:
    """Predicted remaining points for seat p at state s under weights w (float32 vector), in plain Python."""
    return 0.0 if no_turn_left(s, p) else reference_output(s, p, w)


def reference_output(s: np.ndarray, p: int, w: np.ndarray) -> float:
    """The network's output for seat p's view of state s (the win head's logit; remaining points where p has a
    turn left), in plain Python."""
    if len(w) == LAYOUT_WEIGHTS[3]:  # one layout-2 block per game stage: the mover's own turn picks it
        own_turn = int(s[S.TURN]) // int(s[S.NUM_PLAYERS])
        stage = sum(1 for start in STAGE_STARTS[1:] if own_turn >= start)
        w = w[stage * LAYOUT_WEIGHTS[2]: (stage + 1) * LAYOUT_WEIGHTS[2]]
    side = int(s[S.SIDE])
    V = VALUES
    cubes = int(s[S.CUBES + p])
    codes = S.field(s, "stack")[p]
    val = [int(codes[i]) + (15 if (cubes >> i) & 1 else 0) for i in range(25)]
    sh = _shapes(side)
    keys = []
    for i in range(sh["n"][0]):
        orbit = min(int(SYMMETRIES[side, k, i]) for k in range(4))
        keys.append(int(OFFSETS[1]) + (side * 25 + orbit) * V + val[i])
    for i, j in sh["pair"]:
        a, b = sorted((val[i], val[j]))
        keys.append(int(OFFSETS[2]) + a * V + b)
    for cs in sh["triangle"]:
        a, b, c = sorted(val[x] for x in cs)
        keys.append(int(OFFSETS[3]) + a * V * V + b * V + c)
    for e1, m, e2 in sh["line"]:
        a, c = sorted((val[e1], val[e2]))
        keys.append(int(OFFSETS[4]) + val[m] * V * V + a * V + c)
    for t1, s1, s2, t2 in sh["rhombus"]:
        a, d = sorted((val[t1], val[t2]))
        b, c = sorted((val[s1], val[s2]))
        keys.append(int(OFFSETS[5]) + a * V ** 3 + d * V * V + b * V + c)
    if len(w) in (LAYOUT_WEIGHTS[2], LAYOUT_WEIGHTS[4]):  # the card shapes: the board shapes again, a table per card
        held = [int(c) for c in s[S.SLOT + 4 * p: S.SLOT + 4 * p + 4] if c >= 0]
        for card in held:
            for i in range(sh["n"][0]):
                keys.append(int(OFFSETS[6]) + card * V + val[i])
            for i, j in sh["pair"]:
                a, b = sorted((val[i], val[j]))
                keys.append(int(OFFSETS[7]) + card * V * V + a * V + b)
            for cs in sh["triangle"]:
                a, b, c = sorted(val[x] for x in cs)
                keys.append(int(OFFSETS[8]) + card * V ** 3 + a * V * V + b * V + c)
            for e1, m, e2 in sh["line"]:
                a, c = sorted((val[e1], val[e2]))
                keys.append(int(OFFSETS[9]) + card * V ** 3 + val[m] * V * V + a * V + c)
    else:
        assert len(w) == LAYOUT_WEIGHTS[1]
    if len(w) == LAYOUT_WEIGHTS[4]:  # the market tables: a look-up per held card, then per face-up card
        keys += [MARKET_FROM + k for k in reference_market_keys(s, p)]
    feats = np.zeros(NUM_FEATURES, dtype=np.float32)
    afterstate_features(s, p, feats)
    lin = [float(feats[i]) for i in range(GLOBAL)]
    for j in range(S.MAX_PLAYERS):
        lin += [float(x) for x in feats[GLOBAL + j * SEAT: GLOBAL + j * SEAT + SEAT_HEAD]]
    lin.append(1.0)
    total = sum(float(w[k]) * x for k, x in enumerate(lin))
    return total + sum(float(w[k]) for k in keys)


_BASES = {"gray", "brown", "red"}  # what a building's lower token may be


def _lacks(stack: tuple[str, ...], cls: int) -> list[tuple[str, ...]] | None:
    """The fewest tokens to stack on `stack` to make habitat class cls, as the cheapest ways (None: it cannot)."""
    targets = ([ST.STACKS[c] for c in (ST.S_BROWN_RED, ST.S_GRAY_RED, ST.S_RED_RED)] if C.CLASS_STACK[cls] < 0
               else [ST.STACKS[int(C.CLASS_STACK[cls])]])
    rests = [t[len(stack):] for t in targets if t[:len(stack)] == stack]
    if not rests:
        return None
    least = min(len(r) for r in rests)
    return [r for r in rests if len(r) == least]


def _supplied(lacking: dict[str, int], wild: int, tokens: list[str]) -> int:
    """The most of a space's tokens that fill the missing colours (wild: building bases, any of gray, brown, red),
    by trying every assignment of the tokens."""
    best = 0
    for use in itertools.product(("skip", "own", "wild"), repeat=len(tokens)):
        need = dict(lacking)
        w = wild
        got = 0
        ok = True
        for colour, u in zip(tokens, use):
            if u == "own":
                ok &= need.get(colour, 0) > 0
                need[colour] = need.get(colour, 0) - 1
            elif u == "wild":
                ok &= colour in _BASES and w > 0
                w -= 1
            got += u != "skip"
        if ok:
            best = max(best, got)
    return best


def reference_card_need(s: np.ndarray, p: int, card: int) -> tuple[int, dict[str, int], int]:
    """(min(3, fewest tokens to a habitat of card on seat p's board with a free cube cell), per colour the most
    tokens of it one such nearest habitat lacks, the most building bases one lacks), from the card's placements."""
    side = int(s[S.SIDE])
    cubes = int(s[S.CUBES + p])
    codes = S.field(s, "stack")[p]
    found = []  # (cost, lacking colours, bases) of each placement that can still be made
    for q in range(int(C.HABITAT_START[side, card]), int(C.HABITAT_START[side, card + 1])):
        if (cubes >> int(C.HABITAT_CUBE[side, q])) & 1:
            continue
        cost, lacking, bases = 0, {}, 0
        for j in range(4):
            cls = int(C.HABITAT_CLASS[side, q, j])
            if cls < 0:
                break
            for cell in range(25):
                if not (int(C.HABITAT_MASK[side, q, j]) >> cell) & 1:
                    continue
                stack = ST.STACKS[int(codes[cell])]
                ways = _lacks(stack, cls)
                if ways is None or (len(ways[0]) > 0 and (cubes >> cell) & 1):
                    cost = None
                    break
                cost += len(ways[0])
                if len(ways) > 1:  # a building on an empty cell: red on any base
                    lacking["red"] = lacking.get("red", 0) + 1
                    bases += 1
                else:
                    for colour in ways[0]:
                        lacking[colour] = lacking.get(colour, 0) + 1
            if cost is None:
                break
        if cost is not None:
            found.append((cost, lacking, bases))
    d = min((f[0] for f in found), default=99)
    most: dict[str, int] = {}
    bases = 0
    if 0 < d <= 3:
        for cost, lacking, b in found:
            if cost == d:
                for colour, n in lacking.items():
                    most[colour] = max(most.get(colour, 0), n)
                bases = max(bases, b)
    return min(d, 3), most, bases


def reference_market_keys(s: np.ndarray, p: int) -> list[int]:
    """Layout 4's market rows (offsets from the tables' start) for seat p at s: per held card, then per face-up
    card, its table (per card id, held then face-up) at (distance, best supply, spaces supplying 0/1/2+)."""
    cards = ([(0, int(c)) for c in s[S.SLOT + 4 * p: S.SLOT + 4 * p + 4] if c >= 0]
             + [(1, int(c)) for c in s[S.MARKET: S.MARKET + S.MAX_MARKET] if c >= 0])
    out = []
    for table, card in cards:
        d, most, bases = reference_card_need(s, p, card)
        supplies = []
        for sp in range(int(s[S.NUM_SPACES])):
            tokens = [COLOURS[int(c)] for c in s[S.CENTRAL + 3 * sp: S.CENTRAL + 3 * sp + 3] if c >= 0]
            supplies.append(_supplied(most, bases, tokens) if d > 0 else 0)
        best = max(supplies, default=0)
        spaces = min(2, sum(1 for x in supplies if x > 0))
        out.append((table * 43 + card) * 48 + (d * 4 + best) * 3 + spaces)
    return out
