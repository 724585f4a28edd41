"""Worker of tests/test_hostile.py (run in a subprocess, so a crash of the process fails the test, not pytest).

A hypothesis property: take a reachable state, write random values into random fields, and hand it to every
public route into a game's or a batch's state: `Game.from_state`, the `Game.state` setter / `set_state`,
`BatchedGames.set_states` / `SelfPlayBatch.set_states`, `rollout_batch`, the envs' `game.state`; and try to write
the same values in place through every public array (`Game.state`, `Game.field`, `state.field` of them,
`np.asarray`, `BatchedGames.states` / `book` / `cfg`, `BatchedGames.game(r).state`, the flag that would make them
writable). In-place writes must be refused (ValueError "read-only", nothing changed); a route that takes a state must
either raise ValueError naming a state field (the game or batch unchanged), or accept a state that then plays to
its end without error.
Prints "valid=<n> refused=<n>" on success. Usage: python tests/hostile_state_fuzz.py [max_examples]
"""
from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonies_env import state as S
from harmonies_env.batch import BatchedGames, SelfPlayBatch, rollout_batch
from harmonies_env.config import GameConfig
from harmonies_env.env_aec import raw_env
from harmonies_env.env_gym import SoloEnv, VersusEnv
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
        encode_observation(g.state.copy(), p, obs)  # writable, as the envs pass it (no read-only compile)
    g.scores()
    g.winners()


def refused_in_place(arr: np.ndarray, i: int, value: int) -> None:
    """Writing `value` at flat index i of a public array (and making it writable first) must be refused."""
    before = arr.copy()
    for write in (lambda: arr.reshape(-1).__setitem__(i % arr.size, value),
                  lambda: np.asarray(arr).reshape(-1).__setitem__(i % arr.size, value),
                  lambda: setattr(arr.flags, "writeable", True)):
        try:
            write()
        except ValueError as e:
            assert "read-only" in str(e) or "WRITEABLE" in str(e), str(e)
        else:
            raise AssertionError("an in-place write into a public state array was accepted")
    assert np.array_equal(arr, before) and not arr.flags.writeable


def try_in_place(g: Game, edits: list) -> None:
    """Every in-place route into a Game's state refuses the edits; the game still plays."""
    for name, idx, value, _ in edits:
        off, shape, _ = S.FIELDS[name]
        size = int(np.prod(shape)) if shape else 1
        i = off + idx % size
        v = int(np.clip(value, -(2**31), 2**31 - 1))  # (a value the int32 state can hold: the write is what fails)
        refused_in_place(g.state, i, v)
        if shape:
            refused_in_place(g.field(name), idx % size, v)
            refused_in_place(S.field(g.state, name), idx % size, v)
    g.legal_actions()


def play_batch(b, seed: int, steps: int = 60) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        m = b.masks
        acts = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in m], dtype=np.int64)
        b.step(acts)


def try_batches(s: np.ndarray, n: int, side: str, spirits: bool, seed: int, edits: list, valid: bool) -> None:
    """`set_states` refuses exactly what `Game.from_state` refuses (the batch unchanged) or plays on; in-place writes
    into the batch's public arrays are refused."""
    batches = [BatchedGames(2, config=GameConfig(n, side, spirits), seat=None, seed=1, max_steps=0)]
    if n > 1:
        batches.append(SelfPlayBatch(2, config=GameConfig(n, side, spirits), seed=1))
    for b in batches:
        for arr in (b.states, b.book, b.cfg, b.game(1).state):
            for name, idx, value, _ in edits:
                refused_in_place(arr, S.FIELDS[name][0] + idx, int(np.clip(value, -(2**31), 2**31 - 1)))
        before = b.states.copy()
        versus = isinstance(b, BatchedGames) and n > 1
        try:
            b.set_states(s, rows=1)
        except ValueError as e:
            assert "field" in str(e), str(e)
            assert valid is False or (versus and "'current'" in str(e)), str(e)  # Versus: the learner's turn only
            assert np.array_equal(b.states, before)
        else:
            assert valid, "set_states accepted a state that Game.from_state refused"
            assert np.array_equal(b.states[1], s)
        play_batch(b, seed)


