"""An agent that plays a trained MaskablePPO policy (sb3-contrib), deterministically, within the legal mask."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .base import Agent


class PPOAgent(Agent):
    """Loads a MaskablePPO checkpoint (.zip) and plays its most likely legal action.

    The policy reads `view.observation` (float32 (OBS_SIZE,)) and is masked with `view.action_mask`, as
    in the Gymnasium environment it was trained on. torch / sb3-contrib are imported only here.
    """

    def __init__(self, path: str | Path, device: str = "cpu", name: str | None = None):
        from sb3_contrib import MaskablePPO

        p = Path(path)
        if not p.exists() and not p.with_suffix(".zip").exists():
            raise FileNotFoundError(f"no MaskablePPO checkpoint at {p}")
        self.path = p
        self.model = MaskablePPO.load(str(p), device=device)
        self.name = name or f"ppo:{p.name}"

    def act(self, view: Any) -> int:
        mask = np.asarray(view.action_mask, dtype=bool)
        if not mask.any():
            raise ValueError("no legal action: it is not this player's turn or the game is over")
        obs = np.asarray(view.observation, dtype=np.float32)
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        a = int(np.asarray(action).reshape(-1)[0])
        if not mask[a]:  # a policy trained on another observation layout: never play illegally
            a = int(np.flatnonzero(mask)[0])
        return a
