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

    def act(self, view: Any) -> int:
        legal = view.legal_actions()
        if not legal:
            raise ValueError("no legal action: it is not this player's turn or the game is over")
        return int(legal[int(self._rng.integers(len(legal)))])
