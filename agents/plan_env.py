"""`PlanChoiceVecEnv`: many games against the greedy agent as a Stable-Baselines3 `VecEnv` (needs `.[train]`).

Each row is a game of `num_players` (default 2) in which the learner holds one seat (drawn per game) and the
greedy agent plays the others. A learner step picks one of the greedy planner's `PLAN_CHOICES` best plans for
its whole turn (see `agents.plan_choice`); the reward comes at the end of the game: +1 win / -1 loss / 0 draw
(ties broken by animal cubes, as the rules say) plus `margin_reward` x (own total - best other total).
All rows are stepped in one numba call through the batched engine's machinery (`harmonies_env.batch`: episode
seeds, winner test, thread runner; `num_threads` > 1 or 0 = every core: row ranges in threads); MaskablePPO reads
`action_masks()`.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from harmonies_env import state as S
from harmonies_env.vector import BatchVecEnvMethods

from . import plan_choice as P
from .greedy import DEFAULT_WEIGHTS, MAX_PLAN, planner_settings

_SIDES = {"A": 0, "B": 1}


class PlanChoiceVecEnv(BatchVecEnvMethods, VecEnv):
    """N games, learner vs greedy, one whole-turn plan choice per step (see the module docstring)."""

    def __init__(self, num_envs: int = 64, num_players: int = 2, side: str = "A", spirits: bool = False,
                 margin_reward: float = 0.02, opponent_beam: int = 24, opponent_weights: Any = None,
                 num_threads: int = 1, seed: int | None = None):
        if isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if isinstance(num_players, (bool, np.bool_)) or not isinstance(num_players, (int, np.integer)) \
                or num_players not in (2, 3, 4):
            raise ValueError(f"num_players must be 2, 3 or 4 (the learner needs greedy opponents), got {num_players!r}")
        if not isinstance(side, str) or side not in _SIDES:
            raise ValueError(f"side must be 'A' or 'B', got {side!r}")
        if not isinstance(spirits, (bool, np.bool_)) and spirits not in (0, 1):
            raise ValueError(f"spirits must be True or False, got {spirits!r}")
        if isinstance(margin_reward, (bool, np.bool_)) or not isinstance(margin_reward, (int, float, np.integer,
                                                                                          np.floating)) \
                or not np.isfinite(margin_reward):
            raise ValueError(f"margin_reward must be a finite number, got {margin_reward!r}")
        if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))
                                 or not 0 <= seed < 2**62):
            raise ValueError(f"seed must be None or an integer 0..2**62, got {seed!r}")
        opponent_beam, self.opponent_weights = planner_settings(opponent_beam, opponent_weights)
        n = int(num_envs)
        self.num_players, self.side, self.spirits = int(num_players), side, bool(spirits)
        self._cfg = np.array([num_players, _SIDES[side], int(spirits), P.PLAN_BEAM, opponent_beam, margin_reward],
                            dtype=np.float64)
        self.weights = DEFAULT_WEIGHTS.copy()
        self.num_threads = P.thread_count(num_threads)
        self._states = np.zeros((n, S.STATE_SIZE), dtype=np.int64)
        self._seats = np.zeros(n, dtype=np.int64)
        self._book = np.zeros((n, 3), dtype=np.int64)
        self._plans = np.zeros((n, P.PLAN_CHOICES, MAX_PLAN), dtype=np.int64)
        self._lens = np.zeros((n, P.PLAN_CHOICES), dtype=np.int64)
        self._values = np.zeros((n, P.PLAN_CHOICES), dtype=np.float64)
        self._obs = np.zeros((n, P.PLAN_OBS_SIZE), dtype=np.float32)
        self._masks = np.zeros((n, P.PLAN_CHOICES), dtype=bool)
        self._rewards = np.zeros(n, dtype=np.float32)
        self._dones = np.zeros(n, dtype=bool)
        self._results = np.zeros((n, P.RESULT_SIZE), dtype=np.float64)
        self.render_mode = None
        super().__init__(n, spaces.Box(-np.inf, np.inf, (P.PLAN_OBS_SIZE,), np.float32),
                         spaces.Discrete(P.PLAN_CHOICES))
        self._base = 0 if seed is None else int(seed)
        self._actions: np.ndarray | None = None
        self._starts = np.zeros(n, dtype=np.float64)
        self._returns = np.zeros(n, dtype=np.float64)

    @property
    def states(self) -> np.ndarray:
        """int64 (N, STATE_SIZE): every row's game, a read-only view (the kernels trust these arrays, so all of
        this env's buffers are private: a value written by hand could send them out of bounds)."""
        return S.read_only_view(self._states)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Row r's games come from base seed `seed + r` (applied at the next reset)."""
        if seed is not None:
            self._base = int(seed)
        return [None if seed is None else int(seed) + r for r in range(self.num_envs)]

    def _run(self, actions: np.ndarray) -> None:
        P.plan_env_step(self._states, self._seats, self._book, actions, self._cfg, self.weights, self.opponent_weights,
                        self._plans, self._lens, self._values, self._obs, self._masks, self._rewards, self._dones,
                        self._results, self.num_threads)

    def reset(self) -> np.ndarray:
        self._book[:, 0] = self._base + np.arange(self.num_envs)
        self._book[:, 1:] = 0
        self._run(np.full(self.num_envs, -1, dtype=np.int64))
        self._starts[:] = time.perf_counter()
        self._returns[:] = 0.0
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        raw = np.asarray(actions)
        if raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.integer):
            raise ValueError(f"plan choices must be integers 0..{P.PLAN_CHOICES - 1}, got dtype {raw.dtype}")
        if raw.dtype == np.uint64:
            raw = np.minimum(raw, P.PLAN_CHOICES)  # out of range either way, but must fit int64
        a = raw.reshape(-1).astype(np.int64)
        if a.shape != (self.num_envs,):
            raise ValueError(f"expected {self.num_envs} actions, got shape {np.shape(actions)}")
        bad = (a < 0) | (a >= P.PLAN_CHOICES)
        bad[~bad] = ~self._masks[np.flatnonzero(~bad), a[~bad]]
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ValueError(f"row {r}: plan {int(a[r])} is not a candidate (only {int(self._masks[r].sum())} exist)")
        self._actions = a

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        self._run(self._actions)
        self._actions = None
        self._returns += self._rewards
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if self._dones.any():
            now = time.perf_counter()
            for r in np.flatnonzero(self._dones):
                res = self._results[r]
                infos[r] = {"terminal_observation": self._obs[r].copy(),  # next game's; the reward is terminal
                            "TimeLimit.truncated": False,
                            "episode": {"r": float(self._returns[r]), "l": int(res[P.R_DECISIONS]),
                                        "t": round(now - self._starts[r], 6)},
                            "score": int(res[P.R_MINE]), "opponent_score": int(res[P.R_BEST_OTHER]),
                            "won": float(res[P.R_WON])}
                self._returns[r] = 0.0
                self._starts[r] = now
        return self._obs.copy(), self._rewards.copy(), self._dones.copy(), infos

    def action_masks(self) -> np.ndarray:
        """bool (N, PLAN_CHOICES): which candidate plans exist in every row."""
        return self._masks.copy()
