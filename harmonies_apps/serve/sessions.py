"""The play server's games: a `Session` per game (its token, its seats, its log) and the `Manager` that makes,
keeps and forgets them (the table's and each client's limits) and moves their bots (`bots.BotScheduler`)."""
from __future__ import annotations

import secrets
import threading
import time
import uuid
from typing import Any

from harmonies_env import actions as A
from harmonies_env.config import RIVER_LOOPS, GameConfig
from harmonies_env.game import Game
from harmonies_env.view import PlayerView

from ..table import static_data, table_state
from .bots import BotScheduler
from .limits import IDLE_SECONDS, LOG_LINES, MAX_CLIENT_GAMES, MAX_GAMES, _short


class TableFull(RuntimeError):
    """No room for a new game: every game held is being played (503)."""


class ClientFull(RuntimeError):
    """This client already has MAX_CLIENT_GAMES games in play (429)."""


class Session:
    """One game between a person (seat `seat`) and bots. All access to `game` holds `lock`.

    `token` (secret, from secrets.token_urlsafe) is handed only to the page that created the game; every later
    request on the game must carry it. `last_used` (time.monotonic) is refreshed by each request on the game and
    each bot move: eviction forgets the least recently used games first.
    """

    def __init__(self, game: Game, seat: int, specs: list[str | None], agents: list[Any], client: str = "local"):
        self.id = uuid.uuid4().hex[:16]
        self.client = client  # who made it (the IP address): the per-client limits count by it
        self.token = secrets.token_urlsafe(24)
        self.game = game
        self.seat = seat
        self.specs = specs  # per seat: agent spec, None for the person
        self.agents = agents  # per seat: agent, None for the person
        self.lock = threading.RLock()
        self.idle = threading.Event()
        self.idle.set()
        self.thinking = False
        self.error: str | None = None
        self.log: list[dict[str, Any]] = []
        self.created = time.time()
        self.last_used = time.monotonic()

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def owned_by(self, token: str | None) -> bool:
        """Whether `token` is this game's (compared in constant time)."""
        return isinstance(token, str) and secrets.compare_digest(token.encode(), self.token.encode())

    @property
    def names(self) -> list[str]:
        """Seat labels: "You", "greedy (bot)"; a spec playing twice gets numbered ("random #2 (bot)")."""
        out, seen = [], {}
        for s in self.specs:
            if s is None:
                out.append("You")
                continue
            seen[s] = seen.get(s, 0) + 1
            out.append(f"{s} #{seen[s]} (bot)" if self.specs.count(s) > 1 else f"{s} (bot)")
        return out

    def bot_to_move(self) -> bool:
        g = self.game
        return not g.is_over and self.agents[g.current_player] is not None

    def state(self, include_static: bool = False) -> dict[str, Any]:
        """What the page may see: the human seat's view (see the module docstring)."""
        with self.lock:
            g = self.game
            mine = not self.thinking and not g.is_over and g.current_player == self.seat
            legal = []
            if mine:
                for a in PlayerView(g, self.seat).legal_actions():
                    kind, x, y = A.decode(a)
                    legal.append({"action": a, "kind": kind, "x": x, "y": y, "text": g.describe_action(a)})
            out: dict[str, Any] = {
                "id": self.id, "seat": self.seat, "names": self.names, "table": table_state(g, [self.seat]),
                "legal": legal, "your_turn": mine, "thinking": self.thinking,
                "bot": self.names[g.current_player] if self.thinking else None,
                "log": self.log[-LOG_LINES:], "error": self.error,
                "result": _result(g, self.seat) if g.is_over else None,
                "outcome": _outcome(g, self.seat) if g.is_over else None,
            }
        if include_static:
            out["static"] = static_data(g.config)
        return out


def _result(g: Game, seat: int) -> str:
    totals = [sc["total"] for sc in g.scores()]
    if g.num_players == 1:
        return f"Game over: {totals[0]} points, {g.suns()} suns."
    w = g.winners()
    if seat in w:
        return f"You {'share the victory' if len(w) > 1 else 'win'} with {totals[seat]} points!"
    best = max(totals[p] for p in w)
    return f"You lose: {totals[seat]} points against {best}."


