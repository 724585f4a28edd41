"""Uniformly random agent: the baseline every other agent must beat."""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import Agent


class RandomAgent(Agent):
    """Picks uniformly among the legal actions, from its own seeded generator (reproducible)."""

    def __init__(self, seed: int = 0, name: str = "random"):
        self.seed = int(seed)
        self.name = name
        self.reset()

    def reset(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        self._rngs: list[np.random.Generator] = []

    def reset_batch(self, seeds: Any) -> None:
        """One generator per game, seeded as `RandomAgent(seed=seeds[r])` is: game r plays the same moves as that
        agent would alone."""
        self.reset()
        self._rngs = [np.random.default_rng(int(s)) for s in seeds]

    def act_batch(self, batch: Any) -> np.ndarray:
        """A uniformly random legal action in every game, each from its game's generator (`reset_batch`)."""
        if len(batch) and not self._rngs:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        masks = batch.action_masks
        out = np.empty(len(batch), dtype=np.int64)
        for j, r in enumerate(batch.rows):
            legal = np.flatnonzero(masks[j])  # ascending, as `legal_actions` lists them
            out[j] = legal[int(self._rngs[r].integers(len(legal)))]
        return out

    def act(self, view: Any) -> int:
        legal = view.legal_actions()
        if not legal:
            raise ValueError("no legal action: it is not this player's turn or the game is over")
        return int(legal[int(self._rng.integers(len(legal)))])
