"""The experiments layer: atomic writes survive SIGKILL, checkpoints are taken only when complete, configs and
`--set` overrides are checked, and a real training process killed again and again during its checkpoint writes
resumes every time and finishes its run."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.common import (
    ConfigError,
    apply_overrides,
    atomic_write_bytes,
    atomic_write_csv,
    check_config,
    latest_checkpoint,
    load_config,
    parse_value,
    read_csv,
    remove_temp_files,
    save_checkpoint,
    section,
)

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------------------
# atomic writes and checkpoints
# ---------------------------------------------------------------------------------------------------------
def _writer(path: str) -> None:
    """Overwrite `path` forever, alternating two 2 MB contents (run in a child that gets SIGKILLed)."""
    k = 0
    while True:
        atomic_write_bytes(path, (b"a" if k % 2 else b"b") * 2_000_000)
        k += 1


def test_atomic_write_survives_sigkill_at_random_moments(tmp_path):
    path = tmp_path / "f.bin"
    atomic_write_bytes(path, b"a" * 2_000_000)
    ctx = mp.get_context("fork")
    rng = random.Random(0)
    for _ in range(25):
        child = ctx.Process(target=_writer, args=(str(path),))
        child.start()
        time.sleep(rng.uniform(0.0, 0.05))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        data = path.read_bytes()
        assert data in (b"a" * 2_000_000, b"b" * 2_000_000)  # the old file or the new one, never a torn one
    remove_temp_files(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    atomic_write_bytes(path, b"old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_checkpoints_newest_complete_one_wins(tmp_path):
    ck = tmp_path / "ck"
    assert latest_checkpoint(ck) is None
    for t in (100, 200, 300):
        save_checkpoint(ck, t, f"model-{t}".encode(), {"pool": [t]}, keep=2)
    assert sorted(p.name for p in ck.iterdir()) == ["step_000000000200.json", "step_000000000200.pt",
                                                    "step_000000000300.json", "step_000000000300.pt"]
    z, rec = latest_checkpoint(ck)
    assert z.name == "step_000000000300.pt" and rec["timesteps"] == 300 and rec["state"] == {"pool": [300]}
    (ck / "step_000000000300.pt").write_bytes(b"model-3")  # torn (shorter than recorded)
    assert latest_checkpoint(ck)[1]["timesteps"] == 200
    (ck / "step_000000000300.pt").write_bytes(b"model-301")  # same size, other bytes
    assert latest_checkpoint(ck)[1]["timesteps"] == 200
    (ck / "step_000000000400.pt").write_bytes(b"model-400")  # a zip whose record never got written
    (ck / "step_000000000500.json").write_text('{"timesteps": 5')  # a torn record (not atomic: by hand)
    (ck / ".step_000000000600.pt.1.ab.tmp").write_bytes(b"partial")
    assert latest_checkpoint(ck)[1]["timesteps"] == 200
    assert remove_temp_files(ck) == 1
    with pytest.raises(ValueError):
        save_checkpoint(ck, 1, b"x", {}, keep=0)


def test_csv_rows_round_trip(tmp_path):
    atomic_write_csv(tmp_path / "e.csv", [{"timesteps": 1, "score": 2.5}, {"timesteps": 2, "score": 3.0,
                                                                          "win_rate": 0.5}])
    rows = read_csv(tmp_path / "e.csv")
    assert rows == [{"timesteps": "1", "score": "2.5", "win_rate": ""},
                    {"timesteps": "2", "score": "3.0", "win_rate": "0.5"}]


# ---------------------------------------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------------------------------------
def test_config_overrides_are_checked():
    cfg = {"run": {"timesteps": 10}, "ppo": {"learning_rate": 3e-4, "net_arch": [64, 64]}}
    out = apply_overrides(cfg, ["ppo.learning_rate=1e-4", "ppo.net_arch=[16]", "run.timesteps=5"])
    assert out == {"run": {"timesteps": 5}, "ppo": {"learning_rate": 1e-4, "net_arch": [16]}}
    assert cfg["ppo"]["net_arch"] == [64, 64]  # the original is untouched
    assert parse_value("true") is True and parse_value('"A"') == "A" and parse_value("A") == "A"
    for bad, msg in (("ppo.learning_rat=1", "unknown setting ppo.learning_rat"),
                     ("env.n_envs=2", "unknown section 'env'"), ("ppo.learning_rate", "section.key=value")):
        with pytest.raises(ConfigError, match=msg):
            apply_overrides(cfg, [bad])
    with pytest.raises(ConfigError, match=r"unknown setting run.timestep \(known: timesteps\)"):
        section({"run": {"timestep": 1}}, "run", {"timesteps": 0})
    assert section({}, "run", {"timesteps": 7}) == {"timesteps": 7}


def test_one_typed_config_loader_for_every_command(tmp_path):
    """`check_config` / `load_config` / `apply_overrides` with a command's schema: unknown sections and settings and
    values of the wrong kind are refused by name, once, at load (the same words for every command); left-out settings
    read as their defaults, optional ones ([ppo]'s) stay out; `--set` reaches into a table setting."""
    from experiments.evaluators.mlp import DEFAULTS
    from experiments.flat_ppo import SCHEMAS

    solo = SCHEMAS["solo-ppo"]
    f = tmp_path / "c.toml"
    f.write_text('[run]\ntimesteps = 64\n[ppo]\nlearning_rate = 1e-4\n')
    cfg = load_config(f, solo, ["env.n_envs=8", "ppo.net_arch=[16]"])
    assert cfg["run"]["timesteps"] == 64 and cfg["run"]["eval_every"] == 50_000 and cfg["env"]["n_envs"] == 8
    assert cfg["ppo"] == {"learning_rate": 1e-4, "net_arch": [16]}  # MaskablePPO's own defaults for the rest
    for schema, bad, msg in (
            (solo, "ppo.learning_rate=abc", "ppo.learning_rate takes a number, got 'abc'"),
            (solo, "ppo.learning_rat=1", "unknown setting ppo.learning_rat"),
            (solo, "nope.x=1", "unknown section 'nope'"),
            (solo, "env.spirits=1", "env.spirits takes true or false, got 1"),
            (solo, "run.timesteps=true", "run.timesteps takes a number, got True"),
            (solo, "env.side=[1]", "env.side takes text, got \\[1\\]"),
            (DEFAULTS, "train.lr=abc", "train.lr takes a number, got 'abc'"),
            (DEFAULTS, "train.lr_final=x", "train.lr_final takes a number, got 'x'"),
            (DEFAULTS, "network.play=3", "network.play takes a table, got 3")):
        with pytest.raises(ConfigError, match=msg):
            apply_overrides(check_config({}, schema), [bad], schema)
    f.write_text('[ppo]\nlearning_rate = "fast"\n')
    with pytest.raises(ConfigError, match="c.toml: ppo.learning_rate takes a number, got 'fast'"):
        load_config(f, solo)
    learned = apply_overrides(check_config({}, DEFAULTS), ["network.play.beam=8", "train.lr_final=1e-4"], DEFAULTS)
    assert learned["network"]["play"]["beam"] == 8 and learned["train"]["lr_final"] == 1e-4
    assert check_config({}, DEFAULTS)["train"]["lr_final"] is None


def test_shipped_configs_parse_and_name_known_keys():
    from experiments.commands import CONFIGS, commands, schema

    for name, (_, _, file, _) in commands().items():
        if not file:  # a command that parses its own flags and config, or a learner without a config file
            continue
        if name == "rllib-ppo":
            pytest.importorskip("ray", reason="needs the distributed extra")
        cfg = load_config(CONFIGS / file, schema(name))  # validated against the command's schema
        assert cfg and set(cfg) == set(schema(name)), name
    with pytest.raises(ConfigError, match="not found"):
        load_config(CONFIGS / "nope.toml")


def test_train_command_line_errors(tmp_path, capsys):
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    from experiments import train

    with pytest.raises(SystemExit, match="unknown setting ppo.learning_rat"):
        train.main(["solo-ppo", "--run", str(tmp_path / "a"), "--set", "ppo.learning_rat=1"])
    with pytest.raises(SystemExit, match="holds no run"):
        train.main(["solo-ppo", "--run", str(tmp_path / "b"), "--resume"])
    with pytest.raises(SystemExit, match=r"\[env\] vec must be"):
        train.main(["solo-ppo", "--run", str(tmp_path / "c"), "--set", 'env.vec="fast"'])
    assert not (tmp_path / "c").exists()  # a refused new run leaves no folder
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text(json.dumps({"algo": "solo-ppo", "seed": 0, "config": {}}))
    with pytest.raises(SystemExit, match="is a solo-ppo run, not versus-ppo"):
        train.main(["versus-ppo", "--run", str(tmp_path / "c"), "--resume"])
    with pytest.raises(SystemExit):  # argparse: unknown command
        train.main(["nope"])
    assert "usage" in capsys.readouterr().err
    assert train.main([]) == 0 and "solo-ppo" in capsys.readouterr().out  # no command: the help


def test_a_command_that_parses_its_own_flags_registers_in_one_line(monkeypatch, capsys):
    import types

    from experiments import commands, train

    calls = []
    module = types.ModuleType("own_flags_cmd")
    module.main = lambda argv: calls.append(argv) or 3
    monkeypatch.setitem(sys.modules, "own_flags_cmd", module)
    monkeypatch.setitem(commands.COMMANDS, "own", ("own_flags_cmd", "main", None, "parses its own flags"))
    assert train.main(["own", "--config", "x.toml", "--whatever", "1"]) == 3
    assert calls == [["--config", "x.toml", "--whatever", "1"]]
    with pytest.raises(SystemExit):
        train.main(["--help"])
    assert "parses its own flags (its own flags: own --help)" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------------------
# a real training process, SIGKILLed during its checkpoint writes, resumes every time
# ---------------------------------------------------------------------------------------------------------
TOTAL = 2048  # steps of the killed run: 16 updates of 8 games x 16 steps, a checkpoint after every update
TINY = ["--set", f"run.timesteps={TOTAL}", "--set", "run.checkpoint_every=128", "--set", "run.eval_every=512",
        "--set", "run.eval_episodes=2", "--set", "env.n_envs=8", "--set", "ppo.n_steps=16",
        "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=1", "--set", "ppo.net_arch=[64]", "--no-progress"]


def _launch(run: Path, resume: bool) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "experiments.train", "solo-ppo", "--run", str(run), *TINY]
    if resume:
        cmd.append("--resume")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _steps(run: Path) -> int:
    found = latest_checkpoint(run / "checkpoints")
    return -1 if found is None else found[1]["timesteps"]


