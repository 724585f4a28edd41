"""`harmonies play`: a person against bots in the terminal.

The whole table (numbered cells, every market and held card with its habitat and points, every board and score)
is shown once at the start of each of your turns, with your board last; `table` shows it again. After each of
your actions you see one line saying what changed and, after a placement, your board, then your moves.
Numbered moves are chosen by number; placements are typed with a cell number from your board: `blue 7` places
a held blue token on cell 7, `cube 0 7` places a cube from held card 0 on cell 7. The other players' turns
are told in a few lines each: the central space and its colours, the cells each token went on, the card taken,
the cubes placed. `help` lists the commands; `quit` (or end of input) abandons the game. The game ends by
saying whether you won, with the scores.

The bots receive their own `PlayerView`s as everywhere else; this module reads the game only to draw
what is public (boards, cards, kept Spirits, central board, market, pouch size).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, TextIO

from harmonies_env import actions as A
from harmonies_env.cards import CARDS, CUBES_ON_CARD, card_name
from harmonies_env.config import GameConfig, add_game_options, game_config_from, make_config
from harmonies_env.data import COLOURS
from harmonies_env.game import Game
from harmonies_env.geometry import MAX_CELLS
from harmonies_env.render import LEGEND, STACK_LABEL, board_lines, card_lines, render_game
from harmonies_env.stacks import STACK_AFTER, stack_kind

PROMPT = "your move (help, table, quit): "

HELP = f"""commands:
  NUMBER          the numbered move (take tokens, take a card, keep a Spirit, end the turn ...)
  COLOUR CELL     place a token you hold on a cell of your board, e.g. "blue 7" ({", ".join(COLOURS)})
  cube SLOT CELL  place a cube from your held card SLOT on a cell, e.g. "cube 0 7"
  table, t        the whole table again: central board, market, every board, card and score
  board, b        your board, hand, held cards and moves again
  picture PATH    write a picture of the table (numbered cells) to PATH.png
  help, h         this text
  quit, q         abandon the game (so does the end of input, Ctrl-D)
A turn: take the 3 tokens of one central space and place them (in any order); you may take one market card
(at most 4 held) and place cubes from held cards whose habitat is on your board; then end the turn.
Card habitats are drawn as on the boards ("*" marks the cell that gets the cube); a card scores the value of
the last cube taken off its track. Cells are numbered on every board ("7:T1" is cell 7 holding a tree);
the other players' moves name cells by the same numbers on their boards.
{LEGEND}"""


class GameAbandoned(Exception):
    """The person typed quit, or their input ended: `play` stops the game there and says goodbye."""



def _points(n: int) -> str:
    return f"{n} point" + ("" if n == 1 else "s")


def hand_words(game: Game) -> str:
    """The tokens in hand, e.g. '1 blue, 2 gray' (or 'nothing')."""
    return ", ".join(f"{n} {COLOURS[c]}" for c, n in enumerate(game.field("hand")) if n) or "nothing"


def status_line(game: Game, p: int) -> str:
    """One line: round, whose turn, points so far, tokens in hand."""
    return (f"round {game.round}, your turn (player {p}): {_points(game.scores()[p]['total'])}; "
            f"tokens in hand: {hand_words(game)}")


def own_board(game: Game, p: int) -> list[str]:
    """Player p's board with numbered cells, indented, as in the table."""
    return ["  " + ln for ln in board_lines(game.side_code, game.field("stack")[p], int(game.field("cubes")[p]),
                                            label_cells=True)]


def compact_view(game: Game, p: int) -> str:
    """What a player needs between two of their actions: score, hand, numbered board and held cards."""
    lines = [status_line(game, p)] + own_board(game, p)
    placed = game.field("cubes_placed")[p]
    for h, c in enumerate(game.field("slot")[p]):
        if c >= 0:
            cl = card_lines(int(c), int(placed[c]))
            lines.append(f"  held {h}: " + cl[0])
            lines += ["    " + ln for ln in cl[1:]]
    return "\n".join(lines)


