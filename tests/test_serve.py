"""`harmonies serve`'s HTTP API through Starlette's TestClient: new game, legal actions, steps, illegal steps,
hidden information, the finished game's record, the game tokens, the body and JSON limits and eviction; and the
`harmonies serve` command's port errors in a subprocess. Skipped without the web extra, except under CI (CI set)."""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("CI"):  # .ci/run installs the web extra: there a missing package is an install failure
    import httpx2  # noqa: F401
    import starlette  # noqa: F401
else:
    pytest.importorskip("starlette", reason='the play server needs the web extra: pip install -e ".[web]"')
    pytest.importorskip("httpx2", reason='Starlette\'s TestClient needs httpx2: pip install -e ".[web]"')

from starlette.testclient import TestClient  # noqa: E402

from harmonies_apps.serve import MAX_BODY_BYTES, TOKEN_HEADER, create_app  # noqa: E402
from harmonies_env import actions as A  # noqa: E402
from harmonies_env.game import Game  # noqa: E402

SEED = 987_654_321_987
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def client():
    app = create_app(["random", "greedy:4"], bot_delay=0)
    with TestClient(app) as c:
        c.manager = app.state.manager
        yield c


def _auth(client, gid: str) -> dict[str, str]:
    """The headers that prove the test made game `gid` (its token, as the page sends it)."""
    return {TOKEN_HEADER: client.manager.get(gid).token}


def _new(client, **kw) -> dict:
    r = client.post("/api/games", json={"opponents": ["random"], "seat": 0, "side": "A", "spirits": False, **kw})
    assert r.status_code == 200, r.text
    return r.json()


def _get(client, gid: str, path: str = "", **kw):
    return client.get(f"/api/games/{gid}{path}", headers=_auth(client, gid), **kw)


def _step(client, gid: str, action, **kw):
    return client.post(f"/api/games/{gid}/step", json={"action": action}, headers=_auth(client, gid), **kw)


def _wait(client, gid: str) -> dict:
    for _ in range(100):
        s = _get(client, gid, "?wait=2").json()
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
    assert _get(client, s["id"], "/record").status_code == 403  # the record holds the seed
    assert _get(client, s["id"], "/replay").status_code == 403


def test_step_plays_the_action_and_illegal_steps_change_nothing(client):
    s = _wait(client, _new(client, seed=4)["id"])
    gid = s["id"]
    sess = client.manager.get(gid)
    before = sess.game.state.copy()
    for bad, status, words in ((A.END_TURN, 400, "illegal action 267"), (5000, 400, "outside the action space"),
                               ("take", 400, "must be an integer"), (True, 400, "must be an integer")):
        r = _step(client, gid, bad)
        assert r.status_code == status and words in r.json()["error"], r.text
    r = client.post(f"/api/games/{gid}/step", json={"move": 1}, headers=_auth(client, gid))
    assert r.status_code == 400 and "action" in r.json()["error"]
    r = client.post(f"/api/games/{gid}/step", content=b"not json",
                    headers={"content-type": "application/json", **_auth(client, gid)})
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    r = client.post(f"/api/games/{gid}/step", content=json.dumps({"action": 0}),
                    headers={"content-type": "text/plain", **_auth(client, gid)})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["error"]  # no cross-site moves
    assert np.array_equal(sess.game.state, before) and sess.game.history == []
    take = s["legal"][0]["action"]
    r = _step(client, gid, take)
    assert r.status_code == 200
    s2 = r.json()
    assert sum(s2["table"]["hand"]) == 3
    assert s2["log"][-1] == {"player": 0, "action": take, "text": s["legal"][0]["text"]}
    assert sess.game.history == [take]


