"""The Python face of the engine: `Game`, game records, `determinize` and `score_board`.

`Game` owns one state vector (see `state`) and calls the kernels in `rules`; it validates input, raises
`IllegalActionError` with the reason, and speaks the game's words. Nothing here holds rules logic.
"""
from __future__ import annotations

import json
import secrets
from typing import Any, Iterable, Mapping

import numpy as np

from . import actions as A
from . import rules
from . import state as S
from .cards import CUBES_ON_CARD, FIRST_SPIRIT, NUM_CARDS, SPIRIT_SUN_BONUS, card_name
from .data import COLOURS, SIDES
from .geometry import MAX_CELLS, NUM_CELLS, cell_index, cell_qr, side_code
from .scoring import CATEGORIES, NUM_CATEGORIES, score_into, solo_suns
from .stacks import STACK_AFTER, stack_code, stack_kind

RECORD_VERSION = 1


class IllegalActionError(ValueError):
    """An action that the rules do not allow now; the game is left unchanged."""

    def __init__(self, action: int, reason: str, description: str = ""):
        self.action = action
        self.reason = reason
        what = f"action {action}" + (f" ({description})" if description else "")
        super().__init__(f"illegal {what}: {reason}")


def check_config(num_players: Any, side: Any, spirits: Any) -> tuple[int, int, int]:
    """Validate a game configuration: (num_players 1-4, side code 0/1, spirits 0/1), or a ValueError naming it."""
    if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) or not 1 <= num_players <= 4:
        raise ValueError(f"num_players must be an integer from 1 to 4 (1 = solo), got {num_players!r}")
    if not isinstance(spirits, (bool, np.bool_)) and spirits not in (0, 1):
        raise ValueError(f"spirits must be True or False, got {spirits!r}")
    return int(num_players), side_code(side), int(bool(spirits))


def _new_seed() -> int:
    return secrets.randbits(62)


def check_seed(seed: Any) -> int:
    """Validate a game seed (a non-negative integer below 2**63); None draws a fresh one."""
    if seed is None:
        return _new_seed()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0 or seed >= 2**63:
        raise ValueError(f"seed must be a non-negative integer below 2**63 or None, got {seed!r}")
    return int(seed)


