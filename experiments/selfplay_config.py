"""The self-play framework's config (`experiments.selfplay`): typed sections (`SelfPlaySection`, `TrainSection`,
`EvalSection`, `RunSection`: frozen dataclasses whose defaults are the schema, `schema_of`), checked once
(`settings`, `check_sections`) and read as typed objects (`typed`)."""
from __future__ import annotations

import dataclasses
from typing import Any

from .common import ConfigError


@dataclasses.dataclass(frozen=True)
class SelfPlaySection:
    """[selfplay]: the self-play games."""

    games: int = 32  # games played at once (one whole turn each per iteration)
    players: tuple = (2,)  # drawn per game
    sides: tuple = ("A",)  # drawn per game
    beam: int = 24  # candidate planner: greedy.plan_candidates, beam per central space
    candidates: int = 128  # candidates valued per decision
    epsilon: float = 0.05  # chance of a uniformly random candidate
    greedy_games: float = 0.2  # fraction of games with one seat played by the greedy planner
    max_decisions: int = 96  # afterstates kept per game
    threads: int = 1  # threads sharing the games' turns (a fused evaluator's; the run is the same for any number)
    workers: int = 0  # self-play workers, each with its own `games` games (0: in this process)
    sync_every: int = 4  # with workers: iterations between two publications of the weights to them


@dataclasses.dataclass(frozen=True)
class TrainSection:
    """[train]: the learning schedule every learner has (an evaluator's own keys extend it)."""

    iterations: int = 100_000  # the run's length
    lam: float = 0.5  # TD(lambda): 1 = Monte-Carlo returns
    schedule: int = 0  # iterations over which the step sizes move from their start to their final values (e.g.
    # `alpha_final`, `lr_final`), which they keep after; 0: `iterations` (the run ends where the schedule does)


@dataclasses.dataclass(frozen=True)
class EvalSection:
    """[eval]: the periodic evaluation against the greedy planner."""

    every: int = 400  # iterations between evaluations (0: none)
    games: int = 64  # fixed seeds (each with every seating), never used in training
    seed: int = 1_000_000
    opponent_beam: int = 24  # the greedy planner's beam (also the greedy seats' in self-play)


@dataclasses.dataclass(frozen=True)
class RunSection:
    """[run]: checkpoints and where the workers run."""

    checkpoint_every: int = 100
    keep: int = 2
    ray: str = ""  # with selfplay.workers: "" local processes; a Ray address ("local", "auto", HOST:PORT)


def schema_of(cls: type) -> dict[str, Any]:
    """A section's schema for `experiments.common`'s loader: its fields' defaults (tuples as TOML lists)."""
    return {f.name: list(f.default) if isinstance(f.default, tuple) else f.default for f in dataclasses.fields(cls)}


def typed(cls: type, values: dict[str, Any], name: str) -> Any:
    """The frozen section `cls` of a checked config section (lists as tuples); ConfigError naming an unknown key."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"[{name}] unknown key(s) {', '.join(unknown)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def schedule_length(train: dict[str, Any]) -> int:
    """The iterations a checked [train] section's schedule runs over: `schedule`, or `iterations` when 0."""
    return int(train.get("schedule") or train["iterations"])


#: Settings a resumed run may change (`--resume` with `--set` or `--config`): how long it runs (`train.iterations`,
#: as long as the schedule's length stays: `schedule_length`), how often it evaluates (`eval.every`,
#: `eval.mcts_every`) and checkpoints, how many checkpoints it keeps, and where its self-play workers run (their
#: number is the checkpoint's own check, `Learner.load`). Evaluations draw nothing from the training generator, so
#: none of these changes what the run learns; every other setting does, and is refused (`changed_on_resume`).
RESUMABLE = frozenset({"train.iterations", "eval.every", "eval.mcts_every", "run.checkpoint_every", "run.keep",
                       "run.ray", "selfplay.workers"})


