"""The n-tuple learner's self-play workers (`harmonies train learned --workers N [--ray ADDRESS]`, issue 37 item 3):
2 workers on local processes give the same weights as a run where one worker process is SIGKILLed mid-run, and as a
run whose driver is SIGKILLed after a checkpoint and resumed with --resume.

The tiny config, 60 iterations (games end and teach the network), 4 games a worker, no evaluations. The Ray case is
in tests/test_ray.py (`test_learned_workers_on_ray_give_the_processes_weights`), on that file's one Ray instance.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents import ntuple as N

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "experiments" / "configs" / "learned_tiny.toml"
RUN = ["learned", "--config", str(TINY), "--seed", "5", "--no-progress", "--workers", "2", "--set", "eval.every=0",
       "--set", "train.iterations=60", "--set", "selfplay.games=4", "--set", "run.checkpoint_every=20"]


def _weights(run: Path) -> np.ndarray:
    return N.load_checkpoint(run / "model.npz")[1]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The tiny learner with 2 self-play worker processes, never interrupted."""
    from experiments import train

    run = tmp_path_factory.mktemp("workers") / "ref"
    assert train.main([*RUN, "--run", str(run)]) == 0
    return run


def test_packed_rows_and_games_come_back_exactly():
    from agents.evaluator import Finished
    from experiments.selfplay import pack_games, unpack_games
    from experiments.selfplay_workers import pack_rows, unpack_rows

    rng = np.random.default_rng(0)
    a = rng.integers(-300, 300, size=(7, 5))
    a[:, 2] = rng.integers(2**40, 2**62, size=7)  # a column that does not fit int16 (a state's generator)
    p = pack_rows(a)
    assert p["small"].dtype == np.int16 and list(p["cols"]) == [2]
    assert np.array_equal(unpack_rows(p), a)
    games = [Finished(a[:m], np.arange(m) % 2, rng.normal(size=m), np.full(m, np.nan), m, np.array([50, 61, 0, 0]),
                      np.array([0, 1, 0, 0])) for m in (3, 7)]
    back = unpack_games(pack_games(games))
    assert len(back) == 2
    for g, h in zip(games, back):
        assert g.m == h.m and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(g, h) if x is not g.m)


def test_the_pool_snapshots_itself_to_bound_the_weights_it_keeps():
    """With `held_versions` = 2 the pool takes its own snapshots; a worker killed after that is put back from one and
    plays what it would have played (every weights version its calls used since, replayed)."""
    from experiments.common import read_toml
    from experiments.evaluators.ntuple import make, settings
    from experiments.selfplay import SelfPlayActor
    from experiments.selfplay_workers import WorkerPool

    cfg = settings({**read_toml(TINY), "selfplay": {**read_toml(TINY)["selfplay"], "games": 2}})

    def run(kill: bool) -> tuple[list[dict], int]:
        out = []
        with WorkerPool(SelfPlayActor, (make, cfg, 1), 1, held_versions=2) as pool:
            for i in range(26):
                if i % 2 == 0:
                    pool.publish({"w": np.full(N.LAYOUT_WEIGHTS[2], 0.01 * i, np.float32)})
                if kill and i == 21:
                    os.kill(pool.pids()[0], signal.SIGKILL)
                out.append(pool.play(1)[0])
                assert len({v for v, _, _ in pool._history}) <= 2
            return out, pool.restarts

    want, _ = run(False)
    got, restarts = run(True)
    assert restarts == 1 and sum(r["finished"] for r in got) > 0
    for a, b in zip(want, got):
        assert a["decisions"] == b["decisions"] and a["games"]["m"].tolist() == b["games"]["m"].tolist()
        assert np.array_equal(a["games"]["preds"], b["games"]["preds"])


