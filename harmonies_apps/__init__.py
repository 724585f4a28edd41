"""Applications on top of the engine and the agents: the `harmonies` command, tournaments, play and viewers.

Layers depend one way: `harmonies_env` (kernels, game, envs) -> `agents` -> `experiments` / `harmonies_apps`.
Nothing in `harmonies_env` or `agents` imports this package.
"""

import importlib as _importlib
from pathlib import Path as _Path

if not (_Path(__file__).resolve().parents[1] / "agents" / "registry.py").is_file():
    # installed from the wheel, where the agents package is harmonies_agents: importing it answers `import agents`
    _importlib.import_module("harmonies_agents")
