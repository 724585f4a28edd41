"""MaskablePPO trains on Solo-v0 and Versus-v0 (vs random) and then only ever picks legal actions."""
from __future__ import annotations

import numpy as np
import pytest

sb3_contrib = pytest.importorskip("sb3_contrib")
torch = pytest.importorskip("torch")

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from harmonies_env.env_gym import SoloEnv, VersusEnv  # noqa: E402


def train_and_check(make_env, timesteps: int = 4096, eval_steps: int = 300) -> MaskablePPO:
    torch.set_num_threads(1)
    venv = DummyVecEnv([make_env, make_env])
    venv.seed(0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=256, batch_size=128, n_epochs=2, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [64, 64]})
    model.learn(total_timesteps=timesteps)
    assert model.num_timesteps >= timesteps
    env = make_env()
    obs, _ = env.reset(seed=123)
    legal = episodes = 0
    for _ in range(eval_steps):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        legal += bool(mask[int(action)])
        obs, _, term, trunc, info = env.step(int(action))
        assert "illegal_action" not in info
        if term or trunc:
            episodes += 1
            obs, _ = env.reset()
    assert legal == eval_steps  # 100% legal actions
    assert episodes >= 1
    return model


def test_maskable_ppo_solo():
    model = train_and_check(lambda: SoloEnv())
    # the masked policy's action distribution puts no probability on illegal actions
    env = SoloEnv()
    obs, _ = env.reset(seed=5)
    mask = env.action_masks()
    obs_t, _ = model.policy.obs_to_tensor(obs)
    dist = model.policy.get_distribution(obs_t, action_masks=mask[None])
    probs = dist.distribution.probs.detach().numpy()[0]
    assert probs[~mask].max() == 0 and np.isclose(probs[mask].sum(), 1.0)


def test_maskable_ppo_versus_random():
    train_and_check(lambda: VersusEnv(num_players=2, reward="win"))
