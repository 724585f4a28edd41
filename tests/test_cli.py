"""The `harmonies` command works as written: every subcommand parses its documented options (help shows
defaults), runs, forwards `bench`/`train` arguments verbatim, names the extra to install instead of a
traceback, and `play` can be driven by a person through stdin."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from harmonies_apps import cli, play
from harmonies_apps.tournament import time_budget_specs

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, stdin: str = "", timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harmonies_apps.cli", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout)


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
    assert "win rate" in out and "openskill" in out
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
    assert "games must be >= 1" in capsys.readouterr().err


def test_time_budgets_are_named_as_not_reproducible(capsys):
    assert time_budget_specs(["mcts", "mcts:0.5", "mcts:200it", "greedy", "random", "ppo", "mcts:0.5"]) == [
        "mcts", "mcts:0.5"]
    assert time_budget_specs(["learned-search", "learned-search:0.5", "learned-search:64it", "learned"]) == [
        "learned-search", "learned-search:0.5"]
    assert cli.main(["tournament", "--agents", "mcts:0.001", "random", "--games", "1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "mcts:0.001" in err and "not reproducible" in err and "mcts:Nit" in err
    assert cli.main(["tournament", "--agents", "greedy:2", "random", "--games", "1", "--quiet"]) == 0
    assert "not reproducible" not in capsys.readouterr().err


def test_tournament_without_openskill_or_matplotlib_still_reports(tmp_path, monkeypatch, capsys):
    """Ratings and the PNG are optional: the games' results are never lost for lack of them."""
    for name in ("openskill", "openskill.models", "matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ModuleNotFoundError
    assert cli.main(["tournament", "--agents", "random", "greedy:2", "--games", "2", "--quiet",
                     "--out", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    assert "win rate" in cap.out and "openskill" not in cap.out
    assert 'no OpenSkill ratings: the openskill package is not installed (pip install -e ".[train]")' in cap.err
    assert "no PNG" in cap.err
    data = json.loads((tmp_path / "tournament.json").read_text())
    assert data["summary"]["agents"]["random"]["games"] == 2 and len(data["summary"]["notes"]) == 2
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


@pytest.mark.parametrize("module", ["starlette", "uvicorn"])
def test_serve_without_the_web_extra_is_one_line_and_exit_2(monkeypatch, capsys, module):
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


def fake_train(monkeypatch, main):
    mod = types.ModuleType("experiments.train")
    mod.main = main
    monkeypatch.setitem(sys.modules, "experiments.train", mod)


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
    monkeypatch.setitem(sys.modules, "experiments.train", None)
    assert cli.main(["train", "solo-ppo"]) == 2
    assert "experiments.train is not in this installation" in capsys.readouterr().err


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
    game = play.play([], side="B", spirits=True, seed=2, input_fn=Script(out, []), out=out)
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
