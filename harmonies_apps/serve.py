"""`harmonies serve`: play Harmonies against the bots in a browser (a local Starlette app run by uvicorn).

    harmonies serve                              # http://127.0.0.1:8000
    harmonies serve --port 8080 --opponents greedy learned mlp mcts:1.0 random

Needs the `web` extra: `pip install -e ".[web]"` (starlette, uvicorn).

HTTP API (JSON), all under /api (docs/web.md has the whole table, the limits and the status codes):
    GET  /api/config                     opponents offered, defaults, limits
    POST /api/games                      {"opponents": [spec, ...], "seat": 0, "side": "A", "spirits": false,
                                          "seed": int (optional; default: a secret random seed),
                                          "river_loops": "rulebook" or "bga" (optional; default "rulebook")}
                                         -> a new game's state plus its "token" (no opponents = solo); bots to
                                         move first start. Every later request on the game sends the token in
                                         the X-Game-Token header (record and replay also take ?token=, for links).
    GET  /api/games/{id}[?wait=S]        state; with wait, up to S seconds for the bots to finish first
    POST /api/games/{id}/step            {"action": int} -> new state; illegal -> 400 {"error"}, game unchanged
    GET  /api/games/{id}/record          the game record (Game.record()) once the game is over (it holds the seed)
    GET  /api/games/{id}/replay          the replay viewer page for the finished game

Limits: request bodies over MAX_BODY_BYTES get 413 (counted as they arrive, so a body without Content-Length is cut
off too); JSON nested deeper than MAX_JSON_DEPTH, integers longer than MAX_INT_DIGITS digits, NaN/Infinity and
malformed JSON get 400 naming what was wrong. A game needs its token (missing or wrong: 403). The table holds
`max_games` games; to make room for a new one the server forgets the least recently used game idle for
`idle_seconds`, finished ones first (a finished game's record outlives it no less than an idle game); when every
game is in play or recently used it refuses the new one (503). One client (its connection's IP address: forwarded
headers count only from the `--proxy-headers` proxies) holds at most MAX_CLIENT_GAMES games in play (429), and
bots move one decision at a time, in turn across clients (`BotScheduler`). A connection must send each request's head
within HEAD_SECONDS and its body within BODY_SECONDS (408), and is closed after KEEP_ALIVE_SECONDS idle; `Host` must
name the bound address (400) and `Origin`, when sent, this server's page (403): no DNS rebinding.

What reaches the page is the human seat's view only: the public table (boards, cards, central board, market,
pouch colour counts, draw-pile size), the human's own dealt Spirits and legal actions. The pouch order, the
draw pile's order, other seats' dealt Spirits and the game's seed are never sent while the game is running.
Bots play in a worker thread so requests stay responsive; the page shows them as "thinking".
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import logging
import secrets
import socket
import threading
import time
import uuid
from typing import Any

from harmonies_env import actions as A
from harmonies_env.config import RIVER_LOOPS, GameConfig
from harmonies_env.game import Game, IllegalActionError
from harmonies_env.view import PlayerView

from .table import static_data, static_text, table_state

#: The opponents offered when --opponents is not given: the shipped learned agents included (`learned`: the n-tuple
#: network, alone and with its one-turn search; `mlp`: the earlier MLP, a baseline).
DEFAULT_OPPONENTS = ("greedy", "learned", "learned-search", "mlp", "mcts:1.0", "random")
#: Games the server keeps at once (see Manager for what is forgotten, and when, to make room).
MAX_GAMES = 64
#: A game nobody has touched (no request, no bot move) for this long may be forgotten to make room for a new one.
IDLE_SECONDS = 600.0
#: Request bodies larger than this get 413 (the largest the page sends is a new game's ~150 bytes).
MAX_BODY_BYTES = 16 * 1024
#: JSON nested deeper than this ([[[...]]] or {"a": {...}}) gets 400; the API's own bodies are 2 deep.
MAX_JSON_DEPTH = 8
#: JSON integers with more digits than this get 400 (a seed is below 2**63: 19 digits).
MAX_INT_DIGITS = 20
#: The header that carries a game's token (record and replay also accept ?token=).
TOKEN_HEADER = "X-Game-Token"
#: Connections uvicorn serves at once; beyond, it answers 503 (a page holds one or two).
MAX_CONNECTIONS = 256
#: A kept-alive connection with no new request for this long is closed (uvicorn's timeout_keep_alive).
KEEP_ALIVE_SECONDS = 5.0
#: A connection must complete a request's head (request line and headers) within this long of opening, or of the
#: answer to its previous request; else it is closed. Idle or slow-sending sockets cannot hold connection slots.
HEAD_SECONDS = 10.0
#: A request's body must have arrived within this long of its head; else 408 and the connection is closed.
BODY_SECONDS = 10.0
#: Games in play (not over, used within the idle time) one client (one IP address) may hold; beyond: 429.
MAX_CLIENT_GAMES = 8
#: Bot decisions of one client's games that run at once (the rest wait their turn: `BotScheduler`).
BOTS_PER_CLIENT = 1
LOG_LINES = 40


class BadRequest(ValueError):
    """A request body the API refuses (400), with a message naming what was wrong."""


class TableFull(RuntimeError):
    """No room for a new game: every game held is being played (503)."""


class ClientFull(RuntimeError):
    """This client already has MAX_CLIENT_GAMES games in play (429)."""


class BotScheduler:
    """The worker threads in which bots move, shared fairly: one job is ONE bot decision, jobs are taken round-robin
    across clients (then across a client's games, in the order they asked), and at most `per_client` decisions of one
    client run at once. A client with twelve games of slow bots therefore takes one worker, and another client's
    bot still moves as soon as a worker finishes its current decision.

    `submit(client, job)`: `job()` makes one decision and returns None when it is done, else the seconds to wait
    before its next decision (the bot delay after a turn); it is then queued again, at the back."""

    def __init__(self, workers: int = 2, per_client: int = BOTS_PER_CLIENT):
        from collections import Counter, deque

        self.per_client = int(per_client)
        self.cond = threading.Condition()
        self.queues: dict[str, Any] = {}  # client -> deque of jobs waiting
        self.order: Any = deque()  # clients with jobs waiting, in turn
        self.running: Counter[str] = Counter()
        self.closed = False
        self.threads = [threading.Thread(target=self._work, name=f"harmonies-bot-{i}", daemon=True)
                        for i in range(int(workers))]
        for t in self.threads:
            t.start()

    def submit(self, client: str, job: Any) -> None:
        from collections import deque

        with self.cond:
            if self.closed:
                return
            if client not in self.queues:
                self.queues[client] = deque()
                self.order.append(client)
            self.queues[client].append(job)
            self.cond.notify()

    def _take(self) -> tuple[str, Any] | None:
        """The next (client, job) in turn whose client is under its cap (caller holds cond), or None."""
        for _ in range(len(self.order)):
            client = self.order[0]
            self.order.rotate(-1)
            if self.running[client] < self.per_client:
                queue = self.queues[client]
                job = queue.popleft()
                if not queue:
                    del self.queues[client]
                    self.order.remove(client)
                return client, job
        return None

    def _work(self) -> None:
        while True:
            with self.cond:
                while not self.closed and (found := self._take()) is None:
                    self.cond.wait()
                if self.closed:
                    return
                client, job = found
                self.running[client] += 1
            try:
                again = job()
            finally:
                with self.cond:
                    self.running[client] -= 1
                    self.cond.notify_all()
            if again is not None:
                if again > 0:
                    timer = threading.Timer(again, self.submit, (client, job))
                    timer.daemon = True
                    timer.start()
                else:
                    self.submit(client, job)

    def shutdown(self) -> None:
        """Stop taking jobs (a decision under way finishes in its daemon thread)."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def _short(value: Any, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters, for error messages that quote what a client sent."""
    r = repr(value)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def json_depth(text: str, limit: int) -> int:
    """How deep arrays and objects nest in `text` (brackets inside strings do not count), stopping once past
    `limit`: json.loads recurses once per level, so a body nested 100,000 deep must be refused before it."""
    depth = best = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > best:
                best = depth
                if best > limit:
                    return best
        elif ch in "]}":
            depth -= 1
    return best


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise BadRequest(f"a number in the request body has {len(digits.lstrip('-'))} digits; at most "
                         f"{MAX_INT_DIGITS} are accepted")
    return int(digits)


def _parse_constant(name: str) -> Any:
    raise BadRequest(f"{name} is not a JSON number; send a finite number")


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or BadRequest naming what was wrong (never a RecursionError or a
    500): not UTF-8, nested deeper than MAX_JSON_DEPTH, integers longer than MAX_INT_DIGITS, NaN/Infinity,
    malformed JSON, or JSON that is not an object."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"the request body is not UTF-8 text (byte {e.start})") from None
    depth = json_depth(text, MAX_JSON_DEPTH)
    if depth > MAX_JSON_DEPTH:
        raise BadRequest(f"the request body's JSON is nested more than {MAX_JSON_DEPTH} deep")
    try:
        data = json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant)
    except json.JSONDecodeError as e:
        raise BadRequest(f"the request body is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:  # json_depth should have caught it; never a 500
        raise BadRequest("the request body's JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the request body must be a JSON object, got a JSON {type(data).__name__}")
    return data


class BodyLimit:
    """ASGI middleware: a request whose body is larger than `max_bytes` gets 413, one whose body has not arrived
    within `body_seconds` of its head 408, and the connection is closed.

    The declared Content-Length is checked before anything is read, and the bytes are counted as they arrive, so
    a chunked body without a Content-Length is cut off at the limit too; at most `max_bytes` of a body are ever
    held. The body read is handed on to the application unchanged.
    """

    def __init__(self, app: Any, max_bytes: int = MAX_BODY_BYTES, body_seconds: float = BODY_SECONDS):
        self.app = app
        self.max_bytes = int(max_bytes)
        self.body_seconds = float(body_seconds)

    @staticmethod
    async def _refuse(send: Any, status: int, msg: str) -> None:
        body = json.dumps({"error": msg}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = (f"the request body is larger than {self.max_bytes} bytes, the server's limit (docs/web.md); "
                   "it was not read")
        for k, v in scope.get("headers", []):
            if k.lower() == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    await self._refuse(send, 400, f"Content-Length must be a number of bytes, got {_short(v)}")
                    return
                if declared > self.max_bytes:
                    await self._refuse(send, 413, too_big)
                    return
        chunks, size = [], 0
        end = time.monotonic() + self.body_seconds
        while True:
            try:
                msg = await asyncio.wait_for(receive(), max(0.0, end - time.monotonic()))
            except asyncio.TimeoutError:
                await self._refuse(send, 408, f"the request body did not arrive within {self.body_seconds:g} s")
                return
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, 413, too_big)
                return
            chunks.append(chunk)
            if not msg.get("more_body", False):
                break
        body, delivered = b"".join(chunks), False

        async def replay() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as the server would

        await self.app(scope, replay, send)


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The `Host` values (host:port) that name this server when it listens on host:port: the address itself and, on
    a loopback address, its other loopback names (localhost, 127.0.0.1, [::1]). None when it listens on every
    interface (0.0.0.0, ::): any name may reach it then, and only Origin is left to check."""
    h = host.strip("[]").lower()
    if h in ("", "0.0.0.0", "::"):
        return None
    names = {h}
    if h in ("127.0.0.1", "localhost", "::1"):
        names |= {"127.0.0.1", "localhost", "::1"}
    named = {f"[{n}]" if ":" in n else n for n in names}
    return frozenset({f"{n}:{port}" for n in named} | (named if port == 80 else set()))


class HostCheck:
    """ASGI middleware against DNS rebinding and cross-site requests: a request whose `Host` is not one of the
    server's own addresses (`app.state.allowed_hosts`, set once the port is bound; None: no check) gets 400, and one
    whose `Origin` (sent by browsers on cross-site and on POST requests) is another site's gets 403. A page of
    another site, even under a name that resolves to 127.0.0.1, can then neither read nor play a game here."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        allowed = getattr(getattr(scope.get("app"), "state", None), "allowed_hosts", None)
        if scope["type"] != "http" or allowed is None:
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        host = headers.get(b"host", b"").decode("latin-1").lower()
        origin = headers.get(b"origin")
        if host not in allowed:
            await BodyLimit._refuse(send, 400, f"Host {_short(host)} is not this server's address "
                                                     f"({', '.join(sorted(allowed))}): refused (DNS rebinding)")
            return
        if origin is not None:
            text = origin.decode("latin-1").lower()
            scheme, _, rest = text.partition("://")
            if scheme != "http" or rest not in allowed:
                await BodyLimit._refuse(send, 403, f"requests from the page of {_short(text)} are refused: "
                                                         "only this server's own page may use its API")
                return
        await self.app(scope, receive, send)


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


def create_app(opponents: list[str] | tuple[str, ...] = DEFAULT_OPPONENTS, bot_delay: float = 0.5,
               max_games: int = MAX_GAMES, idle_seconds: float = IDLE_SECONDS, max_body_bytes: int = MAX_BODY_BYTES,
               body_seconds: float = BODY_SECONDS, max_client_games: int = MAX_CLIENT_GAMES):
    """The Starlette application (the page, its static files and the JSON API), behind the Host / Origin check and
    the body size and time limits."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    mgr = Manager(list(opponents), bot_delay=bot_delay, max_games=max_games, idle_seconds=idle_seconds,
                  max_client_games=max_client_games)

    def err(msg: str, code: int = 400, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"error": msg}, status_code=code, headers=headers)

    def owned_session(request: Request, query_token: bool = False) -> Session | JSONResponse:
        """The game of the path, if the request carries its token (X-Game-Token header; with `query_token`, also
        ?token=): else 404 (no such game) or 403 (no token, or not this game's)."""
        gid = request.path_params["gid"]
        try:
            sess = mgr.get(gid)
        except KeyError:
            return err(f"no game {_short(gid)} (the server may have restarted, or forgotten the game after it was "
                       f"finished or idle for {mgr.idle_seconds:g} s)", 404)
        token = request.headers.get(TOKEN_HEADER)
        if token is None and query_token:
            token = request.query_params.get("token")
        if token is None:
            return err(f"game {gid} needs its token: send the \"token\" its creation returned in the {TOKEN_HEADER} "
                       "header", 403)
        if not sess.owned_by(token):
            return err(f"wrong token for game {gid}: only the page that created a game may play or read it", 403)
        sess.touch()
        return sess

    async def index(request: Request) -> Response:
        return HTMLResponse(static_text("play.html"))

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        types = {"harmonies.js": "text/javascript", "play.js": "text/javascript", "harmonies.css": "text/css"}
        if name not in types:
            return err(f"no static file {_short(name)}", 404)
        return Response(static_text(name), media_type=types[name])

    async def config(request: Request) -> Response:
        return JSONResponse({"opponents": mgr.opponents, "sides": ["A", "B"], "river_loops": list(RIVER_LOOPS),
                             "max_opponents": 3,
                             "max_games": mgr.max_games, "idle_seconds": mgr.idle_seconds,
                             "max_client_games": mgr.max_client_games,
                             "max_body_bytes": max_body_bytes, "token_header": TOKEN_HEADER})

    async def body(request: Request) -> dict | JSONResponse:
        # JSON only: a browser cannot send this content type cross-site without a CORS preflight, which this
        # server never grants, so another web page cannot make moves for you.
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return err("send the request body as JSON (Content-Type: application/json)", 415)
        try:
            return parse_body(await request.body())  # BodyLimit has already cut it to max_body_bytes
        except BadRequest as e:
            return err(str(e))

    async def new_game(request: Request) -> Response:
        data = await body(request)
        if isinstance(data, JSONResponse):
            return data
        unknown = set(data) - {"opponents", "seat", "side", "spirits", "seed", "river_loops"}
        if unknown:
            return err(f"unknown fields {_short(sorted(unknown), 200)}; a new game takes opponents, seat, side, "
                       "spirits, seed, river_loops")
        client = request.client.host if request.client else "local"
        try:
            opponents = data.get("opponents", mgr.opponents[:1])
            fits = isinstance(opponents, list) and len(opponents) <= 3  # else new_game refuses the opponents
            config = request_config(data, 1 + len(opponents) if fits else 1)
            sess = await run_in_threadpool(mgr.new_game, opponents, data.get("seat", 0), config, data.get("seed"),
                                           client)
        except TableFull as e:
            return err(str(e), 503, headers={"Retry-After": "60"})
        except ClientFull as e:
            return err(str(e), 429, headers={"Retry-After": "60"})
        except ValueError as e:
            return err(str(e))
        return JSONResponse(dict(sess.state(include_static=True), token=sess.token))

    async def get_state(request: Request) -> Response:
        sess = owned_session(request)
        if isinstance(sess, JSONResponse):
            return sess
        try:
            wait = min(30.0, max(0.0, float(request.query_params.get("wait", "0"))))
        except ValueError:
            return err("wait must be a number of seconds")
        end = time.monotonic() + wait  # waiting on the event loop, not in a thread: waits never starve the pool
        while not sess.idle.is_set() and time.monotonic() < end:
            await asyncio.sleep(0.05)
        return JSONResponse(sess.state(include_static=request.query_params.get("static") == "1"))

    async def step(request: Request) -> Response:
        sess = owned_session(request)
        if isinstance(sess, JSONResponse):
            return sess
        data = await body(request)
        if isinstance(data, JSONResponse):
            return data
        if "action" not in data:
            return err("a step needs {\"action\": <integer>}")
        try:
            mgr.step(sess, data["action"])
        except IllegalActionError as e:
            return err(str(e))
        except ValueError as e:
            return err(str(e), 409 if "not your turn" in str(e) else 400)
        return JSONResponse(sess.state())

    def finished_record(request: Request) -> tuple[Session, dict] | JSONResponse:
        """(session, its game's record with the seats' names), or the error response: no such game, no token, or
        the game is not over (the record holds the seed, which would reveal the pouch and the draw pile)."""
        sess = owned_session(request, query_token=True)
        if isinstance(sess, JSONResponse):
            return sess
        with sess.lock:
            if not sess.game.is_over:
                return err("the record (it holds the game's seed) is available once the game is over", 403)
            rec = sess.game.record()
        rec["names"] = sess.names
        return sess, rec

    async def record(request: Request) -> Response:
        found = finished_record(request)
        if isinstance(found, JSONResponse):
            return found
        sess, rec = found
        return Response(json.dumps(rec), media_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="harmonies-{sess.id}.json"'})

    async def replay(request: Request) -> Response:
        from .replay import build_game, render_html

        found = finished_record(request)
        if isinstance(found, JSONResponse):
            return found
        sess, rec = found
        page = await run_in_threadpool(lambda: render_html([build_game(rec, f"game {sess.id}")]))
        return HTMLResponse(page, headers={"Referrer-Policy": "no-referrer"})  # its URL holds the token

    routes = [
        Route("/", index),
        Route("/static/{name}", asset),
        Route("/api/config", config),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{gid}", get_state),
        Route("/api/games/{gid}/step", step, methods=["POST"]),
        Route("/api/games/{gid}/record", record),
        Route("/api/games/{gid}/replay", replay),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        mgr.bots.shutdown()

    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(HostCheck),
                                Middleware(BodyLimit, max_bytes=max_body_bytes, body_seconds=body_seconds)])
    app.state.manager = mgr
    app.state.allowed_hosts = None  # `serve_config` sets the bound address's names
    return app


def _timed_protocol() -> type:
    """uvicorn's HTTP/1.1 protocol (h11) with a deadline for each request's head: a connection that has not sent a
    complete request line and headers within HEAD_SECONDS of opening, or of the answer to its previous request, is
    closed. uvicorn's own keep-alive timeout only starts after a first answer, so without this an idle or
    slow-sending socket would hold one of its MAX_CONNECTIONS slots for as long as it likes."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        head_seconds = HEAD_SECONDS

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._head_timer = self.loop.call_later(self.head_seconds, self._head_late)

        def _head_late(self) -> None:
            waiting = self.cycle is None or self.cycle.response_complete  # no request under way: its head is late
            if waiting and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            self._head_timer.cancel()
            super().on_response_complete()
            self._head_timer = self.loop.call_later(self.head_seconds, self._head_late)

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_timer.cancel()
            super().connection_lost(exc)

    return TimedH11Protocol


def trusted_proxies(addresses: Any) -> list[str]:
    """The `--proxy-headers` addresses, each an IP address or network (ValueError naming one that is not): only
    connections from them may set the client's address with X-Forwarded-For / X-Forwarded-Proto."""
    import ipaddress

    out = []
    for a in addresses or ():
        try:
            out.append(str(ipaddress.ip_network(str(a), strict=False)))
        except ValueError:
            raise ValueError(f"--proxy-headers takes IP addresses or networks of trusted proxies, got "
                             f"{_short(a)}") from None
    return out


class RefusedConnections(logging.Filter):
    """uvicorn logs one warning per connection refused over MAX_CONNECTIONS ("Exceeded concurrency limit."): 4,274
    lines in a minute under load. This counts them (`count`, `app.state.refused`) and lets through one line per
    `every` seconds saying how many, instead."""

    MESSAGE = "Exceeded concurrency limit."

    def __init__(self, every: float = 60.0):
        super().__init__()
        self.every, self.count, self._since, self._last = every, 0, 0, time.monotonic()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != self.MESSAGE:
            return True
        self.count += 1
        self._since += 1
        now = time.monotonic()
        if now - self._last < self.every:
            return False
        record.msg, record.args = (f"refused {self._since} connection(s) over the limit of {MAX_CONNECTIONS} in the "
                                   f"last {now - self._last:.0f} s ({self.count} since start)"), ()
        self._since, self._last = 0, now
        return True


def serve_config(app: Any, host: str, port: int, proxy: Any = (), **kwargs: Any) -> Any:
    """The one uvicorn configuration of the play server (`harmonies serve` and `browser.serve_in_thread`): its
    connection limits and timeouts, and the app's `allowed_hosts` for the address it is bound to. Forwarded headers
    (X-Forwarded-For) are ignored, so a client's address is its connection's (the per-client limit cannot be
    dodged by naming another), unless `proxy` names the trusted proxies (`--proxy-headers`). Refused connections
    are counted (`RefusedConnections`, `app.state.refused`), not logged one line each."""
    import uvicorn

    app.state.allowed_hosts = allowed_hosts(host, port)
    trusted = trusted_proxies(proxy)
    log = logging.getLogger("uvicorn.error")
    for f in [f for f in log.filters if isinstance(f, RefusedConnections)]:
        log.removeFilter(f)
    app.state.refused = RefusedConnections()
    log.addFilter(app.state.refused)
    return uvicorn.Config(app, host=host, port=port, log_level="warning", limit_concurrency=MAX_CONNECTIONS,
                          timeout_keep_alive=KEEP_ALIVE_SECONDS, http=_timed_protocol(),
                          proxy_headers=bool(trusted), forwarded_allow_ips=",".join(trusted) or None, **kwargs)


def bind_port(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free port the system picks), or ValueError naming the port
    or the host: the server is announced only once this succeeded."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"--port must be 0..65535 (0: any free port), got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ValueError(f"cannot listen on host {host!r}: {e.strerror}") from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does; a listening port stays busy
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ValueError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise ValueError(f"cannot listen on {host} port {port}: {e.strerror or e}") from None
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    """Check the options, build the app (the opponents load now), bind the port, and only then announce the URL.

    Bad options, a busy port or an unknown host are one line on stderr and exit status 2 (ValueError, which the
    CLI prints)."""
    # Without the web extra this raises ModuleNotFoundError before anything starts; the CLI turns it into its
    # one-line `pip install -e ".[web]"` message and exit status 2, as for every other missing extra.
    import starlette  # noqa: F401
    import uvicorn

    if not 0 <= args.port <= 65535:  # before loading the opponents: a typo fails at once
        raise ValueError(f"--port must be 0..65535 (0: any free port), got {args.port}")
    if args.max_games < 1:
        raise ValueError(f"--max-games must be at least 1, got {args.max_games}")
    if not args.idle_minutes >= 0:
        raise ValueError(f"--idle-minutes must be >= 0, got {args.idle_minutes}")
    proxy = trusted_proxies(args.proxy_headers)
    app = create_app(args.opponents, bot_delay=args.bot_delay, max_games=args.max_games,
                     idle_seconds=args.idle_minutes * 60)
    sock = bind_port(args.host, args.port)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Harmonies: open http://{host}:{port}/ in a browser (Ctrl-C stops the server)", flush=True)
    config = serve_config(app, args.host, port, proxy=proxy)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `harmonies serve` on the CLI's subparsers."""
    from agents.registry import KINDS

    from .cli import HelpFormatter, agents_help

    p = sub.add_parser("serve", help="play against the bots in a browser (local web app)",
                       formatter_class=HelpFormatter, epilog=agents_help(),
                       description="Play Harmonies against the bots in a browser: a local web server (docs/web.md).")
    p.add_argument("--port", type=int, default=8000, help="port to listen on, 0..65535 (0: any free port, printed)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)")
    p.add_argument("--opponents", nargs="+", default=list(DEFAULT_OPPONENTS), metavar="SPEC",
                   help="agent specs offered as opponents (the first is preselected): "
                        + ", ".join(k.help.split(" (")[0] for k in KINDS.values()) + " (see below)")
    p.add_argument("--bot-delay", type=float, default=0.5, help="pause in seconds after each bot turn, to follow it")
    p.add_argument("--max-games", type=int, default=MAX_GAMES,
                   help="games held at once; a new game beyond takes the place of a finished or idle one, else is "
                        "refused (503)")
    p.add_argument("--idle-minutes", type=float, default=IDLE_SECONDS / 60,
                   help="a game (in play or finished) untouched this long may be forgotten to make room for a new game")
    p.add_argument("--proxy-headers", nargs="+", default=None, metavar="ADDRESS",
                   help="behind a reverse proxy: the proxies' IP addresses (or networks) whose X-Forwarded-For names "
                        "the client; without it forwarded headers are ignored")
    p.set_defaults(func=cmd_serve)
    return p


__all__ = ["create_app", "Manager", "Session", "BodyLimit", "parse_body", "bind_port", "add_parser", "cmd_serve"]
