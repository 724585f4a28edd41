"""Gymnasium environments: `harmonies/Solo-v0` (the solo rules) and `harmonies/Versus-v0` (one learner
against built-in opponents). Registered by `register_envs()` (called when `harmonies_env` is imported).

Both take one flat micro-action per step (Discrete(268), see `harmonies_env.actions`) and observe
float32 (OBS_SIZE,) from the learner's seat (see `harmonies_env.observation`). The learner's legal actions
come two ways, always equal: `info["action_mask"]` (bool (268,)) on every reset and step (the Gymnasium
convention, as Taxi's), and `action_masks() -> bool (268,)`, which sb3-contrib's MaskablePPO reads. They are
registered without Gymnasium's default wrappers (`order_enforce=False`, `disable_env_checker=True`: the env itself
refuses `step()` before `reset()` with `gymnasium.error.ResetNeeded`, and the tests run `check_env`), so
`gymnasium.make(...)` is the env itself: `gym.make(...).action_masks()` and sb3-contrib's `get_action_masks(env)` work
on it (and `env.get_wrapper_attr("action_masks")()` under any further wrapper; in SubprocVecEnv workers too, so no
ActionMasker is needed), and `gymnasium.make_vec` works in every vectorization mode (Gymnasium refuses a vector entry
point together with additional wrappers). Once the game is over the mask is all True: under `make_vec`'s next-step
autoreset the next action only resets the env, so any action is right and a masked sampler always has one.

Illegal actions (Gymnasium's `check_env` and unmasked learners sample them): the game is left unchanged,
the step returns `illegal_reward` (Solo: -1.0, one point; Versus: -0.01, one point / 100) with
`info["illegal_action"] = "<reason>"`, and the episode goes on. Actions that are not real integers (bool,
float, str, beyond int64) are illegal actions too. An episode is truncated after `max_steps`
steps (legal or not; default 5000, far more than any real game takes), so a policy that only plays illegal
actions cannot loop forever.

`reset(seed=s)` reproduces an episode exactly: the game, the learner's seat and the built-in random
opponents all derive from s (opponent objects you pass keep their own randomness).

Both also take `river_loops="rulebook"` (or "bga", docs/rules.md) and `config=GameConfig(...)` in place of the
loose configuration arguments (a loose argument that contradicts the config is a ValueError naming both).

Reward scale: points enter a reward times `reward_scale` (keyword). Default 1.0 in Solo-v0 (rewards in points)
and 0.01 = 1 / 100 in Versus-v0 (as the AEC env and the batched engine); "win" rewards and `illegal_reward` are
never scaled. Pass `reward_scale=0.01` to Solo-v0 (or 1.0 to Versus-v0) for one scale in both.

Rendering: `render_mode` None, "ansi" (the table as text), "rgb_array" (a picture) or "human" (the numbered table
as `harmonies play` shows it, the learner's board last, printed after every reset and step).

Copies: `copy.deepcopy` and `pickle` of a live env (made with `gymnasium.make` or not) carry the game, the
generator `reset()` draws games and seats from, and the built-in opponents' generator: the copy continues exactly
as the original for the same actions, independently of it. Opponent objects you pass are copied as Python copies
them (a lambda does not pickle).

Solo-v0: `gymnasium.make("harmonies/Solo-v0", side="A", spirits=False)`. Reward = the change of the
score after each action (points times `reward_scale`, default 1.0), so the undiscounted return is the final score.
At the end `info` holds `"scores"` (the breakdown by category) and `"suns"`.

Versus-v0: `gymnasium.make("harmonies/Versus-v0", num_players=2, side="A", spirits=False, reward="win",
opponents=None, seat=None)`. `opponents`: None (uniform random legal actions, played inside numba), or a
list of num_players - 1 opponents (or one opponent used for every other seat), each either a callable
`(observation float32 (OBS_SIZE,), mask bool (268,)) -> action` seeing its own seat, or an object with
`act(view: PlayerView) -> int`. Opponents play inside `step()` until it is the learner's turn again. An
opponent that raises (or plays an illegal or non-integer action: IllegalActionError) breaks the episode: the
error propagates, and `step()` then raises RuntimeError until `reset()`, never playing the learner's action
in the opponent's place.
`seat`: None = the learner's seat is drawn at random each episode, else fixed (0 plays first). Rewards
as in the AEC env (`harmonies_env.env_aec`): "win" (+1 sole win, +1/k for k tied winners, -1 for a loss,
0 for everybody in a complete tie), "score" ((own - best opponent) points times `reward_scale` at the end),
"dense" (the change of the learner's own score times `reward_scale` after each of its actions). At the end
`info` holds `"scores"` (the learner's breakdown), `"winners"`, `"seat"` and `"won"`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces

from . import actions as A
from . import rules
from .config import GameConfig, make_config
from .env_render import RENDER_MODES, check_render_mode, render_game
from .game import Game, IllegalActionError, check_action
from .observation import OBS_HIGH, OBS_LOW, OBS_SIZE, encode_observation
from .rewards import REWARDS, SCORE_SCALE, check_reward, check_reward_scale, end_infos, final_rewards, totals
from .view import PlayerView

Opponent = Callable[[np.ndarray, np.ndarray], int] | Any


def _check_max_steps(max_steps: Any) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    return int(max_steps)


class _Base(gymnasium.Env):
    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 2}

    def __init__(self, config: GameConfig, render_mode: str | None, max_steps: int, illegal_reward: float,
                 reward_scale: float):
        probe = Game(seed=0, config=config)
        self.config = config
        self.num_players, self.side, self.spirits = probe.num_players, probe.side, probe.spirits
        self.render_mode = check_render_mode(render_mode)
        self.max_steps = _check_max_steps(max_steps)
        self.illegal_reward = float(illegal_reward)
        self.reward_scale = check_reward_scale(reward_scale)
        self.observation_space = spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32)
        self.action_space = spaces.Discrete(A.NUM_ACTIONS)
        self.game: Game = probe
        self.seat = 0
        self.steps = 0
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        self._mask = np.zeros(A.NUM_ACTIONS, dtype=np.bool_)
        self._reset_needed = True

    def _obs(self) -> np.ndarray:
        out = np.empty(OBS_SIZE, dtype=np.float32)
        encode_observation(self.game._state, self.seat, out)
        return out

    def action_masks(self) -> np.ndarray:
        """bool (NUM_ACTIONS,): the learner's legal actions now; all True once the game is over (any action: a
        vector env's next-step autoreset ignores it and resets, and a masked sampler is never left without one)."""
        if self.game.is_over:
            return np.ones(A.NUM_ACTIONS, dtype=np.bool_)
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.bool_)
        if self.game.current_player == self.seat:
            rules.legal_mask(self.game._state, mask, self._buf)
        return mask

    def _check_playing(self) -> None:
        """step() needs a game under way: reset() first (Gymnasium's OrderEnforcing, which these envs go without)."""
        if self._reset_needed:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        if self.game.is_over:
            raise RuntimeError("step() called on a finished episode; call reset() first")

    def _out(self, info: dict[str, Any]) -> dict[str, Any]:
        """`info` with the learner's mask (`action_masks()`) added, and the table printed in "human" mode."""
        info["action_mask"] = self.action_masks()
        if self.render_mode == "human":
            self.render()
        return info

    def _try_step(self, action: Any) -> str:
        """Apply the learner's action; '' if done, else the reason it was refused (game unchanged)."""
        self.steps += 1
        if isinstance(action, np.ndarray) and action.size == 1:
            action = action.reshape(())[()]
        try:
            action = check_action(action)  # bool, float, str, beyond int64: refused like any illegal action
        except IllegalActionError as e:
            return e.reason
        code = rules.step(self.game._state, action)
        if code:
            return rules.ERRORS[code]
        self.game.history.append(int(action))
        return ""

    def _new_game(self, seed: int | None) -> None:
        gymnasium.Env.reset(self, seed=seed)
        self.game = Game(seed=int(self.np_random.integers(0, 2**62)), config=self.config)
        self.steps = 0
        self._reset_needed = False

    def render(self) -> str | np.ndarray | None:
        return render_game(self.game, self.render_mode, you=self.seat)


