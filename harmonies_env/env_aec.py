# noqa: D212, D415
"""
# Harmonies

| Import             | `from harmonies_env import harmonies_v0; env = harmonies_v0.env(num_players=2)` |
|--------------------|--------------------------------------------------------------------|
| Actions            | Discrete                                                           |
| Parallel API       | No                                                                 |
| Manual Control     | No                                                                 |
| Agents             | `agents = ['player_0', ..., 'player_{n-1}']`                       |
| Agents             | 1-4                                                                |
| Action Shape       | ()                                                                 |
| Action Values      | Discrete(268)                                                      |
| Observation Shape  | (2811,)                                                            |
| Observation Values | [0, 5] (float32)                                                   |
| State Shape        | (256,) (int32, `harmonies_env.state.STATE_SIZE`)                   |

*Harmonies* (Libellud, 2024) for 1-4 players: take 3 tokens from the central board, place them on your
board to build landscapes, take Animal cards and place their cubes on matching habitats. Every micro-action
(take a central space, place one token, take a card, place one cube, keep a Spirit, end the turn) is one
AEC step, so an agent acts several times in a row during its turn; `agent_selection` is always the player
to move. Seat `player_0` starts each round.

### Arguments

``` python
harmonies_v0.env(num_players=2, side="A", spirits=False, reward="win", render_mode=None, max_cycles=None,
                 river_loops="rulebook", config=None)
```

`harmonies_v0.raw_env(...)` takes exactly the same arguments (`harmonies_v0` is `harmonies_env.env_aec`'s
versioned name, as in `pettingzoo.classic`; `harmonies_env.env` / `raw_env` are the same functions).

`num_players`: 1 (the solo rules) to 4. `side`: board side "A" (river) or "B" (islands). `spirits`: the
Nature's Spirit variant. `reward`: "win", "score" or "dense" (below). `render_mode`: None, "ansi" (the
table as text), "rgb_array" (a picture, uint8 HxWx3) or "human" (prints the numbered table as `harmonies play`
shows it after every reset and step, and on `render()`, which returns None). `max_cycles`: if set, every
agent is truncated once that many actions have been played (games end on their own: a 2-4 player game never
exceeds a few hundred actions, see the tests). `river_loops`: how a river loop scores, "rulebook" or "bga"
(docs/rules.md). `config`: a `harmonies_env.GameConfig` in place of num_players / side / spirits / river_loops
(a loose argument that contradicts it is a ValueError naming both).

### Observation Space

A dict: `'observation'` is float32 (2811,), the acting agent's view from its own seat (its board first,
then the others in turn order; see `harmonies_env.observation` for the layout). It holds only what the
player can see: never the draw pile order, the pouch's draw order, or the Spirit cards others were dealt
and did not keep. `'action_mask'` is int8 (268,): 1 for the legal actions of the agent to move, all zeros
for every other agent and once the game is over.

### State

`state()` is the whole position, hidden information included: int32 (STATE_SIZE,), a copy of the engine's state
vector (`harmonies_env.state.FIELDS` names each field; docs/engine.md has the table). Its shape and dtype never
change over a game and across configurations; `state_space` is the matching Box (every field >= -1 except `rng`,
the 64-bit state of the game's generator, which a learner should drop). `Game.from_state(env.state())` rebuilds the
position.

### Copies

`copy.deepcopy(env)` and `pickle` of a live env (wrapped or raw) hold the whole game, the seed generator of later
seedless resets and every PettingZoo dict: the copy continues exactly as the original for the same actions, and
is independent of it.

### Action Space

The 268 flat micro-actions of `harmonies_env.actions` (take central space, place token colour c on cell i,
take market card, place a cube from held card h on cell i, keep Spirit j, solo card replacement, end turn).

### Illegal actions

As in the PettingZoo classic environments, `env()` wraps the raw environment in `TerminateIllegalWrapper`:
an action outside the mask ends the game, the offending agent gets -1 and the others 0. The unwrapped
`raw_env` raises `harmonies_env.IllegalActionError` (a ValueError naming the reason) and is left unchanged,
the same agent still selected, so it can act again. Actions must be real integers (Python or numpy ints, or a
one-element integer array, wrapped or raw): bool, float, str or values beyond int64 raise IllegalActionError
naming the action, in both (the wrapped env does not end the game for them). A refused `reset(seed=...)` (not an
integer 0 <= seed < 2**63) is a ValueError that changes nothing. After every agent is done, `env()` warns and
ignores a step (PettingZoo's OrderEnforcingWrapper); `raw_env` raises RuntimeError ("call reset()"), as it does
for a step before the first reset.

### Rewards

Rewards are given to every agent (not only the one acting) as they arise.

- `"win"` (default), at the end only. 2-4 players: the winners are the players with the most points, ties
  broken by the most animal cubes placed; if still tied the victory is shared. A sole winner gets +1; with
  k < n tied winners each gets +1/k; every other player gets -1. If all n players share the victory
  (a complete tie) everybody gets 0. Solo: the number of suns earned (the solo rules' result, 0-11).
- `"score"`, at the end only: (own total - best opponent total) / 100. Solo: own total / 100.
- `"dense"`, after every action: the change of each agent's own total score / 100, so an agent's return
  is its final score / 100 (the others' scores do not enter).

`infos[agent]` is `{}` during the game; at the end it holds `"scores"` (that player's breakdown by category),
`"winners"` (winning seats) and, in solo, `"suns"`.

### Version History

* v0: Initial release; `state()`, "human" rendering and live copies added without changing a game.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from . import actions as A
from . import rules
from . import state as S
from .config import GameConfig, make_config
from .env_render import check_render_mode, render_game
from .game import Game, IllegalActionError, check_action, check_seed
from .observation import OBS_HIGH, OBS_LOW, OBS_SIZE, encode_observation
from .rewards import SCORE_SCALE, check_reward, end_infos, final_rewards, totals


class _OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's OrderEnforcingWrapper with a direct `last()`.

    The generic `last()` reaches the raw env's dicts through every wrapper's `__getattr__` (about 20
    chained lookups per call, most of an env step's cost); this one reads them from the raw env directly
    and still observes through the wrapper chain, so `TerminateIllegalWrapper` sees the mask as before.
    """

    def __init__(self, env: AECEnv):
        super().__init__(env)
        self._raw = env.unwrapped

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        raw = self._raw
        agent = raw.agent_selection
        obs = self.observe(agent) if observe else None
        return (obs, raw._cumulative_rewards[agent], raw.terminations[agent], raw.truncations[agent],
                raw.infos[agent])

    def step(self, action: Any) -> None:
        """Check the action's type first (a one-element integer array is its integer): a bool, float or str is
        one IllegalActionError naming it, never an assertion or a numpy error from the wrappers below."""
        if action is not None:
            action = _as_action(action)
        super().step(action)

    @property
    def agent_selection(self) -> str:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self._raw.agent_selection

    @property
    def agents(self) -> list[str]:
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self._raw.agents


