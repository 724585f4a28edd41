"""Replay viewer: frames replay the record exactly, the page is self-contained, records load from files/folders."""
from __future__ import annotations

import json
import re

import pytest

from agents import make_agent
from harmonies_apps.cli import main
from harmonies_apps.replay import build_game, load_records, render_html, write_replay
from harmonies_apps.table import table_state
from harmonies_apps.tournament import agent_seed, play_game, run_games
from harmonies_env.config import GameConfig
from harmonies_env.game import Game


def _random_game(n: int = 2, side: str = "A", spirits: bool = True, seed: int = 11) -> Game:
    agents = [make_agent("random", seed=seed + k) for k in range(n)]
    return play_game(agents, seed=seed, config=GameConfig(n, side, spirits))


def _data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert m, "the page embeds its frames as JSON"
    return json.loads(m.group(1))


def test_frames_follow_the_record_one_per_micro_action():
    g = _random_game()
    rec = g.record()
    built = build_game(rec, "g")
    frames = built["frames"]
    assert len(frames) == len(rec["actions"]) + 1
    assert frames[0]["last"] is None and frames[0]["turn"] == 0
    assert [f["last"]["action"] for f in frames[1:]] == rec["actions"]
    assert frames[-1]["over"] and [p["scores"] for p in frames[-1]["players"]] == g.scores()
    # one turn start per turn played, each the first frame after a turn ended
    assert len(built["turn_starts"]) == g.turn
    assert [frames[i]["turn"] for i in built["turn_starts"]] == list(range(g.turn))
    # frame k is the public table after k actions (nothing from later in the game)
    for k in (0, 7, len(rec["actions"]) // 2):
        h = Game(rec["num_players"], rec["side"], rec["spirits"], rec["seed"])
        for a in rec["actions"][:k]:
            h.step(a)
        expect = table_state(h, range(h.num_players))
        assert {key: v for key, v in frames[k].items() if key != "last"} == expect


def test_frames_hold_no_hidden_state():
    built = build_game(_random_game().record())
    for f in built["frames"][:3]:
        assert not {"deck", "rng", "seed"} & set(f)
        assert set(f["players"][0]) == {"stacks", "cubes", "held", "done", "spirit", "spirit_placed", "scores",
                                        "animal_cubes", "dealt"}


def test_page_is_self_contained_and_escapes_what_it_embeds():
    rec = dict(_random_game(seed=3).record(), names=["</script><script>alert(1)</script>", "b"])
    page = render_html([build_game(rec, "x")])
    assert page.count("</script>") == 2  # the data block and the inlined JS: the name did not close either
    assert not re.search(r'(src|href)\s*=\s*"(?!data:)', page), "no external resources"
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls  # the SVG namespace is a name, not a download
    data = _data(page)
    assert data["games"][0]["names"][0] == rec["names"][0]
    assert "function boardSVG" in page and "selectGame" in page  # shared drawing JS + viewer JS inlined


def test_annotations_are_described_and_the_played_plan_marked():
    g = _random_game(seed=5)
    rec = g.record()
    played = rec["actions"][2:5]
    rec["annotations"] = [{"ply": 2, "note": "beam 4", "candidates": [
        {"plan": played, "value": 7.5}, {"plan": [262], "value": 1.0}]}]  # 262: a solo-only action
    ann = build_game(rec)["annotations"]["2"]
    assert ann["note"] == "beam 4"
    first, second = ann["candidates"]
    assert first["played"] and first["value"] == 7.5 and len(first["words"]) == 3
    assert not second["played"] and "not legal" in second["words"][0]
    with pytest.raises(ValueError, match="annotation #0 needs an integer 'ply'"):
        build_game(dict(rec, annotations=[{"ply": 10**6}]))


def test_bad_records_fail_clearly(tmp_path):
    rec = _random_game(seed=6).record()
    with pytest.raises(ValueError, match="lacks"):
        build_game({k: v for k, v in rec.items() if k != "seed"})
    with pytest.raises(ValueError, match="does not replay"):
        build_game(dict(rec, actions=rec["actions"][:3] + [267]))
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="is not a game record"):
        load_records(f)
    with pytest.raises(ValueError, match="holds no game records"):
        load_records(_empty(tmp_path))


