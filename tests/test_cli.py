"""The `harmonies` command: demo runs, play handles bad input, tournament and solo write their results."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from harmonies_apps import cli

ROOT = Path(__file__).resolve().parents[1]


def test_demo_prints_turns_and_score_breakdowns(capsys):
    assert cli.main(["demo", "--seed", "2", "--agents", "greedy:4", "random"]) == 0
    out = capsys.readouterr().out
    assert "--- round 1, player 0 (greedy:4) ---" in out
    assert "take central space" in out and "=== final scores ===" in out
    assert "player 1: trees" in out and ("winner: player" in out or "shared victory" in out)


def test_play_reprompts_on_bad_input_then_plays_to_the_end():
    answers = iter(["hello", "-1", "9999", ""] + ["0"] * 10000)
    prompts = []

    def fake_input(prompt):
        prompts.append(prompt)
        return next(answers)

    out = io.StringIO()
    args = cli.build_parser().parse_args(["play", "--opponents", "random", "--seed", "4"])
    assert cli.cmd_play(args, input_fn=fake_input, out=out) == 0
    text = out.getvalue()
    assert "'hello' is not a move number" in text
    assert "-1 is not in the list" in text and "9999 is not in the list" in text
    assert "'' is not a move number" in text
    assert "=== final position ===" in text and "player 1 (random):" in text
    assert prompts[0].startswith("choose 0-") and len(prompts) > 20


def test_play_through_stdin_quits_cleanly():
    p = subprocess.run([sys.executable, "-m", "harmonies_apps.cli", "play", "--opponents", "random"],
                       input="abc\nq\n", capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "'abc' is not a move number" in p.stdout
    assert "game abandoned" in p.stderr and p.returncode != 0


def test_tournament_and_solo_commands_write_outputs(tmp_path, capsys):
    assert cli.main(["tournament", "--agents", "random", "greedy:2", "--games", "2", "--quiet",
                     "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "win rate" in out and "openskill" in out
    assert (tmp_path / "tournament.json").exists() and (tmp_path / "tournament.png").exists()
    assert cli.main(["solo", "--agents", "random", "--games", "2", "--quiet"]) == 0
    assert "suns" in capsys.readouterr().out


def test_bad_arguments_give_clear_errors(capsys):
    assert cli.main(["tournament", "--agents", "random", "--games", "1", "--quiet"]) == 2
    assert "2-4 players" in capsys.readouterr().err
    assert cli.main(["tournament", "--agents", "random", "nonsense", "--games", "1", "--quiet"]) == 2
    assert "unknown agent 'nonsense'" in capsys.readouterr().err