class Game:
    """One game of Harmonies for 1-4 players (1 = solo), Side "A" or "B", with or without Spirits.

    The same seed gives the same game; each game owns its generator, so games never disturb each other.
    """

    def __init__(self, num_players: int = 2, side: str = "A", spirits: bool = False, seed: int | None = None):
        self.num_players, self.side_code, sp = check_config(num_players, side, spirits)
        self.spirits = bool(sp)
        self.seed = check_seed(seed)
        self.state = np.zeros(S.STATE_SIZE, dtype=np.int64)
        S.init_state(self.state, self.num_players, self.side_code, sp, self.seed)
        self.history: list[int] = []
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)

    # ---- configuration and position ------------------------------------------------------------------
    @property
    def side(self) -> str:
        return SIDES[self.side_code]

    @property
    def num_cells(self) -> int:
        return int(NUM_CELLS[self.side_code])

    @property
    def current_player(self) -> int:
        return int(self.state[S.CURRENT])

    @property
    def is_over(self) -> bool:
        return bool(self.state[S.GAME_OVER])

    @property
    def turn(self) -> int:
        """Turns completed so far, all players together."""
        return int(self.state[S.TURN])

    @property
    def round(self) -> int:
        """Current round, from 1."""
        return self.turn // self.num_players + 1

    def field(self, name: str) -> np.ndarray:
        """A named state field as an array view (see `state.FIELDS`)."""
        return S.field(self.state, name)

    # ---- actions -----------------------------------------------------------------------------------
    def action_mask(self) -> np.ndarray:
        """bool (NUM_ACTIONS,): True where the action is legal for the player to move."""
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.bool_)
        rules.legal_mask(self.state, mask, self._buf)
        return mask

    def legal_actions(self) -> list[int]:
        n = rules.legal_actions(self.state, self._buf)
        return self._buf[:n].tolist()

    def step(self, action: int) -> None:
        """Play one micro-action for the player to move; IllegalActionError (game unchanged) if not legal."""
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise IllegalActionError(action, f"actions are integers 0..{A.NUM_ACTIONS - 1}, "
                                             f"got {type(action).__name__}")
        code = rules.step(self.state, int(action))
        if code:
            desc = self.describe_action(action) if 0 <= action < A.NUM_ACTIONS else ""
            raise IllegalActionError(int(action), rules.ERRORS[code], desc)
        self.history.append(int(action))

    def describe_action(self, action: int) -> str:
        """The action in a player's words, e.g. 'place gray on cell 7 (q=1, r=2): mountain 2'."""
        kind, x, y = A.decode(action)
        s = self.state
        p = self.current_player
        if kind == "take_tokens":
            toks = [COLOURS[c] for c in S.field(s, "central")[x] if c >= 0]
            return f"take central space {x}" + (f" ({', '.join(toks)})" if toks else " (empty)")
        if kind == "place_token":
            if y >= self.num_cells:
                return f"place {COLOURS[x]} on cell {y} (not on this board)"
            q, r = cell_qr(self.side, y)
            new = STACK_AFTER[S.field(s, "stack")[p, y], x]
            what = f": {stack_kind(new)}" if new >= 0 else ""
            return f"place {COLOURS[x]} on cell {y} (q={q}, r={r}){what}"
        if kind == "take_card":
            card = S.field(s, "market")[x]
            return f"take market card {x}" + (f" ({card_name(card)})" if card >= 0 else " (empty slot)")
        if kind == "place_cube":
            card = S.field(s, "slot")[p, x]
            name = card_name(card) if card >= 0 else "an empty slot"
            where = f"cell {y}" + (f" (q={cell_qr(self.side, y)[0]}, r={cell_qr(self.side, y)[1]})"
                                   if y < self.num_cells else "")
            return f"place a cube from held card {x} ({name}) on {where}"
        if kind == "keep_spirit":
            card = S.field(s, "spirit_dealt")[p, x]
            return f"keep Spirit card {x}" + (f" ({card_name(card)})" if card >= 0 else "")
        if kind == "solo_replace":
            card = S.field(s, "market")[x]
            return (f"discard market card {x}" + (f" ({card_name(card)})" if card >= 0 else "")
                    + ", replace it from the draw pile and end the turn")
        return "end the turn"

    # ---- results -----------------------------------------------------------------------------------
    def scores(self) -> list[dict[str, int]]:
        """Per player, the score breakdown by category (trees ... spirit, total), as things stand now."""
        out = np.zeros((S.MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
        rules.scores_into(self.state, out)
        return [dict(zip(CATEGORIES, map(int, out[p]))) for p in range(self.num_players)]

    def animal_cubes(self) -> list[int]:
        """Animal cubes each player has placed (the tie-break; the Spirit cube is not counted)."""
        return [int(x) for x in self.field("animal_cubes")[: self.num_players]]

    def winners(self) -> list[int]:
        """Seats that win: most points, then most animal cubes placed; several seats = shared victory."""
        totals = [sc["total"] for sc in self.scores()]
        cubes = self.animal_cubes()
        best = max(zip(totals, cubes))
        return [p for p in range(self.num_players) if (totals[p], cubes[p]) == best]

    def suns(self) -> int:
        """Solo result in suns (score thresholds, +1 on Side A, +2 without Spirit / +1 'groups' Spirit)."""
        if self.num_players != 1:
            raise ValueError("suns are the solo result; this game has more than one player")
        kept = int(self.field("spirit_kept")[0])
        bonus = 2 if kept < 0 else int(SPIRIT_SUN_BONUS[kept])
        return int(solo_suns(self.scores()[0]["total"], self.side_code, bonus))

    # ---- copies and records --------------------------------------------------------------------------
    def clone(self) -> "Game":
        g = Game.__new__(Game)
        g.num_players, g.side_code, g.spirits, g.seed = self.num_players, self.side_code, self.spirits, self.seed
        g.state = self.state.copy()
        g.history = list(self.history)
        g._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        return g

    def record(self) -> dict:
        """A JSON-able record (configuration, seed, actions) that `Game.replay` reproduces exactly."""
        return {"version": RECORD_VERSION, "num_players": self.num_players, "side": self.side,
                "spirits": self.spirits, "seed": self.seed, "actions": list(self.history)}

    def to_json(self) -> str:
        return json.dumps(self.record())

    @classmethod
    def replay(cls, record: Mapping[str, Any] | str) -> "Game":
        """Rebuild a game from its record (a dict or its JSON text) by replaying every action."""
        if isinstance(record, str):
            record = json.loads(record)
        missing = {"num_players", "side", "spirits", "seed", "actions"} - set(record)
        if missing:
            raise ValueError(f"game record lacks {sorted(missing)}")
        g = cls(record["num_players"], record["side"], record["spirits"], record["seed"])
        for k, a in enumerate(record["actions"]):
            try:
                g.step(a)
            except IllegalActionError as e:
                raise ValueError(f"game record action #{k} does not replay: {e}") from None
        return g

    def __str__(self) -> str:
        from .render import render_game
        return render_game(self)

    def render(self) -> str:
        return str(self)


def determinize(game: Game, player: int, seed: int) -> Game:
    """A copy of `game` where what `player` cannot see is resampled consistently with what they saw.

    Resampled: the pouch's draws (the generator), the draw pile's order, and other players' Spirit cards
    that `player` has not seen. Public facts (pouch colour counts, deck contents, kept Spirits) stay. The
    new game's generator comes only from `seed`, so the true hidden order is never revealed.
    """
    if not 0 <= player < game.num_players:
        raise ValueError(f"player must be 0..{game.num_players - 1}, got {player}")
    g = game.clone()
    s = g.state
    rng = np.random.default_rng(check_seed(seed))
    s[S.RNG] = int(rng.integers(0, 2**62))
    n = int(s[S.DECK_COUNT])
    deck = S.field(s, "deck")
    deck[:n] = rng.permutation(np.sort(deck[:n]))  # from the contents only: the true order must not leak
    if g.spirits:
        dealt = S.field(s, "spirit_dealt")
        kept = S.field(s, "spirit_kept")
        seen = set(dealt[player].tolist()) | {int(k) for k in kept if k >= 0}
        pool = [c for c in range(FIRST_SPIRIT, NUM_CARDS + 1) if c not in seen]
        rng.shuffle(pool)
        for o in range(g.num_players):
            if o == player:
                continue
            for j in range(2):
                if dealt[o, j] != kept[o]:
                    dealt[o, j] = pool.pop()
    g.seed = -1  # the record of a determinized copy does not replay: its chance is not the original's
    return g


def score_board(side: str, board: Mapping[tuple[int, int], Iterable[str]],
                cards: Iterable[tuple[int, int]] = ()) -> dict[str, int]:
    """Score one board given as {(q, r): [colour, ... bottom -> top]} and [(card_id, cubes_placed), ...].

    Returns trees, mountains, fields, buildings, water, animals, spirit and total. Unknown cells,
    impossible stacks, unknown cards or impossible cube counts raise ValueError saying which.
    """
    sc = side_code(side)
    bb = np.zeros(15, dtype=np.int64)
    codes = np.zeros(MAX_CELLS, dtype=np.int64)
    for qr, colours in board.items():
        if not (isinstance(qr, (tuple, list)) and len(qr) == 2):
            raise ValueError(f"board keys are axial (q, r) pairs, got {qr!r}")
        i = cell_index(side, *qr)
        try:
            codes[i] = stack_code(list(colours))
        except ValueError as e:
            raise ValueError(f"cell (q={qr[0]}, r={qr[1]}): {e}") from None
    for i in range(NUM_CELLS[sc]):
        bb[codes[i]] |= 1 << i
    placed = np.full(NUM_CARDS + 1, -1, dtype=np.int64)
    spirits = 0
    for card_id, n in cards:
        if not 1 <= int(card_id) <= NUM_CARDS:
            raise ValueError(f"card id must be 1..{NUM_CARDS}, got {card_id!r}")
        if not 0 <= int(n) <= CUBES_ON_CARD[card_id]:
            raise ValueError(f"card {card_id} ({card_name(card_id)}) holds {CUBES_ON_CARD[card_id]} cubes, "
                             f"got cubes_placed={n!r}")
        if placed[card_id] >= 0:
            raise ValueError(f"card {card_id} ({card_name(card_id)}) is listed twice")
        spirits += card_id >= FIRST_SPIRIT
        placed[card_id] = int(n)
    if spirits > 1:
        raise ValueError("a player keeps at most one Spirit card")
    out = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    score_into(sc, bb, placed, out)
    return dict(zip(CATEGORIES, map(int, out)))
