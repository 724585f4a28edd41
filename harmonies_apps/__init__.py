"""Applications on top of the engine and the agents: the `harmonies` command, tournaments, play and viewers.

Layers depend one way: `harmonies_env` (kernels, game, envs) -> `agents` -> `experiments` / `harmonies_apps`.
Nothing in `harmonies_env` or `agents` imports this package.
"""

import os as _os
import signal as _signal
import sys as _sys


def _stop_now(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM before the `harmonies` command holds `harmonies_env.stops` (its imports take a second or
    more): the command's one stop line and exit status 128 + the signal, not a KeyboardInterrupt traceback. A worker
    process forked from it (a `--jobs` pool ended by its parent with SIGTERM) exits without the line: the command
    itself says how it stopped."""
    if _os.getpid() != _COMMAND_PID:
        _os._exit(128 + signum)
    name = "SIGINT (Ctrl-C)" if signum == _signal.SIGINT else "SIGTERM"
    _sys.stderr.write(f"harmonies: stopped by {name}\n")
    _sys.stderr.flush()
    _os._exit(128 + signum)


_COMMAND_PID = _os.getpid()
if _os.path.basename(_sys.argv[0] if _sys.argv else "") == "harmonies" \
        and _sys.modules.get("multiprocessing.process") is None:  # the console command itself, not a worker or library
    for _s in (_signal.SIGINT, _signal.SIGTERM):
        if _signal.getsignal(_s) in (_signal.default_int_handler, _signal.SIG_DFL):
            _signal.signal(_s, _stop_now)