def try_envs(s: np.ndarray, n: int, side: str, spirits: bool, seed: int) -> None:
    """The envs' games take a new position only through the validating setter; they play on after it."""
    envs = [raw_env(num_players=n, side=side, spirits=spirits)] if n > 1 else []
    envs.append(SoloEnv(side=side, spirits=spirits) if n == 1 else VersusEnv(num_players=n, side=side,
                                                                             spirits=spirits))
    rng = np.random.default_rng(seed)
    for env in envs:
        env.reset(seed=seed)
        env.game.state = s  # valid: the whole game is replaced by this position
        for _ in range(40):
            try:
                if isinstance(env, raw_env):
                    if env.game.is_over:
                        break
                    env.step(int(rng.choice(env.game.legal_actions())))
                else:
                    la = env.game.legal_actions()
                    if env.game.is_over or not la:
                        break
                    env.step(int(rng.choice(la)))
            except (RuntimeError, ValueError):
                break  # e.g. Versus: it is no longer the learner's turn; a clear error, not a crash


@settings(max_examples=int(sys.argv[1]) if len(sys.argv) > 1 else 200, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck), database=None)
@given(n=st.integers(1, 4), side=st.sampled_from("AB"), spirits=st.booleans(), seed=st.integers(0, 2**40),
       steps=st.integers(0, 120), edits=st.lists(edit, min_size=1, max_size=3))
def fuzz(n: int, side: str, spirits: bool, seed: int, steps: int, edits: list) -> None:
    g = base_game(n, side, spirits, seed, steps)
    s = g.state.astype(np.int64)  # wider than the state's int32: values it cannot hold must be refused, not wrapped
    for name, idx, value, relative in edits:
        off, shape, _ = S.FIELDS[name]
        size = int(np.prod(shape)) if shape else 1
        i = off + idx % size
        s[i] = np.int64(np.clip(int(s[i]) + value if relative else value, -(2**63), 2**63 - 1))
    fits = bool(s.min() >= -(2**31) and s.max() < 2**31)
    try_in_place(g, edits)
    try:
        h = Game.from_state(s)
    except ValueError as e:
        assert "state field" in str(e) or (not fits and "does not fit" in str(e)), str(e)
        COUNTS["refused"] += 1
        before = g.state.copy()
        for route in (lambda: setattr(g, "state", s), lambda: g.set_state(s)):
            try:
                route()
            except ValueError as e1:
                assert "state field" in str(e1) or (not fits and "does not fit" in str(e1)), str(e1)
                assert np.array_equal(g.state, before)
            else:
                raise AssertionError("the Game.state setter accepted a state that Game.from_state refused")
        if fits:  # the batch entry points take int32 states, and refuse this one too
            s32 = s.astype(S.STATE_DTYPE)
            try:
                rollout_batch(s32[None, :].copy(), [1])
            except ValueError as e2:
                assert "field" in str(e2), str(e2)
            else:
                raise AssertionError("rollout_batch accepted a state that Game.from_state refused")
            try_batches(s32, n, side, spirits, seed, edits, valid=False)
        play_out(g, seed)  # the game whose state the edits were aimed at is untouched and plays on
        return
    COUNTS["valid"] += 1
    g.state = s
    assert np.array_equal(g.state, h.state)
    rollout_batch(h.state[None, :].copy(), [seed])
    if h.num_players == n and h.side == side and h.spirits == spirits:
        try_batches(s.astype(S.STATE_DTYPE), n, side, spirits, seed, edits, valid=True)
        try_envs(s, n, side, spirits, seed)
    play_out(h, seed)
    play_out(g, seed)


if __name__ == "__main__":
    fuzz()
    print(f"valid={COUNTS['valid']} refused={COUNTS['refused']}")
