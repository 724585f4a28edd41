"""Text rendering of boards and of a whole game, in the game's words."""
from __future__ import annotations

import numpy as np

from .cards import CARDS, CUBES_ON_CARD, FIRST_SPIRIT, card_name
from .data import COLOURS, SIDES
from .geometry import CELL_QR, NUM_CELLS

#: Two-letter cell labels by stack code: Wa water, Fi field, T1-3 trees, M1-3 mountains, b1/b2 trunks,
#: r1 a lone red, Bb/Bg/Br buildings (red on brown, gray, red), .. empty.
STACK_LABEL = ("..", "Wa", "Fi", "T1", "M1", "M2", "M3", "b1", "b2", "T2", "T3", "r1", "Bb", "Bg", "Br")

#: Two-letter labels of a habitat pattern's cells (cards' `pattern` labels), as on the boards.
PATTERN_LABEL = {"blue": "Wa", "yellow": "Fi", "tree1": "T1", "tree2": "T2", "tree3": "T3", "mountain1": "M1",
                 "mountain2": "M2", "mountain3": "M3", "building": "Bd"}

#: What every code the text rendering draws means: each board label (`STACK_LABEL`) and each card habitat
#: label (`PATTERN_LABEL`, where "Bd" is any building) is spelled out, code by code (a test holds it to that).
LEGEND = ("boards: .. empty  Wa water  Fi field  T1 T2 T3 tree, height 1-3  b1 b2 brown trunk (no leaves yet)\n"
          "        M1 M2 M3 mountain, height 1-3  r1 lone red  Bb Bg Br building (red on brown/gray/red)  * cube\n"
          "cards:  Bd any building  * the cell that gets the cube  (the other codes as on the boards)")


def _hex_lines(cells: list[tuple[int, int, str]], width: int) -> list[str]:
    """Texts at axial (q, r) laid out as flat-top hex columns: row 2r + q, column q, `width` characters each."""
    qs = [q for q, _, _ in cells]
    ys = [2 * r + q for q, r, _ in cells]
    q0, y0 = min(qs), min(ys)
    rows = [[" " * width] * (max(qs) - q0 + 1) for _ in range(max(ys) - y0 + 1)]
    for (q, _, text), y in zip(cells, ys):
        rows[y - y0][q - q0] = text.ljust(width)
    return ["".join(r).rstrip() for r in rows]


def board_lines(side_code: int, stacks: np.ndarray, cubes: int, label_cells: bool = False) -> list[str]:
    """Lines drawing one board: flat-top hex columns, each cell a label (plus '*' if it holds a cube).

    label_cells=True puts each cell's number before its label ("12:T1*"), the numbers moves use."""
    n = NUM_CELLS[side_code]
    cells = []
    for i in range(n):
        text = STACK_LABEL[stacks[i]] + ("*" if (cubes >> i) & 1 else " ")
        if label_cells:
            text = f"{i:>2}:" + text
        cells.append((int(CELL_QR[side_code, i, 0]), int(CELL_QR[side_code, i, 1]), text))
    return _hex_lines(cells, 7 if label_cells else 4)


def card_lines(card_id: int, cubes_placed: int | None = None) -> list[str]:
    """A card in words: name, what it scores, then its habitat drawn as on the boards ('*' = the cube's cell).

    An Animal card scores the value under the last cube taken off its track; `cubes_placed` (a held card)
    says how many are on the board already. Spirit cards give their end-game rule."""
    c = CARDS[card_id]
    head = f"{card_name(card_id)} (#{card_id})"
    if card_id < FIRST_SPIRIT:
        n = len(c["points"])
        head += ": scores " + " / ".join(map(str, c["points"])) + f" with {', '.join(map(str, range(1, n + 1)))} cubes"
        if cubes_placed is not None:
            head += f" ({cubes_placed} placed)"
    else:
        head += ": " + c["rule"]
    cells = [(q, r, PATTERN_LABEL[lab] + ("*" if [q, r] == list(c["cube"]) else "")) for q, r, lab in c["pattern"]]
    return [head] + [("habitat " if k == 0 else " " * 8) + line for k, line in enumerate(_hex_lines(cells, 4))]


def habitat_lines(card_id: int) -> list[str]:
    """A card's habitat drawn as on the boards, '*' on the cell that gets the cube (no heading)."""
    c = CARDS[card_id]
    return _hex_lines([(q, r, PATTERN_LABEL[lab] + ("*" if [q, r] == list(c["cube"]) else ""))
                       for q, r, lab in c["pattern"]], 4)


