"""Gymnasium envs Solo-v0 and Versus-v0: env checker, masks, rewards, illegal actions, seeding, opponents."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import harmonies_env.env_gym  # noqa: F401  (registers the envs)
from harmonies_env.env_gym import SoloEnv, VersusEnv
from harmonies_env.observation import OBS_SIZE
from harmonies_env.view import PlayerView


def play(e, seed: int, rng_seed: int = 0):
    """Random legal actions to the end; returns (sum of rewards, last info, steps, observations)."""
    obs, info = e.reset(seed=seed)
    rng = np.random.default_rng(rng_seed)
    total, steps, seen = 0.0, 0, [obs]
    while True:
        mask = e.get_wrapper_attr("action_masks")()
        assert mask.dtype == np.bool_ and mask.any()
        obs, r, term, trunc, info = e.step(int(rng.choice(np.flatnonzero(mask))))
        total += r
        steps += 1
        seen.append(obs)
        if term or trunc:
            assert term and not trunc
            return total, info, steps, seen


@pytest.mark.parametrize("make", [
    lambda: SoloEnv(),
    lambda: SoloEnv(side="B", spirits=True),
    lambda: VersusEnv(),
    lambda: VersusEnv(num_players=4, side="B", spirits=True, reward="dense"),
])
def test_check_env(make):
    check_env(make(), skip_render_check=True)


def test_registered_ids():
    e = gym.make("harmonies/Solo-v0", side="B")
    assert e.unwrapped.side == "B" and e.observation_space.shape == (OBS_SIZE,)
    e = gym.make("harmonies/Versus-v0", num_players=3, reward="score")
    assert e.unwrapped.num_players == 3


def test_solo_return_is_the_final_score():
    for seed in range(3):
        total, info, _, _ = play(gym.make("harmonies/Solo-v0", spirits=True), seed, seed)
        assert total == info["scores"]["total"]
        assert set(info) >= {"scores", "suns"}
        assert info["suns"] >= 0


def test_illegal_action_changes_nothing():
    e = SoloEnv()
    obs, _ = e.reset(seed=3)
    before = e.game.state.copy()
    obs2, r, term, trunc, info = e.step(267)  # end the turn before taking tokens
    assert r == -1.0 and not term and not trunc
    assert "before tokens are taken" in info["illegal_action"]
    assert np.array_equal(before, e.game.state) and np.array_equal(obs, obs2)
    assert e.game.history == []
    v = VersusEnv(seat=0)
    v.reset(seed=3)
    before = v.game.state.copy()
    _, r, _, _, info = v.step(999)
    assert r == -0.01 and "outside" in info["illegal_action"] and np.array_equal(before, v.game.state)


def test_only_illegal_actions_are_truncated():
    e = SoloEnv(max_steps=10)
    e.reset(seed=0)
    for k in range(10):
        _, _, term, trunc, _ = e.step(267)
    assert trunc and not term


def test_reset_seed_reproduces_episodes():
    for make in (lambda: SoloEnv(spirits=True), lambda: VersusEnv(num_players=3)):
        a = play(make(), seed=12, rng_seed=1)
        b = play(make(), seed=12, rng_seed=1)
        assert a[0] == b[0] and a[2] == b[2]
        assert all(np.array_equal(x, y) for x, y in zip(a[3], b[3]))


def test_versus_seat_random_or_fixed():
    e = VersusEnv(num_players=4)
    seats = {e.reset(seed=s)[1]["seat"] for s in range(40)}
    assert seats == {0, 1, 2, 3}
    e = VersusEnv(num_players=3, seat=2)
    for s in range(3):
        _, info = e.reset(seed=s)
        assert info["seat"] == 2 and e.game.current_player == 2
        assert e.game.turn == 2  # seats 0 and 1 already played their first turns


def test_versus_win_reward_and_info():
    for seed in range(4):
        total, info, _, _ = play(VersusEnv(num_players=2, reward="win"), seed, seed)
        winners = info["winners"]
        assert info["won"] == (info["seat"] in winners)
        expected = 0 if len(winners) == 2 else (1.0 if info["won"] else -1.0)
        assert total == expected


def test_versus_dense_return_is_own_score_over_100():
    total, info, _, _ = play(VersusEnv(num_players=3, reward="dense"), 5)
    assert total == pytest.approx(info["scores"]["total"] / 100)


class FirstLegal:
    """An agent object: always the first legal action; records the seats it was asked about."""

    def __init__(self):
        self.seats = set()

    def act(self, view: PlayerView) -> int:
        self.seats.add(view.player)
        return view.legal_actions()[0]


def test_versus_opponents_callables_and_agents():
    calls = []

    def last_legal(obs, mask):
        assert obs.shape == (OBS_SIZE,) and mask.dtype == np.bool_
        calls.append(1)
        return int(np.flatnonzero(mask)[-1])

    agent = FirstLegal()
    e = VersusEnv(num_players=3, opponents=[last_legal, agent], seat=0)
    play(e, seed=1)
    assert calls and agent.seats == {2}
    e = VersusEnv(num_players=2, opponents=agent, seat=1)
    e.reset(seed=0)
    assert agent.seats == {2, 0}


def test_versus_bad_arguments():
    with pytest.raises(ValueError, match="Solo-v0"):
        VersusEnv(num_players=1)
    with pytest.raises(ValueError, match="2 opponents"):
        VersusEnv(num_players=3, opponents=[lambda o, m: 0])
    with pytest.raises(ValueError, match="seat"):
        VersusEnv(seat=2)
    with pytest.raises(ValueError, match="reward"):
        VersusEnv(reward="suns")


def test_render_modes():
    e = SoloEnv(render_mode="ansi")
    e.reset(seed=0)
    assert "player 0" in e.render()
    e = VersusEnv(render_mode="rgb_array")
    e.reset(seed=0)
    img = e.render()
    assert img.dtype == np.uint8 and img.shape[2] == 3
