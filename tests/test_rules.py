"""The rules, driven through `Game.step`: turn structure, stacking, habitats and cubes, end of game, solo.

Positions are sometimes written into the state (see conftest), but every rule under test is exercised by
stepping actions and checking what the rules text says must follow.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import COLOURS, cell, clear_board, code_of, give_hand, hold_card, rule_after_table, set_cell

from harmonies_env import actions as A
from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.cards import CUBES_ON_CARD, habitat_placements
from harmonies_env.data import CARDS, LABELS
from harmonies_env.game import Game, IllegalActionError
from harmonies_env.stacks import STACKS

RED, GRAY, YELLOW, GREEN = (COLOURS.index(c) for c in ("red", "gray", "yellow", "green"))
LABEL_STACK = {"blue": ("blue",), "yellow": ("yellow",), "tree1": ("green",), "tree2": ("brown", "green"),
               "tree3": ("brown", "brown", "green"), "mountain1": ("gray",), "mountain2": ("gray", "gray"),
               "mountain3": ("gray", "gray", "gray"), "building": ("brown", "red")}


def kinds(g: Game) -> set[str]:
    return {A.decode(a)[0] for a in g.legal_actions()}


def place_any(g: Game, n: int = 3) -> None:
    """Place n held tokens on the first legal cells."""
    for _ in range(n):
        a = next(a for a in g.legal_actions() if A.decode(a)[0] == "place_token")
        g.step(a)


def play_turn(g: Game, space: int | None = None) -> None:
    """Take a central space (the first non-empty one by default), place what can be placed, end the turn."""
    if space is None:
        space = next(a for a in g.legal_actions() if a < A.PLACE_TOKEN)
    g.step(A.take_tokens(space))
    while A.END_TURN not in g.legal_actions():
        place_any(g, 1)
    g.step(A.END_TURN)


def build_habitat(g: Game, player: int, card: int, k: int = 0) -> int:
    """Write the k-th placement of a card's pattern onto a board; returns its cube cell."""
    placed, cube_cell = habitat_placements(g.side, card)[k]
    for i, cls in placed:
        set_cell(g, player, i, *LABEL_STACK[LABELS[cls]])
    return cube_cell


# ---- turn structure --------------------------------------------------------------------------------------
def test_tokens_are_taken_exactly_once_and_all_three_placed_before_the_turn_ends() -> None:
    g = Game(2, "A", seed=11)
    with pytest.raises(IllegalActionError, match="before tokens are taken"):
        g.step(A.END_TURN)
    central = g.field("central")[2].copy()
    g.step(A.take_tokens(2))
    assert (g.field("central")[2] == -1).all()
    assert g.field("hand").sum() == 3 and sorted(np.repeat(np.arange(6), g.field("hand"))) == sorted(central)
    with pytest.raises(IllegalActionError, match="already taken"):
        g.step(A.take_tokens(0))
    assert not kinds(g) & {"take_tokens", "end_turn"}
    for k in range(3):
        with pytest.raises(IllegalActionError, match="held token can still be placed"):
            g.step(A.END_TURN)
        place_any(g, 1)
        assert g.field("hand").sum() == 2 - k
    with pytest.raises(IllegalActionError, match="no token of that colour"):
        g.step(A.place_token(0, 0))
    assert A.END_TURN in g.legal_actions()
    assert sum(len(STACKS[c]) for c in g.field("stack")[0]) == 3
    g.step(A.END_TURN)
    assert g.current_player == 1


def test_one_card_per_turn_and_only_with_fewer_than_4_incomplete_cards() -> None:
    g = Game(2, "A", seed=3)
    market = g.field("market").copy()
    g.step(A.take_card(1))
    assert g.field("slot")[0, 0] == market[1] and g.field("market")[1] == -1
    assert g.field("cubes_placed")[0, market[1]] == 0
    with pytest.raises(IllegalActionError, match="already taken this turn"):
        g.step(A.take_card(0))
    assert "take_card" not in kinds(g)
    play_turn(g)
    assert g.field("market")[1] >= 0, "the market is refilled at the end of the turn"
    play_turn(g)
    # player 0 again, a new turn: a card may be taken again, unless 4 incomplete cards are held
    assert "take_card" in kinds(g)
    for card in (market[0], market[2], market[3]):
        hold_card(g, 0, int(card))
    S.field(g._state, "market")[:] = [10, 11, 12, 13, 14]
    assert "take_card" not in kinds(g)
    with pytest.raises(IllegalActionError, match="4 incomplete cards"):
        g.step(A.take_card(0))


