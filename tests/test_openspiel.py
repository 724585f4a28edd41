"""Harmonies as an OpenSpiel game (`harmonies_env.openspiel`): OpenSpiel's own random_sim_test, hidden information
in strings and tensors, resampling for ISMCTS, and OpenSpiel's MCTS and ISMCTS bots playing it to the end."""
from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason='the optional openspiel extra: pip install -e ".[openspiel]"')

from open_spiel.python.algorithms import ismcts, mcts  # noqa: E402
from open_spiel.python.bots.uniform_random import UniformRandomBot  # noqa: E402

from harmonies_env import chance as C  # noqa: E402
from harmonies_env.cards import card_name  # noqa: E402
from harmonies_env.openspiel import TENSOR_SIZE, RolloutEvaluator  # noqa: E402


def load(**params):
    return pyspiel.load_game("python_harmonies", params)


def play(game, bots, seed: int, state=None):
    """Play to the end: chance from its listed probabilities, seat p by bots[p]; returns the final state."""
    rng = np.random.default_rng(seed)
    state = state or game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(bots[state.current_player()].step(state))
    return state


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("side", ["A", "B"])
@pytest.mark.parametrize("spirits", [False, True])
def test_random_sim_test_with_serialization(players: int, side: str, spirits: bool) -> None:
    game = load(players=players, side=side, spirits=spirits, returns="win" if side == "A" else "points")
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)


def test_parameters_type_and_sizes() -> None:
    game = load(players=3, side="B", spirits=True)
    t = game.get_type()
    assert t.short_name == "python_harmonies" and game.num_players() == 3
    assert t.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert t.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert t.utility == pyspiel.GameType.Utility.CONSTANT_SUM and game.utility_sum() == 1.0
    assert game.num_distinct_actions() == 268 and game.max_chance_outcomes() == C.NUM_OUTCOMES
    assert game.observation_tensor_shape() == [TENSOR_SIZE]
    assert load(players=2).get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION
    solo = load(players=1, returns="points", river_loops="bga")
    assert solo.num_players() == 1 and solo.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    with pytest.raises(Exception, match="use returns='points'"):
        load(players=1)
    with pytest.raises(Exception, match="side must be 'A' or 'B'"):
        load(side="C")
    with pytest.raises(Exception, match="returns must be"):
        load(returns="suns")


def test_returns_are_win_shares_or_points() -> None:
    for returns in ("win", "points"):
        game = load(players=3, returns=returns)
        state = play(game, [UniformRandomBot(p, np.random.RandomState(p)) for p in range(3)], 5)
        g = state.game_obj
        if returns == "win":
            assert state.returns() == [1 / len(g.winners()) if p in g.winners() else 0.0 for p in range(3)]
        else:
            assert state.returns() == [float(s["total"]) for s in g.scores()]


def dealt_state(seed: int):
    """A 3-player Spirit game just after the deal: every seat holds two Spirit cards, none kept yet."""
    game = load(players=3, spirits=True)
    state = game.new_initial_state()
    rng = np.random.default_rng(seed)
    while state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        state.apply_action(int(rng.choice(outcomes, p=probs)))
    return state


def test_information_state_hides_the_spirits_dealt_to_other_seats() -> None:
    state = dealt_state(1)
    dealt = state.game_obj.field("spirit_dealt")
    other = state.resample_from_infostate(0, pyspiel.UniformProbabilitySampler(0.0, 1.0))
    seen = other.game_obj.field("spirit_dealt")
    assert list(seen[0]) == list(dealt[0])          # seat 0's own cards stay
    assert set(seen[1:3].ravel()).isdisjoint(dealt[0])
    for _ in range(20):  # a redeal that changes another seat's cards
        if sorted(seen[1:3].ravel()) != sorted(dealt[1:3].ravel()):
            break
        other = state.resample_from_infostate(0, pyspiel.UniformProbabilitySampler(0.0, 1.0))
        seen = other.game_obj.field("spirit_dealt")
    assert sorted(seen[1:3].ravel()) != sorted(dealt[1:3].ravel())
    # seat 0 cannot tell the two states apart; seat 1 can
    assert other.information_state_string(0) == state.information_state_string(0)
    assert other.observation_string(0) == state.observation_string(0)
    assert other.information_state_tensor(0) == state.information_state_tensor(0)
    assert other.observation_tensor(0) == state.observation_tensor(0)
    assert other.information_state_string(1) != state.information_state_string(1)
    assert other.legal_actions() == state.legal_actions()
    for card in dealt[1]:  # no other seat's card shows in seat 0's strings; seat 1's and the debug string show it
        name = f"{card_name(int(card))}#{int(card)}"
        assert name not in state.information_state_string(0) and name not in state.observation_string(0)
        assert name in state.observation_string(1) and name in str(state)
    assert len(state.observation_tensor(0)) == TENSOR_SIZE