def test_bad_new_games_and_unknown_ids_fail_clearly(client):
    for body, words in (({"opponents": ["mcts:9"]}, "not offered"), ({"opponents": ["random"], "seat": 2}, "seat"),
                        ({"side": "C"}, "side"), ({"opponents": ["random"] * 4}, "0 to 3"),
                        ({"spirits": "yes"}, "spirits"), ({"colour": "red"}, "unknown fields"),
                        ({"river_loops": "house"}, "river_loops must be one of 'rulebook', 'bga'")):
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
    r = _step(client, s["id"], 0)
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
        r = _step(client, gid, rng.choice(s["legal"])["action"])
        assert r.status_code == 200, r.text
        s = _wait(client, gid)
        steps += 1
    assert steps > 20 and s["result"] and s["legal"] == []
    r = _get(client, gid, "/record")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    rec = r.json()
    assert rec["seed"] == 77 and rec["names"] == s["names"]
    replayed = Game.replay(rec)
    assert replayed.is_over and replayed.scores() == [p["scores"] for p in s["table"]["players"]]
    page = _get(client, gid, "/replay")
    assert page.status_code == 200 and "Harmonies replay" in page.text
    token = client.manager.get(gid).token  # the page's links carry it as ?token= (a link cannot send a header)
    assert client.get(f"/api/games/{gid}/record?token={token}").json() == rec
    assert client.get(f"/api/games/{gid}/replay?token={token}").status_code == 200
    for path in ("/record", "/replay", f"/record?token={token[:-1]}"):
        r = client.get(f"/api/games/{gid}{path}")
        assert r.status_code == 403 and "token" in r.json()["error"], path
    r = _step(client, gid, A.END_TURN)
    assert r.status_code == 400 and "over" in r.json()["error"]


def test_page_and_static_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/play.js" in page.text and "/static/harmonies.js" in page.text
    for name, kind in (("harmonies.js", "javascript"), ("play.js", "javascript"), ("harmonies.css", "css")):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and kind in r.headers["content-type"]
    assert client.get("/static/../serve.py").status_code == 404
    assert client.get("/api/config").json()["opponents"] == ["random", "greedy:4"]
    assert client.get("/api/config").json()["max_body_bytes"] == MAX_BODY_BYTES


def test_cli_parses_serve_and_rejects_unknown_opponents():
    from harmonies_apps.cli import build_parser
    from harmonies_apps.serve import Manager

    args = build_parser().parse_args(["serve", "--port", "8123", "--opponents", "random", "mcts:10it"])
    assert (args.host, args.port, args.opponents) == ("127.0.0.1", 8123, ["random", "mcts:10it"])
    with pytest.raises(ValueError, match="unknown agent"):
        Manager(["chess-engine"])

    args = build_parser().parse_args(["serve"])
    assert {"learned", "learned-search", "mlp", "greedy", "mcts:1.0", "random"} <= set(args.opponents)
    assert args.opponents[0] == "greedy"  # preselected on the page: quick to answer


def test_serve_help_lists_the_learned_agents(capsys):
    from harmonies_apps import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["serve", "--help"])
    assert e.value.code == 0
    out = "".join(capsys.readouterr().out.split())  # argparse wraps lines, also after hyphens
    for words in ("learned[:PATH]", "learned-search[:SECONDS]orlearned-search:Nit", "mlp[:PATH]",
                  "mlp-search[:SECONDS]ormlp-search:Nit", "'learned','learned-search','mlp'", "--max-games",
                  "--idle-minutes"):
        assert words in out, words


def test_the_learned_agents_are_offered_and_accepted():
    """The n-tuple network (`learned`, `learned-search`) and the MLP baseline (`mlp`), as served by default."""
    pytest.importorskip("torch", reason="the MLP reads its weights with torch")
    offered = ["learned", "learned-search", "mlp"]
    app = create_app(offered, bot_delay=0)
    with TestClient(app) as c:
        assert c.get("/api/config").json()["opponents"] == offered
        r = c.post("/api/games", json={"opponents": ["learned-search", "mlp", "learned"], "seat": 0})
        assert r.status_code == 200, r.text
        assert r.json()["names"] == ["You", "learned-search (bot)", "mlp (bot)", "learned (bot)"]


