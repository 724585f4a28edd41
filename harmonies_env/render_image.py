"""Picture of the whole table as an RGB array (the `render_mode="rgb_array"` rendering), drawn with Pillow.

Every board is drawn as flat-top hexagons placed by axial (q, r): column centre x = 1.5 q, y = sqrt(3) (r + q/2)
in hex radii. A cell is filled with its top token's colour; a stack whose bottom differs from its top (a tree
on trunks, a building) shows the bottom colour as a ring, buildings carry a white house outline, pips at the
bottom give the stack height and a white square near the top is a cube; the cell's number (the one moves
use) is written small at its left. The cell's centre pixel always shows the top token's colour (tests rely
on it; `cell_centre` finds it). Beside each board: score breakdown, held cards with their points tracks,
completed and Spirit cards. Above the boards: central board, market (slot number, points track and pattern
of each card), pouch, turn.

Drawing is deterministic (same game -> same pixels) and takes a few tens of milliseconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from . import state as S
from .cards import CUBES_ON_CARD, FIRST_SPIRIT, card_name
from .data import CARDS, COLOURS, SIDES
from .geometry import CELL_QR, NUM_CELLS
from .stacks import STACKS

SQRT3 = math.sqrt(3.0)

#: Token colours by colour code (blue, gray, brown, green, yellow, red), in natural tones. uint8-ready RGB.
TOKEN_RGB: tuple[tuple[int, int, int], ...] = (
    (52, 120, 198),   # blue: water
    (150, 150, 156),  # gray: stone
    (122, 80, 42),    # brown: trunk
    (58, 146, 62),    # green: leaves
    (238, 198, 52),   # yellow: field
    (200, 46, 38),    # red: roof
)
EMPTY_RGB = (240, 229, 204)
BACKGROUND_RGB = (250, 250, 247)
PANEL_RGB = (255, 255, 255)
OUTLINE_RGB = (96, 84, 70)
TEXT_RGB = (25, 25, 25)
DIM_RGB = (110, 110, 110)
CURRENT_RGB = (230, 150, 20)
WINNER_RGB = (40, 160, 70)

# Base sizes (pixels at scale 1); `width` scales all of them together.
_HEX = 26.0          # board hex radius (centre to corner)
_MINI_HEX = 10.0     # hex radius of a card's pattern in the market
_PAD = 10.0
_TEXT_W = 270.0      # text column beside each board
_FONT = 13
_BIG_FONT = 16
_LINE = 16.0
_CARD_H = 4.0      # market card height in lines
#: A cube is a white square whose centre is this many hex radii above the cell's centre.
CUBE_MARK_OFFSET = 0.52

_LABEL_STACK = {"blue": ("blue",), "yellow": ("yellow",), "tree1": ("green",), "tree2": ("brown", "green"),
                "tree3": ("brown", "brown", "green"), "mountain1": ("gray",), "mountain2": ("gray", "gray"),
                "mountain3": ("gray", "gray", "gray"), "building": ("gray", "red")}


@lru_cache(maxsize=32)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, ImportError, OSError):  # Pillow < 10.1 or no FreeType: fixed bitmap font
        return ImageFont.load_default()


@dataclass(frozen=True)
class Layout:
    """Where things are in a picture of one game. Lengths in pixels.

    board_origin[p] is the pixel position of axial (q=0, r=0) on player p's board; a cell (q, r) has its
    centre at origin + hex_radius * (1.5 q, sqrt(3) (r + q/2)).
    """

    width: int
    height: int
    scale: float
    side: int
    hex_radius: float
    board_origin: tuple[tuple[float, float], ...]
    panel_box: tuple[tuple[int, int, int, int], ...]
    header_height: int


def _board_extent(side_code: int) -> tuple[float, float, float, float]:
    """(min x, min y, max x, max y) of a board's cell centres in hex radii."""
    n = NUM_CELLS[side_code]
    q = CELL_QR[side_code, :n, 0].astype(float)
    r = CELL_QR[side_code, :n, 1].astype(float)
    x = 1.5 * q
    y = SQRT3 * (r + q / 2)
    return float(x.min()), float(y.min()), float(x.max()), float(y.max())


