"""Tournaments on a Ray cluster (`--ray`): the same games as `--jobs`, checkpoints shipped by value, one-line errors.

A local Ray instance with 2 CPUs, started once for the module (Ray starts slowly on a small machine). Skipped
without Ray, except under CI (the CI environment variable set), where the distributed extra is installed.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agents import distributed
from harmonies_apps import cli

if os.environ.get("CI"):
    import ray
else:
    ray = pytest.importorskip("ray", reason="Ray is the optional distributed extra: pip install -e .[distributed]")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             logging_level="warning")
    yield
    ray.shutdown()


def games_of(folder: Path) -> list[dict]:
    return json.loads((folder / "tournament.json").read_text())["games"]


# first, while no Ray instance runs in this process (the cluster fixture starts one for the tests after)
def test_ray_and_jobs_together_or_a_bad_address_is_one_line(capsys):
    base = ["tournament", "--agents", "greedy", "random", "--games", "2", "--quiet"]
    assert cli.main([*base, "--ray", "local", "--jobs", "2"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "harmonies tournament: --jobs 2 runs processes on this machine and --ray runs on a cluster's CPUs: give one "
        "of them"]
    assert cli.main([*base, "--ray", "not an address"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("harmonies tournament: --ray takes local, auto or a cluster address")
    if ray.is_initialized():
        pytest.skip("a Ray instance is running in this process: an address is not connected to")
    assert cli.main([*base, "--ray", "127.0.0.1:9"]) == 2  # the discard port: nothing listens there
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("harmonies tournament: cannot reach a Ray cluster at '127.0.0.1:9'")


def test_without_ray_the_flag_names_the_distributed_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)

    def no_games(*a, **k):
        raise AssertionError("games were played before the missing extra was reported")

    monkeypatch.setattr("harmonies_apps.tournament.run_games", no_games)
    assert cli.main(["tournament", "--agents", "greedy", "random", "--games", "2", "--ray", "local"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == 'harmonies tournament: needs ray, from the "distributed" extra: pip install -e ".[distributed]"'


def test_ray_tournament_equals_jobs_game_for_game(cluster, tmp_path, capsys):
    args = ["tournament", "--agents", "greedy", "random", "--games", "20", "--seed", "5", "--quiet"]
    # 2 games in this process first: the bots' kernels are compiled here once (into the numba cache) and loaded by
    # the 2 Ray workers and the 2 job processes, not compiled by each of them at once
    assert cli.main([*args[:4], "--games", "2", "--seed", "5", "--quiet", "--out", str(tmp_path / "here"),
                     "--save-games", str(tmp_path / "here_games")]) == 0
    assert cli.main([*args, "--ray", "local", "--out", str(tmp_path / "ray"),
                     "--save-games", str(tmp_path / "ray_games")]) == 0
    assert cli.main([*args, "--jobs", "2", "--out", str(tmp_path / "jobs"),
                     "--save-games", str(tmp_path / "jobs_games")]) == 0
    on_ray, on_jobs = games_of(tmp_path / "ray"), games_of(tmp_path / "jobs")
    assert [g["game"] for g in on_ray] == list(range(20))
    assert on_ray == on_jobs
    assert {g["seats"][0] for g in on_ray} == {"greedy", "random"}  # seats rotated
    # the records come back from the workers and are written by the driver, the same files as --jobs writes
    names = sorted(p.name for p in (tmp_path / "ray_games").iterdir())
    assert names == [f"game_{i:05d}.json" for i in range(20)]
    assert all((tmp_path / "ray_games" / n).read_text() == (tmp_path / "jobs_games" / n).read_text() for n in names)
    assert ray.is_initialized()  # --ray local used the running instance and left it running


def test_checkpoints_reach_workers_by_value(cluster, tmp_path):
    """A learned checkpoint is read on the driver and played from the workers' own copies: deleting the driver's
    files after shipping changes nothing, and a copy that does not match its SHA-256 is refused."""
    from agents.match import run_match
    from agents.mlp import DEFAULT_CHECKPOINT

    for suffix in (".pt", ".json"):
        (tmp_path / f"net{suffix}").write_bytes(DEFAULT_CHECKPOINT.with_suffix(suffix).read_bytes())
    spec = f"mlp:{tmp_path / 'net.pt'}"
    shipped = distributed.ship_specs([spec, "random", spec])
    assert list(shipped) == [spec] and sorted(shipped[spec]["files"]) == ["net.json", "net.pt"]
    local = distributed.local_spec(spec, shipped)
    where = Path(local.partition(":")[2])
    assert local.startswith("mlp:") and where.name == "net.pt" and where.parent != tmp_path
    assert distributed.local_spec("random", shipped) == "random"

    # in this process first: the agent's kernels are compiled once (into the numba cache) and loaded by the 2 Ray
    # workers, not compiled by both at once
    here = run_match([spec, "random"], games=2, seed=3, progress=False)
    on_ray = run_match([spec, "random"], games=2, seed=3, progress=False, ray_address="local")
    assert on_ray == here
    assert on_ray[0]["seats"] == [spec, "random"]  # results name the spec as given, not the worker's copy

    bad = {spec: dict(shipped[spec], sha256=dict(shipped[spec]["sha256"], **{"net.pt": "0" * 64}))}
    with pytest.raises(ValueError, match="does not match its SHA-256"):
        distributed.local_spec(spec, bad)
    with pytest.raises(FileNotFoundError, match="not found"):
        distributed.ship_specs([f"mlp:{tmp_path / 'absent.pt'}"])


TINY = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "mlp_tiny.toml"
#: The tiny learner with 2 self-play workers: 40 iterations (its games end and it trains), no evaluations; Ray actors
#: (`--workers 2` alone: local processes, `test_mlp_workers_are_processes_without_ray_with_the_same_weights`).
WORKER_RUN = ["mlp", "--config", str(TINY), "--seed", "5", "--no-progress", "--workers", "2",
              "--set", "eval.every=0", "--set", "train.iterations=40", "--ray", "local"]


def _weights(run: Path) -> dict:
    import torch

    return {k: v.numpy() for k, v in torch.load(run / "model.pt", weights_only=True).items()}


def _same_weights(a: Path, b: Path) -> bool:
    import numpy as np

    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def worker_run(cluster, tmp_path_factory):
    """The tiny learner trained with 2 self-play workers on the module's Ray instance, never interrupted."""
    from experiments import train

    run = tmp_path_factory.mktemp("workers") / "ref"
    assert train.main([*WORKER_RUN, "--run", str(run)]) == 0
    return run