def changed_on_resume(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    """The settings (`section.key (old -> new)`) by which the config `after` would train a resumed run otherwise than
    its saved config `before` did: every difference outside `RESUMABLE`, and the schedule's length
    (`schedule_length`: `train.schedule`, or `train.iterations` where that is 0). Both configs checked against the
    same schema."""
    out = [f"{sec}.{key} ({before.get(sec, {}).get(key)!r} -> {value!r})"
           for sec, values in after.items() for key, value in values.items()
           if f"{sec}.{key}" not in RESUMABLE | {"train.schedule"} and before.get(sec, {}).get(key) != value]
    old, new = before.get("train", {}), after.get("train", {})
    if "iterations" in old and "iterations" in new and schedule_length(old) != schedule_length(new):
        if old.get("schedule") != new.get("schedule"):
            out.append(f"train.schedule ({old.get('schedule')!r} -> {new.get('schedule')!r}: the schedule's length "
                       f"was {schedule_length(old)})")
        else:
            out.append(f"train.iterations ({old['iterations']!r} -> {new['iterations']!r}: the schedule's length; "
                       f"keep it with --set train.schedule={schedule_length(old)})")
    return out


def check_whole(sec: str, values: dict[str, Any], keys: tuple[tuple[str, int], ...]) -> None:
    """ConfigError unless every (key, low) of `values` is a whole number >= low."""
    for key, low in keys:
        v = values[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConfigError(f"[{sec}] {key} must be a whole number >= {low}, got {v!r}")


def check_unit(sec: str, values: dict[str, Any], keys: tuple[str, ...]) -> None:
    """ConfigError unless every key of `values` is a number in [0, 1]."""
    for key in keys:
        v = values[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise ConfigError(f"[{sec}] {key} must be a number in [0, 1], got {v!r}")


def check_sections(cfg: dict[str, dict[str, Any]]) -> None:
    """The framework's own checks of the selfplay, train, eval and run sections (ConfigError naming section and key)."""
    sp = cfg["selfplay"]
    check_whole("selfplay", sp, (("games", 1), ("beam", 1), ("candidates", 1), ("threads", 1), ("workers", 0),
                                 ("sync_every", 1), ("max_decisions", 1)))
    check_whole("train", cfg["train"], (("iterations", 1), ("schedule", 0)))
    check_whole("eval", cfg["eval"], (("every", 0), ("games", 0), ("opponent_beam", 1)))
    check_whole("run", cfg["run"], (("checkpoint_every", 1), ("keep", 1)))
    if not (isinstance(sp["players"], list) and sp["players"] and all(p in (2, 3, 4) for p in sp["players"])):
        raise ConfigError(f"[selfplay] players must be a list of 2..4, got {sp['players']!r}")
    if not (isinstance(sp["sides"], list) and sp["sides"] and all(s in ("A", "B") for s in sp["sides"])):
        raise ConfigError(f"[selfplay] sides must be a list of \"A\" / \"B\", got {sp['sides']!r}")
    check_unit("selfplay", sp, ("epsilon", "greedy_games"))
    check_unit("train", cfg["train"], ("lam",))
    ray = cfg["run"]["ray"]
    if ray:
        from agents.distributed import check_address

        try:
            check_address(ray)
        except ValueError as e:
            raise ConfigError(f"[run] ray: {e}") from None
        if not sp["workers"]:
            raise ConfigError(f"run.ray (--ray {ray}) runs self-play workers on Ray: give selfplay.workers "
                              "(--workers N) too")


#: The framework's own sections: what a learner whose evaluator has no settings of its own reads (`settings`).
SECTIONS: dict[str, type] = {"selfplay": SelfPlaySection, "train": TrainSection, "eval": EvalSection,
                             "run": RunSection}


def framework_schema() -> dict[str, dict[str, Any]]:
    """The framework's own sections' settings with their defaults: the schema of a learner that declares none."""
    return {name: schema_of(cls) for name, cls in SECTIONS.items()}


def settings(config: dict[str, Any], sections: dict[str, type] | None = None) -> dict[str, dict[str, Any]]:
    """A config checked once against typed sections (default `SECTIONS`; an evaluator's own extend them): every
    section and key known, every value of its kind and range, the rest at its default (ConfigError naming section
    and key)."""
    return checked(config, {name: schema_of(cls) for name, cls in (sections or SECTIONS).items()})


def checked(config: dict[str, Any], defaults: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A config checked once against a learner's schema (`defaults`: section -> its settings' defaults, the
    framework's sections among them): every section and key known, every value of its kind and range, the framework's
    own checks (`check_sections`), the rest at its default (ConfigError naming section and key). An evaluator's
    `settings` adds its own checks to this."""
    from .common import section

    unknown = sorted(set(config) - set(defaults))
    if unknown:
        raise ConfigError(f"unknown config section(s) {', '.join(unknown)} (known: {', '.join(defaults)})")
    cfg = {name: section(config, name, d) for name, d in defaults.items()}
    check_sections(cfg)
    return cfg


