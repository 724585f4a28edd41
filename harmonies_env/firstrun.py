"""What a new user meets first: the engine's one-time compile, and how to add an optional extra.

Why: the first command after installing spends ~30 s compiling the numba kernels (cached afterwards, next to the
modules or in NUMBA_CACHE_DIR); with nothing printed it looks hung. The entry points (`harmonies`, `python -m
harmonies_env.demo`, `python -m experiments.train`) call `say_if_compiling()`, which prints one line when the cache
is cold and stderr is a terminal (piped output and CI logs stay as they are). And a missing extra is installed one
way from a checkout (`pip install -e ".[train]"`) and another from a wheel (`pip install "harmonies-env[train]"`):
`install_hint` gives the one that fits this installation.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

__all__ = ["COMPILE_NOTE", "engine_cache_cold", "say_if_compiling", "from_checkout", "install_hint"]

#: The line printed when the engine compiles (a cold numba cache).
COMPILE_NOTE = "compiling the engine, once, about 30 s (numba caches it for the next runs)"

_ROOT = Path(__file__).resolve().parents[1]


def engine_cache_cold() -> bool:
    """True when the engine's kernels have no numba cache yet (the next game compiles them). Read from the cache
    index of `rules.step`, which every game runs; False when numba's cache layout cannot be read."""
    try:
        from . import rules

        index = rules.step._cache._cache_file._index_path
    except (AttributeError, ImportError):  # another numba version's internals: say nothing rather than guess
        return False
    return not Path(index).exists()


def say_if_compiling(stream: TextIO | None = None) -> bool:
    """Print `COMPILE_NOTE` on `stream` (default stderr) when the cache is cold and the stream is a terminal;
    returns whether it did."""
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty or not engine_cache_cold():
        return False
    print(COMPILE_NOTE, file=stream, flush=True)
    return True


def from_checkout() -> bool:
    """True when this package runs from a source checkout (editable install or PYTHONPATH: pyproject.toml sits
    next to it), False when installed from a wheel."""
    return (_ROOT / "pyproject.toml").is_file() and (_ROOT / "harmonies_env").is_dir()


def install_hint(extra: str) -> str:
    """The pip command that adds `extra` to this installation: `pip install -e ".[extra]"` in a checkout,
    `pip install "harmonies-env[extra]"` for a wheel."""
    return f'pip install -e ".[{extra}]"' if from_checkout() else f'pip install "harmonies-env[{extra}]"'
