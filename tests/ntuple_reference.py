"""A plain-Python evaluation of the n-tuple network (agents/ntuple/), written from its description, not its code:
the shapes are found again from the board's axial coordinates, each key built from a cell list by the rules in the
module docstring. tests/test_ntuple.py checks that the numba kernels give the same numbers."""
from __future__ import annotations

import numpy as np

from agents.afterstate import GLOBAL, NUM_FEATURES, SEAT, SEAT_HEAD, afterstate_features
from agents.greedy import no_turn_left
from agents.ntuple import LAYOUT_WEIGHTS, OFFSETS, STAGE_STARTS, VALUES
from harmonies_env import state as S
from harmonies_env.data import BOARD_CELLS, SIDES
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
    val = [int(s[S.STACK + 25 * p + i]) + (15 if (cubes >> i) & 1 else 0) for i in range(25)]
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
    if len(w) == LAYOUT_WEIGHTS[2]:  # the card shapes: the board's shapes again, in a table per held card
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
    feats = np.zeros(NUM_FEATURES, dtype=np.float32)
    afterstate_features(s, p, feats)
    lin = [float(feats[i]) for i in range(GLOBAL)]
    for j in range(S.MAX_PLAYERS):
        lin += [float(x) for x in feats[GLOBAL + j * SEAT: GLOBAL + j * SEAT + SEAT_HEAD]]
    lin.append(1.0)
    total = sum(float(w[k]) * x for k, x in enumerate(lin))
    return total + sum(float(w[k]) for k in keys)
