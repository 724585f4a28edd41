"""`harmonies ladder`: the same games for any --jobs and any split, a SIGKILLed play finished by running it again,
verify, sequential tests, 3- and 4-player pools, and bad input refused with the file unchanged (issue 44)."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harmonies_apps.cli import main
from harmonies_apps.ladder import commands
from harmonies_apps.ladder.engine import game_results
from harmonies_apps.ladder.pairing import placement_interval
from harmonies_apps.ladder.stats import bootstrap_intervals, fit_ratings
from harmonies_apps.ladder.store import open_ladder
from harmonies_env import GameConfig

REFS = ["random", "greedy:2"]
#: What a game row holds that depends on the run (when and how fast), not on the game.
RUN_FIELDS = ("id", "played", "cpu_seconds", "git_commit")


def make(path: Path, players: int = 2, refs=REFS, extra=("greedy:1",), seed: int = 5) -> Path:
    with commands.init(path, GameConfig(players), seed, refs) as ladder:
        for spec in extra:
            commands.add(ladder, spec)
    return path


def games_of(path: Path) -> list[dict]:
    with open_ladder(path) as ladder:
        return [{k: v for k, v in g.items() if k not in RUN_FIELDS} for g in ladder.games()]


def ratings_of(path: Path) -> np.ndarray:
    with open_ladder(path) as ladder:
        return fit_ratings(game_results(ladder.games()), len(ladder.bots()))


def play(path: Path, games: int, jobs: int = 1) -> None:
    with open_ladder(path, write=True) as ladder:
        commands.play(ladder, until_games=games, jobs=jobs)


def test_same_games_and_ratings_for_any_jobs_and_split(tmp_path):
    one, two, split = (make(tmp_path / f"{k}.db") for k in ("one", "two", "split"))
    play(one, 40)
    play(two, 40, jobs=2)
    play(split, 14)
    play(split, 40)
    g = games_of(one)
    assert len(g) == 40 and g == games_of(two) == games_of(split)
    assert {tuple(x["bots"]) for x in g} >= {(0, 1), (1, 0)}  # every seating of a block: seats swapped
    for b in {x["block"] for x in g}:
        pair = [x for x in g if x["block"] == b]
        assert len(pair) == 2 and pair[0]["seed"] == pair[1]["seed"] and pair[0]["bots"] == pair[1]["bots"][::-1]
    r = ratings_of(one)
    assert r[0] == 0 and np.isfinite(r).all() and np.array_equal(r, ratings_of(split))
    # refitting the stored games in any order changes no rating
    shuffled = game_results([dict(x) for x in np.random.default_rng(0).permutation(np.array(g, dtype=object))])
    assert np.allclose(fit_ratings(shuffled, len(r)), r, atol=1e-9, rtol=0)
    assert r[1] > r[0]  # greedy:2 above random


def test_until_ci_plays_until_every_interval_is_that_narrow(tmp_path):
    db = make(tmp_path / "l.db", refs=["random"], extra=())
    with open_ladder(db, write=True) as ladder:  # two random players: intervals narrow as 1/sqrt(games)
        commands.add(ladder, "random", name="other")
        commands.play(ladder, 100_000, until_ci=150.0)
        rows = commands.report(ladder)["bots"]
        games = ladder.game_count()
    assert games % 64 == 0 and all(b["ci_high"] - b["ci_low"] <= 300.0 for b in rows)
    with open_ladder(db, write=True) as ladder:  # already there: nothing more to play
        assert commands.play(ladder, 100_000, until_ci=150.0) == 0 and ladder.game_count() == games
        commands.play(ladder, until_ci=1.0, until_games=games + 10)  # both: whichever comes first
        assert ladder.game_count() == games + 10



def test_until_ci_with_bot_places_that_bot_alone(tmp_path):
    db = make(tmp_path / "l.db", refs=["random"], extra=())
    with open_ladder(db, write=True) as ladder:
        commands.add(ladder, "random", name="other")
        commands.play(ladder, until_games=64)
        commands.add(ladder, "random", name="new")
        with pytest.raises(ValueError, match="is the anchor"):
            commands.play(ladder, 10_000, until_ci=150.0, bot="random")
        commands.play(ladder, 10_000, until_ci=150.0, bot="new")
        new = ladder.bot("new").id
        placed = [g for g in ladder.games() if g["block"] >= 32]
        results = game_results(ladder.games())
    assert placed and all(new in g["bots"] for g in placed)  # every block of its rounds holds it
    assert placement_interval(results, 3, new, 5) <= 150.0


KILLER = textwrap.dedent("""
    import os, signal, sys
    from harmonies_apps.ladder import commands
    from harmonies_apps.ladder.store import open_ladder
    done = []
    def on_block(number, games):
        done.append(number)
        if len(done) == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
    with open_ladder(sys.argv[1], write=True) as ladder:
        commands.play(ladder, until_games=int(sys.argv[3]), on_block=on_block)