def test_learner_with_workers_same_seed_same_run_and_a_dead_worker_changes_nothing(worker_run, tmp_path,
                                                                                    monkeypatch):
    """Training from 2 workers: the same seed and worker count give the same weights, and a worker whose process is
    killed mid-run is restarted and put back where it was, so the run finishes with the same weights."""
    from experiments import train
    from experiments.selfplay_workers import WorkerPool

    record = json.loads(sorted((worker_run / "checkpoints").glob("step_*.json"))[-1].read_text())
    assert record["state"]["samples_trained"] > 0 and len(record["state"]["workers"]) == 2  # it trained
    summary = json.loads((worker_run / "summary.json").read_text())
    assert summary["workers"] == 2 and summary["worker_restarts"] == 0 and summary["games"] > 0
    submit, calls, pids = WorkerPool.submit, [], []

    def submit_and_kill(self, steps=1):
        calls.append(steps)
        if len(calls) == 15:  # mid-run, between two checkpoints: worker 1's process dies
            pids.append(self.pids()[1])
            os.kill(pids[0], 9)
        return submit(self, steps)

    monkeypatch.setattr(WorkerPool, "submit", submit_and_kill)
    assert train.main([*WORKER_RUN, "--run", str(tmp_path / "killed")]) == 0
    summary = json.loads((tmp_path / "killed" / "summary.json").read_text())
    assert pids and summary["worker_restarts"] == 1 and summary["iteration"] == 40
    assert _same_weights(tmp_path / "killed", worker_run)  # (the same seed's run again, with a worker killed)


def test_mlp_workers_are_processes_without_ray_with_the_same_weights(worker_run, tmp_path, monkeypatch):
    """`--workers N` means local processes for `mlp` as for `learned` (one flag, one meaning): no Ray is touched,
    and they give the weights of the Ray actors."""
    from experiments import train
    from experiments.selfplay_workers import PROCESSES, WorkerPool

    transports = []
    init = WorkerPool.__init__

    def spy(self, actor, args, workers, transport=PROCESSES, **kw):
        transports.append(transport)
        init(self, actor, args, workers, transport, **kw)

    monkeypatch.setattr(WorkerPool, "__init__", spy)
    assert train.main([*WORKER_RUN[:-2], "--run", str(tmp_path / "processes")]) == 0
    assert transports == [PROCESSES]
    assert _same_weights(tmp_path / "processes", worker_run)


