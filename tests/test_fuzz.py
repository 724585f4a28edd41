"""Seeded property tests (hypothesis, derandomized) of the inputs issue 47 fuzzed: OpenSpiel actions and serialised
states, explicit chance, records, PettingZoo copies and vector-env actions. Each: no crash, no hang (every loop is
bounded), a refusal is the documented exception with the state unchanged, and what is accepted stays a valid state.
`tests/hostile_state_fuzz.py` (run by test_hostile.py in a subprocess) fuzzes edited state vectors; these do not
repeat it. Each test takes a few seconds."""
from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonies_env.config import GameConfig
from harmonies_env.env_aec import raw_env
from harmonies_env.game import Game, IllegalActionError
from harmonies_env.validate import check_state
from harmonies_env.vector import SoloVectorEnv

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
# an action: None = a legal one, else an id in or around the action and chance-outcome ranges, or a wild value
actions = st.one_of(st.none(), st.none(), st.integers(-3, 300), st.sampled_from([-(2**62), 2**31, 2**62]))


# ---- OpenSpiel ------------------------------------------------------------------------------------------------
def _openspiel_game(players: int, spirits: bool):
    pyspiel = pytest.importorskip("pyspiel", reason='the optional openspiel extra: pip install -e ".[openspiel]"')
    import harmonies_env.openspiel  # noqa: F401  (registers python_harmonies)

    return pyspiel.load_game("python_harmonies", {"players": players, "spirits": spirits,
                                                  "returns": "points" if players == 1 else "win"})


def _legal(state, rng: np.random.Generator) -> int:
    if state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        return int(rng.choice(outcomes, p=probs))
    legal = state.legal_actions()
    return int(legal[int(rng.integers(len(legal)))])


def _check(g: Game) -> None:
    """A valid position (check_state holds between random events: a pending chance node is half dealt)."""
    if not g.is_chance_node():
        check_state(g.state.copy())  # writable, as Game.from_state passes it (no read-only compile)


def _openspiel_snapshot(state) -> tuple:
    g = state.game_obj
    return (state.history(), list(state.private_to), state.move_number(), g.state.tobytes(), g._chance.tobytes(),
            list(g.history), g.seed)


@FUZZ
@given(players=st.sampled_from([1, 2, 3]), spirits=st.booleans(), seed=st.integers(0, 2**16),
       moves=st.lists(actions, min_size=1, max_size=80))
def test_openspiel_actions_refused_or_played(players, spirits, seed, moves):
    game = _openspiel_game(players, spirits)
    state = game.new_initial_state()
    rng = np.random.default_rng(seed)
    for a in moves:
        if state.is_terminal():
            break
        if a is None:
            state.apply_action(_legal(state, rng))
            continue
        before = _openspiel_snapshot(state)  # (test_openspiel.py compares every string after refusals)
        try:
            state.apply_action(a)
        except Exception as e:  # noqa: BLE001 - ValueError from the engine, SpielError from OpenSpiel's C++
            assert type(e).__name__ in ("ValueError", "IllegalActionError", "SpielError", "TypeError"), repr(e)
            assert _openspiel_snapshot(state) == before
    replay = game.new_initial_state()
    for a in state.history():
        replay.apply_action(a)
    assert _openspiel_snapshot(replay)[:5] == _openspiel_snapshot(state)[:5]
    _check(state.game_obj)


lines = st.one_of(st.integers(-3, 300).map(str), st.sampled_from(["", "x", "1.5", "-", "9" * 25, "history=-1:28",
                                                                  "move_number=1", "__dict__=gASV"]))


@FUZZ
@given(spirits=st.booleans(), seed=st.integers(0, 2**16), steps=st.integers(0, 60),
       edits=st.lists(st.tuples(st.sampled_from(["set", "insert", "delete"]), st.integers(0, 10**4), lines),
                      max_size=4))
def test_openspiel_serialized_states_replay_or_are_refused(spirits, seed, steps, edits):
    game = _openspiel_game(2, spirits)
    state = game.new_initial_state()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if state.is_terminal():
            break
        state.apply_action(_legal(state, rng))
    text = state.serialize()
    assert game.deserialize_state(text).history() == state.history()
    rows = text.splitlines()
    for kind, at, line in edits:
        k = at % (len(rows) + 1)
        if kind == "insert" or not rows:
            rows.insert(k, line)
        elif kind == "set":
            rows[k % len(rows)] = line
        else:
            del rows[k % len(rows)]
    try:
        again = game.deserialize_state("\n".join(rows))
    except ValueError as e:
        assert "serialized state" in str(e)
        return
    assert again.history() == [int(r) for r in rows if r.strip()]
    _check(again.game_obj)


# ---- explicit chance --------------------------------------------------------------------------------------------
@FUZZ
@given(players=st.sampled_from([1, 2, 4]), spirits=st.booleans(), seed=st.integers(0, 2**16),
       ops=st.lists(st.tuples(st.sampled_from(["chance", "step", "sample", "legal"]), st.integers(-3, 300)),
                    min_size=1, max_size=120))