class SoloEnv(_Base):
    """harmonies/Solo-v0: one player, the solo rules; reward = score change, so the return is the final score."""

    def __init__(self, side: str | None = None, spirits: bool | None = None, render_mode: str | None = None,
                 max_steps: int = 5000, illegal_reward: float = -1.0, *, reward_scale: float = 1.0,
                 river_loops: str | None = None, config: GameConfig | None = None):
        cfg = make_config(config, {"num_players": 1}, side=side, spirits=spirits, river_loops=river_loops)
        if cfg.num_players != 1:
            raise ValueError(f"Solo-v0 plays the solo rules: config.num_players must be 1, got {cfg.num_players}; "
                             "use harmonies/Versus-v0 for 2-4 players")
        super().__init__(cfg, render_mode, max_steps, illegal_reward, reward_scale)
        self._total = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self._new_game(seed)
        self._total = 0
        return self._obs(), self._out({})

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._check_playing()
        why = self._try_step(action)
        truncated = self.steps >= self.max_steps
        if why:
            return self._obs(), self.illegal_reward, False, truncated, self._out({"illegal_action": why})
        new = int(totals(self.game)[0])
        reward = float(new - self._total) * self.reward_scale
        self._total = new
        info: dict[str, Any] = {}
        terminated = self.game.is_over
        if terminated:
            info = end_infos(self.game)[0]
        return self._obs(), reward, terminated, truncated and not terminated, self._out(info)


