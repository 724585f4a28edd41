"""Explicit chance (`Game(..., explicit_chance=True)`, `harmonies_env.chance`): sampled chance replays the default
game, every node's probabilities are exact and sum to 1, outcomes come from public counts, errors leave the game."""
from __future__ import annotations

import itertools
import pickle
from fractions import Fraction

import numpy as np
import pytest

from harmonies_env import chance as C
from harmonies_env import rules
from harmonies_env.cards import FIRST_SPIRIT, NUM_CARDS
from harmonies_env.game import Game, IllegalActionError, determinize
from harmonies_env.validate import check_state

CONFIGS = [(n, side, sp) for n in (1, 2, 3, 4) for side in "AB" for sp in (False, True)]


def sample_all(g: Game) -> None:
    while g.is_chance_node():
        g.sample_chance()


def test_sampled_chance_replays_the_default_game_for_100_seeds() -> None:
    for seed in range(100):
        n, side, sp = CONFIGS[seed % len(CONFIGS)]
        default = Game(n, side, sp, seed)
        explicit = Game(n, side, sp, seed, explicit_chance=True)
        assert explicit.is_chance_node() and explicit.legal_actions() == []
        sample_all(explicit)
        rng = np.random.default_rng(seed)
        while True:
            assert np.array_equal(default.state, explicit.state), (seed, default.turn)
            if default.is_over:
                break
            legal = default.legal_actions()
            assert explicit.legal_actions() == legal
            a = legal[rng.integers(len(legal))]
            default.step(a)
            explicit.step(a)
            sample_all(explicit)
        assert explicit.is_over and explicit.scores() == default.scores()
        assert Game.replay(explicit.record()).state.tobytes() == default.state.tobytes()


def play_with_applied_chance(n: int, side: str, sp: bool, seed: int, check) -> Game:
    """A whole game whose chance is dealt by apply_chance from the listed probabilities (numpy's generator)."""
    g = Game(n, side, sp, seed, explicit_chance=True)
    rng = np.random.default_rng(seed + 1000)
    while not g.is_over:
        if g.is_chance_node():
            outcomes = g.chance_outcomes()
            check(g, outcomes)
            ids, probs = zip(*outcomes)
            g.apply_chance(ids[rng.choice(len(ids), p=probs)])
        else:
            check_state(g.state.copy())  # every decision node is a valid position
            assert rules.token_total(g._state) == 120
            legal = g.legal_actions()
            g.step(legal[rng.integers(len(legal))])
    return g


@pytest.mark.parametrize("n,side,sp", [(1, "A", True), (2, "B", False), (3, "A", True), (4, "B", True)])
def test_every_chance_node_has_positive_probabilities_summing_to_1(n: int, side: str, sp: bool) -> None:
    kinds = set()

    def check(g: Game, outcomes: list[tuple[int, float]]) -> None:
        kinds.add(g.chance_event()[0])
        ids = [o for o, _ in outcomes]
        assert ids == sorted(set(ids)) and all(0 <= o < C.NUM_OUTCOMES for o in ids)
        assert all(p > 0 for _, p in outcomes)
        assert abs(sum(p for _, p in outcomes) - 1.0) <= 1e-12

    g = play_with_applied_chance(n, side, sp, 3, check)
    assert g.is_over and g.seed == -1
    assert kinds == ({"tokens", "card", "spirit"} if sp else {"tokens", "card"})
    with pytest.raises(ValueError, match="apply_chance"):
        g.record()


def exact_draw_probabilities(pouch: list[int], k: int) -> dict[tuple[int, ...], Fraction]:
    """P(multiset of colours) for k ordered draws without replacement, summed over every draw sequence."""
    out: dict[tuple[int, ...], Fraction] = {}
    for seq in itertools.product(range(6), repeat=k):
        left, p = list(pouch), Fraction(1)
        for c in seq:
            if left[c] == 0:
                p = Fraction(0)
                break
            p *= Fraction(left[c], sum(left))
            left[c] -= 1
        if p:
            key = tuple(sorted(seq))
            out[key] = out.get(key, Fraction(0)) + p
    return out


def test_token_outcomes_are_the_hypergeometric_of_the_pouch_counts() -> None:
    g = Game(2, "A", False, 11, explicit_chance=True)
    sample_all(g)
    rng = np.random.default_rng(0)
    checked = 0
    while not g.is_over and checked < 3:
        if g.is_chance_node():
            if g.chance_event()[0] == "tokens":
                pouch = g.field("pouch").tolist()
                want = exact_draw_probabilities(pouch, min(3, sum(pouch)))
                got = {tuple(int(x) for x in C.MULTISETS[o] if x >= 0): p for o, p in g.chance_outcomes()}
                assert set(got) == set(want)
                assert all(abs(got[k] - float(want[k])) < 1e-15 for k in want)
                checked += 1
            g.sample_chance()
        else:
            legal = g.legal_actions()
            g.step(legal[rng.integers(len(legal))])
    assert checked == 3


