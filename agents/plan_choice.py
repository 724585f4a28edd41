"""Choosing among the greedy planner's best whole-turn plans: the action space of the learned plan agent.

Why: a Harmonies turn is 5-30 micro-actions, and a policy over the flat 268-action space must learn legality,
ordering and tactics from scratch before it can compete with a planner. Here the planner
(`agents.greedy.plan_turn`, beam `PLAN_BEAM`) proposes its `PLAN_CHOICES` best whole-turn plans and a learned
policy picks one. Always picking plan 0 is the greedy planner with a wider beam than GreedyAgent's; a policy can do
better only by valuing positions better than the hand-tuned `greedy.evaluate` (for instance by weighing points
now against potential as the game's end approaches, which the fixed weights cannot).

Observation (float32 (PLAN_OBS_SIZE,)), built by `plan_observation` from public fields only (the plans are
chance-free and the features read boards, held cards, scores, the market and the pouch counts):

* `GLOBAL_FEATURES` numbers about the position (turn, both scores and greedy evaluations, empty cells, pouch,
  end trigger, seat, how many candidates exist), then
* for each candidate k (zeros where fewer than `PLAN_CHOICES` exist): its greedy value minus the best one,
  the points it gains by category, the raw potential terms after it (`greedy.potential_terms`), whether it
  takes a card, how many cubes it places, whether it brings the player's board to the end trigger, and its
  rank.

Action: the index of the chosen plan (mask: bool (PLAN_CHOICES,), True for existing candidates).

`plan_env_step` plays many such games at once against the greedy agent (the training environment, wrapped
by `PlanChoiceVecEnv` for Stable-Baselines3); `agents.ppo.PPOAgent` plays a checkpoint trained on it.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from numba import njit

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import check_threads, episode_seed, outcome, play_plan, run_rows
from harmonies_env.cards import NUM_CARDS
from harmonies_env.geometry import popcount
from harmonies_env.scoring import NUM_CATEGORIES, score_into

from .greedy import DEFAULT_WEIGHTS, MAX_PLAN, NUM_TERMS, WIDE_BEAM, evaluate, plan_turn, potential_terms

#: Candidate plans offered to the policy (the action space size).
PLAN_CHOICES = 8
#: Numbers about the whole position at the start of the observation.
GLOBAL_FEATURES = 12
#: Numbers per candidate plan.
PLAN_FEATURES = 1 + NUM_CATEGORIES + NUM_TERMS + 4
#: Length of the observation vector.
PLAN_OBS_SIZE = GLOBAL_FEATURES + PLAN_CHOICES * PLAN_FEATURES
#: Beam of the planner that proposes the candidates: much wider than the greedy agent's 24, so the candidates are
#: better plans than greedy's own (plan 0 alone beats GreedyAgent: benchmarks/STRENGTH.md).
PLAN_BEAM = WIDE_BEAM
_NC = NUM_CARDS + 1


@njit(cache=True)
def _score(s, p: int, sc) -> None:
    """p's score by category into sc: int64 (NUM_CATEGORIES,)."""
    cp = S.CUBES_PLACED + _NC * p
    score_into(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15], s[cp: cp + _NC], sc)


@njit(cache=True)
def _empty(s, p: int) -> int:
    return popcount(s[S.BITBOARD + 15 * p])


