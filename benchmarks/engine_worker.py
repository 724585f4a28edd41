"""One engine in its own process, for `bench_engine --against`: imports `harmonies_env` from the checkout named on
its command line (never the installed one), then plays the random games it is asked for on one core and answers
with the thread CPU time they took.

    python benchmarks/engine_worker.py ROOT

Run by path, not as a module: it imports nothing of this project before ROOT is first on sys.path. It reads JSON
lines on stdin, ``{"kind", "players", "side", "spirits", "seed", "games"}`` (side 0 = A, 1 = B; kind "random":
`rules.random_games`, "rollout": `batch.rollout_batch` on `games` fresh states in the calling thread, "mcts":
`games` 2-player games where seat 0 is `mcts:200it` and seat 1 plays at random), or ``{"core": N}`` to pin itself
to core N, and writes one JSON line per request: ``{"actions", "cpu_s", "games"}`` (the actions played, or for
"mcts" a checksum of its choices; or ``{"pinned"}``). Its first line says which `harmonies_env` it imported. numba's
cache is whatever NUMBA_CACHE_DIR the parent gave it.
"""
from __future__ import annotations

import json
import os
import sys
import time


def play(ask: dict) -> tuple[int, float]:
    """Play what `ask` names; (actions or checksum, thread CPU seconds)."""
    from harmonies_env import rules  # noqa: PLC0415 (only once ROOT leads sys.path)

    kind, games, seed = ask.get("kind", "random"), int(ask["games"]), int(ask["seed"])
    if kind == "random":
        t = time.thread_time()
        actions = rules.random_games(int(ask["players"]), int(ask["side"]), int(ask["spirits"]), seed, games)
        return int(actions), time.thread_time() - t
    import numpy as np  # noqa: PLC0415

    from harmonies_env import state as S  # noqa: PLC0415
    from harmonies_env.batch import init_batch, rollout_batch  # noqa: PLC0415
    from harmonies_env.config import GameConfig  # noqa: PLC0415

    config = GameConfig(num_players=int(ask["players"]), side="AB"[int(ask["side"])], spirits=bool(ask["spirits"]))
    if kind == "rollout":
        states = np.zeros((games, S.STATE_SIZE), dtype=getattr(S, "STATE_DTYPE", np.int64))  # (older engines: int64)
        seeds = np.arange(seed, seed + games, dtype=np.int64)
        init_batch(states, seeds=seeds, config=config)
        t = time.thread_time()
        steps = rollout_batch(states, seeds, inplace=True).steps
        return int(steps.sum()), time.thread_time() - t
    if kind == "mcts":
        from agents import MCTSAgent  # noqa: PLC0415
        from harmonies_env import Game  # noqa: PLC0415
        from harmonies_env.view import PlayerView  # noqa: PLC0415

        checksum = 0
        cpu = 0.0
        for k in range(games):
            g = Game(seed=seed + k, config=config)
            agent = MCTSAgent(iterations=200, seed=seed + k)
            rng = np.random.default_rng(seed + k)
            while not g.is_over:
                if g.current_player == 0:
                    t = time.thread_time()
                    a = agent.act(PlayerView(g, 0))
                    cpu += time.thread_time() - t
                    checksum = (checksum * 31 + a + 1) % (1 << 61)
                else:
                    legal = g.legal_actions()
                    a = legal[rng.integers(len(legal))]
                g.step(a)
        return checksum, cpu
    raise ValueError(f"unknown kind {kind!r}")


def main() -> int:
    root = os.path.abspath(sys.argv[1])
    sys.path.insert(0, root)
    import harmonies_env  # noqa: PLC0415, F401 (only once ROOT leads sys.path)

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
        actions, cpu = play(ask)
        print(json.dumps({"actions": actions, "cpu_s": cpu, "games": int(ask["games"])}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
