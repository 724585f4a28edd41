"""`GameConfig`: one value for a game's configuration (players, board side, Spirits, rules options).

Why: the same few settings travel from a user's call down to the kernels (through `Game`, the Gymnasium and
PettingZoo envs, the vector envs and the batched engine); one validated, immutable value says them once. The
kernels read them from the state's header (`harmonies_env.state`: num_players, side, spirits, river_loops), so a
state carries its own rules.

Where configs travel: the public constructors (`Game`, the PettingZoo and Gymnasium envs, the vector envs users
construct, `make_sb3_vec_env`) and the command lines take loose arguments and build ONE config; everything below them
(the batched engine, the match engine, tournaments, the play server, agents, experiments, benchmarks) takes that one
`config: GameConfig` and no loose game arguments (tests/test_layers.py checks it). A public constructor given both a
config and a loose argument that says something else refuses, naming both. Every parser with game options gets them
from `add_game_options` and builds the config with `game_config_from`.
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .data import SIDES

#: Readings of a river that closes on itself (Side A), by the code stored in the state's `river_loops` field:
#: "rulebook" = the rulebook's shortest path only; "bga" = Board Game Arena's loop length (docs/rules.md).
RIVER_LOOPS = ("rulebook", "bga")


def _players(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 4:
        raise ValueError(f"num_players must be an integer from 1 to 4 (1 = solo), got {v!r}")
    return int(v)


def _side(v: Any) -> str:
    if not isinstance(v, str) or v not in SIDES:
        raise ValueError(f"side must be 'A' or 'B', got {v!r}")
    return v


def _spirits(v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"spirits must be True or False, got {v!r}")
    return bool(v)


def _river_loops(v: Any) -> str:
    if not isinstance(v, str) or v not in RIVER_LOOPS:
        raise ValueError(f"river_loops must be one of {', '.join(map(repr, RIVER_LOOPS))}, got {v!r}")
    return v


_CHECKS = {"num_players": _players, "side": _side, "spirits": _spirits, "river_loops": _river_loops}


@dataclass(frozen=True)
class GameConfig:
    """A game's configuration: players (1 = the solo rules), board side, the Spirit variant, and rules options.

    river_loops: how a Side A river that closes on itself scores: "rulebook" (default: the longest shortest
    path, a loop adds nothing) or "bga" (as Board Game Arena: a loop counts its tokens; docs/rules.md says exactly
    how). Side B scores islands, so the option changes nothing there. Every field is validated on construction
    (ValueError naming the field); `replace(**changes)` gives a changed copy, validated again.
    """

    num_players: int = 2
    side: str = "A"
    spirits: bool = False
    river_loops: str = "rulebook"

    def __post_init__(self) -> None:
        for name, check in _CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))

    @property
    def side_code(self) -> int:
        """0 for Side A, 1 for Side B (the state's `side` field)."""
        return SIDES.index(self.side)

    @property
    def river_loops_code(self) -> int:
        """The state's `river_loops` field: 0 = "rulebook", 1 = "bga"."""
        return RIVER_LOOPS.index(self.river_loops)

    def replace(self, **changes: Any) -> "GameConfig":
        """A copy with some fields changed (validated like a new config)."""
        unknown = set(changes) - set(_CHECKS)
        if unknown:
            raise ValueError(f"GameConfig has no field {sorted(unknown)[0]!r}; fields are {', '.join(_CHECKS)}")
        return dataclasses.replace(self, **changes)


def loose_spirits(v: Any) -> bool:
    """A loose `spirits=` argument as the constructors have always taken it: True/False, or 0/1."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return bool(v)
    raise ValueError(f"spirits must be True or False, got {v!r}")


def make_config(config: GameConfig | None = None, defaults: dict[str, Any] | None = None,
                **given: Any) -> GameConfig:
    """The configuration a constructor runs with, from its `config=` and its loose keyword arguments.

    given: the loose arguments (None = not given); defaults: the constructor's own defaults for fields given
    neither way (e.g. num_players=1 for a solo batch). Without a config, the loose arguments (then the defaults)
    make one. With a config, each given loose argument must say the same as the config, else ValueError naming
    both; the config's values are used.
    """
    unknown = set(given) - set(_CHECKS)
    if unknown:
        raise TypeError(f"unknown configuration argument {sorted(unknown)[0]!r}")
    if "spirits" in given and given["spirits"] is not None:
        given["spirits"] = loose_spirits(given["spirits"])
    if config is None:
        values = dict(defaults or {})
        values.update({k: v for k, v in given.items() if v is not None})
        return GameConfig(**values)
    if not isinstance(config, GameConfig):
        raise ValueError(f"config must be a harmonies_env.GameConfig, got {type(config).__name__}")
    for name, value in given.items():
        if value is None:
            continue
        value = _CHECKS[name](value)
        if value != getattr(config, name):
            raise ValueError(f"{name}={value!r} conflicts with config.{name}={getattr(config, name)!r}: give each "
                             f"setting once, in the config or as an argument")
    return config


def _players_option(counts: Sequence[int]) -> Any:
    allowed = sorted(counts)

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = None
        if n not in allowed:
            span = f"{allowed[0]}-{allowed[-1]}" if allowed == list(range(allowed[0], allowed[-1] + 1)) else \
                ", ".join(map(str, allowed))
            raise argparse.ArgumentTypeError(f"must be {span}{' (1: solo)' if 1 in allowed else ''}, got {text!r}")
        return n

    parse.__name__ = "players"
    return parse


def add_game_options(parser: argparse.ArgumentParser, players: Sequence[int] | None = (1, 2, 3, 4),
                     default_players: int | None = None) -> None:
    """Add the game options, the same names and help in every command line: --players (unless `players` is None;
    the counts allowed), --side, --spirits, --river-loops. `game_config_from(args)` makes them one `GameConfig`.

    default_players: --players's default; None = the caller's (e.g. as many as agents given, `game_config_from`'s
    num_players). A bad value is argparse's one-line error naming the option."""
    if players is not None:
        notes = (["1: solo"] if 1 in players else []) + \
            (["default: as many as agents given"] if default_players is None else [])  # else the formatter's
        parser.add_argument("--players", type=_players_option(players), default=default_players, metavar="N",
                            help=f"players, one of {', '.join(map(str, sorted(players)))}"
                                 + (f" ({'; '.join(notes)})" if notes else ""))
    parser.add_argument("--side", choices=list(SIDES), default="A", help="board side (A river, B islands)")
    parser.add_argument("--spirits", action="store_true", help="play with the Nature's Spirit variant")
    parser.add_argument("--river-loops", choices=list(RIVER_LOOPS), default="rulebook",
                        help="how a Side A river that closes on itself scores: rulebook (its longest shortest path) "
                             "or bga (Board Game Arena's: a loop counts its tokens; docs/rules.md)")


def game_config_from(args: argparse.Namespace, num_players: int | None = None) -> GameConfig:
    """The ONE `GameConfig` of a command line's `add_game_options` options: what flows down to the games.

    num_players: the players when the parser has no --players or it was left unset (its default None); else
    --players. A value the config refuses is a ValueError naming the option."""
    n = getattr(args, "players", None)
    n = num_players if n is None else n
    if n is None:
        n = GameConfig.num_players
    options = {"num_players": "--players", "side": "--side", "spirits": "--spirits", "river_loops": "--river-loops"}
    values = {"num_players": n, "side": args.side, "spirits": bool(args.spirits), "river_loops": args.river_loops}
    for name, value in values.items():
        try:
            _CHECKS[name](value)
        except ValueError as e:
            raise ValueError(f"{options[name]}: {e}") from None
    return GameConfig(**values)


__all__ = ["GameConfig", "RIVER_LOOPS", "make_config", "add_game_options", "game_config_from"]