def test_an_incomplete_kept_spirit_counts_toward_the_4_and_frees_its_slot_when_its_cube_is_placed() -> None:
    g = Game(2, "A", spirits=True, seed=5)
    spirit = int(g.field("spirit_dealt")[0, 1])
    g.step(A.keep_spirit(1))
    for card in (1, 2, 3):
        hold_card(g, 0, card)
    S.field(g._state, "market")[:3] = [4, 5, 6]
    assert "take_card" not in kinds(g)
    cube = build_habitat(g, 0, spirit)
    g.step(A.place_cube(0, cube))  # the Spirit cube completes the Spirit card
    assert g.field("slot")[0, 0] == -1 and g.field("animal_cubes")[0] == 0
    assert "take_card" in kinds(g)
    g.step(A.take_card(0))


def test_spirit_choice_is_forced_first_keeps_one_and_returns_the_other() -> None:
    g = Game(3, "B", spirits=True, seed=9)
    dealt = g.field("spirit_dealt").copy()
    assert len({int(x) for x in dealt[:3].ravel()}) == 6
    assert g.legal_actions() == [A.keep_spirit(0), A.keep_spirit(1)]
    with pytest.raises(IllegalActionError, match="Spirit card must be chosen"):
        g.step(A.take_tokens(0))
    g.step(A.keep_spirit(0))
    assert g.field("spirit_kept")[0] == dealt[0, 0]
    assert g.field("cubes_placed")[0, dealt[0, 1]] == -1, "the other Spirit goes back to the box"
    assert list(g.field("slot")[0]).count(dealt[0, 0]) == 1
    with pytest.raises(IllegalActionError, match="no Spirit card to choose"):
        g.step(A.keep_spirit(1))
    assert "keep_spirit" not in kinds(g)
    play_turn(g)
    assert g.legal_actions() == [A.keep_spirit(0), A.keep_spirit(1)], "each player chooses on their first turn"
    g.step(A.keep_spirit(1))
    assert g.field("spirit_kept")[1] == dealt[1, 1]
    play_turn(g)
    g.step(A.keep_spirit(0))
    play_turn(g)
    assert "keep_spirit" not in kinds(g), "the choice happens once, on the first turn only"


def test_cubes_any_number_of_times_interleaved_with_placements() -> None:
    g = Game(2, "A", seed=21)
    slot = hold_card(g, 0, 23)  # Fennec Fox: yellow, gray, gray in a line, cube on the far gray
    a = build_habitat(g, 0, 23, 0)
    b_cells, b = next((pl, c) for pl, c in habitat_placements("A", 23)
                      if not {i for i, _ in pl} & set(np.flatnonzero(g.field("stack")[0])))
    g.step(A.place_cube(slot, a))  # before taking tokens
    g.step(A.take_tokens(0))
    hand = S.field(g._state, "hand")
    hand[:] = 0
    hand[GRAY] = 2
    hand[YELLOW] = 1
    for i, cls in b_cells:  # build the second habitat by placing tokens, one cube in between
        g.step(A.place_token(YELLOW if LABELS[cls] == "yellow" else GRAY, i))
        if hand.sum() == 2:
            assert A.place_cube(slot, b) not in g.legal_actions()
    g.step(A.place_cube(slot, b))
    assert g.field("cubes_placed")[0, 23] == 2 and g.field("cubes")[0] == (1 << a) | (1 << b)
    with pytest.raises(IllegalActionError, match="habitat does not stand there"):
        g.step(A.place_cube(slot, a))
    g.step(A.END_TURN)


def test_refills_at_end_of_turn() -> None:
    g = Game(3, "A", seed=4)
    pouch = int(g.field("pouch").sum())
    assert pouch == 105 and (g.field("central")[:5] >= 0).all() and (g.field("market") >= 0).all()
    g.step(A.take_tokens(3))
    g.step(A.take_card(2))
    place_any(g)
    before = g.field("central").copy()
    g.step(A.END_TURN)
    assert (g.field("central")[3] >= 0).all() and g.field("pouch").sum() == pouch - 3
    assert np.array_equal(np.delete(g.field("central"), 3, 0), np.delete(before, 3, 0))
    assert (g.field("market") >= 0).all() and g.field("deck_count") == 32 - 5 - 1


