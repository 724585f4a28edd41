"""The ladder's report (harmonies_apps.ladder.report): the `show --json` payload, the text leaderboard and the
offline HTML page, in a real headless Chromium where one is installed (see tests/test_browser.py)."""
from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from test_ladder_stats import simulate, simulate_pairs  # tests/ is on sys.path (pytest's rootdir-relative import)

from harmonies_apps.browser import chromium_paths, headless_chromium
from harmonies_apps.ladder.report import build_report, html_page, text_table
from harmonies_apps.ladder.sequential import SequentialTest
from harmonies_apps.ladder.stats import GameResult, fit_ratings

ARTIFACTS = Path(__file__).with_name("artifacts")
NAMES = ["random", "greedy", "mcts:200it", "learned", "mine"]
TRUE = [0.0, 300.0, 420.0, 500.0, 350.0]


def _bots() -> list[dict]:
    return [{"name": n, "spec": n if n != "mine" else "py:my.bot:make", "sha256": "ab" * 32 if n == "learned" else None,
             "reproducible": n != "mcts:200it"} for n in NAMES]


def _tests() -> list[dict]:
    out = []
    for kind, bounds, elo in (("elo", (0, 10), 120), ("points", (0, 1), 0)):
        t = SequentialTest(kind, bounds)
        for score, margin in simulate_pairs(elo, 3000, seed=9):
            if t.add(score, margin):
                break
        out.append({"new": 4, "base": 1, "kind": kind, "bounds": bounds, "alpha": 0.05, "beta": 0.05,
                    "verdict": t.verdict, "llr": t.llr, "trajectory": t.trajectory, "games": 2 * t.pairs})
    return out


@pytest.fixture(scope="module")
def report() -> dict:
    games = simulate(TRUE, 2, 150, seed=5)
    return build_report(_bots(), games, _tests(), references=[0, 1, 2, 3], seed=0, samples=100)


def test_report_payload_is_refitted_sorted_and_json(report):
    games = simulate(TRUE, 2, 150, seed=5)
    json.dumps(report, allow_nan=False)  # NaN became null
    names = [b["name"] for b in report["bots"]]
    ratings = [b["rating"] for b in report["bots"]]
    assert ratings == sorted(ratings, reverse=True) and sorted(names) == sorted(NAMES)
    fit = fit_ratings(games, len(NAMES))
    for b in report["bots"]:
        i = NAMES.index(b["name"])
        assert b["rating"] == pytest.approx(fit[i], abs=1e-9)
        assert b["ci_low"] <= b["rating"] <= b["ci_high"]
        assert set(b) >= {"name", "spec", "sha256", "reproducible", "rating", "ci_low", "ci_high", "games", "margin",
                          "categories"}
        assert len(b["categories"]) == 7 and b["categories"][0]["name"] == "trees"
        assert b["games"] == sum(NAMES.index(b["name"]) in g.bots for g in games)
    by = {b["name"]: b for b in report["bots"]}
    assert by["random"]["rating"] == 0.0 and report["anchor"] == "random"
    assert by["learned"]["sha256"] == "ab" * 32 and by["mcts:200it"]["reproducible"] is False
    assert by["random"]["margin"]["mean"] < 0 < by["learned"]["margin"]["mean"]
    wm = report["win_matrix"]
    assert wm["bots"] == names and wm["rates"][0][0] is None
    assert abs(wm["rates"][0][-1] + wm["rates"][-1][0] - 1) < 1e-12
    assert abs(sum(report["nash"]["weights"]) - 1) < 1e-9
    h = report["history"]
    assert len(h["games"]) == len(h["ratings"]) <= 25 and h["games"][-1] == len(games)
    assert h["ratings"][-1] == pytest.approx([float(v) for v in fit])
    t = report["tests"]
    assert [x["verdict"] for x in t] == ["H1", "H0"] and t[0]["new"] == "mine" and t[0]["base"] == "greedy"
    assert t[0]["lower"] < 0 < t[0]["upper"]


