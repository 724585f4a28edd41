"""Regenerate docs/img/replay.png and docs/img/play.png (needs Chromium + the web extra; see docs/web.md).

    python -m docs.img.make_screenshots          (from the repository root)

Replay: a seeded greedy vs greedy:4 game with Spirits, at 60% of its actions. Play: a game against greedy:4 in
which the person's clicks are the greedy agent's choices (clicked through the page's list of legal moves), shot on
the person's 6th turn just after taking tokens, with the legal cells for the first colour highlighted.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

from agents import make_agent
from harmonies_apps.browser import headless_chromium, serve_in_thread
from harmonies_apps.replay import write_replay
from harmonies_apps.serve import create_app
from harmonies_apps.tournament import play_game
from harmonies_env.config import GameConfig
from harmonies_env.view import PlayerView

OUT = Path(__file__).resolve().parent


def _save(drv: Any, name: str) -> None:
    raw = OUT / f".{name}.raw.png"
    drv.save_screenshot(str(raw))
    Image.open(raw).convert("RGB").quantize(colors=256, dither=Image.Dither.NONE).save(OUT / name, optimize=True)
    raw.unlink()
    print("wrote", OUT / name)


def replay_shot(drv: Any) -> None:
    game = play_game([make_agent("greedy", seed=1), make_agent("greedy:4", seed=2)], seed=8,
                     config=GameConfig(2, "A", True))
    with tempfile.TemporaryDirectory() as d:
        rec = Path(d) / "game.json"
        rec.write_text(json.dumps(dict(game.record(), names=["greedy", "greedy:4"])))
        page, _ = write_replay(rec, Path(d) / "game.html")
        drv.get(page.as_uri())
        n = len(game.history)
        drv.execute_script("var s = document.getElementById('slider'); s.value = arguments[0];"
                           "s.dispatchEvent(new Event('input'));", n * 3 // 5)
        _save(drv, "replay.png")


def play_shot(drv: Any) -> None:
    app = create_app(["greedy:4", "random"], bot_delay=0)
    with serve_in_thread(app) as url:
        body = lambda k: drv.find_element("tag name", "body").get_attribute(k)  # noqa: E731
        drv.get(url + "/")
        while body("data-ready") != "1":
            time.sleep(0.05)
        drv.find_element("id", "start").click()
        me = make_agent("greedy:4", seed=5)
        turns = 0
        while True:
            while not (body("data-state") == "your-turn" and body("data-busy") != "1"):
                time.sleep(0.05)
            sess = next(iter(app.state.manager.sessions.values()))
            with sess.lock:
                a = me.act(PlayerView(sess.game, sess.seat))
                took_tokens = a < 5
            turns += took_tokens
            drv.execute_script("document.querySelector('#legal a[data-action=\"' + arguments[0] + '\"]').click()", a)
            if took_tokens and turns == 6:
                while not (body("data-state") == "your-turn" and body("data-busy") != "1"):
                    time.sleep(0.05)
                _save(drv, "play.png")
                break


if __name__ == "__main__":
    d = headless_chromium(1400, 1120)
    try:
        replay_shot(d)
        play_shot(d)
    finally:
        d.quit()
