"""Stops, limits and crashes (issue 38): a model never stale after a kill, temporary files cleared, a clean one-line
stop on SIGINT / SIGTERM for the long commands (exit 130 / 143, workers ended, what finished kept), bounded --jobs.

Every signal is sent once the run has surely started (it printed a line or wrote a file), never after a delay.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents import ntuple as N
from experiments import train

ROOT = Path(__file__).resolve().parents[1]
NTUPLE_TINY = ROOT / "experiments" / "configs" / "learned_tiny.toml"
MLP_TINY = ROOT / "experiments" / "configs" / "mlp_tiny.toml"


class Killed(BaseException):
    """Stands for a SIGKILL: nothing after it runs."""


def _die_at_second_export(monkeypatch, module, name: str) -> None:
    """`module.name` (the model export's writer) raises Killed the second time it writes `model`, i.e. after the
    second checkpoint is complete and before its model export."""
    real = getattr(module, name)
    calls = []

    def export(path, *args, **kwargs):
        if Path(path).name == "model":
            calls.append(path)
            if len(calls) == 2:
                raise Killed
        return real(path, *args, **kwargs)

    monkeypatch.setattr(module, name, export)


def _newest_checkpoint(run: Path) -> Path:
    return max((run / "checkpoints").glob("step_*.json"))


def test_an_ntuple_run_killed_between_checkpoint_and_export_exports_again_on_resume(tmp_path, monkeypatch):
    run = tmp_path / "run"
    argv = ["learned", "--config", str(NTUPLE_TINY), "--run", str(run), "--seed", "3", "--no-progress", "--set",
            "train.iterations=80", "--set", "run.checkpoint_every=40", "--set", "eval.games=0"]  # games end: it learns
    with monkeypatch.context() as m:
        _die_at_second_export(m, N, "save_checkpoint")
        with pytest.raises(Killed):
            train.main(argv)
    ck = _newest_checkpoint(run)
    assert ck.name == "step_000000000080.json"
    with np.load(ck.with_suffix(".npz")) as z:
        want = z["w"].copy()
    assert not np.array_equal(N.load_checkpoint(run / "model.npz")[1], want)  # the model is iteration 40's
    assert train.main([*argv, "--resume"]) == 0  # nothing left to train: it exports again
    assert np.array_equal(N.load_checkpoint(run / "model.npz")[1], want)
    assert json.loads((run / "model.json").read_text())["training"]["iteration"] == 80


def test_an_mlp_run_killed_between_checkpoint_and_export_exports_again_on_resume(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch", reason="the MLP trainer needs the train extra")
    from experiments.evaluators import mlp

    run = tmp_path / "run"
    argv = ["mlp", "--config", str(MLP_TINY), "--run", str(run), "--seed", "3", "--no-progress", "--set",
            "train.iterations=60", "--set", "run.checkpoint_every=30", "--set", "eval.every=0"]  # games end: it learns
    with monkeypatch.context() as m:
        _die_at_second_export(m, mlp, "save_mlp_checkpoint")
        with pytest.raises(Killed):
            train.main(argv)
    ck = _newest_checkpoint(run)
    assert ck.name == "step_000000000060.json"
    with np.load(ck.with_suffix(".npz")) as z:
        want = {k[4:]: torch.from_numpy(z[k].copy()) for k in z.files if k.startswith("net.")}

    def model_equals_checkpoint() -> bool:
        got = torch.load(run / "model.pt", weights_only=True)
        return got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)

    assert not model_equals_checkpoint()  # the model is iteration 30's
    assert train.main([*argv, "--resume"]) == 0
    assert model_equals_checkpoint()


def test_a_run_removes_the_temporary_files_killed_writes_left(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["learned", "--config", str(NTUPLE_TINY), "--run", str(run), "--no-progress", "--set",
            "train.iterations=2", "--set", "run.checkpoint_every=1", "--set", "eval.games=0"]
    assert train.main(argv) == 0
    stale = [run / ".model.npz.x1y2.tmp", run / "checkpoints" / ".step_000000000002.npz.abcd.tmp"]
    for p in stale:
        p.write_bytes(b"half a file")
    keep = run / "checkpoints" / "notes.tmp"  # not an atomic write's temporary file
    keep.write_text("mine")
    capsys.readouterr()
    assert train.main([*argv, "--resume"]) == 0
    assert not any(p.exists() for p in stale) and keep.exists()
    assert f"removed 2 unfinished write(s) a killed run left in {run}" in capsys.readouterr().err


# ---- signals: subprocesses ---------------------------------------------------------------------------------

def _start(*args: str, module: str = "harmonies_apps.cli", cwd: Path = ROOT) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(p: subprocess.Popen, ready) -> None:
    """Poll until ready() (a file the run writes), failing if the process ends first."""
    for _ in range(30_000):  # 300 s at most
        if ready():
            return
        if p.poll() is not None:
            raise AssertionError(f"ended first ({p.returncode}): {p.stderr.read()[-3000:]}")
        time.sleep(0.01)
    p.kill()
    raise AssertionError("the run never got there")


def _stop(p: subprocess.Popen, sig: int, group: bool = False) -> tuple[int, str, str]:
    """Send sig (to the whole process group when `group`, as a terminal's Ctrl-C does) and wait."""
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("note: ")]  # e.g. --jobs above the cores
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


def _group_gone(pgid: int) -> bool:
    """No process of the group is left (bounded wait: the pool's workers end as the parent exits)."""
    for _ in range(1000):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("jobs,sig", [(2, signal.SIGINT), (1, signal.SIGTERM)])
def test_a_stopped_tournament_keeps_every_game_that_finished_and_no_temporary_file(tmp_path, jobs, sig):
    """Stopped once 3 game records are on disk (--save-games inside --out): the summary and CSV hold exactly the
    games whose records were written, the folder stays, no .tmp file is left, the workers are gone."""
    out = tmp_path / "out"
    saved = out / "games"
    p = _start("tournament", "--agents", "greedy:2", "random", "--games", "400", "--jobs", str(jobs), "--quiet",
               "--out", str(out), "--save-games", str(saved))
    _wait_for(p, lambda: saved.is_dir() and len(list(saved.glob("game_*.json"))) >= 3)
    code, stdout, err = _stop(p, sig, group=sig == signal.SIGINT)  # Ctrl-C reaches the workers too: they leave it
    assert code == 128 + sig and stdout == ""
    line = _one_line(err)
    name = "SIGINT (Ctrl-C)" if sig == signal.SIGINT else "SIGTERM"
    assert line.startswith(f"harmonies tournament: stopped by {name}; ")
    assert line.endswith(f"written to {out} (marked partial)")
    played = int(line.split("; ")[1].split(" of 400")[0])
    records = sorted(int(f.stem.split("_")[1]) for f in saved.glob("game_*.json"))
    data = json.loads((out / "tournament.json").read_text())
    assert data["summary"]["partial"] is True and data["summary"]["games"] == played == len(records) >= 3
    assert [g["game"] for g in data["games"]] == records  # in game order, every game whose record was written
    rows = (out / "tournament_games.csv").read_text().splitlines()[1:]
    assert sorted({int(r.split(",")[0]) for r in rows}) == records and len(rows) == 2 * played
    assert not list(tmp_path.rglob("*.tmp"))
    assert _group_gone(p.pid)


def test_a_stopped_tournament_writes_the_games_played_marked_partial(tmp_path, monkeypatch, capsys):
    from harmonies_apps import cli, tournament
    from harmonies_env.stops import Stopped

    real = tournament.run_games

    def three_then_sigterm(specs, *, collect, config, seed, **_):
        real(specs, games=3, seed=seed, config=config, progress=False, collect=collect)
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(tournament, "run_games", three_then_sigterm)
    out = tmp_path / "out"
    assert cli.main(["tournament", "--agents", "random", "greedy:2", "--games", "10", "--quiet", "--out",
                     str(out)]) == 143
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == (f"harmonies tournament: stopped by SIGTERM; 3 of 10 games played, written "
                                         f"to {out} (marked partial)\n")
    data = json.loads((out / "tournament.json").read_text())
    assert data["summary"]["partial"] is True and data["summary"]["games"] == 3
    assert data["games"] == real(["random", "greedy:2"], games=3, progress=False)
    assert (out / "tournament_games.csv").exists()


def test_sigterm_before_any_game_ends_removes_the_empty_out_folder(tmp_path):
    out, saved = tmp_path / "out", tmp_path / "games"
    p = _start("solo", "--agents", "mcts:5.0", "--games", "2", "--quiet", "--out", str(out), "--save-games",
               str(saved))
    _wait_for(p, saved.exists)  # made just before the first game starts (a game of mcts:5.0 takes minutes)
    code, stdout, err = _stop(p, signal.SIGTERM)
    assert code == 143 and stdout == ""
    assert _one_line(err) == f"harmonies solo: stopped by SIGTERM; 0 of 2 games played; removed the empty {out}"
    assert not out.exists()


def test_a_training_run_stops_on_sigterm_at_a_checkpoint_that_resume_continues(tmp_path):
    run = tmp_path / "run"
    # (the module, not `harmonies train`, which runs the installed copy of it: another checkout's, in a test run)
    p = _start("learned", "--config", str(NTUPLE_TINY), "--run", str(run), "--no-progress", "--set", "eval.games=0",
               module="experiments.train")
    _wait_for(p, lambda: any((run / "checkpoints").glob("step_*.json")))
    code, _, err = _stop(p, signal.SIGTERM)
    assert code == 143
    line = _one_line(err)
    assert line.startswith("python -m experiments.train: stopped by SIGTERM; the checkpoint of iteration ")
    assert line.endswith("is kept: --resume goes on from it")
    it = int(line.split("iteration ")[1].split(" ")[0])
    ck = _newest_checkpoint(run)
    assert ck.name == f"step_{it:012d}.json" and it < 400
    with np.load(ck.with_suffix(".npz")) as z:  # and the model is that checkpoint's
        assert np.array_equal(N.load_checkpoint(run / "model.npz")[1], z["w"])
    assert not list(run.rglob(".*.tmp"))


def test_ctrl_c_stops_the_play_server_in_one_line():
    pytest.importorskip("uvicorn", reason='the play server needs the web extra: pip install -e ".[web]"')
    p = _start("serve", "--port", "0", "--opponents", "random")
    assert p.stdout.readline().startswith("Harmonies: open http://127.0.0.1:")  # listening
    code, _, err = _stop(p, signal.SIGINT, group=True)
    assert code == 130 and _one_line(err) == "harmonies serve: stopped by SIGINT (Ctrl-C)"


def test_ctrl_c_stops_the_benchmark_in_one_line():
    p = _start("bench", "--games", "2", "--api-actions", "100000000", "--reference-games", "1",
               "--habitat-boards", "1")
    assert json.loads(p.stdout.readline())["case"] == "numba_random_games"  # the next case runs for long
    code, _, err = _stop(p, signal.SIGINT, group=True)
    assert code == 130 and _one_line(err) == "harmonies bench: stopped by SIGINT (Ctrl-C)"


# ---- --jobs ----------------------------------------------------------------------------------------------------

def test_jobs_above_the_games_start_no_more_processes_than_games(monkeypatch):
    import multiprocessing as mp

    from agents import match

    sizes = []
    real = mp.get_context

    def spy(method=None):
        ctx = real(method)

        class Ctx:
            def Pool(self, n, *a, **k):  # noqa: N802 (multiprocessing's name)
                sizes.append(n)
                return ctx.Pool(n, *a, **k)

            def __getattr__(self, name):  # the rest of the context (its Queue) as it is
                return getattr(ctx, name)

        return Ctx()

    monkeypatch.setattr(mp, "get_context", spy)
    res = match.run_match(["random", "random"], games=3, seed=1, jobs=500, progress=False)
    assert [r["game"] for r in res] == [0, 1, 2] and sizes == [3]
    assert match.run_match(["random", "random"], games=3, seed=1, jobs=1, progress=False) == res


def test_jobs_above_the_cores_get_a_one_line_note(monkeypatch):
    from agents import match

    monkeypatch.setattr(match, "cores", lambda: 2)
    assert match.jobs_note(2) is None
    assert match.jobs_note(8) == "--jobs 8 is more than the 2 cores here: the processes share them (slower than " \
                                 "--jobs 2)"


# ---- first run ----------------------------------------------------------------------------------------------------

def test_a_cold_numba_cache_is_said_in_one_line_on_a_terminal_only(tmp_path, monkeypatch):
    import io

    from harmonies_env import firstrun

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty"))  # a cache nothing was compiled into
    code = "from harmonies_env.firstrun import engine_cache_cold; print(engine_cache_cold())"
    cold = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert cold.stdout.strip() == "True", cold.stderr
    from harmonies_env import Game

    Game(2, seed=0).step(Game(2, seed=0).legal_actions()[0])  # compiled (and cached) in this process
    assert not firstrun.engine_cache_cold()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(firstrun, "engine_cache_cold", lambda: True)
    out, piped = Terminal(), io.StringIO()
    assert firstrun.say_if_compiling(out) and out.getvalue() == firstrun.COMPILE_NOTE + "\n"
    assert not firstrun.say_if_compiling(piped) and piped.getvalue() == ""  # logs and pipes stay clean
    monkeypatch.setattr(firstrun, "engine_cache_cold", lambda: False)
    assert not firstrun.say_if_compiling(Terminal())


def test_extra_hints_fit_a_checkout_or_a_wheel(monkeypatch):
    from harmonies_apps import cli
    from harmonies_env import firstrun

    assert firstrun.from_checkout()  # the tests run from one
    assert firstrun.install_hint("train") == 'pip install -e ".[train]"'
    monkeypatch.setattr(firstrun, "_ROOT", Path("/nonexistent/site-packages"))
    assert firstrun.install_hint("train") == 'pip install "harmonies-env[train]"'
    assert cli.extra_message("serve", "uvicorn", "web") == (
        'harmonies serve: needs uvicorn, from the "web" extra: pip install "harmonies-env[web]"')


def test_a_runs_model_records_its_command_with_the_arguments(tmp_path):
    run = tmp_path / "run"
    argv = ["learned", "--config", str(NTUPLE_TINY), "--run", str(run), "--no-progress", "--set",
            "train.iterations=1", "--set", "eval.games=0"]
    assert train.main(argv) == 0
    command = json.loads((run / "model.json").read_text())["training"]["command"]
    assert command == "python -m experiments.train " + " ".join(argv)


def test_every_file_with_a_module_fixture_runs_whole_on_one_xdist_worker():
    import re

    import conftest

    fixture = re.compile(r'@pytest\.fixture\(scope="module"')
    files = {p.name for p in (ROOT / "tests").glob("test_*.py") if fixture.search(p.read_text())}
    assert files == conftest.WHOLE_FILES | conftest.RAY_FILES


def _interrupt_harmonies(tmp_path: Path, when: str) -> tuple[int, list[str]]:
    """The `harmonies` console command (a demo game, numba's cache empty) sent SIGINT `when` = "import" (as it
    imports numba: Python reports each import, PYTHONPROFILEIMPORTTIME) or "compile" (once numba cached its first
    kernel, mid-compilation); its exit status and stderr lines other than the import reports."""
    exe = Path(sys.executable).with_name("harmonies")
    if not exe.is_file():
        pytest.skip("the harmonies console script is not installed beside this Python")
    cache = tmp_path / f"numba-{when}"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPROFILEIMPORTTIME": "1" if when == "import" else ""}
    env.pop("PYTHONPROFILEIMPORTTIME") if when != "import" else None
    p = subprocess.Popen([str(exe), "demo", "--agents", "random", "random", "--seed", "1"], cwd=tmp_path, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    if when == "import":
        for line in p.stderr:
            lines.append(line)
            if "numba" in line:
                break
    else:
        while not any(cache.rglob("*.nbi")):
            assert p.poll() is None, p.stderr.read()
            time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    rest = p.stderr.read()
    lines += rest.splitlines()
    return p.wait(timeout=120), [s.strip() for s in lines if s.strip() and not s.startswith("import time:")]


@pytest.mark.parametrize("when", ["import", "compile"])
def test_ctrl_c_while_importing_or_compiling_is_one_line_and_exit_130(tmp_path, when):
    rc, lines = _interrupt_harmonies(tmp_path, when)
    assert rc == 130 and len(lines) == 1 and re.fullmatch(r"harmonies( demo)?: stopped by SIGINT \(Ctrl-C\)",
                                                            lines[0]), (rc, lines)


def test_a_stop_swallowed_where_it_landed_is_raised_at_the_next_checkpoint():
    """numba's compiler catches exceptions raised inside it, so a SIGTERM that lands in a compilation loses its
    `Stopped`: the match loop's `stops.checkpoint` raises it again at the next turn (a solo run once played both of
    its games to the end after one)."""
    from agents.match import play_match
    from harmonies_env import stops
    from harmonies_env.config import GameConfig

    with stops.stop_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # (the handler runs at the next bytecode; this sleep is interrupted at once)
        except stops.Stopped:
            pass  # swallowed, as numba's compiler does
        with pytest.raises(stops.Stopped) as e:
            play_match(["random"], games=1, seed=0, config=GameConfig(1))
        assert e.value.signum == signal.SIGTERM
        stops.checkpoint()  # raised once: nothing pending now
    stops.checkpoint()  # outside the block: nothing