@njit(cache=True)
def plan_observation(s, w, beam: int, plans, lens, values, obs, mask) -> int:
    """Plan the mover's turn in s (not modified) and describe the candidates for the policy.

    w: float64 (NUM_TERMS,) planner weights; beam: planner beam. plans: int64 (PLAN_CHOICES, MAX_PLAN),
    lens: int64 (PLAN_CHOICES,), values: float64 (PLAN_CHOICES,) receive the candidates (best first, as
    `plan_turn`); obs: float32 (PLAN_OBS_SIZE,) and mask: bool (PLAN_CHOICES,) receive the observation.
    Returns the number of candidates.
    """
    n = plan_turn(s, w, beam, plans, lens, values)
    p = s[S.CURRENT]
    np_ = s[S.NUM_PLAYERS]
    for k in range(obs.shape[0]):
        obs[k] = 0.0
    for k in range(mask.shape[0]):
        mask[k] = k < n
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    before = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    terms = np.zeros(NUM_TERMS, dtype=np.float64)
    _score(s, p, before)
    mine = float(before[NUM_CATEGORIES - 1])
    best_other = 0.0
    best_other_eval = 0.0
    min_empty = 25.0
    for o in range(np_):
        if o == p:
            continue
        _score(s, o, sc)
        if sc[NUM_CATEGORIES - 1] > best_other:
            best_other = float(sc[NUM_CATEGORIES - 1])
        e = evaluate(s, o, w, sc)
        if e > best_other_eval:
            best_other_eval = e
        if _empty(s, o) < min_empty:
            min_empty = float(_empty(s, o))
    pouch = 0
    for c in range(6):
        pouch += s[S.POUCH + c]
    obs[0] = s[S.TURN] / 40.0
    obs[1] = mine / 100.0
    obs[2] = best_other / 100.0
    obs[3] = (mine - best_other) / 50.0
    obs[4] = evaluate(s, p, w, sc) / 100.0
    obs[5] = best_other_eval / 100.0
    obs[6] = _empty(s, p) / 25.0
    obs[7] = min_empty / 25.0 if np_ > 1 else 0.0
    obs[8] = pouch / 120.0
    obs[9] = 1.0 if s[S.END_TRIGGER] else 0.0
    obs[10] = p / max(1, np_ - 1)
    obs[11] = n / PLAN_CHOICES
    t = np.empty_like(s)
    for k in range(n):
        took_card = 0.0
        cubes = 0.0
        for j in range(lens[k]):
            a = plans[k, j]
            if a == A.END_TURN:
                break
            if A.TAKE_CARD <= a < A.PLACE_CUBE:
                took_card = 1.0
            elif A.PLACE_CUBE <= a < A.KEEP_SPIRIT:
                cubes += 1.0
        t[:] = s
        play_plan(t, plans[k], lens[k], True)  # features describe the position just before the refill (no chance)
        _score(t, p, sc)
        potential_terms(t, p, terms)
        o = GLOBAL_FEATURES + k * PLAN_FEATURES
        obs[o] = (values[k] - values[0]) / 10.0
        for c in range(NUM_CATEGORIES):
            obs[o + 1 + c] = (sc[c] - before[c]) / 10.0
        for j in range(NUM_TERMS):
            obs[o + 1 + NUM_CATEGORIES + j] = terms[j] / 10.0
        q = o + 1 + NUM_CATEGORIES + NUM_TERMS
        obs[q] = took_card
        obs[q + 1] = cubes / 3.0
        obs[q + 2] = 1.0 if _empty(t, p) <= 2 else 0.0
        obs[q + 3] = k / PLAN_CHOICES
    return n


# ---------------------------------------------------------------------------------------------------------
# Many games against the greedy agent, stepped in one call (the training environment)

#: cfg: float64 (CFG_SIZE,) shared by all rows of `plan_env_step`.
C_PLAYERS, C_SIDE, C_SPIRITS, C_BEAM, C_OPP_BEAM, C_MARGIN = range(6)
CFG_SIZE = 6
#: result: float64 (N, RESULT_SIZE), written for rows whose game ended in this call.
R_MINE, R_BEST_OTHER, R_WON, R_DECISIONS = range(4)
RESULT_SIZE = 4


@njit(cache=True)
def _greedy_until(s, seat: int, w, beam: int, plans, lens, values) -> None:
    """Every other seat plays the greedy agent's plan (weights w, beam) until `seat` is to move or the end."""
    while not s[S.GAME_OVER] and s[S.CURRENT] != seat:
        n = plan_turn(s, w, beam, plans, lens, values)
        if n == 0:  # cannot happen on a legal position
            break
        play_plan(s, plans[0], lens[0])


