"""The engine's whole-plan (macro-action) stepper, `batch.play_plan` / `batch.play_plans`: a plan is the same
sequence of `rules.step` calls as playing its micro-actions one by one; a refused action stops the plan with its
error code and leaves the state as after the actions before it; rows that are inactive or over are left alone; the
result does not depend on the thread count."""
from __future__ import annotations

import numpy as np

from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN, plan_turn
from harmonies_env import actions as A
from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.batch import init_batch, play_plan, play_plans
from harmonies_env.config import GameConfig

K = 3


def _positions(n: int, turns: int) -> np.ndarray:
    """n games (2 players, Side A), each played `turns` or more whole greedy turns from its seed."""
    states = np.zeros((n, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    init_batch(states, seeds=np.arange(n) + 11, config=GameConfig(2, "A"))
    plans = np.zeros((1, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(1, dtype=np.int64)
    vals = np.zeros(1, dtype=np.float64)
    for r in range(n):
        for _ in range(turns + r % 3):
            plan_turn(states[r], DEFAULT_WEIGHTS, 8, plans, lens, vals)
            for a in plans[0, : lens[0]]:
                assert rules.step(states[r], int(a)) == 0
    return states


def _candidates(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    plans = np.zeros((len(states), K, MAX_PLAN), dtype=np.int64)
    lens = np.zeros((len(states), K), dtype=np.int64)
    vals = np.zeros(K, dtype=np.float64)
    for r in range(len(states)):
        assert plan_turn(states[r], DEFAULT_WEIGHTS, 8, plans[r], lens[r], vals) == K
    return plans, lens


def test_plans_play_as_their_micro_actions_for_any_thread_count():
    states = _positions(24, 2)
    plans, lens = _candidates(states)
    choice = np.arange(24, dtype=np.int64) % K
    active = np.ones(24, dtype=bool)
    active[5] = False
    want = states.copy()
    for r in range(24):
        if active[r]:
            for a in plans[r, choice[r], : lens[r, choice[r]]]:
                assert rules.step(want[r], int(a)) == 0
    for threads in (1, 2):
        got = states.copy()
        errors = play_plans(got, active, plans, lens, choice, num_threads=threads, min_rows=1)
        assert np.array_equal(got, want) and not errors.any()
    assert np.array_equal(got[5], states[5])  # inactive row untouched
    assert (got[active, S.TURN] == states[active, S.TURN] + 1).all()  # END_TURN was played: the turn passed


def test_before_end_leaves_the_afterstate_and_a_refused_action_stops_the_plan():
    s0 = _positions(1, 3)[0]
    plans, lens = _candidates(s0[None])
    plan, n = plans[0, 0], int(lens[0, 0])
    assert plan[n - 1] == A.END_TURN
    after = s0.copy()
    assert play_plan(after, plan, n, True) == 0
    want = s0.copy()
    for a in plan[: n - 1]:
        rules.step(want, int(a))
    assert np.array_equal(after, want) and after[S.CURRENT] == s0[S.CURRENT]
    # a plan whose second action is refused (its tokens are taken again): stopped there, the first one stays played
    bad = plan.copy()
    bad[1] = bad[0]
    t = s0.copy()
    err = play_plan(t, bad, n)
    assert err != 0 and rules.ERRORS[err] == "tokens were already taken from the central board this turn"
    once = s0.copy()
    rules.step(once, int(plan[0]))
    assert np.array_equal(t, once)


def test_finished_games_are_skipped():
    states = _positions(2, 1)
    plans, lens = _candidates(states)
    states[1, S.GAME_OVER] = 1
    before = states.copy()
    errors = play_plans(states, np.ones(2, dtype=bool), plans, lens, np.zeros(2, dtype=np.int64))
    assert np.array_equal(states[1], before[1]) and not np.array_equal(states[0], before[0])
    assert errors.tolist() == [0, 0]
