"""The batched steppers' kernels: many games stepped together, a batch of N games being an int32 array
(N, STATE_SIZE), one game per row. Pure functions over arrays (no classes): `harmonies_env.batch` wraps them
(`BatchedGames`, `SelfPlayBatch`, `init_batch`, `rollout_batch`) and says why they are built this way.

`step_rows` moves each row by one micro-action (rewards, built-in random opponents, auto-reset, the incremental
observation and mask); `play_plan` / `play_plans` move a row by a whole turn that a planner chose; `run_rows` is
the one scheduler that splits rows over threads. Every array's shape and dtype is in its kernel's docstring.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numba import njit

from . import actions as A
from . import rules
from . import state as S
from .cards import CARD_CLASSES, SPIRIT_SUN_BONUS, STACK_CLASSES
from .observation import OBS_SIZE, STACK_BELOW, action_card, encode_observation, scores_of, update_observation
from .scoring import NUM_CATEGORIES, solo_suns
from .stacks import ACCEPTS

OPPONENT_SALT = 0x5DEECE66D
_EPISODE_MIX = 0x2545F4914F6CDD1D  # odd multiplier that spreads episode numbers over the seed space

#: Modes of the step kernel: who decides, whose observation comes back.
MODE_SOLO, MODE_VERSUS, MODE_SELFPLAY = 0, 1, 2
MODES = {"solo": MODE_SOLO, "versus": MODE_VERSUS, "selfplay": MODE_SELFPLAY}
#: Reward kinds, the same as the Gymnasium / PettingZoo envs' (`env_gym`, `env_aec`), in points times
#: `reward_scale` (default 1 in solo, 1 / SCORE_SCALE = 0.01 with opponents, as the envs):
#: "dense" = after each action the change of the mover's own total score (solo: counted from 0, so the return
#: is the final score, as Solo-v0; with opponents: from the score at reset, as Versus-v0 and the AEC env);
#: "score" = at the end, own total minus the best other total (solo: own total);
#: "win" = at the end, +1 to a sole winner, +1/k to each of k < n tied winners, -1 to the others, 0 to all
#: if all n tie (ties broken by animal cubes first, as the rules say); solo: the suns earned (not scaled).
REWARD_DENSE, REWARD_SCORE, REWARD_WIN = 0, 1, 2
REWARDS = {"dense": REWARD_DENSE, "score": REWARD_SCORE, "win": REWARD_WIN}

#: cfg: int64 (CFG_SIZE,) shared by all rows. CFG_SEAT = -1: the learner's seat is drawn per episode (Versus).
CFG_PLAYERS, CFG_SIDE, CFG_SPIRITS, CFG_MODE, CFG_SEAT, CFG_REWARD, CFG_MAX_STEPS, CFG_RIVER_LOOPS = range(8)
CFG_SIZE = 8
#: book: int64 (N, BOOK_SIZE), per-row bookkeeping the kernels keep between calls.
B_BASE = 0       # base seed of the row
B_EPISODE = 1    # episode number (0, 1, ...)
B_SEAT = 2       # learner's seat this episode (Solo/Versus)
B_OPP_RNG = 3    # built-in opponent's generator state
B_LEN = 4        # decisions sent this episode (illegal ones included)
B_LAST = 5       # 4 entries: each seat's total score at its last "dense" reward
B_PLAYER = 9     # seat whose observation was written last
B_FRESH = 10     # 1 until the first legal action of a solo episode ("dense" counts from 0, not the start score)
B_SCORE = 11     # 4 x NUM_CATEGORIES: each seat's current score breakdown (kept up to date incrementally)
BOOK_SIZE = B_SCORE + S.MAX_PLAYERS * NUM_CATEGORIES
#: Most legal decisions per game a batch made with record=True keeps (a game has a few hundred at most).
RECORD_CAP = 4096
#: flags: int64 (N, FLAGS_SIZE), written by each step; the F_LENGTH.. entries only for rows that ended.
F_TERM, F_TRUNC, F_ILLEGAL, F_ERROR, F_LENGTH, F_EPISODE, F_SEED, F_SUNS, F_SEAT = range(9)
FLAGS_SIZE = 9
_NA = A.NUM_ACTIONS


# ---------------------------------------------------------------------------------------------------------
# per-game kernels
# ---------------------------------------------------------------------------------------------------------
@njit(cache=True)
def episode_seed(base: int, episode: int) -> int:
    """Game seed of episode `episode` (0, 1, ...) of a row whose base seed is `base` (episode 0 -> base)."""
    if episode == 0:
        return base
    tmp = np.empty(1, dtype=np.int64)
    tmp[0] = base ^ (episode * _EPISODE_MIX)
    return S.next_random(tmp, 0)


@njit(cache=True)
def _suns(s, total: int) -> int:
    kept = s[S.SPIRIT_KEPT]
    return solo_suns(total, s[S.SIDE], 2 if kept < 0 else SPIRIT_SUN_BONUS[kept])


@njit(cache=True)
def _opponents_move_observed(s, seat: int, book, buf, obs) -> None:
    """`rules.random_until` (the same draws, one `rules.random_action` at a time) with book's generator
    (B_OPP_RNG), keeping obs ((OBS_SIZE,), float32 or int16 raw values), seat's observation, and the score
    cache (B_SCORE) up to date incrementally after each action."""
    while not s[S.GAME_OVER] and s[S.CURRENT] != seat:
        a = rules.random_action(s, book, B_OPP_RNG, buf)
        mover = s[S.CURRENT]
        card = action_card(s, a)
        rules.step(s, a)
        sc = B_SCORE + NUM_CATEGORIES * mover
        update_observation(s, a, mover, card, seat, obs, book[sc: sc + NUM_CATEGORIES])


@njit(cache=True)
def outcome(s, totals, tmp, won) -> int:
    """Who won a finished game (the rules: most points, ties broken by most animal cubes, then shared).

    Fills totals (int64 (4,): each seat's total score, 0 for absent seats) and won (int64 (4,): 1 for each
    winner); tmp: int64 (NUM_CATEGORIES,) scratch. Returns how many seats won. The one winner test of every
    batched stepper (`BatchedGames`, `SelfPlayBatch`, `rollout_batch`, the learned trainer) and of `Game.winners`.
    """
    n = s[S.NUM_PLAYERS]
    best_t = -1
    best_c = -1
    for p in range(S.MAX_PLAYERS):
        totals[p] = 0
        won[p] = 0
    for p in range(n):
        totals[p] = rules.seat_score(s, p, tmp)
        c = s[S.ANIMAL_CUBES + p]
        if totals[p] > best_t or (totals[p] == best_t and c > best_c):
            best_t = totals[p]
            best_c = c
    k = 0
    for p in range(n):
        if totals[p] == best_t and s[S.ANIMAL_CUBES + p] == best_c:
            won[p] = 1
            k += 1
    return k


# scratch layout (int64 (SCRATCH_SIZE,) per row)
_TMP = _NA                          # NUM_CATEGORIES: a score breakdown
_TOTALS = _TMP + NUM_CATEGORIES     # 4: every seat's total
SCRATCH_SIZE = _TOTALS + S.MAX_PLAYERS
#: A rollout row's scratch (`rollout_batch`): the same.
ROLLOUT_SCRATCH_SIZE = SCRATCH_SIZE


@njit(cache=True, _nrt=True)  # explicit: not inherited from the `_nrt=False` drivers
def _reset_row(s, cfg, book, scratch) -> None:
    """Start episode book[B_EPISODE] of this row: new game, opponent generator, learner seat; in Versus the
    opponents seated before the learner move."""
    seed = episode_seed(book[B_BASE], book[B_EPISODE])
    n = cfg[CFG_PLAYERS]
    S.init_state(s, n, cfg[CFG_SIDE], cfg[CFG_SPIRITS], seed, cfg[CFG_RIVER_LOOPS])
    book[B_OPP_RNG] = seed ^ OPPONENT_SALT
    book[B_SEAT] = cfg[CFG_SEAT]
    book[B_LEN] = 0
    if cfg[CFG_MODE] == MODE_VERSUS:
        if book[B_SEAT] < 0:
            book[B_SEAT] = S.random_below(book, B_OPP_RNG, n)
        rules.random_until(s, book[B_SEAT], book, B_OPP_RNG, scratch[:_NA])
    for p in range(S.MAX_PLAYERS):
        book[B_LAST + p] = 0
    book[B_FRESH] = cfg[CFG_MODE] == MODE_SOLO
    if cfg[CFG_MODE] != MODE_SOLO:
        for p in range(s[S.NUM_PLAYERS]):  # n, as the state holds it (int32, as `outcome`'s): `seat_score` compiles once
            book[B_LAST + p] = rules.seat_score(s, p, scratch[_TMP:_TOTALS])


@njit(cache=True, _nrt=True)  # explicit: not inherited from the `_nrt=False` drivers
def _observe_row(s, cfg, book, obs, mask, scratch) -> None:
    """Full observation of the deciding seat (the learner, or the player to move in self-play) and its mask."""
    player = s[S.CURRENT] if cfg[CFG_MODE] == MODE_SELFPLAY else book[B_SEAT]
    book[B_PLAYER] = player
    encode_observation(s, player, obs)
    scores_of(s, book[B_SCORE:])
    rules.write_mask(s, mask, rules.MASK_ALL, 15)


@njit(cache=True)
def _update_mask(s, a: int, mover: int, card: int, mask) -> None:
    """Bring mask (bool (NUM_ACTIONS,)), the legal actions before `mover` played the legal action `a`, up to
    date: only the regions of `rules.write_mask` that the action can have changed; everything once the turn
    passed or after a Spirit choice. card: `observation.action_card` read before the action."""
    if a >= A.KEEP_SPIRIT or s[S.GAME_OVER] or s[S.CURRENT] != mover:
        rules.write_mask(s, mask, rules.MASK_ALL, 15)
    elif a < A.PLACE_TOKEN:  # tokens taken: placements open, no more taking, maybe the end of the turn
        rules.write_mask(s, mask, rules.MASK_TOKENS | rules.MASK_PLACE | rules.MASK_TAIL, 0)
    elif a < A.TAKE_CARD:
        # a token of colour c placed on cell i: only cell i changed for the colours still held (no cube is there),
        # colour c may be used up; habitats change only for the cards that use the cell's old or new class
        c = (a - A.PLACE_TOKEN) // A.MAX_CELLS
        i = (a - A.PLACE_TOKEN) % A.MAX_CELLS
        new = S.stack_at(s, mover, i)
        for c2 in range(6):
            if s[S.HAND + c2] > 0:
                mask[A.PLACE_TOKEN + A.MAX_CELLS * c2 + i] = (ACCEPTS[c2] >> new) & 1
        if s[S.HAND + c] == 0:
            for j in range(A.MAX_CELLS):
                mask[A.PLACE_TOKEN + A.MAX_CELLS * c + j] = 0
        changed = STACK_CLASSES[new] | STACK_CLASSES[STACK_BELOW[new]]
        slots = 0
        for h in range(S.MAX_SLOTS):
            card_h = s[S.SLOT + S.MAX_SLOTS * mover + h]
            if card_h >= 0 and CARD_CLASSES[card_h] & changed:
                slots |= 1 << h
        rules.write_mask(s, mask, rules.MASK_TAIL | (rules.MASK_CUBE if slots else 0), slots)
    elif a < A.PLACE_CUBE:  # a card taken: its slot's habitat, no more taking
        slots = 0
        for h in range(S.MAX_SLOTS):
            if s[S.SLOT + S.MAX_SLOTS * mover + h] == card:
                slots |= 1 << h
        rules.write_mask(s, mask, rules.MASK_CARD | rules.MASK_CUBE | rules.MASK_TAIL, slots)
    else:  # a cube placed on cell i: no token and no other cube can go there; a completed card frees its slot
        i = (a - A.PLACE_CUBE) % A.MAX_CELLS
        for h in range(S.MAX_SLOTS):
            mask[A.PLACE_CUBE + A.MAX_CELLS * h + i] = 0
        for c in range(6):
            mask[A.PLACE_TOKEN + A.MAX_CELLS * c + i] = 0
        h = (a - A.PLACE_CUBE) // A.MAX_CELLS
        if s[S.SLOT + S.MAX_SLOTS * mover + h] < 0:
            for j in range(A.MAX_CELLS):
                mask[A.PLACE_CUBE + A.MAX_CELLS * h + j] = 0
        rules.write_mask(s, mask, rules.MASK_CARD | rules.MASK_TAIL, 0)


@njit(cache=True, _nrt=True)  # explicit: not inherited from the `_nrt=False` drivers
def _step_row(s, a: int, cfg, illegal_reward: float, scale: float, book, ep_return, final_return, obs, mask,
              reward, learner_reward, ended, flags, final_scores, final_won, final_obs, scratch) -> None:
    """Step one row (the row's slices of the arrays of `step_rows`); obs and mask are updated incrementally."""
    buf = scratch[:_NA]
    tmp = scratch[_TMP:_TOTALS]
    totals = scratch[_TOTALS:SCRATCH_SIZE]
    mode = cfg[CFG_MODE]
    kind = cfg[CFG_REWARD]
    n = s[S.NUM_PLAYERS]
    seat = book[B_SEAT]
    for p in range(S.MAX_PLAYERS):
        reward[p] = 0.0
    flags[F_TERM] = 0
    flags[F_TRUNC] = 0
    flags[F_ILLEGAL] = 0
    flags[F_SEAT] = seat
    mover = s[S.CURRENT]
    card = action_card(s, a) if 0 <= a < _NA else 0
    err = rules.step(s, a)
    flags[F_ERROR] = err
    book[B_LEN] += 1
    if err != 0:  # the state is unchanged: so are the observation and the mask
        flags[F_ILLEGAL] = 1
        reward[mover] += illegal_reward
    else:
        player = book[B_PLAYER]
        sc = B_SCORE + NUM_CATEGORIES * mover
        changed = update_observation(s, a, mover, card, player, obs, book[sc: sc + NUM_CATEGORIES])
        if kind == REWARD_DENSE and (changed or book[B_FRESH]):
            # only the mover's score can change, and only when its board did (a solo game's first action
            # also counts the empty board's points, e.g. Side B's island)
            t = book[sc + NUM_CATEGORIES - 1]
            reward[mover] += (t - book[B_LAST + mover]) * scale
            book[B_LAST + mover] = t
        book[B_FRESH] = 0
        if mode == MODE_VERSUS:
            _opponents_move_observed(s, seat, book, buf, obs)
        if mode == MODE_SELFPLAY and s[S.CURRENT] != player:  # the turn passed: the next player's view
            book[B_PLAYER] = s[S.CURRENT]
            encode_observation(s, book[B_PLAYER], obs)  # int64, as `_observe_row` and Python pass it: compiled once
        _update_mask(s, a, mover, card, mask)
    done = s[S.GAME_OVER] != 0
    trunc = (not done) and cfg[CFG_MAX_STEPS] > 0 and book[B_LEN] >= cfg[CFG_MAX_STEPS]
    k = 0
    if done or trunc:
        k = outcome(s, totals, tmp, final_won)
    if done:
        if kind == REWARD_SCORE:
            for p in range(n):
                best = 0
                if n > 1:
                    best = -1
                    for o in range(n):
                        if o != p and totals[o] > best:
                            best = totals[o]
                reward[p] += (totals[p] - best) * scale
        elif kind == REWARD_WIN:
            if n == 1:
                reward[0] += _suns(s, totals[0])
            elif k < n:
                for p in range(n):
                    reward[p] += 1.0 / k if final_won[p] else -1.0
    for p in range(S.MAX_PLAYERS):
        ep_return[p] += reward[p]
    learner_reward[0] = reward[seat if mode != MODE_SELFPLAY else 0]
    ended[0] = done or trunc
    if done or trunc:
        flags[F_TERM] = 1 if done else 0
        flags[F_TRUNC] = 1 if trunc else 0
        for p in range(S.MAX_PLAYERS):
            if p < n:
                rules.seat_score(s, p, final_scores[p])
            else:
                final_scores[p, :] = 0
            final_return[p] = ep_return[p]
            ep_return[p] = 0.0
        for j in range(OBS_SIZE):  # the ended game's last observation (the deciding seat's / the last mover's)
            final_obs[j] = obs[j]  # (a plain loop: numba's slice assignment does not become a memcpy)
        flags[F_LENGTH] = book[B_LEN]
        flags[F_EPISODE] = book[B_EPISODE]
        flags[F_SEED] = episode_seed(book[B_BASE], book[B_EPISODE])
        flags[F_SUNS] = _suns(s, totals[0]) if n == 1 else 0
        book[B_EPISODE] += 1
        _reset_row(s, cfg, book, scratch)
        _observe_row(s, cfg, book, obs, mask, scratch)


# ---------------------------------------------------------------------------------------------------------
# batch drivers: rows lo..hi-1 per call, so that threads can share a batch by row ranges.
#
# They are compiled WITHOUT numba's reference counting (`_nrt=False`): arrays coming from Python then carry no
# memory-manager record, so the views the kernels below take of them (a row, a board's bitboards ...) cost no
# atomic increment / decrement. With it, those atomics were over half of a row-step's time. The kernels they
# call allocate and free their own small arrays normally. nogil: `run_rows` runs row ranges in threads.
#
# A step's scratch (the opponents' action list, score breakdowns, class grids) holds nothing from one row to the
# next, so every row of a range uses the range's first scratch row, scratch[lo]: one row per thread is touched
# (in cache), not 2.3 KB per row of the batch (at 4,096 rows that was 9.5 MB on the step path).
# ---------------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, _nrt=False)
def _step_rows(lo, hi, states, actions, cfg, illegal_reward, scale, book, ep_returns, final_returns, obs, masks,
               rewards, learner_rewards, ended, flags, final_scores, final_won, final_obs, scratch):
    for r in range(lo, hi):
        _step_row(states[r], actions[r], cfg, illegal_reward, scale, book[r], ep_returns[r], final_returns[r],
                  obs[r], masks[r], rewards[r], learner_rewards[r:r + 1], ended[r:r + 1], flags[r],
                  final_scores[r], final_won[r], final_obs[r], scratch[lo])


@njit(cache=True, nogil=True, _nrt=False)
def _reset_rows(lo, hi, states, cfg, book, obs, masks, scratch):
    for r in range(lo, hi):
        _reset_row(states[r], cfg, book[r], scratch[lo])
        _observe_row(states[r], cfg, book[r], obs[r], masks[r], scratch[lo])


@njit(cache=True, nogil=True, _nrt=False)
def _observe_rows(lo, hi, states, cfg, book, obs, masks, scratch):
    for r in range(lo, hi):
        _observe_row(states[r], cfg, book[r], obs[r], masks[r], scratch[lo])


_POOL: list[ThreadPoolExecutor] = []
#: Fewest rows per thread worth a hand-off to another thread.
MIN_ROWS_PER_THREAD = 16


def run_rows(fn: Any, n: int, threads: int, *args: Any, min_rows: int = MIN_ROWS_PER_THREAD) -> None:
    """fn(lo, hi, *args) over rows 0..n-1: in this thread, or split in up to `threads` row ranges run at once.

    The thread runner of every batched stepper (this module's micro-action `step_rows` and whole-plan `play_plans`,
    and the agents' batched planners). fn must be a numba kernel compiled with nogil=True, and every row must
    depend only on itself, so that results do not depend on the split. min_rows: fewest rows worth handing to
    another thread (lower it for expensive rows).
    """
    k = min(threads, n // max(1, min_rows))
    if k <= 1:
        fn(0, n, *args)
        return
    if not _POOL or _POOL[0]._max_workers < k - 1:
        if _POOL:
            _POOL.pop().shutdown(wait=False)
        _POOL.append(ThreadPoolExecutor(max_workers=k - 1, thread_name_prefix="harmonies-batch"))
    bounds = [n * j // k for j in range(k + 1)]
    futures = [_POOL[0].submit(fn, bounds[j], bounds[j + 1], *args) for j in range(1, k)]
    fn(0, bounds[1], *args)
    for f in futures:
        f.result()


def step_rows(states, actions, cfg, illegal_reward, scale, book, ep_returns, final_returns, obs, masks, rewards,
              learner_rewards, ended, flags, final_scores, final_won, final_obs, scratch, num_threads: int = 1) -> None:
    """Step every row of a batch in ONE numba call (the engine under `BatchedGames` and `SelfPlayBatch`).

    Inputs: states int32 (N, STATE_SIZE); actions int64 (N,), the deciding seat's action per row (an
    illegal one leaves its row unchanged, earns `illegal_reward` (negative) and is flagged); cfg int64
    (CFG_SIZE,); illegal_reward, scale float; book int64 (N, BOOK_SIZE) per-row bookkeeping; ep_returns
    float64 (N, 4) running per-seat returns (zeroed when a game ends, after its value went to final_returns).
    In/out: obs (N, OBS_SIZE), float32 or int16 (raw values, `observation.to_float32`), and masks bool
    (N, NUM_ACTIONS): on entry, each row's observation (of
    seat book[:, B_PLAYER]) and mask for the state before the step, exactly as `encode_observation` /
    `rules.legal_mask` give them; on exit, the same for the deciding seat of the (possibly new) game. Only
    the entries an action changes are written, so these buffers must not be modified outside.
    Outputs: rewards float32 (N, 4) per seat; learner_rewards float32 (N,) the learner's (Solo / Versus);
    ended bool (N,) terminated or truncated; flags int64 (N, FLAGS_SIZE); for rows that ended:
    final_returns float64 (N, 4) the episode's per-seat returns, final_scores int64 (N, 4, NUM_CATEGORIES),
    final_won int64 (N, 4) and final_obs (N, OBS_SIZE), obs's dtype, the ended game's last observation (deciding
    seat / last mover). scratch: int64 (N, SCRATCH_SIZE), scratch only (a range of rows uses its first row's, so
    the rest stay untouched). num_threads > 1 splits the rows over threads.
    All arrays C-contiguous.
    """
    run_rows(_step_rows, states.shape[0], num_threads, states, actions, cfg, illegal_reward, scale, book,
              ep_returns, final_returns, obs, masks, rewards, learner_rewards, ended, flags, final_scores, final_won,
              final_obs, scratch)



# ---------------------------------------------------------------------------------------------------------
# whole-plan (macro-action) stepping: the agents' planners decide whole turns, these kernels play them
# ---------------------------------------------------------------------------------------------------------
@njit(cache=True)
def play_plan(s, plan, n: int, before_end: bool = False) -> int:
    """Play a whole-turn plan (a macro-action) on one game: the micro-actions plan[0], ..., plan[n - 1] in order.

    s int32 (STATE_SIZE,), modified in place; plan int64 (>= n,) action indices, normally a turn made by a
    planner (`agents.greedy.plan_turn`) on this position: tokens, card, cubes, then END_TURN (the refill and the
    next seat follow, as after that micro-action), or the first turn's Spirit choice alone (no END: the same seat
    stays to move). before_end: stop at the first END_TURN, not playing it, which leaves the turn's exact
    afterstate (no chance has happened yet). Returns 0, or the `rules.step` error code of the first refused
    action: play stops there, that action left s untouched and the ones before it stay played.

    Why one kernel: every whole-plan player (the match engine, the learned trainer, the search agents' leaves
    and rollouts) plays its plans through it, so a plan means the same sequence of `rules.step` calls everywhere.
    """
    for j in range(n):
        a = plan[j]
        if before_end and a == A.END_TURN:
            break
        e = rules.step(s, a)
        if e:
            return e
    return 0


@njit(cache=True, nogil=True)
def _play_plan_rows(lo, hi, states, active, plans, lens, choice, errors) -> None:
    for r in range(lo, hi):
        if not active[r] or states[r, S.GAME_OVER]:
            errors[r] = 0
            continue
        k = choice[r]
        errors[r] = play_plan(states[r], plans[r, k], lens[r, k])


def play_plans(states: np.ndarray, active: np.ndarray, plans: np.ndarray, lens: np.ndarray, choice: np.ndarray,
               num_threads: int = 1, min_rows: int = MIN_ROWS_PER_THREAD) -> np.ndarray:
    """Play one chosen whole-turn plan in each active row of a batch, in ONE numba call: the whole-plan stepper.

    states int32 (N, STATE_SIZE), modified in place; active bool (N,) the rows to play (rows whose game is over
    are skipped too); plans int64 (N, K, MAX_PLAN) K candidate plans per row; lens int64 (N, K) their lengths;
    choice int64 (N,) the candidate to play per row: row r plays plans[r, choice[r], :lens[r, choice[r]]] with
    `play_plan` (END_TURN included). Returns int64 (N,): 0, or the `rules.step` error code that stopped the row's
    plan (0 for skipped rows). num_threads > 1 splits the rows over threads (`run_rows`; min_rows: fewest rows
    worth a thread; planned rows are cheap to play, dear to plan). Arrays C-contiguous, as the kernels index them.

    The micro-action stepper is `step_rows` (one action per row, observations, masks and rewards kept up to date);
    this one plays macro-actions and leaves observing to its callers; both run on `run_rows`.
    """
    errors = np.zeros(states.shape[0], dtype=np.int64)
    run_rows(_play_plan_rows, states.shape[0], num_threads, states, active, plans, lens, choice, errors,
             min_rows=min_rows)
    return errors

@njit(cache=True)
def _init_rows(states, num_players: int, side: int, spirits: int, seeds, river_loops: int) -> None:
    for r in range(states.shape[0]):
        S.init_state(states[r], num_players, side, spirits, seeds[r], river_loops)


@njit(cache=True, _nrt=True)  # explicit: not inherited from the `_nrt=False` drivers
def _rollout_row(s, seed: int, scratch, totals, won) -> int:
    rng = np.empty(1, dtype=np.int64)
    rng[0] = seed
    steps = rules.random_playout(s, rng, scratch[:_NA])
    outcome(s, totals, scratch[_TMP:_TOTALS], won)
    return steps


@njit(cache=True, nogil=True, _nrt=False)
def _rollout_rows(lo, hi, states, seeds, totals, won, steps, scratch):
    for r in range(lo, hi):
        steps[r] = _rollout_row(states[r], seeds[r], scratch[r], totals[r], won[r])
