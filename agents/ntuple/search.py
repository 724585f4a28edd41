"""The n-tuple agent with a one-turn expectimax over the chance (`learned-search`); its leaves are
the kernel `kernels.search_values`."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import play_plan
from harmonies_env.geometry import MAX_CELLS, NUM_SYMMETRIES, SYMMETRIES

from ..base import PlanAgent, private_copy
from ..greedy import DEFAULT_WEIGHTS, MAX_BEAM
from .agent import MAX_CANDIDATES, NTupleAgent
from .kernels import search_values

_CELLS = np.arange(MAX_CELLS)
_WORD, _SHIFT = _CELLS >> 3, (_CELLS & 7) << 2  # where cell i's 4 bits sit in a seat's stack words
_IMAGES = np.arange(NUM_SYMMETRIES)[:, None]


def afterstate_key(s: np.ndarray, p: int) -> bytes:
    """A position's identity for the search's root: the state with seat p's board (stacks and cubes) replaced by its
    smallest image under the board's symmetries, so mirror-image afterstates share a key (bitboards, which the
    stacks determine, left out). A cell is one byte, stack code + 16 if a cube stands there; only seat p's words are
    decoded (`state.field(s, "stack")` decodes every seat's, half this function's time)."""
    at = S.STACK_WORDS + S.STACK_WORDS_PER_SEAT * p
    cubes = int(s[S.CUBES + p])
    cell = ((s[at: at + S.STACK_WORDS_PER_SEAT][_WORD] >> _SHIFT) & 15) | (((cubes >> _CELLS) & 1) << 4)
    images = np.empty((NUM_SYMMETRIES, MAX_CELLS), dtype=np.uint8)
    images[_IMAGES, SYMMETRIES[s[S.SIDE]]] = cell  # image k: cell i moved to SYMMETRIES[side, k, i]
    rest = s.copy()
    rest[at: at + S.STACK_WORDS_PER_SEAT] = 0
    rest[S.BITBOARD: S.BITBOARD + S.MAX_PLAYERS * 15] = 0
    rest[S.CUBES + p] = 0
    return min(image.tobytes() for image in images) + rest.tobytes()


def distinct_candidates(state: np.ndarray, plans: np.ndarray, lens: np.ndarray, values: np.ndarray,
                        root: int) -> np.ndarray:
    """The indices of the `root` best of the candidates plans[i, :lens[i]] (i < len(values), by value, the first of
    equal values first) whose afterstates from `state` (the turn played up to its END, before any chance) are
    different positions (`afterstate_key`): the search's root, in play (`NTupleSearchAgent.root_candidates`) and in
    training (expert iteration's `targets = "all"`, `experiments.evaluators.ntuple`)."""
    seen: set[bytes] = set()
    keep = []
    after = np.empty_like(state)
    mover = int(state[S.CURRENT])
    for o in np.argsort(-values, kind="stable"):
        after[:] = state
        play_plan(after, plans[o], lens[o], True)
        key = afterstate_key(after, mover)
        if key not in seen:
            seen.add(key)
            keep.append(int(o))
            if len(keep) == root:
                break
    return np.array(keep, dtype=np.int64)


class NTupleSearchAgent(NTupleAgent):
    """The n-tuple agent with a one-turn expectimax over the chance: its `root` best candidates (by the network) that
    are different positions (`root_candidates`: a repeated afterstate would be valued the same in every world) are each
    played in sampled worlds (`private_copy`: the hidden draw order only from the seed, never the real one; every
    candidate in the same worlds, common random numbers), where the central board refills, the other seats reply as
    the `ntuple` agent would (beam `reply_beam`, `reply_candidates` plans) and the network values the mover's best
    next turn (`search_values`). It plays the candidate with the best mean. Spec options (agents.registry):
    `:rootN`, `:replybeamN`, `:replycandidatesN`.

    The budget is `worlds` worlds per candidate (default 8; reproducible: spec `learned-search:Nit`, also spelled
    `learned-search:Nit`), or with `seconds` set, worlds added one at a time (every candidate in each) until the next
    would pass that much wall time since the decision began (at least one, at most `worlds`, default 10,000; spec
    `learned-search:SECONDS`): how many fit depends on the machine and its load.
    """

    def __init__(self, path: str | Path | None = None, worlds: int | None = None, root: int = 12, reply_beam: int = 8,
                 reply_candidates: int = 32, seed: int = 0, name: str | None = None, seconds: float | None = None,
                 **kwargs: Any):
        if worlds is None:  # 8 worlds; under a time budget, as many as fit
            worlds = 8 if seconds is None else 10_000
        for what, v, top in (("worlds", worlds, 10_000), ("root", root, MAX_CANDIDATES),
                             ("reply_beam", reply_beam, MAX_BEAM), ("reply_candidates", reply_candidates,
                                                                    MAX_CANDIDATES)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
                raise ValueError(f"{what} must be a whole number 1..{top}, got {v!r}")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not 0 < seconds <= 3600):
            raise ValueError(f"seconds must be a number in (0, 3600], got {seconds!r}")
        super().__init__(path, seed=seed, name=name, **kwargs)
        self.seconds = None if seconds is None else float(seconds)
        self.worlds, self.root = int(worlds), int(root)
        self.reply_beam, self.reply_candidates = int(reply_beam), int(reply_candidates)
        self.name = name or (f"learned-search:{self.seconds:g}" if self.seconds else f"learned-search:{self.worlds}it")
        self.last_worlds = 0
        #: The last decision's root (indices into its candidates) and each root candidate's summed leaf values.
        self.last_root: np.ndarray = np.zeros(0, dtype=np.int64)
        self.last_totals: np.ndarray = np.zeros(0)

    # The search decides one view at a time (it samples worlds per decision): the base class's loop over `act`.
    reset_batch = PlanAgent.reset_batch
    act_batch = PlanAgent.act_batch

    def _seed_for(self, turn: int, j: int) -> int:
        return int((self.seed * 0x9E3779B1 + turn * 0x85EBCA77 + j * 0xC2B2AE3D + 0x27D4EB2F) & (2**62 - 1))

    def root_candidates(self, game: Any, values: np.ndarray) -> np.ndarray:
        """The indices of the `root` best candidates of the last `value_candidates` (by value, the first of equal
        values first) whose afterstates (the turn played up to its END, before any chance) are different positions: a
        repeat (the same afterstate, or its mirror image: the rules, scoring and network treat a board and its mirror
        images alike, `geometry.SYMMETRIES`) would only take a slot, valued as its first in every world."""
        return distinct_candidates(game.state, self._plans, self._lens, values, self.root)

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        start = time.perf_counter()
        n = self.value_candidates(game)
        values = self.last_values = self._values[:n].copy()
        if n <= 1 or A.KEEP_SPIRIT <= self._plans[0, 0] < A.KEEP_SPIRIT + 2:
            return self.candidate_plan(int(np.argmax(values))) if n else []
        order = self.root_candidates(game, values)
        C = len(order)
        cp, cl = self._plans[order], self._lens[order]  # the rows as the planner left them (read up to cl)
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
        self.last_root, self.last_totals = order, total
        return self.candidate_plan(int(order[int(np.argmax(total))]))

