"""The one registry of agent kinds: each kind's factory, spec form, help line, weights suffix, time budget and aliases.

Why: `make_agent`, the CLI's and the server's help, the distributed runner's checkpoint files and the tournament's
list of unreproducible (timed) specs all read this table, so registering a new agent is one `register(AgentKind(...))`
(docs/agents.md, "Adding an agent or a learner"). Factories import their agent's module when called, so importing
`agents` stays light (no torch, no n-tuple kernels).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .base import Agent
from .greedy import MAX_BEAM


@dataclass(frozen=True)
class AgentKind:
    """One kind of agent spec (`name[:argument]`).

    build(arg, seed, name, trust) -> Agent: arg is the text after the first ':' ('' if none), stripped; name the spec
    as typed (the agent's name in tables). Bad arguments raise ValueError (make_agent adds the spec and `form`).
    form: what the spec accepts, quoted when a spec is refused. help: its entry in the CLI's and server's help.
    weights: the suffix of the checkpoint file a PATH argument names, beside its NAME.json ('' for any file the agent
    finds itself, None: the argument is not a path), so remote workers get the files. timed: whether the agent
    searches for a wall-clock time (not reproducible): True with no argument too, False only given SECONDS, None
    never (an `Nit` argument is always reproducible). aliases: old names that still work for one release, each with
    a one-line note when used. example: a spec shown in the unknown-kind message. shipped: the weights files (in
    `agents/checkpoints`) the kind plays when its argument names none (what a ladder hashes).
    """

    name: str
    build: Callable[[str, int, str, bool | None], Agent]
    form: str
    help: str
    weights: str | None = None
    timed: bool | None = None
    aliases: tuple[str, ...] = ()
    example: str = ""
    shipped: tuple[str, ...] = ()


#: Canonical name -> kind, in the order help lists them.
KINDS: dict[str, AgentKind] = {}
#: Old name -> canonical name.
ALIASES: dict[str, str] = {}


def register(kind: AgentKind) -> AgentKind:
    """Add `kind` (ValueError if its name or an alias is taken); returns it."""
    for n in (kind.name, *kind.aliases):
        if n != n.strip().lower() or ":" in n or not n:
            raise ValueError(f"agent kind name {n!r} must be lowercase, without ':' or spaces")
        if n in KINDS or n in ALIASES:
            raise ValueError(f"agent kind {n!r} is already registered")
    KINDS[kind.name] = kind
    ALIASES.update({a: kind.name for a in kind.aliases})
    return kind


def unregister(name: str) -> None:
    """Remove a kind and its aliases (tests that register a toy agent clean up with this)."""
    kind = KINDS.pop(name)
    for a in kind.aliases:
        ALIASES.pop(a, None)


def lookup(kind: str) -> AgentKind | None:
    """The kind a spec's kind names (canonical or alias, any case), or None."""
    kind = kind.strip().lower()
    return KINDS.get(ALIASES.get(kind, kind))


def all_names() -> tuple[str, ...]:
    """Every kind name a spec may start with: canonical names, then aliases."""
    return (*KINDS, *ALIASES)


def path_kinds() -> dict[str, str]:
    """Kind name (aliases included) -> weights suffix, for kinds whose argument is a checkpoint path."""
    return {n: k.weights for n in all_names() if (k := lookup(n)) is not None and k.weights is not None}


def timed_kinds() -> dict[str, bool]:
    """Kind name (aliases included) -> True if timed without an argument too, False if only given SECONDS."""
    return {n: k.timed for n in all_names() if (k := lookup(n)) is not None and k.timed is not None}


def is_timed(spec: str) -> bool:
    """Whether a spec's agent searches for a wall-clock time (so its games are not reproducible from the seed)."""
    kind, _, arg = spec.partition(":")
    k = lookup(kind)
    if k is None or k.timed is None:
        return False
    parts = [p.strip().lower() for p in arg.split(":")]
    if any(p.endswith("it") for p in parts):  # Nit, wherever the options put it
        return False
    return bool(k.timed or any(p and not p[0].isalpha() for p in parts))  # SECONDS: a part that is not an option


def agents_help() -> str:
    """The CLI's and server's help on agent specs, from the registry."""
    forms = ", ".join(k.help for k in KINDS.values())
    timed = [f"{n}:SECONDS" if not k.timed else f"{n} (1 second), {n}:SECONDS" for n, k in KINDS.items()
             if k.timed is not None]
    other = ", ".join(f"{a} = {n}" for a, n in ALIASES.items())
    return (f"agent specs: {forms}.\nReproducible from --seed, for any --jobs: every spec but a time budget "
            f"(Nit budgets included: their worlds and rollouts are drawn from the seed).\nNot reproducible: time "
            f"budgets ({', '.join(timed)}), whose search depends on machine speed and load."
            + (f"\nOther names: {other}." if other else ""))


def make_agent(spec: str, seed: int = 0, trust: bool | None = None) -> Agent:
    """Build an agent from a spec string `kind[:argument]` (kinds: `KINDS`, docs/agents.md). Unknown kinds or bad
    arguments raise ValueError naming the spec and what its kind accepts; an old name (`ALIASES`) works with a
    one-line FutureWarning. `trust` is passed to the PPO agent (see docs/safety.md)."""
    name, _, arg = spec.partition(":")
    name = name.strip().lower()
    kind = lookup(name)
    if kind is None:
        examples = ", ".join(k.example for k in KINDS.values() if k.example)
        raise ValueError(f"unknown agent {spec!r}; agents are {', '.join(all_names())} (e.g. {examples})")
    if name in ALIASES:
        warnings.warn(f"agent {name!r} is now {kind.name!r}; the old name works until the next release",
                      FutureWarning, stacklevel=2)
    try:
        return kind.build(arg.strip(), seed, spec, trust)
    except ValueError as e:
        why = str(e) if kind.form in str(e) else f"{e}; {kind.name} takes {kind.form}"
        e.args = (f"bad agent spec {spec!r}: {why}",)  # the same error, so a CheckpointError stays one
        raise


# ---------------------------------------------------------------------------------------------- argument parsing


def whole(text: str, what: str) -> int:
    """`text` as an int, or a ValueError naming `what` and the text (not Python's int() message)."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} {text.strip()!r} is not a whole number") from None


def budget(arg: str) -> dict:
    """A search budget from a spec's argument: '' (1 second), 'SECONDS' or 'Nit' (N iterations)."""
    arg = arg.strip()
    if not arg:
        return {"seconds": 1.0}
    if arg.lower().endswith("it"):
        return {"iterations": whole(arg[:-2], "the iteration count")}
    try:
        return {"seconds": float(arg)}
    except ValueError:
        raise ValueError(f"{arg!r} is neither a number of seconds nor Nit") from None


def _no_argument(arg: str) -> None:
    if arg:
        raise ValueError(f"unexpected argument {arg!r}")


def _mlp_checkpoint(arg: str) -> bool:
    """Whether a `learned:PATH` argument names an MLP checkpoint (what `learned` played before it became the n-tuple
    network): a .pt file, or a stem with NAME.pt and no NAME.npz beside it."""
    if not arg:
        return False
    p = Path(arg)
    if p.suffix.lower() == ".pt":
        return True
    try:
        return p.suffix != ".npz" and p.with_suffix(".pt").is_file() and not p.with_suffix(".npz").is_file()
    except (OSError, ValueError):  # not a usable path: the n-tuple loader says what is wrong with it
        return False


# ---------------------------------------------------------------------------------------------- the built-in kinds


def _random(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .random_agent import RandomAgent
    _no_argument(arg)
    return RandomAgent(seed=seed)


def _greedy(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .greedy import GreedyAgent
    beam, _, how = arg.partition(":")
    if beam.strip().lower() == "spaces" and not how:  # greedy:spaces = greedy:24:spaces
        beam, how = "", "spaces"
    if how not in ("", "spaces"):
        raise ValueError(f"got {how!r} after the beam")
    return GreedyAgent(beam=whole(beam, "the beam") if beam.strip() else 24, seed=seed, name=name,
                       diverse=how == "spaces")


def _mcts(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .mcts import MCTSAgent
    return MCTSAgent(**budget(arg), seed=seed, name=name)


def _ppo(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    if not arg:
        raise ValueError(f"the ppo agent needs a checkpoint: {KINDS['ppo'].form}; no PPO checkpoint ships with the "
                         "package")
    from .ppo import PPOAgent
    return PPOAgent(arg, seed=seed, name=name, trust=trust)


def _learned(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    if _mlp_checkpoint(arg):
        raise ValueError(f"the MLP's checkpoints (.pt) are played by mlp: {'mlp:' + arg!r} (learned:PATH takes an "
                         f"n-tuple checkpoint's .npz)")
    from .ntuple import NTupleAgent
    return NTupleAgent(arg or None, seed=seed, name=name)


#: learned-search's options after its budget: spec word -> `NTupleSearchAgent` argument.
SEARCH_OPTIONS = {"root": "root", "replybeam": "reply_beam", "replycandidates": "reply_candidates"}


def search_options(arg: str, options: dict[str, str]) -> tuple[str, dict[str, int]]:
    """A spec argument `[BUDGET][:WORDn]...` as (the budget text, '' if none; {argument: n}) for the `options`
    (spec word -> argument): each part is the budget (at most one) or an option word followed by a whole number."""
    budget_text, found = "", {}
    forms = ", ".join(f"{w}N" for w in options)
    for part in (p.strip() for p in arg.split(":")) if arg.strip() else ():
        word = re.match(r"[a-z]*", part.lower()).group()
        if not part:
            raise ValueError(f"an empty part in {arg!r}")
        if word in options:
            if options[word] in found:
                raise ValueError(f"{word} is given twice")
            found[options[word]] = whole(part[len(word):], word)
        elif part[0].isalpha():
            raise ValueError(f"unknown option {part!r} (options are {forms})")
        elif budget_text:
            raise ValueError(f"two budgets, {budget_text!r} and {part!r}")
        else:
            budget_text = part
    return budget_text, found


def _learned_search(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .ntuple import NTupleSearchAgent
    text, options = search_options(arg, SEARCH_OPTIONS)
    b = budget(text) if text else {"iterations": 8}
    if "iterations" in b:
        return NTupleSearchAgent(worlds=b["iterations"], seed=seed, name=name, **options)
    return NTupleSearchAgent(seconds=b["seconds"], seed=seed, name=name, **options)


def _learned_win(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .ntuple import NTupleWinAgent
    try:
        c = float(arg) if arg else 20.0
    except ValueError:
        raise ValueError(f"{arg!r} is not a number") from None
    return NTupleWinAgent(win_weight=c, seed=seed, name=name)


def _mlp(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .mlp import MLPAgent
    return MLPAgent(arg or None, seed=seed, name=name)


def _mlp_search(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .mlp import MLPSearchAgent
    return MLPSearchAgent(**budget(arg), seed=seed, name=name)


register(AgentKind("random", _random, "random (no argument)", "random", example="random"))
register(AgentKind(
    "greedy", _greedy,
    f"greedy[:BEAM][:spaces] (BEAM a whole number 1..{MAX_BEAM}, default 24; spaces: a beam per central space)",
    "greedy[:BEAM] or greedy:BEAM:spaces (a beam per central space)", example="greedy"))
register(AgentKind("mcts", _mcts, "mcts, mcts:SECONDS (a number > 0) or mcts:Nit (N a whole number >= 1)",
                   "mcts[:SECONDS] or mcts:Nit (N iterations; 1 second if not given)", timed=True,
                   example="mcts:0.5, mcts:200it"))
register(AgentKind("ppo", _ppo, "ppo:PATH (a training run's model.pt, or a MaskablePPO .zip)",
                   "ppo:PATH (a training run's model.pt, or a MaskablePPO .zip; the path is required)", weights="",
                   example="ppo:model.pt"))
register(AgentKind(
    "learned", _learned,
    "learned or learned:PATH (the n-tuple network: an n-tuple checkpoint's .npz, next to its .json; the MLP's .pt "
    "is mlp:PATH)",
    "learned[:PATH] (the n-tuple network; PATH an n-tuple checkpoint's .npz)", weights=".npz",
    example="learned", shipped=("learned.npz",)))
register(AgentKind(
    "learned-search", _learned_search,
    "learned-search[:BUDGET][:rootN][:replybeamN][:replycandidatesN] (the shipped n-tuple network; BUDGET Nit: N "
    "sampled worlds per candidate, a whole number 1..10000, default 8it, or SECONDS: worlds until that much time, a "
    "number in (0, 3600]; rootN: the N best distinct candidates searched, 1..1024, default 12; replybeamN 1..100000 "
    "and replycandidatesN 1..1024: the other seats' replies, default 8 and 32)",
    "learned-search[:SECONDS] or learned-search:Nit[:rootN] (it with a one-turn search, N sampled worlds per "
    "candidate, 8it if not given; rootN: how many distinct candidates, 12 if not given)", timed=False,
    example="learned-search:8it:root12", shipped=("learned.npz",)))
register(AgentKind(
    "learned-win", _learned_win,
    "learned-win or learned-win:C (C points per unit of win probability, a number 0..1000, default 20; the shipped "
    "n-tuple network and win head)",
    "learned-win[:C] (with the win head: C points per unit of win probability, 20 if not given)",
    shipped=("learned.npz", "learned-win.npz")))
register(AgentKind("mlp", _mlp, "mlp or mlp:PATH (an MLP checkpoint's .pt, next to its .json)",
                   "mlp[:PATH] (the earlier MLP, a baseline; PATH its .pt)", weights=".pt",
                   example="mlp", shipped=("mlp.pt",)))
register(AgentKind(
    "mlp-search", _mlp_search,
    "mlp-search, mlp-search:SECONDS (a number > 0; default 1) or mlp-search:Nit (N a whole number >= 1; the shipped "
    "MLP)",
    "mlp-search[:SECONDS] or mlp-search:Nit (1 second if not given)", timed=True,
    example="mlp-search:200it", shipped=("mlp.pt",)))


def _py(arg: str, seed: int, name: str, trust: bool | None) -> Agent:
    from .user import user_agent
    return user_agent(arg, seed, name)


register(AgentKind("py", _py, "py:MODULE:FACTORY (an importable module and a factory in it returning an object with "
                              "act_batch; this runs that module's code)",
                   "py:MODULE:FACTORY (your own policy: FACTORY() returns an object with act_batch; runs your code)",
                   example="py:mybot:make"))

__all__ = ["ALIASES", "KINDS", "SEARCH_OPTIONS", "AgentKind", "agents_help", "all_names", "budget", "is_timed",
           "lookup", "make_agent", "path_kinds", "register", "search_options", "timed_kinds", "unregister", "whole"]
