"""Agents that play Harmonies through a `PlayerView`: random, greedy turn planner, ISMCTS, MaskablePPO.

`make_agent("greedy")`, `make_agent("mcts:0.5")` (seconds per decision), `make_agent("mcts:200it")`
(iterations), `make_agent("random")`, `make_agent("ppo:runs/x/model.pt")` (a PPO checkpoint: a training run's
weights-only `.pt` + `.json`, or a MaskablePPO `.zip`; the path is required), `make_agent("learned")` /
`make_agent("learned:PATH")` (the shipped n-tuple afterstate value function, agents/ntuple.py; also spelled `ntuple`)
and `make_agent("learned-search")` / `make_agent("learned-search:8it")` (it with a one-turn expectimax over 8 sampled
worlds; also `ntuple-search`), `make_agent("ntuple-win")` (with its win head); `make_agent("learned-mlp")` (the first
learned agent, the afterstate MLP of agents/learned.py, kept as a baseline) and `make_agent("learned-mlp-search:1.0")`
/ `make_agent("learned-mlp-search:200it")` (that network inside a search).

Every agent also decides for many games at once (`act_batch`, `agents.policy`), and `agents.match.play_match` plays
seeded matches between any of them, or a user's own batch policy (docs/agents.md).
"""
from __future__ import annotations

from pathlib import Path

from .base import Agent, PlanAgent, private_copy
from .greedy import MAX_BEAM, GreedyAgent
from .mcts import MCTSAgent
from .policy import AgentPolicy, BatchPolicy, BatchView
from .random_agent import RandomAgent

AGENT_KINDS = ("random", "greedy", "mcts", "ppo", "learned", "learned-search", "learned-mlp", "learned-mlp-search",
               "ntuple", "ntuple-search", "ntuple-win")

#: What each kind of spec accepts, quoted when a spec is refused.
SPEC_FORMS: dict[str, str] = {
    "random": "random (no argument)",
    "greedy": f"greedy[:BEAM][:spaces] (BEAM a whole number 1..{MAX_BEAM}, default 24; spaces: a beam per central "
              "space)",
    "mcts": "mcts, mcts:SECONDS (a number > 0) or mcts:Nit (N a whole number >= 1)",
    "ppo": "ppo:PATH (a training run's model.pt, or a MaskablePPO .zip)",
    "learned": "learned or learned:PATH (the n-tuple network: an n-tuple checkpoint's .npz, next to its .json; "
               "the MLP's .pt is learned-mlp:PATH)",
    "learned-search": "learned-search, learned-search:Nit (N sampled worlds per candidate, a whole number 1..10000; "
                      "default 8it) or learned-search:SECONDS (worlds until that much time, a number in (0, 3600]; "
                      "the shipped n-tuple network)",
    "learned-mlp": "learned-mlp or learned-mlp:PATH (an MLP checkpoint's .pt, next to its .json)",
    "learned-mlp-search": "learned-mlp-search, learned-mlp-search:SECONDS (a number > 0; default 1) or "
                          "learned-mlp-search:Nit (N a whole number >= 1; the shipped MLP)",
    "ntuple": "ntuple or ntuple:PATH (an n-tuple checkpoint's .npz, next to its .json)",
    "ntuple-search": "ntuple-search, ntuple-search:Nit (N sampled worlds per candidate, a whole number 1..10000; "
                     "default 8it) or ntuple-search:SECONDS (worlds until that much time, a number in (0, 3600]; "
                     "the shipped n-tuple network)",
    "ntuple-win": "ntuple-win or ntuple-win:C (C points per unit of win probability, a number 0..1000, default 20; "
                  "the shipped n-tuple network and win head)",
}


def _whole(text: str, what: str) -> int:
    """`text` as an int, or a ValueError naming `what` and the text (not Python's int() message)."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} {text.strip()!r} is not a whole number") from None


def _budget(arg: str) -> dict:
    """A search budget from a spec's argument: '' (1 second), 'SECONDS' or 'Nit' (N iterations)."""
    arg = arg.strip()
    if not arg:
        return {"seconds": 1.0}
    if arg.lower().endswith("it"):
        return {"iterations": _whole(arg[:-2], "the iteration count")}
    try:
        return {"seconds": float(arg)}
    except ValueError:
        raise ValueError(f"{arg!r} is neither a number of seconds nor Nit") from None


def _mlp_checkpoint(arg: str) -> bool:
    """Whether a `learned:PATH` argument names an MLP checkpoint (what `learned` played before it became the n-tuple
    network): a .pt file, or a stem with NAME.pt and no NAME.npz beside it."""
    arg = arg.strip()
    if not arg:
        return False
    p = Path(arg)
    if p.suffix.lower() == ".pt":
        return True
    try:
        return p.suffix != ".npz" and p.with_suffix(".pt").is_file() and not p.with_suffix(".npz").is_file()
    except (OSError, ValueError):  # not a usable path: the n-tuple loader says what is wrong with it
        return False


