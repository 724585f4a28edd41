"""Smoke test: RLlib self-play PPO with action masking trains on the AEC env in-process.

Skipped without Ray, except under CI (the CI environment variable set): .ci/run installs the distributed extra,
so there a missing Ray is an install failure, not a reason to skip.
"""
from __future__ import annotations

import os

import pytest

if os.environ.get("CI"):
    import ray
    import ray.rllib  # noqa: F401
else:
    ray = pytest.importorskip("ray", reason="Ray RLlib is the optional extra: pip install -e .[distributed]")
    pytest.importorskip("ray.rllib", reason="Ray is installed without RLlib: pip install -e .[distributed]")


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def test_selfplay_ppo_iteration_with_masking(ray_local, tmp_path, monkeypatch):
    import json

    import torch
    from ray.rllib.algorithms.algorithm import Algorithm

    from agents.checkpoint import CheckpointError
    from experiments.rllib_selfplay import (
        build_config,
        legal_action_rate,
        make_env,
        restore,
        save_checkpoint,
        summarize,
    )
    from harmonies_env import GameConfig

    env = make_env({"num_players": 2})
    assert set(env.possible_agents) == {"player_0", "player_1"}
    settings = {"config": GameConfig(2), "train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1,
                "hidden": (32,)}
    config = build_config(**settings, num_env_runners=0)
    algo = config.build_algo()
    try:
        result = algo.train()
        line = summarize(result, 1, 0.0)
        assert line["env_steps_sampled"] >= 256 and line["episodes"] >= 1
        # "win" rewards of a 2-player game sum to 0 over the seats; an illegal action (the wrapper's -1 to
        # one seat, 0 to the other) would make the sum negative: masking kept every sampled action legal
        assert line["episode_return_mean"] == 0.0
        assert legal_action_rate(algo, games=1, config=GameConfig(2)) == 1.0
        trained = {k: v.detach().clone() for k, v in algo.get_module("shared").state_dict().items()}
        folder = save_checkpoint(algo, tmp_path / "ckpt", settings, 1)
    finally:
        algo.stop()
    # weights-only: module.pt (tensors) + module.json (agents.checkpoint's one sidecar), no pickle; restoring never
    # goes through RLlib's unpickling
    assert sorted(p.name for p in folder.iterdir()) == ["module.json", "module.pt"]
    record = json.loads((folder / "module.json").read_text())
    assert (record["format"], record["training"]["iteration"]) == ("rllib", 1)
    assert record["config"]["settings"]["config"] == {"num_players": 2, "side": "A", "spirits": False,
                                                      "river_loops": "rulebook"}
    torch.load(folder / "module.pt", weights_only=True)

    def refuse(*a, **k):
        raise AssertionError("restore went through RLlib's pickled checkpoint loader")

    monkeypatch.setattr(Algorithm, "from_checkpoint", classmethod(refuse))
    monkeypatch.setattr(Algorithm, "restore_from_path", refuse)
    again = restore(folder)
    try:
        module = again.get_module("shared")
        assert type(module).__name__ == "MaskedPPOModule"
        restored = module.state_dict()
        assert set(restored) == set(trained) and all(torch.equal(restored[k], trained[k]) for k in trained)
        assert legal_action_rate(again, games=1, config=GameConfig(2)) == 1.0
    finally:
        again.stop()
    # a folder written before the one sidecar schema (checkpoint.json, loose game settings) still restores
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    weights = (folder / "module.pt").read_bytes()
    (legacy / "module.pt").write_bytes(weights)
    old_settings = {"num_players": 2, "train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1, "hidden": [32]}
    (legacy / "checkpoint.json").write_text(json.dumps({
        "format": "harmonies-rllib-checkpoint", "version": 1, "iteration": 1, "module": "shared",
        "settings": old_settings, "weights": "module.pt", "weights_bytes": len(weights),
        "weights_sha256": record["sha256"]}))
    old = restore(legacy)
    try:
        restored = old.get_module("shared").state_dict()
        assert all(torch.equal(restored[k], trained[k]) for k in trained)
    finally:
        old.stop()
    flipped = bytearray(weights)
    flipped[len(flipped) // 2] ^= 1
    (legacy / "module.pt").write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="SHA-256"):
        restore(legacy)
    (folder / "module.pt").write_bytes(weights[:-8])  # a torn write is refused
    with pytest.raises(CheckpointError, match="SHA-256"):
        restore(folder)
    rllib_own = tmp_path / "rllib_own"  # RLlib's own save_to_path layout: refused before anything is read
    rllib_own.mkdir()
    (rllib_own / "class_and_ctor_args.pkl").write_bytes(b"not read")
    with pytest.raises(ValueError, match="stores pickles"):
        restore(rllib_own)
