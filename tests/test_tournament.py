"""Tournament harness: reproducible from the seed, identical for any --jobs, sound statistics."""
from __future__ import annotations

import json

import pytest

from harmonies_apps.tournament import run_games, summarize, wilson_interval, write_outputs
from harmonies_env import GameConfig


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-3) and hi == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_tiny_tournament_reproducible_and_identical_across_jobs(tmp_path):
    specs = ["greedy:4", "random"]
    one = run_games(specs, games=4, seed=7, jobs=1, progress=False)
    again = run_games(specs, games=4, seed=7, jobs=1, progress=False)
    two = run_games(specs, games=4, seed=7, jobs=2, progress=False)
    assert one == again == two
    other = run_games(specs, games=4, seed=8, jobs=1, progress=False)
    assert other != one
    # seats rotate: each agent plays first in half of the games
    assert [r["seats"][0] for r in one] == ["greedy:4", "random", "greedy:4", "random"]
    s = summarize(one)
    g, r = s["agents"]["greedy:4"], s["agents"]["random"]
    assert g["games"] == r["games"] == 4
    assert g["wins"] + r["wins"] == pytest.approx(4)
    assert g["win_rate_ci95"][0] <= g["win_rate"] <= g["win_rate_ci95"][1]
    assert g["total"]["mean"] > r["total"]["mean"]
    assert g["elo"] > r["elo"] == 0.0 and s["ratings"]["anchor"] == "random"  # random is the anchor
    assert g["elo_ci95"][0] <= g["elo"] <= g["elo_ci95"][1]
    assert g["margin"]["mean"] == pytest.approx(g["total"]["mean"] - r["total"]["mean"])
    totals = [res["scores"][res["seats"].index("random")]["total"] for res in one]
    assert r["total"]["mean"] == pytest.approx(sum(totals) / 4)
    paths = write_outputs(one, s, tmp_path)
    assert [p.suffix for p in paths] == [".csv", ".json", ".png"]
    assert len(paths[0].read_text().strip().splitlines()) == 1 + 4 * 2
    assert json.loads(paths[1].read_text())["summary"]["games"] == 4
    assert paths[2].stat().st_size > 1000


def test_same_agent_twice_gets_distinct_names_and_solo_reports_suns():
    res = run_games(["random", "random"], games=2, seed=1, progress=False)
    assert sorted(summarize(res)["agents"]) == ["random#1", "random#2"]
    solo = summarize(run_games(["greedy:4"], games=2, seed=1, progress=False, config=GameConfig(1)))
    e = solo["agents"]["greedy:4"]
    assert e["games"] == 2 and "suns" in e and "win_rate" not in e


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="needs 3 agents"):
        run_games(["random", "random"], games=1, progress=False, config=GameConfig(3))
    with pytest.raises(ValueError, match="games must be"):
        run_games(["random", "random"], games=0, progress=False)


def test_fixed_iteration_mcts_is_identical_across_jobs():
    """`mcts:Nit` is reproducible (the docs and the CLI help say so); time budgets are not, and are not tested."""
    specs = ["mcts:2it", "greedy:2"]
    one = run_games(specs, games=2, seed=3, jobs=1, progress=False)
    assert one == run_games(specs, games=2, seed=3, jobs=2, progress=False)


def test_paired_games_play_each_seed_from_every_seating_identically_across_jobs():
    specs = ["greedy:2", "random"]
    one = run_games(specs, games=4, seed=5, jobs=1, progress=False, paired=True)
    assert one == run_games(specs, games=4, seed=5, jobs=2, progress=False, paired=True)
    assert [r["seed"] for r in one] == [5, 5, 6, 6]
    assert [r["seats"] for r in one[:2]] == [["greedy:2", "random"], ["random", "greedy:2"]]
    unpaired = run_games(specs, games=2, seed=5, progress=False)
    assert one[0] == unpaired[0] and one[1] != unpaired[1]  # game 1: seed 5 again, not 6
    three = run_games(["random", "greedy:2", "random"], games=3, seed=9, progress=False, paired=True,
                      config=GameConfig(3))
    assert [r["seed"] for r in three] == [9, 9, 9]
    assert [r["seats"] for r in three] == [["random#1", "greedy:2", "random#2"], ["greedy:2", "random#2", "random#1"],
                                           ["random#2", "random#1", "greedy:2"]]
    with pytest.raises(ValueError, match="multiple of the 3 seats, got 4"):
        run_games(["random", "greedy:2", "random"], games=4, progress=False, paired=True, config=GameConfig(3))


