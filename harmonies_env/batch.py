"""Many games stepped together: a batch of N games is an int32 array (N, STATE_SIZE), one game per row.

Why: a Python -> jitted call costs ~0.65 us, about as much as one rules step, so stepping games one call
at a time spends most of its time crossing into numba. Here ONE call steps every row: it applies the
row's action, lets built-in random opponents move (Versus), computes rewards, auto-resets finished games,
and keeps each row's observation (the layout of `observation.encode_observation`, as the Gymnasium and
PettingZoo envs) and legal-action mask up to date. `BatchedGames` (Solo / Versus, one learner seat) and
`SelfPlayBatch` (every seat is decided outside, by arrays) wrap the kernels, which live in `batch_kernels`
(pure functions over arrays; this module holds the classes and validating wrappers and re-exports them).

Two steppers, one scheduler (`run_rows`): `step_rows` moves each row by one micro-action (the above);
`play_plan` / `play_plans` move a row by a whole turn that a planner chose (a macro-action: the match engine,
the learned trainer and the search agents play their plans with it). docs/engine.md ("Batched steppers") says
who uses which.

Incremental observations and masks: the (N, OBS_SIZE) observation and (N, NUM_ACTIONS) mask buffers persist
from step to step, and a step writes only what its actions changed (`observation.update_observation`: a
cell's stack, a cube, a card, the hand, the central board ...; `rules.write_mask` with the regions of the
mask an action can touch). A whole row is re-encoded only on reset, on a Spirit choice, and in self-play
when the turn passes (the observer changes). The result is always exactly a fresh `encode_observation` /
`rules.legal_mask` of the row's state (tests/test_batch.py checks it every step). So the buffers must not
be written to from outside: the classes hand out read-only views of the states, observations, masks and
bookkeeping (`state.read_only_view`: numpy refuses writes, and numba refuses to compile a kernel that writes into
them), and new positions go in through `set_states`, which validates them (`harmonies_env.validate`) and
re-encodes the rows' observations and masks.

Compact observations: `obs_dtype=np.int16` keeps the observation buffers as the encoding's raw integers (2 bytes an
entry instead of float32's 4: 5.6 KB a row instead of 11.2 KB), written by the same kernels;
`observation.to_float32` turns them into exactly the float32 observation. The default is float32, what the
Gymnasium, SB3 and PettingZoo paths hand out; benchmarks/RESULTS.md ("Batched engine") has what each costs.

Determinism: every row owns its chance (the game's generator in the state) and its opponent's generator
(`opp_rng`), so a row's trajectory depends only on its seed and its actions, never on the thread count
or on the other rows. Episode k of a row with base seed b is the game `Game(seed=episode_seed(b, k))`
(episode 0 uses b itself); the built-in random opponent of that episode draws from the generator
`episode_seed(b, k) ^ OPPONENT_SALT`, as `rules.random_games` does.

Threads: `num_threads` > 1 splits the rows into that many ranges, stepped at once by Python threads (the
kernels release the GIL), with results identical to one thread. (numba's `prange` was dropped: its OpenMP
threads spin, and on a shared 2-core machine, or beside torch's own threads, steps became up to 10x slower.)
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from . import actions as A
from . import rules
from . import state as S
from .batch_kernels import (
    B_BASE,
    B_EPISODE,
    B_FRESH,
    B_LEN,
    B_PLAYER,
    B_SEAT,
    BOOK_SIZE,
    CFG_MODE,
    CFG_SEAT,
    F_ERROR,
    F_ILLEGAL,
    F_LENGTH,
    F_SEAT,
    F_SEED,
    F_SUNS,
    F_TERM,
    F_TRUNC,
    FLAGS_SIZE,
    MODE_SELFPLAY,
    MODE_VERSUS,
    MODES,
    OPPONENT_SALT,
    RECORD_CAP,
    REWARDS,
    ROLLOUT_SCRATCH_SIZE,
    SCRATCH_SIZE,
    _init_rows,
    _observe_rows,
    _reset_rows,
    _rollout_rows,
    episode_seed,
    outcome,
    play_plan,
    play_plans,
    run_rows,
    step_rows,
)
from .config import GameConfig, make_config
from .game import Game, check_seed
from .observation import OBS_DTYPES, OBS_SIZE
from .rewards import SCORE_SCALE
from .scoring import NUM_CATEGORIES
from .validate import check_states

#: The kernels this module wraps, re-exported for the callers that import them from here.
__all__ = ["BatchedGames", "SelfPlayBatch", "BatchStep", "Rollouts", "init_batch", "rollout_batch", "check_threads",
           "episode_seed", "outcome", "play_plan", "play_plans", "run_rows", "step_rows", "BOOK_SIZE", "B_EPISODE",
           "B_FRESH", "B_LEN", "B_SEAT", "OPPONENT_SALT"]

def init_batch(states: np.ndarray, *, seeds: Sequence[int] | np.ndarray | None = None,
               config: GameConfig | None = None) -> None:
    """Set up game r of states (int32 (N, STATE_SIZE), C-contiguous, written in place) from seeds[r], as
    `Game(seed=seeds[r], config=config)` does (config default: `GameConfig()`). Every argument is validated
    (ValueError naming it): the kernel writes rows by these values."""
    if not isinstance(states, np.ndarray) or states.dtype != S.STATE_DTYPE or states.ndim != 2 \
            or states.shape[1] != S.STATE_SIZE or not states.flags.c_contiguous or not states.flags.writeable:
        raise ValueError(f"states must be a writable C-contiguous int32 array (N, {S.STATE_SIZE}), got "
                         f"{getattr(states, 'dtype', type(states).__name__)} {getattr(states, 'shape', '')}")
    cfg = make_config(config)
    if seeds is None:
        raise ValueError("init_batch needs seeds: one game seed per row")
    seeds = _as_seeds(seeds, states.shape[0])
    _init_rows(states, cfg.num_players, cfg.side_code, int(cfg.spirits), seeds, cfg.river_loops_code)


class Rollouts(NamedTuple):
    """Results of `rollout_batch`: totals int64 (N, 4) final total scores (absent seats 0), won int64 (N, 4)
    1 for each winner (most points, then most animal cubes), steps int64 (N,) actions played."""
    totals: np.ndarray
    won: np.ndarray
    steps: np.ndarray


def _as_seeds(seeds: Any, n: int, what: str = "seeds") -> np.ndarray:
    arr = np.asarray(seeds)
    if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what} must be {n} integers, got {arr.dtype} {arr.shape}")
    if n and (arr.min() < 0 or (arr.dtype == np.uint64 and arr.max() >= 2**63)):
        raise ValueError(f"{what} must be non-negative integers below 2**63")
    return np.ascontiguousarray(arr, dtype=np.int64)


def rollout_batch(states: np.ndarray, seeds: Sequence[int] | np.ndarray, inplace: bool = False,
                  num_threads: int = 1) -> Rollouts:
    """Play every game of `states` (int32 (N, STATE_SIZE)) to its end with uniformly random legal actions.

    Row r's random player draws from seeds[r] (its own generator: the same seed gives the same playout for
    any thread count). The games are played on a copy unless `inplace`. For MCTS leaf evaluation and
    whole-game random baselines (start from `init_batch`).
    """
    states = check_states(states)  # every row, every field: the kernels index tables with these values
    n = states.shape[0]
    seeds = _as_seeds(seeds, n)
    work = states if inplace else states.copy()
    if inplace and not states.flags.c_contiguous:
        raise ValueError("states must be C-contiguous to be played in place")
    totals = np.zeros((n, S.MAX_PLAYERS), dtype=np.int64)
    won = np.zeros((n, S.MAX_PLAYERS), dtype=np.int64)
    steps = np.zeros(n, dtype=np.int64)
    scratch = np.zeros((n, ROLLOUT_SCRATCH_SIZE), dtype=np.int64)
    run_rows(_rollout_rows, n, check_threads(num_threads), work, seeds, totals, won, steps, scratch)
    return Rollouts(totals, won, steps)


def check_threads(num_threads: Any) -> int:
    """Validate a thread count (threads that step row ranges of a batch at once; 1 = the calling thread only)."""
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive integer, got {num_threads!r}")
    return int(num_threads)


# ---------------------------------------------------------------------------------------------------------
# Python wrappers
# ---------------------------------------------------------------------------------------------------------
class BatchStep(NamedTuple):
    """What one `step` of a batch returns: VIEWS of the batch's own buffers, which the next `step` / `reset`
    overwrites (copy what you keep, as the vector envs do). obs and masks are read-only views: the engine
    updates them incrementally, so they must not be written to.

    obs float32 (N, OBS_SIZE) (int16 raw values with `obs_dtype=np.int16`: `observation.to_float32`) and masks
    bool (N, NUM_ACTIONS): the deciding seat's view of each game (the new game's for rows that just ended:
    auto-reset). rewards float32: (N,) for the learner
    (`BatchedGames`), (N, 4) per seat (`SelfPlayBatch`). terminated / truncated / illegal bool (N,).
    For rows that ended (terminated | truncated), other rows holding stale values: final_obs (N, OBS_SIZE),
    obs's dtype, the ended game's last observation; final_scores int64 (N, 4, NUM_CATEGORIES) score
    breakdowns; final_won int64 (N, 4) 1 per winner; episode_returns float64 (N, 4) per-seat returns;
    episode_lengths int64 (N,) decisions sent (illegal ones included); episode_seeds int64 (N,) the ended
    game's seed; suns int64 (N,) the solo result (0 with opponents); seats int64 (N,) the learner's seat in
    the ended game. players int64 (N,): the seat each `obs` row belongs to (the player to move in self-play).
    """
    obs: np.ndarray
    masks: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    illegal: np.ndarray
    final_obs: np.ndarray
    final_scores: np.ndarray
    final_won: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    episode_seeds: np.ndarray
    suns: np.ndarray
    seats: np.ndarray
    players: np.ndarray


def _check_int(name: str, v: Any, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    return int(v)


def _check_float(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return float(v)


_read_only = S.read_only_view


class _Batch:
    """Shared machinery of `BatchedGames` and `SelfPlayBatch`: buffers, seeding, reset and step.

    The observation and mask buffers persist across steps and each step writes only what its actions
    changed (a whole row on reset, a turn change in self-play, a Spirit choice): `obs` / `masks` are
    read-only views of them. `states`, `book` and `cfg` are read-only views too (the kernels index tables with
    their values: a value written by hand could crash the process); set up positions with `set_states`, which
    validates them.
    """

    def __init__(self, num_games: int, config: GameConfig, mode: int, seat: int,
                 seed: int | Sequence[int] | None, reward: str, reward_scale: float | None,
                 illegal_reward: float, max_steps: int, num_threads: int, record: bool = False,
                 obs_dtype: Any = np.float32):
        self.num_games = n = _check_int("num_games", num_games, 1)
        try:
            self.obs_dtype = np.dtype(obs_dtype)
        except TypeError:
            self.obs_dtype = None
        if self.obs_dtype not in OBS_DTYPES:
            raise ValueError(f"obs_dtype must be float32 (the observation) or int16 (its raw values), "
                             f"got {obs_dtype!r}")
        if not isinstance(record, (bool, np.bool_)):
            raise ValueError(f"record must be True or False, got {record!r}")
        self.record = bool(record)
        # record=True: each row's legal decisions of its current game, int16 (N, RECORD_CAP), and how many, int64
        # (N,) (-1: unknown, after `set_states` or past RECORD_CAP); the built-in opponents' moves are replayed
        # from the episode seed by `game(r)`, so they need no room here
        self._hist = np.zeros((n, RECORD_CAP if self.record else 0), dtype=np.int16)
        self._hlen = np.zeros(n, dtype=np.int64)
        self.config = config
        self.num_players, self.side_code, self.spirits = config.num_players, config.side_code, config.spirits
        self.river_loops = config.river_loops
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(map(repr, REWARDS))}, got {reward!r}")
        self.reward = reward
        if reward_scale is None:
            reward_scale = 1.0 if self.num_players == 1 else 1.0 / SCORE_SCALE
        self.reward_scale = _check_float("reward_scale", reward_scale)
        self.illegal_reward = _check_float("illegal_reward", illegal_reward)
        self.max_steps = _check_int("max_steps (0 = no limit)", max_steps, 0)
        self.num_threads = check_threads(num_threads)
        self._cfg = np.array([self.num_players, self.side_code, int(self.spirits), mode, seat, REWARDS[reward],
                              self.max_steps, config.river_loops_code], dtype=np.int64)
        self._states = S.new_states(n)
        self._book = np.zeros((n, BOOK_SIZE), dtype=np.int64)
        self._obs = np.zeros((n, OBS_SIZE), dtype=self.obs_dtype)
        self._masks = np.zeros((n, A.NUM_ACTIONS), dtype=np.bool_)
        self._ep_returns = np.zeros((n, S.MAX_PLAYERS), dtype=np.float64)
        self._final_returns = np.zeros((n, S.MAX_PLAYERS), dtype=np.float64)
        self._rewards = np.zeros((n, S.MAX_PLAYERS), dtype=np.float32)
        self._learner_rewards = np.zeros(n, dtype=np.float32)
        self._ended = np.zeros(n, dtype=np.bool_)
        self._flags = np.zeros((n, FLAGS_SIZE), dtype=np.int64)
        self._final_scores = np.zeros((n, S.MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
        self._final_won = np.zeros((n, S.MAX_PLAYERS), dtype=np.int64)
        self._final_obs = np.zeros((n, OBS_SIZE), dtype=self.obs_dtype)
        self._scratch = np.zeros((n, SCRATCH_SIZE), dtype=np.int64)
        self._obs_view = _read_only(self._obs)
        self._masks_view = _read_only(self._masks)
        self._states_view = _read_only(self._states)
        self._book_view = _read_only(self._book)
        self._cfg_view = _read_only(self._cfg)
        self.reset(seed)

    @property
    def states(self) -> np.ndarray:
        """int32 (N, STATE_SIZE): every row's position, a READ-ONLY live view (`set_states` replaces rows)."""
        return self._states_view

    @property
    def book(self) -> np.ndarray:
        """int64 (N, BOOK_SIZE): per-row bookkeeping of the kernels (seeds, learner seat ...), read-only view."""
        return self._book_view

    @property
    def cfg(self) -> np.ndarray:
        """int64 (CFG_SIZE,): the configuration the kernels read (players, side, mode ...), read-only view."""
        return self._cfg_view

    # ---- seeding and reset -----------------------------------------------------------------------------
    def reset(self, seed: int | Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Start a fresh game in every row; returns (obs, masks) (read-only views of the batch's buffers).

        seed: an int b gives row r the base seed b + r (row r's first game is `Game(seed=b + r)`, its
        episode k the game `Game(seed=episode_seed(b + r, k))`); a sequence gives each row's base seed;
        None draws fresh base seeds.
        """
        n = self.num_games
        if seed is None:
            base = (check_seed(None) % (2**62)) + np.arange(n, dtype=np.int64)
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            b = check_seed(seed)
            if b + n > 2**63:
                raise ValueError(f"seed {b} + {n} rows would pass 2**63")
            base = b + np.arange(n, dtype=np.int64)
        else:
            base = _as_seeds(seed, n)
        self._book[:] = 0
        self._book[:, B_BASE] = base
        self._ep_returns[:] = 0.0
        self._hlen[:] = 0
        run_rows(_reset_rows, n, self.num_threads, self._states, self._cfg, self._book, self._obs, self._masks,
                  self._scratch)
        return self._obs_view, self._masks_view

    def set_states(self, states: np.ndarray, rows: Sequence[int] | np.ndarray | None = None) -> None:
        """Put positions into the batch: `states` int32 (N, STATE_SIZE) for every row, or (len(rows), STATE_SIZE)
        (or one (STATE_SIZE,) state) for the listed rows; then every row's observation and mask is re-encoded.

        Every given state is validated first (`harmonies_env.validate`, and this batch's players / side / Spirits):
        ValueError names the row and field, and the batch is left unchanged. The rows keep their episode
        bookkeeping (base seed, episode number, learner seat): an episode continues from the new position.
        This is the only way to write states: `states` is a read-only view (`step` does not re-check rows).
        """
        if rows is None:
            idx = np.arange(self.num_games)
        else:
            idx = np.asarray(rows)
            if idx.ndim == 0:
                idx = idx.reshape(1)
            if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or idx.dtype == np.uint64 or (
                    idx.size and (idx.min() < 0 or idx.max() >= self.num_games)) or np.unique(idx).size != idx.size:
                raise ValueError(f"rows must be distinct row numbers 0..{self.num_games - 1}, got {rows!r}")
        arr = S.as_state_dtype(states, "states")
        if arr.ndim == 1 and idx.size == 1:
            arr = arr[None, :]
        if arr.shape != (idx.size, S.STATE_SIZE):
            raise ValueError(f"states must be ({idx.size}, {S.STATE_SIZE}) for {idx.size} row(s), got {arr.shape}")
        new = self._states.copy()
        new[idx] = arr
        self._check(new, idx)
        self._states[idx] = new[idx]
        self._hlen[idx] = -1  # these rows' games no longer follow from their seeds: no record until they end
        self.refresh()

    def _check(self, states: np.ndarray, rows: np.ndarray) -> None:
        """ValueError naming the first row of `rows` whose state is invalid or not this batch's configuration."""
        sub = np.ascontiguousarray(states[rows])
        check_states(sub, rows)
        for name, off, want in (("num_players", S.NUM_PLAYERS, self.num_players), ("side", S.SIDE, self.side_code),
                                ("spirits", S.SPIRITS, int(self.spirits)),
                                ("river_loops", S.RIVER_LOOPS, self.config.river_loops_code)):
            bad = np.flatnonzero(sub[:, off] != want)
            if bad.size:
                raise ValueError(f"states row {int(rows[bad[0]])}, field {name!r}: this batch plays {name} = {want}, "
                                 f"got {int(sub[bad[0], off])}")
        if self._cfg[CFG_MODE] == MODE_VERSUS:  # a row waits for its learner's action (or its game is over)
            seats = self._book[rows, B_SEAT]
            bad = np.flatnonzero((sub[:, S.GAME_OVER] == 0) & (sub[:, S.CURRENT] != seats))
            if bad.size:
                raise ValueError(f"states row {int(rows[bad[0]])}, field 'current': it is seat "
                                 f"{int(sub[bad[0], S.CURRENT])}'s turn, but this row's learner plays seat "
                                 f"{int(seats[bad[0]])} (a Versus row always waits for its learner)")

    def refresh(self) -> None:
        """Re-encode every row's observation and mask from the states (`set_states` does it for you).

        Validates every row first (`harmonies_env.validate`; ValueError names the row and field).
        """
        self._check(self._states, np.arange(self.num_games))
        run_rows(_observe_rows, self.num_games, self.num_threads, self._states, self._cfg, self._book, self._obs,
                 self._masks, self._scratch)

    # ---- stepping --------------------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> np.ndarray:
        arr = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        if arr.shape != (self.num_games,):  # (N, 1) or a scalar is refused too: no guessing at what was meant
            raise ValueError(f"actions must hold one action per game ({self.num_games}), got shape {arr.shape}")
        if arr.dtype != np.int64:
            if not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"actions must be integers 0..{A.NUM_ACTIONS - 1}, got dtype {arr.dtype}")
            if arr.dtype == np.uint64:
                arr = np.minimum(arr, A.NUM_ACTIONS)  # out of range either way, but must fit int64
        return np.ascontiguousarray(arr, dtype=np.int64)

    def _step(self, actions: Any) -> None:
        acts = self._check_actions(actions)
        step_rows(self._states, acts, self._cfg, self.illegal_reward, self.reward_scale, self._book, self._ep_returns,
                  self._final_returns, self._obs, self._masks, self._rewards, self._learner_rewards, self._ended,
                  self._flags, self._final_scores, self._final_won, self._final_obs, self._scratch,
                  num_threads=self.num_threads)
        if self.record:
            h = self._hlen
            ok = (self._flags[:, F_ILLEGAL] == 0) & (h >= 0)
            h[ok & (h >= RECORD_CAP)] = -1
            rows = np.flatnonzero(ok & (h >= 0))
            self._hist[rows, h[rows]] = acts[rows]
            h[rows] += 1
            h[self._ended] = 0  # an ended row already started its next game

    def _result(self, rewards: np.ndarray) -> BatchStep:
        f = self._flags
        return BatchStep(self._obs_view, self._masks_view, rewards, f[:, F_TERM] == 1, f[:, F_TRUNC] == 1,
                         f[:, F_ILLEGAL] == 1, self._final_obs, self._final_scores, self._final_won,
                         self._final_returns, f[:, F_LENGTH], f[:, F_SEED], f[:, F_SUNS], f[:, F_SEAT],
                         self._book_view[:, B_PLAYER])

    # ---- views -----------------------------------------------------------------------------------------
    @property
    def players(self) -> np.ndarray:
        """int64 (N,): the seat whose observation `obs` holds (the learner, or the player to move)."""
        return self._book_view[:, B_PLAYER]

    @property
    def errors(self) -> np.ndarray:
        """int64 (N,): the last step's `rules.step` error code per row (0 = legal; `rules.ERRORS` says why)."""
        return self._flags[:, F_ERROR]

    @property
    def episodes(self) -> np.ndarray:
        """int64 (N,): each row's episode number (0 for the first game after `reset`)."""
        return self._book_view[:, B_EPISODE]

    @property
    def base_seeds(self) -> np.ndarray:
        return self._book_view[:, B_BASE]

    @property
    def obs(self) -> np.ndarray:
        """float32 (N, OBS_SIZE), or int16 raw values with `obs_dtype=np.int16` (`observation.to_float32`): each
        game's observation for its deciding seat (read-only view of the buffer that the next step updates)."""
        return self._obs_view

    @property
    def masks(self) -> np.ndarray:
        """bool (N, NUM_ACTIONS): each game's legal actions for its deciding seat (read-only view)."""
        return self._masks_view

    def action_masks(self) -> np.ndarray:
        """bool (N, NUM_ACTIONS): the legal actions of each game's deciding seat (read-only view)."""
        return self._masks_view

    def current_seeds(self) -> np.ndarray:
        """int64 (N,): the game seed of each row's current episode."""
        return np.array([episode_seed(int(b), int(e)) for b, e in self._book[:, [B_BASE, B_EPISODE]]],
                        dtype=np.int64)

    def game(self, r: int) -> Game:
        """A `Game` holding a copy of row r's current state (to inspect, render, play on or export).

        With `record=True` the game carries row r's seed and every action of its current game (the learner's,
        recorded as they are stepped, and the built-in opponents', replayed from the episode seed with the same
        generator), so `record()` / `to_json()` export a record that `Game.replay` turns back into this very
        position (checked here). Without it the batch keeps no actions (the kernels step rows without Python):
        the game has no history and no seed, and its `record()` / `to_json()` raise ValueError rather than export
        a record that would replay a different game; so do rows set with `set_states` until their game ends.
        """
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
            raise ValueError(f"row must be an integer, got {r!r}")
        if not 0 <= r < self.num_games:
            raise IndexError(f"row {r} is outside the batch 0..{self.num_games - 1}")
        if not self.record or self._hlen[r] < 0:
            return Game.from_state(self._states[r])  # a validated copy: playing on it never touches the batch
        return self._replayed(int(r))

    def _replayed(self, r: int) -> Game:
        """Row r's current game rebuilt from its episode seed and recorded actions (opponents' moves redrawn)."""
        seed = episode_seed(int(self._book[r, B_BASE]), int(self._book[r, B_EPISODE]))
        n = self.num_players
        g = Game(seed=seed, config=self.config)
        versus = self._cfg[CFG_MODE] == MODE_VERSUS
        rng = np.array([seed ^ OPPONENT_SALT], dtype=np.int64)
        buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        seat = int(self._cfg[CFG_SEAT])
        if versus and seat < 0:
            seat = int(S.random_below(rng, 0, n))

        def opponents() -> None:
            while versus and not g.is_over and g.current_player != seat:
                g.step(int(rules.random_action(g.state.copy(), rng, 0, buf)))

        opponents()
        for a in self._hist[r, : self._hlen[r]]:
            g.step(int(a))
            opponents()
        if not np.array_equal(g.state, self._states[r]):
            raise RuntimeError(f"row {r}: the recorded actions do not rebuild the row's game (a bug: please report)")
        return g


class BatchedGames(_Batch):
    """N games, each with one learner: Solo (num_players=1) or Versus (the other seats play uniformly random
    legal actions inside numba). `step(actions)` takes the learner's action for every game.

    The defaults mirror harmonies/Solo-v0 and harmonies/Versus-v0: reward "dense" points in solo, "win" in
    Versus (see REWARDS), illegal_reward -1.0 (solo) / -0.01 (Versus), max_steps 5000 (0 = no limit).
    seat: the learner's seat in Versus (None = drawn per episode from the episode's seed). An illegal
    action leaves its game unchanged, earns `illegal_reward` and is flagged in `illegal`. num_threads > 1
    steps row ranges in threads with the same results. record=True keeps each row's actions so that `game(r)`
    exports a replayable record (a few numpy operations per step; off by default). config: the games'
    `GameConfig` (default: `GameConfig(num_players=1)`, Solo-v0's rules). obs_dtype: np.float32 (the
    observation, default) or np.int16 (its raw values, half the bytes; `observation.to_float32` converts).
    """

    def __init__(self, num_games: int, *, config: GameConfig | None = None, seat: int | None = 0,
                 seed: int | Sequence[int] | None = None, reward: str | None = None, reward_scale: float | None = None,
                 illegal_reward: float | None = None, max_steps: int = 5000, num_threads: int = 1,
                 record: bool = False, obs_dtype: Any = np.float32):
        cfg = make_config(config, {"num_players": 1})
        np_ = cfg.num_players
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < np_):
            raise ValueError(f"seat (the learner's) must be None or 0..{np_ - 1}, got {seat!r}")
        self.mode = "solo" if np_ == 1 else "versus"
        if reward is None:
            reward = "dense" if np_ == 1 else "win"
        if illegal_reward is None:
            illegal_reward = -1.0 if np_ == 1 else -0.01
        # seat None draws the learner's seat per episode in Versus; Solo has one seat, 0 (a -1 there reached the
        # kernels as the observing seat and read the field before the Spirits dealt as its own)
        seat_code = int(seat) if seat is not None else (-1 if np_ > 1 else 0)
        super().__init__(num_games, cfg, MODES[self.mode], seat_code,
                         seed, reward, reward_scale, illegal_reward, max_steps, num_threads, record, obs_dtype)

    @property
    def seats(self) -> np.ndarray:
        """int64 (N,): the learner's seat in each row's current game."""
        return self._book_view[:, B_SEAT]

    def step(self, actions: Sequence[int] | np.ndarray) -> BatchStep:
        """Play the learner's action in every game (then the opponents', in Versus); auto-reset ended games."""
        self._step(actions)
        return self._result(self._learner_rewards)


class SelfPlayBatch(_Batch):
    """N games of 2-4 players where every seat is decided outside (by a policy: arrays in, arrays out).

    Each step takes the action of the player to move in every game; `players` says whose observation came
    back. rewards are per seat (N, 4), as the AEC env gives them: "dense" the mover's score change,
    "score"/"win" every seat's reward on the game's last step (also for seats that did not move then).
    An illegal action leaves the game unchanged and earns the mover `illegal_reward`. record=True: as in
    `BatchedGames`, `game(r)` then exports row r's game with every action. config: the games' `GameConfig`
    (default: `GameConfig()`, 2 players). obs_dtype: as in `BatchedGames`.
    """

    def __init__(self, num_games: int, *, config: GameConfig | None = None,
                 seed: int | Sequence[int] | None = None, reward: str = "win", reward_scale: float | None = None,
                 illegal_reward: float = -0.01, max_steps: int = 5000, num_threads: int = 1,
                 record: bool = False, obs_dtype: Any = np.float32):
        cfg = make_config(config)
        if cfg.num_players < 2:
            raise ValueError("self-play needs 2-4 players; use BatchedGames for solo")
        self.mode = "selfplay"
        super().__init__(num_games, cfg, MODE_SELFPLAY, 0, seed, reward, reward_scale,
                         illegal_reward, max_steps, num_threads, record, obs_dtype)

    def step(self, actions: Sequence[int] | np.ndarray) -> BatchStep:
        """Play the action of the player to move in every game; auto-reset ended games."""
        self._step(actions)
        return self._result(self._rewards)


__all__ = ["BatchedGames", "SelfPlayBatch", "BatchStep", "Rollouts", "init_batch", "step_rows", "rollout_batch",
           "play_plan", "play_plans", "episode_seed", "outcome", "run_rows", "check_threads", "OPPONENT_SALT", "MODES",
           "REWARDS", "SCORE_SCALE"]
