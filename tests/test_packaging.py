"""The wheel as a user installs it: the project's own top-level names only, and the CLI's forwarded commands work
from it outside the checkout (setup.py maps agents/, experiments/ and benchmarks/ to harmonies_agents,
harmonies_experiments and harmonies_benchmarks, subpackages included)."""
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
OWN_NAMES = {"harmonies_env", "harmonies_apps", "harmonies_agents", "harmonies_experiments", "harmonies_benchmarks"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy of what the wheel is made of, so setuptools' build/ folder never lands in (or is reused
    # from) the checkout, where files of since-deleted modules would linger
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
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


def test_the_wheel_installs_only_the_projects_own_names(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == OWN_NAMES  # no generic `agents`, `experiments` or `benchmarks` package lands in site-packages
    assert all(n.startswith("harmonies") for n in tops)
    for init in (ROOT / "agents").rglob("__init__.py"):  # every subpackage, found by setup.py (no list to edit)
        assert "harmonies_agents/" + init.relative_to(ROOT / "agents").as_posix() in names, init
    assert "harmonies_experiments/train.py" in names and "harmonies_benchmarks/bench_engine.py" in names
    assert "harmonies_experiments/configs/solo_ppo.toml" in names
    assert "harmonies_agents/checkpoints/mlp.pt" in names and "harmonies_agents/checkpoints/learned.npz" in names
    assert "harmonies_agents/__init__.py" in names and "harmonies_agents/mlp/kernels.py" in names
    (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    text = zipfile.ZipFile(wheel).read(license_file).decode()
    assert text.startswith("MIT License") and text == (ROOT / "LICENSE").read_text()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata


def _run_installed(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run([sys.executable, "-m", "harmonies_apps.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_train_and_bench_run_from_the_installed_wheel(installed, tmp_path):
    probe = subprocess.run([sys.executable, "-c", "import harmonies_apps, harmonies_experiments; "
                            "import agents.registry, harmonies_agents.registry, agents.mlp.kernels; "
                            "assert agents.registry is harmonies_agents.registry; "
                            "assert agents.mlp.kernels is harmonies_agents.mlp.kernels; "
                            "print(harmonies_apps.__file__); print(harmonies_experiments.__file__); "
                            "print(agents.__file__)"],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(installed)},
                           capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert all(line.startswith(str(installed)) for line in probe.stdout.split())  # the wheel's copy, not the checkout
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
