"""The greedy turn planner: its jitted kernels (`kernels`: `plan_turn`, `plan_candidates`, `evaluate`, ...) and the
classes that drive them (`agent.GreedyAgent`; `agent.GreedyPlans` for many games at once). Everything is importable
from `agents.greedy`."""
from __future__ import annotations

from .agent import GreedyAgent, GreedyPlans  # noqa: F401
from .kernels import *  # noqa: F403
