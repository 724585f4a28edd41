"""Vector envs on the batched engine: same steps as the single Gymnasium envs, Gymnasium vector conventions,
and an SB3 VecEnv that MaskablePPO trains from with legal actions only."""
from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

from harmonies_env.batch import OPPONENT_SALT, episode_seed
from harmonies_env.env_gym import SoloEnv, VersusEnv
from harmonies_env.game import Game
from harmonies_env.rewards import totals
from harmonies_env.vector import SoloVectorEnv, VersusVectorEnv


def _pick(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)


def _single_env_on(num_players: int, seed: int, seat: int, reward: str = "win"):
    """A single Gymnasium env put on the game (and opponent generator) that the batch plays for `seed`."""
    if num_players == 1:
        env = SoloEnv()
        env.reset(seed=0)
        env.game = Game(1, seed=seed)
        env._total = 0
    else:
        env = VersusEnv(num_players=num_players, reward=reward, seat=seat)
        env.reset(seed=0)
        env.game = Game(num_players, seed=seed)
        env.seat = seat
        env._rng[0] = seed ^ OPPONENT_SALT
        env._play_opponents()
        env._total = int(totals(env.game)[seat])
    return env


@pytest.mark.parametrize("num_players,reward", [(1, None), (2, "win"), (2, "dense"), (3, "score")])
def test_vector_env_steps_like_the_single_envs(num_players, reward):
    n, base, seat = 3, 400, num_players - 1
    if num_players == 1:
        venv = SoloVectorEnv(n)
    else:
        venv = VersusVectorEnv(n, num_players=num_players, reward=reward, seat=seat)
    obs, _ = venv.reset(seed=base)
    envs = [_single_env_on(num_players, base + r, seat, reward or "win") for r in range(n)]
    episodes = [0] * n
    rng = np.random.default_rng(11)
    ended = 0
    for _ in range(200):
        for r, env in enumerate(envs):
            np.testing.assert_array_equal(obs[r], env._obs())
            np.testing.assert_array_equal(venv.action_masks()[r], env.action_masks())
        acts = _pick(venv.action_masks(), rng)
        obs, rew, term, trunc, infos = venv.step(acts)
        assert rew.dtype == np.float64 and term.dtype == bool and not trunc.any()
        for r, env in enumerate(envs):
            o, rw, te, tr, info = env.step(int(acts[r]))
            assert rw == pytest.approx(rew[r], abs=1e-6) and te == term[r]
            if te:
                ended += 1
                np.testing.assert_array_equal(infos["final_obs"][r], o)
                fi = infos["final_info"]
                assert fi["score"][r] == info["scores"]["total"] and fi["_score"][r]
                if num_players == 1:
                    assert fi["suns"][r] == info["suns"]
                else:
                    assert fi["won"][r] == info["won"]
                assert infos["episode"]["l"][r] > 0 and infos["_episode"][r]
                episodes[r] += 1
                envs[r] = _single_env_on(num_players, episode_seed(base + r, episodes[r]), seat, reward or "win")
    assert ended >= 1


def test_spaces_determinism_and_seeding():
    venv = VersusVectorEnv(4, num_players=2)  # seat drawn per episode, as Versus-v0
    obs1, info1 = venv.reset(seed=5)
    assert venv.observation_space.contains(obs1)
    assert info1["_seat"].all() and set(info1["seat"].tolist()) <= {0, 1}
    steps1 = []
    rng = np.random.default_rng(0)
    for _ in range(30):
        a = _pick(venv.action_masks(), rng)
        assert venv.action_space.contains(a)
        steps1.append((a, venv.step(a)))
    obs2, info2 = venv.reset(seed=5)
    assert data_equivalence((obs1, info1), (obs2, info2), exact=True)
    for a, s1 in steps1:
        assert data_equivalence(s1, venv.step(a), exact=True)
    # the returned observation is a copy: the next step does not change it
    kept = obs2.copy()
    venv.step(_pick(venv.action_masks(), rng))
    np.testing.assert_array_equal(kept, obs2)
    # unseeded resets after a seeded one are reproducible too
    venv.reset(seed=9)
    o_a, _ = venv.reset()
    venv.reset(seed=9)
    o_b, _ = venv.reset()
    np.testing.assert_array_equal(o_a, o_b)
    # a list of seeds: game r is Game(seed=seeds[r])
    solo = SoloVectorEnv(2)
    o, _ = solo.reset(seed=[3, 30])
    np.testing.assert_array_equal(o[1], _single_env_on(1, 30, 0)._obs())
    with pytest.raises(ValueError, match="2 seeds"):
        solo.reset(seed=[1, 2, 3])


