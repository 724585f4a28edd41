"""`harmonies play` in the terminal stays readable: a few lines after each of your placements (your board and what
changed), the whole table once per turn and on request, the other players' turns told in the game's words (space,
colours, cells, card) with no raw coordinates, a legend naming every code the text can show, and `quit` / end of
input / Ctrl-C ending the game cleanly."""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harmonies_apps import play
from harmonies_env import actions as A
from harmonies_env.cards import CARDS, card_name
from harmonies_env.config import GameConfig
from harmonies_env.game import Game
from harmonies_env.render import (
    LEGEND,
    PATTERN_LABEL,
    STACK_LABEL,
    board_lines,
    card_columns,
    card_lines,
    habitat_lines,
    render_game,
)

ROOT = Path(__file__).resolve().parents[1]
CARD_NAMES = {card_name(c) for c in CARDS}
#: What a raw coordinate dump looks like: "q=1, r=2", "(1, -2)".
RAW_QR = re.compile(r"q=|r=|\(-?\d+, ?-?\d+\)")


class Person:
    """Reads what was printed since its last answer and answers with the first move offered (a numbered move,
    else a token, else a cube); keeps each answer with the output that followed it."""

    def __init__(self, out: io.StringIO, first: list[str] = ()):
        self.out = out
        self.first = list(first)
        self.mark = 0
        self.last: str | None = None
        self.after: list[tuple[str | None, str]] = []  # (answer, what was printed before the next prompt)

    def __call__(self, prompt: str) -> str:
        assert prompt == play.PROMPT
        text = self.out.getvalue()[self.mark:]
        self.mark = len(self.out.getvalue())
        self.after.append((self.last, text))
        if self.first:
            self.last = self.first.pop(0)
            return self.last
        m = (re.search(r"^ {2} ?(\d+) {2}", text, re.M) or re.search(r"^ {2}(\w+) on cell (\d+)", text, re.M)
             or re.search(r"^ {2}cube from held card (\d) .*? on cell (\d+)", text, re.M))
        assert m, text[-2000:]
        if m.re.pattern.startswith("^ {2} ?"):
            self.last = m.group(1)
        elif m.group(0).lstrip().startswith("cube"):
            self.last = f"cube {m.group(1)} {m.group(2)}"
        else:
            self.last = f"{m.group(1)} {m.group(2)}"
        return self.last


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harmonies_apps.cli", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def three_player_game():
    """A whole 3-player game: you in seat 1 between a greedy and a random bot."""
    out = io.StringIO()
    person = Person(out)
    game = play.play(["greedy", "random"], seat=1, seed=4, input_fn=person, out=out)
    return game, out.getvalue(), person


# ---- the legend ---------------------------------------------------------------------------------------

def _codes(lines: list[str]) -> set[str]:
    """The codes drawn on board or habitat lines: each word without its cell number ('7:') or cube mark ('*')."""
    return {re.sub(r"^\d+:", "", w).rstrip("*") for ln in lines for w in ln.split()} - {""}


def test_legend_names_every_code_the_text_can_show():
    words = set(LEGEND.split())
    assert "Bd" in words and "*" in words  # a card's "any building" cell, and the cube mark
    assert set(STACK_LABEL) <= words and set(PATTERN_LABEL.values()) <= words
    # what the renderer actually draws: every stack on a board, every card's habitat (heading word aside)
    drawn = set()
    for code in range(len(STACK_LABEL)):
        stacks = np.full(30, code, dtype=np.int64)
        drawn |= _codes(board_lines(0, stacks, 0b101, label_cells=True)) | _codes(board_lines(1, stacks, 0))
    for c in CARDS:
        drawn |= _codes(habitat_lines(c)) | _codes(ln for ln in card_lines(c)[1:]) - {"habitat"}
    assert drawn, "nothing was drawn: the check would test nothing"
    assert drawn - words == set(), f"codes drawn but not in the legend: {sorted(drawn - words)}"