@njit(cache=True)
def _row(r, states, seats, book, actions, cfg, w, opp_w, plans, lens, values, obs, masks, rewards, dones,
         results) -> None:
    s = states[r]
    beam = int(cfg[C_BEAM])
    opp_plans = np.zeros((1, MAX_PLAN), dtype=np.int64)
    opp_lens = np.zeros(1, dtype=np.int64)
    opp_values = np.zeros(1, dtype=np.float64)
    rewards[r] = 0.0
    dones[r] = False
    a = actions[r]
    if a >= 0:
        play_plan(s, plans[r, a], lens[r, a])
        book[r, 2] += 1
        _greedy_until(s, seats[r], opp_w, int(cfg[C_OPP_BEAM]), opp_plans, opp_lens, opp_values)
    if a >= 0 and s[S.GAME_OVER]:
        me = seats[r]
        totals = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
        winners = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
        k = outcome(s, totals, np.zeros(NUM_CATEGORIES, dtype=np.int64), winners)
        mine = totals[me]
        best = -1
        for o in range(s[S.NUM_PLAYERS]):
            if o != me and totals[o] > best:
                best = totals[o]
        won = (1.0 if k == 1 else 0.0) if winners[me] else -1.0
        rewards[r] = won + cfg[C_MARGIN] * (mine - best)
        dones[r] = True
        results[r, R_MINE] = mine
        results[r, R_BEST_OTHER] = best
        results[r, R_WON] = won
        results[r, R_DECISIONS] = book[r, 2]
        book[r, 1] += 1
    if a < 0 or s[S.GAME_OVER]:  # start the row's next game
        seed = episode_seed(book[r, 0], book[r, 1])
        n = int(cfg[C_PLAYERS])
        S.init_state(s, n, int(cfg[C_SIDE]), int(cfg[C_SPIRITS]), seed)
        seats[r] = (seed >> 17) % n
        book[r, 2] = 0
        _greedy_until(s, seats[r], opp_w, int(cfg[C_OPP_BEAM]), opp_plans, opp_lens, opp_values)
    plan_observation(s, w, beam, plans[r], lens[r], values[r], obs[r], masks[r])


@njit(cache=True, nogil=True)
def _plan_rows(lo, hi, states, seats, book, actions, cfg, w, opp_w, plans, lens, values, obs, masks, rewards, dones,
               results):
    for r in range(lo, hi):
        _row(r, states, seats, book, actions, cfg, w, opp_w, plans, lens, values, obs, masks, rewards, dones,
             results)


def plan_env_step(states, seats, book, actions, cfg, w, opp_w, plans, lens, values, obs, masks, rewards, dones,
                  results, num_threads: int = 1) -> None:
    """Step every row: play the chosen plan (actions[r] = candidate index; -1 = start a new game), let the
    greedy opponents (weights opp_w) move, score and restart finished games, and describe the next decision.

    states: int64 (N, STATE_SIZE); seats: int64 (N,) the learner's seat; book: int64 (N, 3) = base seed,
    episode number, learner decisions this game; actions: int64 (N,); cfg: float64 (CFG_SIZE,);
    w, opp_w: float64 (NUM_TERMS,); plans: int64 (N, PLAN_CHOICES, MAX_PLAN); lens: int64 (N, PLAN_CHOICES);
    values: float64 (N, PLAN_CHOICES); obs: float32 (N, PLAN_OBS_SIZE); masks: bool (N, PLAN_CHOICES);
    rewards: float32 (N,); dones: bool (N,); results: float64 (N, RESULT_SIZE) (rows that finished a game).
    Episode k of a row with base seed b is the game `batch.episode_seed(b, k)`, the plans are played by
    `batch.play_plan` and the winner is decided by `batch.outcome`, as in the batched engine (the rows also plan,
    which the engine cannot: that is the agents' planner). num_threads > 1 steps row ranges in threads
    (`batch.run_rows`, the scheduler of the engine's own steppers);
    a row's games depend only on its base seed and its actions, not on the other rows or the thread count.
    """
    run_rows(_plan_rows, states.shape[0], num_threads, states, seats, book, actions, cfg, w, opp_w, plans, lens,
             values, obs, masks, rewards, dones, results, min_rows=1)  # a row plans whole turns: worth a thread


def thread_count(num_threads: int) -> int:
    """Threads to step the rows with: num_threads, or every core for 0 (or less)."""
    if isinstance(num_threads, (int, np.integer)) and not isinstance(num_threads, bool) and num_threads <= 0:
        return os.cpu_count() or 1
    return check_threads(num_threads)


def describe(view: Any, w: np.ndarray | None = None, beam: int = PLAN_BEAM):
    """(observation, mask, candidate plans as lists of actions) for the player to move in a `Game` or view."""
    s = np.asarray(view.state if hasattr(view, "state") else view, dtype=np.int64).copy()
    plans = np.zeros((PLAN_CHOICES, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(PLAN_CHOICES, dtype=np.int64)
    values = np.zeros(PLAN_CHOICES, dtype=np.float64)
    obs = np.zeros(PLAN_OBS_SIZE, dtype=np.float32)
    mask = np.zeros(PLAN_CHOICES, dtype=bool)
    weights = DEFAULT_WEIGHTS if w is None else np.asarray(w, dtype=np.float64)
    n = plan_observation(s, weights, int(beam), plans, lens, values, obs, mask)
    return obs, mask, [plans[k, : lens[k]].tolist() for k in range(n)]