# ---- stacking through step -------------------------------------------------------------------------------
def test_every_stack_and_colour_through_step_follows_the_stacking_rule() -> None:
    after = rule_after_table()
    base = Game(2, "A", seed=1)
    for code, stack in enumerate(STACKS):
        for c, colour in enumerate(COLOURS):
            g = base.clone()
            set_cell(g, 0, 7, *stack)
            give_hand(g, colour)
            before = g.state.copy()
            if after[code, c] >= 0:
                g.step(A.place_token(c, 7))
                assert STACKS[g.field("stack")[0, 7]] == stack + (colour,)
            else:
                with pytest.raises(IllegalActionError, match="cannot take a token of that colour"):
                    g.step(A.place_token(c, 7))
                assert g.state.tobytes() == before.tobytes()
    # spot checks of the rules text, in words
    assert after[code_of("blue"), GRAY] < 0 and after[code_of("yellow"), YELLOW] < 0
    assert after[code_of("green"), GREEN] < 0 and after[code_of("brown", "green"), GREEN] < 0
    assert after[code_of("brown", "brown"), RED] < 0 and after[code_of("red"), RED] >= 0
    assert after[code_of("gray", "gray"), RED] < 0 and after[code_of("gray", "gray", "gray"), GRAY] < 0


def test_no_token_on_a_cube_and_nothing_off_the_board() -> None:
    g = Game(2, "A", seed=2)
    slot = hold_card(g, 0, 23)
    cube = build_habitat(g, 0, 23)
    g.step(A.place_cube(slot, cube))
    give_hand(g, "gray", "gray", "gray")
    before = g.state.copy()
    with pytest.raises(IllegalActionError, match="holds an animal cube"):
        g.step(A.place_token(GRAY, cube))
    with pytest.raises(IllegalActionError, match="not on this board"):
        g.step(A.place_token(GRAY, 24))  # Side A has 23 cells
    assert g.state.tobytes() == before.tobytes()
    assert A.place_token(GRAY, cube) not in g.legal_actions()


# ---- habitats and cubes ----------------------------------------------------------------------------------
def test_fennec_fox_then_shrew_rulebook_sequence() -> None:
    """Card 23 Fennec Fox, then red covers a gray of its habitat: the fox's cube stays; card 9 Shrew fits."""
    g = Game(2, "A", seed=8)
    fox = hold_card(g, 0, 23)
    shrew = hold_card(g, 0, 9)
    b = cell(g, 1, 1)
    y1, far, y2 = cell(g, 0, 1), cell(g, 2, 1), cell(g, 1, 2)
    set_cell(g, 0, y1, "yellow")
    set_cell(g, 0, b, "gray")
    set_cell(g, 0, far, "gray")
    set_cell(g, 0, y2, "yellow")
    assert A.place_cube(fox, far) in g.legal_actions()
    assert not any(A.decode(a)[:2] == ("place_cube", shrew) for a in g.legal_actions()), "no Building yet"
    g.step(A.place_cube(fox, far))
    S.field(g._state, "central")[0] = [RED, YELLOW, YELLOW]
    g.step(A.take_tokens(0))
    g.step(A.place_token(RED, b))  # red on the fox's gray: now a Building, the fox habitat is broken
    assert g.field("stack")[0, b] == code_of("gray", "red")
    assert g.field("cubes")[0] == 1 << far, "a placed cube is final"
    assert g.field("cubes_placed")[0, 23] == 1
    assert A.place_cube(shrew, b) in g.legal_actions()
    g.step(A.place_cube(shrew, b))
    assert g.field("cubes")[0] == (1 << far) | (1 << b)
    sc = g.scores()[0]
    assert sc["animals"] == CARDS[23]["points"][0] + CARDS[9]["points"][0]


def test_cubes_come_off_the_bottom_and_a_complete_card_frees_its_slot() -> None:
    g = Game(2, "A", seed=13)
    card = 27  # two cube spaces
    slot = hold_card(g, 0, card)
    places = habitat_placements("A", card)
    used: set[int] = set()
    expected = []
    for pl, cube in places:
        cells = {i for i, _ in pl}
        if cells & used:
            continue
        used |= cells
        build = [(i, cls) for i, cls in pl]
        for i, cls in build:
            set_cell(g, 0, i, *LABEL_STACK[LABELS[cls]])
        g.step(A.place_cube(slot, cube))
        expected.append(CARDS[card]["points"][len(expected)])
        assert g.scores()[0]["animals"] == expected[-1], "the top-most uncovered space scores"
        if len(expected) == CUBES_ON_CARD[card]:
            break
    assert g.field("slot")[0, slot] == -1, "the complete card no longer takes a slot"
    assert g.field("cubes_placed")[0, card] == 2 and g.field("animal_cubes")[0] == 2
    assert not any(A.decode(a)[0] == "place_cube" for a in g.legal_actions())