def test_cli_paired_needs_whole_blocks(capsys):
    from harmonies_apps import cli

    assert cli.main(["tournament", "--agents", "random", "greedy:2", "--games", "3", "--paired", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("harmonies tournament: paired games come in blocks of every seating: games must be a multiple of "
                   "the 2 seats, got 3")


def test_ratings_are_order_free_and_every_mean_has_an_interval():
    """The ladder's batch fit, not a game-by-game update: the same games in any order give the same summary."""
    import random as pyrandom

    from harmonies_apps.tournament import default_anchor
    from harmonies_env.scoring import CATEGORIES

    res = run_games(["greedy:2", "random", "random"], games=6, seed=2, progress=False, paired=True,
                    config=GameConfig(3))
    s = summarize(res)
    assert s["ratings"]["anchor"] == "random#1" and s["agents"]["random#1"]["elo"] == 0.0
    for k in range(3):
        shuffled = list(res)
        pyrandom.Random(k).shuffle(shuffled)
        t = summarize(shuffled)
        assert list(t["agents"]) == list(s["agents"]) == ["greedy:2", "random#1", "random#2"]
        for nm, e in s["agents"].items():
            f = t["agents"][nm]
            assert f["elo"] == pytest.approx(e["elo"], abs=1e-9)
            assert f["elo_ci95"] == pytest.approx(e["elo_ci95"], abs=1e-9)
            assert f["margin"]["ci95"] == pytest.approx(e["margin"]["ci95"], abs=1e-9)
            assert f["total"]["ci95"] == pytest.approx(e["total"]["ci95"], abs=1e-9)
    g = s["agents"]["greedy:2"]
    assert g["elo"] > s["agents"]["random#2"]["elo"] and g["margin"]["mean"] > 0
    for c in CATEGORIES:  # clustered by seed: the 2 seeds of 3 seatings each
        lo, hi = g[c]["ci95"]
        assert lo <= g[c]["mean"] <= hi
    assert g["total"]["ci95"][0] < g["total"]["ci95"][1]
    other = summarize(res, anchor="greedy:2")
    assert other["agents"]["greedy:2"]["elo"] == 0.0
    assert other["agents"]["random#1"]["elo"] == pytest.approx(-g["elo"], abs=1e-6)
    with pytest.raises(ValueError, match="anchor 'mcts' is not one of the agents"):
        summarize(res, anchor="mcts")
    assert default_anchor(["greedy", "mlp"]) == "greedy"


def test_cli_json_carries_the_provenance(tmp_path, capsys):
    from harmonies_apps import cli

    argv = ["tournament", "--agents", "greedy:2", "random", "--games", "2", "--paired", "--quiet", "--out",
            str(tmp_path)]
    assert cli.main(argv) == 0
    summary = json.loads((tmp_path / "tournament.json").read_text())["summary"]
    prov = summary["provenance"]
    assert summary["config"]["paired"] is True and prov["command"] == ["harmonies", *argv]
    assert prov["weights"] == {}  # neither plays weights (test_provenance: the weights' SHA-256 of those that do)
    assert prov["version"] and set(prov) >= {"git", "machine", "package"}
    assert prov["cpu_seconds"] > 0 and prov["date"].endswith("+00:00") and prov["machine"]["cores"] >= 1


def test_a_second_run_into_the_same_folders_is_refused_unless_forced(tmp_path, capsys):
    from harmonies_apps import cli

    out, games = tmp_path / "out", tmp_path / "games"
    argv = ["tournament", "--agents", "greedy:2", "random", "--games", "2", "--quiet", "--out", str(out)]
    assert cli.main(argv) == 0
    first = (out / "tournament.json").read_bytes()
    capsys.readouterr()
    assert cli.main([*argv, "--seed", "1"]) == 2
    assert capsys.readouterr().err.strip() == (f"harmonies tournament: {out} already holds tournament.json of an "
                                               "earlier run: give another folder, or --force to replace its files")
    assert (out / "tournament.json").read_bytes() == first  # untouched
    assert cli.main(["solo", "--agents", "random", "--games", "1", "--quiet", "--out", str(out)]) == 0  # solo.*
    assert cli.main([*argv, "--seed", "1", "--force"]) == 0
    assert json.loads((out / "tournament.json").read_text())["summary"]["config"]["seed"] == 1
    rec = ["tournament", "--agents", "random", "random", "--games", "1", "--quiet", "--save-games", str(games)]
    assert cli.main(rec) == 0 and cli.main(rec) == 2
    assert f"{games} already holds game_00000.json" in capsys.readouterr().err
