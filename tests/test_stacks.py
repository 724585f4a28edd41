"""Stacking: the engine's 15 stack codes and (stack, colour) transitions against the rules' list."""
from __future__ import annotations

import itertools

import pytest
import reference as ref

from harmonies_env import stacks


def test_stack_codes_are_exactly_the_15_legal_stacks_of_the_rules():
    assert stacks.NUM_STACKS == 15
    assert tuple(stacks.STACKS) == ref.LEGAL_STACKS
    assert [tuple(s) for s in ref.DATA["stacking"]["legal_stacks_bottom_to_top"]] == list(ref.LEGAL_STACKS)


def test_rules_bullets_reach_exactly_the_15_legal_stacks():
    """Closing the empty cell under rules.md's placement bullets gives the listed 15 stacks and no other."""
    reached = {()}
    frontier = [()]
    while frontier:
        s = frontier.pop()
        for colour in ref.COLOURS:
            if ref.can_place(s, colour) and s + (colour,) not in reached:
                reached.add(s + (colour,))
                frontier.append(s + (colour,))
    assert reached == set(ref.LEGAL_STACKS)


@pytest.mark.parametrize("code,stack", list(enumerate(ref.LEGAL_STACKS)))
def test_transition_table_row(code, stack):
    for c, colour in enumerate(ref.COLOURS):
        after = stacks.STACK_AFTER[code, c]
        if ref.can_place(stack, colour):
            assert after >= 0, f"{colour} on {stack} must be legal"
            assert stacks.STACKS[after] == stack + (colour,)
        else:
            assert after == -1, f"{colour} on {stack} must be illegal, table gives {stacks.STACKS[after]}"
        assert bool((stacks.ACCEPTS[c] >> code) & 1) == ref.can_place(stack, colour)


def test_colour_codes_top_and_height():
    assert [stacks.colour_code(c) for c in ref.COLOURS] == list(range(6))
    assert (stacks.BLUE, stacks.GRAY, stacks.BROWN, stacks.GREEN, stacks.YELLOW, stacks.RED) == tuple(range(6))
    for code, s in enumerate(ref.LEGAL_STACKS):
        assert stacks.HEIGHT[code] == len(s)
        assert stacks.TOP_COLOUR[code] == (ref.COLOURS.index(s[-1]) if s else -1)


def test_named_stack_groups():
    assert {stacks.STACKS[c] for c in stacks.TREE_STACKS} == {s for s in ref.LEGAL_STACKS if ref.is_tree(s)}
    assert {stacks.STACKS[c] for c in stacks.MOUNTAIN_STACKS} == {s for s in ref.LEGAL_STACKS if ref.is_mountain(s)}
    assert {stacks.STACKS[c] for c in stacks.BUILDING_STACKS} == {s for s in ref.LEGAL_STACKS if ref.is_building(s)}
    assert stacks.stack_kind(stacks.stack_code(["red"])) == "red"  # a lone red is not a building
    assert stacks.stack_kind(stacks.stack_code(["gray", "red"])) == "building"
    assert stacks.stack_kind(stacks.stack_code(["brown", "brown", "green"])) == "tree 3"
    assert stacks.stack_kind(stacks.stack_code(["gray", "gray"])) == "mountain 2"


def test_stack_code_round_trip():
    for code, s in enumerate(ref.LEGAL_STACKS):
        assert stacks.stack_code(list(s)) == code
        assert stacks.stack_code(tuple(s)) == code


def test_stack_code_rejects_every_impossible_stack_up_to_height_4():
    legal = set(ref.LEGAL_STACKS)
    for h in range(1, 5):
        for s in itertools.product(ref.COLOURS, repeat=h):
            if s in legal:
                continue
            with pytest.raises(ValueError, match=r"impossible stack") as e:
                stacks.stack_code(list(s))
            assert str(list(s)) in str(e.value)


@pytest.mark.parametrize("bad", [["green", "brown"], ["blue", "blue"], ["red", "red", "red"], ["gray", "red", "red"],
                                 ["brown", "brown", "brown"], ["yellow", "green"], ["gray"] * 4])
def test_stack_code_message_names_the_stack(bad):
    with pytest.raises(ValueError, match="impossible stack") as e:
        stacks.stack_code(bad)
    assert str(bad) in str(e.value)


def test_unknown_colour_is_named():
    with pytest.raises(ValueError, match="'purple'"):
        stacks.stack_code(["brown", "purple"])
    with pytest.raises(ValueError, match="'Blue'"):
        stacks.colour_code("Blue")