def test_unmasked_actions_do_not_crash_and_are_reported():
    venv = SoloVectorEnv(4, max_steps=40)
    venv.reset(seed=1)
    saw_illegal = saw_trunc = False
    for _ in range(60):
        obs, rew, term, trunc, infos = venv.step(venv.action_space.sample())
        if "illegal_action" in infos:
            saw_illegal = True
            rows = np.flatnonzero(infos["_illegal_action"])
            assert (rew[rows] <= -1.0 + 1e-9).all() or term[rows].any()
            assert all(isinstance(infos["illegal_action"][r], str) and infos["illegal_action"][r] for r in rows)
        if trunc.any():
            saw_trunc = True
            assert infos["_final_obs"][trunc].all()
    assert saw_illegal and saw_trunc


def test_make_vec_with_a_vector_entry_point_and_episode_statistics():
    env_id = "harmonies_test/SoloBatched-v0"
    if env_id not in gymnasium.registry:
        gymnasium.register(id=env_id, entry_point="harmonies_env.env_gym:SoloEnv",
                           vector_entry_point="harmonies_env.vector:SoloVectorEnv")
    venv = gymnasium.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", side="B")
    assert isinstance(venv.unwrapped, SoloVectorEnv) and venv.num_envs == 3
    venv.reset(seed=2)
    rng = np.random.default_rng(0)
    total = np.zeros(3)
    length = np.zeros(3, dtype=int)
    for _ in range(300):
        _, r, term, trunc, infos = venv.step(_pick(venv.unwrapped.action_masks(), rng))
        total += r
        length += 1
        if term.any():
            row = int(np.flatnonzero(term)[0])
            assert infos["_episode"].tolist() == term.tolist()
            assert infos["episode"]["r"][row] == pytest.approx(total[row]) == infos["final_info"]["score"][row]
            assert infos["episode"]["l"][row] == length[row]
            assert infos["final_info"]["episode"]["r"][row] == infos["episode"]["r"][row]
            break
    else:
        pytest.fail("no game ended in 300 steps")


def test_maskable_ppo_trains_from_the_sb3_adapter_with_legal_actions_only():
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.callbacks import BaseCallback

    from harmonies_env.vector import SB3VecEnv, make_sb3_vec_env

    env = make_sb3_vec_env(16, seed=0)
    assert isinstance(env, SB3VecEnv) and is_masking_supported(env)
    env.reset()
    assert get_action_masks(env).shape == (16, 268)

    class Audit(BaseCallback):
        def __init__(self):
            super().__init__()
            self.actions = 0
            self.illegal = 0
            self.episodes = []

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                self.illegal += "illegal_action" in info
                if "episode" in info:
                    assert info["episode"]["r"] == info["score"]  # Solo: the return is the final score
                    assert info["terminal_observation"].shape == (2811,)
                    self.episodes.append(info["episode"]["r"])
            self.actions += len(self.locals["infos"])
            return True

    audit = Audit()
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=256, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [32]})
    model.learn(2048, callback=audit)  # one rollout of 128 steps on 16 boards (~40 solo games) and one update
    assert audit.actions >= 2048 and audit.illegal == 0
    assert len(audit.episodes) >= 16 and len(model.ep_info_buffer) > 0
    assert np.isfinite(model.logger.name_to_value.get("train/value_loss", 0.0))


