"""The `harmonies` command works as written: every subcommand parses its documented options (help shows
defaults), runs, forwards `bench`/`train` arguments verbatim, names the extra to install instead of a
traceback, and `play` can be driven by a person through stdin."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from harmonies_apps import cli, play
from harmonies_apps.tournament import time_budget_specs
from harmonies_env import GameConfig

ROOT = Path(__file__).resolve().parents[1]


def run_module(module: str, *args: str, stdin: str = "", timeout: int = 300, cwd: Path = ROOT
               ) -> subprocess.CompletedProcess:
    """`python -m module args` from the repository root (or `cwd`), with this checkout first on the path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def run_cli(*args: str, stdin: str = "", timeout: int = 300, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return run_module("harmonies_apps.cli", *args, stdin=stdin, timeout=timeout, cwd=cwd)


def one_line_refusal(p: subprocess.CompletedProcess, *named: str) -> str:
    """The command refused its input as the project's rule says: exit 2, one stderr line naming it, no traceback."""
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].strip(), p.stderr
    for word in named:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# ---- the parser --------------------------------------------------------------------------------------

def test_bare_command_prints_help_and_exits_0(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: harmonies")
    for name in ("demo", "play", "tournament", "solo", "bench", "train"):
        assert name in out


@pytest.mark.parametrize("command", ["demo", "play", "tournament", "solo"])
def test_subcommand_help_shows_defaults(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([command, "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines at the terminal width
    assert f"usage: harmonies {command}" in out and "(default: 0)" in out and "(default: A)" in out
    assert "Not reproducible: time budgets" in out


def test_tournament_and_solo_parse_every_documented_option(tmp_path):
    p = cli.build_parser()
    a = p.parse_args(["tournament", "--agents", "greedy", "mcts:200it", "random", "--games", "7", "--jobs", "3",
                      "--out", str(tmp_path), "--quiet", "--players", "3", "--side", "B", "--spirits", "--seed", "5"])
    assert (a.agents, a.games, a.jobs, a.out, a.quiet, a.players, a.side, a.spirits, a.seed) == (
        ["greedy", "mcts:200it", "random"], 7, 3, str(tmp_path), True, 3, "B", True, 5)
    assert a.func is cli.cmd_tournament
    a = p.parse_args(["solo", "--agents", "greedy"])
    assert (a.games, a.jobs, a.out, a.quiet, a.side, a.spirits, a.seed) == (20, 1, None, False, "A", False, 0)
    a = p.parse_args(["play", "--opponents", "greedy:8", "random", "--seat", "2", "--side", "B", "--spirits"])
    assert (a.opponents, a.seat, a.side, a.spirits, a.seed) == (["greedy:8", "random"], 2, "B", True, 0)
    a = p.parse_args(["play", "--opponents"])
    assert a.opponents == []
    a = p.parse_args(["demo", "--agents", "random", "--players", "3", "--seed", "9"])
    assert (a.agents, a.players, a.seed) == (["random"], 3, 9)


def test_app_modules_register_their_subcommand():
    assert "harmonies_apps.play" in cli.APP_MODULES
    assert cli.build_parser().parse_args(["play"]).func is play.cmd_play
    for name in ("replay", "serve"):
        assert cli.build_parser().parse_args([name] + (["x.json"] if name == "replay" else [])).command == name


# ---- demo, tournament, solo -----------------------------------------------------------------------------

def test_demo_prints_turns_and_score_breakdowns(capsys):
    assert cli.main(["demo", "--seed", "2", "--agents", "greedy:4", "random"]) == 0
    out = capsys.readouterr().out
    assert "--- round 1, player 0 (greedy:4) ---" in out
    assert "take central space" in out and "=== final scores ===" in out
    assert "player 1: trees" in out and ("winner: player" in out or "shared victory" in out)


def test_tournament_and_solo_commands_write_outputs(tmp_path, capsys):
    assert cli.main(["tournament", "--agents", "random", "greedy:2", "--games", "2", "--quiet",
                     "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "win rate" in out and "elo" in out and "random = 0" in out
    assert (tmp_path / "tournament.json").exists() and (tmp_path / "tournament.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tournament.json", "tournament.png",
                                                          "tournament_games.csv"]  # no temporary files left
    assert cli.main(["solo", "--agents", "random", "--games", "2", "--quiet"]) == 0
    assert "suns" in capsys.readouterr().out


def test_bad_arguments_give_clear_errors(capsys):
    assert cli.main(["tournament", "--agents", "random", "--games", "1", "--quiet"]) == 2
    assert "2-4 players" in capsys.readouterr().err
    assert cli.main(["tournament", "--agents", "random", "nonsense", "--games", "1", "--quiet"]) == 2
    assert "unknown agent 'nonsense'" in capsys.readouterr().err
    assert cli.main(["tournament", "--agents", "random", "random", "--games", "0", "--quiet"]) == 2
    assert "games must be an integer >= 1" in capsys.readouterr().err


def test_time_budgets_are_named_as_not_reproducible(capsys):
    assert time_budget_specs(["mcts", "mcts:0.5", "mcts:200it", "greedy", "random", "ppo", "mcts:0.5"]) == [
        "mcts", "mcts:0.5"]
    assert time_budget_specs(["mlp-search", "mlp-search:0.5", "mlp-search:64it", "mlp",
                              "learned", "learned-search", "learned-search:8it", "learned-search:0.5", "learned-search",
                              "learned-search:2", "learned-search:2it", "learned-win"]) == [
        "mlp-search", "mlp-search:0.5", "learned-search:0.5", "learned-search:2"]
    assert cli.main(["tournament", "--agents", "mcts:0.001", "random", "--games", "1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "mcts:0.001" in err and "not reproducible" in err and "mcts:Nit" in err
    assert cli.main(["tournament", "--agents", "greedy:2", "random", "--games", "1", "--quiet"]) == 0
    assert "not reproducible" not in capsys.readouterr().err


def test_tournament_without_matplotlib_still_reports(tmp_path, monkeypatch, capsys):
    """The PNG is optional: the games' results and ratings are never lost for lack of it."""
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ModuleNotFoundError
    assert cli.main(["tournament", "--agents", "random", "greedy:2", "--games", "2", "--quiet",
                     "--out", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    assert "win rate" in cap.out and "elo" in cap.out
    assert 'no PNG: the matplotlib package is not installed (pip install -e ".[train]")' in cap.err
    data = json.loads((tmp_path / "tournament.json").read_text())
    assert data["summary"]["agents"]["random"]["games"] == 2 and len(data["summary"]["notes"]) == 1
    assert data["summary"]["agents"]["random"]["elo"] == 0.0
    assert not (tmp_path / "tournament.png").exists() and (tmp_path / "tournament_games.csv").exists()


def test_missing_extra_is_one_line_and_exit_2_before_any_game(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)
    monkeypatch.delitem(sys.modules, "agents.ppo", raising=False)

    def no_games(*a, **k):
        raise AssertionError("games were played before the missing extra was reported")

    monkeypatch.setattr("harmonies_apps.tournament.run_games", no_games)
    assert cli.main(["tournament", "--agents", "ppo:model.zip", "random", "--games", "2", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == 'harmonies tournament: needs sb3_contrib, from the "train" extra: pip install -e ".[train]"'


def installed(name: str) -> bool:
    """Whether `import name` can find the module (a blocked or absent one: no)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@pytest.mark.parametrize("module", ["starlette", "uvicorn"])
def test_serve_without_the_web_extra_is_one_line_and_exit_2(monkeypatch, capsys, module):
    """Passes with or without the web extra: the other web module stands in as an empty module when absent."""
    for other in ("starlette", "uvicorn"):
        if other != module and not installed(other):
            monkeypatch.setitem(sys.modules, other, types.ModuleType(other))
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ModuleNotFoundError

    def no_server(*a, **k):
        raise AssertionError("the server was built although the web extra is missing")

    monkeypatch.setattr("harmonies_apps.serve.create_app", no_server)
    assert cli.main(["serve", "--port", "8765"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f'harmonies serve: needs {module}, from the "web" extra: pip install -e ".[web]"'


def test_missing_extra_name_is_read_from_a_message_that_crossed_processes():
    assert cli.missing_extra(ModuleNotFoundError("No module named 'torch'")) == ("torch", "train")
    assert cli.missing_extra(ModuleNotFoundError("x", name="ray.rllib")) == ("ray", "distributed")
    assert cli.missing_extra(ModuleNotFoundError("x", name="numpy")) is None


# ---- bench and train: arguments forwarded verbatim ----------------------------------------------------

def test_bench_help_is_bench_engines_own(capsys):
    assert cli.main(["bench", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: harmonies bench")
    assert "--games" in out and "--api-actions" in out and "(default: 20000)" in out


def test_bench_runs_with_its_options(capsys):
    assert cli.main(["bench", "--games", "3", "--api-actions", "20", "--reference-games", "2",
                     "--habitat-boards", "200"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    cases = {r["case"] for r in rows}
    assert cases == {"numba_random_games", "python_api_step_and_mask", "reference_ratio", "habitat_matcher"}
    assert all(r["games"] == 3 for r in rows if r["case"] == "numba_random_games")
    assert cli.main(["bench", "--no-such-option"]) == 2


#: A stand-in for the C engine's harminies.c with the names `c_engine_driver.c` uses: every game lasts 10 x players +
#: board actions and each seat scores 3.
TOY_C_ENGINE = """
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define MAX_ACTIONS 4
struct state { int left; } global_state;
static uint32_t rng_seed(uint32_t x) { return x | 1u; }
static uint32_t rng_range(uint32_t *s, uint32_t n) { *s = *s * 1103515245u + 12345u; return (*s >> 16) % n; }
void wasm_init_game(uint32_t seed, int players, int board, int spirits) { global_state.left = 10 * players + board; }
int get_actions(struct state *s, uint16_t *out, int opt) { out[0] = 1; out[1] = 2; return 2; }
int do_action(struct state *s, uint16_t a) { return --s->left == 0; }
int player_score(struct state *s, int p, uint8_t *c) { return 3; }
int main(void) { return 0; }
"""


def test_bench_c_source_builds_the_driver_and_plays_the_games_asked(tmp_path, capsys):
    import shutil  # noqa: PLC0415

    bench_engine = importlib.import_module(cli.forwarded_module("bench"))
    assert cli.main(["bench", "--c-source", str(tmp_path / "none.c")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--c-source {tmp_path / 'none.c'}: no such file")
    broken = tmp_path / "broken.c"
    broken.write_text("this is not C\n")
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip(f"no C compiler ({os.environ.get('CC', 'cc')}) on this machine: --c-source cannot build its driver")
    assert cli.main(["bench", "--c-source", str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "could not build the C engine" in err
    toy = tmp_path / "harminies.c"
    toy.write_text(TOY_C_ENGINE)
    engine = bench_engine.CEngineProcess(toy, tmp_path)
    try:
        engine.send(kind="random", players=2, side=1, spirits=0, seed=7, games=4)
        answer = engine.read()
        assert (answer["games"], answer["actions"], answer["score"]) == (4, 4 * 21, 4 * 2 * 3)
        assert answer["cpu_s"] >= 0
        engine.send(core=min(os.sched_getaffinity(0)))
        assert engine.read() == {"pinned": min(os.sched_getaffinity(0))}
        with pytest.raises(ValueError, match="random cases only"):
            engine.send(kind="mcts", players=2, side=0, spirits=0, seed=0, games=1)
    finally:
        engine.close()


def test_bench_as_a_script_stops_on_ctrl_c_with_one_line_and_130(monkeypatch, capsys):
    """`python -m benchmarks.bench_engine` (not only `harmonies bench`) turns a Ctrl-C into one line and exit 130."""
    bench_engine = importlib.import_module(cli.forwarded_module("bench"))

    def interrupted() -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_engine, "main", interrupted)
    monkeypatch.setattr(bench_engine, "quiet_exit", lambda: None)  # it would silence this test process's hooks
    assert bench_engine.run_as_script() == 130
    assert capsys.readouterr().err == "python -m benchmarks.bench_engine: stopped by SIGINT (Ctrl-C)\n"


def fake_train(monkeypatch, main):
    name = cli.forwarded_module("train")  # experiments.train
    mod = types.ModuleType(name)
    mod.main = main
    monkeypatch.setitem(sys.modules, name, mod)


def test_train_forwards_every_argument_verbatim(monkeypatch):
    got = []
    fake_train(monkeypatch, lambda argv: got.append(list(argv)) or 3)
    argv = ["solo-ppo", "--config", "experiments/configs/solo_ppo.toml", "--timesteps", "100", "--seed", "-1",
            "--", "--selfplay", "x y"]
    assert cli.main(["train", *argv]) == 3
    assert got == [argv]
    assert cli.main(["train"]) == 3 and got[-1] == []


def test_train_help_is_the_forwarded_modules_help(monkeypatch, capsys):
    import argparse

    def main(argv):
        ap = argparse.ArgumentParser(description="fake trainer")
        ap.add_argument("algo", choices=["solo-ppo", "selfplay-ppo"])
        ap.parse_args(argv)
        return 0

    fake_train(monkeypatch, main)
    assert cli.main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: harmonies train") and "fake trainer" in out and "solo-ppo" in out
    assert cli.main(["train", "bogus"]) == 2


def test_train_without_its_extra_or_module_says_what_to_do(monkeypatch, capsys):
    def main(argv):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    fake_train(monkeypatch, main)
    assert cli.main(["train", "solo-ppo"]) == 2
    assert capsys.readouterr().err.strip() == (
        'harmonies train: needs torch, from the "train" extra: pip install -e ".[train]"')
    monkeypatch.setitem(sys.modules, cli.forwarded_module("train"), None)
    assert cli.main(["train", "solo-ppo"]) == 2
    assert f"{cli.forwarded_module('train')} is not in this installation" in capsys.readouterr().err


# ---- play ----------------------------------------------------------------------------------------------

class Script:
    """A person who reads the moves printed since their last answer and picks the first one offered."""

    def __init__(self, out: io.StringIO, first: list[str]):
        self.out = out
        self.first = list(first)
        self.prompts = 0
        self.seen = 0

    def __call__(self, prompt: str) -> str:
        self.prompts += 1
        if self.first:
            return self.first.pop(0)
        text = self.out.getvalue()[self.seen:]
        self.seen = len(self.out.getvalue())
        if re.search(r"^ {2} ?\d+ {2}", text, re.M):
            return "0"
        m = re.search(r'^ {2}(\w+) on cell (\d+)', text, re.M) or re.search(r'^ {2}cube from held card (\d) .*? on '
                                                                           r'cell (\d+)', text, re.M)
        assert m, text[-2000:]
        return f"{m.group(1)} {m.group(2)}" if not text[m.start():].startswith("  cube") else \
            f"cube {m.group(1)} {m.group(2)}"


def test_play_a_whole_game_through_scripted_input():
    out = io.StringIO()
    script = Script(out, ["help", "table", "hello", "99", "blue 7", "cube 9 1", "board"])
    game = play.play(["random"], seat=0, seed=4, input_fn=script, out=out)
    text = out.getvalue()
    assert game.is_over
    assert "commands:" in text and "COLOUR CELL" in text  # help
    assert "'hello' is not a move or a command" in text
    assert "99 is not in the list" in text and "blue on cell 7 is not a legal move now" in text
    assert "held card slots are 0-3" in text
    # the whole table once at the start of each of my turns; my turns are half of all turns
    assert text.count("=== the table ===") == (game.turn + 1) // 2
    assert " 0:" in text and "22:" in text  # numbered cells
    assert re.search(r"^market: 0 \w+.*\n +\d+/\d+", text, re.M)  # cards with their points and habitats
    assert re.search(r"^  held: 0 \w+.*\n.*\n +\d of \d placed", text, re.M)  # held cards with their progress
    assert re.search(r"^player 1 \(random\): \d+ points?.*\n(  .*\n)*  took central space \d \(", text, re.M)
    last = text.strip().splitlines()[-1]
    total = game.scores()[0]["total"]
    assert last.startswith(("You won with", "You lost:", "Shared victory")) and str(total) in last
    assert ("You won" in last) == (game.winners() == [0])


def test_play_solo_with_spirits_shows_the_spirits_and_ends_with_suns():
    out = io.StringIO()
    game = play.play([], seed=2, input_fn=Script(out, []), out=out, config=GameConfig(1, "B", True))
    text = out.getvalue()
    assert text.strip().splitlines()[-1] == f"You scored {game.scores()[0]['total']} points: {game.suns()} suns."
    menu = text[text.index("   0  keep Spirit card 0"):]
    assert menu.index("habitat") < menu.index("   1  keep Spirit card 1")  # each Spirit's habitat and rule


def test_result_line_says_who_won():
    class G:
        num_players = 2

        def __init__(self, totals, winners):
            self.t, self.w = totals, winners

        def scores(self):
            return [{"total": t} for t in self.t]

        def winners(self):
            return self.w

    names = ["you", "greedy"]
    assert play.result_line(G([90, 80], [0]), 0, names) == "You won with 90 points (player 1 (greedy) 80)."
    assert play.result_line(G([70, 80], [1]), 0, names) == (
        "You lost: player 1 (greedy) won with 80 points; you scored 70.")
    assert play.result_line(G([80, 80], [0, 1]), 1, names) == "Shared victory: you and player 0 with 80 points."


def test_play_through_stdin_help_bad_input_and_quit():
    p = run_cli("play", "--opponents", "random", stdin="help\nabc\n0\nblue 99\nquit\n")
    assert "commands:" in p.stdout and "'abc' is not a move or a command" in p.stdout
    assert "there is no cell 99" in p.stdout and "tokens in hand:" in p.stdout
    assert "game abandoned" in p.stdout and p.returncode == 0


def test_play_bad_seat_is_a_clear_error(capsys):
    assert cli.main(["play", "--opponents", "random", "--seat", "5"]) == 2
    assert "--seat must be 0..1" in capsys.readouterr().err


def test_docs_cli_table_matches_the_parser():
    """docs/cli.md lists every subcommand, and every option it names is one the subcommand takes."""
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    rows = [line for line in (ROOT / "docs" / "cli.md").read_text().splitlines() if line.startswith("| `")]
    documented = {}
    for row in rows:
        first, rest = row.split("|")[1], "|".join(row.split("|")[2:])
        for name in re.findall(r"`(\w+)`", first):
            documented[name] = set(re.findall(r"`(--[\w-]+)`", rest))
    assert set(documented) == set(sub.choices)
    for name, options in documented.items():
        if name in cli.FORWARDED:
            assert not options
            continue
        taken = {s for a in sub.choices[name]._actions for s in a.option_strings}
        assert options <= taken, (name, options - taken)


# ---- the front door: every path a newcomer tries works or says why in one line -----------------------------

def test_readme_test_command_is_what_ci_runs():
    """The README's second command is the one `.ci/run` runs, with the same extras (so CI runs what we tell)."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("pip install") and "pytest" in line)
    assert command == 'pip install -e ".[train,test,distributed,web]" && python -m pytest'
    assert [line for line in ci.splitlines() if line.startswith("pip install")] == [command]


def test_license_is_mit_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 The harmonies-env authors" in text
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT"' in pyproject and 'license-files = ["LICENSE"]' in pyproject


def test_description_lists_every_subcommand(capsys):
    """Bare `harmonies` names every subcommand in its first line and shows an example of each."""
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    first = out.split("\n\n")[1].splitlines()[0]  # after the usage: the docstring's first line
    assert first.startswith("The `harmonies` command:")
    for name in sub.choices:
        assert re.search(rf"\b{name}\b", first), name
        assert re.search(rf"^ +harmonies {name}\b", out, re.M), name


def test_train_config_errors_are_one_line_and_exit_2():
    p = run_cli("train", "solo-ppo", "--config", "/nonexistent.toml")
    assert one_line_refusal(p, "/nonexistent.toml").startswith("harmonies train: ")
    p = run_cli("train", "solo-ppo", "--set", "foo.bar=1")
    assert one_line_refusal(p, "foo").startswith("harmonies train: ")
    p = run_module("experiments.train", "solo-ppo", "--set", "foo.bar=1")
    assert one_line_refusal(p, "foo").startswith("python -m experiments.train: ")


def test_forwarded_refusal_message_is_printed(monkeypatch, capsys):
    def main(argv):
        raise SystemExit(f"no such thing: {argv[0]}")

    fake_train(monkeypatch, main)
    assert cli.main(["train", "x.toml"]) == 2
    assert capsys.readouterr().err == "harmonies train: no such thing: x.toml\n"


def test_train_usage_names_the_command_it_was_run_as_and_help_says_each_default_once(capsys, monkeypatch):
    from experiments import train

    with pytest.raises(SystemExit):
        train.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m experiments.train")
    assert cli.main(["train", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: harmonies train")
    assert cli.main(["train", "solo-ppo", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: harmonies train solo-ppo")
    assert_each_default_said_once(out, options=8)
    # learned runs under experiments.train like the others (called as `harmonies train` calls it: sys.argv[0] set
    # so; directly, as an installed `experiments` may be another checkout's)
    monkeypatch.setattr(sys, "argv", ["harmonies train"])
    with pytest.raises(SystemExit):
        train.main(["learned", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: harmonies train learned") and "experiments/configs/learned.toml" in out
    assert "python -m experiments.train_mlp" not in out
    assert_each_default_said_once(out, options=8)
    with pytest.raises(SystemExit):  # the MLP baseline trains as `mlp`
        train.main(["mlp", "--help"])
    assert "experiments/configs/mlp.toml" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # `ntuple`, the flagship's name before issue 35, is gone
        train.main(["ntuple", "--help"])
    assert "invalid choice: 'ntuple'" in capsys.readouterr().err


def assert_each_default_said_once(help_text: str, options: int) -> None:
    chunks = re.split(r"\n  (?=-)", help_text.split("options:")[1])  # one chunk per option
    assert len(chunks) >= options
    for chunk in chunks:
        assert len(re.findall(r"default", chunk)) <= 1, chunk
    for shown in ("(default: None)", "(default: False)", "(default: [])"):
        assert shown not in help_text


def test_every_subcommand_help_says_each_default_once():
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        if name not in cli.FORWARDED:
            assert_each_default_said_once(parser.format_help(), options=2)


def test_bench_runs_all_four_cases_from_a_checkout_wherever_it_is_started(tmp_path):
    """From the repository root (`python -m benchmarks.bench_engine`) or elsewhere (`harmonies bench`), the
    test-reference cases run: the references are found next to the benchmark, not through the import path, and a
    numba cache the tests wrote for tests/habitat_reference.py (under the module name they import) does not break it."""
    import numpy as np
    from habitat_reference import placement_habitat_cells  # as test_batch imports it: pytest puts tests/ on the path

    assert placement_habitat_cells(0, np.zeros(15, dtype=np.int64), 0, 1) == 0  # compiled, and cached under that name
    small = ["--games", "2", "--api-actions", "10", "--reference-games", "1", "--habitat-boards", "50"]
    for p in (run_module("benchmarks.bench_engine", *small), run_cli("bench", *small, cwd=tmp_path)):
        assert p.returncode == 0, p.stderr[-2000:]
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        assert {r["case"] for r in rows} == {"numba_random_games", "python_api_step_and_mask", "reference_ratio",
                                             "habitat_matcher"}
        assert not any("skipped" in r for r in rows) and "skipped" not in p.stderr


def test_bench_without_the_test_references_says_so_per_case(monkeypatch, tmp_path, capsys):
    import importlib

    bench_engine = importlib.import_module(cli.forwarded_module("bench"))  # the module `harmonies bench` runs
    monkeypatch.setattr(bench_engine, "reference_dirs", lambda: [tmp_path / "tests"])
    for key in ("_bench_tests_reference", "_bench_tests_habitat_reference"):
        monkeypatch.delitem(sys.modules, key, raising=False)
    assert cli.main(["bench", "--games", "1", "--api-actions", "1", "--reference-games", "1",
                     "--habitat-boards", "1"]) == 0
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 2
    for line, case, name in zip(lines, ("reference_ratio", "habitat_matcher"), ("reference", "habitat_reference")):
        assert line.startswith(f"harmonies bench: {case} skipped: tests/{name}.py not found")
    rows = {json.loads(line)["case"]: json.loads(line) for line in cap.out.splitlines()}
    assert "skipped" in rows["reference_ratio"] and "skipped" in rows["habitat_matcher"]


def test_bench_refuses_counts_below_1(capsys):
    one_line_refusal(run_cli("bench", "--games", "0"), "--games", "0")
    for option in ("--games", "--api-actions", "--reference-games", "--habitat-boards"):
        for value in ("0", "-3"):
            assert cli.main(["bench", option, value]) == 2
            assert capsys.readouterr().err == f"harmonies bench: {option} must be >= 1, got {value}\n"


BAD_SPECS = {"greedy:abc": "greedy takes", "greedy:0": "greedy takes", "greedy:2:x": "greedy takes",
             "mcts:xyz": "mcts takes", "mcts:-1": "mcts takes", "mcts:abcit": "mcts takes", "mcts:0it": "mcts takes",
             "learned-search:abc": "learned-search takes", "mlp-search:abc": "mlp-search takes",
             "learned:x.pt": "'mlp:x.pt'", "random:3": "random takes", "ppo": "ppo:PATH",
             "nonsense": "agents are random, greedy, mcts"}


@pytest.mark.parametrize("command", ["tournament", "demo", "solo"])
def test_every_bad_agent_spec_is_one_line_naming_it_and_what_is_accepted(command, capsys):
    for spec, accepted in BAD_SPECS.items():
        agents = [spec] if command == "solo" else ["random", spec]
        argv = [command, "--agents", *agents] + ([] if command == "demo" else ["--games", "1", "--quiet"])
        assert cli.main(argv) == 2, spec
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"harmonies {command}: ")
        assert repr(spec) in err and accepted in err, err
        assert "invalid literal" not in err and "could not convert" not in err


def test_bad_agent_specs_through_the_shell():
    one_line_refusal(run_cli("tournament", "--agents", "random", "greedy:abc", "--games", "1", "--quiet"),
                     "'greedy:abc'", "greedy takes")
    one_line_refusal(run_cli("demo", "--agents", "mcts:xyz", "random"), "'mcts:xyz'", "mcts takes")
    one_line_refusal(run_cli("solo", "--agents", "learned-search:abc", "--games", "1"), "'learned-search:abc'",
                     "learned-search takes")


def test_demo_players_must_fit_the_agents(capsys):
    with pytest.raises(SystemExit) as e:  # argparse's error, naming the option (add_game_options)
        cli.main(["demo", "--players", "0"])
    assert e.value.code == 2 and "argument --players: must be 1-4 (1: solo), got '0'" in capsys.readouterr().err
    assert cli.main(["demo", "--agents", "random", "random", "random", "--players", "2"]) == 2
    assert "3 agents for a 2-player game" in capsys.readouterr().err


class Finished:
    """A finished game as winner_line reads it: totals, animal cubes, and the winners by the rules."""

    def __init__(self, totals: list[int], cubes: list[int]):
        self.num_players, self.totals, self.cubes = len(totals), totals, cubes

    def scores(self):
        from harmonies_env.scoring import CATEGORIES

        return [dict.fromkeys(CATEGORIES, 0) | {"total": t} for t in self.totals]

    def animal_cubes(self):
        return self.cubes

    def winners(self):
        best = max(zip(self.totals, self.cubes))
        return [p for p in range(self.num_players) if (self.totals[p], self.cubes[p]) == best]


def test_winner_line_names_the_tie_break():
    from harmonies_env.demo import winner_line

    assert winner_line(Finished([80, 90], [3, 1])) == "winner: player 1 with 90 points"
    assert winner_line(Finished([20, 20], [0, 1])) == (
        "winner: player 1 with 20 points, on the tie-break: players 0 and 1 tie on points, and player 1 placed "
        "more animal cubes (player 0 0, player 1 1)")
    assert winner_line(Finished([13, 13], [2, 2])) == (
        "shared victory: players 0 and 1 with 13 points, still tied after the tie-break (animal cubes placed: "
        "player 0 2, player 1 2)")
    assert winner_line(Finished([30, 30, 30, 10], [4, 1, 4, 9])) == (
        "shared victory: players 0 and 2 with 30 points: players 0, 1 and 2 tie on points, and players 0 and 2 "
        "placed the most animal cubes, as many each (player 0 4, player 1 1, player 2 4)")
    assert winner_line(Finished([30, 30, 30], [1, 5, 2])).startswith(
        "winner: player 1 with 30 points, on the tie-break: players 0, 1 and 2 tie on points, and player 1 placed "
        "the most animal cubes")
    out = io.StringIO()
    cli.print_scores(Finished([20, 20], [0, 1]), out)  # harmonies demo and play end with the same line
    assert out.getvalue().splitlines()[-1].startswith("winner: player 1 with 20 points, on the tie-break")


def test_demo_of_a_tied_game_says_the_tie_break():
    """Seed 1, the README's demo, ends 20-20 and player 1 wins on animal cubes; seed 43 is a shared victory."""
    from harmonies_env.game import Game

    p = run_module("harmonies_env.demo", "--seed", "1")
    assert p.returncode == 0, p.stderr[-2000:]
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith("winner: player 1 with 20 points, on the tie-break: players 0 and 1 tie on points")
    out = io.StringIO()
    from harmonies_env.demo import play_demo

    game = play_demo(seed=43, out=out)
    assert isinstance(game, Game) and game.winners() == [0, 1]
    assert out.getvalue().strip().splitlines()[-1].startswith("shared victory: players 0 and 1 with 13 points, "
                                                               "still tied after the tie-break")
    one_line_refusal(run_module("harmonies_env.demo", "--seed", "-1"), "seed", "-1")


def test_docs_examples_of_refusals_are_the_real_messages():
    from agents import make_agent
    from harmonies_env.demo import winner_line

    text = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    with pytest.raises(ValueError) as e:
        make_agent("greedy:abc")
    assert f"harmonies tournament: {e.value}" in text
    assert f"`{winner_line(Finished([20, 20], [0, 1]))}`" in text


def test_help_and_docs_list_every_agent_spec_kind():
    """The CLI's agent-spec help, `harmonies serve --opponents`' help and docs/agents.md's spec table name every kind
    of the registry (a new kind cannot be left out of them), the old names with their new ones, and the help says
    which budgets are not reproducible."""
    import argparse

    from agents.registry import ALIASES, KINDS
    from harmonies_apps import serve

    sub = argparse.ArgumentParser().add_subparsers()
    opponents = next(a.help for a in serve.add_parser(sub)._actions if "--opponents" in a.option_strings)
    docs = (ROOT / "docs" / "agents.md").read_text()
    table = [ln for ln in docs.splitlines() if ln.startswith("| `")]
    helptext = " ".join(cli.agents_help().split())
    for kind in KINDS:
        assert re.search(rf"(^|[ ,(]){re.escape(kind)}(\[|:|,|\.| |$)", helptext), kind
        assert kind in opponents, kind
        assert any(re.match(rf"\| `{re.escape(kind)}(\[|:|`)", ln) for ln in table), kind
    rows = {re.match(r"\| `([a-z-]+)", ln).group(1) for ln in table}
    assert rows == set(KINDS)  # no row for a kind that is not registered
    for old, new in ALIASES.items():
        assert f"{old} = {new}" in helptext and f"`{old}` = `{new}`" in " ".join(docs.split()), old
    timed = helptext.split("Not reproducible")[1]
    for spec in ("mcts:SECONDS", "learned-search:SECONDS", "mlp-search:SECONDS"):
        assert spec in timed, spec