def _short(game: Game, a: int) -> str:
    """A numbered move in words (take tokens / card, keep a Spirit, solo replace, end the turn)."""
    kind, x, _ = A.decode(a)
    if kind == "take_card":
        card = int(game.field("market")[x])
        pts = " / ".join(map(str, CARDS[card]["points"])) if "points" in CARDS[card] else ""
        return f"take market card {x}: {card_name(card)}" + (f" (scores {pts})" if pts else "")
    return game.describe_action(a)


#: The verb of each kind of action in a report of what was done (end_turn is not reported).
VERBS = {"take_tokens": "took", "place_token": "placed", "take_card": "took", "place_cube": "placed",
         "keep_spirit": "kept", "solo_replace": "discarded"}


def action_words(game: Game, a: int) -> tuple[str, str]:
    """(kind, words) of action `a` by the player to move, read BEFORE it is played, in the game's words:
    'central space 2 (blue, blue, yellow)', 'blue on cell 7 (water, Wa)', 'market card 1: Bear (scores 4 / 10 / 16)',
    'a cube from Bear on cell 7 (1 of 3 placed)', 'the Spirit Lion Spirit (...)'. Cells are numbered as on the
    boards the person reads and types. A kept Spirit is named: it lies face up once kept."""
    kind, x, y = A.decode(a)
    p = game.current_player
    if kind == "take_tokens":
        toks = [COLOURS[c] for c in game.field("central")[x] if c >= 0]
        return kind, f"central space {x} ({', '.join(toks) or 'empty'})"
    if kind == "place_token":
        new = int(STACK_AFTER[game.field("stack")[p, y], x]) if y < game.num_cells else -1
        return kind, f"{COLOURS[x]} on cell {y}" + (f" ({stack_kind(new)}, {STACK_LABEL[new]})" if new >= 0 else "")
    if kind == "take_card":
        return kind, f"market card {x}: " + _card_words(int(game.field("market")[x]))
    if kind == "place_cube":
        card = int(game.field("slot")[p, x])
        if card < 0:
            return kind, f"a cube from held card {x} (empty) on cell {y}"
        done = int(game.field("cubes_placed")[p, card]) + 1
        return kind, f"a cube from {card_name(card)} on cell {y} ({done} of {int(CUBES_ON_CARD[card])} placed)"
    if kind == "keep_spirit":
        card = int(game.field("spirit_dealt")[p, x])
        return kind, f"the {card_name(card)} ({card_lines(card)[0].split(': ', 1)[1]})" if card >= 0 else "a Spirit"
    if kind == "solo_replace":
        card = int(game.field("market")[x])
        return kind, f"market card {x} ({card_name(card) if card >= 0 else 'empty'}) and replaced it from the draw pile"
    return kind, ""


def _card_words(card: int) -> str:
    if card < 0:
        return "(empty slot)"
    pts = " / ".join(map(str, CARDS[card]["points"])) if "points" in CARDS[card] else ""
    return card_name(card) + (f" (scores {pts})" if pts else "")


def turn_report(p: int, name: str, done: list[tuple[str, str]], before: int, after: int) -> str:
    """Another player's turn in a few lines: a header with their points, then one line per thing they did,
    consecutive token placements on one line ('placed blue on cell 7 (water, Wa), gray on cell 3 (...)')."""
    lines = [f"player {p} ({name}): {_points(after)}" + (f" (+{after - before})" if after > before else "")]
    prev = ""
    for kind, words in done:
        if kind not in VERBS:
            continue
        if kind == prev == "place_token":
            lines[-1] += ", " + words
        else:
            lines.append(f"  {VERBS[kind]} {words}")
        prev = kind
    return "\n".join(lines)


