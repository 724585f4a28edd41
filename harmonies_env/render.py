"""Text rendering of boards and of a whole game, in the game's words."""
from __future__ import annotations

import numpy as np

from .cards import CARDS, CUBES_ON_CARD, card_name
from .data import COLOURS, SIDES
from .geometry import CELL_QR, NUM_CELLS

#: Two-letter cell labels by stack code: Wa water, Fi field, T1-3 trees, M1-3 mountains, b1/b2 trunks,
#: r1 a lone red, Bd buildings (brown-red, gray-red, red-red), .. empty.
STACK_LABEL = ("..", "Wa", "Fi", "T1", "M1", "M2", "M3", "b1", "b2", "T2", "T3", "r1", "Bb", "Bg", "Br")
LEGEND = ("Wa water  Fi field  T1-T3 tree  M1-M3 mountain  b1/b2 brown trunk  r1 lone red  "
          "Bb/Bg/Br building on brown/gray/red  * cube  .. empty")


def board_lines(side: int, stacks: np.ndarray, cubes: int, label_cells: bool = False) -> list[str]:
    """Lines drawing one board: flat-top hex columns, each cell a label (plus '*' if it holds a cube)."""
    n = NUM_CELLS[side]
    qs = CELL_QR[side, :n, 0]
    rs = CELL_QR[side, :n, 1]
    ys = 2 * rs + qs
    y0, y1 = int(ys.min()), int(ys.max())
    width = 6 if label_cells else 4
    rows = [[" " * width] * (int(qs.max()) + 1) for _ in range(y1 - y0 + 1)]
    for i in range(n):
        text = STACK_LABEL[stacks[i]] + ("*" if (cubes >> i) & 1 else " ")
        if label_cells:
            text = f"{i:>2}" + text[:3]
        rows[ys[i] - y0][qs[i]] = text.ljust(width)
    return ["".join(r).rstrip() for r in rows]


def render_game(game) -> str:
    """The whole table as text: central board, market, then every board with its cards and score."""
    from . import state as S

    s = game.state
    out = [f"Harmonies  {game.num_players}p  side {SIDES[game.side_code]}  spirits {'on' if game.spirits else 'off'}"
           f"  turn {int(s[S.TURN]) + 1}  player {game.current_player} to move"
           + ("  (game over)" if game.is_over else "")]
    central = S.field(s, "central")[: int(s[S.NUM_SPACES])]
    out.append("central: " + " | ".join(
        ",".join(COLOURS[c] for c in sp if c >= 0) or "(empty)" for sp in central))
    market = S.field(s, "market")[: int(s[S.NUM_MARKET])]
    out.append("market:  " + " | ".join(f"{card_name(c)}#{c}" if c >= 0 else "(empty)" for c in market))
    out.append(f"pouch:   {int(S.field(s, 'pouch').sum())} tokens  draw pile: {int(s[S.DECK_COUNT])} cards")
    hand = S.field(s, "hand")
    if hand.sum():
        out.append("in hand: " + ", ".join(f"{n} {COLOURS[c]}" for c, n in enumerate(hand) if n))
    scores = game.scores()
    for p in range(game.num_players):
        sc = scores[p]
        out.append("")
        out.append(f"player {p}: {sc['total']} points ("
                   + ", ".join(f"{k} {v}" for k, v in sc.items() if k != "total") + ")")
        cards = []
        placed = S.field(s, "cubes_placed")[p]
        for cid in range(1, len(placed)):
            if placed[cid] >= 0:
                cards.append(f"{card_name(cid)} {placed[cid]}/{CUBES_ON_CARD[cid]}")
        if cards:
            out.append("  cards: " + ", ".join(cards))
        out.extend("  " + line for line in board_lines(game.side_code, S.field(s, "stack")[p], int(s[S.CUBES + p])))
    out.append("")
    out.append(LEGEND)
    return "\n".join(out)


__all__ = ["board_lines", "render_game", "STACK_LABEL", "LEGEND", "CARDS"]