def test_training_resumes_after_sigkill_during_checkpoint_writes(tmp_path):
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    run = tmp_path / "run"
    rng = random.Random(1)
    ck = run / "checkpoints"
    reached = [-1]
    torn = 0
    for round_ in range(4):  # each round gains an update or two of the 16: the run is surely still going
        proc = _launch(run, resume=round_ > 0)
        before = reached[-1]
        # wait until this process has written a checkpoint of its own, then kill it: on odd rounds the moment a
        # temp file of a checkpoint write shows up (mid-write), on even rounds after a random delay
        deadline = time.monotonic() + 600  # generous: a loaded machine slows the start (imports, kernels)
        while _steps(run) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        if round_ % 2:
            t_end = time.monotonic() + 10
            while time.monotonic() < t_end and not any(p.name.endswith(".tmp") for p in ck.iterdir()):
                time.sleep(0.0005)
        else:
            time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        out = proc.communicate()[0]
        torn += any(p.name.endswith(".tmp") for p in ck.iterdir())
        now = _steps(run)
        assert now > before, out[-3000:]  # progress was kept: the newest complete checkpoint is newer
        if round_ > 0:
            assert f"at {before} steps" in out  # it resumed from the newest complete checkpoint
        reached.append(now)
        assert now < TOTAL, "the run finished before it was killed: make TOTAL larger"
    proc = _launch(run, resume=True)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out[-3000:]
    assert f"at {reached[-1]} steps" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["timesteps"] == TOTAL
    assert not any(p.name.endswith(".tmp") for p in ck.iterdir())
    rows = [int(r["timesteps"]) for r in read_csv(run / "eval.csv")]
    assert rows == sorted(set(rows)) and rows[-1] == TOTAL  # no evaluation twice after a resume
    print(f"{len(reached) - 1} kills, {torn} left a torn temp file; checkpoints reached {reached[1:]}")