# ---- end of game -----------------------------------------------------------------------------------------
def fill(g: Game, player: int, n: int) -> None:
    """Put a yellow on the first n cells of a board."""
    for i in range(n):
        set_cell(g, player, i, "yellow")


@pytest.mark.parametrize("num_players,trigger_seat", [(2, 0), (3, 1), (4, 3), (4, 0)])
def test_board_trigger_finishes_the_round(num_players: int, trigger_seat: int) -> None:
    g = Game(num_players, "A", seed=30 + trigger_seat)
    for _ in range(trigger_seat):
        play_turn(g)
    fill(g, trigger_seat, 23 - 5)
    g.step(A.take_tokens(0))
    give_hand(g, "blue", "blue", "blue")  # blue goes only on empty cells
    place_any(g, 2)
    assert g.field("end_trigger") == 0
    place_any(g, 1)
    assert np.count_nonzero(g.field("stack")[trigger_seat][:23] == 0) == 2
    assert g.field("end_trigger") == 0, "the trigger is checked at the end of the turn"
    g.step(A.END_TURN)
    assert g.field("end_trigger") == 2
    while not g.is_over:
        play_turn(g)
    assert g.turn == num_players, "every player played the same number of turns"


def test_three_empty_cells_do_not_trigger() -> None:
    g = Game(2, "B", seed=31)
    fill(g, 0, 25 - 6)
    g.step(A.take_tokens(0))
    give_hand(g, "blue", "blue", "blue")
    place_any(g, 3)
    g.step(A.END_TURN)
    assert g.field("end_trigger") == 0 and not g.is_over


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_pouch_runs_out_after_exactly_35_refills_then_triggers(num_players: int) -> None:
    g = Game(num_players, "A", seed=40 + num_players)
    assert g.field("pouch").sum() == 105
    for t in range(35):
        clear_board(g, g.current_player)
        play_turn(g)
        assert not g.is_over and g.field("end_trigger") == 0
        assert g.field("pouch").sum() == 105 - 3 * (t + 1)
        assert rules.token_total(g.state.copy()) == 120
    assert g.field("pouch").sum() == 0 and (g.field("central") >= 0).sum() == 15
    clear_board(g, g.current_player)
    play_turn(g)  # the 36th turn's refill cannot be done
    assert g.field("end_trigger") == 1
    assert g.is_over, "turn 36 is played by the last seat, so the round is over"
    assert g.turn == 36 and g.turn % num_players == 0


def test_pouch_trigger_mid_round_lets_the_others_finish() -> None:
    g = Game(3, "A", seed=50)
    S.field(g._state, "discarded")[:] = g.field("pouch")
    S.field(g._state, "pouch")[:] = 0
    S.field(g._state, "pouch")[0] = 3  # one refill left
    S.field(g._state, "discarded")[0] -= 3
    play_turn(g)
    assert g.field("end_trigger") == 0
    play_turn(g)
    assert g.field("end_trigger") == 1 and not g.is_over and g.current_player == 2
    play_turn(g)
    assert g.is_over and g.turn == 3


def test_solo_setup_leftovers_13_turns_and_replace_card() -> None:
    g = Game(1, "A", seed=60)
    assert g.field("num_spaces") == 3 and g.field("num_market") == 3
    assert (g.field("central")[:3] >= 0).all() and (g.field("central")[3:] == -1).all()
    assert (g.field("market")[:3] >= 0).all() and (g.field("market")[3:] == -1).all()
    assert g.field("pouch").sum() == 120 - 9
    # replacing a card: only once the tokens are placed, only if no card was taken, and it ends the turn
    g.step(A.take_tokens(1))
    assert "solo_replace" not in kinds(g)
    place_any(g)
    replace = sorted(a for a in g.legal_actions() if A.decode(a)[0] == "solo_replace")
    assert replace == [A.solo_replace(m) for m in range(3)]
    market = g.field("market").copy()
    deck_top = int(g.field("deck")[g.field("deck_count") - 1])
    discarded = g.field("discarded").sum()
    g.step(A.solo_replace(1))
    assert g.turn == 1 and g.field("market")[1] == deck_top and g.field("market")[0] == market[0]
    assert market[1] not in g.field("market") and market[1] not in g.field("deck")
    assert g.field("discarded").sum() == discarded + 6, "the 6 leftover tokens are discarded"
    assert (g.field("central")[:3] >= 0).all() and g.field("pouch").sum() == 111 - 9
    # a card taken this turn: no replacement
    g.step(A.take_tokens(0))
    g.step(A.take_card(0))
    place_any(g)
    assert "solo_replace" not in kinds(g)
    with pytest.raises(IllegalActionError, match="card was already taken"):
        g.step(A.solo_replace(1))
    g.step(A.END_TURN)
    for t in range(2, 12):
        clear_board(g, 0)
        play_turn(g)
        assert not g.is_over and g.field("pouch").sum() == 111 - 9 * (t + 1)
    assert g.field("pouch").sum() == 3
    clear_board(g, 0)
    play_turn(g)
    assert g.turn == 13 and g.is_over and g.field("end_trigger") == 1
    assert rules.token_total(g.state.copy()) == 120


