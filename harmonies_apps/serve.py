"""`harmonies serve`: play Harmonies against the bots in a browser (a local Starlette app run by uvicorn).

    harmonies serve                              # http://127.0.0.1:8000
    harmonies serve --port 8080 --opponents greedy mcts:1.0 random

Needs the `web` extra: `pip install -e ".[web]"` (starlette, uvicorn).

HTTP API (JSON), all under /api:
    GET  /api/config                     opponents offered, defaults
    POST /api/games                      {"opponents": [spec, ...], "seat": 0, "side": "A", "spirits": false,
                                          "seed": int (optional; default: a secret random seed)}
                                         -> a new game's state (no opponents = solo); bots to move first start
    GET  /api/games/{id}[?wait=S]        state; with wait, up to S seconds for the bots to finish first
    POST /api/games/{id}/step            {"action": int} -> new state; illegal -> 400 {"error"}, game unchanged
    GET  /api/games/{id}/record          the game record (Game.record()) once the game is over (it holds the seed)
    GET  /api/games/{id}/replay          the replay viewer page for the finished game

What reaches the page is the human seat's view only: the public table (boards, cards, central board, market,
pouch colour counts, draw-pile size), the human's own dealt Spirits and legal actions. The pouch order, the
draw pile's order, other seats' dealt Spirits and the game's seed are never sent while the game is running.
Bots play in a worker thread so requests stay responsive; the page shows them as "thinking".
"""
from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harmonies_env import actions as A
from harmonies_env.game import Game, IllegalActionError
from harmonies_env.view import PlayerView

from .table import static_data, static_text, table_state

DEFAULT_OPPONENTS = ("greedy", "random", "mcts:1.0")
MAX_SESSIONS = 64
LOG_LINES = 40


class Session:
    """One game between a person (seat `seat`) and bots. All access to `game` holds `lock`."""

    def __init__(self, game: Game, seat: int, specs: list[str | None], agents: list[Any]):
        self.id = uuid.uuid4().hex[:16]
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
            }
        if include_static:
            out["static"] = static_data(g.side)
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


class Manager:
    """Sessions, and the worker thread pool in which bots move."""

    def __init__(self, opponents: list[str], bot_delay: float = 0.5, workers: int = 2):
        from agents import make_agent

        self.make_agent = make_agent
        self.opponents = list(opponents)
        for spec in self.opponents:  # fail at start-up, not in the middle of a game
            make_agent(spec)
        self.bot_delay = float(bot_delay)
        self.sessions: dict[str, Session] = {}
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="harmonies-bot")
        self.lock = threading.Lock()

    def new_game(self, opponents: list[str], seat: int, side: str, spirits: bool, seed: int | None = None) -> Session:
        if not isinstance(opponents, list) or len(opponents) > 3:
            raise ValueError("opponents must be a list of 0 to 3 agent specs (0 = solo)")
        for spec in opponents:
            if spec not in self.opponents:
                raise ValueError(f"opponent {spec!r} is not offered; choose from {', '.join(self.opponents)}")
        n = 1 + len(opponents)
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
            raise ValueError(f"seat must be 0..{n - 1} for {n} player{'s' if n > 1 else ''}, got {seat!r}")
        if not isinstance(spirits, bool):
            raise ValueError(f"spirits must be true or false, got {spirits!r}")
        game = Game(n, side, spirits, seed=seed)  # validates side and seed
        specs: list[str | None] = list(opponents[:seat]) + [None] + list(opponents[seat:])
        agents = [None if s is None else self.make_agent(s, seed=secrets.randbits(32)) for s in specs]
        for a in agents:
            if a is not None and hasattr(a, "reset"):
                a.reset()
        sess = Session(game, seat, specs, agents)
        with self.lock:
            if len(self.sessions) >= MAX_SESSIONS:  # forget the oldest game
                oldest = min(self.sessions.values(), key=lambda s: s.created)
                del self.sessions[oldest.id]
            self.sessions[sess.id] = sess
        self.start_bots(sess)
        return sess

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
        self.pool.submit(self._run_bots, sess)

    def _run_bots(self, sess: Session) -> None:
        """Bots move until it is the person's turn or the game ends (worker thread)."""
        try:
            while True:
                with sess.lock:
                    if not sess.bot_to_move():
                        break
                    p = sess.game.current_player
                    turn = sess.game.turn
                    view = PlayerView(sess.game, p)  # a snapshot: views do not follow the game
                a = sess.agents[p].act(view)  # only this thread changes the game while thinking
                with sess.lock:
                    text = sess.game.describe_action(a)
                    sess.game.step(a)
                    sess.log.append({"player": p, "action": int(a), "text": text})
                    ended_turn = sess.game.turn != turn
                if ended_turn and self.bot_delay > 0:
                    time.sleep(self.bot_delay)
        except Exception as e:  # a bot failing must not hang the page: report it
            sess.error = f"{sess.names[sess.game.current_player]} failed: {type(e).__name__}: {e}"
        finally:
            with sess.lock:
                sess.thinking = False
                sess.idle.set()

    def step(self, sess: Session, action: Any) -> None:
        """The person's micro-action; ValueError (game unchanged) when it cannot be played now."""
        if isinstance(action, bool) or not isinstance(action, int):
            raise ValueError(f"action must be an integer 0..{A.NUM_ACTIONS - 1}, got {action!r}")
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