def test_help_lists_the_table_command_and_the_legend():
    assert re.search(r"^ {2}table, t ", play.HELP, re.M) and "table" in play.PROMPT
    assert LEGEND in play.HELP and "quit" in play.PROMPT


# ---- the table ----------------------------------------------------------------------------------------

def test_table_draws_your_board_last_and_names_the_players():
    g = Game(3, seed=1)
    text = render_game(g, numbered=True, you=1, names=["greedy", "you", "random"])
    heads = re.findall(r"^player (\d) \((\w+)\): \d+ points", text, re.M)
    assert heads == [("0", "greedy"), ("2", "random"), ("1", "you")]
    assert text.splitlines()[2].startswith("market: 0 ")  # cards side by side, numbered as the moves number them
    assert "central: 0 " in text and " | 4 " in text
    plain = [ln.split(":")[0] for ln in str(g).splitlines() if ln.startswith("player ")]
    assert plain == ["player 0", "player 1", "player 2"]  # the plain table is unchanged
    with pytest.raises(ValueError, match="you must be a seat 0..2"):
        render_game(g, you=3)
    with pytest.raises(ValueError, match="names must name each of the 3 seats"):
        render_game(g, names=["a"])


def test_card_columns_put_cards_side_by_side_with_points_progress_and_habitat():
    rabbit, frog = (next(c for c in CARDS if card_name(c) == n) for n in ("Rabbit", "Frog"))
    lines = card_columns("  held:", [(0, rabbit, 1), (2, frog, 0)])
    assert lines[0].startswith("  held: 0 Rabbit") and "2 Frog" in lines[0]
    assert lines[1].split() == ["/".join(map(str, CARDS[rabbit]["points"])), "/".join(map(str, CARDS[frog]["points"]))]
    assert lines[2].split() == ["1", "of", "3", "placed", "0", "of", "5", "placed"]
    assert len(lines) == 3 + max(len(habitat_lines(rabbit)), len(habitat_lines(frog)))
    assert all(ln.startswith(" " * 8) for ln in lines[1:])
    assert card_columns("market:", []) == []
    spirit = next(c for c in CARDS if card_name(c) == "Dragonfly Spirit")
    wide = card_columns("  held:", [(0, spirit, 0), (1, rabbit, 0)])
    assert wide[0].startswith("  held: 0 Dragonfly Spirit  1 Rabbit")  # a long name still leaves a gap
    assert wide[1].split() == ["Spirit", "card", "/".join(map(str, CARDS[rabbit]["points"]))]


# ---- a whole game through the play loop ---------------------------------------------------------------

def test_after_each_placement_only_your_board_and_what_changed(three_player_game):
    game, text, person = three_player_game
    assert game.is_over
    placements = [(a, t) for a, t in person.after if a and not a.isdigit() and "=== the table ===" not in t]
    assert len(placements) >= 20
    for answer, shown in placements:
        lines = shown.strip("\n").splitlines()
        assert len(lines) <= 25, f"{len(lines)} lines after '{answer}':\n{shown}"
        assert lines[0].startswith("you placed "), lines[0]
        cell = answer.split()[-1]
        assert f"on cell {cell} " in lines[0] or f"on cell {cell}:" in lines[0]
        assert re.search(r"^ {2} ?0:", shown, re.M) and "22:" in shown  # your numbered board ...
        assert "player 0 (" not in shown and "player 2 (" not in shown  # ... and nobody else's
    token = next(t for a, t in placements if a.split()[0] != "cube")
    assert re.match(r"you placed \w+ on cell \d+ \([\w ]+, \w\w\): \d+ points?; tokens in hand: ", token.lstrip())


def test_the_whole_table_once_per_turn_and_no_bigger_than_before(three_player_game):
    game, text, person = three_player_game
    my_turns = sum(1 for a, t in person.after if "=== the table ===" in t)
    assert text.count("=== the table ===") == my_turns >= 8
    for table in re.findall(r"=== the table ===\n(.*?)\n\n(?:round|you )", text, re.S):
        lines = table.splitlines()
        # header, central, market (name, points, habitat <= 3), pouch, hand; per player a blank line, the
        # score, other cards, held cards (name, points, placed, habitat <= 3) and 9 board rows; the legend
        assert len(lines) <= 1 + 1 + 5 + 2 + 3 * (1 + 1 + 1 + 6 + 9) + 1 + 3, table
        assert [ln.split(":")[0] for ln in lines if re.match(r"player \d", ln)] == [
            "player 0 (greedy)", "player 2 (random)", "player 1 (you)"]