class VersusEnv(_Base):
    """harmonies/Versus-v0: the learner against opponents that play inside step(); see the module docstring."""

    def __init__(self, num_players: int | None = None, side: str | None = None, spirits: bool | None = None,
                 reward: str = "win", opponents: Opponent | Sequence[Opponent] | None = None, seat: int | None = None,
                 render_mode: str | None = None, max_steps: int = 5000, illegal_reward: float = -0.01, *,
                 reward_scale: float = 1.0 / SCORE_SCALE, river_loops: str | None = None,
                 config: GameConfig | None = None):
        cfg = make_config(config, num_players=num_players, side=side, spirits=spirits, river_loops=river_loops)
        if cfg.num_players == 1:
            raise ValueError("Versus-v0 needs 2-4 players; use harmonies/Solo-v0 for the solo rules")
        super().__init__(cfg, render_mode, max_steps, illegal_reward, reward_scale)
        self.reward_kind = check_reward(reward)
        n_opp = self.num_players - 1
        if opponents is None:
            self.opponents: list[Opponent] | None = None
        else:
            if callable(opponents) or hasattr(opponents, "act"):
                opponents = [opponents] * n_opp
            opponents = list(opponents)
            if len(opponents) != n_opp:
                raise ValueError(f"{self.num_players} players need {n_opp} opponents, got {len(opponents)}")
            for o in opponents:
                if not (hasattr(o, "act") or callable(o)):
                    raise ValueError(f"an opponent must be a callable (observation, mask) -> action or have "
                                     f"act(view), got {o!r}")
            self.opponents = opponents
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < self.num_players):
            raise ValueError(f"seat must be None or 0..{self.num_players - 1}, got {seat!r}")
        self.fixed_seat = seat
        self._rng = np.zeros(1, dtype=np.int64)
        self._total = 0
        self._broken = ""

    def _play_opponents(self) -> None:
        """Let the opponents move until the learner's turn. If an opponent raises (or plays an illegal action:
        IllegalActionError), the episode is marked broken and the error propagates: the game is then at that
        opponent's turn, so `step` refuses until `reset` rather than play the learner's action in its place."""
        g = self.game
        if self.opponents is None:
            rules.random_until(g._state, self.seat, self._rng, 0, self._buf)
            return
        self._broken = "an opponent's move was in progress"
        while not g.is_over and g.current_player != self.seat:
            p = g.current_player
            opp = self.opponents[(p - self.seat - 1) % self.num_players]
            try:
                if hasattr(opp, "act"):
                    a = opp.act(PlayerView(g, p))
                else:
                    obs = np.empty(OBS_SIZE, dtype=np.float32)
                    encode_observation(g._state, p, obs)
                    a = opp(obs, g.action_mask())
                if isinstance(a, np.ndarray) and a.size == 1:
                    a = a.reshape(())[()]
                g.step(a)  # an opponent's illegal action is a bug in the opponent: IllegalActionError
            except Exception as e:
                self._broken = f"the opponent in seat {p} raised {type(e).__name__}: {e}"
                raise
        self._broken = ""

    def _check_turn(self) -> None:
        if self._broken:
            raise RuntimeError(f"this episode cannot go on ({self._broken}); call reset()")
        if self.game.current_player != self.seat:  # cannot happen unless the game was changed from outside
            raise RuntimeError(f"it is seat {self.game.current_player}'s turn, not the learner's (seat {self.seat}); "
                               "call reset()")

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self._new_game(seed)
        self._broken = ""
        self.seat = (int(self.np_random.integers(0, self.num_players)) if self.fixed_seat is None
                     else int(self.fixed_seat))
        self._rng[0] = int(self.np_random.integers(0, 2**62))
        self._play_opponents()
        self._total = int(totals(self.game)[self.seat])
        return self._obs(), self._out({"seat": self.seat})

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._check_playing()
        self._check_turn()
        why = self._try_step(action)
        truncated = self.steps >= self.max_steps
        if why:
            return self._obs(), self.illegal_reward, False, truncated, self._out({"illegal_action": why})
        reward = 0.0
        if self.reward_kind == "dense":
            new = int(totals(self.game)[self.seat])
            reward = (new - self._total) * self.reward_scale
            self._total = new
        self._play_opponents()
        info: dict[str, Any] = {}
        terminated = self.game.is_over
        if terminated:
            reward += float(final_rewards(self.game, self.reward_kind, self.reward_scale)[self.seat])
            info = end_infos(self.game)[self.seat]
            info["seat"] = self.seat
            info["won"] = self.seat in info["winners"]
        return self._obs(), reward, terminated, truncated and not terminated, self._out(info)


def register_envs() -> None:
    """Register harmonies/Solo-v0 and harmonies/Versus-v0 with Gymnasium (idempotent)."""
    for name, cls in (("harmonies/Solo-v0", "Solo"), ("harmonies/Versus-v0", "Versus")):
        if name not in gymnasium.registry:
            # make_vec's default mode (and "vector_entry_point") gives the batched-engine VectorEnv, "sync" and
            # "async" Gymnasium's over the single env; make() returns the env itself (no wrappers: it answers
            # action_masks(), and make_vec refuses a vector entry point with additional wrappers)
            gymnasium.register(id=name, entry_point=f"harmonies_env.env_gym:{cls}Env",
                               vector_entry_point=f"harmonies_env.vector:{cls}VectorEnv",
                               order_enforce=False, disable_env_checker=True)


register_envs()

__all__ = ["SoloEnv", "VersusEnv", "register_envs", "REWARDS"]
