"""What the `harmonies` subcommands' parsers and outputs share (`cli`, `play`, `serve`): the help formatter, the
agent-spec help, --seed, the score lines. Its own module, so that a subcommand's module needs no import of the CLI
that names it."""
from __future__ import annotations

import argparse
from typing import TextIO


def agents_help() -> str:
    """The agent-spec help shown under every command that takes specs: from the registry (`agents.registry`)."""
    from agents.registry import agents_help as registry_help

    return registry_help()


class OptionHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Help shows each option's default once: not when its help already says it, nor an empty one (None, False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "default" in (action.help or "").lower():
            return action.help
        return super()._get_help_string(action)


class HelpFormatter(OptionHelp, argparse.RawDescriptionHelpFormatter):
    """Help shows every option's default once and keeps the description's line breaks."""


def add_seed(p: argparse.ArgumentParser) -> None:
    """--seed, beside the game options (`harmonies_env.config.add_game_options`) of the game-playing subcommands."""
    p.add_argument("--seed", type=int, default=0, help="base seed (results are reproducible from it)")


def print_scores(game, out: TextIO) -> None:
    """Each player's score breakdown, then the winners, with the tie-break when points tie (and suns in solo)."""
    from harmonies_env.demo import winner_line
    from harmonies_env.scoring import CATEGORIES

    for p, sc in enumerate(game.scores()):
        print(f"player {p}: " + ", ".join(f"{k} {sc[k]}" for k in CATEGORIES), file=out)
    print(winner_line(game), file=out)
    if game.num_players == 1:
        print(f"suns: {game.suns()}", file=out)


__all__ = ["HelpFormatter", "OptionHelp", "add_seed", "agents_help", "print_scores"]
