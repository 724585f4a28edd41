"""What the decision-time benchmarks share (`benchmarks.bench_learned`, `benchmarks.bench_mlp`): one agent deciding
every turn of a few games, timed per decision, as one JSON line."""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np


def decision_line(case: str, spec: str, games: int) -> dict[str, Any]:
    """The JSON line of case `case`: agent `spec` deciding every turn of `games` 2-player Side A games (seeds 0..),
    timed per decision (the first two, which compile, left out): wall time, and the thread's CPU time, which the
    machine's load does not inflate."""
    from agents import make_agent
    from agents.base import private_copy
    from harmonies_env import Game, GameConfig
    from harmonies_env.view import PlayerView

    agent = make_agent(spec)
    times, cpu = [], []
    for seed in range(games):
        g = Game(seed=seed, config=GameConfig(2, "A"))
        while not g.is_over:
            view = PlayerView(g, g.current_player)
            t0, c0 = time.perf_counter(), time.thread_time()
            plan = agent.choose_plan(view, private_copy(view, 0))
            times.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
            for a in plan:
                g.step(a)
    t, c = np.array(times[2:]), np.array(cpu[2:])  # the first decisions include compilation
    return {"case": case, "agent": spec, "decisions": len(t), "mean_ms": round(1000 * t.mean(), 1),
            "median_ms": round(1000 * float(np.median(t)), 1), "p95_ms": round(1000 * np.percentile(t, 95), 1),
            "max_ms": round(1000 * t.max(), 1), "cpu_mean_ms": round(1000 * c.mean(), 1),
            "cpu_p95_ms": round(1000 * np.percentile(c, 95), 1), "cpu_max_ms": round(1000 * c.max(), 1),
            "load1": round(os.getloadavg()[0], 2)}