def test_strings_are_the_table_as_render_draws_it_with_hidden_parts_hidden():
    """Readable strings (issue 47): the table as `render_game` draws it, the seat's own board last, the pending
    chance event and the dealt Spirits ("?" where hidden); the information state string heads it with the history
    the seat saw, so different information states stay different strings."""
    from harmonies_env.render import render_game

    state = dealt_state(4)
    g = state.game_obj
    assert str(state).startswith("chance: none\n" + render_game(g))
    obs = state.observation_string(0)
    assert obs.startswith("seat 0\nchance: none\nHarmonies  3p") and "player 0 (you)" in obs
    assert obs.endswith("; player 1 ?, ?; player 2 ?, ?")
    info = state.information_state_string(0)
    assert info.startswith("history: ") and info.endswith(obs) and "?" in info.splitlines()[0]
    chance = load(players=2).new_initial_state()
    assert str(chance).startswith("chance: tokens 0\n") and "\n" in chance.observation_string(1)
    seen = set()
    for _ in range(12):  # every step of play: a new information state, a new string
        seen.add(state.information_state_string(0))
        if state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
        else:
            state.apply_action(state.legal_actions()[-1])
    assert len(seen) == 12


def test_mcts_with_random_rollouts_and_ismcts_play_to_the_end() -> None:
    game = load(players=2)
    random_bots = [UniformRandomBot(p, np.random.RandomState(p)) for p in range(2)]
    state = game.new_initial_state()
    rng = np.random.default_rng(0)
    while state.is_chance_node() or state.game_obj.turn < 16:  # random play into the late game: short rollouts
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(random_bots[state.current_player()].step(state))
    bot = mcts.MCTSBot(game, 2.0, 2, mcts.RandomRolloutEvaluator(1, np.random.RandomState(0)),
                       random_state=np.random.RandomState(1))
    assert play(game, [bot, bot], 1, state).is_terminal()

    game = load(players=3, side="B", spirits=True)
    bots = [ismcts.ISMCTSBot(game, RolloutEvaluator(1, 0), 2.0, 4, random_state=np.random.RandomState(3))]
    bots += [UniformRandomBot(p, np.random.RandomState(p)) for p in (1, 2)]
    final = play(game, bots, 2)
    assert final.is_terminal() and sum(final.returns()) == pytest.approx(1.0)


def test_mcts_beats_openspiels_uniform_random_bot_over_20_games() -> None:
    """OpenSpiel's MCTSBot, 4 simulations a move, each leaf valued by 8 random rollouts run in the engine
    (`RolloutEvaluator`: OpenSpiel's Python rollouts would take minutes), seats alternating."""
    game = load(players=2)
    wins = 0.0
    for k in range(20):
        seat = k % 2
        bot = mcts.MCTSBot(game, 2.0, 4, RolloutEvaluator(8, k), random_state=np.random.RandomState(k))
        rand = UniformRandomBot(1 - seat, np.random.RandomState(100 + k))
        wins += play(game, [bot, rand] if seat == 0 else [rand, bot], k).returns()[seat]
    assert wins >= 15


# ---------------------------------------------------------------------------------------------------------
# a refused action leaves no trace (issue 47, item 1)
# ---------------------------------------------------------------------------------------------------------
def snapshot(state) -> dict:
    """Everything OpenSpiel or a client can read of a state, for every seat (and of its serialised round trip)."""
    game = state.get_game()
    out = {"history": state.history(), "full": [(h.player, h.action) for h in state.full_history()],
           "move_number": state.move_number(), "current": state.current_player(), "terminal": state.is_terminal(),
           "returns": state.returns(), "str": str(state), "private_to": list(state.private_to),
           "engine": state.game_obj.state.tolist(), "chance": state.game_obj._chance.tolist(),
           "seed": state.game_obj.seed, "record": list(state.game_obj.history),
           "serialized_history": state.serialize().split("__dict__=")[0]}
    if state.is_chance_node():
        out["outcomes"] = state.chance_outcomes()
    for p in range(game.num_players()):
        out[p] = (state.observation_string(p), state.information_state_string(p), state.observation_tensor(p),
                  state.information_state_tensor(p), state.legal_actions(p))
    if not state.is_terminal():
        again = game.deserialize_state(state.serialize())
        out["round_trip"] = [(again.observation_string(p), again.information_state_string(p))
                             for p in range(game.num_players())] + [again.history(), list(again.private_to)]
    return out


