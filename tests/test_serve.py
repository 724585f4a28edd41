"""`harmonies serve`'s HTTP API through Starlette's TestClient: new game, legal actions, steps, illegal steps,
hidden information, and the finished game's record. Skipped without the web extra, except under CI (CI set)."""
from __future__ import annotations

import json
import os
import random
import threading

import numpy as np
import pytest

if os.environ.get("CI"):  # .ci/run installs the web extra: there a missing package is an install failure
    import httpx2  # noqa: F401
    import starlette  # noqa: F401
else:
    pytest.importorskip("starlette", reason='the play server needs the web extra: pip install -e ".[web]"')
    pytest.importorskip("httpx2", reason='Starlette\'s TestClient needs httpx2: pip install -e ".[web]"')

from starlette.testclient import TestClient  # noqa: E402

from harmonies_apps.serve import create_app  # noqa: E402
from harmonies_env import actions as A  # noqa: E402
from harmonies_env.game import Game  # noqa: E402

SEED = 987_654_321_987


@pytest.fixture()
def client():
    app = create_app(["random", "greedy:4"], bot_delay=0)
    with TestClient(app) as c:
        c.manager = app.state.manager
        yield c


def _new(client, **kw) -> dict:
    r = client.post("/api/games", json={"opponents": ["random"], "seat": 0, "side": "A", "spirits": False, **kw})
    assert r.status_code == 200, r.text
    return r.json()


def _wait(client, gid: str) -> dict:
    for _ in range(100):
        s = client.get(f"/api/games/{gid}?wait=2").json()
        if not s["thinking"]:
            return s
    raise AssertionError("the bots never finished")


def test_new_game_offers_the_human_legal_actions_and_hides_hidden_information(client):
    s = _new(client, seed=SEED, spirits=True, opponents=["random", "random"], seat=1)
    assert s["names"] == ["random #1 (bot)", "You", "random #2 (bot)"] and s["static"]["side"] == "A"
    s = _wait(client, s["id"])
    assert s["your_turn"] and s["table"]["current"] == 1
    game = client.manager.get(s["id"]).game
    assert [x["action"] for x in s["legal"]] == game.legal_actions()
    assert {x["kind"] for x in s["legal"]} == {"keep_spirit"}
    assert all(x["text"] == game.describe_action(x["action"]) for x in s["legal"])
    text = json.dumps(s)
    assert str(SEED) not in text and "seed" not in text and "rng" not in text
    players = s["table"]["players"]
    assert players[1]["dealt"] == [int(c) for c in game.field("spirit_dealt")[1]]
    assert players[0]["dealt"] is None and players[2]["dealt"] is None  # others' dealt Spirits stay secret
    assert "deck" not in s["table"] and s["table"]["deck_count"] == int(game.field("deck_count"))
    assert client.get(f"/api/games/{s['id']}/record").status_code == 403  # the record holds the seed
    assert client.get(f"/api/games/{s['id']}/replay").status_code == 403