def test_other_players_turns_in_the_games_words(three_player_game):
    game, text, person = three_player_game
    assert not RAW_QR.search(text), RAW_QR.search(text)
    # a report's head ends with the points (and the gain); the table's player lines go on with the categories
    reports = re.findall(r"^(player [02] \((?:greedy|random)\): \d+ points?(?: \(\+\d+\))?\n(?:  .*\n)*)", text, re.M)
    assert len(reports) >= 2 * 8
    took_cards = 0
    for rep in reports:
        lines = rep.splitlines()
        assert 2 <= len(lines) <= 7, rep
        for ln in lines[1:]:
            assert re.match(r"  (took central space \d \((\w+(, )?)+\)|placed \w+ on cell \d+ \(|took market card \d: |"
                            r"placed a cube from [\w ]+ on cell \d+ \(\d of \d placed\)|kept the )", ln), ln
            m = re.match(r"  took market card \d: ([\w ]+) \(scores ", ln)
            if m:
                assert m.group(1) in CARD_NAMES
                took_cards += 1
        assert sum(ln.startswith("  took central space") for ln in lines) <= 1
        assert sum(ln.startswith("  placed ") and "cube" not in ln for ln in lines) <= 1  # tokens on one line
    assert took_cards > 0


def test_table_and_board_on_request():
    out = io.StringIO()
    person = Person(out, ["table", "t", "board", "quit"])
    play.play(["random"], seat=0, seed=3, input_fn=person, out=out)
    shown = [t for _, t in person.after]
    for k in (1, 2):  # after "table" and "t": the whole table again, with your board last
        assert re.search(r"^player 1 \(random\):.*\n(.*\n)*player 0 \(you\):", shown[k], re.M)
        assert "your moves:" in shown[k]
    assert shown[3].startswith("round 1, your turn (player 0)") and "22:" in shown[3]
    assert "player 1 (" not in shown[3]


# ---- leaving the game ---------------------------------------------------------------------------------

@pytest.mark.parametrize("stdin,reason", [("0\nquit\n", "you quit"), ("0\n", "input ended")])
def test_quit_and_end_of_input_exit_0_with_a_goodbye(stdin, reason):
    p = run_cli("play", "--opponents", "random", "--seed", "2", stdin=stdin)
    assert p.returncode == 0, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{reason}: game abandoned in round 1") and last.endswith("Goodbye.")
    assert "you took central space 0 (" in p.stdout
    assert "Traceback" not in p.stderr and p.stderr.strip() == ""


def test_ctrl_c_exits_130_with_one_line_and_no_traceback(capsys):
    import argparse

    def interrupt(prompt: str) -> str:
        raise KeyboardInterrupt

    args = argparse.Namespace(opponents=["random"], seat=0, side="A", spirits=False, river_loops="rulebook", seed=0)
    assert play.cmd_play(args, input_fn=interrupt, out=io.StringIO()) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted: game abandoned"


def test_quit_returns_the_unfinished_game():
    out = io.StringIO()
    game = play.play(["random"], seed=1, input_fn=Person(out, ["1", "q"]), out=out)
    assert not game.is_over and game.turn == 0
    assert out.getvalue().strip().splitlines()[-1] == "you quit: game abandoned in round 1, 0 points. Goodbye."


# ---- the words ----------------------------------------------------------------------------------------

