"""Agents that play Harmonies through a `PlayerView`: random, greedy turn planner, ISMCTS, MaskablePPO.

`make_agent("greedy")`, `make_agent("mcts:0.5")` (seconds per decision), `make_agent("mcts:200it")`
(iterations), `make_agent("random")`, `make_agent("ppo:runs/x/model.pt")` (a PPO checkpoint: a training run's
weights-only `.pt` + `.json`, or a MaskablePPO `.zip`; the path is required), `make_agent("learned")` (the shipped
afterstate value network) and `make_agent("learned-search:1.0")` / `make_agent("learned-search:200it")` (that
network inside a search).

Every agent also decides for many games at once (`act_batch`, `agents.policy`), and `agents.match.play_match` plays
seeded matches between any of them, or a user's own batch policy (docs/agents.md).
"""
from __future__ import annotations

from .base import Agent, PlanAgent, private_copy
from .greedy import GreedyAgent
from .mcts import MCTSAgent
from .policy import AgentPolicy, BatchPolicy, BatchView
from .random_agent import RandomAgent

AGENT_KINDS = ("random", "greedy", "mcts", "ppo", "learned", "learned-search")


def _budget(arg: str) -> dict:
    """A search budget from a spec's argument: '' (1 second), 'SECONDS' or 'Nit' (N iterations)."""
    if not arg:
        return {"seconds": 1.0}
    if arg.endswith("it"):
        return {"iterations": int(arg[:-2])}
    return {"seconds": float(arg)}


def make_agent(spec: str, seed: int = 0, trust: bool | None = None) -> Agent:
    """Build an agent from a spec string: kind[:argument].

    random | greedy[:BEAM[:spaces]] | mcts[:SECONDS | :Nit] | ppo:PATH | learned[:PATH]
    | learned-search[:SECONDS | :Nit]
    (`greedy:BEAM:spaces` plans with a beam of BEAM per central space; `learned` defaults to the shipped checkpoint;
    `ppo` needs a path, no PPO checkpoint ships; `learned-search` uses the shipped network). Unknown kinds or bad
    arguments raise ValueError. `trust` is passed to `PPOAgent`: by default a checkpoint is loaded without unpickling
    anything (see docs/safety.md); learned checkpoints never unpickle code.
    """
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    try:
        if kind == "random":
            return RandomAgent(seed=seed)
        if kind == "greedy":
            beam, _, how = arg.partition(":")
            if beam.strip().lower() == "spaces" and not how:  # greedy:spaces = greedy:24:spaces
                beam, how = "", "spaces"
            if how not in ("", "spaces"):
                raise ValueError(f"greedy takes greedy[:BEAM][:spaces], got {how!r} after the beam")
            return GreedyAgent(beam=int(beam) if beam else 24, seed=seed, name=spec, diverse=how == "spaces")
        if kind == "mcts":
            return MCTSAgent(**_budget(arg), seed=seed, name=spec)
        if kind == "learned":
            from .learned import LearnedAgent
            return LearnedAgent(arg or None, seed=seed, name=spec)
        if kind == "learned-search":
            from .learned import LearnedSearchAgent
            return LearnedSearchAgent(**_budget(arg), seed=seed, name=spec)
        if kind == "ppo":
            if not arg.strip():
                raise ValueError("the ppo agent needs a checkpoint: ppo:PATH (a training run's model.pt, or a "
                                 "MaskablePPO .zip); no PPO checkpoint ships with the package")
            from .ppo import PPOAgent
            return PPOAgent(arg, seed=seed, name=spec, trust=trust)
    except ValueError as e:
        raise ValueError(f"bad agent spec {spec!r}: {e}") from None
    raise ValueError(f"unknown agent {spec!r}; agents are {', '.join(AGENT_KINDS)} (e.g. greedy, mcts:0.5, "
                     "mcts:200it, random, ppo:model.pt, learned, learned-search:1.0, learned-search:200it)")


__all__ = ["Agent", "PlanAgent", "GreedyAgent", "MCTSAgent", "RandomAgent", "make_agent", "private_copy", "AGENT_KINDS",
           "AgentPolicy", "BatchPolicy", "BatchView"]
