"""The Python API of `Game`: errors, configuration checks, copies, descriptions, records, seeds, determinize."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.cards import FIRST_SPIRIT, NUM_CARDS
from harmonies_env.game import Game, IllegalActionError, determinize


def random_actions(g: Game, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(n):
        if g.is_over:
            return
        legal = g.legal_actions()
        g.step(legal[rng.integers(len(legal))])


# ---- illegal actions -------------------------------------------------------------------------------------
@pytest.mark.parametrize("action,reason", [
    (A.END_TURN, "before tokens are taken"),
    (A.place_token(1, 3), "no token of that colour is held"),
    (A.place_cube(2, 4), "no incomplete card is held in that slot"),
    (A.keep_spirit(0), "no Spirit card to choose"),
    (A.solo_replace(0), "before tokens are taken"),
    (268, "outside the action space"),
    (-1, "outside the action space"),
])
def test_illegal_action_names_action_and_reason_and_leaves_state_identical(action: int, reason: str) -> None:
    g = Game(2, "A", seed=5)
    before = g.state.tobytes()
    history = list(g.history)
    with pytest.raises(IllegalActionError) as e:
        g.step(action)
    assert e.value.action == action and reason in e.value.reason
    assert f"action {action}" in str(e.value) and reason in str(e.value)
    if 0 <= action < A.NUM_ACTIONS:
        assert g.describe_action(action) in str(e.value)
    assert g.state.tobytes() == before and g.history == history
    assert isinstance(e.value, ValueError)


def test_every_refused_action_in_a_game_leaves_the_state_byte_identical() -> None:
    g = Game(3, "B", spirits=True, seed=17)
    rng = np.random.default_rng(1)
    while not g.is_over:
        mask = g.action_mask()
        before = g.state.tobytes()
        for a in np.flatnonzero(~mask)[:: 7]:
            with pytest.raises(IllegalActionError):
                g.step(int(a))
            assert g.state.tobytes() == before
        g.step(int(rng.choice(np.flatnonzero(mask))))


def test_non_integer_actions_are_refused() -> None:
    g = Game(seed=1)
    for bad in (1.0, "3", True, None):
        with pytest.raises(IllegalActionError, match="integers"):
            g.step(bad)  # type: ignore[arg-type]


# ---- configuration ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    ({"num_players": 5}, "num_players.*5"),
    ({"num_players": 0}, "num_players"),
    ({"num_players": 2.0}, "num_players"),
    ({"side": "C"}, "side.*'C'"),
    ({"side": "a"}, "side"),
    ({"spirits": "yes"}, "spirits.*'yes'"),
    ({"seed": -1}, "seed.*-1"),
    ({"seed": 2**63}, "seed"),
    ({"seed": 1.5}, "seed"),
])
def test_bad_configuration_fails_at_once_with_a_clear_message(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Game(**kwargs)


# ---- copies, descriptions, records, seeds ----------------------------------------------------------------
def test_clone_is_independent() -> None:
    g = Game(2, "A", spirits=True, seed=3)
    random_actions(g, 20, 1)
    c = g.clone()
    assert c.state.tobytes() == g.state.tobytes() and c.history == g.history
    snapshot = g.state.copy()
    random_actions(c, 30, 2)
    assert np.array_equal(g.state, snapshot) and len(g.history) == 20
    random_actions(g, 5, 3)
    assert len(c.history) == 50


def test_describe_action_is_readable_for_every_action_kind() -> None:
    g = Game(1, "A", spirits=True, seed=4)
    expected = {"take_tokens": "take central space", "place_token": "place ", "take_card": "take market card",
                "place_cube": "place a cube from held card", "keep_spirit": "keep Spirit card",
                "solo_replace": "discard market card", "end_turn": "end the turn"}
    seen = set()
    for a in range(A.NUM_ACTIONS):
        kind = A.decode(a)[0]
        text = g.describe_action(a)
        assert text.startswith(expected[kind]) and text.isprintable(), (a, text)
        seen.add(kind)
    assert seen == set(expected)
    assert "Spirit" in g.describe_action(A.keep_spirit(1))
    assert "(q=" in g.describe_action(A.place_token(1, 0)) and "gray" in g.describe_action(A.place_token(1, 0))
    assert "not on this board" in g.describe_action(A.place_token(1, 24))
    with pytest.raises(ValueError, match="outside the action space"):
        g.describe_action(A.NUM_ACTIONS)


@pytest.mark.parametrize("num_players,side,spirits", [(1, "B", True), (2, "A", False), (4, "B", True)])
def test_record_json_round_trip_replays_identically(num_players: int, side: str, spirits: bool) -> None:
    g = Game(num_players, side, spirits, seed=123)
    random_actions(g, 10_000, 9)
    assert g.is_over
    text = g.to_json()
    rec = json.loads(text)
    assert rec == g.record() and rec["actions"] == g.history
    r = Game.replay(text)
    assert r.state.tobytes() == g.state.tobytes() and r.history == g.history
    assert Game.replay(rec).scores() == g.scores()
    bad = dict(rec, actions=rec["actions"][:3] + [rec["actions"][2]] + rec["actions"][3:])
    with pytest.raises(ValueError, match="#3 does not replay"):
        Game.replay(bad)
    with pytest.raises(ValueError, match="lacks"):
        Game.replay({"seed": 1})


def test_replay_refuses_null_configuration_and_an_option_its_version_cannot_carry() -> None:
    """null num_players / side would replay the defaults' game (2 players, Side A), and a version 1 record cannot
    name river_loops "bga" (only version 2 does): each is refused by name, never replayed as another game."""
    rec = {"version": 1, "num_players": 3, "side": "B", "spirits": False, "seed": 5, "actions": []}
    assert Game.replay(rec).num_players == 3
    for key in ("num_players", "side"):
        with pytest.raises(ValueError, match=f"game record {key} is null"):
            Game.replay({**rec, key: None})
    with pytest.raises(ValueError, match="version 1 cannot carry river_loops 'bga'"):
        Game.replay({**rec, "river_loops": "bga"})
    assert Game.replay({**rec, "version": 2, "river_loops": "bga"}).river_loops == "bga"


def test_same_seed_same_game_and_games_never_disturb_each_other() -> None:
    a, b = Game(3, "A", True, seed=77), Game(3, "A", True, seed=77)
    assert a.state.tobytes() == b.state.tobytes()
    assert Game(3, "A", True, seed=78).state.tobytes() != a.state.tobytes()
    alone = Game(3, "A", True, seed=77)
    random_actions(alone, 10_000, 5)
    # interleave a with another game (b played with other choices) one action at a time
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(6)
    while not a.is_over:
        la = a.legal_actions()
        a.step(la[rng_a.integers(len(la))])
        if not b.is_over:
            lb = b.legal_actions()
            b.step(lb[rng_b.integers(len(lb))])
    assert a.state.tobytes() == alone.state.tobytes()
    assert a.history == alone.history


# ---- determinize -----------------------------------------------------------------------------------------
PUBLIC = ("num_players", "side", "spirits", "num_spaces", "num_market", "stack_words", "bitboard", "cubes", "pouch",
          "central", "market", "deck_count", "slot", "card_held", "spirit_kept", "animal_cubes", "hand",
          "took_tokens", "took_card", "taken_space", "current", "turn", "end_trigger", "game_over", "discarded")


def mid_game(spirits: bool = True, seed: int = 31, actions: int = 12) -> Game:
    g = Game(3, "A", spirits=spirits, seed=seed)
    random_actions(g, actions, seed)
    return g


def test_determinize_keeps_everything_the_player_sees() -> None:
    g = mid_game()
    assert g.field("spirit_kept")[1] >= 0 and g.field("spirit_kept")[2] < 0  # seat 2 has not chosen yet
    for player in range(3):
        for seed in range(5):
            d = determinize(g, player, seed)
            for name in PUBLIC:
                assert np.array_equal(d.field(name), g.field(name)), (player, name)
            n = int(g.field("deck_count"))
            assert sorted(d.field("deck")[:n]) == sorted(g.field("deck")[:n])
            assert np.array_equal(d.field("spirit_dealt")[player], g.field("spirit_dealt")[player])
            dealt = d.field("spirit_dealt")[:3]
            assert len(set(dealt.ravel().tolist())) == 6 and ((dealt >= FIRST_SPIRIT) & (dealt <= NUM_CARDS)).all()
            for o in range(3):
                kept = g.field("spirit_kept")[o]
                if kept >= 0:
                    assert kept in dealt[o]


def test_determinize_changes_the_hidden_order() -> None:
    g = mid_game()
    n = int(g.field("deck_count"))
    decks = {tuple(determinize(g, 0, seed).field("deck")[:n]) for seed in range(6)}
    rngs = {S.get_rng(determinize(g, 0, seed).state) for seed in range(6)}
    assert len(decks) == 6 and len(rngs) == 6
    others = {tuple(determinize(g, 0, seed).field("spirit_dealt")[2]) for seed in range(10)}
    assert len(others) > 1, "an unchosen opponent's dealt Spirits are resampled"
    assert determinize(g, 0, 4).state.tobytes() == determinize(g, 0, 4).state.tobytes(), "seeded"


def test_determinize_never_reveals_the_true_hidden_order() -> None:
    """Two games that differ only in what seat 0 cannot see determinize to the same game for seat 0."""
    g = mid_game()
    h = g.clone()
    n = int(h.field("deck_count"))
    S.field(h._state, "deck")[:n] = h.field("deck")[:n][::-1]  # another draw-pile order
    h._state[S.RNG] ^= 0x5555_5555  # other future pouch draws
    dealt = S.field(h._state, "spirit_dealt")
    seen = set(dealt[0].tolist()) | {int(k) for k in h.field("spirit_kept") if k >= 0}
    unseen = [c for c in range(FIRST_SPIRIT, NUM_CARDS + 1) if c not in seen and c not in dealt[2]]
    dealt[2] = unseen[:2]  # seat 2 has not chosen: both its Spirits are hidden from seat 0
    returned = 1 - list(dealt[1]).index(h.field("spirit_kept")[1])
    dealt[1, returned] = unseen[2]  # seat 1's returned Spirit is hidden too
    for seed in range(4):
        a, b = determinize(g, 0, seed), determinize(h, 0, seed)
        assert a.state.tobytes() == b.state.tobytes(), "the determinized game depends on hidden information"
    # and the determinized future (refills) does not follow the original generator
    a = determinize(g, 0, 0)
    assert S.get_rng(a.state) != S.get_rng(g.state)


def test_determinize_rejects_bad_player() -> None:
    g = mid_game(spirits=False)
    with pytest.raises(ValueError, match="player"):
        determinize(g, 3, 0)
    d = determinize(g, 1, 0)
    assert not d.is_over
    random_actions(d, 10_000, 2)
    assert d.is_over


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_game_continues_identically_and_independently(how: str) -> None:
    """20 random mid-game positions, 1-4 players, both sides, with and without Spirits: the copy (taken before the
    original plays on) plays the same 200 actions to the same positions, chance included (the generator is in the
    state), and its record still replays."""
    import copy
    import pickle

    dup = copy.deepcopy if how == "deepcopy" else (lambda x: pickle.loads(pickle.dumps(x)))
    cases = [(n, side, sp) for n in (1, 2, 3, 4) for side in "AB" for sp in (False, True)]
    for k in range(20):
        n, side, spirits = cases[(k * 3) % len(cases)]
        g = Game(n, side, spirits, seed=300 + k)
        random_actions(g, int(np.random.default_rng(k).integers(0, 120)), k)
        c = dup(g)
        assert c.state.flags.writeable is False and c._state is not g._state
        seen = []
        rng = np.random.default_rng(1000 + k)
        for _ in range(200):
            if g.is_over:
                break
            a = int(rng.choice(g.legal_actions()))
            g.step(a)
            seen.append((a, g.state.tobytes()))
        for a, want in seen:
            c.step(a)
            assert c.state.tobytes() == want
        assert c.history == g.history and Game.replay(c.record()).state.tobytes() == c.state.tobytes()
