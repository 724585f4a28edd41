"""The browser pages in a real headless Chromium (Selenium): step through a replay, and play a whole game by clicking.

Needs Debian's `chromium` + `chromium-driver` packages and the web extra (selenium, starlette, uvicorn):
    apt-get install -y chromium chromium-driver && pip install -e ".[web]"
Without them these tests skip and say so; CI (.ci/run with CI set) installs them, and there a missing Python package
fails (Chromium that could not be installed still skips). Screenshots are written to
tests/artifacts/ (git-ignored) for people to look at.
"""
from __future__ import annotations

import importlib
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agents import make_agent
from harmonies_apps.browser import chromium_paths, headless_chromium, serve_in_thread
from harmonies_apps.replay import build_game, write_replay
from harmonies_apps.tournament import play_game
from harmonies_env.config import GameConfig
from harmonies_env.scoring import CATEGORIES

ARTIFACTS = Path(__file__).with_name("artifacts")
HOW = ('browser tests need Chromium and Selenium: apt-get install -y chromium chromium-driver && '
       'pip install -e ".[web]" (CI installs them)')


def _need(module: str):
    """Import a web-extra module; under CI (.ci/run installs the extra) a missing one fails instead of skipping."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=HOW)


@pytest.fixture(scope="module")
def browser():
    _need("selenium.webdriver")
    if chromium_paths() is None:
        pytest.skip(HOW)
    drv = headless_chromium(1400, 1250)
    drv.set_script_timeout(20)
    ARTIFACTS.mkdir(exist_ok=True)
    yield drv
    drv.quit()


def _attr(drv, name: str) -> str | None:
    return drv.find_element("tag name", "body").get_attribute(name)


def _until(fn, what: str, timeout: float = 20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _page_scores(drv, n: int) -> list[dict[str, int]]:
    cells = drv.find_elements("css selector", "table.scores td[data-player]")
    out = [dict() for _ in range(n)]
    for c in cells:
        out[int(c.get_attribute("data-player"))][c.get_attribute("data-cat")] = int(c.text)
    return out


def _expected(scores: list[dict[str, int]], spirits: bool) -> list[dict[str, int]]:
    return [{k: v for k, v in sc.items() if spirits or k != "spirit"} for sc in scores]


def test_replay_page_steps_through_a_recorded_game(browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    game = play_game([make_agent("greedy:4", seed=1), make_agent("random", seed=2)], seed=21,
                     config=GameConfig(2, "A", True))
    rec = dict(game.record(), names=["greedy:4", "random"])
    built = build_game(rec)
    ts = built["turn_starts"]
    rec["annotations"] = [{"ply": ts[1], "candidates": [{"plan": rec["actions"][ts[1]:ts[2]], "value": 3.25}]}]
    (tmp_path / "g.json").write_text(json.dumps(rec))
    page, _ = write_replay(tmp_path / "g.json", tmp_path / "g.html")
    drv = browser
    drv.get(page.as_uri())
    body = drv.find_element("tag name", "body")
    assert _attr(drv, "data-frame") == "0"
    assert len(drv.find_elements("css selector", "svg.board")) == 2
    assert len(drv.find_elements("css selector", "svg.board[data-player='0'] g.cell")) == 23
    body.send_keys(Keys.ARROW_RIGHT)
    assert _attr(drv, "data-frame") == "1"
    assert drv.find_element("id", "lastmove").text == "greedy:4: " + built["frames"][1]["last"]["text"]
    drv.find_element("id", "nextTurn").click()
    assert _attr(drv, "data-frame") == str(ts[1])
    annot = drv.find_element("id", "annot").text
    assert "3.25" in annot and "played" in annot  # the agent's candidate at this decision, marked as played
    body.send_keys(Keys.ARROW_DOWN)
    assert _attr(drv, "data-frame") == str(ts[2]) and drv.find_element("id", "annot").text == ""
    body.send_keys(Keys.ARROW_UP)
    assert _attr(drv, "data-frame") == str(ts[1])
    body.send_keys(Keys.ARROW_LEFT)
    assert _attr(drv, "data-frame") == str(ts[1] - 1)
    mid = len(built["frames"]) * 3 // 5
    drv.execute_script("var s = document.getElementById('slider'); s.value = arguments[0];"
                       "s.dispatchEvent(new Event('input'));", mid)
    assert _attr(drv, "data-frame") == str(mid)
    f = built["frames"][mid]
    assert _page_scores(drv, 2) == _expected([p["scores"] for p in f["players"]], True)
    drv.save_screenshot(str(ARTIFACTS / "replay.png"))
    body.send_keys(Keys.END)
    assert _attr(drv, "data-frame") == str(len(built["frames"]) - 1)
    assert _page_scores(drv, 2) == _expected(game.scores(), True)
    assert "Game over" in drv.find_element("id", "status").text
    assert drv.find_element("id", "next").get_attribute("disabled")
    # a folder of records: one page, a game selector
    folder = tmp_path / "games"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(rec))
    other = play_game([make_agent("random", seed=5)], seed=4, config=GameConfig(1, "B"))
    (folder / "b.json").write_text(other.to_json())
    page, n = write_replay(folder, tmp_path / "folder.html")
    assert n == 2
    drv.get(page.as_uri())
    from selenium.webdriver.support.ui import Select

    Select(drv.find_element("id", "game")).select_by_index(1)
    assert drv.find_element("id", "cfg").text.startswith("b \u00b7 solo \u00b7 Side B")
    assert _attr(drv, "data-frame") == "0" and len(drv.find_elements("css selector", "svg.board")) == 1
    errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


@pytest.fixture()
def server():
    _need("starlette")
    _need("uvicorn")
    from harmonies_apps.serve import create_app

    app = create_app(["random", "greedy:4"], bot_delay=0)
    with serve_in_thread(app) as url:
        yield url, app.state.manager


def _settled(drv) -> str | None:
    """The page's state once it waits for the person (or the game is over), else None."""
    st = _attr(drv, "data-state")
    return st if st in ("your-turn", "over") and _attr(drv, "data-busy") != "1" else None