def test_observations_handed_out_are_copies_unless_asked_for_views():
    """The engine updates its observation buffer in place (incrementally): whatever a consumer keeps across a
    step must be a copy (SB3 keeps `_last_obs`), while copy=False hands out the engine's read-only buffer."""
    from harmonies_env.vector import make_sb3_vec_env

    rng = np.random.default_rng(3)
    env = make_sb3_vec_env(4, num_players=2, seed=1)
    obs = env.reset()
    kept = obs.copy()
    assert obs.flags.writeable and not np.shares_memory(obs, env.batch.obs)
    for _ in range(40):
        obs2, _, dones, infos = env.step(_pick(env.action_masks(), rng))
        np.testing.assert_array_equal(obs, kept)  # the previous observation was not overwritten
        assert not np.shares_memory(obs2, env.batch.obs) and not np.shares_memory(obs2, obs)
        for r in np.flatnonzero(dones):
            assert not np.shares_memory(infos[r]["terminal_observation"], env.batch._final_obs)
        obs, kept = obs2, obs2.copy()
    masks = env.action_masks()
    assert masks.flags.writeable and not np.shares_memory(masks, env.batch.masks)

    venv = SoloVectorEnv(3, copy=False)
    view, _ = venv.reset(seed=2)
    assert np.shares_memory(view, venv.batch.obs) and not view.flags.writeable
    copied = SoloVectorEnv(3)
    o, _ = copied.reset(seed=2)
    o2, *_ = copied.step(_pick(copied.action_masks(), rng))
    assert o.flags.writeable and not np.shares_memory(o, o2) and not np.shares_memory(o2, copied.batch.obs)


@pytest.mark.parametrize("env_id", ["harmonies/Solo-v0", "harmonies/Versus-v0"])
@pytest.mark.parametrize("mode", [None, "sync", "async", "vector_entry_point"])
def test_make_vec_works_in_every_mode_and_a_masked_sampler_always_has_an_action(env_id, mode):
    """Through `gymnasium.make_vec` itself, with the registered ids (issue 47: the default and vector_entry_point
    modes were refused, and under sync/async next-step autoreset a finished env's mask was all zeros). A sampler
    that draws from the mask (`call("action_masks")`, and `infos["action_mask"]` where the sub-envs give it) plays
    until every env has finished an episode and gone on."""
    num_envs = 2 if mode == "async" else 3
    kwargs = {} if mode is None else {"vectorization_mode": mode}
    venv = gymnasium.make_vec(env_id, num_envs=num_envs, **kwargs)
    try:
        batched = mode in (None, "vector_entry_point")
        assert isinstance(venv.unwrapped, SoloVectorEnv if "Solo" in env_id else VersusVectorEnv) == batched
        _, infos = venv.reset(seed=5)
        rng = np.random.default_rng(0)
        ended = np.zeros(num_envs, dtype=bool)
        for _ in range(400):
            masks = [np.stack(venv.call("action_masks"))] + ([infos["action_mask"]] if not batched else [])
            for m in masks:
                assert m.shape == (num_envs, 268) and m.any(axis=1).all()
            _, _, term, trunc, infos = venv.step(_pick(masks[-1], rng))
            if ended.all() and not (term | trunc).any():
                break
            ended |= term
        assert ended.all()
    finally:
        venv.close()


def test_a_finished_single_env_masks_every_action_and_refuses_to_step():
    """The terminal step's mask is all True (any action: the next-step autoreset only resets), equal to
    action_masks(); step() then raises until reset, and before the first reset too."""
    e = gymnasium.make("harmonies/Solo-v0")
    assert isinstance(e, SoloEnv)  # no wrapper in between: make() answers action_masks() itself
    with pytest.raises(gymnasium.error.ResetNeeded):
        e.step(0)
    _, info = e.reset(seed=1)
    rng = np.random.default_rng(1)
    term = False
    while not term:
        assert info["action_mask"].any() and not info["action_mask"].all()
        _, _, term, _, info = e.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    assert info["action_mask"].all() and e.action_masks().all()
    with pytest.raises(RuntimeError, match="finished episode"):
        e.step(0)