def make_agent(spec: str, seed: int = 0, trust: bool | None = None) -> Agent:
    """Build an agent from a spec string: kind[:argument].

    random | greedy[:BEAM[:spaces]] | mcts[:SECONDS | :Nit] | ppo:PATH | learned[:PATH]
    | learned-search[:SECONDS | :Nit] | learned-mlp[:PATH] | learned-mlp-search[:SECONDS | :Nit] | ntuple[:PATH]
    | ntuple-search[:SECONDS | :Nit] | ntuple-win[:C]
    (`greedy:BEAM:spaces` plans with a beam of BEAM per central space; `learned` is the n-tuple network
    (`NTupleAgent`, the same agent as `ntuple`; PATH an n-tuple checkpoint's .npz, default the shipped one) and
    `learned-search` it with its one-turn search (`NTupleSearchAgent`, as `ntuple-search`: 8 worlds by default);
    `learned-mlp` is the afterstate MLP (`LearnedAgent`; PATH its .pt, default the shipped one), kept as a baseline, and
    `learned-mlp-search` that network inside a search (`LearnedSearchAgent`, 1 second by default); `ppo` needs a path,
    no PPO checkpoint ships). `learned:PATH` with an MLP's .pt is refused with a line pointing to `learned-mlp:PATH`.
    Unknown kinds or bad arguments raise ValueError naming the spec and what its kind accepts (`SPEC_FORMS`). `trust`
    is passed to `PPOAgent`: by default a checkpoint is loaded without unpickling anything (see docs/safety.md);
    learned checkpoints (MLP and n-tuple) never unpickle code.
    """
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "learned" and _mlp_checkpoint(arg):
        raise ValueError(f"bad agent spec {spec!r}: the MLP's checkpoints (.pt) are now played by learned-mlp: "
                         f"{'learned-mlp:' + arg.strip()!r} (learned:PATH takes an n-tuple checkpoint's .npz)")
    try:
        if kind == "random":
            if arg.strip():
                raise ValueError(f"unexpected argument {arg.strip()!r}")
            return RandomAgent(seed=seed)
        if kind == "greedy":
            beam, _, how = arg.partition(":")
            if beam.strip().lower() == "spaces" and not how:  # greedy:spaces = greedy:24:spaces
                beam, how = "", "spaces"
            if how not in ("", "spaces"):
                raise ValueError(f"got {how!r} after the beam")
            return GreedyAgent(beam=_whole(beam, "the beam") if beam.strip() else 24, seed=seed, name=spec,
                               diverse=how == "spaces")
        if kind == "mcts":
            return MCTSAgent(**_budget(arg), seed=seed, name=spec)
        if kind in ("learned", "ntuple"):
            from .ntuple import NTupleAgent
            return NTupleAgent(arg.strip() or None, seed=seed, name=spec)
        if kind in ("learned-search", "ntuple-search"):
            from .ntuple import NTupleSearchAgent
            budget = _budget(arg) if arg.strip() else {"iterations": 8}
            if "iterations" in budget:
                return NTupleSearchAgent(worlds=budget["iterations"], seed=seed, name=spec)
            return NTupleSearchAgent(seconds=budget["seconds"], seed=seed, name=spec)
        if kind == "learned-mlp":
            from .learned import LearnedAgent
            return LearnedAgent(arg or None, seed=seed, name=spec)
        if kind == "learned-mlp-search":
            from .learned import LearnedSearchAgent
            return LearnedSearchAgent(**_budget(arg), seed=seed, name=spec)
        if kind == "ntuple-win":
            from .ntuple import NTupleWinAgent
            try:
                c = float(arg) if arg.strip() else 20.0
            except ValueError:
                raise ValueError(f"{arg!r} is not a number") from None
            return NTupleWinAgent(win_weight=c, seed=seed, name=spec)
        if kind == "ppo":
            if not arg.strip():
                raise ValueError(f"the ppo agent needs a checkpoint: {SPEC_FORMS['ppo']}; no PPO checkpoint ships "
                                 "with the package")
            from .ppo import PPOAgent
            return PPOAgent(arg, seed=seed, name=spec, trust=trust)
    except ValueError as e:
        why = str(e) if SPEC_FORMS[kind] in str(e) else f"{e}; {kind} takes {SPEC_FORMS[kind]}"
        e.args = (f"bad agent spec {spec!r}: {why}",)  # the same error, so a CheckpointError stays one
        raise
    raise ValueError(f"unknown agent {spec!r}; agents are {', '.join(AGENT_KINDS)} (e.g. greedy, mcts:0.5, "
                     "mcts:200it, random, ppo:model.pt, learned, learned-search:8it, learned-mlp, "
                     "learned-mlp-search:200it)")


__all__ = ["Agent", "PlanAgent", "GreedyAgent", "MCTSAgent", "RandomAgent", "make_agent", "private_copy", "AGENT_KINDS",
           "SPEC_FORMS", "AgentPolicy", "BatchPolicy", "BatchView"]
