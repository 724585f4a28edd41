"""Decision times of the learned agents (`learned`, the n-tuple network, and its variants): one JSON line per case
(results in benchmarks/RESULTS.md). Each case is named after the spec it times; the flagship's self-play is
`benchmarks.bench_selfplay`, the MLP baseline's cases are `benchmarks.bench_mlp`.

    python -m benchmarks.bench_learned --cases learned_decision learned_win_decision learned_search_decision

Cases: `SPEC_decision` (`learned_decision` times `learned`): the agent deciding a turn with its checkpoint's play
settings, ms per decision (wall and the thread's CPU time): `learned` (the shipped n-tuple network), `learned-win`,
`learned-search` (the shipped default) and `learned-search:8it:root6` (issue 48's choice). The line names the spec it
timed (`agent`). The MLP's cases, which this module ran before issue 35 (`selfplay`, `train`,
`iteration`, `mlp_decision`, `mlp_search_decision`), still run when named here, with a one-line note, for one
release: they are `benchmarks.bench_mlp`'s now.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

#: The decision-time cases: case -> (agent spec, games of 2 players, Side A, seeds 0..games-1).
DECISIONS = {"learned_decision": ("learned", 4), "learned_win_decision": ("learned-win", 4),
             "learned_search_decision": ("learned-search", 4),
             "learned_search_root6_decision": ("learned-search:8it:root6", 4)}
#: The MLP's cases this module ran before issue 35 -> their name in `benchmarks.bench_mlp` (one release).
MOVED = {"selfplay": "selfplay_mlp", "train": "train_mlp", "iteration": "iteration_mlp",
         "mlp_decision": "mlp_decision", "mlp_search_decision": "mlp_search_decision"}


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--cases", nargs="*", default=list(DECISIONS), choices=[*DECISIONS, *MOVED])
    ap.add_argument("--config", default=None, help="(the moved MLP trainer cases only) bench_mlp's --config")
    ap.add_argument("--threads", type=int, default=None, help="(the moved MLP trainer cases only) bench_mlp's")
    ap.add_argument("--seconds", type=float, default=None, help="(the moved MLP trainer cases only) bench_mlp's")
    args = ap.parse_args(argv)
    moved = [c for c in args.cases if c in MOVED]
    if moved:
        print(f"note: {', '.join(moved)} are benchmarks.bench_mlp's cases now ("
              f"{', '.join(MOVED[c] for c in moved)}); this name works until the next release", file=sys.stderr)
        from . import bench_mlp

        extra = [opt for key, opt in (("config", "--config"), ("threads", "--threads"), ("seconds", "--seconds"))
                 for opt in ((opt, str(getattr(args, key))) if getattr(args, key) is not None else ())]
        bench_mlp.main(["--cases", *(MOVED[c] for c in moved), *extra])
    for case, (spec, games) in DECISIONS.items():
        if case in args.cases:
            print(json.dumps(decision_line(case, spec, games)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