def moves_menu(game: Game, legal: list[int]) -> tuple[str, list[int]]:
    """The moves as text, and the actions the menu numbers (placements are typed, not numbered)."""
    numbered = [a for a in legal if A.decode(a)[0] not in ("place_token", "place_cube")]
    lines = ["your moves:"]
    dealt = game.field("spirit_dealt")[game.current_player]
    for k, a in enumerate(numbered):
        lines.append(f"  {k:>2}  {_short(game, a)}")
        kind, j, _ = A.decode(a)
        if kind == "keep_spirit":  # choosing blind would be no choice: show what each Spirit asks and scores
            lines += ["        " + ln for ln in card_lines(int(dealt[j]))[1:]]
            lines.append("        " + card_lines(int(dealt[j]))[0].split(": ", 1)[1])
    tokens: dict[int, list[int]] = {}
    cubes: dict[int, list[int]] = {}
    for a in legal:
        kind, x, i = A.decode(a)
        if kind == "place_token":
            tokens.setdefault(x, []).append(i)
        elif kind == "place_cube":
            cubes.setdefault(x, []).append(i)
    for c, cells in tokens.items():
        lines.append(f"  {COLOURS[c]} on cell " + " ".join(map(str, cells)) + f'   (type "{COLOURS[c]} CELL")')
    slot = game.field("slot")[game.current_player]
    for h, cells in cubes.items():
        lines.append(f"  cube from held card {h} ({card_name(int(slot[h]))}) on cell " + " ".join(map(str, cells))
                     + f'   (type "cube {h} CELL")')
    return "\n".join(lines), numbered


def parse_move(raw: str, numbered: list[int], legal: list[int]) -> int | str:
    """The action the person typed, or a message saying what was wrong."""
    words = raw.lower().split()
    if not words:
        return 'type a move (a number, "COLOUR CELL" or "cube SLOT CELL"), or "help"'
    colour = {"grey": "gray"}.get(words[0], words[0])
    try:
        if len(words) == 1 and words[0].lstrip("-").isdigit():
            k = int(words[0])
            if not 0 <= k < len(numbered):
                return (f"{k} is not in the list: the numbered moves are 0 to {len(numbered) - 1}" if numbered
                        else f"{k}: there is no numbered move now; place a token or a cube")
            return numbered[k]
        if len(words) == 2 and colour in COLOURS:
            cell = int(words[1])
            if not 0 <= cell < MAX_CELLS:
                return f"there is no cell {cell}: cells are numbered on your board"
            a = A.place_token(COLOURS.index(colour), cell)
            what = f"{colour} on cell {cell}"
        elif len(words) == 3 and words[0] == "cube":
            slot, cell = int(words[1]), int(words[2])
            if not 0 <= slot < 4 or not 0 <= cell < MAX_CELLS:
                return f"'{raw.strip()}': held card slots are 0-3 and cells are numbered on your board"
            a = A.place_cube(slot, cell)
            what = f"a cube from held card {slot} on cell {cell}"
        else:
            return f"'{raw.strip()}' is not a move or a command; type help"
    except ValueError:
        return f"'{raw.strip()}': cells and card slots are numbers; type help"
    if a not in legal:
        kind, x, _ = A.decode(a)
        cells = [A.decode(b)[2] for b in legal if A.decode(b)[:2] == (kind, x)]
        if not cells:
            why = f"you hold no {colour} token" if kind == "place_token" else f"held card {x} takes no cube now"
        else:
            why = f"it can go on cell {' '.join(map(str, cells))}"
        return f"{what} is not a legal move now: {why}"
    return a


