"""One whole turn chosen by a value model of afterstates: the batched turn (`Buffers`, `decide_generic`) that the
self-play framework (`experiments.selfplay`) plays with any evaluator, and the agent that plays a value model the
same way (`AfterstateAgent`, what a trained evaluator plays as through the agent registry).

Why here: a trained evaluator's value model is an agent's, so the turn it plays lives where agents live; the
training framework only records and learns from it.

A value model is any object with `values(afters, movers, out)`: out[i] (float64) is the points movers[i] still
scores after afterstate afters[i] (int32 (B, STATE_SIZE)); a candidate is worth the mover's total there
(`rules.seat_score`) plus that.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import play_plan
from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

from .base import PlanAgent
from .greedy import DEFAULT_WEIGHTS, MAX_PLAN, plan_candidates, plan_turn


class ValueModel(Protocol):
    """What `AfterstateAgent` and `decide_generic` read: the points each mover still scores after its afterstate."""

    def values(self, afters: np.ndarray, movers: np.ndarray, out: np.ndarray) -> None: ...


class Buffers:
    """The scratch arrays of one turn in a batch of G games with K candidates, and how many threads share the rows
    (the games do not depend on it: every row depends only on itself)."""

    def __init__(self, G: int, K: int, threads: int = 1):
        self.threads = int(threads)
        self.plans = np.zeros((G, K, MAX_PLAN), dtype=np.int64)
        self.lens = np.zeros((G, K), dtype=np.int64)
        self.pvals = np.zeros((G, K), dtype=np.float64)
        self.values = np.zeros((G, K), dtype=np.float64)
        self.tmp = np.zeros((G, S.STATE_SIZE), dtype=S.STATE_DTYPE)
        self.after = np.zeros((G, S.STATE_SIZE), dtype=S.STATE_DTYPE)
        self.seat = np.zeros(G, dtype=np.int64)
        self.pred = np.zeros(G, dtype=np.float64)
        self.chosen = np.zeros(G, dtype=np.int64)
        self.recorded = np.zeros(G, dtype=np.bool_)


def decide_generic(model: ValueModel, buf: Buffers, states: np.ndarray, kinds: np.ndarray, beam: int,
                   greedy_beam: int, explore: np.ndarray, pick: np.ndarray) -> None:
    """One whole turn in every unfinished game for any value model: plan the candidates (`plan_candidates`), value
    all afterstates of all games in ONE `model.values` call (own total + predicted remaining points), choose (best, or
    candidate int(pick x count) where `explore`), record the chosen afterstate and its prediction in `buf`, play it.
    kinds[r, seat] == 1: the greedy planner (`plan_turn` at greedy_beam) plays that seat (its afterstate recorded
    too, as every afterstate but the first-turn Spirit choice's). The same games as the n-tuple's fused
    `decide_rows` (tests/test_selfplay.py)."""
    G = states.shape[0]
    buf.recorded[:] = False
    counts = np.zeros(G, dtype=np.int64)
    rows: list[tuple[int, int, int]] = []  # (game, candidate, mover) of every afterstate to value
    afters: list[np.ndarray] = []
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    owns: list[float] = []
    for r in range(G):
        s = states[r]
        if s[S.GAME_OVER]:
            continue
        p = int(s[S.CURRENT])
        P, Ln = buf.plans[r], buf.lens[r]
        greedy = kinds[r, p] == 1
        if greedy:
            n = plan_turn(s, DEFAULT_WEIGHTS, greedy_beam, P[:1], Ln[:1], buf.pvals[r, :1])
        else:
            n = plan_candidates(s, DEFAULT_WEIGHTS, beam, P, Ln, buf.pvals[r])
        counts[r] = n
        if n and A.KEEP_SPIRIT <= P[0, 0] < A.KEEP_SPIRIT + 2:  # the Spirit choice: no afterstate, planner's order
            buf.values[r, :n] = -np.arange(n)
            continue
        for k in range(n):  # (a greedy seat's one plan too: its afterstate is recorded with a prediction)
            a = s.copy()
            play_plan(a, P[k], Ln[k], True)
            afters.append(a)
            owns.append(seat_score(a, p, sc))
            rows.append((r, k, p))
    pred = np.zeros(len(rows))
    if rows:
        model.values(np.stack(afters), np.array([m for _, _, m in rows], dtype=np.int64), pred)
        for i, (r, k, _) in enumerate(rows):
            buf.values[r, k] = owns[i] + pred[i]
    at = {(r, k): i for i, (r, k, _) in enumerate(rows)}
    for r in range(G):
        s = states[r]
        if s[S.GAME_OVER]:
            continue
        n = int(counts[r])
        if n == 0:
            s[S.GAME_OVER] = 1  # cannot happen on a legal position; end the game rather than loop
            continue
        p = int(s[S.CURRENT])
        P, Ln = buf.plans[r], buf.lens[r]
        if kinds[r, p] == 1:
            c = 0
        else:
            c = min(n - 1, int(pick[r] * n)) if explore[r] else int(np.argmax(buf.values[r, :n]))
        buf.chosen[r] = c
        i = at.get((r, c))
        if i is not None:
            buf.after[r] = afters[i]
            buf.seat[r] = p
            buf.pred[r] = pred[i]
            buf.recorded[r] = True
        play_plan(s, P[c], Ln[c])


class AfterstateAgent(PlanAgent):
    """Any value model as an agent: plays the candidate plan (`greedy.plan_candidates`, `candidates` plans at beam
    `beam` per central space) whose afterstate is worth most to the mover (own total + `values`), the choice the
    self-play loop makes without exploring."""

    def __init__(self, model: ValueModel, beam: int, candidates: int, name: str = "afterstate"):
        self.model, self.beam, self.candidates, self.name = model, int(beam), int(candidates), name
        self.reset()

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        buf = Buffers(1, self.candidates)
        states = game.state.copy()[None]
        kinds = np.zeros((1, S.MAX_PLAYERS), dtype=np.int64)
        decide_generic(self.model, buf, states, kinds, self.beam, 1, np.zeros(1, np.bool_), np.zeros(1))
        c = int(buf.chosen[0])
        return buf.plans[0, c, : buf.lens[0, c]].tolist()


__all__ = ["AfterstateAgent", "Buffers", "ValueModel", "decide_generic"]
