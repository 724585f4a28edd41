"""Agents that play Harmonies through a `PlayerView`: random, greedy turn planner, ISMCTS, PPO, the n-tuple network
`learned` (agents/ntuple/; alone, with a one-turn search, with its win head) and the MLP baseline `mlp` (agents/mlp/).

`make_agent(spec)` builds one from a spec string `kind[:argument]`, e.g. `greedy`, `mcts:0.5` (seconds per
decision), `mcts:200it` (iterations), `learned`, `learned:PATH.npz`, `learned-search:8it`, `mlp`, `ppo:PATH`. The
kinds, their arguments and their old names are one table, `agents.registry` (docs/agents.md); the self-play
learners, trained and played by name, are another, `agents.learners`.

Every agent also decides for many games at once (`act_batch`, `agents.policy`), and `agents.match.play_match` plays
seeded matches between any of them, or a user's own batch policy (docs/agents.md).
"""
from __future__ import annotations

from .base import Agent, PlanAgent, private_copy
from .greedy import GreedyAgent
from .learners import LearnerKind, register_learner
from .mcts import MCTSAgent
from .policy import AgentPolicy, BatchPolicy, BatchView
from .random_agent import RandomAgent
from .registry import AgentKind, make_agent, register

__all__ = ["Agent", "PlanAgent", "GreedyAgent", "MCTSAgent", "RandomAgent", "make_agent", "private_copy", "AgentKind",
           "register", "LearnerKind", "register_learner", "AgentPolicy", "BatchPolicy", "BatchView"]