def _as_action(action: Any) -> int:
    """A real integer action as int (a one-element integer array gives its element); IllegalActionError names
    anything else (bool, float, str, values beyond int64)."""
    if isinstance(action, np.ndarray) and action.size == 1:
        action = action.reshape(())[()]
    return check_action(action)


def env(num_players: int | None = None, side: str | None = None, spirits: bool | None = None,
        reward: str = "win", render_mode: str | None = None, max_cycles: int | None = None, *,
        river_loops: str | None = None, config: GameConfig | None = None) -> AECEnv:
    """The Harmonies AEC environment with the PettingZoo classic wrappers (illegal action ends the game, -1).

    Takes exactly `raw_env`'s arguments (see the module docstring)."""
    e = raw_env(num_players, side, spirits, reward, render_mode, max_cycles, river_loops=river_loops,
                config=config)
    e = wrappers.TerminateIllegalWrapper(e, illegal_reward=-1)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = _OrderEnforcingWrapper(e)
    return e


#: `state_space` bounds: every field of the state vector is >= -1, except the generator's 64-bit state.
_STATE_LOW = np.full(S.STATE_SIZE, -1, dtype=S.STATE_DTYPE)
_STATE_LOW[S.RNG:S.RNG + 2] = np.iinfo(S.STATE_DTYPE).min
_STATE_LOW[S.STACK_WORDS:S.STACK_WORDS + S.MAX_PLAYERS * S.STACK_WORDS_PER_SEAT] = np.iinfo(S.STATE_DTYPE).min


