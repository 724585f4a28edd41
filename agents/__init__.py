"""Agents that play Harmonies through a `PlayerView`: random, greedy turn planner, ISMCTS, MaskablePPO.

`make_agent("greedy")`, `make_agent("mcts:0.5")` (seconds per decision), `make_agent("mcts:200it")`
(iterations), `make_agent("random")`, `make_agent("ppo")` (the shipped checkpoint) or
`make_agent("ppo:path/to/model.zip")`.
"""
from __future__ import annotations

from .base import Agent, PlanAgent, private_copy
from .greedy import GreedyAgent
from .mcts import MCTSAgent
from .random_agent import RandomAgent

AGENT_KINDS = ("random", "greedy", "mcts", "ppo")


def make_agent(spec: str, seed: int = 0, trust: bool | None = None) -> Agent:
    """Build an agent from a spec string: kind[:argument].

    random | greedy[:beam] | mcts[:SECONDS | :Nit] | ppo[:PATH] (default: the shipped
    checkpoint, if this checkout has it). Unknown kinds or bad arguments raise ValueError. `trust` is passed to
    `PPOAgent`: by default a checkpoint is loaded without unpickling anything (see docs/safety.md).
    """
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    try:
        if kind == "random":
            return RandomAgent(seed=seed)
        if kind == "greedy":
            return GreedyAgent(beam=int(arg) if arg else 24, seed=seed, name=spec)
        if kind == "mcts":
            if not arg:
                return MCTSAgent(seconds=1.0, seed=seed, name=spec)
            if arg.endswith("it"):
                return MCTSAgent(iterations=int(arg[:-2]), seed=seed, name=spec)
            return MCTSAgent(seconds=float(arg), seed=seed, name=spec)
        if kind == "ppo":
            from .ppo import PPOAgent
            return PPOAgent(arg or None, seed=seed, name=spec, trust=trust)
    except ValueError as e:
        raise ValueError(f"bad agent spec {spec!r}: {e}") from None
    raise ValueError(f"unknown agent {spec!r}; agents are {', '.join(AGENT_KINDS)} (e.g. greedy, mcts:0.5, "
                     "mcts:200it, random, ppo:model.zip)")


__all__ = ["Agent", "PlanAgent", "GreedyAgent", "MCTSAgent", "RandomAgent", "make_agent", "private_copy", "AGENT_KINDS"]
