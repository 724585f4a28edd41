"""Harmonies as an OpenSpiel game: `import harmonies_env.openspiel` registers "python_harmonies" with pyspiel.

    pyspiel.load_game("python_harmonies", {"players": 3, "side": "B", "spirits": True})

Parameters: players (1-4, default 2; 1 = solo, which needs returns="points"), side ("A"/"B"), spirits (bool),
river_loops ("rulebook"/"bga"), returns ("win": each winner gets 1/number of winners, the rest 0, constant-sum 1;
"points": each seat's final score, general-sum). The chance is explicit and stochastic: every random event is a
chance node (`Game(..., explicit_chance=True)`, `harmonies_env.chance`) whose outcomes and exact probabilities come
from public counts; chance outcome ids are `chance.NUM_OUTCOMES` (126), player actions the engine's 268.

Without Spirits the game is of perfect information (every chance outcome is public, and the draw pile's order is
not a state: it is a chance node when a card is drawn). With Spirits it is of imperfect information: the Spirit
cards dealt to another seat are hidden until that seat keeps one, and the other stays hidden. Strings and tensors
for a seat hide them (`state.hide_private`); `resample_from_infostate` redeals them consistently (for ISMCTS).

Observation tensor (float32): the engine's observation of that seat (`observation`, OBS_SIZE entries) followed by the
pending chance node (one-hot kind: tokens, card, Spirit; one-hot place 0-7). The information-state tensor is the
same: the seat's view of the position holds everything the rules let the seat decide on (the order of past moves
changes nothing), so it is not a perfect-recall history; the information-state STRING is perfect-recall (the
seat's view of the whole history, hidden deals masked, then its view of the position).

Strings are the table as `render()` draws it (hidden parts "?" per seat; the information-state string headed by
the history the seat saw). Only OpenSpiel's Python algorithms run on a Python game: its C++ ones through pyspiel
(`pyspiel.MCTSBot`, ...) segfault on every Python game, OpenSpiel's own included.

Needs the optional extra: pip install "harmonies-env[openspiel]".
"""
from __future__ import annotations

from typing import Any

import numpy as np

try:
    import pyspiel
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("harmonies_env.openspiel needs OpenSpiel: pip install 'harmonies-env[openspiel]' "
                      "(open_spiel==2.0.2)") from e

from open_spiel.python.algorithms.mcts import Evaluator

from . import actions as A
from . import chance as C
from . import state as S
from .batch_kernels import outcome
from .cards import FIRST_SPIRIT, NUM_CARDS, card_name
from .config import GameConfig
from .game import Game
from .geometry import MAX_CELLS
from .observation import OBS_SIZE, encode_observation
from .render import render_game
from .scoring import NUM_CATEGORIES

SHORT_NAME = "python_harmonies"
DEFAULTS: dict[str, Any] = {"players": 2, "side": "A", "spirits": False, "river_loops": "rulebook", "returns": "win"}
RETURNS = ("win", "points")
#: An upper bound of a seat's final score (not a reachable score): OpenSpiel's max_utility for returns="points".
MAX_POINTS = 500.0
#: Most turns a game can last: the pouch refills at most 35 spaces (multi-player: 105 tokens after the set-up) before
#: the end triggers, then the round ends; solo refills all 3 spaces each turn and ends at once.
MAX_TURNS = 40
CHANCE_PART = 3 + 8  # pending chance node: kind one-hot, place one-hot
TENSOR_SIZE = OBS_SIZE + CHANCE_PART
#: Most characters of a serialized state (`deserialize_state`): a whole game is at most a few thousand.
MAX_SERIALIZED = 1 << 16


def _game_type(information: Any, utility: Any) -> Any:
    return pyspiel.GameType(
        short_name=SHORT_NAME, long_name="Harmonies (harmonies-env)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=information, utility=utility,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=4, min_num_players=1,
        provides_information_state_string=True, provides_information_state_tensor=True,
        provides_observation_string=True, provides_observation_tensor=True,
        parameter_specification=dict(DEFAULTS))


_REGISTERED_TYPE = _game_type(pyspiel.GameType.Information.IMPERFECT_INFORMATION,
                              pyspiel.GameType.Utility.GENERAL_SUM)


