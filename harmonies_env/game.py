"""The Python face of the engine: `Game`, game records, `determinize` and `score_board`.

`Game` owns one state vector (see `state`) and calls the kernels in `rules`; it validates input, raises
`IllegalActionError` with the reason, and speaks the game's words. Nothing here holds rules logic.

`Game.state` is a READ-ONLY view (the kernels trust the state: a value written by hand could send them out of
bounds and crash the process). A position is replaced only through a validating route: `Game.from_state(s)`, or
assigning `game.state = s` (`set_state`). The writable array is `_state`, used by `harmonies_env`'s own modules.
"""
from __future__ import annotations

import json
import secrets
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import actions as A
from . import chance as C
from . import rules
from . import state as S
from .batch_kernels import outcome
from .cards import CUBES_ON_CARD, FIRST_SPIRIT, NUM_CARDS, SPIRIT_SUN_BONUS, card_name
from .config import RIVER_LOOPS, GameConfig, make_config
from .data import COLOURS, SIDES
from .geometry import MAX_CELLS, NUM_CELLS, cell_index, cell_qr
from .scoring import CATEGORIES, NUM_CATEGORIES, score_into, solo_suns
from .stacks import STACK_AFTER, stack_code, stack_kind

#: The record version this code writes for a game with a rules option off its default (river_loops "bga"): such a
#: record holds "river_loops", and an older reader refuses it by its version instead of replaying it with other
#: scoring. A game with default rules is still written as version 1 (no "river_loops": the rulebook), as before.
RECORD_VERSION = 2
#: Record versions this code reads: 1 (no rules options: river_loops "rulebook", the only value it may name) and 2.
RECORD_VERSIONS = (1, 2)


class IllegalActionError(ValueError):
    """An action that the rules do not allow now; the game is left unchanged."""

    def __init__(self, action: int, reason: str, description: str = ""):
        self.action = action
        self.reason = reason
        self.description = description
        what = f"action {action}" + (f" ({description})" if description else "")
        super().__init__(f"illegal {what}: {reason}")

    def __reduce__(self) -> tuple:
        """Pickled with its own arguments, so a `--jobs` worker's error reaches the parent as itself (unpickled from
        its message alone it raised TypeError in the pool's result thread, and the match waited forever)."""
        return type(self), (self.action, self.reason, self.description)