def test_learner_with_workers_resumes_after_sigkill_of_the_driver(worker_run, tmp_path):
    """The driver (a process attached to the module's Ray instance with --ray ADDRESS) is SIGKILLed after its first
    checkpoint; --resume starts new workers from the checkpoint's games in flight and ends as the run never
    stopped."""
    import signal
    import subprocess
    import time

    address = ray.get_runtime_context().gcs_address
    root = Path(__file__).resolve().parents[1]
    run = tmp_path / "killed"
    cmd = [sys.executable, "-m", "experiments.train", *WORKER_RUN, "--run", str(run), "--ray", address]
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while p.poll() is None and not any((run / "checkpoints").glob("step_*.json")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert p.poll() is None, p.stdout.read().decode()  # killed mid-run, not after it
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (run / "summary.json").exists()
    p = subprocess.run([*cmd, "--resume"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=300)
    out = p.stdout.decode()
    assert p.returncode == 0, out
    assert json.loads((run / "summary.json").read_text())["iteration"] == 40
    assert _same_weights(run, worker_run)


def test_worker_flags_are_checked_in_one_line(tmp_path, capsys):
    from experiments import train

    base = ["mlp", "--config", str(TINY), "--no-progress"]
    assert train.cli([*base, "--run", str(tmp_path / "a"), "--ray", "not an address"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ray takes local, auto or a cluster address" in err[0]
    assert train.cli([*base, "--run", str(tmp_path / "b"), "--ray", "auto"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "give selfplay.workers (--workers N) too" in err[0]
    assert train.cli([*base, "--run", str(tmp_path / "c"), "--workers", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "selfplay.workers = -1 is outside its range 0..1,024" in err[0]


def test_workers_without_ray_name_the_distributed_extra(tmp_path, monkeypatch, capsys):
    from experiments import train

    monkeypatch.setitem(sys.modules, "ray", None)
    assert train.cli(["mlp", "--config", str(TINY), "--no-progress", "--run", str(tmp_path / "a"),
                      "--workers", "2", "--ray", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['python -m experiments.train: mlp: --ray needs ray, from the "distributed" extra: '
                   'pip install -e ".[distributed]"']


def test_trust_setting_reaches_the_workers(cluster, monkeypatch):
    """--trust-checkpoint lives in the driver's environment (`agents.ppo.TRUST_ENV`): the Ray tasks see it too."""
    from agents.ppo import TRUST_ENV

    assert TRUST_ENV in distributed.FORWARDED_ENV
    monkeypatch.setenv(TRUST_ENV, "1")
    session = distributed.RaySession("local")
    from agents.match import MatchTask
    from harmonies_env import GameConfig

    task = MatchTask(("random",), ("random",), GameConfig(num_players=1), 0, [0])
    got = session.map(lambda task: [{"trust": os.environ.get(TRUST_ENV), "specs": task.specs}], [task])
    assert got == [[{"trust": "1", "specs": ("random",)}]]


def test_learned_workers_on_ray_give_the_processes_weights(cluster, tmp_path):
    """`harmonies train learned --workers 2`: 2 Ray actors (on the module's Ray instance) give the weights of 2 local
    worker processes (the tiny config, 60 iterations; tests/test_workers.py kills its workers and its driver)."""
    import numpy as np

    from agents import ntuple as N
    from experiments import train

    tiny = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "learned_tiny.toml"
    run = ["learned", "--config", str(tiny), "--seed", "5", "--no-progress", "--workers", "2", "--set", "eval.every=0",
           "--set", "train.iterations=60", "--set", "selfplay.games=4", "--set", "run.checkpoint_every=20"]
    assert train.main([*run, "--run", str(tmp_path / "processes")]) == 0
    assert train.main([*run, "--run", str(tmp_path / "ray"), "--ray", "local"]) == 0
    want = N.load_checkpoint(tmp_path / "processes" / "model.npz")[1]
    assert np.abs(want).sum() > 0
    assert np.array_equal(N.load_checkpoint(tmp_path / "ray" / "model.npz")[1], want)
    assert ray.is_initialized()  # --ray local used the running instance and left it running


def test_ladder_on_ray_plays_the_games_of_jobs(cluster, tmp_path):
    """`harmonies ladder play --ray local` stores the same games as in this process (issue 44)."""
    from harmonies_apps.ladder import commands
    from harmonies_env import GameConfig

    stored = []
    for name, ray_address in (("here.db", None), ("ray.db", "local")):  # here first: compiled once, loaded on Ray
        with commands.init(tmp_path / name, GameConfig(2), 3, ["random", "greedy:2"]) as ladder:
            commands.play(ladder, until_games=12, ray_address=ray_address)
            stored.append([{k: v for k, v in g.items() if k not in ("id", "played", "cpu_seconds")}
                           for g in ladder.games()])
    assert len(stored[0]) == 12 and stored[0] == stored[1]
