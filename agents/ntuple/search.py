"""The n-tuple agent with a one-turn expectimax over the chance (`learned-search` / `ntuple-search`); its leaves are
the kernel `kernels.search_values`."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from harmonies_env import actions as A

from ..base import PlanAgent, private_copy
from ..greedy import DEFAULT_WEIGHTS, MAX_PLAN
from .agent import NTupleAgent
from .kernels import search_values


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

