"""The wheel as a user installs it: one import name per folder (harmonies_env, harmonies_apps, agents, experiments,
benchmarks; subpackages included), the same names the docs and the code use, and they work from it outside the
checkout, each imported first in a fresh process; so does the README's editable install."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OWN_NAMES = {"harmonies_env", "harmonies_apps", "agents", "experiments", "benchmarks"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy of what the wheel is made of, so setuptools' build/ folder never lands in (or is reused
    # from) the checkout, where files of since-deleted modules would linger
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("harmonies_env", "harmonies_apps", "agents", "experiments", "benchmarks"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = out.glob("harmonies_env-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return target


def test_the_wheel_installs_each_folder_under_its_own_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == OWN_NAMES  # the folders, nothing else (no tests/, no second name for a package)
    for top in OWN_NAMES:  # every subpackage, found (no list to edit)
        for init in (ROOT / top).rglob("__init__.py"):
            assert init.relative_to(ROOT).as_posix() in names, init
    assert "experiments/train.py" in names and "benchmarks/bench_engine.py" in names
    assert "benchmarks/c_engine_driver.c" in names  # `bench --c-source` compiles it
    assert "experiments/configs/solo_ppo.toml" in names and "harmonies_env/data/components.json" in names
    assert "agents/checkpoints/mlp.pt" in names and "agents/checkpoints/learned.npz" in names
    assert not any("_alias" in n for n in names)  # no import hook holds names together
    (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    text = zipfile.ZipFile(wheel).read(license_file).decode()
    assert text.startswith("MIT License") and text == (ROOT / "LICENSE").read_text()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata


#: What a user's script starts with (the docs' imports), each tried first in a fresh process.
FIRST_IMPORTS = ["from agents import make_agent", "from experiments.selfplay import Learner",
                 "from benchmarks.bench_engine import main", "from harmonies_apps.tournament import run_games",
                 "from harmonies_env import Game"]


def _run_installed(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run([sys.executable, "-m", "harmonies_apps.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_train_and_bench_run_from_the_installed_wheel(installed, tmp_path):
    for first in FIRST_IMPORTS:  # each name works imported first, in a fresh process, from a folder of the user's
        probe = subprocess.run([sys.executable, "-c", f"{first}; import sys; print(sys.modules[{first.split()[1]!r}]"
                                ".__file__)"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(installed)},
                               capture_output=True, text=True, timeout=120)
        assert probe.returncode == 0, (first, probe.stderr[-2000:])
        assert probe.stdout.strip().startswith(str(installed)), first  # the wheel's copy, not the checkout
    train = _run_installed(installed, tmp_path, "train", "--help")
    assert train.returncode == 0, train.stderr
    assert train.stdout.startswith("usage: harmonies train") and "solo-ppo" in train.stdout
    learned = _run_installed(installed, tmp_path, "train", "learned", "--help")  # the flagship's module imports too
    assert learned.returncode == 0 and learned.stdout.startswith("usage: harmonies train learned"), learned.stderr
    config = _run_installed(installed, tmp_path, "train", "solo-ppo", "--config", str(tmp_path / "none.toml"))
    assert config.returncode == 2 and "none.toml" in config.stderr and "Traceback" not in config.stderr
    bench = _run_installed(installed, tmp_path, "bench", "--games", "2", "--api-actions", "20",
                           "--reference-games", "1", "--habitat-boards", "2")
    assert bench.returncode == 0, bench.stderr[-3000:]
    rows = [json.loads(line) for line in bench.stdout.splitlines() if line.startswith("{")]
    ran = {r["case"] for r in rows if "skipped" not in r}
    skipped = {r["case"] for r in rows if "skipped" in r}
    assert ran == {"numba_random_games", "python_api_step_and_mask"}, rows
    assert skipped == {"reference_ratio", "habitat_matcher"}, rows
    said = [line for line in bench.stderr.splitlines() if "skipped" in line]
    assert len(said) == 2  # the wheel has no tests/ folder: its two reference cases say so, one line each


def test_benchmarks_run_as_modules_from_a_checkout():
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_engine", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m benchmarks.bench_engine"), done.stderr


def test_the_harmonies_command_runs_from_outside_the_checkout(tmp_path):
    """The installed `harmonies` command (an editable install, as the README's commands make) imports the agents from
    any directory: its script's sys.path holds no checkout, so `import agents` must come from the install."""
    exe = Path(sys.executable).with_name("harmonies")
    if not exe.exists():
        pytest.skip("no `harmonies` command beside this Python: install the project (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(exe), "tournament", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.startswith("usage: harmonies tournament"), done.stderr[-2000:]
    assert "learned" in done.stdout  # the agents' help came from the registry


def test_the_editable_install_imports_every_name_from_any_folder(tmp_path):
    """The README's editable install: from a folder outside the checkout, with no PYTHONPATH, `from agents import ...`
    works as a script's first import (issue 47: it failed unless another package was imported first)."""
    if not (Path(sys.prefix) / "bin" / "harmonies").exists():
        pytest.skip("not an installed environment (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for first in FIRST_IMPORTS:
        done = subprocess.run([sys.executable, "-c", f"{first}; import sys; print(sys.modules[{first.split()[1]!r}]"
                               ".__file__)"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (first, done.stderr[-2000:])
        assert done.stdout.strip().startswith(str(ROOT)), first  # this checkout's, through the editable install
