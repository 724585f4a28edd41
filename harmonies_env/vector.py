"""Vector environments on the batched engine (`harmonies_env.batch`): N games stepped in ONE numba call.

- `SoloVectorEnv` / `VersusVectorEnv`: `gymnasium.vector.VectorEnv`s with the same observations, actions,
  rewards and defaults as harmonies/Solo-v0 and harmonies/Versus-v0 (built-in uniformly random opponents
  only: custom opponents need the single env). Same-step autoreset: when a game ends, the returned
  observation is the next game's and `infos["final_obs"]` / `infos["final_info"]` hold the ended one's, as
  Gymnasium's `AutoresetMode.SAME_STEP`. `action_masks()` -> bool (N, 268). Episode statistics come with
  the step that ends a game: `infos["episode"] = {"r", "l", "t"}` with mask `infos["_episode"]` (do not add
  Gymnasium's `RecordEpisodeStatistics`: it assumes next-step autoreset and would drop each episode's first
  reward).
- `SB3VecEnv` (loaded on first use, needs stable-baselines3): a `stable_baselines3` `VecEnv` over the same
  engine, which sb3-contrib's MaskablePPO trains from directly: it reads the masks with
  `env_method("action_masks")` and checks them with `has_attr("action_masks")`, both answered here. Ended
  games report `infos[i]["terminal_observation"]` and `infos[i]["episode"] = {"r", "l", "t"}` (what
  `VecMonitor` would add, so no monitor wrapper is needed). `get_state()` / `set_state()` save and put back the
  games in flight (`batch_state` / `set_batch_state`), so a training run resumes exactly where it stopped.

Seeding: `reset(seed=b)` gives game r the base seed b + r, so its first game is `Game(seed=b + r)` and its
episode k `Game(seed=batch.episode_seed(b + r, k))`; a list gives each game's base seed. This differs from
the single envs' `reset(seed=...)` (which draw the game seed from a generator), so a vector env and N single
envs given the same seed play different games; each is reproducible on its own.
"""
from __future__ import annotations

import functools
import time
from typing import Any, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import actions as A
from . import batch as _B
from . import rules
from . import state as S
from .batch import BatchedGames, BatchStep
from .config import GameConfig, make_config
from .observation import OBS_HIGH, OBS_LOW