def create_app(opponents: list[str] | tuple[str, ...] = DEFAULT_OPPONENTS, bot_delay: float = 0.5):
    """The Starlette application (the page, its static files and the JSON API)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    mgr = Manager(list(opponents), bot_delay=bot_delay)

    def err(msg: str, code: int = 400) -> JSONResponse:
        return JSONResponse({"error": msg}, status_code=code)

    def session_or_404(request: Request) -> Session | JSONResponse:
        try:
            return mgr.get(request.path_params["gid"])
        except KeyError:
            return err(f"no game {request.path_params['gid']!r} (the server may have restarted)", 404)

    async def index(request: Request) -> Response:
        return HTMLResponse(static_text("play.html"))

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        types = {"harmonies.js": "text/javascript", "play.js": "text/javascript", "harmonies.css": "text/css"}
        if name not in types:
            return err(f"no static file {name!r}", 404)
        return Response(static_text(name), media_type=types[name])

    async def config(request: Request) -> Response:
        return JSONResponse({"opponents": mgr.opponents, "sides": ["A", "B"], "max_opponents": 3})

    async def body(request: Request) -> dict | JSONResponse:
        # JSON only: a browser cannot send this content type cross-site without a CORS preflight, which this
        # server never grants, so another web page cannot make moves for you.
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return err("send the request body as JSON (Content-Type: application/json)", 415)
        try:
            data = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return err("the request body must be JSON")
        if not isinstance(data, dict):
            return err("the request body must be a JSON object")
        return data

    async def new_game(request: Request) -> Response:
        data = await body(request)
        if isinstance(data, JSONResponse):
            return data
        unknown = set(data) - {"opponents", "seat", "side", "spirits", "seed"}
        if unknown:
            return err(f"unknown fields {sorted(unknown)}; a new game takes opponents, seat, side, spirits, seed")
        try:
            sess = await run_in_threadpool(mgr.new_game, data.get("opponents", mgr.opponents[:1]), data.get("seat", 0),
                                           data.get("side", "A"), data.get("spirits", False), data.get("seed"))
        except ValueError as e:
            return err(str(e))
        return JSONResponse(sess.state(include_static=True))

    async def get_state(request: Request) -> Response:
        sess = session_or_404(request)
        if isinstance(sess, JSONResponse):
            return sess
        try:
            wait = min(30.0, max(0.0, float(request.query_params.get("wait", "0"))))
        except ValueError:
            return err("wait must be a number of seconds")
        if wait > 0:
            await run_in_threadpool(sess.idle.wait, wait)
        return JSONResponse(sess.state(include_static=request.query_params.get("static") == "1"))

    async def step(request: Request) -> Response:
        sess = session_or_404(request)
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
        """(session, its game's record with the seats' names), or the error response: no such game, or the game
        is not over (the record holds the seed, which would reveal the pouch and the draw pile)."""
        sess = session_or_404(request)
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
        return HTMLResponse(page)

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
        mgr.pool.shutdown(wait=False, cancel_futures=True)

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.manager = mgr
    return app


def cmd_serve(args: argparse.Namespace) -> int:
    # Without the web extra this raises ModuleNotFoundError before anything starts; the CLI turns it into its
    # one-line `pip install -e ".[web]"` message and exit status 2, as for every other missing extra.
    import starlette  # noqa: F401
    import uvicorn

    app = create_app(args.opponents, bot_delay=args.bot_delay)
    print(f"Harmonies: open http://{args.host}:{args.port}/ in a browser (Ctrl-C stops the server)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `harmonies serve` on the CLI's subparsers."""
    p = sub.add_parser("serve", help="play against the bots in a browser (local web app)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--port", type=int, default=8000, help="port to listen on")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)")
    p.add_argument("--opponents", nargs="+", default=list(DEFAULT_OPPONENTS),
                   help="agent specs offered as opponents: random, greedy[:BEAM[:spaces]], mcts[:SECONDS|:Nit], "
                        "ppo[:PATH]")
    p.add_argument("--bot-delay", type=float, default=0.5, help="pause in seconds after each bot turn, to follow it")
    p.set_defaults(func=cmd_serve)
    return p


__all__ = ["create_app", "Manager", "Session", "add_parser", "cmd_serve"]
