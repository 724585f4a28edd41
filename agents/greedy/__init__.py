"""The greedy turn planner: its jitted kernels (`kernels`: `plan_turn`, `plan_candidates`, `evaluate`, ...) and the
agent that wraps them (`agent.GreedyAgent`). Everything is importable from `agents.greedy`."""
from __future__ import annotations

from .agent import GreedyAgent  # noqa: F401
from .kernels import *  # noqa: F403
