"""Agents' candidate plans as game-record annotations, for the replay viewer's overlay.

Why here and not in the agents: an annotation is a presentation of what a search agent already computes. Any agent
with a public `search(view) -> (plans, visits, means)` method (`agents.MCTSAgent`) can be watched: `watch(agent)`
wraps that method on the instance (it returns exactly what the search returned, so play is unchanged) and logs the
candidates of the first search of each turn. `annotations(record, logs)` turns the logs into the record's optional
"annotations" list (see `harmonies_apps.replay`): one entry per searched turn, at the ply where the turn began.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from harmonies_env.game import Game

MAX_CANDIDATES = 8  # the best few by value are enough to read; MCTS considers 16


class CandidateLog:
    """The candidates an agent's search returned, keyed by the turn (round, seat) it searched in."""

    def __init__(self) -> None:
        self.turns: dict[tuple[int, int], list[dict[str, Any]]] = {}

    def add(self, round_: int, seat: int, plans: Sequence[Sequence[int]], visits: Any, means: Any) -> None:
        key = (int(round_), int(seat))
        if key in self.turns:  # a second search in the same turn (a re-plan): the first one decided the turn
            return
        # a value that is not finite is written as null: records are strict JSON, and the viewer refuses NaN
        rows = [{"plan": [int(a) for a in p], "value": round(float(m), 4) if math.isfinite(m) else None,
                 "visits": int(v)} for p, v, m in zip(plans, visits, means)]
        rows.sort(key=lambda r: (r["visits"] == 0, -(r["value"] if r["value"] is not None else -math.inf)))
        self.turns[key] = rows[:MAX_CANDIDATES]


def watch(agent: Any) -> CandidateLog | None:
    """Log the candidates of `agent`'s searches; None (agent untouched) if it has no `search(view)`."""
    search = getattr(agent, "search", None)
    if not callable(search):
        return None
    log = CandidateLog()

    def logged_search(view: Any, *args: Any, **kwargs: Any):
        out = search(view, *args, **kwargs)
        plans, visits, means = out
        log.add(view.round, view.player, plans, visits, means)
        return out

    agent.search = logged_search
    return log


def annotations(record: dict, logs: Sequence[CandidateLog | None]) -> list[dict[str, Any]]:
    """The record's "annotations": for each logged turn, {"ply": first action of the turn, "candidates", "note"}.

    logs[p] is seat p's log (None for seats not watched). Turns are found by replaying the record.
    """
    g = Game(record["num_players"], record["side"], record["spirits"], record["seed"],
             river_loops=record.get("river_loops"))
    starts = {(g.round, g.current_player): 0}
    for k, a in enumerate(record["actions"]):
        turn = g.turn
        g.step(a)
        if g.turn != turn and not g.is_over:
            starts[(g.round, g.current_player)] = k + 1
    out = []
    for seat, log in enumerate(logs):
        if log is None:
            continue
        for (round_, p), rows in log.turns.items():
            if p == seat and (round_, p) in starts and rows:
                out.append({"ply": starts[(round_, p)], "candidates": rows,
                            "note": f"seat {seat}: search candidates, value = mean rollout value"})
    return sorted(out, key=lambda e: e["ply"])


__all__ = ["watch", "annotations", "CandidateLog"]
