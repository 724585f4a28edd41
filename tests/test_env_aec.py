"""PettingZoo AEC env: API conformance, seeding, termination, hidden information, rewards, illegal actions."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from harmonies_env import IllegalActionError
from harmonies_env import state as S
from harmonies_env.env_aec import env, raw_env
from harmonies_env.game import Game
from harmonies_env.rewards import final_rewards


def run_random(e, seed: int = 0, rng_seed: int = 0):
    """Play a whole episode with random legal actions; return (steps, cumulative rewards by agent, last infos)."""
    e.reset(seed=seed)
    rng = np.random.default_rng(rng_seed)
    returns = dict.fromkeys(e.possible_agents, 0.0)
    infos = {}
    steps = 0
    for agent in e.agent_iter():
        obs, rew, term, trunc, info = e.last()
        returns[agent] += rew
        if term or trunc:
            infos[agent] = info
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    return steps, returns, infos


@pytest.mark.parametrize("n,side,spirits", [(1, "A", False), (2, "A", True), (3, "B", False), (4, "B", True)])
def test_pettingzoo_api(n, side, spirits):
    api_test(env(num_players=n, side=side, spirits=spirits), num_cycles=200)


def test_pettingzoo_seed():
    seed_test(functools.partial(env, num_players=2, spirits=True), num_cycles=200)
    seed_test(functools.partial(env, num_players=1, side="B"), num_cycles=200)


def test_spaces_and_mask_dtype():
    e = env(num_players=3)
    e.reset(seed=1)
    assert e.metadata["name"] == "harmonies_v0"
    assert e.possible_agents == ["player_0", "player_1", "player_2"]
    obs = e.observe("player_0")
    assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
    assert np.flatnonzero(obs["action_mask"]).tolist() == [0, 1, 2, 3, 4, 155, 156, 157, 158, 159]  # spaces, cards
    assert not e.observe("player_1")["action_mask"].any()
    assert e.observation_space("player_1").contains(e.observe("player_1"))


@pytest.mark.parametrize("n", [1, 2, 4])
def test_games_end_on_their_own_within_a_bound(n):
    """max_cycles-style check: every agent terminates, within a fixed number of actions, with no truncation."""
    for seed in range(3):
        e = env(num_players=n, spirits=True)
        steps, _, infos = run_random(e, seed=seed, rng_seed=seed)
        assert 0 < steps < 1000
        assert not e.unwrapped.agents  # every agent was removed after its final dead step
        assert set(infos) == set(e.possible_agents)
        assert all("scores" in i for i in infos.values())


def test_max_cycles_truncates_every_agent():
    e = env(num_players=2, max_cycles=25)
    e.reset(seed=3)
    rng = np.random.default_rng(0)
    steps = 0
    for agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            assert trunc and not term
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    assert steps == 25


def test_hidden_order_gives_identical_observations():
    """Two games that differ only in the draw pile order and the pouch's generator look the same to everyone."""
    e1, e2 = raw_env(num_players=2, spirits=True), raw_env(num_players=2, spirits=True)
    e1.reset(seed=5)
    e2.reset(seed=5)
    s2 = e2.game.state.copy()
    n = int(s2[S.DECK_COUNT])
    S.field(s2, "deck")[:n] = np.roll(S.field(s2, "deck")[:n], 7)
    S.set_rng(s2, S.get_rng(s2) + 987654321)
    e2.game.state = s2  # validated
    assert not np.array_equal(e1.game.state, e2.game.state)
    rng = np.random.default_rng(0)
    # and keep doing so over actions that reveal nothing hidden (no refill happens before the turn ends)
    for _ in range(3):
        for a in e1.possible_agents:
            o1, o2 = e1.observe(a), e2.observe(a)
            assert np.array_equal(o1["observation"], o2["observation"])
            assert np.array_equal(o1["action_mask"], o2["action_mask"])
        mask = e1.observe(e1.agent_selection)["action_mask"]
        act = int(rng.choice(np.flatnonzero(mask)))
        e1.step(act)
        e2.step(act)


def test_win_rewards_follow_the_winners():
    for seed in range(6):
        e = env(num_players=3, reward="win")
        _, returns, infos = run_random(e, seed=seed, rng_seed=seed)
        winners = infos["player_0"]["winners"]
        for p in range(3):
            r = returns[f"player_{p}"]
            if len(winners) == 3:
                assert r == 0
            elif p in winners:
                assert r == pytest.approx(1 / len(winners))
            else:
                assert r == -1


