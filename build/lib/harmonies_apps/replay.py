"""`harmonies replay`: turn game records into one self-contained HTML replay viewer.

    harmonies replay game.json --html game.html
    harmonies replay results/games/ --html games.html      (a folder of records, e.g. tournament --save-games)

A record is what `Game.record()` / `Game.to_json()` writes: {"version", "num_players", "side", "spirits",
"seed", "actions"}. Two optional keys are drawn when present:

- "names": one label per seat (the tournament writes the agent specs here);
- "annotations": a list of {"ply": k, "candidates": [{"plan": [action, ...], "value": float, "visits": int
  (optional)}, ...], "note": str (optional)}, an agent's candidate plans and their values at the decision before
  action k (k counts the record's actions from 0). The viewer lists them on that frame, in words, and marks the
  plan that was played. `tournament --save-games` adds them for search agents (see `annotate`).

Frames are computed here, in Python, by replaying the record (`Game.replay` semantics: one frame per
micro-action); each frame holds only the public table at that moment (see `table.table_state`), so nothing
later in the game (future draws) shows early. The HTML has no network access and needs no server: CSS, the
drawing JS (`static/harmonies.js`, shared with `harmonies serve`) and the frames are inlined.
"""
from __future__ import annotations

import argparse
import html
import json
from pathlib import Path
from typing import Any, Mapping

from harmonies_env.game import Game, IllegalActionError, check_record

from .table import static_data, static_text, table_state, write_text_atomic

REQUIRED = ("num_players", "side", "spirits", "seed", "actions")


def is_record(obj: Any) -> bool:
    """Whether a parsed JSON value looks like a game record (it holds every required key)."""
    return isinstance(obj, Mapping) and all(k in obj for k in REQUIRED)


def load_records(path: str | Path) -> list[tuple[str, dict]]:
    """(label, record) pairs from a record file, a JSON list of records, or a folder of record files.

    In a folder, JSON files that are not records (e.g. a tournament summary) are skipped; a file that
    claims to be a record but does not parse raises ValueError naming the file.
    """
    p = Path(path)
    if p.is_dir():
        out: list[tuple[str, dict]] = []
        for f in sorted(p.glob("*.json")):
            try:
                obj = json.loads(f.read_text())
            except json.JSONDecodeError as e:
                raise ValueError(f"{f}: not valid JSON ({e})") from None
            if is_record(obj):
                out.append((f.stem, obj))
        if not out:
            raise ValueError(f"{p} holds no game records (*.json with {', '.join(REQUIRED)})")
        return out
    if not p.exists():
        raise ValueError(f"{p} does not exist")
    try:
        obj = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not valid JSON ({e})") from None
    if is_record(obj):
        return [(p.stem, obj)]
    if isinstance(obj, list) and obj and all(is_record(o) for o in obj):
        return [(f"{p.stem} #{k}", o) for k, o in enumerate(obj)]
    raise ValueError(f"{p} is not a game record: it needs the keys {', '.join(REQUIRED)} "
                     "(as written by Game.to_json())")


def _describe_plan(game: Game, plan: list[int]) -> list[str]:
    """A candidate plan in words, stepped on a copy of the position (an illegal step ends the description)."""
    g = game.clone()
    words = []
    for a in plan:
        try:
            d = g.describe_action(int(a))
            g.step(int(a))
        except (IllegalActionError, ValueError, TypeError):
            words.append(f"action {a} (not legal here)")
            break
        words.append(d)
    return words