def _config(params: dict[str, Any]) -> tuple[GameConfig, str]:
    """The GameConfig and returns mode of OpenSpiel parameters (ValueError naming a bad one)."""
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown python_harmonies parameters {sorted(unknown)}; they are {', '.join(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    cfg = GameConfig(p["players"], p["side"], p["spirits"], p["river_loops"])
    if p["returns"] not in RETURNS:
        raise ValueError(f"returns must be 'win' or 'points', got {p['returns']!r}")
    if cfg.num_players == 1 and p["returns"] == "win":
        raise ValueError("solo (players=1) has no winner to share: use returns='points'")
    return cfg, p["returns"]


class HarmoniesGame(pyspiel.Game):
    """The OpenSpiel game: its type (perfect information without Spirits) and sizes follow the parameters."""

    def __init__(self, params: dict[str, Any] | None = None):
        params = dict(params or {})
        self.config, self.returns_mode = _config(params)
        win = self.returns_mode == "win"
        info = (pyspiel.GameType.Information.IMPERFECT_INFORMATION if self.config.spirits
                else pyspiel.GameType.Information.PERFECT_INFORMATION)
        utility = pyspiel.GameType.Utility.CONSTANT_SUM if win else pyspiel.GameType.Utility.GENERAL_SUM
        n = self.config.num_players
        game_info = pyspiel.GameInfo(
            num_distinct_actions=A.NUM_ACTIONS, max_chance_outcomes=C.NUM_OUTCOMES, num_players=n,
            min_utility=0.0, max_utility=1.0 if win else MAX_POINTS, utility_sum=1.0 if win else None,
            # per turn: take, 3 placements, a card, the end; cubes: at most one per cell; a Spirit kept per seat
            max_game_length=6 * MAX_TURNS + n * (MAX_CELLS + 1))
        super().__init__(_game_type(info, utility), game_info, {**DEFAULTS, **params})

    def new_initial_state(self) -> "HarmoniesState":
        return HarmoniesState(self)

    def deserialize_state(self, text: str) -> "HarmoniesState":
        """The state `HarmoniesState.serialize` wrote: its actions, one per line, replayed from the start, so every
        one is checked by the engine (ValueError naming the first line that does not replay). Nothing is unpickled,
        unlike OpenSpiel's default for Python games (which unpickles the state's `__dict__`)."""
        if not isinstance(text, str) or len(text) > MAX_SERIALIZED:
            raise ValueError(f"a serialized python_harmonies state is text of at most {MAX_SERIALIZED} characters")
        state = self.new_initial_state()
        for k, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            if not line.strip().lstrip("-").isdigit() or len(line.strip()) > 20:
                raise ValueError(f"serialized state line {k + 1}: {line[:40]!r} is not an action")
            try:
                state.apply_action(int(line))
            except Exception as e:
                raise ValueError(f"serialized state line {k + 1}: action {int(line)} does not replay "
                                 f"({str(e).splitlines()[0][:200]})") from None
        return state

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> "HarmoniesObserver":
        if params:
            raise ValueError(f"python_harmonies observers take no parameters, got {params!r}")
        return HarmoniesObserver(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False))


class HarmoniesState(pyspiel.State):
    """A position: an explicit-chance `Game` whose chance OpenSpiel resolves (its own generator is never used)."""

    def __init__(self, game: HarmoniesGame):
        super().__init__(game)
        self.game_obj = Game(config=game.config, seed=0, explicit_chance=True)
        self.returns_mode = game.returns_mode
        #: per applied action: the seat that may see it (-1 = everyone; a Spirit dealt to seat o: o)
        self.private_to: list[int] = []

    def current_player(self) -> int:
        g = self.game_obj
        if g.is_over:
            return pyspiel.PlayerId.TERMINAL
        if g.is_chance_node():
            return pyspiel.PlayerId.CHANCE
        return g.current_player

    def _legal_actions(self, player: int) -> list[int]:
        return self.game_obj.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return self.game_obj.chance_outcomes()

    def _apply_action(self, action: int) -> None:
        """Apply the action or raise with nothing changed: `private_to` grows only once the game accepted it
        (appended before, a refused action left it one longer than the history and showed later deals to the
        wrong seats)."""
        g = self.game_obj
        if g.is_chance_node():
            kind, where = g.chance_event()
            g.apply_chance(action)
            self.private_to.append(where // 2 if kind == "spirit" else -1)
        else:
            g.step(action)
            self.private_to.append(-1)

    def serialize(self) -> str:
        """The actions so far, one per line (`HarmoniesGame.deserialize_state` replays them): no pickle."""
        return "".join(f"{a}\n" for a in self.history())

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return C.describe_outcome(action)
        return f"{A.decode(action)[0]} {action}"

    def is_terminal(self) -> bool:
        return self.game_obj.is_over

    def returns(self) -> list[float]:
        g = self.game_obj
        if not g.is_over:
            return [0.0] * g.num_players
        if self.returns_mode == "points":
            return [float(s["total"]) for s in g.scores()]
        won = g.winners()
        return [1.0 / len(won) if p in won else 0.0 for p in range(g.num_players)]

    def resample_from_infostate(self, player_id: int, probability_sampler: Any = None) -> "HarmoniesState":
        """A state `player_id` cannot tell from this one: the Spirits dealt to other seats and not kept are redealt
        uniformly from those the seat has not seen (kept cards stay where they were), and the history replayed."""
        g = self.game_obj
        if not g.spirits:
            return self.clone()
        dealt = S.field(g.state, "spirit_dealt")
        kept = S.field(g.state, "spirit_kept")
        n = g.num_players
        seen = {int(c) for c in dealt[player_id] if c > 0} | {int(k) for k in kept[:n] if k > 0}
        pool = [c for c in range(FIRST_SPIRIT, NUM_CARDS + 1) if c not in seen]
        rng = np.random.default_rng(int(np.random.default_rng().integers(2**62)) if probability_sampler is None
                                    else int(probability_sampler() * 2**53))
        rng.shuffle(pool)
        new_deal = {}
        for o in range(n):
            for j in range(2):
                c = int(dealt[o, j])
                if o != player_id and c > 0 and c != kept[o]:
                    new_deal[c] = pool.pop()
        state = self.get_game().new_initial_state()
        for a, who in zip(self.history(), self.private_to):
            if who >= 0 and who != player_id:
                card = a - C.CARD_OUTCOME + 1
                a = C.CARD_OUTCOME + new_deal.get(card, card) - 1
            state.apply_action(a)
        return state

    def __str__(self) -> str:
        """The whole state, hidden parts included (OpenSpiel's debug string): the table as `render()` shows it,
        every seat's dealt Spirit cards and the pending chance event."""
        return _describe(self, self.game_obj, None)

    def render(self) -> str:
        """The boards and the table as `harmonies play` shows them, and the pending chance event."""
        return str(self)


def _describe(state: HarmoniesState, view: Game, player: int | None) -> str:
    """`view` (the game, or a copy with what `player` may not know blanked) as text: the pending chance event, the
    table as `render_game` draws it (`player`'s board last) and the Spirit cards dealt and not kept, "?" where hidden
    (whether a seat was dealt its cards is public: the real game says it, the view says which)."""
    event = state.game_obj.chance_event()
    lines = ["chance: " + (f"{event[0]} {event[1]}" if event else "none"), render_game(view, you=player)]
    if view.spirits:
        real = S.field(state.game_obj.state, "spirit_dealt")
        seen = S.field(view.state, "spirit_dealt")
        kept = S.field(view.state, "spirit_kept")
        seats = []
        for o in range(view.num_players):
            cards = [("?" if seen[o, j] <= 0 else f"{card_name(int(seen[o, j]))}#{int(seen[o, j])}")
                     for j in range(2) if real[o, j] > 0 and real[o, j] != kept[o]]
            if cards:
                seats.append(f"player {o}{' (you)' if o == player else ''} {', '.join(cards)}")
        if seats:
            lines.append("Spirit cards dealt, not kept: " + "; ".join(seats))
    return "\n".join(lines)


#: The last position's texts (`HarmoniesObserver.string_from`): OpenSpiel asks the observation and the information
#: state string of each seat in turn, and drawing the table is what they cost.
_TEXTS: dict[str, Any] = {"position": None, "texts": {}}


class HarmoniesObserver:
    """Strings and tensors of a seat's view (`pyspiel.IIGObservationType`: perfect_recall adds the history to the
    string; private_info NONE hides the seat's own dealt Spirits too, ALL_PLAYERS hides nothing)."""

    def __init__(self, iig_obs_type: Any):
        self.iig_obs_type = iig_obs_type
        self.tensor = np.zeros(TENSOR_SIZE, np.float32)
        self.dict = {"observation": self.tensor[:OBS_SIZE], "chance_kind": self.tensor[OBS_SIZE:OBS_SIZE + 3],
                     "chance_place": self.tensor[OBS_SIZE + 3:]}

    def _view(self, state: HarmoniesState, player: int) -> Game:
        g = state.game_obj.clone()
        private = self.iig_obs_type.private_info
        if private != pyspiel.PrivateInfoType.ALL_PLAYERS:
            S.hide_private(g._state, player if private == pyspiel.PrivateInfoType.SINGLE_PLAYER else -1)
        return g

    def set_from(self, state: HarmoniesState, player: int) -> None:
        encode_observation(self._view(state, player)._state, player, self.dict["observation"])
        self.tensor[OBS_SIZE:] = 0.0
        event = state.game_obj._chance
        if event[C.C_NODE]:
            self.tensor[OBS_SIZE + event[C.C_NODE] - 1] = 1.0
            self.tensor[OBS_SIZE + 3 + event[C.C_WHERE]] = 1.0

    def string_from(self, state: HarmoniesState, player: int) -> str:
        """Seat `player`'s view as text (`_describe`); with perfect recall headed by the history it saw, "?" for
        another seat's dealt Spirit, which makes different information states different strings."""
        position = (str(state.get_game()), state.history())  # the game and its history say the position
        if position != _TEXTS["position"]:
            _TEXTS["position"], _TEXTS["texts"] = position, {}
        key = (player, int(self.iig_obs_type.private_info))
        if key not in _TEXTS["texts"]:  # drawn once per seat and secrecy, for the observation and information state
            _TEXTS["texts"][key] = f"seat {player}\n" + _describe(state, self._view(state, player), player)
        text = _TEXTS["texts"][key]
        if self.iig_obs_type.perfect_recall:
            hide_all = self.iig_obs_type.private_info == pyspiel.PrivateInfoType.NONE
            show_all = self.iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS
            moves = [str(a) if who < 0 or show_all or (who == player and not hide_all) else "?"
                     for a, who in zip(state.history(), state.private_to)]
            text = "history: " + " ".join(moves) + "\n" + text
        return text


class RolloutEvaluator(Evaluator):
    """An OpenSpiel MCTS evaluator whose random rollouts run in the engine (`chance.playout`, numba) instead of
    OpenSpiel's Python loop: the same uniform random play to the end, far cheaper. It plays out the state it is
    given (ISMCTS hands it a resampled one); the draw pile's order and the pouch's draws are fresh random."""

    def __init__(self, n_rollouts: int = 1, seed: int = 0):
        self.n_rollouts = int(n_rollouts)
        self._rng = np.random.default_rng(seed)
        self._player_rng = np.array([int(self._rng.integers(2**62))], dtype=np.int64)
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        self._totals = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
        self._won = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
        self._cats = np.zeros(NUM_CATEGORIES, dtype=np.int64)

    def evaluate(self, state: HarmoniesState) -> np.ndarray:
        g = state.game_obj
        n = g.num_players
        result = np.zeros(n)
        for _ in range(self.n_rollouts):
            s, c = g.state.copy(), g._chance.copy()
            C.playout(s, c, int(self._rng.integers(2**62)), self._player_rng, self._buf)
            outcome(s, self._totals, self._cats, self._won)
            if state.returns_mode == "points":
                result += self._totals[:n]
            else:
                result += self._won[:n] / self._won[:n].sum()
        return result / self.n_rollouts

    def prior(self, state: HarmoniesState) -> list[tuple[int, float]]:
        if state.is_chance_node():
            return state.chance_outcomes()
        legal = state.legal_actions()
        return [(a, 1.0 / len(legal)) for a in legal]


pyspiel.register_game(_REGISTERED_TYPE, HarmoniesGame)