def test_workers_run_trains_and_counts_its_games(reference):
    summary = json.loads((reference / "summary.json").read_text())
    assert summary["workers"] == 2 and summary["worker_restarts"] == 0 and summary["games"] > 0
    record = json.loads(sorted((reference / "checkpoints").glob("step_*.json"))[-1].read_text())
    assert len(record["state"]["workers"]) == 2
    assert np.abs(_weights(reference)).sum() > 0  # init = "zero": the games taught it


def test_a_killed_worker_process_changes_nothing(reference, tmp_path, monkeypatch):
    """Worker 1's process is SIGKILLed before the driver's 15th play call (mid-run, between two checkpoints): it is
    started again, restored and replayed, and the run ends with the reference's weights."""
    from experiments import train
    from experiments.selfplay_workers import WorkerPool

    submit, calls, pids = WorkerPool.submit, [], []

    def kill_and_submit(self, steps=1):
        calls.append(steps)
        if len(calls) == 15:
            pids.append(self.pids()[1])
            os.kill(pids[0], signal.SIGKILL)
        return submit(self, steps)

    monkeypatch.setattr(WorkerPool, "submit", kill_and_submit)
    assert train.main([*RUN, "--run", str(tmp_path / "killed")]) == 0
    summary = json.loads((tmp_path / "killed" / "summary.json").read_text())
    assert pids and summary["worker_restarts"] == 1 and summary["iteration"] == 60
    assert np.array_equal(_weights(tmp_path / "killed"), _weights(reference))


def test_a_killed_driver_resumes_to_the_same_weights(reference, tmp_path):
    """The driver is SIGKILLed once its first checkpoint is on disk (its worker processes end with it); --resume
    starts new workers from the checkpoint's games in flight and ends as the run never stopped."""
    run = tmp_path / "killed"
    cmd = [sys.executable, "-m", "experiments.train", *RUN, "--run", str(run)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    while not any((run / "checkpoints").glob("step_*.json")):
        assert p.poll() is None, p.stdout.read().decode()  # killed mid-run, not after it
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (run / "summary.json").exists()
    p = subprocess.run([*cmd, "--resume"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=300)
    assert p.returncode == 0, p.stdout.decode()
    assert np.array_equal(_weights(run), _weights(reference))


def test_worker_flags_are_one_line_errors(reference, tmp_path, capsys):
    from experiments import train

    base = ["learned", "--config", str(TINY), "--no-progress"]
    for extra, want in ((["--ray", "auto"], "give selfplay.workers (--workers N) too"),
                        (["--workers", "-1"], "selfplay.workers = -1 is outside its range 0..1,024"),
                        (["--workers", "2", "--ray", "not an address"], "--ray takes local, auto or a cluster"),
                        (["--workers", "2", "--set", "selfplay.sync_every=0"], "sync_every = 0 is outside its range")):
        assert train.cli([*base, "--run", str(tmp_path / "a"), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and want in err[0], err
    import shutil

    run = shutil.copytree(reference, tmp_path / "copy")
    saved = (run / "config.json").read_bytes()
    assert train.cli(["learned", "--run", str(run), "--resume", "--workers", "3", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "with 2 self-play workers cannot go on with selfplay.workers = 3" in err[0], err
    assert (run / "config.json").read_bytes() == saved  # a refused command leaves its run as it was
    fresh = tmp_path / "fresh"  # and a refused new run leaves no folder (refused inside the command, not its flags)
    assert train.cli(["learned", "--config", str(TINY), "--run", str(fresh), "--no-progress", "--workers", "2",
                      "--set", "selfplay.threads=300"]) == 2
    assert not fresh.exists(), list(fresh.rglob("*"))


def test_ray_missing_names_the_distributed_extra(tmp_path, monkeypatch, capsys):
    from experiments import train

    monkeypatch.setitem(sys.modules, "ray", None)
    assert train.cli(["learned", "--config", str(TINY), "--no-progress", "--run", str(tmp_path / "a"),
                      "--workers", "2", "--ray", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['python -m experiments.train: learned: --ray needs ray, from the "distributed" extra: '
                   'pip install -e ".[distributed]"']
