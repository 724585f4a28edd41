"""What every agent shares: the `Agent` base class and a determinization that never depends on hidden order.

An agent is any object with `act(view) -> int` and a `name`; it receives a `PlayerView` (see
`harmonies_env.view`), never the real `Game`. Search agents look ahead on `private_copy(view, seed)`. Every `Agent`
also decides for many games at once (`act_batch(batch)`, `agents.policy`): the base class loops over `act`, the
random, greedy, learned (n-tuple and MLP) and PPO agents decide a whole batch in one go.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from harmonies_env import state as S


class Agent:
    """Base class: subclasses implement `act`. `reset()` is called before each new game."""

    name: str = "agent"

    def act(self, view: Any) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def reset(self) -> None:
        """Forget anything cached about the previous game."""

    def reset_batch(self, seeds: Any) -> None:
        """Before a batched match (`agents.match.play_match`): one seed per game, for what the agent draws at random.
        The base class only resets; agents with a native `act_batch` keep per-game state here."""
        self.reset()

    def act_batch(self, batch: Any) -> Any:
        """The micro-action of the seat to move in every game of `batch` (an `agents.policy.BatchView`): int64
        (len(batch),). The base class asks `act` one view at a time, with this one instance for every game (an agent
        that must be seeded per game goes through `agents.policy.AgentPolicy`)."""
        return np.array([int(self.act(batch.view(j))) for j in range(len(batch))], dtype=np.int64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def private_copy(view: Any, seed: int):
    """A full `Game` consistent with what the view's player saw, whose hidden parts come only from `seed`.

    `view.determinize(seed)` already resamples the hidden parts; here the draw pile is additionally put in
    a canonical (sorted) order before our own shuffle and the generator is reseeded, so the copy is a
    function of the player's information and `seed` alone, whatever the real hidden order was.
    """
    g = view.determinize(int(seed))
    s = g.state.copy()  # `Game.state` is read-only: edit a copy, then install it through the validating setter
    rng = np.random.default_rng([int(seed) & (2**63 - 1), 0x4A5B])
    n = int(s[S.DECK_COUNT])
    deck = S.field(s, "deck")
    deck[:n] = rng.permutation(np.sort(deck[:n]))
    S.set_rng(s, int(rng.integers(0, 2**62)))
    history = g.history
    g.state = s  # validated (a few microseconds); the seed stays -1, the history is kept
    g.history = history
    return g


#: State fields that the player to move sees and that a plan depends on (used to detect a changed view).
PUBLIC_FIELDS = ("stack_words", "cubes", "hand", "central", "market", "slot", "card_held", "spirit_kept",
                 "current", "turn", "took_card", "taken_space", "pouch")


def public_key(state: np.ndarray) -> bytes:
    """Bytes of the public fields of a state vector: equal keys mean the same position for planning."""
    return b"".join(np.ascontiguousarray(S.field(state, f)).tobytes() for f in PUBLIC_FIELDS)


class PlanAgent(Agent):
    """An agent that decides a whole turn at once and plays it one micro-action per call.

    Why: a Harmonies turn holds no chance, so a plan made on any private copy stays valid for the whole turn.
    Subclasses implement `choose_plan(view, game)`: the micro-actions of the mover's whole turn, given the view and
    a private copy `game = private_copy(view, self.plan_seed(view))` (search agents draw more copies from the view).
    This base caches the plan and plans again whenever the view is not the position the plan expects (another seat
    moved, or a new game started).
    """

    seed: int = 0

    def choose_plan(self, view: Any, game: Any) -> list[int]:  # pragma: no cover - interface
        raise NotImplementedError

    def plan_seed(self, view: Any) -> int:
        """Seed of the private copy a plan is made on (only hidden parts depend on it; a plan never does)."""
        return self.seed

    def reset(self) -> None:
        self._plan: list[int] = []
        self._expect: bytes | None = None

    def act(self, view: Any) -> int:
        if not hasattr(self, "_plan"):
            self.reset()
        g = private_copy(view, self.plan_seed(view))
        key = public_key(g.state)
        if not (self._plan and key == self._expect):
            plan = list(self.choose_plan(view, g)) if not g.is_over else []
            if not plan:  # cannot happen on a legal position; fall back to the first legal action
                return int(view.legal_actions()[0])
            self._plan = [int(a) for a in plan]
        a = self._plan.pop(0)
        g.step(a)
        self._expect = public_key(g.state) if self._plan else None
        return int(a)
