"""The MLP baseline (specs `mlp`, `mlp-search`): an afterstate value network over whole-turn plans. Kernels in
`kernels`, the agents and their checkpoint I/O in `agent`."""
from __future__ import annotations

from .agent import *  # noqa: F403
from .agent import __all__ as _agent_all
from .kernels import search_leaves

__all__ = [*_agent_all, "search_leaves"]