def _click(drv, el) -> None:
    el.click()
    _until(lambda: _settled(drv), "the page to settle after a click")


def _top(drv, element_id: str) -> float:
    """Where the element starts on the page (CSS pixels from the top of the document)."""
    return drv.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().top + "
                              "window.scrollY", element_id)


#: The result's colour on the play page, by outcome (harmonies.css: --win, --bad, --ink).
RESULT_COLOURS = {"win": "rgb(40, 160, 70)", "lose": "rgb(192, 57, 43)", "tie": "rgb(28, 28, 28)",
                  "solo": "rgb(28, 28, 28)"}


def test_play_a_whole_game_against_random_by_clicking(browser, server):
    url, manager = server
    drv = browser
    drv.get(url + "/")
    _until(lambda: _attr(drv, "data-ready") == "1", "the setup form")
    drv.find_element("css selector", "#opp0 option[value='random']").click()
    drv.find_element("id", "start").click()
    _until(lambda: _settled(drv), "the first turn")
    sess = next(iter(manager.sessions.values()))
    clicks = turns = 0
    took_card = False
    while _settled(drv) == "your-turn":
        assert clicks < 400, "the game should be over long before this"
        board_top = _top(drv, "players")
        find = drv.find_elements
        spaces = find("css selector", ".space.legal")
        cells = find("css selector", "svg.board[data-player='0'] g.cell.legal")
        held = find("css selector", ".card.held.legal")
        market = find("css selector", "#market .card.legal")
        if spaces:
            turns += 1
            _click(drv, spaces[0])
        elif cells:
            empty = [c for c in cells if c.get_attribute("data-height") == "0"]
            if turns == 4 and len(cells) > 1:
                drv.save_screenshot(str(ARTIFACTS / "play.png"))
            _click(drv, (empty or cells)[0])
        elif held and not drv.find_elements("css selector", ".card.held.selected"):
            _click(drv, held[0])  # select the card: its habitat cells light up (handled in the first branch)
        elif market and not took_card:
            took_card = True
            _click(drv, market[0])
        else:
            end = drv.find_element("id", "endTurn")
            assert end.is_enabled(), "nothing left to click but the turn cannot end"
            _click(drv, end)
        clicks += 1
    assert _settled(drv) == "over" and sess.game.is_over
    assert took_card and turns >= 5
    assert _page_scores(drv, 2) == _expected(sess.game.scores(), False)
    total = drv.find_element("css selector", "[data-total='0']").text
    assert total == f"{sess.game.scores()[0]['total']} pts"
    result = drv.find_element("id", "status").text
    assert result == sess.state()["result"] and result.startswith(("You win", "You lose", "You share"))
    assert drv.find_element("id", "setupBox").is_displayed()  # ready for the next game
    assert _top(drv, "players") == board_top  # ... below the board, which the end of the game did not move
    assert _top(drv, "setupBox") > _top(drv, "players")
    w = sess.game.winners()
    outcome = ("tie" if len(w) > 1 else "win") if 0 in w else "lose"
    shown = drv.find_element("id", "result")
    assert shown.get_attribute("data-outcome") == outcome and shown.get_attribute("class") == f"over {outcome}"
    assert drv.execute_script("return getComputedStyle(arguments[0]).color", shown) == RESULT_COLOURS[outcome]
    for other, colour in RESULT_COLOURS.items():  # the other outcomes' colours: "You lose" is never green
        got = drv.execute_script("var e = document.createElement('span'); e.className = 'over ' + arguments[0];"
                                 "document.getElementById('status').appendChild(e);"
                                 "var c = getComputedStyle(e).color; e.remove(); return c;", other)
        assert got == colour, (other, got)
    drv.save_screenshot(str(ARTIFACTS / "play_over.png"))
    href = drv.find_element("id", "download").get_attribute("href")
    assert f"?token={sess.token}" in href  # a link cannot send the X-Game-Token header
    with urllib.request.urlopen(href, timeout=10) as r:
        rec = json.loads(r.read())
    try:
        urllib.request.urlopen(href.split("?")[0], timeout=10)
        raise AssertionError("the record was served without the game's token")
    except urllib.error.HTTPError as e:
        assert e.code == 403
    from harmonies_env.game import Game

    assert Game.replay(rec).scores() == sess.game.scores()
    assert set(CATEGORIES) <= set(sess.game.scores()[0])
    errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors


def test_play_page_shows_a_clear_message_for_a_refused_request(browser, server):
    url, manager = server
    drv = browser
    drv.get(url + "/")
    _until(lambda: _attr(drv, "data-ready") == "1", "the setup form")
    drv.find_element("css selector", "#opp0 option[value='']").click()  # solo
    drv.find_element("id", "start").click()
    _until(lambda: _settled(drv), "the first turn")
    sess = max(manager.sessions.values(), key=lambda s: s.created)
    assert sess.game.num_players == 1
    # a stale page asking for an action that is not legal now: the server refuses, the page says why
    drv.execute_script("document.getElementById('endTurn').disabled = false;"
                       "document.getElementById('endTurn').setAttribute('data-end', '267');")
    drv.find_element("id", "endTurn").click()
    msg = _until(lambda: drv.find_element("id", "msg").text, "the error message")
    assert "illegal action 267" in msg and sess.game.history == []
