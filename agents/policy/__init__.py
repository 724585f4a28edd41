"""The batched policy interface: an agent decides for many games at once, from public information only.

Why: a match of a thousand games spends its time deciding. Asked one `PlayerView` at a time, every agent pays a
Python round trip per decision and cannot batch its planner or its network; asked for every game that waits on it
at once, it can plan all those games in one numba call and score all their candidates in one forward pass.

The interface (`BatchPolicy`): `act_batch(batch: BatchView) -> int array (len(batch),)`, the micro-action of the
seat to move in every game of the batch; optional `reset_batch(seeds)` before a match, one seed per game (row) for
whatever the policy draws at random, so that a game's result depends on its own seeds only; and a `name`.
`act(view)` stays the batch of one: every `Agent` has `act_batch` (the base class loops over `act`), and the
random, greedy, n-tuple (`learned`), MLP (`mlp`) and flat-action PPO agents implement it natively (one call
for every game). A search agent that needs one instance per game (its own seed) goes in through `AgentPolicy(make)`.
docs/agents.md shows a user's own policy in a dozen lines; `agents.match.play_match` plays any of them against each
other.

`BatchView` is what a policy sees: the games that wait on it, each a public copy of its position (as
`PlayerView`'s: the generator zeroed, the draw pile sorted, other seats' unkept dealt Spirits blanked), the seat to
move in each, and, computed when first asked for, the observations and legal-action masks of those seats
(`harmonies_env.observation`'s layout, as the Gymnasium envs give them) and a `PlayerView` per game.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.game import Game
from harmonies_env.observation import OBS_SIZE
from harmonies_env.view import PlayerView

from .kernels import _observe_rows, public_rows


class BatchView:
    """The games that wait on one policy, as that policy may see them (see the module docstring).

    rows int64 (M,): each game's row in the match (0..N-1, stable for the whole match: the key of per-game memory,
    the index into `reset_batch`'s seeds); states int32 (M, STATE_SIZE): read-only public copies; players int64
    (M,): the seat to move in each (the seat this policy plays there); threads: how many threads the policy may use.
    """

    def __init__(self, states: np.ndarray, rows: np.ndarray, threads: int = 1):
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        pub = np.empty((len(rows), S.STATE_SIZE), dtype=S.STATE_DTYPE)
        public_rows(states, rows, pub)
        self.rows = S.read_only_view(rows)
        self._states = pub
        self.states = S.read_only_view(pub)
        self.players = S.read_only_view(np.ascontiguousarray(pub[:, S.CURRENT]))
        self.threads = int(threads)
        self._obs: np.ndarray | None = None
        self._masks: np.ndarray | None = None

    @classmethod
    def of(cls, views: Sequence[PlayerView]) -> "BatchView":
        """A batch of the given views (each must be its player's turn): row j is views[j]'s game."""
        for v in views:
            if not isinstance(v, PlayerView) or not v.is_my_turn:
                raise ValueError("BatchView.of takes PlayerViews of seats whose turn it is")
        states = np.stack([v._game.state for v in views]) if views else np.zeros((0, S.STATE_SIZE), S.STATE_DTYPE)
        return cls(states, np.arange(len(views)))

    def __len__(self) -> int:
        return len(self.rows)

    def subset(self, idx: np.ndarray) -> "BatchView":
        """Games `idx` of this batch, their rows and public copies kept: for a policy that hands different games
        to different players (the ladder's blocks of different bots in one match)."""
        out = BatchView.__new__(BatchView)
        pub = np.ascontiguousarray(self._states[idx])
        out.rows = S.read_only_view(np.ascontiguousarray(self.rows[idx]))
        out._states = pub
        out.states = S.read_only_view(pub)
        out.players = S.read_only_view(np.ascontiguousarray(pub[:, S.CURRENT]))
        out.threads = self.threads
        out._obs = None if self._obs is None else S.read_only_view(np.ascontiguousarray(self._obs[idx]))
        out._masks = None if self._masks is None else S.read_only_view(np.ascontiguousarray(self._masks[idx]))
        return out

    @property
    def num_players(self) -> int:
        return int(self._states[0, S.NUM_PLAYERS]) if len(self) else 0

    def _observe(self) -> None:
        m = len(self)
        obs = np.empty((m, OBS_SIZE), dtype=np.float32)
        masks = np.zeros((m, A.NUM_ACTIONS), dtype=np.bool_)
        _observe_rows(self._states, np.array(self.players), obs, masks,  # (writable: one compiled variant)
                      np.zeros(A.NUM_ACTIONS, dtype=np.int64))
        self._obs, self._masks = S.read_only_view(obs), S.read_only_view(masks)

    @property
    def observations(self) -> np.ndarray:
        """float32 (M, OBS_SIZE): each game's observation for its seat to move (`PlayerView.observation`'s)."""
        if self._obs is None:
            self._observe()
        return self._obs

    @property
    def action_masks(self) -> np.ndarray:
        """bool (M, NUM_ACTIONS): each game's legal actions (`PlayerView.action_mask`'s)."""
        if self._masks is None:
            self._observe()
        return self._masks

    def view(self, j: int) -> PlayerView:
        """Game j of the batch as a `PlayerView` of its seat to move (for agents that decide one view at a time)."""
        s = self._states[j]
        # a public copy as `PlayerView` makes its own (blanked Spirit cards do not pass `Game.from_state`'s checks, and
        # need not: the position is one the engine validated), adopted the way `Game.clone` adopts a state
        g = Game.__new__(Game)
        g.num_players, g.side_code, g.spirits, g.seed = int(s[S.NUM_PLAYERS]), int(s[S.SIDE]), bool(s[S.SPIRITS]), -1
        g._adopt(s.copy())
        g.history = []
        g._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        return PlayerView(g, int(self.players[j]))


@runtime_checkable
class BatchPolicy(Protocol):
    """What the match engine needs: a name and `act_batch`. `reset_batch(seeds)` is optional."""

    name: str

    def act_batch(self, batch: BatchView) -> np.ndarray: ...


class AgentPolicy:
    """Any per-view agent as a batch policy: one agent per game, built by `make(seed)` with that game's seed in
    `reset_batch`, asked one `PlayerView` at a time (the loop a search agent falls back to).

    make: seed -> agent (e.g. `lambda s: make_agent("mcts:200it", seed=s)`), or an agent object, which then plays
    every game (reset before the match)."""

    def __init__(self, make: Callable[[int], Any] | Any, name: str | None = None):
        self._make = make if callable(make) and not hasattr(make, "act") else None
        self._one = None if self._make is not None else make
        if self._one is not None and not callable(getattr(self._one, "act", None)):
            raise ValueError(f"AgentPolicy takes an agent (with act(view)) or a function seed -> agent, got {make!r}")
        self.name = name or getattr(self._one, "name", None) or "agent"
        self.agents: list[Any] = []

    def reset_batch(self, seeds: np.ndarray) -> None:
        if self._one is not None:
            if hasattr(self._one, "reset"):
                self._one.reset()
            self.agents = [self._one] * len(seeds)
        else:
            self.agents = [self._make(int(s)) for s in seeds]
            for a in self.agents:
                if hasattr(a, "reset"):
                    a.reset()

    def act_batch(self, batch: BatchView) -> np.ndarray:
        if not self.agents:
            raise ValueError(f"{self.name}: reset_batch(seeds) must come before act_batch")
        return np.array([int(self.agents[r].act(batch.view(j))) for j, r in enumerate(batch.rows)], dtype=np.int64)


def is_native(policy: Any) -> bool:
    """Whether `policy` decides a batch in one go (its own `act_batch`), not by the base class's loop over `act`."""
    from ..base import Agent

    fn = getattr(type(policy), "act_batch", None)
    return fn is not None and fn is not Agent.act_batch


class PlanRows:
    """Per-game whole-turn plans of a batched planning policy: a plan is made when a game's turn starts (or its
    plan ran out), then played one micro-action per `act_batch`, as `PlanAgent` does for one game.

    Arrays by the games' rows in the match: plans int64 (N, width), lens / pos (next index) / owner (the turn and
    seat the plan was made for, turn * MAX_PLAYERS + seat) int64 (N,)."""

    def __init__(self, num_games: int, width: int):
        self.plans = np.zeros((num_games, width), dtype=np.int64)
        self.lens = np.zeros(num_games, dtype=np.int64)
        self.pos = np.zeros(num_games, dtype=np.int64)
        self.owner = np.full(num_games, -1, dtype=np.int64)

    @staticmethod
    def owners(states: np.ndarray) -> np.ndarray:
        return states[:, S.TURN] * S.MAX_PLAYERS + states[:, S.CURRENT]

    def stale(self, states: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Indices j of the games (states[j], int32 (M, STATE_SIZE), at rows[j]) that need a new plan: theirs is
        used up, or was made for another turn or seat."""
        return np.flatnonzero((self.pos[rows] >= self.lens[rows]) | (self.owner[rows] != self.owners(states)))

    def store(self, states: np.ndarray, rows: np.ndarray, plans: np.ndarray, lens: np.ndarray) -> None:
        """Games at `rows` (positions `states`) get the plans plans[k, :lens[k]]."""
        self.plans[rows, : plans.shape[1]] = plans
        self.lens[rows] = lens
        self.pos[rows] = 0
        self.owner[rows] = self.owners(states)

    def next(self, rows: np.ndarray) -> np.ndarray:
        """The next micro-action of each game's plan, int64 (M,) (-1 where a game has none)."""
        ok = self.pos[rows] < self.lens[rows]
        out = np.where(ok, self.plans[rows, np.minimum(self.pos[rows], self.plans.shape[1] - 1)], -1)
        self.pos[rows[ok]] += 1
        return out

    def forget(self, rows: np.ndarray) -> None:
        """Drop the plans of these rows (they start new games)."""
        self.lens[rows] = 0
        self.pos[rows] = 0
        self.owner[rows] = -1


__all__ = ["BatchView", "BatchPolicy", "AgentPolicy", "PlanRows", "public_rows", "is_native"]