class HumanPlayer:
    """A person at the terminal: reads moves and commands from `input_fn`, writes to `out`."""

    name = "you"

    def __init__(self, input_fn: Callable[[str], str] = input, out: TextIO | None = None):
        self.input_fn = input_fn
        self.out = out or sys.stdout

    def choose(self, game: Game, p: int, board: bool = True, said: str = "", names: list[str] | None = None) -> int:
        """One micro-action for player p. First shown: `said` (what the last action changed; else the status
        line), then the board if `board`, then the moves. Raises GameAbandoned on quit or end of input."""
        legal = game.legal_actions()
        menu, numbered = moves_menu(game, legal)
        lines = [said or status_line(game, p)] + (own_board(game, p) if board else [])
        print("\n" + "\n".join(lines) + "\n" + menu, file=self.out)
        while True:
            try:
                raw = self.input_fn(PROMPT)
            except EOFError:
                raise GameAbandoned("input ended") from None
            cmd = raw.strip().lower()
            if cmd in ("q", "quit", "exit"):
                raise GameAbandoned("you quit")
            if cmd in ("help", "h", "?"):
                print(HELP, file=self.out)
                continue
            if cmd in ("table", "t"):
                print(render_game(game, numbered=True, you=p, names=names) + "\n" + menu, file=self.out)
                continue
            if cmd in ("board", "b"):
                print(compact_view(game, p) + "\n" + menu, file=self.out)
                continue
            if cmd.startswith("picture"):
                self._picture(game, raw.strip()[len("picture"):].strip())
                continue
            got = parse_move(raw, numbered, legal)
            if isinstance(got, str):
                print(got, file=self.out)
                continue
            return got

    def _picture(self, game: Game, path: str) -> None:
        from harmonies_env.render_image import save_png

        if not path:
            print("picture needs a file name, e.g. picture table", file=self.out)
            return
        path = path if path.endswith(".png") else path + ".png"
        try:
            save_png(game, path)
        except OSError as e:
            print(f"could not write {path}: {e}", file=self.out)
            return
        print(f"wrote {path}", file=self.out)


def result_line(game: Game, you: int, names: list[str]) -> str:
    """The end in words: whether `you` won, with every player's total."""
    scores = [sc["total"] for sc in game.scores()]
    if game.num_players == 1:
        return f"You scored {scores[0]} points: {game.suns()} suns."
    others = ", ".join(f"player {p} ({names[p]}) {scores[p]}" for p in range(game.num_players) if p != you)
    w = game.winners()
    if w == [you]:
        return f"You won with {scores[you]} points ({others})."
    if you in w:
        return f"Shared victory: you and {', '.join(f'player {p}' for p in w if p != you)} with {scores[you]} points."
    rest = [p for p in range(game.num_players) if p != you and p not in w]
    return (f"You lost: {', '.join(f'player {p} ({names[p]})' for p in w)} won with {scores[w[0]]} points; "
            f"you scored {scores[you]}" + "".join(f", player {p} ({names[p]}) {scores[p]}" for p in rest) + ".")


def play(opponents: list[str], seat: int = 0, *, seed: int = 0, input_fn: Callable[[str], str] = input,
         out: TextIO | None = None, config: GameConfig | None = None) -> Game:
    """A person in seat `seat` against bots built from `opponents` specs; returns the game, finished unless the
    person quit (or their input ended), which ends it there with a one-line goodbye. config: the game's
    `GameConfig` (its players: one more than the opponents; default: the default rules)."""
    from agents import make_agent

    from .options import print_scores
    from .tournament import agent_seed

    out = out or sys.stdout
    n = 1 + len(opponents)
    config = make_config(config, {"num_players": n})
    if config.num_players != n:
        raise ValueError(f"config.num_players={config.num_players} but you and {len(opponents)} opponents make {n} "
                         "players")
    if not 0 <= seat < n:
        raise ValueError(f"--seat must be 0..{n - 1} with {len(opponents)} opponents, got {seat}")
    bots = [make_agent(s, seed=agent_seed(seed, 0, k)) for k, s in enumerate(opponents)]
    names = list(opponents[:seat]) + ["you"] + list(opponents[seat:])
    seats: list = bots[:seat] + [None] + bots[seat:]
    human = HumanPlayer(input_fn, out)
    game = Game(seed=seed, config=config)
    for b in bots:
        if hasattr(b, "reset"):
            b.reset()
    if n == 1:
        print("Harmonies, solo", file=out)
    else:
        print(f"Harmonies, {n} players: you are player {seat}; "
              + ", ".join(f"player {p} {names[p]}" for p in range(n) if p != seat), file=out)
    print('type "help" at any prompt for the commands', file=out)
    try:
        _loop(game, seat, seats, names, human, out)
    except GameAbandoned as e:
        print(f"\n{e}: game abandoned in round {game.round}, {_points(game.scores()[seat]['total'])}. Goodbye.",
              file=out)
        return game
    print("\n=== final position ===\n" + render_game(game, numbered=True, you=seat, names=names), file=out)
    print("", file=out)
    print_scores(game, out)
    print(result_line(game, seat, names), file=out)
    return game


