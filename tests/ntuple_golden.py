"""The golden fixture tests/data/ntuple_golden.npz: what the n-tuple learner's self-play gave before issue 37 made it
fast, so a test can check the faster code still gives exactly that: every candidate plan and value of
`ntuple.candidate_values` (random weights; 8 plans at beam 2, and the shipped 128 at beam 24) on positions of
2-4 players, solo, both sides, with and without Spirits, and a tiny training run's weights (the tiny config,
expert iteration, the win head and the greedy seats included).

    python tests/ntuple_golden.py tests/data/ntuple_golden.npz    # from a checkout: writes the fixture
"""
from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents import ntuple as N  # noqa: E402
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN, plan_turn  # noqa: E402
from experiments.common import read_toml  # noqa: E402
from experiments.evaluators.ntuple import settings  # noqa: E402
from experiments.selfplay_command import build  # noqa: E402
from harmonies_env import state as S  # noqa: E402
from harmonies_env.batch import play_plan  # noqa: E402

#: (candidates, beam) settings the fixture covers.
SETTINGS = ((8, 2), (128, 24))
#: Iterations of the tiny run (seed 3).
TRAIN_STEPS = 60


def positions() -> np.ndarray:
    """Positions (before the mover's turn) of games the greedy planner (beam 3) played with random choices."""
    rng = np.random.default_rng(37)
    plans = np.zeros((4, MAX_PLAN), np.int64)
    lens = np.zeros(4, np.int64)
    vals = np.zeros(4)
    out = []
    for i, (n, side, spirits) in enumerate([(2, 0, 0), (2, 0, 0), (2, 0, 0), (3, 1, 0), (4, 0, 1), (2, 1, 1),
                                            (1, 0, 0), (2, 0, 0), (3, 0, 0), (2, 1, 0), (4, 1, 1), (2, 0, 1)]):
        s = np.zeros(S.STATE_SIZE, S.STATE_DTYPE)
        S.init_state(s, n, side, spirits, 9000 + i)
        for _ in range(int(rng.integers(0, 22))):
            m = plan_turn(s, DEFAULT_WEIGHTS, 3, plans, lens, vals)
            if s[S.GAME_OVER] or m == 0:
                break
            c = int(rng.integers(m))
            play_plan(s, plans[c], lens[c])
        if not s[S.GAME_OVER]:
            out.append(s)
    return np.array(out)


def weights() -> np.ndarray:
    return np.random.default_rng(7).normal(scale=0.05, size=N.LAYOUT_WEIGHTS[2]).astype(np.float32)


def plans_digest(plans: np.ndarray, lens: np.ndarray, n: int) -> str:
    h = hashlib.sha256()
    for k in range(n):
        h.update(plans[k, : lens[k]].astype("<i8").tobytes())
    return h.hexdigest()


def candidates(pos: np.ndarray, w: np.ndarray, K: int, beam: int) -> tuple[np.ndarray, np.ndarray]:
    """Each position's candidate values (NaN-padded to K) and the digest of its candidate plans."""
    P = np.zeros((K, MAX_PLAN), np.int64)
    L = np.zeros(K, np.int64)
    PV = np.zeros(K)
    V = np.zeros(K)
    A = np.zeros(S.STATE_SIZE, S.STATE_DTYPE)
    vals = np.full((len(pos), K), np.nan)
    digests = []
    for i, s in enumerate(pos):
        n = N.candidate_values(s.copy(), w, DEFAULT_WEIGHTS, beam, P, L, PV, V, A)
        vals[i, :n] = V[:n]
        digests.append(plans_digest(P, L, n))
    return vals, np.array(digests)


def tiny_run() -> tuple[np.ndarray, np.ndarray]:
    """The tiny config's first TRAIN_STEPS iterations (seed 3): SHA-256 of the points and win heads' weights, and
    (games, decisions, searched)."""
    cfg = settings(read_toml(ROOT / "experiments" / "configs" / "learned_tiny.toml"))
    with tempfile.TemporaryDirectory() as tmp:
        tr = build("learned", cfg, seed=3, run=Path(tmp), progress=False)
        for _ in range(TRAIN_STEPS):
            tr.step()
        ev = tr.evaluator
        return (np.array([hashlib.sha256(ev.w.tobytes()).hexdigest(), hashlib.sha256(ev.wwin.tobytes()).hexdigest()]),
                np.array([tr.games_done, tr.decisions, tr.searched]))


def golden() -> dict[str, np.ndarray]:
    pos = positions()
    out = {"pos": pos}
    for K, beam in SETTINGS:
        out[f"values_{K}_{beam}"], out[f"plans_{K}_{beam}"] = candidates(pos, weights(), K, beam)
    out["trainer_w"], out["trainer_counts"] = tiny_run()
    return out


if __name__ == "__main__":
    np.savez_compressed(sys.argv[1], **golden())
