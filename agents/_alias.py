"""`import agents` where this package is installed as `harmonies_agents` (the wheel): the same module objects under
both names, so the consumers' `from agents.x import y` works installed as from a checkout, with one registry and one
`CheckpointError` class (a second copy of a module under the other name would split them)."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers `alias` and `alias.x` with the already importable `real` and `real.x` (imported on demand)."""

    def __init__(self, alias: str, real: str):
        self.alias, self.real = alias, real

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.alias and not fullname.startswith(self.alias + "."):
            return None
        real = importlib.import_module(self.real + fullname[len(self.alias):])
        spec = importlib.util.spec_from_loader(fullname, self, is_package=hasattr(real, "__path__"))
        spec.loader_state = real
        return spec

    def create_module(self, spec: Any) -> ModuleType:
        module = spec.loader_state
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the alias's: put the real one back
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state  # already executed under its real name


def answer_as(alias: str, real: str) -> None:
    """Make `import alias...` give the modules of `real...` (once; never over a module already imported as alias)."""
    if alias not in sys.modules and not any(isinstance(f, AliasFinder) and f.alias == alias for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder(alias, real))