def test_shared_victory_and_complete_tie():
    g = Game(3, seed=0)
    g._state[S.GAME_OVER] = 1  # an empty table: everyone ties on 0 points and 0 cubes
    assert final_rewards(g, "win").tolist() == [0, 0, 0]
    S.field(g._state, "animal_cubes")[2] = 1  # only the cubes tie-break separates seat 2
    assert final_rewards(g, "win").tolist() == [-1, -1, 1]
    S.field(g._state, "animal_cubes")[1] = 1  # seats 1 and 2 share the victory
    assert final_rewards(g, "win").tolist() == [-1, 0.5, 0.5]


def test_score_and_dense_rewards():
    e = env(num_players=2, reward="score")
    _, returns, infos = run_random(e, seed=4)
    t = [infos[f"player_{p}"]["scores"]["total"] for p in range(2)]
    assert returns["player_0"] == pytest.approx((t[0] - t[1]) / 100)
    assert returns["player_1"] == pytest.approx((t[1] - t[0]) / 100)
    e = env(num_players=3, reward="dense")
    _, returns, infos = run_random(e, seed=4)
    for p in range(3):
        assert returns[f"player_{p}"] == pytest.approx(infos[f"player_{p}"]["scores"]["total"] / 100)


def test_solo_rewards():
    e = env(num_players=1, reward="win")
    _, returns, infos = run_random(e, seed=2)
    assert returns["player_0"] == infos["player_0"]["suns"]
    e = env(num_players=1, reward="score")
    _, returns, infos = run_random(e, seed=2)
    assert returns["player_0"] == pytest.approx(infos["player_0"]["scores"]["total"] / 100)


def test_illegal_action_wrapped_ends_game_raw_raises():
    e = env(num_players=2)
    e.reset(seed=0)
    e.step(267)  # end the turn before taking tokens (PettingZoo logs a warning)
    assert e.rewards["player_0"] == -1 and e.rewards["player_1"] == 0
    assert all(e.terminations.values())
    r = raw_env(num_players=2)
    r.reset(seed=0)
    before = r.game.state.copy()
    with pytest.raises(IllegalActionError, match="before tokens are taken"):
        r.step(267)
    assert np.array_equal(before, r.game.state)


def test_reset_seed_matches_game_and_render():
    e = raw_env(num_players=2, render_mode="ansi")
    e.reset(seed=77)
    assert np.array_equal(e.game.state, Game(2, seed=77).state)
    text = e.render()
    assert "player 0" in text and "central" in text
    e.reset()  # seedless resets after a seeded one are reproducible too
    first = e.game.state.copy()
    e.reset(seed=77)
    e.reset()
    assert np.array_equal(first, e.game.state)


def test_rgb_render():
    e = raw_env(num_players=2, render_mode="rgb_array")
    e.reset(seed=1)
    img = e.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="reward"):
        raw_env(reward="points")
    with pytest.raises(ValueError, match="num_players"):
        raw_env(num_players=5)
    with pytest.raises(ValueError, match="render_mode"):
        raw_env(render_mode="rgb")


# ---- state(), human rendering, the versioned module ---------------------------------------------------------------

def test_state_is_the_whole_position_fixed_shape_within_state_space():
    from harmonies_env.state import STATE_SIZE

    e = env(num_players=3, side="B", spirits=True)
    e.reset(seed=8)
    rng = np.random.default_rng(8)
    space = e.unwrapped.state_space
    assert space.shape == (STATE_SIZE,) and space.dtype == np.int32
    for agent in e.agent_iter():
        st = e.state()
        assert st.shape == (STATE_SIZE,) and st.dtype == np.int32 and space.contains(st)
        assert np.array_equal(st, e.unwrapped.game.state)  # hidden information included: rng, deck order, Spirits
        obs, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    st[0] = 99  # a copy: writing it changes nothing
    assert e.unwrapped.game.num_players == 3 and Game.from_state(e.state()).is_over


def test_human_render_prints_the_play_table(capsys):
    e = env(num_players=2, render_mode="human")
    e.reset(seed=3)
    shown = capsys.readouterr().out
    assert "player 0 to move" in shown and "central: 0 " in shown  # numbered, as `harmonies play` shows it
    e.step(0)
    assert "player 0 to move" in capsys.readouterr().out
    assert e.render() is None and "central:" in capsys.readouterr().out


