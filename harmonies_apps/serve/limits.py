"""The play server's limits (its constants, documented in `harmonies_apps.serve` and docs/web.md) and the checks of
what a request may be: its body's size and time (`BodyLimit`), its JSON (`parse_body`), its Host and Origin
(`HostCheck`). Pure ASGI and JSON: no game, no session."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

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
