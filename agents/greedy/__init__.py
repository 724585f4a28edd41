"""The greedy turn planner: its jitted kernels — need grids and habitat distances (`habitats`), the evaluation terms
(`terms`: `heuristic_value`, `potential_terms`, ...), the evaluation from a parent position (`incremental`) and
the candidate planner every learner uses (`planner`: `plan_turn`, `plan_candidates`, `greedy_plans`) — and the classes
that drive them (`agent.GreedyAgent`; `agent.GreedyPlans` for many games at once). Everything is importable from
`agents.greedy`."""
from __future__ import annotations

from .agent import GreedyAgent, GreedyPlans  # noqa: F401
from .habitats import *  # noqa: F403
from .incremental import *  # noqa: F403
from .planner import *  # noqa: F403
from .terms import *  # noqa: F403