def test_solo_replace_refused_in_multiplayer() -> None:
    g = Game(2, "A", seed=61)
    g.step(A.take_tokens(0))
    place_any(g)
    assert "solo_replace" not in kinds(g)
    with pytest.raises(IllegalActionError, match="solo-only"):
        g.step(A.solo_replace(0))


def solo_with_animal_points(side: str, spirit: int | None) -> Game:
    """A solo game on an empty board whose cards score 130: 18+18+17*5 complete + card 1 at 2 cubes (9)."""
    g = Game(1, side, spirits=spirit is not None, seed=70)
    if spirit is not None:
        S.field(g._state, "spirit_dealt")[0, 0] = spirit
        g.step(A.keep_spirit(0))
    for card in (13, 20, 9, 10, 15, 29, 31):
        S.set_cubes_placed(g._state, 0, card, CUBES_ON_CARD[card])
    hold_card(g, 0, 1)
    S.set_cubes_placed(g._state, 0, 1, 2)
    return g


def test_solo_suns_rulebook_example() -> None:
    g = solo_with_animal_points("A", spirit=33)  # Lion Spirit, its cube not placed
    assert g.scores()[0]["total"] == 130
    assert g.suns() == 7, "130 points = 5 suns, Side A +1, Lion (groups) +1"
    assert solo_with_animal_points("A", None).suns() == 8, "no Spirit: +2"
    assert solo_with_animal_points("A", 35).suns() == 6, "Deer (a count Spirit): +0"
    gb = solo_with_animal_points("B", 33)
    assert gb.scores()[0]["total"] == 135  # + one Island on the empty Side B board
    assert gb.suns() == 6
    with pytest.raises(ValueError, match="solo"):
        Game(2, seed=1).suns()


# ---- tie-breaks ------------------------------------------------------------------------------------------
def test_winner_by_points_then_animal_cubes_spirit_cube_excluded_else_shared() -> None:
    g = Game(3, "A", spirits=True, seed=80)
    # seat 0: card 27 at 1 cube (4 points) + the Tortoise Spirit's cube (2 per blue: 0 on this board);
    # seat 1: nothing; seat 2: card 5 at 2 cubes (4 points)
    S.field(g._state, "spirit_kept")[0] = 42
    S.set_cubes_placed(g._state, 0, 42, 1)
    S.set_cubes_placed(g._state, 0, 27, 1)
    S.field(g._state, "animal_cubes")[0] = 1
    S.set_cubes_placed(g._state, 2, 5, 2)
    S.field(g._state, "animal_cubes")[2] = 2
    assert [s["total"] for s in g.scores()] == [4, 0, 4]
    assert g.winners() == [2], "equal points: most animal cubes; the Spirit cube does not count"
    S.set_cubes_placed(g._state, 0, 27, 2)
    S.field(g._state, "animal_cubes")[0] = 2
    S.set_cubes_placed(g._state, 0, 42, -1)
    S.set_cubes_placed(g._state, 0, 6, 2)  # seat 0 now 9 + 4 (each card has one holder: card 6 scores as card 5)
    assert g.winners() == [0]
    S.set_cubes_placed(g._state, 2, 1, 2)  # seat 2 now 4 + 9 (card 1 at 2 cubes scores as card 27)
    S.field(g._state, "animal_cubes")[2] = 4
    S.field(g._state, "animal_cubes")[0] = 4
    assert g.scores()[0]["total"] == g.scores()[2]["total"]
    assert g.winners() == [0, 2], "same points and cubes: shared victory"