def build_game(record: Mapping[str, Any], label: str = "game") -> dict[str, Any]:
    """Everything the viewer draws for one record: static facts, one frame per micro-action, turn starts."""
    try:
        check_record(record)  # every key, a known version, a concrete seed
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None
    game = Game(record["num_players"], record["side"], record["spirits"], record["seed"])
    actions = list(record["actions"])
    annotations: dict[int, dict] = {}
    for k, ann in enumerate(record.get("annotations") or []):
        if not isinstance(ann, Mapping) or not isinstance(ann.get("ply"), int) or not 0 <= ann["ply"] <= len(actions):
            raise ValueError(f"{label}: annotation #{k} needs an integer 'ply' in 0..{len(actions)}")
        annotations[int(ann["ply"])] = dict(ann)
    show_all = range(game.num_players)
    frames = [dict(table_state(game, show_all), last=None)]
    turn_starts = [0]
    notes: dict[str, Any] = {}
    for k, a in enumerate(actions):
        if k in annotations:
            notes[str(k)] = _annotation(game, annotations[k], actions[k:])
        p, turn = game.current_player, game.turn
        try:
            text = game.describe_action(a) if isinstance(a, int) else str(a)
            game.step(a)
        except (IllegalActionError, ValueError) as e:
            raise ValueError(f"{label}: action #{k} does not replay: {e}") from None
        frames.append(dict(table_state(game, show_all), last={"action": int(a), "player": p, "text": text}))
        if game.turn != turn and not game.is_over:
            turn_starts.append(len(frames) - 1)
    if len(actions) in annotations:
        notes[str(len(actions))] = _annotation(game, annotations[len(actions)], [])
    names = record.get("names")
    if not (isinstance(names, list) and len(names) == game.num_players):
        names = [f"Player {p}" for p in range(game.num_players)]
    return {"label": label, "names": [str(x) for x in names], "static": static_data(game.side),
            "frames": frames, "turn_starts": turn_starts, "annotations": notes,
            "config": {"num_players": game.num_players, "side": game.side, "spirits": game.spirits,
                       "seed": record["seed"], "actions": len(actions)}}


def _annotation(game: Game, ann: Mapping[str, Any], rest: list[int]) -> dict[str, Any]:
    cands = []
    for c in ann.get("candidates") or []:
        plan = [int(x) for x in c.get("plan", [])]
        value = c.get("value")
        visits = c.get("visits")
        cands.append({"value": float(value) if isinstance(value, (int, float)) else None,
                      "visits": int(visits) if isinstance(visits, int) else None,
                      "words": _describe_plan(game, plan),
                      "played": bool(plan) and list(rest[: len(plan)]) == plan})
    return {"note": str(ann.get("note", "")), "candidates": cands}


def _json_for_script(obj: Any) -> str:
    """JSON safe to inline in a <script> element (no '</script>' or '<!--' can appear)."""
    return json.dumps(obj, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")


def render_html(games: list[dict], title: str = "Harmonies replay") -> str:
    """The self-contained viewer page for one or more built games (see `build_game`)."""
    page = static_text("replay.html")
    return (page.replace("__TITLE__", html.escape(title))
            .replace("/*__CSS__*/", static_text("harmonies.css"))
            .replace("/*__JS__*/", static_text("harmonies.js") + "\n" + static_text("replay.js"))
            .replace("__DATA__", _json_for_script({"games": games})))


def write_replay(source: str | Path, out: str | Path, limit: int = 50, progress: bool = False) -> tuple[Path, int]:
    """Build the viewer for a record file or folder and write it atomically; returns (path, games drawn)."""
    from tqdm import tqdm

    recs = load_records(source)
    if limit < 1:
        raise ValueError(f"--limit must be at least 1, got {limit}")
    todo = recs[:limit]
    games = [build_game(r, label) for label, r in tqdm(todo, desc="replaying", leave=False,
                                                        disable=not progress or len(todo) < 2)]
    title = f"Harmonies replay - {Path(source).name}"
    return write_text_atomic(out, render_html(games, title)), len(games)


def cmd_replay(args: argparse.Namespace) -> int:
    src = Path(args.record)
    out = args.html or (src / "replay.html" if src.is_dir() else src.with_suffix(".html"))
    total = len(load_records(args.record))
    path, n = write_replay(args.record, out, args.limit, progress=True)
    more = f" (first {n} of {total} records; raise --limit for more)" if total > n else ""
    print(f"wrote {path}: {n} game{'s' if n != 1 else ''}{more}; open it in a browser (no server needed)")
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `harmonies replay` on the CLI's subparsers."""
    p = sub.add_parser("replay", help="write a self-contained HTML replay viewer for game records",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("record", help="a game record (.json from Game.to_json()) or a folder of them "
                                  "(e.g. from `harmonies tournament --save-games DIR`)")
    p.add_argument("--html", default=None, help="output HTML file (default: RECORD with .html, or DIR/replay.html)")
    p.add_argument("--limit", type=int, default=50, help="most games from a folder put in one page")
    p.set_defaults(func=cmd_replay)
    return p


__all__ = ["build_game", "render_html", "write_replay", "load_records", "is_record", "add_parser"]
