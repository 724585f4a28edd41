"""`render()` of the environments (Gymnasium and PettingZoo alike): the render modes and what each returns.

Shared by `env_gym` and `env_aec` so that neither imports the other's helpers.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .game import Game

#: The render modes every env accepts: "ansi" (the table as text), "rgb_array" (a picture, uint8 HxWx3) and
#: "human" (the table as `harmonies play` shows it, printed to stdout after every reset and step; returns None).
RENDER_MODES = ("ansi", "rgb_array", "human")


def check_render_mode(render_mode: Any) -> str | None:
    """The render mode (None or one of RENDER_MODES), or a ValueError naming the modes there are."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode must be None, 'ansi', 'rgb_array' or 'human', got {render_mode!r}")
    return render_mode


def render_game(game: Game, render_mode: str | None, you: int | None = None) -> str | np.ndarray | None:
    """What an env's render() returns for `game` in `render_mode` (None: a Gymnasium warning, and None).

    "human" prints the numbered table of `harmonies play` (its `table` command), `you` (a seat, or None) drawn
    last as "player N (you)", and returns None."""
    if render_mode is None:
        import gymnasium

        gymnasium.logger.warn("You are calling render method without specifying any render mode.")
        return None
    if render_mode == "ansi":
        return str(game)
    if render_mode == "human":
        from .render import render_game as table

        print(table(game, numbered=True, you=you), file=sys.stdout, flush=True)
        return None
    from .render_image import render_rgb  # lazy: Pillow is only needed for pictures
    return render_rgb(game)


__all__ = ["RENDER_MODES", "check_render_mode", "render_game"]
