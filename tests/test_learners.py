"""A new learner is one `Evaluator` class plus one registry line (`agents.learners`): a test's own linear evaluator
trains through the real command (`harmonies train NAME`), its saved weights play by spec (`make_agent`), in a
tournament and on a ladder; the schedule's length apart from the run's (`train.schedule`); `--resume` refuses settings
that change how a run trains, for every learner (`selfplay_config.changed_on_resume`)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.evaluator import Evaluator, td_targets
from agents.learners import LearnerKind, register_learner, unregister_learner
from harmonies_env import state as S
from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

NAME = "linear-test"
#: A tiny run: 2 games of beam 1 and 2 candidates, long enough for games to finish and teach it.
TINY = ["--set", "selfplay.games=2", "--set", "selfplay.beam=1", "--set", "selfplay.candidates=2", "--set",
        "train.iterations=70", "--set", "eval.every=0", "--set", "run.checkpoint_every=35", "--no-progress"]


class LinearEvaluator(Evaluator):
    """The points a mover still scores, as a linear function of three afterstate numbers (1, its total / 100, the
    cards left / 32), learnt by SGD toward TD(lambda) targets."""

    def __init__(self, cfg, learns=True, seed=0):
        self.lam = float(cfg["train"]["lam"])
        self.w = np.array([30.0, 0.0, 0.0])

    def _x(self, afters, movers):
        sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
        return np.array([[1.0, seat_score(a, int(p), sc) / 100, a[S.DECK_COUNT] / 32] for a, p in zip(afters, movers)])

    def values(self, afters, movers, out):
        out[:] = self._x(afters, movers) @ self.w if len(afters) else 0.0

    def learn(self, game, progress):
        x = self._x(game.afters[: game.m], game.seats[: game.m])
        err = td_targets(game, self.lam) - x @ self.w
        self.w += 0.01 * (1 - progress) * (err @ x) / max(1, game.m)
        return float(np.mean(err**2))

    def get_weights(self):
        return {"w": self.w}

    def set_weights(self, weights):
        self.w = np.array(weights["w"], dtype=np.float64)

    def arrays(self):
        return {"w": self.w}

    def load_arrays(self, arrays, where):
        self.set_weights(arrays)


@pytest.fixture()
def linear():
    kind = register_learner(LearnerKind(NAME, LinearEvaluator, "a linear afterstate value (a test's)"))  # the line
    yield kind
    unregister_learner(NAME)
    from agents.registry import lookup

    assert lookup(NAME) is None


def test_one_class_and_one_line_train_play_and_are_rated(linear, tmp_path, capsys):
    from agents import make_agent
    from agents.afterstate_agent import AfterstateAgent
    from harmonies_apps.cli import main

    run = tmp_path / "run"
    assert main(["train", NAME, "--run", str(run), *TINY]) == 0  # `harmonies train NAME`: the real command
    summary = json.loads((run / "summary.json").read_text())
    assert summary["iteration"] == 70 and summary["games"] > 0 and summary["loss"] is not None
    record = json.loads((run / "model.json").read_text())
    assert record["config"]["play"] == {"beam": 1, "candidates": 2}
    trained = np.load(run / "model.npz")["w"]
    assert not np.array_equal(trained, [30.0, 0.0, 0.0])  # its finished games taught it

    spec = f"{NAME}:{run / 'model.npz'}"
    agent = make_agent(spec, seed=1)  # its saved weights, by one spec
    assert isinstance(agent, AfterstateAgent) and agent.name == spec
    assert np.array_equal(agent.model.w, trained) and (agent.beam, agent.candidates) == (1, 2)
    with pytest.raises(ValueError, match=f"{NAME} needs a checkpoint"):
        make_agent(NAME)

    capsys.readouterr()
    assert main(["tournament", "--agents", spec, "random", "--games", "2", "--jobs", "1", "--quiet",
                 "--out", str(tmp_path / "t")]) == 0
    assert spec in json.dumps(json.loads(next((tmp_path / "t").glob("*.json")).read_text()))
    db = tmp_path / "l.db"
    assert main(["ladder", "init", str(db), "--references", "random"]) == 0
    assert main(["ladder", "add", str(db), spec, "--name", NAME]) == 0  # pinned by its weights' SHA-256
    assert main(["ladder", "play", str(db), "--until-games", "2", "--quiet"]) == 0
    assert main(["ladder", "show", str(db), "--json"]) == 0
    out = capsys.readouterr().out
    assert NAME in out[out.index("{"):]

    pytest.importorskip("starlette", reason='the play server needs the web extra: pip install -e ".[web]"')
    pytest.importorskip("httpx2", reason='Starlette\'s TestClient needs httpx2: pip install -e ".[web]"')
    from starlette.testclient import TestClient

    from harmonies_apps.serve import create_app

    with TestClient(create_app([spec, "random"], bot_delay=0)) as c:  # the play server offers it
        r = c.post("/api/games", json={"opponents": [spec], "seat": 0})
        assert r.status_code == 200, r.text


def test_the_schedule_runs_apart_from_the_run(linear):
    """train.schedule: the step sizes' schedule ends there and stays (the run goes on to train.iterations); 0 (every
    shipped config): the schedule is the run, as before."""
    from experiments.selfplay_command import build, settings

    cfg = settings(NAME, {"selfplay": {"games": 1, "beam": 1, "candidates": 2},
                          "train": {"iterations": 100, "schedule": 40}})
    learner = build(NAME, cfg, 0, None, progress=False)
    for it, want in ((0, 0.0), (20, 0.5), (40, 1.0), (90, 1.0)):
        learner.iteration = it
        assert learner.progress_fraction() == want and learner.context().progress == want
    cfg["train"]["schedule"] = 0
    learner = build(NAME, cfg, 0, None, progress=False)
    learner.iteration = 20
    assert learner.progress_fraction() == 0.2


def _saved(run: Path, algo: str, config: dict) -> None:
    """A run folder as `harmonies train` leaves it (its config.json), for `--resume` to read."""
    from experiments.commands import RunArgs, save_run_config, schema
    from experiments.common import check_config

    run.mkdir(parents=True)
    save_run_config(RunArgs(algo=algo, config=check_config(config, schema(algo)), seed=0, run=run))


@pytest.mark.parametrize("algo", ["learned", "mlp", NAME])
def test_resume_refuses_settings_that_change_training_for_every_learner(linear, algo, tmp_path, capsys):
    from experiments import train

    run = tmp_path / algo
    _saved(run, algo, {"train": {"iterations": 50}})
    with pytest.raises(SystemExit, match=r"--resume: .* other settings, which would change how it goes on: "
                                         r"train\.lam \(.* -> 0\.25\); resume with its own"):
        train.main([algo, "--run", str(run), "--resume", "--set", "train.lam=0.25"])
    with pytest.raises(SystemExit, match=r"train\.iterations \(50 -> 80: the schedule's length; keep it with "
                                         r"--set train\.schedule=50\)"):
        train.main([algo, "--run", str(run), "--resume", "--set", "train.iterations=80"])
    (tmp_path / "other.toml").write_text("[selfplay]\ngames = 3\n[train]\niterations = 50\n")
    with pytest.raises(SystemExit, match=r"selfplay\.games \(.* -> 3\)"):
        train.main([algo, "--run", str(run), "--resume", "--config", str(tmp_path / "other.toml")])
    # its length, with the schedule kept, and its evaluation and checkpoint cadence go on (resolved, not refused)
    ns = train.build_parser().parse_args([algo, "--run", str(run), "--resume", "--set", "train.iterations=80",
                                          "--set", "train.schedule=50", "--set", "eval.every=7",
                                          "--set", "run.checkpoint_every=9"])
    args = train.resolve(ns)
    assert args.config["train"]["iterations"] == 80 and args.config["eval"]["every"] == 7
    assert json.loads((run / "config.json").read_text())["config"]["train"]["iterations"] == 50  # left as it was


def test_a_resumed_run_with_a_longer_run_and_the_same_schedule_goes_on(linear, tmp_path):
    """Through the command: a run of 70 iterations (schedule 70) resumed to 80 with train.schedule=70 goes on."""
    from experiments import train

    run = tmp_path / "run"
    assert train.main([NAME, "--run", str(run), *TINY]) == 0
    assert train.main([NAME, "--run", str(run), "--resume", "--no-progress", "--set", "train.iterations=80",
                       "--set", "train.schedule=70"]) == 0
    assert json.loads((run / "summary.json").read_text())["iteration"] == 80
