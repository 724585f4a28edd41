"""The training command of every registered learner (`agents.learners`): `harmonies train NAME` / `python -m
experiments.train NAME` builds the learner's `Learner` from its registry entry (its evaluator, its config's schema
and checks, its default config) and runs it (`selfplay.run_learner`: resume, workers, evaluations, checkpoints,
summary). One command for all of them, so a new learner needs no entry module of its own.

    python -m experiments.train learned --config experiments/configs/learned.toml --run runs/learned --max-minutes 45
    python -m experiments.train mlp --run runs/mlp --seed 0
    python -m experiments.train learned --run runs/learned --resume             # after a kill, or to extend it
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.learners import LEARNERS, LearnerKind, resolve

from . import evaluators  # noqa: F401  (registers the shipped learners, `learned` and `mlp`)
from .common import Schema, latest_checkpoint
from .selfplay import Learner, run_learner
from .selfplay_config import framework_schema
from .selfplay_config import settings as framework_settings


def learner_kind(name: str) -> LearnerKind:
    """The registered learner `name`; KeyError naming the known ones."""
    if name not in LEARNERS:
        raise KeyError(f"no learner {name!r} (registered: {', '.join(LEARNERS)})")
    return LEARNERS[name]


def schema(name: str) -> Schema:
    """The learner's config schema (its own, or the framework's sections)."""
    kind = learner_kind(name)
    return resolve(kind.schema) if kind.schema is not None else framework_schema()


def settings(name: str, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The learner's checked settings of a config (ConfigError naming a bad section, key or value)."""
    kind = learner_kind(name)
    return (resolve(kind.settings) if kind.settings is not None else framework_settings)(config)


def build(name: str, cfg: dict[str, dict[str, Any]], seed: int, run: Path | None, progress: bool = True,
          init: bool = True, resumed: bool = False) -> Learner:
    """The `Learner` of the registered learner `name` on checked settings `cfg` (`resumed`: its evaluator made as a
    resumed run's; `init` False: a self-play worker's, weights only)."""
    learner = Learner(cfg, seed, run, learner_kind(name).maker(resumed), progress=progress, init=init)
    learner.name = name
    learner.command = f"python -m experiments.train {name}"
    return learner


def run(args: Any) -> dict[str, Any]:
    """The training command of the learner `args.algo` (`args` an `experiments.commands.RunArgs`): train, resume,
    summarise."""
    resumes = args.resume and latest_checkpoint(args.run / "checkpoints") is not None
    cfg = settings(args.algo, args.config)
    return run_learner(args, build(args.algo, cfg, args.seed, args.run, progress=args.progress, resumed=resumes))


__all__ = ["build", "learner_kind", "run", "schema", "settings"]