def test_explicit_chance_refused_or_applied(players, spirits, seed, ops):
    g = Game(players, "A", spirits, seed=seed, explicit_chance=True)
    rng = np.random.default_rng(seed)
    for kind, x in ops:
        if g.is_over:
            break
        if kind == "legal":
            if g.is_chance_node():
                outcomes, probs = zip(*g.chance_outcomes())
                g.apply_chance(int(rng.choice(outcomes, p=probs)))
            else:
                la = g.legal_actions()
                g.step(la[int(rng.integers(len(la)))])
            continue
        before = (g.state.tobytes(), g._chance.tobytes(), list(g.history), g.seed)
        try:
            if kind == "chance":
                g.apply_chance(x)
            elif kind == "step":
                g.step(x)
            else:
                g.sample_chance()
        except ValueError:  # IllegalActionError is one
            assert (g.state.tobytes(), g._chance.tobytes(), list(g.history), g.seed) == before
    _check(g)


# ---- records ----------------------------------------------------------------------------------------------------
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(),
                                     st.text(max_size=5)),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                                       max_size=3), max_leaves=8)


@FUZZ
@given(seed=st.integers(0, 2**16), steps=st.integers(0, 40),
       edits=st.lists(st.tuples(st.sampled_from(["version", "seed", "num_players", "side", "spirits", "river_loops",
                                                 "actions", "action", "extra"]), json_values, st.integers(0, 99)),
                      max_size=3), cut=st.integers(0, 3000))
def test_records_replay_or_are_refused_in_one_line(seed, steps, edits, cut):
    g = Game(2, "B", True, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        la = g.legal_actions()
        g.step(la[int(rng.integers(len(la)))])
    rec = g.record()
    assert Game.replay(rec).state.tobytes() == g.state.tobytes()
    for key, value, at in edits:
        if key == "action" and rec.get("actions"):
            rec["actions"][at % len(rec["actions"])] = value
        elif key != "action":
            rec[key] = value
    for form in (rec, json.dumps(rec)[:cut] if cut < 3000 else json.dumps(rec)):
        try:
            r = Game.replay(form)
        except ValueError as e:
            assert "\n" not in str(e)
        else:
            check_state(r.state)


# ---- PettingZoo copies ------------------------------------------------------------------------------------------
@FUZZ
@given(seed=st.integers(0, 2**16), before=st.integers(0, 40), after=st.lists(actions, max_size=30),
       how=st.sampled_from(["deepcopy", "pickle"]))
def test_pettingzoo_copies_go_on_exactly_as_the_original(seed, before, after, how):
    env = raw_env(num_players=2, spirits=True)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(before):
        if not env.agents:
            break
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    twin = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    for a in after:
        if not env.agents:
            break
        agent = env.agent_selection
        assert twin.agent_selection == agent
        if env.terminations[agent] or env.truncations[agent]:
            a = None
        elif a is None:
            a = int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"])))
        outcomes = []
        for e in (env, twin):
            try:
                e.step(a)
                outcomes.append("ok")
            except IllegalActionError as err:
                outcomes.append(str(err))
        assert outcomes[0] == outcomes[1]
        for ag in env.possible_agents:
            o1, o2 = env.observe(ag), twin.observe(ag)
            assert all(np.array_equal(o1[k], o2[k]) for k in o1)
        assert env.rewards == twin.rewards and env.agents == twin.agents
    assert env.game.state.tobytes() == twin.game.state.tobytes()


# ---- vector-env actions -----------------------------------------------------------------------------------------
@FUZZ
@given(seed=st.integers(0, 2**16),
       rounds=st.lists(st.tuples(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1),
                                                    st.integers(-3, 300)), min_size=3, max_size=3),
                                 st.sampled_from(["int64", "int32", "uint64", "float64", "bool"])),
                       min_size=1, max_size=40))
def test_vector_env_actions_illegal_rows_unchanged(seed, rounds):
    venv = SoloVectorEnv(3, config=GameConfig(1, "B"))
    obs, _ = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for picks, dtype in rounds:
        masks = venv.action_masks()
        acts = [int(rng.choice(np.flatnonzero(m))) if p is None else p for p, m in zip(picks, masks)]
        if dtype in ("int64", "int32", "uint64"):
            info = np.iinfo(dtype)
            arr = np.array([min(max(a, info.min), info.max) for a in acts], dtype=dtype)
        else:
            arr = np.array(acts, dtype=np.float64).astype(dtype)
        states = venv.batch.states.copy()
        try:
            new, _, term, trunc, infos = venv.step(arr)
        except ValueError as e:  # a non-integer dtype: refused whole, nothing changed
            assert dtype in ("float64", "bool") and "\n" not in str(e)
            assert np.array_equal(venv.batch.states, states)
            continue
        illegal = infos.get("_illegal_action", np.zeros(3, dtype=bool))
        for r in np.flatnonzero(illegal & ~term & ~trunc):
            assert np.array_equal(new[r], obs[r]) and np.array_equal(venv.batch.states[r], states[r])
        obs = new
    for r in range(3):
        check_state(venv.batch.states[r])
