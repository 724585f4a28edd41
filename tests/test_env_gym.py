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


# ---- the mask in info and on the made env, the reward scale, human rendering ------------------------

def test_info_action_mask_is_action_masks_on_reset_and_every_step():
    for e in (gym.make("harmonies/Solo-v0", spirits=True), gym.make("harmonies/Versus-v0", num_players=3)):
        obs, info = e.reset(seed=2)
        rng = np.random.default_rng(2)
        term = False
        while not term:
            mask = e.action_masks()  # answered by the made env itself (make() adds no wrapper)
            assert info["action_mask"].dtype == np.bool_ and np.array_equal(info["action_mask"], mask)
            assert np.array_equal(mask, e.unwrapped.action_masks())
            _, _, _, _, illegal = e.step(267 if not mask[267] else 999)  # refused: the mask is unchanged
            assert "illegal_action" in illegal and np.array_equal(illegal["action_mask"], mask)
            obs, _, term, _, info = e.step(int(rng.choice(np.flatnonzero(mask))))
        assert term and "scores" in info and info["action_mask"].all()  # any action: next-step autoreset


def test_sb3_contrib_finds_the_masks_on_a_made_env_and_under_more_wrappers():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    e = gym.make("harmonies/Versus-v0")
    assert type(e) is VersusEnv and is_masking_supported(e)
    _, info = e.reset(seed=0)
    assert np.array_equal(get_action_masks(e), info["action_mask"])
    outer = gym.wrappers.RecordEpisodeStatistics(e)
    assert np.array_equal(outer.get_wrapper_attr("action_masks")(), info["action_mask"])
    assert type(gym.make(e.spec)) is VersusEnv  # re-made from its spec: still no wrapper


def test_reward_scale_one_scale_for_solo_and_versus():
    """Defaults: Solo-v0 in points (1.0), Versus-v0 in points / 100 (0.01); reward_scale sets either."""
    total, info, _, _ = play(gym.make("harmonies/Solo-v0", reward_scale=0.01), 4, 4)
    assert total == pytest.approx(info["scores"]["total"] / 100)
    total, info, _, _ = play(VersusEnv(num_players=2, reward="dense", reward_scale=1.0), 4, 4)
    assert total == pytest.approx(info["scores"]["total"])
    e = VersusEnv(num_players=3, reward="score", reward_scale=1.0, seat=0)
    total, info, _, _ = play(e, 4, 4)
    t = [s["total"] for s in e.game.scores()]
    assert total == t[0] - max(t[1:])  # whole points
    assert SoloEnv().reward_scale == 1.0 and VersusEnv().reward_scale == 0.01
    for bad in (float("nan"), "1", True, None):
        with pytest.raises(ValueError, match="reward_scale must be a finite number"):
            SoloEnv(reward_scale=bad)


def test_human_render_prints_the_learners_table(capsys):
    e = gym.make("harmonies/Versus-v0", render_mode="human", seat=1)
    e.reset(seed=0)
    shown = capsys.readouterr().out
    assert "player 1 (you)" in shown and "central: 0 " in shown
    e.step(int(e.action_masks().argmax()))
    assert "player 1 (you)" in capsys.readouterr().out
    assert e.render() is None


# ---- live copies ------------------------------------------------------------------------------------------------

def _trace(e, rng, n: int) -> list:
    """n random legal steps (a seedless reset after each episode): everything the learner saw."""
    out = []
    for _ in range(n):
        mask = e.action_masks()
        if e.unwrapped.game.is_over:
            obs, info = e.reset()
            out.append(("reset", obs.tobytes(), info.get("seat")))
            mask = e.action_masks()
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, r, term, trunc, info = e.step(a)
        out.append((a, obs.tobytes(), r, term, trunc, info["action_mask"].tobytes(), e.unwrapped.game.state.tobytes()))
    return out


GYM_CASES = ([("harmonies/Solo-v0", {"side": s, "spirits": sp}) for s in "AB" for sp in (False, True)]
             + [("harmonies/Versus-v0", {"num_players": n, "side": s, "spirits": sp, "reward": "dense"})
                for n in (2, 3, 4) for s in "AB" for sp in (False, True)])


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_of_a_live_env_continues_identically_and_independently(how):
    """20 random mid-game positions (Solo; Versus with 2-4 players, random seats and built-in random opponents;
    both sides, with and without Spirits): the copy, taken before the original plays on, plays the same 200 steps,
    through game ends and seedless resets (the reset generator and the opponents' generator travel)."""
    import copy
    import pickle

    dup = copy.deepcopy if how == "deepcopy" else (lambda x: pickle.loads(pickle.dumps(x)))
    for k in range(20):
        name, kwargs = GYM_CASES[k % len(GYM_CASES)]
        e = gym.make(name, **kwargs)
        e.reset(seed=200 + k)
        rng = np.random.default_rng(k)
        _trace(e, rng, int(rng.integers(0, 120)))
        c = dup(e)
        state = rng.bit_generator.state
        want = _trace(e, rng, 200)
        rng.bit_generator.state = state
        assert _trace(c, rng, 200) == want
        assert c.unwrapped.game is not e.unwrapped.game
