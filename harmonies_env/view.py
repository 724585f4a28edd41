"""`PlayerView`: what one player sees of a game. Agents receive this, never the real `Game`.

An agent is any object with `act(view: PlayerView) -> int`. The view exposes the public table and the
player's own secrets (their dealt Spirits), the legal actions when it is their turn, and `determinize`
to get a full `Game` to search in whose hidden parts (pouch draws, draw pile order, unseen Spirits) are
resampled, so looking ahead can never peek at the real hidden order.

A view is a SNAPSHOT: it holds no reference to the real game, only a private copy (`public_copy`) whose
hidden parts are gone: the generator is zeroed, the draw pile is in sorted order (its contents are public),
the Spirit cards dealt to other seats and not kept are blanked (0), and the seed is -1. So nothing an agent
reaches from its view (attributes, arrays, the copy's state) tells the real hidden order. Make a new view for
each decision (`PlayerView(game, p)` is cheap): the view does not follow the game after it is made.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from . import actions as A
from . import rules
from . import state as S
from .game import Game, determinize
from .observation import OBS_SIZE, encode_observation


def public_copy(game: Game, player: int) -> Game:
    """A copy of `game` holding only what seat `player` may know (see the module docstring).

    `determinize(public_copy(g, p), p, seed)` equals `determinize(g, p, seed)`: determinization already
    depends only on public facts and `player`'s secrets, and the blanks keep which dealt Spirit was kept.
    """
    g = game.clone()
    S.hide_private(g._state, player)
    g.seed = -1
    return g


class PlayerView:
    """Seat `player`'s view of `game` at the moment it is made (a snapshot; see the module docstring)."""

    __slots__ = ("_game", "_player", "_buf")

    def __init__(self, game: Game, player: int):
        if not isinstance(game, Game):
            raise ValueError(f"PlayerView takes a Game, got {type(game).__name__}")
        if isinstance(player, (bool, np.bool_)) or not isinstance(player, (int, np.integer)) \
                or not 0 <= player < game.num_players:
            raise ValueError(f"player must be a seat 0..{game.num_players - 1}, got {player!r}")
        self._player = int(player)
        self._game = public_copy(game, self._player)
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)

    # ---- configuration ----
    @property
    def player(self) -> int:
        """The seat this view belongs to (0 plays first)."""
        return self._player

    @property
    def num_players(self) -> int:
        return self._game.num_players

    @property
    def side(self) -> str:
        """Board side: "A" (river) or "B" (islands)."""
        return self._game.side

    @property
    def spirits(self) -> bool:
        """Whether the Nature's Spirit variant is on."""
        return self._game.spirits

    # ---- position ----
    @property
    def current_player(self) -> int:
        return self._game.current_player

    @property
    def is_my_turn(self) -> bool:
        return not self._game.is_over and self._game.current_player == self._player

    @property
    def is_over(self) -> bool:
        return self._game.is_over

    @property
    def round(self) -> int:
        return self._game.round

    @property
    def observation(self) -> np.ndarray:
        """float32 (OBS_SIZE,): this player's observation (see `harmonies_env.observation`)."""
        out = np.empty(OBS_SIZE, dtype=np.float32)
        encode_observation(self._game._state, self._player, out)
        return out

    @property
    def action_mask(self) -> np.ndarray:
        """bool (NUM_ACTIONS,): the legal actions if it is this player's turn, else all False."""
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.bool_)
        if self.is_my_turn:
            rules.legal_mask(self._game._state, mask, self._buf)
        return mask

    def legal_actions(self) -> list[int]:
        """Legal action indices for this player (empty when it is not their turn)."""
        if not self.is_my_turn:
            return []
        n = rules.legal_actions(self._game._state, self._buf)
        return self._buf[:n].tolist()

    def describe_action(self, action: int) -> str:
        """The action (of the player to move) in the game's words, as it would apply now, told to this view's
        player: another seat's dealt Spirit cards are not named."""
        return self._game.describe_action(action, viewer=self._player)

    def scores(self) -> list[dict[str, int]]:
        """Everyone's current score breakdown (public: boards and completed cards are on the table)."""
        return self._game.scores()

    def winners(self) -> list[int]:
        """Winning seats of a finished game; ValueError while it is still going."""
        if not self._game.is_over:
            raise ValueError("the game is not over yet")
        return self._game.winners()

    def suns(self) -> int:
        """Solo result in suns, as things stand now (solo games only)."""
        return self._game.suns()

    def text(self) -> str:
        """The table as text (boards, central board, market, pouch size): all public."""
        return str(self._game)

    def determinize(self, seed: int) -> Game:
        """A full Game consistent with what this player has seen, hidden parts resampled from `seed`."""
        return determinize(self._game, self._player, seed)

    def __repr__(self) -> str:
        return (f"PlayerView(player={self._player}, num_players={self.num_players}, side={self.side!r}, "
                f"spirits={self.spirits}, round={self.round}, to_move={self.current_player})")


class Agent(Protocol):
    """What every agent implements."""

    def act(self, view: PlayerView) -> int: ...


__all__ = ["PlayerView", "Agent", "public_copy"]
