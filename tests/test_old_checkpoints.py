"""Checkpoint files written by earlier versions still load: one stored fixture per older format
(tests/data/old_checkpoints/, each written by the code of the commit in its folder's name: tests/old_checkpoints.py
says how), read by today's loaders to the same numbers their writers computed. The one older format refused (an MLP
sidecar from before the SHA-256 was recorded) is refused in one line that says how to accept it, and then loads."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from agents.checkpoint import CheckpointError

OLD = Path(__file__).parent / "data" / "old_checkpoints"
#: What each MLP fixture's network gave its writer on linspace(-1, 1, 1968) (tests/old_checkpoints.py prints it).
MLP_OUT = [0.3474922776222229, -0.6317811012268066, 0.2641803026199341, 0.43240582942962646, -0.6041326522827148,
           -0.5806186199188232, -0.5049851536750793, 0.21055516600608826]
#: What each PPO fixture's policy gave its writer on linspace(0, 1, OBS_SIZE): the first 4 logits, the value.
PPO_OUT = ([-5.590699672698975, -5.591184616088867, -5.591251373291016, -5.59126091003418], -0.8328973054885864)


def _mlp_outputs(config: dict, state: dict) -> list[float]:
    import torch

    from agents.mlp.agent import torch_net

    net = torch_net(config)
    net.load_state_dict(state)
    return net(torch.linspace(-1, 1, config["num_features"])[None]).detach().numpy()[0].tolist()


def test_an_mlp_sidecar_with_its_sha256_but_before_the_schema_loads():
    """mlp-2902963: {network, sha256, training}, as train_mlp wrote it before agents.checkpoint's schema."""
    pytest.importorskip("torch")
    from agents.mlp.agent import load_checkpoint

    config, state = load_checkpoint(OLD / "mlp-2902963" / "mlp")
    assert config["hidden"] == [2] and sorted(state) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert _mlp_outputs(config, state) == pytest.approx(MLP_OUT, abs=1e-6)


def test_an_mlp_sidecar_from_before_the_sha256_is_refused_in_one_line_that_says_how_to_accept_it(tmp_path):
    """mlp-76a8f8b: {network, training}, no SHA-256 (train_learned before d99328b). Deliberately not loaded as it is:
    nothing ties its weights to its config; the one-line refusal gives the hash to add, and with it the file loads."""
    pytest.importorskip("torch")
    from agents.mlp.agent import load_checkpoint

    for f in ("mlp.pt", "mlp.json"):
        shutil.copy(OLD / "mlp-76a8f8b" / f, tmp_path / f)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "mlp")
    msg = str(e.value)
    assert "\n" not in msg and "no 'sha256' of mlp.pt" in msg and "add \"sha256\"" in msg
    doc = json.loads((tmp_path / "mlp.json").read_text())
    doc["sha256"] = msg.split('"sha256": "')[1].split('"')[0]  # what the message says to add
    (tmp_path / "mlp.json").write_text(json.dumps(doc))
    config, state = load_checkpoint(tmp_path / "mlp")
    assert _mlp_outputs(config, state) == pytest.approx(MLP_OUT, abs=1e-6)


@pytest.mark.parametrize("folder, name, layout, head", [("ntuple-245b3c4", "ntuple", 1, "points"),
                                                        ("ntuple-d540ad2", "learned-win", 2, "win")])
def test_an_ntuple_sidecar_from_before_the_schema_loads_layouts_1_and_2(folder, name, layout, head):
    """{ntuple, sha256, training} as agents/ntuple wrote it before the schema (de279eb): layout 1 (the first network,
    245b3c4) and layout 2 with the win head (d540ad2); the weights come back exactly."""
    from agents.ntuple.agent import load_checkpoint
    from agents.ntuple.kernels import LAYOUT_WEIGHTS

    config, w = load_checkpoint(OLD / folder / name)
    assert (config["version"], config["head"], config["play"]) == (layout, head, {"beam": 4, "candidates": 8})
    want = np.zeros(LAYOUT_WEIGHTS[layout], dtype=np.float32)
    want[::99991] = np.arange(len(want[::99991]), dtype=np.float32) * 0.5 - 3.0
    assert w.dtype == np.float32 and np.array_equal(w, want)