class raw_env(AECEnv):
    """Harmonies as a PettingZoo AEC environment; see the module docstring for spaces and rewards.

    A plain object: `copy.deepcopy` and `pickle` carry its whole live state (the game, the seed generator, every
    PettingZoo dict), so a copy continues as the original does.
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "name": "harmonies_v0", "is_parallelizable": False,
                "render_fps": 2}

    def __init__(self, num_players: int | None = None, side: str | None = None, spirits: bool | None = None,
                 reward: str = "win", render_mode: str | None = None, max_cycles: int | None = None, *,
                 river_loops: str | None = None, config: GameConfig | None = None):
        super().__init__()
        self.config = make_config(config, num_players=num_players, side=side, spirits=spirits,
                                  river_loops=river_loops)
        probe = Game(seed=0, config=self.config)
        self.num_players = probe.num_players
        self.side = probe.side
        self.spirits = probe.spirits
        self.reward_kind = check_reward(reward)
        self.render_mode = check_render_mode(render_mode)
        if max_cycles is not None and (isinstance(max_cycles, bool) or not isinstance(max_cycles, int)
                                       or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive integer or None, got {max_cycles!r}")
        self.max_cycles = max_cycles
        self.possible_agents = [f"player_{p}" for p in range(self.num_players)]
        self.agents = self.possible_agents[:]
        self._index = {a: p for p, a in enumerate(self.possible_agents)}
        obs_space = spaces.Dict({
            "observation": spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32),
            "action_mask": spaces.Box(0, 1, shape=(A.NUM_ACTIONS,), dtype=np.int8),
        })
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(A.NUM_ACTIONS) for a in self.possible_agents}
        self.state_space = spaces.Box(_STATE_LOW, np.iinfo(S.STATE_DTYPE).max, shape=(S.STATE_SIZE,),
                                      dtype=S.STATE_DTYPE)
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        self._seeder = np.random.default_rng()
        self.game: Game = probe
        self.steps = 0
        self._started = False

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ---- PettingZoo API ----
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """New game. reset(seed=s) plays the same game as Game(..., seed=s); later seedless resets follow from s.

        A seed that is not an integer 0 <= s < 2**63 is a ValueError before anything changes."""
        if seed is not None:
            game_seed = check_seed(seed)  # first: a refused seed must not have replaced the generator
            self._seeder = np.random.default_rng(game_seed)
        else:
            game_seed = int(self._seeder.integers(0, 2**62))
        self.game = Game(seed=game_seed, config=self.config)
        self.steps = 0
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game.current_player]
        if self.reward_kind == "dense":
            self._totals = totals(self.game)
        self._started = True
        if self.render_mode == "human":
            self.render()

    def state(self) -> np.ndarray:
        """int32 (STATE_SIZE,): the whole position, hidden information included (a copy of the engine's state
        vector; `harmonies_env.state.FIELDS` names its fields). Same shape and dtype in every game."""
        return self.game._state.copy()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        p = self._index[agent]
        obs = np.empty(OBS_SIZE, dtype=np.float32)
        encode_observation(self.game._state, p, obs)
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
        if not self.game.is_over and p == self.game.current_player and not self.truncations.get(agent, False):
            rules.legal_mask(self.game._state, mask, self._buf)
        return {"observation": obs, "action_mask": mask}

    def step(self, action: int) -> None:
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        if not self.agents:
            raise RuntimeError("step() after every agent is done: the game is over; call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = _as_action(action)  # only real integers: bool, float, str or beyond int64 -> IllegalActionError
        if self.game.current_player != self._index[agent]:  # cannot happen unless the game was changed outside
            raise RuntimeError(f"{agent} is selected but it is player_{self.game.current_player}'s turn; "
                               "call reset()")
        code = rules.step(self.game._state, action)
        if code:
            raise IllegalActionError(action, rules.ERRORS[code], self.game.describe_action(action)
                                     if 0 <= action < A.NUM_ACTIONS else "")
        self.game.history.append(action)
        self.steps += 1
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        if self.reward_kind == "dense":
            new = totals(self.game)
            for p, a in enumerate(self.possible_agents):
                self.rewards[a] = float(new[p] - self._totals[p]) / SCORE_SCALE
            self._totals = new
        if self.game.is_over:
            final = final_rewards(self.game, self.reward_kind)
            infos = end_infos(self.game)
            for p, a in enumerate(self.possible_agents):
                self.rewards[a] += float(final[p])
                self.terminations[a] = True
                self.infos[a] = infos[p]
        elif self.max_cycles is not None and self.steps >= self.max_cycles:
            for a in self.agents:
                self.truncations[a] = True
        self.agent_selection = self.possible_agents[self.game.current_player]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | np.ndarray | None:
        return render_game(self.game, self.render_mode)

    def close(self) -> None:
        pass

    # ---- extras ----
    def action_mask(self) -> np.ndarray:
        """bool (NUM_ACTIONS,): legal actions of the agent to move (all False once the game is over)."""
        return self.game.action_mask()