def _outcome(g: Game, seat: int) -> str:
    """How the finished game went for the person, for the page's colour: win, tie (shared victory), lose, solo."""
    if g.num_players == 1:
        return "solo"
    w = g.winners()
    return ("tie" if len(w) > 1 else "win") if seat in w else "lose"


def request_config(data: dict[str, Any], num_players: int) -> GameConfig:
    """The `GameConfig` of a new-game request's JSON fields side, spirits, river_loops (the HTTP API's public
    constructor: its loose fields become one config here), or a ValueError in the API's words naming the field."""
    side, spirits = data.get("side", "A"), data.get("spirits", False)
    river_loops = data.get("river_loops", "rulebook")
    if not isinstance(spirits, bool):
        raise ValueError(f"spirits must be true or false, got {_short(spirits)}")
    if side not in ("A", "B"):
        raise ValueError(f"side must be \"A\" or \"B\", got {_short(side)}")
    if not isinstance(river_loops, str) or river_loops not in RIVER_LOOPS:
        raise ValueError(f"river_loops must be one of {', '.join(map(repr, RIVER_LOOPS))}, got {_short(river_loops)}")
    return GameConfig(num_players, side, spirits, river_loops)


class Manager:
    """Sessions, and the worker thread pool in which bots move.

    Holds at most `max_games` games. A new game beyond that takes the place of a game idle (no request, no bot
    move) for `idle_seconds`: the least recently used finished one, else the least recently used one in play; a
    game whose bots are thinking, or that was used more recently, is never forgotten for it: with no such game the
    new one is refused (TableFull, 503).
    """

    def __init__(self, opponents: list[str], bot_delay: float = 0.5, workers: int = 2, max_games: int = MAX_GAMES,
                 idle_seconds: float = IDLE_SECONDS, max_client_games: int = MAX_CLIENT_GAMES):
        from agents import make_agent

        self.make_agent = make_agent
        self.opponents = list(opponents)
        if not self.opponents:
            raise ValueError("offer at least one opponent (--opponents)")
        for spec in self.opponents:  # fail at start-up, not in the middle of a game
            make_agent(spec)
        if isinstance(max_games, bool) or not isinstance(max_games, int) or max_games < 1:
            raise ValueError(f"max_games must be a positive integer, got {max_games!r}")
        if not idle_seconds >= 0:
            raise ValueError(f"idle_seconds must be a number of seconds >= 0, got {idle_seconds!r}")
        if isinstance(max_client_games, bool) or not isinstance(max_client_games, int) or max_client_games < 1:
            raise ValueError(f"max_client_games must be a positive integer, got {max_client_games!r}")
        self.bot_delay = float(bot_delay)
        self.max_games = max_games
        self.max_client_games = max_client_games
        self.idle_seconds = float(idle_seconds)
        self.sessions: dict[str, Session] = {}
        self.bots = BotScheduler(workers)
        self.lock = threading.Lock()

    def new_game(self, opponents: list[str], seat: int, config: GameConfig, seed: int | None = None,
                 client: str = "local") -> Session:
        """A new game of `config` (its players: you and the opponents) with the person in `seat`."""
        if not isinstance(opponents, list) or len(opponents) > 3:
            raise ValueError("opponents must be a list of 0 to 3 agent specs (0 = solo)")
        for spec in opponents:
            if spec not in self.opponents:
                raise ValueError(f"opponent {_short(spec)} is not offered; choose from {', '.join(self.opponents)}")
        n = 1 + len(opponents)
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
            raise ValueError(f"seat must be 0..{n - 1} for {n} player{'s' if n > 1 else ''}, got {_short(seat)}")
        if not isinstance(config, GameConfig) or config.num_players != n:
            raise ValueError(f"config must be a GameConfig of {n} players (you and the opponents), got {config!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
            raise ValueError(f"seed must be an integer 0..2**63-1 (or left out for a secret random one), "
                             f"got {_short(seed)}")
        with self.lock:
            self._client_room(client)  # refuse early, before building anything
            self._room()
        game = Game(seed=seed, config=config)
        specs: list[str | None] = list(opponents[:seat]) + [None] + list(opponents[seat:])
        agents = [None if s is None else self.make_agent(s, seed=secrets.randbits(32)) for s in specs]
        for a in agents:
            if a is not None and hasattr(a, "reset"):
                a.reset()
        sess = Session(game, seat, specs, agents, client)
        with self.lock:
            self._client_room(client)
            self._room()
            self.sessions[sess.id] = sess
        self.start_bots(sess)
        return sess

    def _client_room(self, client: str) -> None:
        """ClientFull when `client` already has max_client_games games in play (caller holds self.lock)."""
        now = time.monotonic()
        live = sum(1 for s in self.sessions.values() if s.client == client and not s.game.is_over
                   and (s.thinking or now - s.last_used < self.idle_seconds))
        if live >= self.max_client_games:
            raise ClientFull(f"you have {live} games in play, the most one client may hold: finish one, or leave it "
                             f"idle for {self.idle_seconds:g} s, before starting another")

    def _room(self) -> None:
        """Make room for one more game (caller holds self.lock): forget the least recently used game idle for
        idle_seconds, finished ones first (a finished game's record stays fetchable as long as its player's session
        would); TableFull when every game is in play or recently used."""
        if len(self.sessions) < self.max_games:
            return
        now = time.monotonic()
        idle = [s for s in self.sessions.values() if not s.thinking and now - s.last_used >= self.idle_seconds]
        victims = [s for s in idle if s.game.is_over] or idle  # a finished game lives as long as an idle one
        if not victims:
            raise TableFull(f"the server is full: all {self.max_games} games it holds are being played; a game "
                            f"can take the place of one that is finished or idle for {self.idle_seconds:g} s. "
                            "Try again later")
        del self.sessions[min(victims, key=lambda s: s.last_used).id]

    def get(self, gid: str) -> Session:
        s = self.sessions.get(gid)
        if s is None:
            raise KeyError(gid)
        return s

    def start_bots(self, sess: Session) -> None:
        with sess.lock:
            if sess.thinking or not sess.bot_to_move():
                return
            sess.thinking = True
            sess.idle.clear()
        self.bots.submit(sess.client, lambda: self._bot_decision(sess))

    def _bot_decision(self, sess: Session) -> float | None:
        """One bot decision (a worker thread of `bots`): None once it is the person's turn or the game is over (the
        game is then no longer thinking), else the pause before the next decision (the bot delay after a turn)."""
        try:
            with sess.lock:
                if not sess.bot_to_move():
                    return self._bots_done(sess)
                p = sess.game.current_player
                turn = sess.game.turn
                view = PlayerView(sess.game, p)  # a snapshot: views do not follow the game
            a = sess.agents[p].act(view)  # only this job changes the game while thinking
            with sess.lock:
                text = sess.game.describe_action(a)
                sess.game.step(a)
                sess.log.append({"player": p, "action": int(a), "text": text})
                ended_turn = sess.game.turn != turn
                sess.touch()
                if not sess.bot_to_move():
                    return self._bots_done(sess)
            return self.bot_delay if ended_turn and self.bot_delay > 0 else 0.0
        except Exception as e:  # a bot failing must not hang the page: report it
            sess.error = f"{sess.names[sess.game.current_player]} failed: {type(e).__name__}: {e}"
            return self._bots_done(sess)

    @staticmethod
    def _bots_done(sess: Session) -> None:
        with sess.lock:
            sess.thinking = False
            sess.touch()
            sess.idle.set()
        return None

    def step(self, sess: Session, action: Any) -> None:
        """The person's micro-action; ValueError (game unchanged) when it cannot be played now."""
        if isinstance(action, bool) or not isinstance(action, int):
            raise ValueError(f"action must be an integer 0..{A.NUM_ACTIONS - 1}, got {_short(action)}")
        with sess.lock:
            g = sess.game
            if g.is_over:
                raise ValueError("the game is over")
            if sess.thinking or g.current_player != sess.seat:
                raise ValueError(f"it is not your turn: {sess.names[g.current_player]} is to move")
            text = g.describe_action(action) if 0 <= action < A.NUM_ACTIONS else ""
            g.step(action)  # IllegalActionError (a ValueError) leaves the game unchanged
            sess.log.append({"player": sess.seat, "action": int(action), "text": text})
        self.start_bots(sess)
