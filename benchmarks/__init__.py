"""Benchmarks (installed as harmonies_benchmarks; benchmarks/RESULTS.md)."""

import importlib as _importlib
import importlib.util as _importlib_util
from pathlib import Path as _Path

_CHECKOUT_AGENTS = _Path(__file__).resolve().parents[1] / "agents" / "__init__.py"
_AGENTS = _importlib_util.find_spec("agents") if _CHECKOUT_AGENTS.is_file() else None
if _AGENTS is None or _AGENTS.origin is None or _Path(_AGENTS.origin).resolve() != _CHECKOUT_AGENTS:
    # installed (the wheel, or an editable install run from outside the checkout, e.g. the `harmonies` command), where
    # the agents package is harmonies_agents: importing it answers `import agents`
    _importlib.import_module("harmonies_agents")
