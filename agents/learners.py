"""The one registry of self-play learners: a learner is one `Evaluator` class (`agents.evaluator`) plus one
`register_learner(LearnerKind(...))` line, which gives it a training command (`harmonies train NAME`, `python -m
experiments.train NAME`: the self-play framework, `experiments.selfplay`, reads this table) and an agent spec that
plays its saved weights (`NAME:PATH`, registered in `agents.registry` by the same line, so tournaments, the play
server and `harmonies ladder` rate it).

Why here: the play half of a learner is an agent, and the agents layer may not import the trainer; so the table
lives with the agents, and names what it needs (the evaluator, its config's schema and checks) either as objects or
as `"module:name"` text imported when first used, as Python entry points do (importing `agents` stays light).

    register_learner(LearnerKind("linear", "mypackage.linear:LinearEvaluator", "a linear afterstate value"))

The shipped learners, `learned` (the n-tuple network) and `mlp`, register the same way from
`experiments.evaluators` (their evaluators' modules are there) and play through their own agent kinds (`agent=`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from .registry import AgentKind, lookup, register, unregister

#: An object, or "module:name" naming it (imported when first used).
Ref = Any


@dataclass(frozen=True)
class LearnerKind:
    """One learner. evaluator: its `Evaluator` class, or a module-level maker `make(cfg, learns, seed)`; help: its
    one-line help (the command's and the agent spec's). config: its default config, a TOML file in
    experiments/configs/ or a path (None: every setting at the schema's default). schema / settings: its config's
    sections with their defaults (`experiments.common`'s loader) and its check `settings(config) -> checked config`
    (None: the framework's, `experiments.selfplay_config.settings`). resumed: the maker of a resumed run's evaluator
    when it differs (the MLP's does not read `train.init` again). agent: the agent kind that plays its saved model
    (None: `register_learner` registers `NAME:PATH`, played by `agents.evaluator.play_saved`)."""

    name: str
    evaluator: Ref
    help: str
    config: str | None = None
    schema: Ref = None
    settings: Ref = None
    resumed: Ref = None
    agent: str | None = None

    def maker(self, resumed: bool = False) -> Callable[..., Any]:
        """The evaluator's maker (a resumed run's with `resumed`)."""
        return resolve(self.resumed if resumed and self.resumed is not None else self.evaluator)


#: Name -> learner, in the order `harmonies train --help` lists them.
LEARNERS: dict[str, LearnerKind] = {}


def resolve(ref: Ref) -> Any:
    """The object a `Ref` names ("module:name" imported), or the object itself."""
    if not isinstance(ref, str):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def register_learner(kind: LearnerKind) -> LearnerKind:
    """Add a learner (ValueError if its name is taken, as a learner or, without `agent`, as an agent kind) and,
    without `agent`, its agent kind `NAME:PATH`; returns it."""
    if kind.name in LEARNERS:
        raise ValueError(f"learner {kind.name!r} is already registered")
    if kind.agent is None:
        register(AgentKind(
            kind.name, lambda arg, seed, name, trust: _play(kind, arg, seed, name),
            f"{kind.name}:PATH (a {kind.name} run's model.npz or best.npz, next to its .json)",
            f"{kind.name}:PATH ({kind.help}; PATH a run's model.npz)", weights=".npz", example=f"{kind.name}:PATH"))
    elif lookup(kind.agent) is None:
        raise ValueError(f"learner {kind.name!r} names agent kind {kind.agent!r}, which is not registered")
    LEARNERS[kind.name] = kind
    return kind


def unregister_learner(name: str) -> None:
    """Remove a learner and the agent kind its registration added (tests that register one clean up with this)."""
    kind = LEARNERS.pop(name)
    if kind.agent is None:
        unregister(name)


def learner(name: str) -> LearnerKind | None:
    """The registered learner `name`, or None."""
    return LEARNERS.get(name)


def _play(kind: LearnerKind, arg: str, seed: int, name: str) -> Any:
    if not arg:
        raise ValueError(f"{kind.name} needs a checkpoint: {kind.name}:PATH (a run's model.npz)")
    from .evaluator import play_saved

    return play_saved(kind.maker(), arg, seed, name)


# ---- the learners, one line each (the shipped `learned` and `mlp` register from `experiments.evaluators`, where their
# evaluators' modules are); a new one: register_learner(LearnerKind("NAME", "package.module:EvaluatorClass", "help"))


__all__ = ["LEARNERS", "LearnerKind", "learner", "register_learner", "resolve", "unregister_learner"]
