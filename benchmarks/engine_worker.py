"""One engine in its own process, for `bench_engine --against`: imports `harmonies_env` from the checkout named on
its command line (never the installed one), then plays the random games it is asked for on one core and answers
with the thread CPU time they took.

    python benchmarks/engine_worker.py ROOT

Run by path, not as a module: it imports nothing of this project before ROOT is first on sys.path. It reads JSON
lines on stdin, ``{"players", "side", "spirits", "seed", "games"}`` (side 0 = A, 1 = B), or ``{"core": N}`` to pin
itself to core N, and writes one JSON line per request: ``{"actions", "cpu_s"}`` (or ``{"pinned"}``). Its first line
says which `harmonies_env` it imported. numba's cache is whatever NUMBA_CACHE_DIR the parent gave it.
"""
from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    root = os.path.abspath(sys.argv[1])
    sys.path.insert(0, root)
    from harmonies_env import rules  # noqa: PLC0415 (only once ROOT leads sys.path)

    where = os.path.abspath(sys.modules["harmonies_env"].__file__)
    if not where.startswith(root + os.sep):
        print(json.dumps({"error": f"imported harmonies_env from {where}, not from {root}"}), flush=True)
        return 1
    print(json.dumps({"harmonies_env": where}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        if "core" in ask:
            os.sched_setaffinity(0, {int(ask["core"])})
            print(json.dumps({"pinned": sorted(os.sched_getaffinity(0))}), flush=True)
            continue
        t = time.thread_time()
        actions = rules.random_games(int(ask["players"]), int(ask["side"]), int(ask["spirits"]), int(ask["seed"]),
                                     int(ask["games"]))
        cpu = time.thread_time() - t
        print(json.dumps({"actions": int(actions), "cpu_s": cpu}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
