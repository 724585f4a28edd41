"""An agent that plays a trained MaskablePPO policy (sb3-contrib), deterministically, within the legal mask.

Two kinds of checkpoint are recognised by their spaces:

* a policy over the flat action space (observation `OBS_SIZE` floats, 268 actions), as trained on the
  Gymnasium / batched environments (`python -m experiments.train solo-ppo`, `versus-ppo`, `selfplay-ppo`): one
  micro-action per call;
* a plan-choosing policy (observation `PLAN_OBS_SIZE`, `PLAN_CHOICES` actions; `agents.plan_choice`,
  `python -m experiments.train plan-ppo`): once per turn it picks one of the greedy planner's best whole-turn plans,
  then plays that plan one micro-action per call. The checkpoint shipped in `agents/checkpoints/` is of this
  kind (`make_agent("ppo")`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harmonies_env.observation import OBS_SIZE

from .base import PlanAgent

#: The trained checkpoint that ships with the package (plan-choosing, 2 players, Side A, no Spirits).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "plan_ppo.zip"


class PPOAgent(PlanAgent):
    """Loads a MaskablePPO checkpoint (.zip) and plays its most likely legal action (or plan).

    torch / sb3-contrib are imported only here. A flat-action policy reads `view.observation` (float32
    (OBS_SIZE,)) masked with `view.action_mask`; a plan-choosing policy reads `plan_observation` of a private
    determinized copy (public fields only) and is masked by which candidate plans exist.
    """

    def __init__(self, path: str | Path | None = None, device: str = "cpu", seed: int = 0, name: str | None = None):
        from sb3_contrib import MaskablePPO

        from . import plan_choice as P

        p = Path(DEFAULT_CHECKPOINT if path is None else path)
        if not p.exists() and not p.with_suffix(".zip").exists():
            raise FileNotFoundError(f"no MaskablePPO checkpoint at {p}")
        self.path = p
        self.model = MaskablePPO.load(str(p), device=device)
        shape = tuple(self.model.observation_space.shape or ())
        n = int(getattr(self.model.action_space, "n", -1))
        if shape == (P.PLAN_OBS_SIZE,) and n == P.PLAN_CHOICES:
            self.kind = "plan"
        elif shape == (OBS_SIZE,):
            self.kind = "action"
        else:
            raise ValueError(f"{p}: observation shape {shape} and {n} actions match neither the flat action space "
                             f"({OBS_SIZE},) nor the plan choice ({P.PLAN_OBS_SIZE},) x {P.PLAN_CHOICES}")
        self.seed = int(seed)
        self.name = name or f"ppo:{p.name}"
        self.reset()

    def act(self, view: Any) -> int:
        mask = np.asarray(view.action_mask, dtype=bool)
        if not mask.any():
            raise ValueError("no legal action: it is not this player's turn or the game is over")
        if self.kind == "plan":
            return super().act(view)
        obs = np.asarray(view.observation, dtype=np.float32)
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        a = int(np.asarray(action).reshape(-1)[0])
        if not mask[a]:  # a policy trained on another observation layout: never play illegally
            a = int(np.flatnonzero(mask)[0])
        return a

    def choose_plan(self, view: Any, game: Any) -> list[int]:
        from .plan_choice import describe

        obs, pmask, plans = describe(game.state)
        if not plans:  # cannot happen on a legal position
            return []
        k, _ = self.model.predict(obs, action_masks=pmask, deterministic=True)
        k = int(np.asarray(k).reshape(-1)[0])
        return list(plans[k if k < len(plans) else 0])