@pytest.mark.parametrize("folder", ["ppo-afbaac7", "ppo-2902963"])
def test_a_flat_ppo_export_from_before_the_schema_loads(folder):
    """The flat export (policy config with weights_bytes / weights_sha256) before the schema (d0c2ec8): without
    observation_version (afbaac7: it loads by its observation size) and with it (2902963)."""
    pytest.importorskip("sb3_contrib")
    import torch

    from agents.ppo import load_policy
    from harmonies_env.observation import OBS_SIZE

    policy = load_policy(OLD / folder / "policy.pt")
    x = torch.linspace(0, 1, OBS_SIZE)[None]
    with torch.no_grad():
        logits = policy.get_distribution(x).distribution.logits[0, :4].tolist()
        value = policy.predict_values(x)[0].item()
    assert logits == pytest.approx(PPO_OUT[0], abs=1e-6) and value == pytest.approx(PPO_OUT[1], abs=1e-6)


def test_a_ppo_resume_checkpoint_of_format_1_resumes_without_games_in_flight():
    """ppo-76a8f8b/step_1234.pt: "harmonies-ppo-checkpoint-1" (weights, optimizer, counters, generators; no games in
    flight), written by the runner's checkpoint_bytes before 76dc58a. Today's restore takes it all back and says why
    the games in flight were not (the run then starts new games)."""
    pytest.importorskip("sb3_contrib")
    import torch
    from old_checkpoints import stub_ppo

    from experiments.ppo.checkpoint import restore_checkpoint

    path = OLD / "ppo-76a8f8b" / "step_1234.pt"
    saved = torch.load(path, weights_only=True)
    assert saved["format"] == "harmonies-ppo-checkpoint-1" and "env" not in saved and "last_obs" not in saved
    model = stub_ppo(seed=1)  # other initial weights than the file's
    model.get_env().set_state = lambda state: pytest.fail("the file holds no games to set")  # as our envs can
    kept = torch.get_rng_state(), np.random.get_state(), random.getstate()  # restore sets the global generators
    try:
        why = restore_checkpoint(model, path)
        assert torch.equal(torch.get_rng_state(), saved["torch_rng"])
    finally:
        torch.set_rng_state(kept[0])
        np.random.set_state(kept[1])
        random.setstate(kept[2])
    assert why == "the checkpoint keeps no games in flight (an older version's, or an env's that cannot keep them)"
    assert (model.num_timesteps, model._n_updates) == (1234, 5)
    state = model.policy.state_dict()
    assert sorted(state) == sorted(saved["policy"])
    assert all(torch.equal(state[k], saved["policy"][k]) for k in state)


def test_a_run_checkpoint_record_from_before_the_schema_is_found_and_resumed():
    """run-2902963/checkpoints: step_N.pt + the record {timesteps, model, bytes, sha256, state} that
    experiments.common.save_checkpoint wrote before agents.checkpoint's schema (d0c2ec8). `--resume` finds it as the
    run's newest complete checkpoint (its size and SHA-256 checked) and restores the model from it."""
    pytest.importorskip("sb3_contrib")
    import torch
    from old_checkpoints import stub_ppo

    from experiments.common import latest_checkpoint
    from experiments.ppo.checkpoint import restore_checkpoint

    found = latest_checkpoint(OLD / "run-2902963" / "checkpoints")
    assert found is not None
    path, record = found
    assert path.name == "step_000000001234.pt" and record["timesteps"] == 1234
    assert record["state"] == {"evals": [], "minutes": 1.5, "cpu_minutes": 1.25}
    model = stub_ppo(seed=1)
    kept = torch.get_rng_state(), np.random.get_state(), random.getstate()
    try:
        restore_checkpoint(model, path)
    finally:
        torch.set_rng_state(kept[0])
        np.random.set_state(kept[1])
        random.setstate(kept[2])
    saved = torch.load(path, weights_only=True)["policy"]
    assert model.num_timesteps == 1234 and all(torch.equal(v, saved[k]) for k, v in model.policy.state_dict().items())


def test_an_rllib_folder_from_before_the_schema_gives_its_weights_and_settings():
    """rllib-2902963/iter_00003: checkpoint.json (format harmonies-rllib-checkpoint 1, loose num_players / side /
    spirits among its settings) + module.pt, as experiments.rllib_selfplay.save_checkpoint wrote it before the schema.
    What `restore` reads from it: the checked weights and the settings, the game's as one GameConfig (building the
    algorithm itself needs a Ray cluster: tests/test_rllib.py)."""
    pytest.importorskip("ray")
    import io

    import torch

    from experiments.rllib_selfplay import _legacy_weights
    from harmonies_env import GameConfig

    weights, settings = _legacy_weights(OLD / "rllib-2902963" / "iter_00003")
    assert settings == {"config": GameConfig(2, "B", True), "hidden": (1,), "seed": 7}
    state = torch.load(io.BytesIO(weights), weights_only=True)
    assert torch.equal(state["pi.weight"], torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4)
    assert torch.equal(state["pi.bias"], torch.tensor([0.5, -1.0, 2.0]))