def _natural(side_code: int, players: int, scale: float) -> tuple[float, float, float, float, int, int]:
    """Panel width/height, header height, total width, grid columns, grid rows at a given scale."""
    R = _HEX * scale
    x0, y0, x1, y1 = _board_extent(side_code)
    board_w = (x1 - x0) * R + 2 * R
    board_h = (y1 - y0) * R + SQRT3 * R
    pad = _PAD * scale
    line = _LINE * scale
    panel_w = pad + board_w + pad * 1.5 + _TEXT_W * scale + pad
    panel_h = pad + 1.4 * line + max(board_h, 12.5 * line) + pad
    header_h = pad + 1.6 * line + (3.1 * line + 4 * scale) + 0.6 * line + (1.1 * line + _CARD_H * line) + pad
    cols = 1 if players == 1 else 2
    rows = (players + cols - 1) // cols
    total_w = max(cols * panel_w + (cols + 1) * pad, 1000 * scale if players > 1 else 720 * scale)
    return panel_w, panel_h, header_h, total_w, cols, rows


def table_layout(game, width: int | None = None) -> Layout:
    """The layout `render_rgb(game, width)` draws with: image size, scale, board origins, panel boxes."""
    n = game.num_players
    side = game.side_code
    if width is None:
        scale = 1.0
    else:
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 240:
            raise ValueError(f"width must be an integer of at least 240 pixels or None, got {width!r}")
        scale = float(width) / _natural(side, n, 1.0)[3]
    panel_w, panel_h, header_h, total_w, cols, rows = _natural(side, n, scale)
    W = int(width) if width is not None else int(math.ceil(total_w))
    pad = _PAD * scale
    R = _HEX * scale
    x0, y0, _, _ = _board_extent(side)
    # spread the panels over the full width
    gap = (W - cols * panel_w) / (cols + 1)
    origins, boxes = [], []
    for p in range(n):
        c, r = p % cols, p // cols
        px = gap + c * (panel_w + gap)
        py = header_h + pad + r * (panel_h + pad)
        boxes.append((int(round(px)), int(round(py)), int(round(px + panel_w)), int(round(py + panel_h))))
        bx = px + pad + R - x0 * R
        by = py + pad + 1.4 * _LINE * scale + SQRT3 * R / 2 - y0 * R
        origins.append((bx, by))
    H = int(math.ceil(header_h + pad + rows * (panel_h + pad)))
    return Layout(W, H, scale, side, R, tuple(origins), tuple(boxes), int(header_h))


def cell_centre(layout: Layout, player: int, cell: int) -> tuple[int, int]:
    """Pixel (x, y) of the centre of `cell` on `player`'s board; that pixel shows the top token's colour."""
    if not 0 <= player < len(layout.board_origin):
        raise ValueError(f"player must be 0..{len(layout.board_origin) - 1}, got {player}")
    if not 0 <= cell < NUM_CELLS[layout.side]:
        raise ValueError(f"cell must be 0..{NUM_CELLS[layout.side] - 1} on side {SIDES[layout.side]}, got {cell}")
    ox, oy = layout.board_origin[player]
    q, r = int(CELL_QR[layout.side, cell, 0]), int(CELL_QR[layout.side, cell, 1])
    return (int(round(ox + layout.hex_radius * 1.5 * q)), int(round(oy + layout.hex_radius * SQRT3 * (r + q / 2))))


