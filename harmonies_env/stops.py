"""Stopping a long command cleanly on Ctrl-C (SIGINT) or SIGTERM: one line, exit status 128 + the signal's number.

Why one mechanism: without it SIGTERM ends the process at once (no `finally`, no worker clean-up, temporary files
left behind) and SIGINT prints a traceback from wherever the main thread happened to be. `stop_on_signals()` (the
commands' entry points hold it) turns both into `Stopped`, a `KeyboardInterrupt`, so everything that already cleans
up on Ctrl-C (atomic writers remove their temporary file, process pools end their workers) does so on SIGTERM too,
and the entry point prints `stop_message` and exits with `exit_status`.

Code that must not stop halfway (a training iteration and its checkpoint) runs inside `held()`: a first signal there
is held until the block ends (`requested()` says one came) and raised then; a second one raises at once.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

__all__ = ["Stopped", "stop_on_signals", "held", "requested", "checkpoint", "exit_status", "stop_message",
           "ignore_in_worker",
           "quiet_exit"]

_NAMES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


class Stopped(KeyboardInterrupt):
    """A SIGINT or SIGTERM arrived (`signum`); `detail` says what was kept (set by whoever stopped cleanly)."""

    def __init__(self, signum: int, detail: str = ""):
        super().__init__(signum)
        self.signum = int(signum)
        self.detail = detail


_state = {"holding": 0, "pending": 0, "raised": 0}


def _handler(signum: int, frame: object) -> None:
    if _state["holding"] and not _state["pending"]:
        _state["pending"] = signum
        return
    _state["raised"] = signum  # (kept for `checkpoint`: code it lands in may swallow the exception)
    raise Stopped(signum)


def checkpoint() -> None:
    """Raise again a stop whose `Stopped` was swallowed where the signal landed (numba's compiler catches exceptions
    raised inside it, so a SIGTERM during a compilation went unseen and a run played on to its end). Long loops call
    it between steps; a no-op when no signal came. Only inside `stop_on_signals`, which clears it."""
    signum = _state["raised"]
    if signum:
        _state["raised"] = 0
        raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Inside the block SIGINT and SIGTERM raise `Stopped` in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _state["pending"] = 0
        _state["raised"] = 0


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run a block that must finish: a first signal inside it is held and raised as `Stopped` when it ends."""
    _state["holding"] += 1
    try:
        yield
    finally:
        _state["holding"] -= 1
    if not _state["holding"] and _state["pending"]:
        signum, _state["pending"] = _state["pending"], 0
        raise Stopped(signum)


def requested() -> int:
    """The signal held by `held()` so far (0: none): a loop checkpoints before its block ends."""
    return int(_state["pending"])


def exit_status(e: KeyboardInterrupt) -> int:
    """130 for SIGINT (a plain KeyboardInterrupt too), 143 for SIGTERM: the shell's 128 + the signal's number."""
    return 128 + (e.signum if isinstance(e, Stopped) else int(signal.SIGINT))


def stop_message(prog: str, e: KeyboardInterrupt, kept: str = "") -> str:
    """The one line a stopped command prints: `prog: stopped by SIGTERM; <what was kept>`."""
    name = _NAMES.get(e.signum, f"signal {e.signum}") if isinstance(e, Stopped) else _NAMES[signal.SIGINT]
    detail = kept or (e.detail if isinstance(e, Stopped) else "")
    return f"{prog}: stopped by {name}" + (f"; {detail}" if detail else "")


def ignore_in_worker() -> None:
    """A worker process's initializer: Ctrl-C reaches the whole process group, but only the parent answers it (it
    ends its workers); without this every worker prints its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def quiet_exit() -> None:
    """After a stop's one line: nothing more on the way out. A stop inside numba's compiler leaves llvmlite objects
    half made, whose finalizers then print "Exception ignored in ..." tracebacks at exit; those say nothing."""
    import sys

    sys.unraisablehook = lambda unraisable: None