def test_report_with_unrated_bots_and_no_games():
    bots = _bots()
    games = [GameResult(b, (0, 1), (40, 50), (1, 0), ((1,) * 7,) * 2) for b in range(4)]
    rep = build_report(bots, games, [], references=[0], seed=1, samples=20)
    json.dumps(rep, allow_nan=False)
    assert [b["name"] for b in rep["bots"]][:2] == ["greedy", "random"]
    assert all(b["rating"] is None and b["games"] == 0 for b in rep["bots"][2:])
    assert "random" in text_table(rep)
    empty = build_report(bots, [], [], references=[0], seed=1, samples=20)
    assert empty["games"] == 0 and all(b["rating"] is None for b in empty["bots"])
    assert html_page(empty).count('<section class="box"') == 6  # every section is there, drawn empty


def test_text_table_is_aligned(report):
    lines = text_table(report).splitlines()
    assert lines[0].startswith("#") and "rating" in lines[0] and "95% interval" in lines[0]
    body = lines[2:2 + len(NAMES)]
    assert [ln.split()[1] for ln in body] == [b["name"] for b in report["bots"]]
    col = lines[0].index("games") + len("games")
    assert all(ln[col - 1].isdigit() for ln in body)  # right-aligned numbers
    assert any(ln.startswith("test mine vs greedy (elo [0, 10]") and "H1" in ln for ln in lines)


def test_html_page_is_self_contained(report):
    page = html_page(report, "My <ladder>")
    assert "My &lt;ladder&gt;" in page and "<ladder>" not in page
    page = page.replace("'http://www.w3.org/2000/svg'", "")  # the SVG namespace: a name, never fetched
    for banned in ("http://", "https://", "src=", "<link", "@import", "fetch(", "XMLHttpRequest"):
        assert banned not in page, banned


def _need(module: str):
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="browser tests need Chromium and Selenium (see tests/test_browser.py)")


def test_html_page_draws_every_section_offline_in_chromium(report, tmp_path):
    _need("selenium.webdriver")
    if chromium_paths() is None:
        pytest.skip("browser tests need Chromium: apt-get install -y chromium chromium-driver")
    page = tmp_path / "ladder.html"
    page.write_text(html_page(report, "Test ladder"), encoding="utf-8")
    drv = headless_chromium(1400, 2600)
    try:
        drv.get(page.as_uri())
        body = drv.find_element("tag name", "body")
        assert body.get_attribute("data-ready") == "1"
        drawn = {s.get_attribute("id"): s.get_attribute("data-drawn") for s in drv.find_elements("css selector",
                                                                                                 "section")}
        assert drawn == dict.fromkeys(["leaderboard", "forest", "heatmap", "categories", "history", "tests"], "1")
        css = drv.find_elements
        n = len(NAMES)
        assert len(css("css selector", "#board tbody tr")) == n
        assert len(css("css selector", "#forest circle.rating")) == n
        assert len(css("css selector", "#forest line.ci")) == n
        assert len(css("css selector", "#heatmap rect.cell")) == n * n
        assert len(css("css selector", "#categories rect.bar")) == 7 * n
        assert len(css("css selector", "#history polyline.line")) == n
        assert len(css("css selector", "#tests polyline.llr")) == 2
        assert len(css("css selector", "#tests line.bound")) == 4
        first = [r.get_attribute("data-bot") for r in css("css selector", "#board tbody tr")]
        assert first == [b["name"] for b in report["bots"]]
        games_col = css("css selector", "#board th")[5]
        games_col.click()  # sort by games, descending
        counts = [int(r.find_elements("tag name", "td")[5].text) for r in css("css selector", "#board tbody tr")]
        assert counts == sorted(counts, reverse=True)
        games_col.click()
        counts = [int(r.find_elements("tag name", "td")[5].text) for r in css("css selector", "#board tbody tr")]
        assert counts == sorted(counts)
        assert drv.execute_script("return performance.getEntriesByType('resource').length") == 0  # nothing fetched
        ARTIFACTS.mkdir(exist_ok=True)
        drv.save_screenshot(str(ARTIFACTS / "ladder.png"))
        assert [e for e in drv.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        drv.quit()


def test_history_is_cheap_and_monotone_in_games():
    games = simulate(TRUE, 2, 300, seed=2)
    rep = build_report(_bots(), games, [], references=[0], seed=0, samples=10)
    g = rep["history"]["games"]
    assert g == sorted(g) and len(g) <= 25 and g[-1] == len(games)
    assert np.isclose(rep["history"]["ratings"][-1][3], fit_ratings(games, len(NAMES))[3])