def refused_actions(state, last_decision: list[int]) -> list[int]:
    """Actions that this node must refuse: illegal ones, ids out of range and ids of the other kind of node."""
    bad = [-1, -7, 268, 10**4, 2**31, 2**62]
    if state.is_terminal():
        return bad + [0, 125, 126, 267] + last_decision[:3]
    if state.is_chance_node():
        possible = {o for o, _ in state.chance_outcomes()}
        impossible = [o for o in range(C.NUM_OUTCOMES) if o not in possible]
        # a player's action id where a chance outcome is due: out of range or an impossible outcome
        return bad + [126, 200, 267] + impossible[:3] + impossible[-3:] + last_decision[:3]
    legal = set(state.legal_actions())
    illegal = [a for a in range(268) if a not in legal]
    # a chance outcome id (tokens, an Animal card, a Spirit card) where a player must decide, when illegal here
    wrong_kind = [o for o in (0, 40, C.CARD_OUTCOME, C.NUM_OUTCOMES - 1) if o not in legal]
    return bad + illegal[:2] + illegal[-2:] + wrong_kind


@pytest.mark.parametrize("players,spirits", [(2, True), (3, False)])
def test_a_refused_action_changes_nothing_at_any_kind_of_node(players: int, spirits: bool) -> None:
    """At decisions, chance nodes (tokens, cards, Spirit deals) and the end: every refused action raises, and every
    string, tensor, the history and the serialised state equal those of a clean replay of the accepted actions."""
    game = load(players=players, spirits=spirits)
    state, clean = game.new_initial_state(), game.new_initial_state()
    rng = np.random.default_rng(players)
    bots = [UniformRandomBot(p, np.random.RandomState(p)) for p in range(players)]
    kinds, last_decision, refused = set(), [], 0
    while True:
        node = ("end",) if state.is_terminal() else state.game_obj.chance_event() or ("decision",)
        if node[0] not in kinds or rng.random() < 0.2:  # every kind at its first node, then a sample
            kinds.add(node[0])
            for a in refused_actions(state, last_decision):
                with pytest.raises(Exception):  # noqa: B017 - ValueError from the engine, SpielError from C++
                    state.apply_action(a)
                refused += 1
            assert snapshot(state) == snapshot(clean), node
        if state.is_terminal():
            break
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            a = int(rng.choice(outcomes, p=probs))
        else:
            a = bots[state.current_player()].step(state)
            last_decision = sorted(set(state.legal_actions()) - {a})  # legal a moment ago, refused later
        state.apply_action(a)
        clean.apply_action(a)
    assert kinds == {"decision", "tokens", "card", "end"} | ({"spirit"} if spirits else set())
    assert refused > 100
    replay = game.new_initial_state()
    for a in state.history():
        replay.apply_action(a)
    assert snapshot(state) == snapshot(replay)


def test_a_serialized_state_is_its_actions_and_deserializing_never_unpickles(tmp_path):
    """OpenSpiel's default for Python games pickles the state's __dict__ and unpickles it back (code from the text);
    here a state serializes to its actions and deserializes by replaying them through the engine."""
    import base64
    import pickle

    game = load(players=2, spirits=True)
    state = dealt_state(2)  # a 3-player game: serialise through its own game
    again = state.get_game().deserialize_state(state.serialize())
    assert again.history() == state.history() and again.private_to == state.private_to
    assert again.information_state_string(1) == state.information_state_string(1)
    marker = tmp_path / "pwned"
    evil = base64.b64encode(pickle.dumps({"x": _Creates(str(marker))})).decode()
    for text in (f"history=-1:28\nmove_number=1\n__dict__={evil}", "28\nnot a number\n", "28\n" * 3 + "267\n",
                 "9" * 30, "x" * 70000):
        with pytest.raises(ValueError, match="serialized"):
            game.deserialize_state(text)
    assert not marker.exists()


class _Creates:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))
