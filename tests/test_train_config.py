"""Training configs: every numeric setting of every command has a documented range (`experiments.ranges`) that
is checked at load, by the one config check every file, saved run and `--set` goes through; a value outside it is
one line naming the key, the value and the range. docs/safety.md lists what was tried."""
from __future__ import annotations

import re

import pytest

from experiments import train
from experiments.common import ConfigError, Setting, apply_overrides, load_config
from experiments.ranges import RANGES, check_range
from experiments.selfplay_config import SECTIONS, schema_of

CONFIGS = train.CONFIGS


def _schemas() -> dict[str, dict]:
    out = {algo: train.schema(algo) for algo in train.commands()}
    out["framework"] = {name: schema_of(cls) for name, cls in SECTIONS.items()}
    return {k: v for k, v in out.items() if v}


def _numeric(spec) -> bool:
    like = spec.like if isinstance(spec, Setting) else spec
    if isinstance(like, list):
        return bool(like) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in like)
    return isinstance(like, (int, float)) and not isinstance(like, bool)


def test_every_numeric_setting_of_every_command_has_a_range_holding_its_default_and_every_shipped_config_loads():
    missing, outside = [], []
    for algo, schema in _schemas().items():
        for sec, keys in schema.items():
            for key, spec in keys.items():
                if not _numeric(spec):
                    continue
                name = f"{sec}.{key}"
                if name not in RANGES:
                    missing.append(f"{algo}: {name}")
                default = spec.default if isinstance(spec, Setting) else spec
                if default is not Setting.ABSENT and default is not None and check_range(name, default, name):
                    outside.append(f"{algo}: {name} = {default}")
    assert not missing and not outside, (missing, outside)
    for algo, (_, _, default, _) in train.commands().items():
        schema = train.schema(algo)
        if schema and default:
            for path in CONFIGS.glob(f"{default.split('_')[0].split('.')[0]}*.toml"):
                try:
                    load_config(path, schema)
                except ConfigError as e:  # another command's file with the same stem: not a range refusal
                    assert "outside its range" not in str(e), e


@pytest.mark.parametrize("override, key, low_high", [
    ("selfplay.games=1e8", "selfplay.games", "1..2,048"),
    ("selfplay.games=100000000", "selfplay.games", "1..2,048"),
    ("selfplay.max_decisions=100000000", "selfplay.max_decisions", "1..1,000"),
    ("eval.games=4141256714103", "eval.games", "0..100,000"),
    ("eval.seed=9223372036854775808", "eval.seed", "0..4,294,967,295"),
    ("eval.seed=-1", "eval.seed", "0..4,294,967,295"),
    ("run.checkpoint_every=9223372036854775807", "run.checkpoint_every", "1..1,000,000,000,000"),
    ("train.lam=nan", "train.lam", "0..1"),
    ("train.lam=inf", "train.lam", "0..1"),
])
def test_values_outside_their_range_are_one_line_naming_key_value_and_range(override, key, low_high):
    schema = train.schema("learned")
    config = load_config(CONFIGS / "learned_tiny.toml", schema)
    if override.startswith("selfplay.games=1e8"):  # a float where a whole number goes: its kind says so first
        with pytest.raises(ConfigError, match=r"selfplay\.games takes a number|outside its range"):
            apply_overrides(config, [override], schema)
        return
    with pytest.raises(ConfigError) as e:
        apply_overrides(config, [override], schema)
    msg = str(e.value)
    assert "\n" not in msg and key in msg and low_high in msg and "outside its range" in msg, msg
    assert re.search(re.escape(override.split("=")[1][:20]), msg), msg


def test_the_train_command_refuses_an_out_of_range_value_in_one_line_and_exit_2(tmp_path, capsys):
    run = tmp_path / "run"
    assert train.cli(["learned", "--config", str(CONFIGS / "learned_tiny.toml"), "--run", str(run),
                      "--set", "eval.seed=9223372036854775808", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "eval.seed = 9223372036854775808 is outside its range" in err, err


def test_lists_of_numbers_have_each_entry_checked():
    schema = train.schema("mlp")
    config = load_config(CONFIGS / "mlp_tiny.toml", schema)
    with pytest.raises(ConfigError, match=r"network\.hidden = \[64, 100000\] is outside its range 1\.\.4,096"):
        apply_overrides(config, ["network.hidden=[64, 100000]"], schema)


@pytest.mark.parametrize("extra, want", [([], "cores"), (["--jobs-oversubscribe"], 64)])
def test_jobs_above_the_usable_cores_are_capped_unless_oversubscribed(extra, want, monkeypatch, capsys):
    from agents.match import cores
    from harmonies_apps import cli, tournament

    got = []

    def fake_run_games(specs, games, seed, jobs, **kw):
        got.append(jobs)
        raise SystemExit(0)  # stop here: only the jobs it was given matter

    monkeypatch.setattr(tournament, "run_games", fake_run_games)
    with pytest.raises(SystemExit):
        cli.main(["tournament", "--agents", "random", "random", "--games", "200", "--jobs", "64", "--quiet", *extra])
    assert got == [cores() if want == "cores" else want]
    err = capsys.readouterr().err
    if want == "cores" and cores() < 64:
        assert f"running --jobs {cores()} (--jobs-oversubscribe runs 64)" in err, err


def test_a_new_run_refused_by_its_command_leaves_no_run_folder(tmp_path, capsys):
    """Refused inside the command (its init checkpoint is missing), after the run folder and config.json were made:
    both go again (they were left behind)."""
    run = tmp_path / "run"
    assert train.cli(["learned", "--config", str(CONFIGS / "learned_tiny.toml"), "--run", str(run), "--no-progress",
                      "--set", f'train.init="{tmp_path / "missing.npz"}"']) == 2
    assert "missing.npz" in capsys.readouterr().err and not run.exists()