def test_pettingzoo_render_test_every_mode():
    from pettingzoo.test import render_test

    from harmonies_env import harmonies_v0

    assert set(raw_env.metadata["render_modes"]) == {"ansi", "rgb_array", "human"}
    render_test(functools.partial(harmonies_v0.env, num_players=2),
                custom_tests={"rgb_array": lambda img: img.dtype == np.uint8 and img.ndim == 3})


def test_versioned_module_env_and_raw_env_take_the_same_arguments():
    import inspect

    import harmonies_env
    from harmonies_env import harmonies_v0

    assert harmonies_env.harmonies_v0 is harmonies_v0 and harmonies_v0.env is env
    assert inspect.signature(harmonies_v0.env).parameters.keys() == inspect.signature(raw_env).parameters.keys()
    e = harmonies_v0.env(3, "B", True, "score")  # positional, as raw_env takes them
    assert e.unwrapped.num_players == 3 and e.unwrapped.side == "B" and e.unwrapped.reward_kind == "score"
    assert e.metadata["name"] == "harmonies_v0"


# ---- live copies --------------------------------------------------------------------------------------------------

def _trace(e, rng, n: int) -> list:
    """n steps of random legal actions (None for a done agent; a seedless reset after a game): what was seen."""
    out = []
    for _ in range(n):
        if not e.agents:
            e.reset()
        agent = e.agent_selection
        obs, rew, term, trunc, _ = e.last()
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        out.append((agent, rew, term, trunc, action, obs["observation"].tobytes(), e.state().tobytes()))
        e.step(action)
    return out


COPY_CASES = [(n, side, spirits) for n in (2, 3, 4) for side in ("A", "B") for spirits in (False, True)]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_of_a_live_env_continues_identically_and_independently(how):
    """20 random mid-game positions over 2-4 players, both sides, with and without Spirits: the copy plays the same
    200 steps (through game ends and seedless resets) as the original, after the original has played them."""
    import copy
    import pickle

    dup = copy.deepcopy if how == "deepcopy" else (lambda x: pickle.loads(pickle.dumps(x)))
    for k in range(20):
        n, side, spirits = COPY_CASES[k % len(COPY_CASES)]
        e = env(num_players=n, side=side, spirits=spirits, reward="dense", max_cycles=None)
        e.reset(seed=100 + k)
        rng = np.random.default_rng(k)
        _trace(e, rng, int(rng.integers(0, 250)))
        c = dup(e)
        state = rng.bit_generator.state
        want = _trace(e, rng, 200)
        rng.bit_generator.state = state
        assert _trace(c, rng, 200) == want
        assert c.unwrapped.game is not e.unwrapped.game


# ---- raw env: errors that name the problem (issue 38 item 8) ------------------------------------------------------

def test_a_refused_seed_leaves_the_seed_generator_alone():
    for bad in (2**63, [1, 2], -1, 1.5):
        r = raw_env(num_players=2)
        r.reset(seed=5)
        with pytest.raises(ValueError, match="seed must be"):
            r.reset(seed=bad)
        r.reset()
        ref = raw_env(num_players=2)
        ref.reset(seed=5)
        ref.reset()
        assert np.array_equal(r.state(), ref.state())  # the same next game as if the bad call never happened


def test_step_after_every_agent_is_done_or_before_reset_is_a_runtime_error():
    r = raw_env(num_players=2)
    with pytest.raises(RuntimeError, match="before reset"):
        r.step(0)
    run_random(r, seed=1)
    assert not r.agents
    with pytest.raises(RuntimeError, match="every agent is done"):
        r.step(None)


def test_non_integer_actions_are_one_clear_error_and_one_element_arrays_are_accepted():
    for make in (env, raw_env):
        e = make(num_players=2)
        e.reset(seed=0)
        for bad in (True, np.bool_(False), 2.0, "1", np.array([1.0])):
            with pytest.raises(IllegalActionError, match="actions are integers"):
                e.step(bad)
        assert not e.unwrapped.game.history and not any(e.terminations.values())  # nothing changed
        e.step(np.array([3]))
        second = int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0])
        e.step(np.array([[second]], dtype=np.int16))
        assert e.unwrapped.game.history == [3, second] and not any(e.terminations.values())
