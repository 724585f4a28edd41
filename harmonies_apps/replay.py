"""`harmonies replay`: turn game records into one self-contained HTML replay viewer.

    harmonies replay game.json --html game.html
    harmonies replay results/games/ --html games.html      (a folder of records, e.g. tournament --save-games)

A record is what `Game.record()` / `Game.to_json()` writes: {"version", "num_players", "side", "spirits",
"seed", "actions"}. Two optional keys are drawn when present:

- "names": one label per seat (the tournament writes the agent specs here);
- "annotations": a list of {"ply": k, "candidates": [{"plan": [action, ...], "value": float, "visits": int
  (optional)}, ...], "note": str (optional)}, an agent's candidate plans and their values at the decision before
  action k (k counts the record's actions from 0). The viewer lists them on that frame, in words, and marks the
  plan that was played. `tournament --save-games` adds them for search agents (see `annotate`). A malformed
  annotation is refused (`check_annotations`: ValueError naming the annotation, its ply and what is wrong), never
  skipped: a page that silently dropped one would show a game as annotated when it is not.

Frames are computed here, in Python, by replaying the record (`Game.replay` semantics: one frame per
micro-action); each frame holds only the public table at that moment (see `table.table_state`), so nothing
later in the game (future draws) shows early. The HTML has no network access and needs no server: CSS, the
drawing JS (`static/harmonies.js`, shared with `harmonies serve`) and the frames are inlined.
"""
from __future__ import annotations

import argparse
import html
import json
import math
from pathlib import Path
from typing import Any, Mapping

from harmonies_env.actions import NUM_ACTIONS
from harmonies_env.game import Game, IllegalActionError, check_record
from harmonies_env.validate import parse_json

from .table import static_data, static_text, table_state, write_text_atomic

REQUIRED = ("num_players", "side", "spirits", "seed", "actions")
#: Most candidates one annotation may list, and most actions in one candidate plan (a turn has at most 48).
MAX_ANNOTATION_CANDIDATES = 64
MAX_ANNOTATION_PLAN = 64


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
            obj = parse_json(f.read_bytes(), str(f))
            if is_record(obj):
                out.append((f.stem, obj))
        if not out:
            raise ValueError(f"{p} holds no game records (*.json with {', '.join(REQUIRED)})")
        return out
    if not p.exists():
        raise ValueError(f"{p} does not exist")
    obj = parse_json(p.read_bytes(), str(p))
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
        check_record(record)  # every key, a known version, a concrete seed, integer actions
        annotations = check_annotations(record.get("annotations"), len(record["actions"]))
        game = Game(record["num_players"], record["side"], record["spirits"], record["seed"],
                    river_loops=record.get("river_loops"))
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None
    actions = list(record["actions"])
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
    return {"label": label, "names": [str(x) for x in names], "static": static_data(game.config),
            "frames": frames, "turn_starts": turn_starts, "annotations": notes,
            "config": {"num_players": game.num_players, "side": game.side, "spirits": game.spirits,
                       "seed": record["seed"], "actions": len(actions)}}


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _annotation_problem(ann: Any, plies: int) -> str | None:
    """What is wrong with one annotation of a record with `plies` actions (None: nothing)."""
    if not isinstance(ann, Mapping):
        return f"must be an object {{'ply', 'candidates', 'note'}}, got {type(ann).__name__}"
    extra = set(ann) - {"ply", "candidates", "note"}
    if extra:
        return f"has unknown keys {sorted(map(str, extra))} (known: ply, candidates, note)"
    if not (_is_int(ann.get("ply")) and 0 <= ann["ply"] <= plies):
        return f"needs an integer 'ply' in 0..{plies}"
    if not isinstance(ann.get("note", ""), str):
        return "'note' must be a string"
    cands = ann.get("candidates")
    if cands is None:
        return None
    if not isinstance(cands, list) or len(cands) > MAX_ANNOTATION_CANDIDATES:
        return f"'candidates' must be a list of at most {MAX_ANNOTATION_CANDIDATES} candidates"
    for j, c in enumerate(cands):
        what = f"candidate #{j}"
        if not isinstance(c, Mapping):
            return f"{what} must be an object {{'plan', 'value', 'visits'}}, got {type(c).__name__}"
        extra = set(c) - {"plan", "value", "visits"}
        if extra:
            return f"{what} has unknown keys {sorted(map(str, extra))} (known: plan, value, visits)"
        plan = c.get("plan", [])
        if not (isinstance(plan, list) and len(plan) <= MAX_ANNOTATION_PLAN
                and all(_is_int(a) and 0 <= a < NUM_ACTIONS for a in plan)):
            return (f"{what}: 'plan' must be a list of at most {MAX_ANNOTATION_PLAN} actions, integers "
                    f"0..{NUM_ACTIONS - 1}")
        value = c.get("value")
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                      and math.isfinite(value)):
            return f"{what}: 'value' must be a finite number or null"
        visits = c.get("visits")
        if visits is not None and not (_is_int(visits) and visits >= 0):
            return f"{what}: 'visits' must be a whole number >= 0 or null"
    return None


def check_annotations(annotations: Any, plies: int) -> dict[int, dict]:
    """A record's optional "annotations" (None or a list), validated, by ply; ValueError naming the annotation, its
    ply and what is wrong (see the module docstring and docs/web.md for the form). At most one per ply."""
    if annotations is None:
        return {}
    if not isinstance(annotations, list):
        raise ValueError(f"annotations must be a list, got {type(annotations).__name__}")
    out: dict[int, dict] = {}
    for k, ann in enumerate(annotations):
        problem = _annotation_problem(ann, plies)
        ply = ann.get("ply") if isinstance(ann, Mapping) and _is_int(ann.get("ply")) else None
        if ply is not None and not 0 <= ply <= plies:
            ply = None  # the problem is the ply itself
        where = f"annotation #{k}" + (f" (ply {ply})" if ply is not None else "")
        if problem is None and ply in out:
            problem = "is the second annotation of that ply"
        if problem:
            raise ValueError(f"{where} {problem}")
        out[ply] = dict(ann)
    return out


def _annotation(game: Game, ann: Mapping[str, Any], rest: list[int]) -> dict[str, Any]:
    """The viewer's form of one annotation (checked by `check_annotations`): candidates in words, the played one
    marked."""
    cands = []
    for c in ann.get("candidates") or []:
        plan = list(c.get("plan", []))
        value = c.get("value")
        visits = c.get("visits")
        cands.append({"value": None if value is None else float(value),
                      "visits": visits,
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


__all__ = ["build_game", "check_annotations", "render_html", "write_replay", "load_records", "is_record",
           "add_parser"]
