"""The play server's web application: the page, its static files and the JSON API (`create_app`), behind the
limits' middleware."""
from __future__ import annotations

import asyncio
import contextlib
import json
import time

from harmonies_env.config import RIVER_LOOPS
from harmonies_env.game import IllegalActionError

from ..table import static_text
from .limits import (
    BODY_SECONDS,
    DEFAULT_OPPONENTS,
    IDLE_SECONDS,
    MAX_BODY_BYTES,
    MAX_CLIENT_GAMES,
    MAX_GAMES,
    TOKEN_HEADER,
    BadRequest,
    BodyLimit,
    HostCheck,
    _short,
    parse_body,
)
from .sessions import ClientFull, Manager, Session, TableFull, request_config


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
        from ..replay import build_game, render_html

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