# ---- limits: request bodies, JSON, game tokens, the table of games ------------------------------------

def test_a_10_mb_body_gets_413_and_the_server_keeps_answering(client):
    big = b"[" + b"0," * (5 * 1024 * 1024) + b"0]"
    for path in ("/api/games", "/api/config"):
        r = client.post(path, content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413 and f"larger than {MAX_BODY_BYTES} bytes" in r.json()["error"], r.text
        assert r.headers["connection"] == "close"

    def chunks():  # streamed with no Content-Length (Transfer-Encoding: chunked): counted as it arrives
        for _ in range(160):
            yield b" " * 65536

    r = client.post("/api/games", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413, r.text
    s = _new(client, seed=5)  # the next request is answered as usual
    assert s["id"] in client.manager.sessions
    fits = json.dumps({"opponents": ["random"], "seed": 6}).encode()
    fits = fits[:-1] + b" " * (MAX_BODY_BYTES - len(fits)) + b"}"  # exactly the limit: accepted
    r = client.post("/api/games", content=fits, headers={"content-type": "application/json"})
    assert len(fits) == MAX_BODY_BYTES and r.status_code == 200, r.text


def test_deep_or_huge_json_gets_400_naming_what_was_wrong(client):
    deep = "[" * 100_000 + "]" * 100_000  # 200 KB: over the body limit too
    assert client.post("/api/games", content=deep, headers={"content-type": "application/json"}).status_code == 413
    gid = _wait(client, _new(client, seed=8)["id"])["id"]
    game = client.manager.get(gid).game
    before = game.state.copy()
    cases = [
        ('{"opponents": ' + "[" * 2000 + "]" * 2000 + "}", "nested more than 8 deep"),
        ('{"seed": ' + "7" * 5000 + "}", "5000 digits"),
        ('{"seed": ' + "9" * 21 + "}", "21 digits"),
        ('{"seed": 9223372036854775808}', "seed must be an integer 0..2**63-1"),
        ('{"seed": -1}', "seed must be"),
        ('{"seed": 1.5}', "seed must be"),
        ('{"seed": NaN}', "NaN is not a JSON number"),
        ('{"seat": Infinity}', "Infinity is not a JSON number"),
        ('{"seed": 1,}', "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 12"),
        ("[1, 2]", "must be a JSON object, got a JSON list"),
        ('{"side": "' + "C" * 5000 + '"}', "side must be"),
    ]
    for text, words in cases:
        r = client.post("/api/games", content=text.encode(), headers={"content-type": "application/json"})
        assert r.status_code == 400 and words in r.json()["error"], (text[:40], r.text[:300])
        assert len(r.text) < 500  # what the client sent is quoted, cut short
    r = client.post("/api/games", content=b'{"seed": "\xff"}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not UTF-8" in r.json()["error"]
    for text, words in (('{"action": ' + "1" * 5000 + "}", "5000 digits"),
                        ('{"action": ' + "[" * 50 + "]" * 50 + "}", "nested more than 8 deep"),
                        ('{"action": [0]}', "must be an integer")):
        r = client.post(f"/api/games/{gid}/step", content=text.encode(),
                        headers={"content-type": "application/json", **_auth(client, gid)})
        assert r.status_code == 400 and words in r.json()["error"], (text[:40], r.text[:300])
    assert np.array_equal(game.state, before) and game.history == []
    ok = '{"opponents": ["random"], "seed": 9223372036854775807, "side": "B"}'  # brackets in strings do not count:
    r = client.post("/api/games", content=ok, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    r = client.post("/api/games", content='{"side": "[[[[[[[[[[[[[[["}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "side must be" in r.json()["error"]


def test_a_game_answers_only_requests_carrying_its_token(client):
    s = _wait(client, _new(client, seed=3)["id"])
    gid = s["id"]
    other = _new(client, seed=4)
    assert other["token"] != client.manager.get(gid).token and len(other["token"]) >= 32
    game = client.manager.get(gid).game
    before = game.state.copy()
    take = s["legal"][0]["action"]
    for headers, words in (({}, "needs its token"), ({TOKEN_HEADER: other["token"]}, "wrong token"),
                           ({TOKEN_HEADER: ""}, "wrong token")):
        r = client.post(f"/api/games/{gid}/step", json={"action": take}, headers=headers)
        assert r.status_code == 403 and words in r.json()["error"], r.text
        r = client.get(f"/api/games/{gid}", headers=headers)
        assert r.status_code == 403 and words in r.json()["error"], r.text
    r = client.post(f"/api/games/{gid}/step?token={client.manager.get(gid).token}", json={"action": take})
    assert r.status_code == 403  # moves take the header only
    assert np.array_equal(game.state, before) and game.history == []
    assert _step(client, gid, take).status_code == 200 and game.history == [take]
    assert "token" not in _get(client, gid).json()  # only the creation hands it out


def test_another_clients_game_survives_100_new_games_from_a_second_client(client):
    client.manager.max_client_games = 1000  # the table's own limit here (the per-client cap has its own tests)
    mine = _wait(client, _new(client, seed=11)["id"])
    gid = mine["id"]
    assert _step(client, gid, mine["legal"][0]["action"]).status_code == 200
    made, refused = [], 0
    for k in range(100):
        r = client.post("/api/games", json={"opponents": ["random"], "seed": k})
        if r.status_code == 200:
            made.append(r.json()["id"])
        else:
            assert r.status_code == 503 and "full" in r.json()["error"] and r.headers["retry-after"], r.text
            refused += 1
    assert len(made) == client.manager.max_games - 1 and refused == 100 - len(made)
    assert gid in client.manager.sessions  # never evicted: in play, and used recently
    s = _wait(client, gid)
    assert s["your_turn"] and _step(client, gid, s["legal"][0]["action"]).status_code == 200


def test_eviction_forgets_idle_games_finished_first_and_a_finished_games_record_outlives_its_play(client):
    mgr = client.manager
    mgr.max_games = 4
    made = [_new(client, seed=k) for k in range(4)]
    ids = [m["id"] for m in made]
    finished = mgr.get(ids[2]).game
    rng = random.Random(0)
    while not finished.is_over:  # set up: a finished game (moves straight through the engine)
        finished.step(rng.choice(finished.legal_actions()))
    assert client.post("/api/games", json={}).status_code == 503  # just finished: its record is still wanted
    assert _get(client, ids[2], "/record").status_code == 200
    mgr.get(ids[2]).last_used -= mgr.idle_seconds + 1  # its player gone as long as an idle game's
    mgr.get(ids[0]).last_used -= mgr.idle_seconds + 9  # and an idle game in play, idle for longer
    r = client.post("/api/games", json={"opponents": ["random"]})
    assert r.status_code == 200 and ids[2] not in mgr.sessions and ids[0] in mgr.sessions  # finished ones first
    r = client.post("/api/games", json={"opponents": ["random"]})
    assert r.status_code == 200 and ids[0] not in mgr.sessions  # then in play, idle past the timeout
    ids[0] = r.json()["id"]
    made[0] = {"id": ids[0], "token": r.json()["token"]}
    assert client.post("/api/games", json={}).status_code == 503  # the rest are in play
    mgr.get(ids[1]).last_used -= mgr.idle_seconds + 5  # as if untouched for longer than the idle time
    mgr.get(ids[3]).last_used -= mgr.idle_seconds + 1
    r = client.post("/api/games", json={})
    assert r.status_code == 200 and ids[1] not in mgr.sessions and ids[3] in mgr.sessions  # the longest idle
    r = client.get(f"/api/games/{ids[1]}", headers={TOKEN_HEADER: made[1]["token"]})
    assert r.status_code == 404 and "forgotten" in r.json()["error"]
    _get(client, ids[3])  # a request makes it recent again
    assert client.post("/api/games", json={}).status_code == 503


def test_a_game_whose_bots_are_thinking_is_never_evicted(client):
    release = threading.Event()

    class SlowBot:
        name = "slow"

        def act(self, view):
            release.wait(10)
            return view.legal_actions()[0]

    mgr = client.manager
    mgr.max_games = 1
    mgr.make_agent = lambda spec, seed=0: SlowBot()
    s = _new(client, seat=1, seed=2)
    assert s["thinking"]
    mgr.get(s["id"]).last_used -= mgr.idle_seconds + 5
    r = client.post("/api/games", json={})
    assert r.status_code == 503 and s["id"] in mgr.sessions
    release.set()
    assert _wait(client, s["id"])["your_turn"]


# ---- a real server: bodies streamed over a socket; the command's port errors -------------------------

def _http(url: str, request: bytes, body_chunks=()) -> bytes:
    """Send `request` (head) then `body_chunks` on one connection and return the whole answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(request)
        for c in body_chunks:
            sock.sendall(c)
        out = b""
        while True:
            data = sock.recv(65536)
            if not data:
                return out
            out += data


def test_a_real_server_cuts_off_big_bodies_with_and_without_content_length():
    pytest.importorskip("uvicorn", reason='the play server needs the web extra: pip install -e ".[web]"')
    from harmonies_apps.browser import serve_in_thread

    app = create_app(["random"], bot_delay=0)
    with serve_in_thread(app) as url:
        head = b"POST /api/games HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n" % url[7:].encode()
        answer = _http(url, head + b"Content-Length: 52428800\r\n\r\n")  # 50 MB announced, none sent
        assert answer.startswith(b"HTTP/1.1 413 ") and b"larger than" in answer
        chunk = b"%x\r\n%s\r\n" % (8192, b" " * 8192)
        answer = _http(url, head + b"Transfer-Encoding: chunked\r\n\r\n", [chunk] * 3)  # 24 KB, no end
        assert answer.startswith(b"HTTP/1.1 413 ") and b"larger than" in answer
        small = b'{"opponents": []}'
        answer = _http(url, head + b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(small), small))
        assert answer.startswith(b"HTTP/1.1 200 ") and b'"token"' in answer


def _serve(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "harmonies_apps.cli", "serve", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_serve_refuses_a_port_out_of_range_in_one_line(port):
    r = _serve("--port", port, "--opponents", "random")
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr == f"harmonies serve: --port must be 0..65535 (0: any free port), got {port}\n"


def test_serve_on_a_busy_port_says_so_in_one_line():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _serve("--port", str(port), "--opponents", "random")
    assert r.returncode == 2 and r.stdout == "", r  # no "open http://..." line
    assert r.stderr == f"harmonies serve: port {port} on 127.0.0.1 is already in use; choose another with --port\n"


def test_serve_announces_its_address_once_it_listens():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "harmonies_apps.cli", "serve", "--port", "0", "--opponents",
                             "random"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.startswith("Harmonies: open http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() else "")
        url = line.split()[2].rstrip("/")
        with urllib.request.urlopen(url + "/api/config", timeout=20) as r:  # listening already: no retry needed
            assert json.loads(r.read())["opponents"] == ["random"]
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_new_game_takes_the_river_loops_option_and_its_record_names_it(client):
    """POST /api/games {"river_loops": "bga"}: the game scores by it and its record (once over) names it."""
    assert client.get("/api/config").json()["river_loops"] == ["rulebook", "bga"]
    s = _new(client, opponents=[], seed=3, river_loops="bga")
    game = client.manager.get(s["id"]).game
    assert game.river_loops == "bga"
    while not game.is_over:
        s = _step(client, s["id"], game.legal_actions()[0]).json()
    rec = _get(client, s["id"], "/record").json()
    assert rec["river_loops"] == "bga" and Game.replay(rec).scores() == game.scores()


# ---- limits per client, Host / Origin, timeouts (issue 38) ----------------------------------------------------

def test_one_client_holds_at_most_max_client_games_in_play(client):
    from harmonies_apps.serve import MAX_CLIENT_GAMES

    mgr = client.manager
    assert mgr.max_client_games == MAX_CLIENT_GAMES == client.get("/api/config").json()["max_client_games"]
    mgr.max_client_games = 3
    ids = [_new(client, seed=k)["id"] for k in range(3)]
    r = client.post("/api/games", json={"opponents": ["random"]})
    assert r.status_code == 429 and "3 games in play" in r.json()["error"] and r.headers["retry-after"]
    other = TestClient(client.app, client=("10.0.0.2", 50000))  # another address: its own three
    assert other.post("/api/games", json={"opponents": ["random"]}).status_code == 200
    finished = mgr.get(ids[0]).game
    rng = random.Random(0)
    while not finished.is_over:  # a finished game no longer counts
        finished.step(rng.choice(finished.legal_actions()))
    assert client.post("/api/games", json={"opponents": ["random"]}).status_code == 200
    mgr.get(ids[1]).last_used -= mgr.idle_seconds + 1  # nor does one left idle
    assert client.post("/api/games", json={"opponents": ["random"]}).status_code == 200
    assert client.post("/api/games", json={"opponents": ["random"]}).status_code == 429


def test_bot_decisions_are_taken_in_turn_across_clients_one_at_a_time_per_client():
    from harmonies_apps.serve import BotScheduler

    ran, gate, done_b = [], threading.Event(), threading.Event()

    def job(name, wait=None, then=None):
        def run():
            if wait is not None:
                assert wait.wait(20)
            ran.append(name)
            if then is not None:
                then.set()
        return run

    bots = BotScheduler(workers=2, per_client=1)
    try:
        bots.submit("a", job("a0", wait=gate))  # a worker busy with client a's decision (whichever takes it)
        for k in range(1, 5):
            bots.submit("a", job(f"a{k}"))
        bots.submit("b", job("b0", then=done_b))
        assert done_b.wait(20)
        assert ran == ["b0"]  # the second worker took client b's: client a already had its one decision running
        gate.set()
        for _ in range(2000):
            if len(ran) == 6:
                break
            threading.Event().wait(0.01)
        assert ran == ["b0", "a0", "a1", "a2", "a3", "a4"]
    finally:
        bots.shutdown()
    one = BotScheduler(workers=1, per_client=1)  # one worker: round-robin between the clients' queues
    try:
        gate2, last, started = threading.Event(), threading.Event(), threading.Event()
        order = []
        one.submit("a", lambda: (started.set(), gate2.wait(20), order.append("a0"))[-1])
        assert started.wait(20)  # the worker holds a0 before the others queue
        for k in range(1, 4):
            one.submit("a", lambda k=k: order.append(f"a{k}"))
        for k in range(2):
            one.submit("b", lambda k=k: order.append(f"b{k}"))
        one.submit("c", lambda: (order.append("c0"), last.set())[-1])
        gate2.set()
        assert last.wait(20)
        assert order[:6] == ["a0", "a1", "b0", "c0", "a2", "b1"]
    finally:
        one.shutdown()


def test_host_and_origin_must_be_the_servers_own():
    from harmonies_apps.serve import allowed_hosts

    assert allowed_hosts("0.0.0.0", 8000) is None and allowed_hosts("::", 8000) is None
    assert allowed_hosts("127.0.0.1", 8000) == {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"}
    assert allowed_hosts("192.168.1.5", 80) == {"192.168.1.5:80", "192.168.1.5"}
    app = create_app(["random"], bot_delay=0)
    app.state.allowed_hosts = allowed_hosts("127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        assert c.get("/api/config").status_code == 200
        assert c.get("/api/config", headers={"Host": "localhost:8000"}).status_code == 200
        r = c.get("/api/config", headers={"Host": "rebind.example:8000"})  # a rebinding page's own name
        assert r.status_code == 400 and "DNS rebinding" in r.json()["error"]
        r = c.post("/api/games", json={}, headers={"Origin": "http://rebind.example:8000"})
        assert r.status_code == 403 and "rebind.example" in r.json()["error"]
        assert c.post("/api/games", json={}, headers={"Origin": "null"}).status_code == 403
        assert c.post("/api/games", json={}, headers={"Origin": "http://127.0.0.1:8000"}).status_code == 200


def test_a_real_server_closes_idle_and_slow_sockets_and_times_out_slow_bodies(monkeypatch):
    pytest.importorskip("uvicorn", reason='the play server needs the web extra: pip install -e ".[web]"')
    from harmonies_apps.browser import serve_in_thread
    from harmonies_apps.serve import server

    monkeypatch.setattr(server, "HEAD_SECONDS", 0.5)  # where serve_config's protocol reads it (not the package's name)
    app = create_app(["random"], bot_delay=0, body_seconds=0.5)
    with serve_in_thread(app) as url:
        hostport = url.removeprefix("http://")
        assert _http(url, b"") == b""  # connected, sent nothing: closed by the server (no answer)
        assert _http(url, b"GET /api/config HTTP/1.1\r\nHost: " + hostport.encode() + b"\r\n") == b""  # half a head
        head = (b"POST /api/games HTTP/1.1\r\nHost: " + hostport.encode()
                + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        answer = _http(url, head)  # 1 of 100 bytes, then nothing
        assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive" in answer
        answer = _http(url, b"GET /api/config HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400 ")
        answer = _http(url, b"GET /api/config HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % hostport.encode())
        assert answer.startswith(b"HTTP/1.1 200 ")


def test_forwarded_headers_are_ignored_unless_the_proxy_is_trusted():
    """From loopback, X-Forwarded-For naming another address each time made 12 of 12 games past a cap of 8 (uvicorn
    trusts loopback proxies by default); now the connection's address is the client, unless --proxy-headers."""
    pytest.importorskip("uvicorn", reason='the play server needs the web extra: pip install -e ".[web]"')
    from harmonies_apps.browser import serve_in_thread

    def statuses(proxy) -> list[int]:
        app = create_app(["random"], bot_delay=0, max_client_games=2)
        out = []
        with serve_in_thread(app, proxy=proxy) as url:
            for k in range(4):
                req = urllib.request.Request(f"{url}/api/games", data=b'{"opponents": []}', method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "X-Forwarded-For": f"10.9.8.{k}"})
                try:
                    with urllib.request.urlopen(req, timeout=20) as r:
                        out.append(r.status)
                except urllib.error.HTTPError as e:
                    out.append(e.code)
        return out

    assert statuses(()) == [200, 200, 429, 429]
    assert statuses(["127.0.0.1"]) == [200, 200, 200, 200]  # a trusted proxy names each client


def test_refused_connections_are_counted_and_logged_once_a_minute_at_most():
    import logging

    from harmonies_apps.serve import RefusedConnections, serve_config, trusted_proxies

    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    log = logging.getLogger("test-refused")
    log.propagate = False
    log.addHandler(Keep())
    f = RefusedConnections(every=3600)
    log.addFilter(f)
    for _ in range(1000):
        log.warning("Exceeded concurrency limit.")
    log.warning("something else")
    assert f.count == 1000 and seen == ["something else"]
    f.every = 0
    log.warning("Exceeded concurrency limit.")
    assert f.count == 1001 and len(seen) == 2 and seen[1].startswith("refused 1001 connection(s) over the limit")
    app = create_app(["random"], bot_delay=0)
    config = serve_config(app, "127.0.0.1", 8123)
    assert config.proxy_headers is False
    assert sum(isinstance(x, RefusedConnections) for x in logging.getLogger("uvicorn.error").filters) == 1
    serve_config(app, "127.0.0.1", 8123, proxy=["10.0.0.0/8"])
    assert sum(isinstance(x, RefusedConnections) for x in logging.getLogger("uvicorn.error").filters) == 1
    with pytest.raises(ValueError, match="--proxy-headers takes IP addresses"):
        trusted_proxies(["*"])