def test_a_tiny_run_is_evaluated_and_plotted(tmp_path, capsys):
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    from experiments import plot, train
    from experiments.ppo import evaluate

    run = tmp_path / "solo"
    assert train.main(["solo-ppo", "--run", str(run), "--no-progress", "--set", "run.timesteps=256",
                       "--set", "run.eval_every=128", "--set", "run.eval_episodes=2", "--set", "env.n_envs=8",
                       "--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.net_arch=[16]"]) == 0
    assert [int(r["timesteps"]) for r in read_csv(run / "eval.csv")] == [0, 128, 256]  # 0: untrained
    assert train.main(["solo-ppo", "--run", str(run), "--resume", "--no-progress"]) == 0  # nothing left to do
    done = json.loads((run / "summary.json").read_text())
    assert done["timesteps"] == 256 and done["this_process_steps"] == 0
    assert [int(r["timesteps"]) for r in read_csv(run / "eval.csv")] == [0, 128, 256]
    capsys.readouterr()
    assert evaluate.main([str(run), "--games", "3", "--out", str(tmp_path / "e.json")]) == 0
    model = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert model["games"] == 3 and model["mean_score"] > 0 and "mean_suns" in model
    assert json.loads((tmp_path / "e.json").read_text()) == model
    assert evaluate.main([str(run), "--games", "3", "--policy", "random"]) == 0
    rand = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rand["policy"] == "random" and rand["games"] == 3 and "mean_suns" in rand
    # the per-env path (Solo-v0 in a DummyVecEnv) trains too; evaluation stays batched
    d = tmp_path / "dummy"
    assert train.main(["solo-ppo", "--run", str(d), "--no-progress", "--set", 'env.vec="dummy"', "--set",
                       "env.n_envs=2", "--set", "run.timesteps=64", "--set", "run.eval_every=0", "--set",
                       "run.eval_episodes=2", "--set", "ppo.n_steps=32", "--set", "ppo.batch_size=32"]) == 0
    assert json.loads((d / "summary.json").read_text())["timesteps"] == 64
    assert [int(r["timesteps"]) for r in read_csv(d / "eval.csv")] == [64]  # eval_every 0: the final one only
    png = plot.plot([run], ["mean_score", "mean_suns"], tmp_path / "img" / "c.png", refs=[("mean_score", "x", 5.0)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_checkpoints_are_weights_only_and_resume_unpickles_nothing(tmp_path, monkeypatch):
    """A run's checkpoints are `torch.save`d tensors and plain values (`weights_only=True` reads them) plus JSON;
    `--resume` and `[run] init` never go through Stable-Baselines3's pickling loader."""
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    import numpy as np
    import sb3_contrib
    import stable_baselines3.common.save_util as save_util
    import torch

    from experiments import train
    from experiments.ppo.checkpoint import CHECKPOINT_FORMAT

    small = ["--no-progress", "--set", "run.eval_every=0", "--set", "run.eval_episodes=2", "--set", "env.n_envs=8",
             "--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.net_arch=[16]",
             "--set", "run.checkpoint_every=128"]
    run = tmp_path / "run"
    assert train.main(["solo-ppo", "--run", str(run), "--set", "run.timesteps=256", *small]) == 0
    path, rec = latest_checkpoint(run / "checkpoints")
    assert path.suffix == ".pt" and rec["timesteps"] == 256
    assert not list((run / "checkpoints").glob("*.zip"))
    ck = torch.load(path, weights_only=True)  # tensors and plain values only
    assert ck["format"] == CHECKPOINT_FORMAT and ck["num_timesteps"] == 256 and ck["n_updates"] > 0
    assert set(ck) >= {"policy", "optimizer", "torch_rng", "numpy_rng", "python_rng"}

    def refuse(*a, **k):
        raise AssertionError("resuming unpickled a Stable-Baselines3 zip")

    monkeypatch.setattr(sb3_contrib.MaskablePPO, "load", classmethod(refuse))
    monkeypatch.setattr(save_util, "load_from_zip_file", refuse)
    monkeypatch.setattr(save_util, "json_to_data", refuse)  # where SB3 unpickles `:serialized:` entries
    real_load = torch.load

    def weights_only_load(*a, **k):
        assert k.get("weights_only") is True, "torch.load without weights_only=True"
        return real_load(*a, **k)

    monkeypatch.setattr(torch, "load", weights_only_load)
    assert train.main(["solo-ppo", "--run", str(run), "--resume", "--set", "run.timesteps=384", *small]) == 0
    path2, rec2 = latest_checkpoint(run / "checkpoints")
    assert rec2["timesteps"] == 384
    ck2 = torch.load(path2, weights_only=True)
    assert ck2["n_updates"] > ck["n_updates"]  # it continued the optimizer's updates, not a fresh model's
    changed = [k for k in ck["policy"] if not torch.equal(ck["policy"][k], ck2["policy"][k])]
    assert changed  # and trained on
    # what the run wrote: no zip, no pickle; the policy export is model.pt (a state dict) + model.json
    assert json.loads((run / "summary.json").read_text())["model"] == str(run / "model.pt")
    files = [p for p in run.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix == ".zip"]
    for p in files:
        if p.suffix == ".pt":
            torch.load(p, weights_only=True)  # refuses anything but tensors and plain containers
        elif p.suffix == ".json":
            json.loads(p.read_text())
        else:
            assert p.suffix == ".csv" or p.name.startswith("events.out.tfevents"), p
    export = torch.load(run / "model.pt", weights_only=True)
    assert all(torch.equal(export[k], ck2["policy"][k]) for k in ck2["policy"]) and set(export) == set(ck2["policy"])
    assert json.loads((run / "model.json").read_text())["config"]["kind"] == "action"
    # ppo:<run>/model.pt plays a game, SB3's loaders still refusing (also with trust: a .pt never goes through SB3)
    from agents import make_agent
    from harmonies_apps.tournament import play_game

    for trust in (False, True):
        agent = make_agent(f"ppo:{run / 'model.pt'}", trust=trust)
        assert agent.kind == "action" and play_game([agent], seed=3).is_over
    # its batched decision (one forward pass for every game, `PPOAgent.act_batch`) plays the same games as `act`
    from agents.match import play_match

    batched = play_match([agent], games=2, seed=3, record=True)
    assert [r["actions"] for r in batched] == [play_game([agent], seed=s).history for s in (3, 4)]
    # a policy started from the finished run's weights ([run] init: the policy only, no optimizer or counters)
    import gymnasium as gym

    import harmonies_env.env_gym  # noqa: F401  (registers the envs)
    from experiments.ppo.checkpoint import init_from
    from experiments.ppo.runner import make_ppo

    fresh = make_ppo(gym.make("harmonies/Solo-v0"), {"net_arch": [16]}, 5, "cpu", None)
    init_from(fresh, path2)
    assert all(torch.equal(v, ck2["policy"][k]) for k, v in fresh.policy.state_dict().items())
    assert fresh.num_timesteps == 0
    wide = make_ppo(gym.make("harmonies/Solo-v0"), {"net_arch": [32]}, 5, "cpu", None)
    with pytest.raises(ConfigError, match="do not fit the network"):
        init_from(wide, path2)
    monkeypatch.undo()
    # a file that needs unpickling is refused as an init, before anything runs
    evil = tmp_path / "evil.pt"
    torch.save({"policy": np.arange(3)}, evil)  # a numpy array: not loadable with weights_only=True
    with pytest.raises(ConfigError, match="not a weights-only checkpoint"):
        init_from(fresh, evil)


def test_one_plot_command_reads_both_kinds_of_run(tmp_path, capsys):
    """`python -m experiments.plot` plots a PPO run's eval.csv, a learned run's progress.csv and an n-tuple run's
    eval.csv (a folder or the table, under any name), and refuses to mix them or a file that is neither, in one line."""
    pytest.importorskip("matplotlib", reason="needs the train extra")
    from experiments import plot

    atomic_write_csv(tmp_path / "ppo" / "eval.csv", [{"timesteps": 0, "minutes": 0.0, "mean_score": 3.0},
                                                     {"timesteps": 10, "minutes": 1.0, "mean_score": 4.0}])
    rows = [{"iteration": 0, "games": 0, "decisions": 0, "hours": 0.0, "loss": None, "win_rate": 0.2,
             "mean_score": 80.0, "greedy_score": 85.0, "mcts_win_rate": 0.1, "mcts_mean_score": 70.0},
            {"iteration": 5, "games": 40, "decisions": 800, "hours": 0.1, "loss": 0.5, "win_rate": 0.4,
             "mean_score": 88.0, "greedy_score": 86.0}]
    atomic_write_csv(tmp_path / "learned" / "progress.csv", rows)
    atomic_write_csv(tmp_path / "copy.csv", rows)
    atomic_write_csv(tmp_path / "ntuple" / "eval.csv", [  # an n-tuple run: drawn as a learned one, hours from minutes
        {"iteration": 0, "games": 0, "minutes": 0.0, "win_rate": 0.6, "mean_score": 95.0, "greedy_score": 86.0},
        {"iteration": 9, "games": 30, "minutes": 30.0, "win_rate": 0.7, "mean_score": 99.0, "greedy_score": 88.0}])
    assert plot.read_run(tmp_path / "ntuple")[1][1]["hours"] == 0.5
    for runs in ([tmp_path / "ppo"], [tmp_path / "learned"], [tmp_path / "copy.csv", tmp_path / "learned"],
                 [tmp_path / "ntuple", tmp_path / "learned"]):
        out = tmp_path / "img.png"
        assert plot.main([*map(str, runs), "--ref", "win_rate:greedy=0.5", "--out", str(out)]) == 0
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for args, msg in (([tmp_path / "ppo", tmp_path / "learned"], "of one kind"),
                      ([tmp_path / "ppo" / "nope"], "no such file"),
                      ([tmp_path / "empty"], "no eval.csv or progress.csv")):
        (tmp_path / "empty").mkdir(exist_ok=True)
        with pytest.raises(SystemExit, match=msg):
            plot.main([*map(str, args), "--out", str(tmp_path / "x.png")])