class HarmoniesVectorEnv(VectorEnv):
    """N games with one learner each (Solo, or Versus against built-in random opponents), as one VectorEnv.

    See `BatchedGames` for the arguments; config: the games' one `GameConfig` (default: `GameConfig(num_players=1)`).
    The public constructors are `SoloVectorEnv` and `VersusVectorEnv`, which take the loose game arguments and
    build the config. Observations come back as copies, as Gymnasium's vector envs do
    (copy=True); `copy=False` returns the engine's own observation buffer instead (faster: a read-only view
    that the next `step` / `reset` updates in place, so copy what you keep). Rewards come back as float64 (N,).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 8, config: GameConfig | None = None, reward: str | None = None,
                 seat: int | None = 0, reward_scale: float | None = None, illegal_reward: float | None = None,
                 max_steps: int = 5000, num_threads: int = 1, copy: bool = True):
        self.batch = BatchedGames(num_envs, config=config or GameConfig(num_players=1), seat=seat, seed=0,
                                  reward=reward, reward_scale=reward_scale, illegal_reward=illegal_reward,
                                  max_steps=max_steps, num_threads=num_threads)
        self.config = self.batch.config
        self.num_envs = self.batch.num_games
        self.copy = bool(copy)
        self.render_mode = None
        self.single_observation_space = spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32)
        self.single_action_space = spaces.Discrete(A.NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._starts = np.zeros(self.num_envs, dtype=np.float64)
        self._np_random = None
        self._seeded = False

    # ---- Gymnasium API ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """New games in every slot. seed: int b -> base seeds b, b+1, ...; a list -> one per game; None ->
        drawn from the generator seeded by the last int seed (fresh entropy if never seeded)."""
        if options:
            raise ValueError(f"reset() takes no options, got {options!r}")
        if seed is None:
            if self._np_random is None:
                self._np_random, self._np_random_seed = seeding.np_random(None)
            base: Any = int(self._np_random.integers(0, 2**62))
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
            base = int(seed)
        else:
            base = list(seed)
            if len(base) != self.num_envs:
                raise ValueError(f"reset(seed=...) needs {self.num_envs} seeds (one per game), got {len(base)}")
            self._np_random, self._np_random_seed = seeding.np_random(int(base[0]))
        obs, _ = self.batch.reset(base)
        self._starts[:] = time.perf_counter()
        infos: dict[str, Any] = {}
        if self.batch.mode == "versus":
            infos = {"seat": self.batch.seats.copy(), "_seat": np.ones(self.num_envs, dtype=bool)}
        return (obs.copy() if self.copy else obs), infos

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        out = self.batch.step(actions)
        infos = _vector_infos(out, self.batch, self._starts)
        obs = out.obs.copy() if self.copy else out.obs
        return obs, out.rewards.astype(np.float64), out.terminated, out.truncated, infos

    def action_masks(self) -> np.ndarray:
        """bool (N, NUM_ACTIONS): each game's legal actions for the learner now (a copy)."""
        return self.batch.masks.copy()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Per-game results of a method or attribute, as SyncVectorEnv.call (only "action_masks" is per game)."""
        if name == "action_masks":
            return tuple(self.action_masks())
        attr = getattr(self, name)
        value = attr(*args, **kwargs) if callable(attr) else attr
        return tuple(value for _ in range(self.num_envs))

    def close_extras(self, **kwargs: Any) -> None:
        pass


class SoloVectorEnv(HarmoniesVectorEnv):
    """N harmonies/Solo-v0 games: reward = score change times `reward_scale` (default 1.0: the return is the final
    score), illegal -1.0."""

    def __init__(self, num_envs: int = 8, side: str | None = None, spirits: bool | None = None,
                 max_steps: int = 5000, illegal_reward: float = -1.0, num_threads: int = 1, copy: bool = True,
                 render_mode: str | None = None, *, reward_scale: float = 1.0, river_loops: str | None = None,
                 config: GameConfig | None = None):
        if render_mode is not None:
            raise ValueError("the vector env does not render; render a single game with batch.game(i)")
        cfg = make_config(config, {"num_players": 1}, side=side, spirits=spirits, river_loops=river_loops)
        if cfg.num_players != 1:
            raise ValueError(f"SoloVectorEnv plays the solo rules: config.num_players must be 1, got "
                             f"{cfg.num_players}; use VersusVectorEnv for 2-4 players")
        super().__init__(num_envs, cfg, "dense", 0, reward_scale, illegal_reward, max_steps, num_threads, copy)


class VersusVectorEnv(HarmoniesVectorEnv):
    """N harmonies/Versus-v0 games against built-in uniformly random opponents (played inside numba).

    seat None (default, as Versus-v0) draws the learner's seat per episode; `infos["final_info"]["seat"]`
    and the reset infos say which.
    """

    def __init__(self, num_envs: int = 8, num_players: int | None = None, side: str | None = None,
                 spirits: bool | None = None, reward: str = "win", opponents: Any = None, seat: int | None = None,
                 max_steps: int = 5000, illegal_reward: float = -0.01, num_threads: int = 1, copy: bool = True,
                 render_mode: str | None = None, *, reward_scale: float = 0.01, river_loops: str | None = None,
                 config: GameConfig | None = None):
        if opponents is not None:
            raise ValueError("the vector env plays built-in random opponents only (opponents=None); use "
                             "harmonies/Versus-v0 for custom opponents")
        if render_mode is not None:
            raise ValueError("the vector env does not render; render a single game with batch.game(i)")
        cfg = make_config(config, num_players=num_players, side=side, spirits=spirits, river_loops=river_loops)
        if cfg.num_players == 1:
            raise ValueError("Versus needs 2-4 players; use SoloVectorEnv for the solo rules")
        super().__init__(num_envs, cfg, reward, seat, reward_scale, illegal_reward, max_steps, num_threads, copy)


def _vector_infos(out: BatchStep, batch: BatchedGames, starts: np.ndarray) -> dict[str, Any]:
    """Gymnasium-style vector infos (arrays with "_key" masks) for the ended and illegal games of a step."""
    infos: dict[str, Any] = {}
    ended = out.terminated | out.truncated
    if out.illegal.any():
        reasons = np.full(batch.num_games, "", dtype=object)
        for r in np.flatnonzero(out.illegal):
            reasons[r] = rules.ERRORS[batch.errors[r]]
        infos["illegal_action"] = reasons
        infos["_illegal_action"] = out.illegal.copy()
    if ended.any():
        now = time.perf_counter()
        rows = np.flatnonzero(ended)
        final_obs = np.full(batch.num_games, None, dtype=object)
        for r in rows:
            final_obs[r] = out.final_obs[r].copy()
        seats = out.seats
        idx = np.arange(batch.num_games)
        r_ = np.where(ended, out.episode_returns[idx, seats], 0.0)
        l_ = np.where(ended, out.episode_lengths, 0)
        t_ = np.where(ended, np.round(now - starts, 6), 0.0)
        starts[ended] = now
        episode = {"r": r_, "l": l_, "t": t_, "_r": ended.copy(), "_l": ended.copy(), "_t": ended.copy()}
        final_info: dict[str, Any] = {
            "score": np.where(ended, out.final_scores[idx, seats, -1], 0), "_score": ended.copy(),
            "won": ended & (out.final_won[idx, seats] == 1), "_won": ended.copy(),
            "seat": np.where(ended, seats, 0), "_seat": ended.copy(),
            "episode": episode, "_episode": ended.copy(),
        }
        if batch.num_players == 1:
            final_info["suns"] = np.where(ended, out.suns, 0)
            final_info["_suns"] = ended.copy()
        infos.update({"final_obs": final_obs, "_final_obs": ended.copy(), "final_info": final_info,
                      "_final_info": ended.copy(), "episode": episode, "_episode": ended.copy()})
    return infos


# ---------------------------------------------------------------------------------------------------------
# a batch's whole state, to save and put back (exact resumes of training)
# ---------------------------------------------------------------------------------------------------------
def batch_state(batch: Any) -> dict[str, np.ndarray]:
    """Copies of everything a `BatchedGames` / `SelfPlayBatch` carries from one step to the next: the positions
    (`states`), the per-row bookkeeping (`book`: base seeds, episode numbers, learner seats, the built-in
    opponents' generators, step counts, last rewarded scores) and the running returns (`ep_returns`). The
    observations and masks follow from them. `set_batch_state` puts them back: a training run saved between two
    steps continues with the very games it was playing (`experiments.runner`, `--resume`)."""
    return {"states": batch.states.copy(), "book": batch.book.copy(), "ep_returns": batch._ep_returns.copy()}


def set_batch_state(batch: Any, state: dict[str, Any]) -> None:
    """Put a `batch_state` back into `batch` (same size and configuration). The positions are validated by
    `set_states` and the bookkeeping the kernels index with (learner seats, counters) is checked; ValueError
    names what is wrong and leaves the batch unchanged."""
    n = batch.num_games
    want = {"states": ((n, S.STATE_SIZE), S.STATE_DTYPE), "book": ((n, _B.BOOK_SIZE), np.int64),
            "ep_returns": ((n, S.MAX_PLAYERS), np.float64)}
    arrs: dict[str, np.ndarray] = {}
    for key, (shape, dtype) in want.items():
        if key not in state:
            raise ValueError(f"batch state: no {key!r}")
        a = np.asarray(state[key])
        if a.shape != shape or a.dtype != dtype:
            raise ValueError(f"batch state {key!r}: want {np.dtype(dtype).name} {shape}, got {a.dtype.name} {a.shape}")
        arrs[key] = a
    book = arrs["book"]
    players = batch.num_players
    seats, fixed = book[:, _B.B_SEAT], batch.cfg[_B.CFG_SEAT]  # fixed: -1 (drawn per episode) only in Versus
    ok = (seats == fixed) if fixed >= 0 else ((seats >= 0) & (seats < players))
    ok &= (book[:, _B.B_EPISODE] >= 0) & (book[:, _B.B_LEN] >= 0) & np.isin(book[:, _B.B_FRESH], (0, 1))
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise ValueError(f"batch state 'book' row {int(bad[0])}: seat, episode, step count or fresh flag out of range")
    if not np.isfinite(arrs["ep_returns"]).all():
        raise ValueError("batch state 'ep_returns': not all finite")
    old_book, old_ret = batch._book.copy(), batch._ep_returns.copy()
    batch._book[:] = book
    batch._ep_returns[:] = arrs["ep_returns"]
    try:
        batch.set_states(arrs["states"])  # validates, then re-encodes every observation and mask
    except ValueError:
        batch._book[:] = old_book
        batch._ep_returns[:] = old_ret
        raise


# ---------------------------------------------------------------------------------------------------------
# Stable-Baselines3 adapter (loaded lazily: importing SB3 pulls in torch)
# ---------------------------------------------------------------------------------------------------------
class BatchVecEnvMethods:
    """The per-sub-env part of SB3's `VecEnv` API for an env that is one batch with no sub-env objects: the
    batch answers for all rows. Mixed in first by `SB3VecEnv` and `agents.pool_env.PoolVecEnv`;
    needs `num_envs` and `action_masks()`."""

    num_envs: int

    def action_masks(self) -> np.ndarray:  # pragma: no cover - provided by the env
        raise NotImplementedError

    def _rows(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)):
            return [int(indices)]
        return [int(i) for i in indices]

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list:
        rows = self._rows(indices)
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[r] for r in rows]
        value = getattr(self, method_name)(*method_args, **method_kwargs)  # once, for the whole batch
        return [value for _ in rows]

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        value = getattr(self, attr_name)  # AttributeError if absent, as VecEnv.has_attr expects
        return [value for _ in self._rows(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"the batched env has no per-game attributes to set ({attr_name!r})")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._rows(indices)]

    def close(self) -> None:
        pass

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


@functools.cache
def _sb3_class() -> type:
    from stable_baselines3.common.vec_env import VecEnv

    class SB3VecEnv(BatchVecEnvMethods, VecEnv):
        """N Harmonies games (Solo, or Versus against built-in random opponents) as an SB3 `VecEnv`.

        Arguments as `BatchedGames` (defaults as Solo-v0 / Versus-v0; config: the one `GameConfig`, which
        `make_sb3_vec_env`, the public constructor, builds from loose arguments), plus `seed` for the first reset.
        sb3-contrib's MaskablePPO trains from it directly (no ActionMasker, no SubprocVecEnv: numba steps
        all games in one call; `num_threads` > 1 spreads them over cores). Observations, masks and terminal
        observations are handed out as fresh copies: SB3 keeps `_last_obs` across a step, while the engine
        updates its own buffer in place.
        """

        def __init__(self, num_envs: int = 64, config: GameConfig | None = None, reward: str | None = None,
                     seat: int | None = 0, reward_scale: float | None = None, illegal_reward: float | None = None,
                     max_steps: int = 5000, num_threads: int = 1, seed: int | None = None):
            self.batch = BatchedGames(num_envs, config=config or GameConfig(num_players=1), seat=seat, seed=0,
                                      reward=reward, reward_scale=reward_scale, illegal_reward=illegal_reward,
                                      max_steps=max_steps, num_threads=num_threads)
            self.config = self.batch.config
            self.render_mode = None
            super().__init__(self.batch.num_games, spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32),
                             spaces.Discrete(A.NUM_ACTIONS))
            if seed is not None:
                self.seed(seed)
            self._actions: np.ndarray | None = None
            self._starts = np.zeros(self.num_envs, dtype=np.float64)

        def seed(self, seed: int | None = None) -> Sequence[int | None]:
            """Base seeds seed, seed+1, ... for the next reset (SB3 semantics: applied at reset)."""
            return super().seed(seed)

        def reset(self) -> np.ndarray:
            base: Any = None
            if all(s is not None for s in self._seeds):
                base = [int(s) for s in self._seeds]
            obs, _ = self.batch.reset(base)
            self._reset_seeds()
            self._reset_options()
            self._starts[:] = time.perf_counter()
            if self.batch.mode == "versus":
                self.reset_infos = [{"seat": int(s)} for s in self.batch.seats]
            return obs.copy()

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = np.asarray(actions)

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            if self._actions is None:
                raise RuntimeError("step_wait() without step_async()")
            out = self.batch.step(self._actions)
            self._actions = None
            dones = out.terminated | out.truncated
            infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
            if out.illegal.any():
                for r in np.flatnonzero(out.illegal):
                    infos[r]["illegal_action"] = rules.ERRORS[self.batch.errors[r]]
            if dones.any():
                now = time.perf_counter()
                for r in np.flatnonzero(dones):
                    seat = int(out.seats[r])
                    info = infos[r]
                    info["terminal_observation"] = out.final_obs[r].copy()
                    info["TimeLimit.truncated"] = bool(out.truncated[r])
                    info["episode"] = {"r": float(out.episode_returns[r, seat]), "l": int(out.episode_lengths[r]),
                                       "t": round(now - self._starts[r], 6)}
                    info["score"] = int(out.final_scores[r, seat, -1])
                    info["won"] = bool(out.final_won[r, seat])
                    info["seat"] = seat
                    if self.batch.num_players == 1:
                        info["suns"] = int(out.suns[r])
                    self._starts[r] = now
            return out.obs.copy(), out.rewards.astype(np.float32), dones, infos

        def action_masks(self) -> np.ndarray:
            """bool (N, NUM_ACTIONS): the learner's legal actions in every game."""
            return self.batch.masks.copy()

        def get_state(self) -> dict[str, np.ndarray]:
            """The games in flight and their bookkeeping (`batch_state`), between two steps."""
            return batch_state(self.batch)

        def set_state(self, state: dict[str, Any]) -> None:
            """Continue from a `get_state` of an env of the same size and configuration (`set_batch_state`)."""
            set_batch_state(self.batch, state)

    SB3VecEnv.__module__ = __name__
    SB3VecEnv.__qualname__ = "SB3VecEnv"
    return SB3VecEnv


def __getattr__(name: str) -> Any:
    if name == "SB3VecEnv":
        return _sb3_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_sb3_vec_env(num_envs: int = 64, num_players: int | None = None, side: str | None = None,
                     spirits: bool | None = None, *, river_loops: str | None = None, config: GameConfig | None = None,
                     **kwargs: Any) -> Any:
    """An `SB3VecEnv` (see its docstring; `kwargs` are its other arguments) of the games `config`, or the loose
    num_players (default 1: Solo-v0's rules), side, spirits, river_loops (a public constructor: the config is built
    here, once); needs stable-baselines3 (`pip install -e .[train]`)."""
    cfg = make_config(config, {"num_players": 1}, num_players=num_players, side=side, spirits=spirits,
                      river_loops=river_loops)
    return _sb3_class()(num_envs, config=cfg, **kwargs)


__all__ = ["HarmoniesVectorEnv", "SoloVectorEnv", "VersusVectorEnv", "make_sb3_vec_env", "batch_state",
           "set_batch_state"]  # + SB3VecEnv, lazily
