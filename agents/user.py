"""`py:MODULE:FACTORY`: a user's own policy as an agent spec (the ladder rates it like any shipped bot).

Why a spec: every command that plays bots (tournament, ladder) takes specs, and a spec is what a ladder stores, so a
user's own policy needs one too. MODULE is imported (from the Python path or the current folder) and FACTORY called:
`FACTORY(seed=SEED)` when it takes a `seed`, else `FACTORY()`; it returns an object with `act_batch(batch)`
(`agents.policy`; any `Agent` has it). This RUNS THE USER'S CODE: only name modules you trust (docs/safety.md).
`source_sha256` is the module file's SHA-256, which the ladder records and re-checks, so an edited bot is never
silently re-rated.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import sys
from pathlib import Path
from typing import Any


def _parts(arg: str) -> tuple[str, str]:
    module, sep, factory = arg.partition(":")
    module, factory = module.strip(), factory.strip()
    if not sep or not module or not factory or not factory.isidentifier() or \
            not all(p.isidentifier() for p in module.split(".")):
        raise ValueError(f"expected MODULE:FACTORY (a dotted module name and a function name), got {arg!r}")
    return module, factory


def _module(module: str) -> Any:
    """The imported module, looked for on the Python path and in the current folder; ValueError if not found."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (module == e.name or module.startswith(e.name + ".")):
            raise ValueError(f"no module {module!r} on the Python path or in {cwd}") from None
        raise


def user_agent(arg: str, seed: int, name: str) -> Any:
    """The object FACTORY (in MODULE) returns, named `name`; ValueError when it is not found or has no act_batch."""
    module, factory = _parts(arg)
    fn = getattr(_module(module), factory, None)
    if not callable(fn):
        raise ValueError(f"module {module!r} has no function {factory!r}")
    try:
        takes_seed = "seed" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_seed = False
    obj = fn(seed=seed) if takes_seed else fn()
    if not callable(getattr(obj, "act_batch", None)):
        raise ValueError(f"{module}.{factory}() returned {type(obj).__name__}, which has no act_batch(batch)")
    try:
        obj.name = name
    except AttributeError:
        pass
    return obj


def source_sha256(arg: str) -> str:
    """The SHA-256 of MODULE's source file (what an edit of the bot changes); ValueError if it has none."""
    module, _ = _parts(arg)
    path = getattr(_module(module), "__file__", None)
    if not path:
        raise ValueError(f"module {module!r} has no source file to hash")
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


__all__ = ["source_sha256", "user_agent"]
