"""The one checkpoint module (`agents.checkpoint`): every kind of checkpoint (MLP, PPO export, trainer checkpoint, and
the n-tuple network's weights through the same API) round-trips through it and is refused when one byte flips; the
files shipped before the schema still load by path."""
from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest

from agents.archive import read_npz
from agents.checkpoint import (
    SCHEMA_VERSION,
    CheckpointError,
    read_checkpoint,
    weights_sha256,
    write_checkpoint,
)


def _flip(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_the_sidecar_schema_round_trips_and_refuses_a_flipped_byte_a_foreign_format_and_a_large_file(tmp_path):
    """What the n-tuple network's save/load call: its weights as an .npz, format "ntuple", its config and shapes."""
    w = np.arange(12, dtype=np.float32)
    buf = io.BytesIO()
    np.savez(buf, weights=w)
    path = write_checkpoint(tmp_path / "net.npz", buf.getvalue(), "ntuple", {"version": 2, "sizes": [12]},
                            {"weights": [12]}, {"command": "test"})
    side = json.loads((tmp_path / "net.json").read_text())
    assert side == {"format": "ntuple", "version": SCHEMA_VERSION, "weights": "net.npz", "bytes": len(buf.getvalue()),
                    "sha256": weights_sha256(buf.getvalue()), "shapes": {"weights": [12]},
                    "config": {"version": 2, "sizes": [12]}, "training": {"command": "test"}}
    ck = read_checkpoint(tmp_path / "net", ".npz", "ntuple", "an n-tuple checkpoint", 1 << 20)
    assert ck.config["sizes"] == [12] and ck.shapes == {"weights": [12]} and ck.training == {"command": "test"}
    assert np.array_equal(np.load(io.BytesIO(ck.data), allow_pickle=False)["weights"], w)
    with pytest.raises(CheckpointError, match=r"net\.json: a 'ntuple' checkpoint, not an MLP checkpoint \('mlp'\)"):
        read_checkpoint(path, ".npz", "mlp", "an MLP checkpoint", 1 << 20)
    with pytest.raises(CheckpointError, match=r"net\.npz: larger than an n-tuple checkpoint could be \(100 bytes"):
        read_checkpoint(path, ".npz", "ntuple", "an n-tuple checkpoint", 100)  # refused before it is read
    assert np.array_equal(read_npz(ck.data, 4 * 12 + 1024, path)["weights"], w)  # what the n-tuple loader calls
    bomb = io.BytesIO()
    np.savez_compressed(bomb, weights=np.zeros(1 << 22, dtype=np.float32))  # 16 MiB of zeros in a few KiB
    assert len(bomb.getvalue()) < 100_000
    with pytest.raises(CheckpointError, match=r"bomb\.npz: its arrays would take [0-9,]+ bytes, more than the 1,072"):
        read_npz(bomb.getvalue(), 4 * 12 + 1024, "bomb.npz")
    _flip(path)
    with pytest.raises(CheckpointError, match=r"net\.npz: SHA-256 [0-9a-f]{64} is not the [0-9a-f]{64} that net\.json"):
        read_checkpoint(path, ".npz", "ntuple", "an n-tuple checkpoint", 1 << 20)


def test_an_ntuple_checkpoint_round_trips_and_refuses_a_flipped_byte_and_a_zip_bomb(tmp_path):
    """The n-tuple network's own save/load go through the module: the one schema, a flipped byte refused, an .npz
    whose member declares more bytes than the layout's weights refused before it is inflated (its SHA-256 true),
    and the shipped file (a sidecar of the older layout) still loads by path."""
    from agents import ntuple as N

    w = N.heuristic_weights(1)
    path = N.save_checkpoint(tmp_path / "n", w, {"beam": 4, "candidates": 8}, {"note": "test"})
    side = json.loads(path.with_suffix(".json").read_text())
    assert side["format"] == "ntuple" and side["shapes"] == {"weights": [len(w)]} and side["config"]["version"] == 1
    config, got = N.load_checkpoint(path)
    assert np.array_equal(got, w) and config["play"] == {"beam": 4, "candidates": 8} and config["training"]
    _flip(path)
    with pytest.raises(CheckpointError, match=r"n\.npz: SHA-256"):
        N.load_checkpoint(path)
    # a bomb: one zero array 8x the layout's size compresses to a few KB; the sidecar records its true hash
    bomb = io.BytesIO()
    np.savez_compressed(bomb, weights=np.zeros(8 * len(w), dtype=np.float32))
    assert len(bomb.getvalue()) < 4 * len(w)
    (tmp_path / "bomb.npz").write_bytes(bomb.getvalue())
    side["sha256"], side["bytes"], side["weights"] = weights_sha256(bomb.getvalue()), len(bomb.getvalue()), "bomb.npz"
    (tmp_path / "bomb.json").write_text(json.dumps(side))
    with pytest.raises(CheckpointError, match=r"bomb\.npz: its arrays would take"):
        N.load_checkpoint(tmp_path / "bomb.npz")
    for suffix in (".npz", ".json"):
        shutil.copy(N.DEFAULT_CHECKPOINT.with_suffix(suffix), tmp_path / f"shipped{suffix}")
    assert "ntuple" in json.loads((tmp_path / "shipped.json").read_text())  # written before the one schema
    assert N.load_checkpoint(tmp_path / "shipped.npz")[1].shape == (N.LAYOUT_WEIGHTS[2],)


def test_an_mlp_checkpoint_round_trips_and_refuses_a_flipped_byte(tmp_path):
    pytest.importorskip("torch", reason="the MLP reads its weights with torch")
    from agents.mlp import DEFAULT_CHECKPOINT, DEFAULT_CONFIG, load_checkpoint, save_checkpoint, torch_net

    cfg = {**DEFAULT_CONFIG, "hidden": [4]}
    net = torch_net(cfg)
    path = save_checkpoint(tmp_path / "m", net.state_dict(), cfg, {"note": "test"})
    assert json.loads(path.with_suffix(".json").read_text())["format"] == "mlp"
    config, state = load_checkpoint(path)
    assert config["hidden"] == [4] and all(np.array_equal(state[k].numpy(), v.detach().numpy())
                                           for k, v in net.state_dict().items())
    _flip(path)
    with pytest.raises(CheckpointError, match=r"m\.pt: SHA-256"):
        load_checkpoint(path)
    for suffix in (".pt", ".json"):  # the shipped file, sidecar of the older layout, still loads by path
        shutil.copy(DEFAULT_CHECKPOINT.with_suffix(suffix), tmp_path / f"shipped{suffix}")
    assert load_checkpoint(tmp_path / "shipped.pt")[0]["hidden"]


def test_a_ppo_export_round_trips_and_refuses_a_flipped_byte(tmp_path):
    pytest.importorskip("sb3_contrib", reason="PPO exports need the train extra")
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from agents.ppo import POLICY_FORMAT, load_policy, save_policy

    policy = MaskableActorCriticPolicy(spaces.Box(-1, 1, (5,), np.float32), spaces.Discrete(3), lambda _: 0.0,
                                       net_arch=[4])
    path = save_policy(policy, tmp_path / "p.pt")
    side = json.loads(path.with_suffix(".json").read_text())
    assert side["format"] == POLICY_FORMAT and side["config"]["policy_kwargs"]["net_arch"] == [4]
    assert side["shapes"]["action_net.weight"] == [3, 4]
    loaded = load_policy(path)
    assert all(np.array_equal(loaded.state_dict()[k].numpy(), v.numpy()) for k, v in policy.state_dict().items())
    _flip(path)
    with pytest.raises(ValueError, match=r"p\.pt: SHA-256"):
        load_policy(path)


def test_a_trainer_checkpoint_round_trips_and_a_flipped_one_is_skipped(tmp_path):
    from experiments.common import latest_checkpoint, save_checkpoint

    first = save_checkpoint(tmp_path, 1, b"weights one", {"pool": [1]})
    second = save_checkpoint(tmp_path, 2, b"weights two", {"pool": [2]})
    path, rec = latest_checkpoint(tmp_path)
    assert path == second and rec["format"] == "trainer" and rec["state"] == {"pool": [2]} and rec["timesteps"] == 2
    _flip(second)
    assert latest_checkpoint(tmp_path)[0] == first  # a torn or flipped newest one: the one before it