def check_action(action: Any) -> int:
    """A real integer action as int; IllegalActionError for bool, float, str, arrays or values outside int64
    (values in int64 but outside 0..NUM_ACTIONS-1 pass here: the rules refuse them with their reason)."""
    if type(action) is int and -(2**63) <= action < 2**63:  # the common cases first, fast
        return action
    if isinstance(action, np.integer) and type(action) is not np.uint64:
        return int(action)
    if isinstance(action, np.ndarray) and action.ndim == 0:
        action = action[()]
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise IllegalActionError(action, f"actions are integers 0..{A.NUM_ACTIONS - 1}, "
                                         f"got {type(action).__name__} {action!r}")
    if not -(2**63) <= int(action) < 2**63:
        raise IllegalActionError(int(action), f"the action index is outside the action space 0..{A.NUM_ACTIONS - 1}")
    return int(action)


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
    `state`: int32 (STATE_SIZE,), a read-only live view of the position (see `set_state` to replace it).
    The configuration comes as loose arguments (defaults 2 players, Side "A", no Spirits, river_loops "rulebook")
    or as `config=GameConfig(...)`; a loose argument that contradicts the config is a ValueError naming both.
    explicit_chance=True leaves every random event (the set-up's deal, each refill) as a chance node to resolve
    with `apply_chance` or `sample_chance` (see "explicit chance" below and `harmonies_env.chance`).
    """

    #: chance bookkeeping (int64 (chance.CHANCE_SIZE,)) in explicit-chance mode; None in the default mode
    _chance: np.ndarray | None = None

    def __init__(self, num_players: int | None = None, side: str | None = None, spirits: bool | None = None,
                 seed: int | None = None, *, river_loops: str | None = None, config: GameConfig | None = None,
                 explicit_chance: bool = False):
        cfg = make_config(config, num_players=num_players, side=side, spirits=spirits, river_loops=river_loops)
        if not isinstance(explicit_chance, (bool, np.bool_)):
            raise ValueError(f"explicit_chance must be True or False, got {explicit_chance!r}")
        self.num_players, self.side_code, self.spirits = cfg.num_players, cfg.side_code, cfg.spirits
        self.seed = check_seed(seed)
        self._adopt(S.new_state())
        if explicit_chance:
            self._chance = np.zeros(C.CHANCE_SIZE, dtype=np.int64)
            C.init_explicit(self._state, self._chance, self.num_players, self.side_code, int(self.spirits),
                            self.seed, cfg.river_loops_code)
        else:
            S.init_state(self._state, self.num_players, self.side_code, int(self.spirits), self.seed,
                         cfg.river_loops_code)
        self.history: list[int] = []
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)

    def _adopt(self, arr: np.ndarray) -> None:
        """Own `arr` (int32 (STATE_SIZE,), C-contiguous) as the state; `state` becomes its read-only view."""
        self._state = arr
        self._state_view = S.read_only_view(arr)

    def __copy__(self) -> "Game":  # a copy owns its state and history (as `clone`)
        return self.clone()

    def __deepcopy__(self, memo: dict) -> "Game":
        return self.clone()

    def __getstate__(self) -> dict:  # pickle: the read-only view is rebuilt over the new array, never copied apart
        d = dict(self.__dict__)
        d.pop("_state_view", None)
        return d

    def __setstate__(self, d: dict) -> None:
        """Unpickling: every field checked as `from_state` checks a state (ValueError, one line), since the kernels
        trust it (an edited `num_players` hung them, an edited market size crashed the process). Unpickling still
        runs whatever code a pickle names: load only pickles you trust (docs/environments.md)."""
        self.__dict__.update(_valid_pickle(d))
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        self._adopt(self._state)

    @property
    def state(self) -> np.ndarray:
        """int32 (STATE_SIZE,): the position, as a READ-ONLY live view (`harmonies_env.state` names its fields).

        Read-only because the kernels trust the state: a value written by hand can send them out of bounds and
        crash the process. Copy it to experiment (`game.state.copy()`), and replace the position with
        `game.state = new_state` (validated, see `set_state`) or build a game with `Game.from_state`.
        """
        return self._state_view

    @state.setter
    def state(self, value: np.ndarray) -> None:
        self.set_state(value)

    def set_state(self, state: np.ndarray) -> None:
        """Replace the position by `state` (int32 (STATE_SIZE,), copied) after validating every field
        (`harmonies_env.validate`; ValueError names the bad field, and the game is left unchanged).

        The configuration (players, side, Spirits) follows the new state. The game no longer has a seed and its
        history is cleared: no record can replay a position set by hand (`record()` raises).
        """
        arr = _valid_state(state)
        self.num_players = int(arr[S.NUM_PLAYERS])
        self.side_code = int(arr[S.SIDE])
        self.spirits = bool(arr[S.SPIRITS])
        self.seed = -1
        self.history = []
        self._adopt(arr)
        if self._chance is not None:  # a valid state is a decision: no chance pending, its draw pile dealt from
            self._chance = np.zeros(C.CHANCE_SIZE, dtype=np.int64)
            self._chance[C.C_DECK_SHUFFLED] = 1

    # ---- configuration and position ------------------------------------------------------------------
    @property
    def side(self) -> str:
        return SIDES[self.side_code]

    @property
    def river_loops(self) -> str:
        """How a river loop scores in this game: "rulebook" or "bga" (the state's `river_loops` field)."""
        return RIVER_LOOPS[int(self._state[S.RIVER_LOOPS])]

    @property
    def config(self) -> GameConfig:
        """This game's configuration (players, side, Spirits, river_loops) as a `GameConfig`."""
        return GameConfig(self.num_players, self.side, self.spirits, self.river_loops)

    @property
    def num_cells(self) -> int:
        return int(NUM_CELLS[self.side_code])

    @property
    def current_player(self) -> int:
        return int(self._state[S.CURRENT])

    @property
    def is_over(self) -> bool:
        return bool(self._state[S.GAME_OVER])

    @property
    def turn(self) -> int:
        """Turns completed so far, all players together."""
        return int(self._state[S.TURN])

    @property
    def round(self) -> int:
        """Current round, from 1."""
        return self.turn // self.num_players + 1

    def field(self, name: str) -> np.ndarray:
        """A named state field as a READ-ONLY array view (see `state.FIELDS`), or one of the decoded views
        `state.VIEWS` ("stack": (4, 25) stack codes, "cubes_placed": (4, 43)) as a read-only copy.

        Read-only because the kernels trust the state: a value written by hand can send them out of bounds.
        To set up a position, build the state vector and call `Game.from_state`, which validates it.
        """
        if name not in S.FIELDS and name not in S.VIEWS:
            raise ValueError(f"unknown state field {name!r}; fields are {', '.join([*S.FIELDS, *S.VIEWS])}")
        v = S.field(self._state_view, name)
        return v if isinstance(v, np.ndarray) else np.int64(v)

    @classmethod
    def from_state(cls, state: np.ndarray, history: Iterable[int] = ()) -> "Game":
        """A game at the position `state` (int32 (STATE_SIZE,), copied), e.g. one set up by hand or taken from a
        batch row. Every field is validated first (`harmonies_env.validate`): ValueError names the bad field.

        Its generator is the state's `rng` field; it has no seed, so `record()` refuses (the setup cannot be
        replayed). `history` is informational only.
        """
        arr = _valid_state(state)
        g = cls.__new__(cls)
        g.num_players = int(arr[S.NUM_PLAYERS])
        g.side_code = int(arr[S.SIDE])
        g.spirits = bool(arr[S.SPIRITS])
        g.seed = -1
        g._adopt(arr)
        g.history = [check_action(a) for a in history]
        g._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        return g

    # ---- actions -----------------------------------------------------------------------------------
    def action_mask(self) -> np.ndarray:
        """bool (NUM_ACTIONS,): True where the action is legal for the player to move."""
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.bool_)
        if self._chance is None or not self._chance[C.C_NODE]:  # none at a chance node
            rules.legal_mask(self._state, mask, self._buf)
        return mask

    def legal_actions(self) -> list[int]:
        """The legal actions of the player to move, ascending ([] at a chance node or once the game is over)."""
        if self._chance is not None and self._chance[C.C_NODE]:
            return []
        n = rules.legal_actions(self._state, self._buf)
        return self._buf[:n].tolist()

    def step(self, action: int) -> None:
        """Play one micro-action for the player to move; IllegalActionError (game unchanged) if not legal."""
        action = check_action(action)
        if self._chance is None:
            code = rules.step(self._state, action)
        elif self._chance[C.C_NODE]:
            raise IllegalActionError(action, "this is a chance node: resolve it with apply_chance or sample_chance")
        else:
            code = C.step_explicit(self._state, self._chance, action)
        if code:
            desc = self.describe_action(action) if 0 <= action < A.NUM_ACTIONS else ""
            raise IllegalActionError(int(action), rules.ERRORS[code], desc)
        self.history.append(int(action))

    def describe_action(self, action: int, viewer: int | None = None) -> str:
        """The action in a player's words, e.g. 'place gray on cell 7 (q=1, r=2): mountain 2'.

        The action is the player to move's. `viewer`: the seat the words are for; what it cannot see (the
        Spirit cards dealt to another seat) is not named. None = no secret is withheld.
        """
        kind, x, y = A.decode(check_action(action))
        s = self._state
        p = self.current_player
        if kind == "take_tokens":
            toks = [COLOURS[c] for c in S.field(s, "central")[x] if c >= 0]
            return f"take central space {x}" + (f" ({', '.join(toks)})" if toks else " (empty)")
        if kind == "place_token":
            if y >= self.num_cells:
                return f"place {COLOURS[x]} on cell {y} (not on this board)"
            q, r = cell_qr(self.side, y)
            new = STACK_AFTER[S.stack_at(s, p, y), x]
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
            hidden = viewer is not None and viewer != p
            return f"keep Spirit card {x}" + (f" ({card_name(card)})" if card >= 0 and not hidden else "")
        if kind == "solo_replace":
            card = S.field(s, "market")[x]
            return (f"discard market card {x}" + (f" ({card_name(card)})" if card >= 0 else "")
                    + ", replace it from the draw pile and end the turn")
        return "end the turn"

    # ---- results -----------------------------------------------------------------------------------
    def scores(self) -> list[dict[str, int]]:
        """Per player, the score breakdown by category (trees ... spirit, total), as things stand now."""
        out = np.zeros((S.MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
        rules.scores_into(self._state, out)
        return [dict(zip(CATEGORIES, map(int, out[p]))) for p in range(self.num_players)]

    def animal_cubes(self) -> list[int]:
        """Animal cubes each player has placed (the tie-break; the Spirit cube is not counted)."""
        return [int(x) for x in self.field("animal_cubes")[: self.num_players]]

    def winners(self) -> list[int]:
        """Seats that win: most points, then most animal cubes placed; several seats = shared victory (the rule of
        every batched stepper too: `batch_kernels.outcome`, called here)."""
        totals = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
        won = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
        outcome(self._state, totals, np.zeros(NUM_CATEGORIES, dtype=np.int64), won)
        return [p for p in range(self.num_players) if won[p]]

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
        g._adopt(self._state.copy())
        if self._chance is not None:
            g._chance = self._chance.copy()
        g.history = list(self.history)
        g._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        return g

    def record(self) -> dict:
        """A JSON-able record (version, configuration, seed, actions) that `Game.replay` reproduces exactly.

        Only a game set up from its seed has one: a game built by `from_state`, `determinize` or a batch row
        (`BatchedGames.game`), or one whose chance was dealt by `apply_chance`, raises ValueError, since no seed
        reproduces it. (An explicit-chance game resolved by `sample_chance` throughout is its seed's default game.)
        """
        if self.seed < 0:
            raise ValueError("this game was built from a state (Game.from_state, determinize or a batch row) or its "
                             "chance was dealt by apply_chance, not from a seed, so no record can replay it; record "
                             "a game played with Game(seed=...)")
        return make_record(self.config, self.seed, self.history)

    def to_json(self) -> str:
        return json.dumps(self.record())

    @classmethod
    def replay(cls, record: Mapping[str, Any] | str) -> "Game":
        """Rebuild a game from its record (a dict or its JSON text) by replaying every action.

        ValueError names what is wrong (see `check_record`), or the first action that does not replay.
        """
        record = check_record(record)
        g = cls(record["num_players"], record["side"], record["spirits"], record["seed"],
                river_loops=record.get("river_loops", "rulebook"))
        for k, a in enumerate(record["actions"]):
            try:
                g.step(a)
            except IllegalActionError as e:
                raise ValueError(f"game record action #{k} does not replay: {e}") from None
        return g

    # ---- explicit chance (Game(..., explicit_chance=True); harmonies_env.chance) --------------------------
    @property
    def explicit_chance(self) -> bool:
        """Whether this game leaves its random events as chance nodes (see `chance`)."""
        return self._chance is not None

    def is_chance_node(self) -> bool:
        """Whether a random event waits to be resolved (explicit-chance mode only; no player acts meanwhile)."""
        return self._chance is not None and bool(self._chance[C.C_NODE])

    def chance_event(self) -> tuple[str, int] | None:
        """The pending random event as (kind, where): ("tokens", central space), ("card", market slot) or
        ("spirit", 2 * seat + index); None at a decision."""
        if not self.is_chance_node():
            return None
        return C.NODE_KINDS[int(self._chance[C.C_NODE])], int(self._chance[C.C_WHERE])

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The pending node's outcomes as (outcome id, exact probability) pairs, ascending by id, every probability
        > 0 and their sum 1; computed from public counts only (`chance.chance_outcomes`; `describe_chance` names an
        id). ValueError if this is not a chance node."""
        self._check_chance_node()
        out = np.empty(C.TOKEN_OUTCOMES, dtype=np.int64)
        probs = np.empty(C.TOKEN_OUTCOMES, dtype=np.float64)
        n = C.chance_outcomes(self._state, self._chance, out, probs)
        return list(zip(out[:n].tolist(), probs[:n].tolist()))

    def apply_chance(self, outcome: int) -> None:
        """Resolve the pending chance node with `outcome` (an id from `chance_outcomes`); ValueError naming what is
        wrong (no chance node, an impossible outcome) with the game unchanged. The game then has no seed: its
        record cannot replay a deal chosen by hand."""
        self._check_chance_node()
        if isinstance(outcome, (bool, np.bool_)) or not isinstance(outcome, (int, np.integer)) \
                or not 0 <= outcome < C.NUM_OUTCOMES:
            raise ValueError(f"a chance outcome is an integer 0..{C.NUM_OUTCOMES - 1}, got {outcome!r}")
        code = C.apply_chance(self._state, self._chance, int(outcome))
        if code:
            kind, where = self.chance_event()
            raise ValueError(f"chance outcome {int(outcome)} ({C.describe_outcome(int(outcome))}): {C.ERRORS[code]} "
                             f"({kind} {where})")
        self.seed = -1

    def sample_chance(self) -> int:
        """Resolve the pending chance node with the game's own generator and return the outcome id. Resolved this way
        throughout, the game is exactly the default mode's game of the same seed."""
        self._check_chance_node()
        return int(C.sample_chance(self._state, self._chance))

    def describe_chance(self, outcome: int) -> str:
        """A chance outcome id in the game's words, e.g. 'tokens blue, gray, gray' or 'card 12 (...)'."""
        return C.describe_outcome(int(outcome))

    def _check_chance_node(self) -> None:
        if self._chance is None:
            raise ValueError("this game deals chance itself; make it with Game(..., explicit_chance=True) for chance "
                             "nodes")
        if not self._chance[C.C_NODE]:
            raise ValueError("this is not a chance node (a player is to move, or the game is over)")

    def __str__(self) -> str:
        from .render import render_game
        return render_game(self)

    def render(self) -> str:
        return str(self)


_PICKLED = {"_state", "num_players", "side_code", "spirits", "seed", "history"}
#: Longest history an unpickled game may carry (a 4-player game takes a few hundred actions).
MAX_HISTORY = 100_000


def _valid_pickle(d: Any) -> dict:
    """The fields of a pickled `Game` (`__getstate__`), each of its exact type and consistent with its validated
    state (`check_state`; a game at its set-up's first chance node must be exactly a fresh one of its seed), else
    ValueError naming the field."""
    if not isinstance(d, dict) or not _PICKLED <= set(d) or not set(d) <= _PICKLED | {"_buf", "_chance"}:
        got = sorted(map(str, d)) if isinstance(d, dict) else type(d).__name__
        raise ValueError(f"not a pickled Game (fields {str(got)[:120]})")
    arr, chance = d["_state"], d.get("_chance")
    if not (isinstance(arr, np.ndarray) and arr.dtype == S.STATE_DTYPE and arr.shape == (S.STATE_SIZE,)):
        raise ValueError(f"a pickled Game's state must be an int32 array ({S.STATE_SIZE},)")
    if chance is not None and not (isinstance(chance, np.ndarray) and chance.dtype == np.int64
                                   and chance.shape == (C.CHANCE_SIZE,)):
        raise ValueError(f"a pickled Game's chance bookkeeping must be None or an int64 array ({C.CHANCE_SIZE},)")
    seed, history = d["seed"], d["history"]
    if type(seed) is not int or not -1 <= seed < 2**63:
        raise ValueError(f"a pickled Game's seed must be an int in -1..2**63-1, got {str(seed)[:40]}")
    if type(history) is not list or len(history) > MAX_HISTORY or any(type(a) is not int for a in history):
        raise ValueError(f"a pickled Game's history must be a list of at most {MAX_HISTORY:,} ints")
    arr = np.array(arr, dtype=S.STATE_DTYPE, copy=True, order="C")
    chance = None if chance is None else np.array(chance, dtype=np.int64, copy=True, order="C")
    try:
        arr = _valid_state(arr)
    except ValueError:
        # A game at a chance node (a deal, refill or Spirit pending) is not a decision state, which is what
        # check_state validates (a Spirit half dealt, the emptied space awaiting its refill): there the fields that
        # size the kernels' loops are checked instead, exactly (what a data-only edit used to hang or crash with).
        n = arr[S.NUM_PLAYERS]
        sizes = 1 <= n <= S.MAX_PLAYERS and arr[S.NUM_SPACES] == arr[S.NUM_MARKET] == (3 if n == 1 else 5)
        if not (chance is not None and chance[C.C_NODE] and sizes and arr[S.SIDE] in (0, 1)
                and arr[S.SPIRITS] in (0, 1) and 0 <= arr[S.RIVER_LOOPS] < len(RIVER_LOOPS)):
            raise
    if chance is not None and not (0 <= chance[C.C_NODE] < len(C.NODE_KINDS) and chance[C.C_CONTEXT] in (0, 1)
                                   and 0 <= chance[C.C_K] <= 3 and chance[C.C_DECK_SHUFFLED] in (0, 1)
                                   and chance[C.C_POOL_SHUFFLED] in (0, 1) and 0 <= chance[C.C_WHERE] < 16
                                   and all(-1 <= v <= NUM_CARDS for v in chance[C.C_POOL:])):
        raise ValueError("a pickled Game's chance bookkeeping is out of range")
    fields = (int(arr[S.NUM_PLAYERS]), int(arr[S.SIDE]), bool(arr[S.SPIRITS]))
    if (d["num_players"], d["side_code"], d["spirits"]) != fields or type(d["num_players"]) is not int \
            or type(d["side_code"]) is not int or type(d["spirits"]) is not bool:
        raise ValueError(f"a pickled Game's num_players / side_code / spirits must be its state's {fields}")
    return {**{k: d[k] for k in _PICKLED}, "_state": arr, "history": list(history),
            **({"_chance": chance} if chance is not None else {})}


def _valid_state(state: Any) -> np.ndarray:
    """A validated C-contiguous int32 copy of `state` (ValueError naming the bad dtype, shape, value or field).
    Any integer array is taken if every entry fits the state's int32 (a value that does not is refused, never
    wrapped)."""
    from .validate import check_state

    arr = S.as_state_dtype(state)
    check_state(arr)
    return arr


def make_record(config: GameConfig, seed: int, actions: Sequence[int]) -> dict:
    """The record of the game `config` dealt from `seed` and played by `actions` (what `Game.record` writes and
    `Game.replay` reads): version 1 for the rulebook's rules, version 2, which names river_loops, otherwise."""
    rec: dict[str, Any] = {"version": 1, "num_players": config.num_players, "side": config.side,
                           "spirits": config.spirits}
    if config.river_loops != "rulebook":  # a rules option off its default: version 2 names it
        rec.update(version=RECORD_VERSION, river_loops=config.river_loops)
    rec.update(seed=int(seed), actions=[int(a) for a in actions])
    return rec


def check_record(record: Mapping[str, Any] | str | bytes) -> Mapping[str, Any]:
    """The record (parsed if JSON text) if its form is right, else ValueError naming what is wrong.

    Checked: JSON text nested at most `validate.MAX_JSON_DEPTH` deep; a JSON object with every key (version,
    num_players, side, spirits, seed, actions); `version` an integer this code reads (RECORD_VERSIONS; version 2 also
    holds river_loops; a version 1 record names none, or "rulebook"); `num_players` and `side` not null (null would
    replay the defaults' game); `spirits` true or false (not 1 / 0); a concrete seed (null would replay a different
    random game); actions a list of integers. The configuration and seed are checked when the game is made, the actions'
    legality when replayed.
    """
    if isinstance(record, (str, bytes)):
        from .validate import parse_json

        record = parse_json(record, "game record")
    if not isinstance(record, Mapping):
        raise ValueError(f"a game record is a JSON object, got {type(record).__name__}")
    missing = {"version", "num_players", "side", "spirits", "seed", "actions"} - set(record)
    if missing:
        raise ValueError(f"game record lacks {sorted(missing)}")
    version = record["version"]
    if type(version) is not int or version not in RECORD_VERSIONS:
        raise ValueError(f"game record version {version!r} is not supported (this code reads versions "
                         f"{', '.join(map(str, RECORD_VERSIONS))})")
    if version >= 2 and "river_loops" not in record:
        raise ValueError("game record lacks ['river_loops'] (a version 2 record names its river_loops rule)")
    if "river_loops" in record and (not isinstance(record["river_loops"], str)
                                    or record["river_loops"] not in RIVER_LOOPS):
        raise ValueError(f"game record river_loops must be one of {', '.join(map(repr, RIVER_LOOPS))}, got "
                         f"{record['river_loops']!r}")
    if version < 2 and record.get("river_loops", "rulebook") != "rulebook":
        raise ValueError(f"game record version {version} cannot carry river_loops {record['river_loops']!r} (only "
                         f"a version {RECORD_VERSION} record names a rules option off the rulebook)")
    for key in ("num_players", "side"):
        if record[key] is None:  # Game() would read null as its default (2 players, Side A): another game
            raise ValueError(f"game record {key} is null: a record names its game's {key}")
    if record["seed"] is None:
        raise ValueError("game record seed is null: a record needs the game's concrete seed to replay it")
    if not isinstance(record["spirits"], (bool, np.bool_)):
        raise ValueError(f"game record spirits must be true or false, got {_brief(record['spirits'])}")
    if not isinstance(record["actions"], (list, tuple)):
        raise ValueError(f"game record actions must be a list of integers, got {type(record['actions']).__name__}")
    for k, a in enumerate(record["actions"]):
        if not _is_int(a):
            raise ValueError(f"game record action #{k} must be an integer, got {_brief(a)}")
    return record


def _brief(v: Any) -> str:
    """A value for an error message: a scalar's repr (cut short), else its type (a nested value's repr could be
    huge or too deep to print)."""
    if v is None or isinstance(v, (bool, int, float, str, np.generic)):
        r = repr(v)
        return r if len(r) <= 40 else r[:37] + "..."
    return type(v).__name__


def determinize(game: Game, player: int, seed: int) -> Game:
    """A copy of `game` where what `player` cannot see is resampled consistently with what they saw.

    Resampled: the pouch's draws (the generator), the draw pile's order, and other players' Spirit cards
    that `player` has not seen. Public facts (pouch colour counts, deck contents, kept Spirits) stay. The
    new game's generator comes only from `seed`, so the true hidden order is never revealed.
    """
    if not isinstance(game, Game):
        raise ValueError(f"determinize takes a Game, got {type(game).__name__}")
    if isinstance(player, (bool, np.bool_)) or not isinstance(player, (int, np.integer)) \
            or not 0 <= player < game.num_players:
        raise ValueError(f"player must be a seat 0..{game.num_players - 1}, got {player!r}")
    if seed is None:
        raise ValueError("determinize needs a concrete seed (an integer): None would resample at random, "
                         "and the copy would not be reproducible")
    player = int(player)
    g = game.clone()
    s = g._state
    rng = np.random.default_rng(check_seed(seed))
    S.set_rng(s, int(rng.integers(0, 2**62)))
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


def score_board(side: str | None, board: Mapping[tuple[int, int], Iterable[str]],
                cards: Iterable[tuple[int, int]] = (), *, river_loops: str | None = None,
                config: GameConfig | None = None) -> dict[str, int]:
    """Score one board given as {(q, r): [colour, ... bottom -> top]} and [(card_id, cubes_placed), ...].

    Returns trees, mountains, fields, buildings, water, animals, spirit and total. Unknown cells,
    impossible stacks, unknown cards or impossible cube counts raise ValueError saying which.
    river_loops: "rulebook" (default) or "bga" (docs/rules.md). config: a `GameConfig` gives the side and
    river_loops instead (side may then be None; a side or river_loops that contradicts it is a ValueError).
    """
    if side is None and config is None:
        raise ValueError("score_board needs the board's side ('A' or 'B'), or a config that gives it")
    cfg = make_config(config, side=side, river_loops=river_loops)
    side = cfg.side
    sc = cfg.side_code
    if not isinstance(board, Mapping):
        raise ValueError(f"board must be a mapping {{(q, r): [colour, ...]}}, got {type(board).__name__}")
    bb = np.zeros(15, dtype=np.int64)
    codes = np.zeros(MAX_CELLS, dtype=np.int64)
    filled: dict[int, tuple[int, int]] = {}
    for qr, colours in board.items():
        if not (isinstance(qr, (tuple, list)) and len(qr) == 2):
            raise ValueError(f"board keys are axial (q, r) pairs of integers, got {qr!r}")
        if not all(_is_int(v) for v in qr):
            raise ValueError(f"board key {qr!r}: cell coordinates must be integers (not bool, float or str)")
        q, r = int(qr[0]), int(qr[1])
        i = cell_index(side, q, r)
        if i in filled:
            raise ValueError(f"board lists cell (q={q}, r={r}) twice ({filled[i]!r} and {qr!r})")
        filled[i] = qr
        if isinstance(colours, str) or not isinstance(colours, Iterable):
            raise ValueError(f"cell (q={q}, r={r}): a stack is a list of colours bottom -> top, got {colours!r}")
        colours = list(colours)
        if not all(isinstance(c, str) for c in colours):
            raise ValueError(f"cell (q={q}, r={r}): colours are names such as 'blue', got {colours!r}")
        try:
            codes[i] = stack_code(colours)
        except ValueError as e:
            raise ValueError(f"cell (q={q}, r={r}): {e}") from None
    for i in range(NUM_CELLS[sc]):
        bb[codes[i]] |= 1 << i
    placed = np.full(NUM_CARDS + 1, -1, dtype=np.int64)
    spirits = 0
    for entry in cards:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise ValueError(f"cards are (card_id, cubes_placed) pairs, got {entry!r}")
        card_id, n = entry
        if not _is_int(card_id) or not 1 <= card_id <= NUM_CARDS:
            raise ValueError(f"card id must be 1..{NUM_CARDS}, got {card_id!r} (card ids are integers)")
        card_id = int(card_id)
        if not _is_int(n) or not 0 <= n <= CUBES_ON_CARD[card_id]:
            raise ValueError(f"card {card_id} ({card_name(card_id)}) holds {CUBES_ON_CARD[card_id]} cubes, "
                             f"got cubes_placed={n!r} (an integer 0..{CUBES_ON_CARD[card_id]})")
        if placed[card_id] >= 0:
            raise ValueError(f"card {card_id} ({card_name(card_id)}) is listed twice")
        spirits += card_id >= FIRST_SPIRIT
        placed[card_id] = int(n)
    if spirits > 1:
        raise ValueError("a player keeps at most one Spirit card")
    out = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    score_into(sc, bb, placed, 0, out, cfg.river_loops_code)  # seat 0's entries of a held table are the cubes
    return dict(zip(CATEGORIES, map(int, out)))


def _is_int(v: Any) -> bool:
    """A real integer: int or numpy integer, not bool (True is not a coordinate, a count or a card)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