def test_malformed_annotations_are_refused_naming_the_annotation_and_its_ply():
    """docs/web.md's form: plan entries are action integers 0..267, value a finite number or null, visits a whole
    number or null; anything else is refused (never skipped) with the annotation, its ply and what is wrong."""
    rec = _random_game(seed=5).record()
    n = len(rec["actions"])
    good = {"ply": 2, "candidates": [{"plan": rec["actions"][2:4], "value": 1.5, "visits": 3}], "note": "x"}
    assert build_game(dict(rec, annotations=[good, {"ply": n}, {"ply": 0, "candidates": None}]))["annotations"]
    for anns, match in (
            ([{"ply": 2, "candidates": ["abc"]}], r"annotation #0 \(ply 2\) candidate #0 must be an object"),
            ([{"ply": 2, "candidates": [{"plan": [float("inf")]}]}], r"#0 \(ply 2\) candidate #0: 'plan' must be"),
            ([{"ply": 2, "candidates": [{"plan": [None]}]}], r"candidate #0: 'plan' must be a list .* integers 0..267"),
            ([{"ply": 2, "candidates": [{"plan": [3.0]}]}], "'plan' must be"),
            ([{"ply": 2, "candidates": [{"plan": [True]}]}], "'plan' must be"),
            ([{"ply": 2, "candidates": [{"plan": [268]}]}], "'plan' must be"),
            ([{"ply": 2, "candidates": [{"plan": [-1]}]}], "'plan' must be"),
            ([{"ply": 2, "candidates": [{"plan": "12"}]}], "'plan' must be"),
            ([{"ply": 2, "candidates": [{"plan": [5] * 65}]}], "at most 64 actions"),
            ([{"ply": 2, "candidates": [{"plan": [], "value": float("nan")}]}], "'value' must be a finite number"),
            ([{"ply": 2, "candidates": [{"plan": [], "value": "1"}]}], "'value' must be a finite number"),
            ([{"ply": 2, "candidates": [{"plan": [], "visits": -1}]}], "'visits' must be a whole number"),
            ([{"ply": 2, "candidates": [{"plan": [], "visits": 1.5}]}], "'visits' must be a whole number"),
            ([{"ply": 2, "candidates": [{"plan": [], "score": 1}]}], r"candidate #0 has unknown keys \['score'\]"),
            ([{"ply": 2, "candidates": {"plan": []}}], "'candidates' must be a list"),
            ([{"ply": 2, "candidates": [{}] * 65}], "at most 64 candidates"),
            ([{"ply": 2, "note": 5}], "'note' must be a string"),
            ([{"ply": 2, "comment": ""}], r"annotation #0 \(ply 2\) has unknown keys \['comment'\]"),
            ([good, {"ply": 1}, dict(good)], r"annotation #2 \(ply 2\) is the second annotation of that ply"),
            ([{"ply": True}], "annotation #0 needs an integer 'ply'"),
            ([{"ply": n + 1}], f"annotation #0 needs an integer 'ply' in 0..{n}"),
            (["x"], "annotation #0 must be an object"),
            ({"ply": 2}, "annotations must be a list")):
        with pytest.raises(ValueError, match=match) as err:
            build_game(dict(rec, annotations=anns), "g")
        assert str(err.value).startswith("g: annotation"), err.value


def test_records_are_parsed_depth_limited_and_spirits_is_a_bool(tmp_path):
    rec = _random_game(seed=6, spirits=False).record()
    for spirits in (1, 0):
        with pytest.raises(ValueError, match=f"^g: game record spirits must be true or false, got {spirits}"):
            build_game(dict(rec, spirits=spirits), "g")
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(rec)[:-1] + ', "names": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(ValueError, match="deep.json: JSON nested deeper than 32 levels"):
        load_records(deep)
    folder = tmp_path / "games"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(rec))
    (folder / "b.json").write_text("[" * 5000 + "]" * 5000)  # even a file that is not a record
    with pytest.raises(ValueError, match="b.json: JSON nested deeper"):
        load_records(folder)
    (folder / "b.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="b.json: not valid JSON"):
        load_records(folder)


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    (d / "summary.json").write_text("{}")
    return d


def test_tournament_save_games_folder_replays_to_the_reported_scores(tmp_path):
    res = run_games(["random", "greedy:4"], games=2, seed=3, progress=False, save_games=tmp_path / "games")
    (tmp_path / "games" / "tournament.json").write_text(json.dumps({"summary": {}}))  # not a record: skipped
    recs = load_records(tmp_path / "games")
    assert [lab for lab, _ in recs] == ["game_00000", "game_00001"]
    for (_, rec), r in zip(recs, res):
        assert rec["names"] == r["seats"]
        assert Game.replay(rec).scores() == r["scores"]
    path, n = write_replay(tmp_path / "games", tmp_path / "all.html")
    assert n == 2 and [g["label"] for g in _data(path.read_text())["games"]] == ["game_00000", "game_00001"]


def test_cli_replay_writes_the_page(tmp_path, capsys):
    g = _random_game(n=1, spirits=False, seed=9)
    f = tmp_path / "solo.json"
    f.write_text(g.to_json())
    assert main(["replay", str(f), "--html", str(tmp_path / "out.html")]) == 0
    assert "wrote" in capsys.readouterr().out
    data = _data((tmp_path / "out.html").read_text())
    assert data["games"][0]["frames"][-1]["suns"] == g.suns()
    assert main(["replay", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_search_agents_candidates_become_annotations_without_changing_play(tmp_path):
    from harmonies_apps.annotate import annotations, watch

    seeds = [agent_seed(12, 0, j) for j in range(2)]  # as the tournament seeds game 0 of base seed 12
    plain = play_game([make_agent("mcts:4it", seed=seeds[0]), make_agent("random", seed=seeds[1])], seed=12)
    agents = [make_agent("mcts:4it", seed=seeds[0]), make_agent("random", seed=seeds[1])]
    logs = [watch(a) for a in agents]
    assert logs[1] is None  # random has no search: left untouched
    watched = play_game(agents, seed=12)
    assert watched.history == plain.history  # watching returns exactly what the search returned
    rec = watched.record()
    notes = annotations(rec, logs)
    built = build_game(dict(rec, annotations=notes))
    starts_of_seat0 = [i for i in built["turn_starts"] if built["frames"][i]["current"] == 0]
    assert [n["ply"] for n in notes] == starts_of_seat0  # one per turn of the MCTS seat, where the turn began
    for n in notes:
        shown = built["annotations"][str(n["ply"])]["candidates"]
        assert sum(c["played"] for c in shown) <= 1
        if len(n["candidates"]) > 1:  # searched: the plan played is the best by mean value, listed first
            assert shown[0]["played"] and shown[0]["visits"] >= 1
    # the tournament's --save-games writes them for search agents
    run_games(["mcts:4it", "random"], games=1, seed=12, progress=False, save_games=tmp_path)
    saved = json.loads((tmp_path / "game_00000.json").read_text())
    assert saved["annotations"] == notes
