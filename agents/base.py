"""What every agent shares: the `Agent` base class and a determinization that never depends on hidden order.

An agent is any object with `act(view) -> int` and a `name`; it receives a `PlayerView` (see
`harmonies_env.view`), never the real `Game`. Search agents look ahead on `private_copy(view, seed)`.
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def private_copy(view: Any, seed: int):
    """A full `Game` consistent with what the view's player saw, whose hidden parts come only from `seed`.

    `view.determinize(seed)` already resamples the hidden parts; here the draw pile is additionally put in
    a canonical (sorted) order before our own shuffle and the generator is reseeded, so the copy is a
    function of the player's information and `seed` alone, whatever the real hidden order was.
    """
    g = view.determinize(int(seed))
    s = g.state
    rng = np.random.default_rng([int(seed) & (2**63 - 1), 0x4A5B])
    n = int(s[S.DECK_COUNT])
    deck = S.field(s, "deck")
    deck[:n] = rng.permutation(np.sort(deck[:n]))
    s[S.RNG] = int(rng.integers(0, 2**62))
    return g


#: State fields that the player to move sees and that a plan depends on (used to detect a changed view).
PUBLIC_FIELDS = ("stack", "cubes", "hand", "central", "market", "slot", "cubes_placed", "spirit_kept",
                 "current", "turn", "took_tokens", "took_card", "taken_space", "pouch")


def public_key(state: np.ndarray) -> bytes:
    """Bytes of the public fields of a state vector: equal keys mean the same position for planning."""
    return b"".join(np.ascontiguousarray(S.field(state, f)).tobytes() for f in PUBLIC_FIELDS)
