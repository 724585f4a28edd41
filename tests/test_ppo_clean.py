"""The single-file PPO baseline (experiments/ppo_clean.py): a few hundred seeded steps run, learn (the weights move,
stay finite), reproduce exactly, and save weights + JSON config with their SHA-256 (no pickle)."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from experiments.ppo_clean import Args, Policy, evaluate, milestones, train  # noqa: E402


def test_a_few_hundred_seeded_steps_run_reproduce_and_save(tmp_path):
    args = Args(seed=3, num_envs=2, num_steps=64, total_steps=256, cpu_seconds=300, hidden=16, eval_games=1)
    torch.manual_seed(3)
    first = Policy(2811, 268, 16)  # the untrained network train() starts from (same seed)
    policy, curve = train(args, tmp_path / "solo", log=lambda line: None)
    again, curve2 = train(args, log=lambda line: None)
    def plain(c):
        return [{k: v for k, v in r.items() if k != "cpu_s"} for r in c]
    assert [r["steps"] for r in curve] == [128, 256] and plain(curve) == plain(curve2)
    for (k, a), b in zip(policy.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), k
        assert torch.isfinite(a).all(), k
    assert not torch.equal(policy.actor[-1].weight, first.actor[-1].weight)  # it learned something
    meta = json.loads((tmp_path / "solo.json").read_text())
    data = (tmp_path / "solo.npz").read_bytes()
    assert meta["sha256"] == hashlib.sha256(data).hexdigest() and meta["config"]["args"]["seed"] == 3
    with np.load(tmp_path / "solo.npz", allow_pickle=False) as z:
        assert np.array_equal(z["actor.4.weight"], policy.actor[-1].weight.detach().numpy())
    result = evaluate(policy, args)
    assert result["eval_games"] == 1 and result["eval_mean"] > 0  # a whole legal game was played


def test_bad_args_are_one_line():
    with pytest.raises(ValueError, match="num_envs must be >= 1, got 0"):
        Args(num_envs=0).check()
    with pytest.raises(ValueError, match="opponent random or greedy"):
        Args(players=2, opponent="mcts").check()
    with pytest.raises(ValueError, match="total_steps >= 1"):
        Args(total_steps=0).check()


def test_the_curve_by_cpu_time_keeps_the_first_update_past_each_mark_and_the_last():
    curve = [{"cpu_s": c, "steps": 1024 * (k + 1), "mean_return_last_50": float(k)}
             for k, c in enumerate([5.0, 29.9, 30.1, 45.0, 95.0, 100.0])]
    assert milestones(curve) == [[30.1, 3072, 2.0], [95.0, 5120, 4.0], [100.0, 6144, 5.0]]


def test_ctrl_c_in_training_saves_the_policy_so_far_says_one_line_and_exits_130(tmp_path, monkeypatch, capsys):
    import experiments.ppo_clean as ppo_clean

    real_train = ppo_clean.train

    def interrupted(line: str) -> None:  # Ctrl-C as the first update's progress line is written: a point surely reached
        raise KeyboardInterrupt

    monkeypatch.setattr(ppo_clean, "train", lambda args, out: real_train(args, out, log=interrupted))
    rc = ppo_clean.main(["--seed", "3", "--num-envs", "2", "--num-steps", "64", "--total-steps", "256",
                         "--hidden", "16", "--eval-games", "1", "--out", str(tmp_path / "solo")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 130
    assert err == [f"ppo_clean: stopped by SIGINT (Ctrl-C); the policy so far is in {tmp_path / 'solo.npz'}"]
    meta = json.loads((tmp_path / "solo.json").read_text())
    assert meta["sha256"] == hashlib.sha256((tmp_path / "solo.npz").read_bytes()).hexdigest()