def test_outcomes_come_from_public_counts_only() -> None:
    """The draw pile's order, the pouch's order (the generator) and unseen Spirits never change the outcomes."""
    g = Game(3, "A", True, 21, explicit_chance=True)
    sample_all(g)
    rng = np.random.default_rng(1)
    nodes = 0
    while not g.is_over and nodes < 12:
        if g.is_chance_node():
            for seed in (1, 2):
                other = determinize(g, g.current_player, seed)  # hidden order resampled, public counts kept
                assert other.chance_outcomes() == g.chance_outcomes()
            nodes += 1
            g.sample_chance()
        else:
            legal = g.legal_actions()
            g.step(legal[rng.integers(len(legal))])
    assert nodes == 12
    # a card node's outcomes are the draw pile's contents, uniform
    h = Game(2, "B", False, 4, explicit_chance=True)
    for _ in range(5):
        h.sample_chance()  # the five central spaces
    assert h.chance_event() == ("card", 0)
    cards = sorted(o - C.CARD_OUTCOME + 1 for o, _ in h.chance_outcomes())
    assert cards == list(range(1, 33)) and {p for _, p in h.chance_outcomes()} == {1 / 32}


def test_spirit_nodes_deal_each_seat_two_distinct_spirits() -> None:
    g = Game(4, "A", True, 8, explicit_chance=True)
    while g.chance_event()[0] != "spirit":
        g.sample_chance()
    dealt = []
    while g.is_chance_node():
        kind, where = g.chance_event()
        assert kind == "spirit" and where == len(dealt)
        outs = [o - C.CARD_OUTCOME + 1 for o, _ in g.chance_outcomes()]
        assert outs == [c for c in range(FIRST_SPIRIT, NUM_CARDS + 1) if c not in dealt]
        card = outs[-1]
        g.apply_chance(C.CARD_OUTCOME + card - 1)
        dealt.append(card)
    assert g.field("spirit_dealt").ravel().tolist() == dealt and g.legal_actions() == [260, 261]
    sampled = Game(4, "A", True, 8, explicit_chance=True)
    sample_all(sampled)  # after the set-up the chance array keeps nothing hidden (the Spirits' deal order)
    assert not sampled._chance[C.C_POOL_SHUFFLED:].any()


def test_errors_name_the_problem_and_leave_the_game_unchanged() -> None:
    g = Game(2, "A", False, 5, explicit_chance=True)
    before = g.state.tobytes()
    with pytest.raises(IllegalActionError, match="chance node"):
        g.step(0)
    with pytest.raises(ValueError, match="not possible"):
        g.apply_chance(C.CARD_OUTCOME)  # a card outcome at a tokens node
    with pytest.raises(ValueError, match="integer"):
        g.apply_chance(True)
    with pytest.raises(ValueError, match="0..125"):
        g.apply_chance(C.NUM_OUTCOMES)
    assert g.state.tobytes() == before and g.seed == 5
    sample_all(g)
    with pytest.raises(ValueError, match="not a chance node"):
        g.chance_outcomes()
    with pytest.raises(ValueError, match="explicit_chance=True"):
        Game(2, seed=1).sample_chance()
    with pytest.raises(ValueError, match="explicit_chance"):
        Game(2, seed=1, explicit_chance=1)
    g.step(0)  # take central space 0, then end the turn once every token is placed or unplaceable
    while not g.is_chance_node():
        g.step(g.legal_actions()[0])
    assert g.chance_event() == ("tokens", 0)
    spent = [o for o in range(C.MULTISET_START[3], C.MULTISET_START[4]) if o not in dict(g.chance_outcomes())]
    if spent:  # a colour combination the pouch can no longer give
        before = g.state.tobytes()
        with pytest.raises(ValueError, match="not possible"):
            g.apply_chance(spent[0])
        assert g.state.tobytes() == before


def test_copies_continue_identically_mid_chance() -> None:
    g = Game(2, "A", True, 9, explicit_chance=True)
    g.sample_chance()
    copies = [g.clone(), pickle.loads(pickle.dumps(g))]
    sample_all(g)
    for c in copies:
        assert c.is_chance_node()
        sample_all(c)
        assert c.state.tobytes() == g.state.tobytes()
    assert Game(2, "A", True, 9).state.tobytes() == g.state.tobytes()


def test_a_state_set_by_hand_is_a_decision_in_explicit_mode() -> None:
    g = Game(2, "A", False, 2, explicit_chance=True)
    g.set_state(Game(2, "B", False, 7).state)
    assert g.explicit_chance and not g.is_chance_node() and g.legal_actions()
    g.step(0)
    while not g.is_chance_node():
        g.step(g.legal_actions()[-1])
    assert g.chance_event()[0] == "tokens"
    assert g.describe_chance(g.sample_chance()).startswith("tokens ")


def test_multiset_table() -> None:
    assert C.MULTISETS.shape == (C.TOKEN_OUTCOMES, 3) and C.TOKEN_OUTCOMES == 84
    for o, ms in enumerate(C.MULTISETS):
        k = int(C.MULTISET_SIZE[o])
        assert C.MULTISET_START[k] <= o < C.MULTISET_START[k + 1]
        assert list(ms[:k]) == sorted(ms[:k]) and all(ms[k:] == -1)