""")


def test_sigkilled_play_run_again_ends_as_uninterrupted(tmp_path):
    whole, killed = make(tmp_path / "whole.db"), make(tmp_path / "killed.db")
    play(whole, 100)
    # killed once its first match-engine call (the first round's 32 blocks) is committed, the next round planned
    proc = subprocess.run([sys.executable, "-c", KILLER, str(killed), "5", "100"], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(games_of(killed)) == 64  # the blocks committed before the kill are kept
    play(killed, 100)
    assert games_of(killed) == games_of(whole)
    assert np.array_equal(ratings_of(killed), ratings_of(whole))


INTERRUPTER = textwrap.dedent("""
    import os, signal, sys
    from harmonies_apps import cli
    from harmonies_apps.ladder import commands
    played = commands.play_blocks
    def interrupted(*args, **kw):  # Ctrl-C right after the first block is committed
        kw["on_block"] = lambda number, games: os.kill(os.getpid(), signal.SIGINT)
        return played(*args, **kw)
    commands.play_blocks = interrupted
    sys.exit(cli.main(["ladder", "play", sys.argv[1], "--until-games", "100", "--quiet"]))
""")


def test_ctrl_c_stops_play_in_one_line_keeping_committed_blocks(tmp_path):
    db = make(tmp_path / "l.db")
    proc = subprocess.run([sys.executable, "-c", INTERRUPTER, str(db)], capture_output=True, text=True)
    assert proc.returncode == 130, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "stopped by SIGINT" in err and "run the same command again" in err, err
    kept = games_of(db)
    assert len(kept) == 64  # the first match-engine call's 32 blocks, committed before the stop
    play(db, 100)
    final = games_of(db)
    assert len(final) == 100 and all(g in final for g in kept)


HALF_WRITE = textwrap.dedent("""
    import os, signal, sqlite3, sys
    c = sqlite3.connect(sys.argv[1], isolation_level=None)
    c.execute("PRAGMA cache_size=1")  # pages spill into the file before the commit
    c.execute("BEGIN IMMEDIATE")
    for i in range(3000):
        c.execute("INSERT INTO meta VALUES (?, 'x')", ("junk%d" % i,))
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_write_killed_mid_transaction_is_rolled_back(tmp_path):
    db = make(tmp_path / "l.db")
    play(db, 8)
    before = games_of(db)
    proc = subprocess.run([sys.executable, "-c", HALF_WRITE, str(db)], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL and Path(str(db) + "-journal").exists()
    assert games_of(db) == before  # the reader rolled the half-done transaction back
    with open_ladder(db) as ladder:
        assert not any(k.startswith("junk") for k in ladder.meta())
    play(db, 12)
    assert len(games_of(db)) == 12


def test_verify_replays_identically_and_catches_a_tampered_score(tmp_path, capsys):
    db = make(tmp_path / "l.db")
    play(db, 16)
    assert main(["ladder", "verify", str(db), "--sample", "16"]) == 0
    con = sqlite3.connect(db)
    row = con.execute("SELECT id, totals FROM games WHERE block = (SELECT MIN(block) FROM games)").fetchone()
    totals = json.loads(row[1])
    con.execute("UPDATE games SET totals = ? WHERE id = ?", (json.dumps([totals[0] + 1, totals[1]]), row[0]))
    con.commit()
    con.close()
    capsys.readouterr()
    assert main(["ladder", "verify", str(db), "--sample", "16"]) == 1
    out = capsys.readouterr().out
    assert f"game {row[0]} " in out and "totals" in out


def test_ladder_test_identical_bots_equal_and_greedy_above_random(tmp_path, capsys):
    db = make(tmp_path / "l.db", extra=())
    with open_ladder(db, write=True) as ladder:
        commands.add(ladder, "greedy:2", name="twin")
    # identical deterministic bots: every margin is 0, the points test sees it at once (Elo needs ~200 games)
    assert main(["ladder", "test", str(db), "twin", "greedy:2", "--points1", "1", "--json", "--quiet"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert same["verdict"] == "H0" and same["games"] <= 32 and same["counts"][2] == same["pairs"]
    assert same["statistic"] == "points" and same["mean_margin"] == 0
    # a sweep lies far beyond both of [0, 10] Elo: the default test's e-process decides it in ~22 games
    assert main(["ladder", "test", str(db), "greedy:2", "random", "--json", "--quiet"]) == 0
    apart = json.loads(capsys.readouterr().out)
    assert apart["verdict"] == "H1" and apart["games"] <= 30 and apart["method"] == "gsprt+e"
    with open_ladder(db) as ladder:
        tests = ladder.tests()
        assert [t["verdict"] for t in tests] == ["H0", "H1"]
        assert len(tests[1]["trajectory"]) == apart["pairs"] and tests[1]["trajectory"][-1] == apart["llr"]
        assert ladder.game_count() == same["games"] + apart["games"]  # a test's games count in the ladder
    page = tmp_path / "ladder.html"
    assert main(["ladder", "show", str(db), "--json", "--html", str(page)]) == 0
    shown = json.loads(capsys.readouterr().out)
    rows = {b["name"]: b for b in shown["bots"]}
    assert rows["random"]["rating"] == 0 and rows["greedy:2"]["ci_low"] > 0 and rows["twin"]["games"] == same["games"]
    assert [t["verdict"] for t in shown["tests"]] == ["H0", "H1"] and page.read_text().startswith("<!DOCTYPE html>")


TEST_KILLER = textwrap.dedent("""
    import os, signal, sys
    from harmonies_apps.ladder import commands
    from harmonies_apps.ladder.store import open_ladder
    def on_block(number, games):
        if number == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
    with open_ladder(sys.argv[1], write=True) as ladder:
        commands.run_test(ladder, "greedy:2", "greedy:1", "points", (0.0, 1.0), 0.05, 0.05, 400, on_block=on_block)
""")


def test_a_killed_test_is_resumed_by_the_same_command(tmp_path):
    whole, killed = make(tmp_path / "whole.db"), make(tmp_path / "killed.db")
    with open_ladder(whole, write=True) as ladder:
        done = commands.run_test(ladder, "greedy:2", "greedy:1", "points", (0.0, 1.0), 0.05, 0.05, 400)
    assert done["pairs"] > 3
    proc = subprocess.run([sys.executable, "-c", TEST_KILLER, str(killed), "2"], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(games_of(killed)) == 6  # blocks 0, 1 and 2 were committed
    with open_ladder(killed, write=True) as ladder:
        again = commands.run_test(ladder, "greedy:2", "greedy:1", "points", (0.0, 1.0), 0.05, 0.05, 400)
        tests = ladder.tests()
    assert {k: again[k] for k in ("verdict", "games", "llr", "counts")} == \
        {k: done[k] for k in ("verdict", "games", "llr", "counts")}
    assert len(tests) == 1 and tests[0]["finished"] and len(tests[0]["trajectory"]) == done["pairs"]
    assert games_of(killed) == games_of(whole)


@pytest.mark.parametrize("players", [3, 4])
def test_multiplayer_pools_rated_with_anchor_and_intervals(tmp_path, players):
    db = make(tmp_path / "l.db", players, refs=["random", "greedy:2"], extra=("greedy:1", "greedy:3")[:players - 1])
    play(db, 8 * players)
    g = games_of(db)
    for b in {x["block"] for x in g}:
        block = [x for x in g if x["block"] == b]
        assert len(block) == players and len({x["seed"] for x in block}) == 1
        assert [sorted(col) for col in zip(*[x["bots"] for x in block])] == [sorted(block[0]["bots"])] * players
    with open_ladder(db) as ladder:
        res, k = game_results(ladder.games()), len(ladder.bots())
    r = fit_ratings(res, k)
    low, high = bootstrap_intervals(res, k, samples=50)
    assert r[0] == 0 and np.isfinite(r).all() and (low <= r + 1e-9).all() and (r <= high + 1e-9).all()
    assert r[1:].min() > 0  # every greedy above random


def unchanged(path: Path, argv: list[str], capsys, what: str) -> None:
    before = path.read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and what in err, err
    assert path.read_bytes() == before


def test_bad_input_is_one_line_exit_2_file_unchanged(tmp_path, capsys, monkeypatch):
    db = make(tmp_path / "l.db", extra=())
    unchanged(db, ["ladder", "add", str(db), "nonsense:3"], capsys, "unknown agent")
    unchanged(db, ["ladder", "play", str(db)], capsys, "give --until-games N")
    # an interval alone may never be reached (a bot that sweeps another): --until-ci needs a cap
    unchanged(db, ["ladder", "play", str(db), "--until-ci", "25"], capsys, "--until-ci needs --until-games N")
    text = tmp_path / "notes.txt"
    text.write_text("not a ladder\n")
    unchanged(text, ["ladder", "play", str(text), "--until-games", "2"], capsys, "not a ladder")
    unchanged(text, ["ladder", "init", str(text)], capsys, "not a ladder")
    unchanged(db, ["ladder", "init", str(db), "--players", "3"], capsys, "pool mismatch")
    with open_ladder(db, write=True):  # a second writer while one holds the file
        unchanged(db, ["ladder", "play", str(db), "--until-games", "2"], capsys, "another harmonies ladder")
    # a py: bot whose source changed after it was added is refused, never re-rated
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mybot.py").write_text("from agents.random_agent import RandomAgent\n\n\n"
                                       "def make(seed=0):\n    return RandomAgent(seed=seed)\n")
    assert main(["ladder", "add", str(db), "py:mybot:make", "--name", "mine"]) == 0
    play(db, 4)
    (tmp_path / "mybot.py").write_text((tmp_path / "mybot.py").read_text() + "# edited\n")
    unchanged(db, ["ladder", "play", str(db), "--until-games", "8"], capsys, "its weights changed")
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '0.0.1' WHERE key = 'version'")
    con.commit()
    con.close()
    unchanged(db, ["ladder", "verify", str(db)], capsys, "pool mismatch")


def test_a_checkpoint_whose_hash_changed_is_refused(tmp_path, capsys):
    from agents.checkpoint import SHIPPED

    for suffix in (".npz", ".json"):
        (tmp_path / f"net{suffix}").write_bytes((SHIPPED / f"learned{suffix}").read_bytes())
    db = make(tmp_path / "l.db", extra=())
    assert main(["ladder", "add", str(db), f"learned:{tmp_path / 'net.npz'}", "--name", "net"]) == 0
    with open_ladder(db) as ladder:
        assert ladder.bot("net").sha256 == json.loads((tmp_path / "net.json").read_text())["sha256"]
    # retrained in place, sidecar and all: a consistent pair, but not the weights the ladder rated
    meta = json.loads((tmp_path / "net.json").read_text())
    data = (tmp_path / "net.npz").read_bytes()
    (tmp_path / "net.npz").write_bytes(data + b"\0")
    import hashlib

    meta["sha256"] = hashlib.sha256(data + b"\0").hexdigest()
    (tmp_path / "net.json").write_text(json.dumps(meta))
    unchanged(db, ["ladder", "play", str(db), "--until-games", "2"], capsys, "weights changed")


def test_py_bot_plays_and_export_is_one_line_per_game(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "ownbot.py").write_text(textwrap.dedent("""
        import numpy as np

        class First:
            name = "first"

            def act_batch(self, batch):  # the first legal micro-action
                return np.argmax(batch.action_masks, axis=1).astype(np.int64)

        def make():
            return First()
    """))
    db = make(tmp_path / "l.db", extra=("py:ownbot:make",))
    play(db, 12)
    capsys.readouterr()
    assert main(["ladder", "export", str(db)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 12 and all(len(x["scores"]) == 2 and "total" in x["scores"][0] for x in lines)
    assert any("py:ownbot:make" in x["specs"] for x in lines)