def test_step_plays_the_action_and_illegal_steps_change_nothing(client):
    s = _wait(client, _new(client, seed=4)["id"])
    gid = s["id"]
    sess = client.manager.get(gid)
    before = sess.game.state.copy()
    for bad, status, words in ((A.END_TURN, 400, "illegal action 267"), (5000, 400, "outside the action space"),
                               ("take", 400, "must be an integer"), (True, 400, "must be an integer")):
        r = client.post(f"/api/games/{gid}/step", json={"action": bad})
        assert r.status_code == status and words in r.json()["error"], r.text
    r = client.post(f"/api/games/{gid}/step", json={"move": 1})
    assert r.status_code == 400 and "action" in r.json()["error"]
    r = client.post(f"/api/games/{gid}/step", content=b"not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    r = client.post(f"/api/games/{gid}/step", content=json.dumps({"action": 0}), headers={"content-type": "text/plain"})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["error"]  # no cross-site moves
    assert np.array_equal(sess.game.state, before) and sess.game.history == []
    take = s["legal"][0]["action"]
    r = client.post(f"/api/games/{gid}/step", json={"action": take})
    assert r.status_code == 200
    s2 = r.json()
    assert sum(s2["table"]["hand"]) == 3
    assert s2["log"][-1] == {"player": 0, "action": take, "text": s["legal"][0]["text"]}
    assert sess.game.history == [take]


def test_bad_new_games_and_unknown_ids_fail_clearly(client):
    for body, words in (({"opponents": ["mcts:9"]}, "not offered"), ({"opponents": ["random"], "seat": 2}, "seat"),
                        ({"side": "C"}, "side"), ({"opponents": ["random"] * 4}, "0 to 3"),
                        ({"spirits": "yes"}, "spirits"), ({"colour": "red"}, "unknown fields")):
        r = client.post("/api/games", json=body)
        assert r.status_code == 400 and words in r.json()["error"], (body, r.text)
    assert client.get("/api/games/nope").status_code == 404
    assert client.post("/api/games/nope/step", json={"action": 0}).status_code == 404


def test_no_steps_while_a_bot_thinks(client):
    release = threading.Event()

    class SlowBot:
        name = "slow"

        def act(self, view):
            release.wait(10)
            return view.legal_actions()[0]

    client.manager.make_agent = lambda spec, seed=0: SlowBot()
    s = _new(client, seat=1, seed=2)
    assert s["thinking"] and s["bot"] == "random (bot)" and s["legal"] == []
    r = client.post(f"/api/games/{s['id']}/step", json={"action": 0})
    assert r.status_code == 409 and "not your turn" in r.json()["error"]
    assert client.manager.get(s["id"]).game.history == []
    release.set()
    s = _wait(client, s["id"])
    assert s["your_turn"] and s["log"][-1]["player"] == 0 and s["log"][-1]["text"] == "end the turn"


@pytest.mark.parametrize("opponents", [["random"], []])
def test_whole_game_through_the_api_and_its_record_replays_to_the_same_scores(client, opponents):
    rng = random.Random(1)
    s = _wait(client, _new(client, opponents=opponents, side="B", seed=77)["id"])
    gid = s["id"]
    steps = 0
    while not s["table"]["over"]:
        assert s["your_turn"]
        r = client.post(f"/api/games/{gid}/step", json={"action": rng.choice(s["legal"])["action"]})
        assert r.status_code == 200, r.text
        s = _wait(client, gid)
        steps += 1
    assert steps > 20 and s["result"] and s["legal"] == []
    r = client.get(f"/api/games/{gid}/record")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    rec = r.json()
    assert rec["seed"] == 77 and rec["names"] == s["names"]
    replayed = Game.replay(rec)
    assert replayed.is_over and replayed.scores() == [p["scores"] for p in s["table"]["players"]]
    page = client.get(f"/api/games/{gid}/replay")
    assert page.status_code == 200 and "Harmonies replay" in page.text
    r = client.post(f"/api/games/{gid}/step", json={"action": A.END_TURN})
    assert r.status_code == 400 and "over" in r.json()["error"]


def test_page_and_static_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/play.js" in page.text and "/static/harmonies.js" in page.text
    for name, kind in (("harmonies.js", "javascript"), ("play.js", "javascript"), ("harmonies.css", "css")):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and kind in r.headers["content-type"]
    assert client.get("/static/../serve.py").status_code == 404
    assert client.get("/api/config").json()["opponents"] == ["random", "greedy:4"]


def test_cli_parses_serve_and_rejects_unknown_opponents():
    from harmonies_apps.cli import build_parser
    from harmonies_apps.serve import Manager

    args = build_parser().parse_args(["serve", "--port", "8123", "--opponents", "random", "mcts:10it"])
    assert (args.host, args.port, args.opponents) == ("127.0.0.1", 8123, ["random", "mcts:10it"])
    with pytest.raises(ValueError, match="unknown agent"):
        Manager(["chess-engine"])
