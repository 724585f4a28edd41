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
from typing import Any

from .bots import BotScheduler
from .limits import (
    BODY_SECONDS,
    BOTS_PER_CLIENT,
    DEFAULT_OPPONENTS,
    HEAD_SECONDS,
    IDLE_SECONDS,
    KEEP_ALIVE_SECONDS,
    MAX_BODY_BYTES,
    MAX_CLIENT_GAMES,
    MAX_CONNECTIONS,
    MAX_GAMES,
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    TOKEN_HEADER,
    BadRequest,
    BodyLimit,
    HostCheck,
    allowed_hosts,
    json_depth,
    parse_body,
)
from .routes import create_app
from .server import RefusedConnections, bind_port, serve_config, trusted_proxies
from .sessions import ClientFull, Manager, Session, TableFull, request_config


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

    from ..options import HelpFormatter, agents_help

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


__all__ = ["BODY_SECONDS", "BOTS_PER_CLIENT", "DEFAULT_OPPONENTS", "HEAD_SECONDS", "IDLE_SECONDS",
           "KEEP_ALIVE_SECONDS", "MAX_BODY_BYTES", "MAX_CLIENT_GAMES", "MAX_CONNECTIONS", "MAX_GAMES",
           "MAX_INT_DIGITS", "MAX_JSON_DEPTH", "TOKEN_HEADER", "BadRequest", "BodyLimit", "BotScheduler",
           "ClientFull", "HostCheck", "Manager", "RefusedConnections", "Session", "TableFull", "add_parser",
           "allowed_hosts", "bind_port", "cmd_serve", "create_app", "json_depth", "parse_body", "request_config",
           "serve_config", "trusted_proxies"]