def card_columns(title: str, cards: list[tuple[int, int, int | None]], width: int = 15) -> list[str]:
    """Cards side by side, `width` characters each (more for a longer name), `title` ('market:') before them.

    Each (number, card, cubes placed or None) is a column: the number and name ('0 Rabbit'), the points
    by cubes placed ('5/10/17'), for a held card how many cubes are placed ('1 of 3 placed'), then its
    habitat (`habitat_lines`). The number is the one moves use (market card 0, held card 0)."""
    cols = []
    for k, c, placed in cards:
        info = CARDS[c]
        col = [f"{k} {card_name(c)}", "/".join(map(str, info["points"])) if c < FIRST_SPIRIT else "Spirit card"]
        if placed is not None:
            col.append(f"{placed} of {CUBES_ON_CARD[c]} placed")
        cols.append(col + habitat_lines(c))
    rows = max((len(col) for col in cols), default=0)
    widths = [max(width, 2 + max(map(len, col))) for col in cols]  # a long name (a Spirit's) widens its column
    lead = len(title) + 1
    return [(title + " " if i == 0 else " " * lead) + "".join(
        (col[i] if i < len(col) else "").ljust(w) for col, w in zip(cols, widths)).rstrip() for i in range(rows)]


def render_game(game, numbered: bool = False, you: int | None = None, names: list[str] | None = None) -> str:
    """The whole table as text: central board, market, then every board with its cards and score.

    numbered=True (`harmonies play`) numbers every cell and central space and draws each market and held
    card side by side with its points and habitat (`card_columns`). `you` (a seat) draws that player's board
    last, nearest the prompt, headed "player N (you)"; `names` (one per seat) names the other players, e.g.
    "player 0 (greedy)"."""
    from . import state as S

    if you is not None and not 0 <= you < game.num_players:
        raise ValueError(f"you must be a seat 0..{game.num_players - 1}, got {you}")
    if names is not None and len(names) != game.num_players:
        raise ValueError(f"names must name each of the {game.num_players} seats, got {len(names)} names")
    s = game.state
    out = [f"Harmonies  {game.num_players}p  side {SIDES[game.side_code]}  spirits {'on' if game.spirits else 'off'}"
           f"  turn {int(s[S.TURN]) + 1}  player {game.current_player} to move"
           + ("  (game over)" if game.is_over else "")]
    central = S.field(s, "central")[: int(s[S.NUM_SPACES])]
    out.append("central: " + " | ".join((f"{k} " if numbered else "") + (
        ",".join(COLOURS[c] for c in sp if c >= 0) or "(empty)") for k, sp in enumerate(central)))
    market = S.field(s, "market")[: int(s[S.NUM_MARKET])]
    if numbered:
        out.extend(card_columns("market:", [(k, int(c), None) for k, c in enumerate(market) if c >= 0])
                   or ["market:  (empty)"])
    else:
        out.append("market:  " + " | ".join(f"{card_name(c)}#{c}" if c >= 0 else "(empty)" for c in market))
    out.append(f"pouch:   {int(S.field(s, 'pouch').sum())} tokens  draw pile: {int(s[S.DECK_COUNT])} cards")
    hand = S.field(s, "hand")
    if hand.sum():
        out.append("in hand: " + ", ".join(f"{n} {COLOURS[c]}" for c, n in enumerate(hand) if n))
    scores = game.scores()
    order = [p for p in range(game.num_players) if p != you] + ([you] if you is not None else [])
    for p in order:
        sc = scores[p]
        who = "you" if p == you else (names[p] if names else "")
        out.append("")
        out.append(f"player {p}" + (f" ({who})" if who else "") + f": {sc['total']} points ("
                   + ", ".join(f"{k} {v}" for k, v in sc.items() if k != "total") + ")")
        cards = []
        placed = S.field(s, "cubes_placed")[p]
        held = [int(c) for c in S.field(s, "slot")[p] if c >= 0]
        for cid in range(1, len(placed)):
            if placed[cid] >= 0 and not (numbered and cid in held):  # numbered: held cards are drawn below
                cards.append(f"{card_name(cid)} {placed[cid]}/{CUBES_ON_CARD[cid]}")
        if cards:
            out.append(("  other cards: " if numbered else "  cards: ") + ", ".join(cards))
        if numbered:
            out.extend(card_columns("  held:", [(h, int(c), int(placed[c]))
                                                for h, c in enumerate(S.field(s, "slot")[p]) if c >= 0]))
        out.extend("  " + line for line in board_lines(game.side_code, S.field(s, "stack")[p], int(s[S.CUBES + p]),
                                                       label_cells=numbered))
    out.append("")
    out.append(LEGEND)
    return "\n".join(out)


__all__ = ["board_lines", "card_lines", "habitat_lines", "card_columns", "render_game",
           "STACK_LABEL", "PATTERN_LABEL", "LEGEND", "CARDS"]
