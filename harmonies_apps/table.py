"""The table as plain JSON-able data for the browser pages (replay viewer and human play).

Why a separate module: the replay viewer and the play server must draw the same things from the same facts,
and the play server must never leak hidden information. Everything a page draws comes from `table_state`,
which copies only public fields (boards, cubes, cards, central board, market, pouch colour counts, draw-pile
size) plus, optionally, the dealt Spirit cards of the seats named in `show_dealt`. It never copies the
generator, the draw pile's order or the game's seed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from harmonies_env import state as S
from harmonies_env.cards import CUBES_ON_CARD, FIRST_SPIRIT
from harmonies_env.config import GameConfig
from harmonies_env.data import BOARD_CELLS, CARDS, COLOURS
from harmonies_env.game import Game
from harmonies_env.io import atomic_write_bytes
from harmonies_env.render_image import EMPTY_RGB, TOKEN_RGB
from harmonies_env.scoring import CATEGORIES
from harmonies_env.stacks import STACKS, stack_kind

STATIC_DIR = Path(__file__).with_name("static")


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#%02x%02x%02x" % rgb


def card_info(card: int) -> dict[str, Any]:
    """One card as the pages draw it: name, habitat pattern [(q, r, label)], cube cell, points or Spirit rule."""
    c = CARDS[card]
    out: dict[str, Any] = {"name": c["name"], "pattern": [list(x) for x in c["pattern"]], "cube": list(c["cube"]),
                           "spirit": card >= FIRST_SPIRIT}
    if card < FIRST_SPIRIT:
        out["points"] = list(c["points"])
    else:
        sc = c["scoring"]
        pts = sc["by_group_size"] if sc["kind"] == "groups" else sc["by_height"]
        if sc["kind"] == "groups":
            out["short"] = f"groups of {sc['of']}: 1={pts[0]} 2={pts[1]} 3+={pts[2]}"
        else:
            out["short"] = f"each {sc['of']} by height: 1={pts[0]} 2={pts[1]} 3={pts[2]}"
        out["rule"] = c["rule"]
    return out


def static_data(config: GameConfig) -> dict[str, Any]:
    """Facts that never change during a game of `config`: cells of its side, colours, stacks, every card."""
    side = config.side
    return {
        "side": side,
        "cells": [list(qr) for qr in BOARD_CELLS[side]],
        "colours": list(COLOURS),
        "rgb": [_hex(c) for c in TOKEN_RGB],
        "empty_rgb": _hex(EMPTY_RGB),
        "stacks": [list(s) for s in STACKS],
        "stack_kinds": [stack_kind(k) for k in range(len(STACKS))],
        "categories": list(CATEGORIES),
        "water_label": "water" if side == "A" else "islands",
        "cards": {str(k): card_info(k) for k in CARDS},
    }


def table_state(game: Game, show_dealt: Iterable[int] = ()) -> dict[str, Any]:
    """The public table of `game` now, as JSON-able data; dealt Spirits only for the seats in `show_dealt`.

    Shapes: central is a list of spaces, each 3 colour codes (-1 = empty); market a list of card ids (-1 =
    empty slot); pouch/hand/discarded 6 counts by colour code; players[p]["stacks"] one stack code per cell.
    """
    s = game.state
    n = game.num_players
    show = set(int(p) for p in show_dealt)
    scores = game.scores()
    stacks, cubes, slots, placed, kept, dealt, animal = S.fields(
        s, "stack", "cubes", "slot", "cubes_placed", "spirit_kept", "spirit_dealt", "animal_cubes")
    nc = game.num_cells
    over = game.is_over
    winners = game.winners() if over else []
    players = []
    for p in range(n):
        held = [[int(c), int(placed[p, c]), int(CUBES_ON_CARD[c])] for c in slots[p] if c >= 0]
        done = [int(c) for c in range(1, FIRST_SPIRIT) if placed[p, c] >= 0 and placed[p, c] == CUBES_ON_CARD[c]]
        k = int(kept[p])
        entry: dict[str, Any] = {
            "stacks": [int(x) for x in stacks[p, :nc]],
            "cubes": [i for i in range(nc) if (int(cubes[p]) >> i) & 1],
            "held": held,
            "done": done,
            "spirit": k,
            "spirit_placed": bool(k >= 0 and placed[p, k] >= 1),
            "scores": scores[p],
            "animal_cubes": int(animal[p]),
            "dealt": [int(c) for c in dealt[p]] if (p in show and game.spirits and k < 0) else None,
        }
        players.append(entry)
    return {
        "num_players": n,
        "side": game.side,
        "spirits": game.spirits,
        "turn": game.turn,
        "round": game.round,
        "current": game.current_player,
        "over": over,
        "winners": winners,
        "suns": game.suns() if (n == 1) else None,
        "end_trigger": int(s[S.END_TRIGGER]),
        "central": [[int(c) for c in sp] for sp in S.field(s, "central")[: int(s[S.NUM_SPACES])]],
        "market": [int(c) for c in S.field(s, "market")[: int(s[S.NUM_MARKET])]],
        "pouch": [int(x) for x in S.field(s, "pouch")],
        "deck_count": int(s[S.DECK_COUNT]),
        "hand": [int(x) for x in S.field(s, "hand")],
        "discarded": [int(x) for x in S.field(s, "discarded")],
        "took_tokens": bool(S.field(s, "took_tokens")),
        "took_card": bool(s[S.TOOK_CARD]),
        "taken_space": int(s[S.TAKEN_SPACE]),
        "players": players,
    }


def static_text(name: str) -> str:
    """The text of a file shipped in harmonies_apps/static (JS, CSS, HTML templates)."""
    return (STATIC_DIR / name).read_text(encoding="utf-8")


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write bytes to `path` atomically (`harmonies_env.io`: a temp file in the same folder, fsync, os.replace),
    creating its folder if needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_bytes(path, data)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write text (UTF-8) to `path` atomically (see `write_bytes_atomic`)."""
    return write_bytes_atomic(path, text.encode("utf-8"))


__all__ = ["table_state", "static_data", "card_info", "static_text", "write_text_atomic", "write_bytes_atomic",
           "STATIC_DIR"]