def _hex_points(cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    return [(cx + r * math.cos(math.pi / 3 * k), cy + r * math.sin(math.pi / 3 * k)) for k in range(6)]


def _draw_stack(d: ImageDraw.ImageDraw, cx: float, cy: float, R: float, colours: tuple[str, ...],
                cube: bool, scale: float) -> None:
    """One cell: top colour inside, a base ring if the bottom differs, house outline, height pips, cube."""
    line_w = max(1, int(round(1.5 * scale * R / _HEX))) if R >= _HEX * scale * 0.9 else 1
    if not colours:
        d.polygon(_hex_points(cx, cy, R), fill=EMPTY_RGB, outline=OUTLINE_RGB, width=line_w)
    else:
        top = TOKEN_RGB[COLOURS.index(colours[-1])]
        base = TOKEN_RGB[COLOURS.index(colours[0])]
        if colours[0] != colours[-1] or (len(colours) == 2 and colours[-1] == "red"):
            d.polygon(_hex_points(cx, cy, R), fill=base, outline=OUTLINE_RGB, width=line_w)
            inner = 0.66 * R
            d.polygon(_hex_points(cx, cy, inner), fill=top, outline=(40, 30, 20), width=1)
        else:
            d.polygon(_hex_points(cx, cy, R), fill=top, outline=OUTLINE_RGB, width=line_w)
        if len(colours) == 2 and colours[-1] == "red" and R >= 9:  # a building: white house outline around the centre
            k = 0.27 * R
            d.line([(cx - k, cy + 0.75 * k), (cx - k, cy - 0.15 * k), (cx, cy - k), (cx + k, cy - 0.15 * k),
                    (cx + k, cy + 0.75 * k), (cx - k, cy + 0.75 * k)], fill=(255, 255, 255),
                   width=max(1, int(round(R / 12))), joint="curve")
        h = len(colours)
        if h >= 1 and R >= 10:
            pr = max(1.5, 0.12 * R)
            step = 2.7 * pr
            py = cy + 0.5 * R
            for k in range(h):
                px = cx + (k - (h - 1) / 2) * step
                d.ellipse((px - pr, py - pr, px + pr, py + pr), fill=(20, 20, 20), outline=(255, 255, 255))
    if cube:
        c = max(2.0, 0.17 * R)
        cy2 = cy - CUBE_MARK_OFFSET * R
        d.rectangle((cx - c, cy2 - c, cx + c, cy2 + c), fill=(255, 255, 255), outline=(0, 0, 0),
                    width=max(1, int(round(R / 16))))


def _wrap(d: ImageDraw.ImageDraw, text: str, font, max_w: float) -> list[str]:
    """Split text at ', ' / spaces so that each line fits in max_w pixels."""
    words = text.split(" ")
    lines, cur = [], ""
    for w in words:
        trial = w if not cur else cur + " " + w
        if d.textlength(trial, font=font) <= max_w or not cur:
            cur = trial
        else:
            lines.append(cur)
            cur = w
    if cur:
        lines.append(cur)
    return lines


def _draw_card(d: ImageDraw.ImageDraw, x: float, y: float, w: float, h: float, card: int, scale: float,
               font, slot: int | None = None) -> None:
    """A market card: slot number and name, points track, and its habitat pattern in small hexes."""
    d.rounded_rectangle((x, y, x + w, y + h), radius=int(5 * scale), fill=(252, 248, 236), outline=OUTLINE_RGB)
    if card < 0:
        d.text((x + 6 * scale, y + 5 * scale), "(empty slot)", fill=DIM_RGB, font=font)
        return
    c = CARDS[card]
    d.text((x + 6 * scale, y + 4 * scale), (f"{slot}: " if slot is not None else "") + card_name(card),
           fill=TEXT_RGB, font=font)
    info = "pts " + " ".join(map(str, c["points"])) if "points" in c else c["scoring"]["kind"]
    d.text((x + 6 * scale, y + 4 * scale + _LINE * scale), info, fill=DIM_RGB, font=font)
    r = _MINI_HEX * scale
    pts = [(1.5 * q, SQRT3 * (rr + q / 2)) for q, rr, _ in c["pattern"]]
    mx0 = min(p[0] for p in pts)
    mx1 = max(p[0] for p in pts)
    my0 = min(p[1] for p in pts)
    my1 = max(p[1] for p in pts)
    area_x1 = x + w - 5 * scale
    ox = area_x1 - r - mx1 * r
    oy = y + h / 2 - (my0 + my1) / 2 * r
    if ox + mx0 * r - r < x + 6 * scale + 50 * scale:  # keep clear of the name when space is short
        ox = x + 6 * scale + 50 * scale + r - mx0 * r
    for (px, py), (q, rr, lab) in zip(pts, c["pattern"]):
        _draw_stack(d, ox + px * r, oy + py * r, r, _LABEL_STACK[lab], [q, rr] == list(c["cube"]), scale)


def render_rgb(game, width: int | None = None) -> np.ndarray:
    """The whole table as an image: uint8 array (H, W, 3). `width` scales the picture (None = natural size)."""
    lay = table_layout(game, width)
    sc = lay.scale
    s = game.state
    img = Image.new("RGB", (lay.width, lay.height), BACKGROUND_RGB)
    d = ImageDraw.Draw(img)
    font = _font(max(6, int(round(_FONT * sc))))
    big = _font(max(7, int(round(_BIG_FONT * sc))))
    pad = _PAD * sc
    line = _LINE * sc
    n = game.num_players
    scores = game.scores()
    over = game.is_over
    winners = game.winners() if over and n > 1 else []
    cur = game.current_player

    # ---- header: status, central board, market, pouch ----------------------------------------------
    title = (f"Harmonies  |  {n} player{'s' if n > 1 else ''} (solo)" if n == 1 else
             f"Harmonies  |  {n} players") + f"  |  Side {game.side}  |  Spirits {'on' if game.spirits else 'off'}"
    if over:
        if n == 1:
            status = f"GAME OVER  -  {scores[0]['total']} points, {game.suns()} suns"
        else:
            status = ("GAME OVER  -  winner" + ("s" if len(winners) > 1 else "") + ": "
                      + ", ".join(f"Player {p} ({scores[p]['total']} pts)" for p in winners))
    else:
        status = f"Round {game.round}, turn {game.turn + 1}  -  Player {cur} to move"
        trig = int(s[S.END_TRIGGER])
        if trig:
            status += "  (final round: " + ("pouch ran out" if trig == 1 else "a board is full") + ")"
    d.text((pad, pad), title, fill=TEXT_RGB, font=big)
    tw = d.textlength(title + "     ", font=big)
    d.text((pad + tw, pad), status, fill=WINNER_RGB if over else CURRENT_RGB, font=big)

    y = pad + 1.6 * line
    d.text((pad, y), "Central board", fill=TEXT_RGB, font=font)
    spaces = S.field(s, "central")[: int(s[S.NUM_SPACES])]
    tok_r = 8.0 * sc
    sx = pad
    sy = y + 1.1 * line
    for k, sp in enumerate(spaces):
        bw = 3 * 2.6 * tok_r + 2 * tok_r
        d.rounded_rectangle((sx, sy, sx + bw, sy + 2.0 * line + 4 * sc), radius=int(6 * sc), fill=(232, 224, 206),
                            outline=OUTLINE_RGB)
        d.text((sx + 3 * sc, sy + 1 * sc), str(k), fill=DIM_RGB, font=_font(max(6, int(round(10 * sc)))))
        cy = sy + line + 2 * sc
        for t, c in enumerate(sp):
            cx = sx + tok_r * 1.8 + t * 2.6 * tok_r
            if c >= 0:
                d.ellipse((cx - tok_r, cy - tok_r, cx + tok_r, cy + tok_r), fill=TOKEN_RGB[c], outline=OUTLINE_RGB)
            else:
                d.ellipse((cx - tok_r, cy - tok_r, cx + tok_r, cy + tok_r), outline=(190, 180, 160))
        sx += bw + 6 * sc
    # pouch, draw pile and tokens in hand, right of the central board
    ix = sx + 14 * sc
    pouch = S.field(s, "pouch")
    d.text((ix, y), f"Pouch: {int(pouch.sum())} tokens   Draw pile: {int(s[S.DECK_COUNT])} cards",
           fill=TEXT_RGB, font=font)
    px = ix
    for c in range(6):
        cy = sy + 0.5 * line
        d.ellipse((px, cy - 6 * sc, px + 12 * sc, cy + 6 * sc), fill=TOKEN_RGB[c], outline=OUTLINE_RGB)
        d.text((px + 15 * sc, cy - 7 * sc), str(int(pouch[c])), fill=TEXT_RGB, font=font)
        px += 44 * sc
    hand = S.field(s, "hand")
    hy = sy + 1.6 * line
    d.text((ix, hy), f"In Player {cur}'s hand:" if hand.sum() else "In hand: -", fill=TEXT_RGB, font=font)
    hx = ix + d.textlength(f"In Player {cur}'s hand:  ", font=font)
    for c in range(6):
        for _ in range(int(hand[c])):
            d.ellipse((hx, hy + 1 * sc, hx + 13 * sc, hy + 14 * sc), fill=TOKEN_RGB[c], outline=OUTLINE_RGB)
            hx += 17 * sc

    y = sy + 2.0 * line + 4 * sc + 0.6 * line
    d.text((pad, y), "Market", fill=TEXT_RGB, font=font)
    market = S.field(s, "market")[: int(s[S.NUM_MARKET])]
    cw = min(190 * sc, (lay.width - 2 * pad - 4 * 6 * sc) / 5)
    ch = _CARD_H * line
    for k, card in enumerate(market):
        _draw_card(d, pad + k * (cw + 6 * sc), y + 1.1 * line, cw, ch, int(card), sc, font, slot=k)

    # ---- one panel per player ------------------------------------------------------------------------
    stacks, cubes, slots, placed, kept = S.fields(s, "stack", "cubes", "slot", "cubes_placed", "spirit_kept")
    R = lay.hex_radius
    nc = int(NUM_CELLS[game.side_code])
    for p in range(n):
        x0, y0, x1, y1 = lay.panel_box[p]
        border = WINNER_RGB if p in winners else CURRENT_RGB if (p == cur and not over) else (200, 200, 200)
        bw = max(1, int(round((4 if border != (200, 200, 200) else 1) * sc)))
        d.rounded_rectangle((x0, y0, x1, y1), radius=int(8 * sc), fill=PANEL_RGB, outline=border, width=bw)
        head = f"Player {p}"
        if p in winners:
            head += "  - WINNER"
        elif p == cur and not over:
            head += "  - to move"
        d.text((x0 + pad, y0 + pad * 0.7), head, fill=border if border != (200, 200, 200) else TEXT_RGB, font=big)
        ox, oy = lay.board_origin[p]
        num_font = _font(max(6, int(round(0.42 * R))))
        cube_mask = int(cubes[p])
        for i in range(nc):
            cx, cy = ox + R * 1.5 * CELL_QR[game.side_code, i, 0], oy + R * SQRT3 * (
                CELL_QR[game.side_code, i, 1] + CELL_QR[game.side_code, i, 0] / 2)
            _draw_stack(d, cx, cy, R, STACKS[int(stacks[p, i])], bool((cube_mask >> i) & 1), sc)
            if R >= 12:  # the cell's number, left of the centre (the centre pixel keeps the top colour)
                d.text((cx - 0.62 * R, cy), str(i), fill=(255, 255, 255), font=num_font, anchor="mm",
                       stroke_width=max(1, int(round(R / 20))), stroke_fill=(30, 30, 30))
        # text column
        _, _, bxmax, _ = _board_extent(game.side_code)
        tx = ox + bxmax * R + R + 1.5 * pad
        tmax = x1 - pad - tx
        ty = y0 + pad * 0.7 + 1.4 * line
        sco = scores[p]
        d.text((tx, ty), f"Score {sco['total']}", fill=TEXT_RGB, font=big)
        ty += 1.3 * line
        parts = [f"trees {sco['trees']}", f"mountains {sco['mountains']}", f"fields {sco['fields']}",
                 f"buildings {sco['buildings']}", f"water {sco['water']}" if game.side == "A"
                 else f"islands {sco['water']}", f"animals {sco['animals']}"]
        if game.spirits:
            parts.append(f"spirit {sco['spirit']}")
        for ln in _wrap(d, "  ".join(parts), font, tmax):
            d.text((tx, ty), ln, fill=DIM_RGB, font=font)
            ty += line
        ty += 0.3 * line
        held = [int(c) for c in slots[p] if c >= 0]
        d.text((tx, ty), f"Held cards ({len(held)}/4):", fill=TEXT_RGB, font=font)
        ty += line
        for c in held:
            tag = f"  {card_name(c)}  {int(placed[p, c])}/{int(CUBES_ON_CARD[c])} cubes"
            if "points" in CARDS[c]:
                tag += "  (pts " + " ".join(map(str, CARDS[c]["points"])) + ")"
            for ln in _wrap(d, tag, font, tmax):
                d.text((tx, ty), ln, fill=TEXT_RGB, font=font)
                ty += line
        if not held:
            d.text((tx, ty), "  none", fill=DIM_RGB, font=font)
            ty += line
        done = [c for c in range(1, FIRST_SPIRIT) if placed[p, c] >= 0 and placed[p, c] == CUBES_ON_CARD[c]]
        txt = "Completed: " + (", ".join(card_name(c) for c in done) if done else "none")
        for ln in _wrap(d, txt, font, tmax):
            d.text((tx, ty), ln, fill=TEXT_RGB, font=font)
            ty += line
        if game.spirits:
            k = int(kept[p])
            if k < 0:
                txt = "Spirit: not chosen yet"
            else:
                txt = f"Spirit: {card_name(k)} ({'cube placed' if placed[p, k] >= 1 else 'cube on card'})"
            for ln in _wrap(d, txt, font, tmax):
                d.text((tx, ty), ln, fill=TEXT_RGB, font=font)
                ty += line
        d.text((tx, ty), f"Animal cubes placed: {int(S.field(s, 'animal_cubes')[p])}", fill=DIM_RGB, font=font)
    return np.asarray(img, dtype=np.uint8)


def save_png(game, path: str, width: int | None = None) -> None:
    """Write `render_rgb(game, width)` to a PNG file (atomically: see `harmonies_env.io`)."""
    from .io import atomic_save

    img = Image.fromarray(render_rgb(game, width))
    atomic_save(path, lambda f: img.save(f, format="PNG"))


__all__ = ["render_rgb", "table_layout", "cell_centre", "save_png", "Layout", "TOKEN_RGB", "EMPTY_RGB",
           "CUBE_MARK_OFFSET"]
