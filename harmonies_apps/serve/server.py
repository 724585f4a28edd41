"""How the play server runs under uvicorn: its connection limits and timeouts (`serve_config`, the head deadline
of `_timed_protocol`), which proxies may name the client (`trusted_proxies`), refused connections counted
(`RefusedConnections`), and the listening socket (`bind_port`)."""
from __future__ import annotations

import errno
import logging
import socket
import time
from typing import Any

from .limits import HEAD_SECONDS, KEEP_ALIVE_SECONDS, MAX_CONNECTIONS, _short, allowed_hosts


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
