"""Benchmarks (installed as harmonies_benchmarks; benchmarks/RESULTS.md)."""

import importlib as _importlib
from pathlib import Path as _Path

if not (_Path(__file__).resolve().parents[1] / "agents" / "registry.py").is_file():
    # installed from the wheel, where the agents package is harmonies_agents: importing it answers `import agents`
    _importlib.import_module("harmonies_agents")