def test_action_words_and_turn_report():
    g = Game(2, seed=5)
    central = [play.COLOURS[c] for c in g.field("central")[1] if c >= 0]
    assert play.action_words(g, A.take_tokens(1)) == ("take_tokens", f"central space 1 ({', '.join(central)})")
    g.step(A.take_tokens(1))
    c = int(np.flatnonzero(g.field("hand"))[0])
    kind, words = play.action_words(g, A.place_token(c, 7))
    assert kind == "place_token" and words.startswith(f"{play.COLOURS[c]} on cell 7 (")
    card = int(g.field("market")[0])
    assert play.action_words(g, A.take_card(0)) == ("take_card", f"market card 0: {card_name(card)} (scores "
                                                    + " / ".join(map(str, CARDS[card]["points"])) + ")")
    report = play.turn_report(1, "greedy", [("take_tokens", "central space 1 (blue, blue, gray)"),
                                            ("place_token", "blue on cell 3 (water, Wa)"),
                                            ("place_token", "blue on cell 4 (water, Wa)"),
                                            ("take_card", "market card 0: Bear (scores 4 / 10 / 16)"),
                                            ("place_cube", "a cube from Bear on cell 3 (1 of 3 placed)"),
                                            ("place_token", "gray on cell 9 (mountain 1, M1)"),
                                            ("end_turn", "")], 10, 14)
    assert report.splitlines() == [
        "player 1 (greedy): 14 points (+4)",
        "  took central space 1 (blue, blue, gray)",
        "  placed blue on cell 3 (water, Wa), blue on cell 4 (water, Wa)",
        "  took market card 0: Bear (scores 4 / 10 / 16)",
        "  placed a cube from Bear on cell 3 (1 of 3 placed)",
        "  placed gray on cell 9 (mountain 1, M1)"]


def test_solo_with_spirits_says_which_spirit_you_kept():
    out = io.StringIO()
    game = play.play([], seed=2, input_fn=Person(out), out=out, config=GameConfig(1, "B", True))
    kept = int(game.field("spirit_kept")[0])
    assert f"you kept the {card_name(kept)} (" in out.getvalue()


def test_docs_example_of_another_players_turn_has_the_reports_shape():
    """docs/cli.md shows one report; it must read as `turn_report` writes them."""
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text[text.index("## Playing in the terminal"):text.index("## Adding a subcommand")]
    block = section.split("```\n")[1].splitlines()
    assert re.fullmatch(r"player \d \(\w+\): \d+ points \(\+\d+\)", block[0])
    kinds = {"took central space": "take_tokens", "placed a cube": "place_cube", "took market card": "take_card",
             "placed": "place_token"}
    done = [(next(k for w, k in kinds.items() if ln[2:].startswith(w)), ln[2:].split(" ", 1)[1]) for ln in block[1:]]
    p, name, after, gain = re.match(r"player (\d) \((\w+)\): (\d+) points \(\+(\d+)\)", block[0]).groups()
    assert play.turn_report(int(p), name, done, int(after) - int(gain), int(after)).splitlines() == block


def test_an_illegal_placement_says_why():
    g = Game(2, seed=5)
    g.step(A.take_tokens(1))
    legal = g.legal_actions()
    menu, numbered = play.moves_menu(g, legal)
    held = {play.COLOURS[c] for c in np.flatnonzero(g.field("hand"))}
    missing = next(c for c in play.COLOURS if c not in held)
    assert play.parse_move(f"{missing} 3", numbered, legal) == (
        f"{missing} on cell 3 is not a legal move now: you hold no {missing} token")
    assert play.parse_move("cube 0 3", numbered, legal) == (
        "a cube from held card 0 on cell 3 is not a legal move now: held card 0 takes no cube now")
    assert g.field("hand")[play.COLOURS.index("blue")] == 2  # space 1 of seed 5: green, blue, blue
    g.step(A.place_token(play.COLOURS.index("blue"), 3))
    legal = g.legal_actions()
    cells = [A.decode(a)[2] for a in legal if A.decode(a)[:2] == ("place_token", play.COLOURS.index("blue"))]
    assert 3 not in cells  # nothing goes on water
    assert play.parse_move("blue 3", play.moves_menu(g, legal)[1], legal) == (
        "blue on cell 3 is not a legal move now: it can go on cell " + " ".join(map(str, cells)))