def _loop(game: Game, seat: int, seats: list, names: list[str], human: HumanPlayer, out: TextIO) -> None:
    """Play until the game ends: the table once at the start of each of the person's turns, what changed after
    each of their actions (their board after a placement), each other player's turn in a few lines."""
    from harmonies_env.view import PlayerView

    said, board, new_turn = "", False, True
    while not game.is_over:
        p, turn = game.current_player, game.turn
        if p == seat:
            if new_turn:
                print("\n=== the table ===\n" + render_game(game, numbered=True, you=seat, names=names), file=out)
                said, board, new_turn = "", False, False  # the table just printed ends with the board
            a = human.choose(game, p, board=board, said=said, names=names)
            kind, words = action_words(game, a)
            card = int(game.field("market")[A.decode(a)[1]]) if kind == "take_card" else -1
            game.step(a)
            pts = _points(game.scores()[p]["total"])
            if kind in VERBS:
                said = f"you {VERBS[kind]} {words}: {pts}; tokens in hand: {hand_words(game)}"
                if card >= 0:  # the card's habitat, for placing its cubes
                    said += "\n" + "\n".join("  " + ln for ln in card_lines(card)[1:])
            board = kind in ("take_tokens", "place_token", "place_cube")
            if game.turn != turn:
                print(f"\nyou ended your turn: {pts}", file=out)
                new_turn = True
        else:
            before = game.scores()[p]["total"]
            done = []
            while not game.is_over and game.turn == turn:
                a = seats[p].act(PlayerView(game, p))  # a snapshot per decision: views do not follow the game
                done.append(action_words(game, a))
                game.step(a)
            print("\n" + turn_report(p, names[p], done, before, game.scores()[p]["total"]), file=out)
            new_turn = True


def cmd_play(args: argparse.Namespace, input_fn: Callable[[str], str] = input, out: TextIO | None = None) -> int:
    """Exit 0 when the game ends or the person quits (or input ends); 130 on Ctrl-C, one line, no traceback."""
    try:
        play(list(args.opponents), args.seat, seed=args.seed, input_fn=input_fn, out=out,
             config=game_config_from(args, 1 + len(args.opponents)))
    except KeyboardInterrupt:
        print("\ninterrupted: game abandoned", file=sys.stderr)
        return 130
    return 0


def add_parser(sub) -> None:
    """Add the `play` subcommand to the `harmonies` parser (see cli.APP_MODULES)."""
    from .options import HelpFormatter, add_seed, agents_help

    p = sub.add_parser("play", help="play against bots in the terminal", formatter_class=HelpFormatter,
                       description=__doc__.split("\n\n")[0] + "\n\n" + HELP.split("A turn:")[0], epilog=agents_help())
    p.add_argument("--opponents", nargs="*", default=["greedy"], help="bot specs, one per opponent (none = solo)")
    p.add_argument("--seat", type=int, default=0, help="your seat (0 plays first)")
    add_game_options(p, players=None)
    add_seed(p)
    p.set_defaults(func=cmd_play)


__all__ = ["play", "HumanPlayer", "GameAbandoned", "compact_view", "status_line", "own_board", "hand_words",
           "action_words", "turn_report", "moves_menu", "parse_move", "result_line", "add_parser", "HELP", "PROMPT",
           "VERBS"]
