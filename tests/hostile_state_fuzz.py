"""Worker of tests/test_hostile.py (run in a subprocess, so a crash of the process fails the test, not pytest).

A hypothesis property: take a reachable state, write random values into random fields, and hand it to every
public entry point that takes a state (`Game.from_state`, `rollout_batch`, `BatchedGames.refresh`). Each must
either raise ValueError naming a state field, or accept a state that then plays to its end without error.
Prints "valid=<n> refused=<n>" on success. Usage: python tests/hostile_state_fuzz.py [max_examples]
"""
from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonies_env import state as S
from harmonies_env.batch import BatchedGames, rollout_batch
from harmonies_env.game import Game
from harmonies_env.observation import OBS_SIZE, encode_observation

FIELD_NAMES = sorted(S.FIELDS)
COUNTS = {"valid": 0, "refused": 0}

values = st.one_of(
    st.integers(-3, 50),
    st.sampled_from([-(2**63), 2**63 - 1, -(2**62), 2**62, 10**6, -(10**9), 255, 256, 1 << 24, 1 << 25]),
    st.integers(-(2**63), 2**63 - 1),
)
edit = st.tuples(st.sampled_from(FIELD_NAMES), st.integers(0, 10**6), values, st.booleans())


def base_game(n: int, side: str, spirits: bool, seed: int, steps: int) -> Game:
    g = Game(n, side, spirits, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if g.is_over:
            break
        la = g.legal_actions()
        g.step(la[int(rng.integers(len(la)))])
    return g


def play_out(g: Game, seed: int) -> None:
    rng = np.random.default_rng(seed)
    obs = np.empty(OBS_SIZE, dtype=np.float32)
    k = 0
    while not g.is_over:
        la = g.legal_actions()
        assert la, "a validated state reached a position with no legal action"
        g.step(la[int(rng.integers(len(la)))])
        k += 1
        assert k < 20000, "a validated state did not end"
    for p in range(g.num_players):
        encode_observation(g.state, p, obs)
    g.scores()
    g.winners()


@settings(max_examples=int(sys.argv[1]) if len(sys.argv) > 1 else 200, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck), database=None)
@given(n=st.integers(1, 4), side=st.sampled_from("AB"), spirits=st.booleans(), seed=st.integers(0, 2**40),
       steps=st.integers(0, 120), edits=st.lists(edit, min_size=1, max_size=3))
def fuzz(n: int, side: str, spirits: bool, seed: int, steps: int, edits: list) -> None:
    g = base_game(n, side, spirits, seed, steps)
    s = g.state.copy()
    for name, idx, value, relative in edits:
        off, shape, _ = S.FIELDS[name]
        size = int(np.prod(shape)) if shape else 1
        i = off + idx % size
        s[i] = np.int64(np.clip(int(s[i]) + value if relative else value, -(2**63), 2**63 - 1))
    try:
        h = Game.from_state(s)
    except ValueError as e:
        assert "state field" in str(e), str(e)
        COUNTS["refused"] += 1
        try:  # the batch entry points refuse it too
            rollout_batch(s[None, :].copy(), [1])
        except ValueError as e2:
            assert "field" in str(e2), str(e2)
        else:
            raise AssertionError("rollout_batch accepted a state that Game.from_state refused")
        b = BatchedGames(1, num_players=max(2, n), seat=0, seed=1) if n > 1 else BatchedGames(1, seed=1)
        b.states[0] = s
        try:
            b.refresh()
        except ValueError as e3:
            assert "field" in str(e3) or "seat" in str(e3), str(e3)
        else:
            raise AssertionError("BatchedGames.refresh accepted a state that Game.from_state refused")
        return
    COUNTS["valid"] += 1
    rollout_batch(h.state[None, :].copy(), [seed])
    play_out(h, seed)


if __name__ == "__main__":
    fuzz()
    print(f"valid={COUNTS['valid']} refused={COUNTS['refused']}")
