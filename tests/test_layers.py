"""The README's layering claim, checked over the source's imports (an import contract, as import-linter's).

Layers depend one way, each only on the layers below it:

    harmonies_env kernels < harmonies_env game and envs < agents < experiments < benchmarks < harmonies_apps

An import is any `import`/`from` statement (at module level or deferred inside a function) and any string constant
naming a project module (`importlib.import_module("experiments.train")`, a table of forwarded commands), so a lazy
import cannot hide an upward edge.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = ["harmonies_env", "agents", "experiments", "benchmarks", "harmonies_apps"]
#: The names the wheel installs `agents`, `experiments` and `benchmarks` under (setup.py): the same layers.
ALIASES = {"harmonies_agents": "agents", "harmonies_experiments": "experiments", "harmonies_benchmarks": "benchmarks"}

#: harmonies_env modules that hold the jitted kernels and the data they read: pure functions over arrays, no classes
#: that wrap them. Every other harmonies_env module is the game-and-envs layer.
KERNELS = {"data", "geometry", "stacks", "cards", "actions", "state", "scoring", "rules", "chance", "observation",
           "validate", "io", "batch_kernels"}

RANK = {"kernels": 0, "harmonies_env": 1, "agents": 2, "experiments": 3, "benchmarks": 4, "harmonies_apps": 5}
MODULE_NAME = re.compile(r"^(%s)(\.[A-Za-z_]\w*)*$" % "|".join(PACKAGES + list(ALIASES)))


def layer(module: str) -> str | None:
    """The layer of a dotted module name, or None for a module outside the project."""
    parts = module.split(".")
    top = ALIASES.get(parts[0], parts[0])
    if top not in PACKAGES:
        return None
    if top == "harmonies_env" and len(parts) > 1 and parts[1] in KERNELS:
        return "kernels"
    return top


def module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(module: str, source: str, is_package: bool = False) -> set[str]:
    """Every project module that `source` (the text of `module`) imports or names as a module string."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)  # `from . import state` imports a module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.match(node.value):
            found.add(node.value)
    # a module's own packages are imported before it anyway: `from . import stacks` is an edge to `stacks` only
    return {m for m in found if layer(m) is not None and not module.startswith(m + ".")}


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """'a -> b' for each import of a higher layer, or of a game-layer module from a kernel module.

    `sources`: module name -> (its text, whether it is a package's __init__)."""
    bad = []
    for module, (source, is_package) in sorted(sources.items()):
        own = layer(module)
        if own is None:
            continue
        for target in sorted(imports(module, source, is_package)):
            theirs = layer(target)
            if target.split(".")[0] in ALIASES and own != "harmonies_apps" and \
                    not (is_package and target == "harmonies_agents"):  # the wheel's bootstrap of `import agents`
                bad.append(f"{module} -> {target} (the installed alias is for the CLI only)")
            elif RANK[theirs] > RANK[own]:
                bad.append(f"{module} -> {target} ({own} may not import {theirs})")
    return bad


def project_sources() -> dict[str, tuple[str, bool]]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[module_of(path)] = (path.read_text(encoding="utf-8"), path.name == "__init__.py")
    return out


def test_layers_depend_one_way():
    sources = project_sources()
    assert len(sources) > 60  # the walk found the project, not an empty folder
    assert violations(sources) == []


def test_kernel_modules_exist_and_hold_no_classes():
    """Every module named as a kernel exists, and none defines a class: kernels are functions over arrays."""
    for name in KERNELS:
        path = ROOT / "harmonies_env" / f"{name}.py"
        assert path.exists(), path
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        assert classes == [], f"{name}.py defines {classes}"


#: agents/ modules allowed, for now, to mix jitted kernels with classes or file I/O.
AGENT_EXEMPT: set[str] = set()
#: Calls that read or write files.
IO_CALLS = {"open", "read_bytes", "write_bytes", "read_text", "write_text", "load", "save", "savez", "savez_compressed",
            "atomic_write_bytes", "atomic_write_json", "atomic_write_text"}


def mixing(source: str) -> list[str]:
    """What a module with jitted kernels also holds that belongs to the classes wrapping them: class definitions and
    file I/O calls ([] for a module without @njit / @jit functions, or a kernels-only one)."""
    tree = ast.parse(source)
    if not any(isinstance(n, ast.FunctionDef) and any(_called(d) in ("njit", "jit") for d in n.decorator_list)
               for n in ast.walk(tree)):
        return []
    found = [f"class {n.name}" for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    return found + [f"{_called(n)}() at line {n.lineno}" for n in ast.walk(tree)
                    if isinstance(n, ast.Call) and _called(n) in IO_CALLS]


def _called(node: ast.expr) -> str:
    """The name a decorator or call uses: `njit` for @njit, @njit(...), @numba.njit; `load` for np.load(...)."""
    f = node.func if isinstance(node, ast.Call) else node
    return f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")


def test_agent_kernels_are_apart_from_classes_and_io():
    """In agents/ as in harmonies_env/: a module with jitted kernels holds pure functions over arrays, no class that
    wraps them and no file I/O (the class and its checkpoint I/O live in a module of their own, e.g. agents/mlp/)."""
    paths = sorted((ROOT / "agents").rglob("*.py"))
    kernels = [p for p in paths if mixing(p.read_text(encoding="utf-8")) == [] and "@njit" in p.read_text()]
    assert len(kernels) >= 6  # the walk found the kernel modules (greedy, mcts, policy, batched planner, mlp, ...)
    bad = {p.relative_to(ROOT).as_posix(): mixing(p.read_text(encoding="utf-8")) for p in paths}
    assert {k: v for k, v in bad.items() if v and k not in AGENT_EXEMPT} == {}
    assert all((ROOT / k).exists() for k in AGENT_EXEMPT), "remove the exemption of a module that is gone"
    text = (ROOT / "agents" / "mlp" / "kernels.py").read_text()
    assert mixing(text + "\n\nclass Wrapper:\n    pass\n") == ["class Wrapper"]  # the rule can fail
    assert mixing(text + "\n\ndef f(p):\n    return p.read_bytes()\n")[0].startswith("read_bytes()")


def test_an_upward_import_is_caught():
    """The contract fails when an upward import is added, in any of the forms it reads."""
    sources = project_sources()
    assert violations(sources) == []
    cases = {
        "harmonies_env.rules": "import agents.greedy\n",                          # kernels -> agents
        "harmonies_env.scoring": "from .game import Game\n",                      # kernels -> game layer, relative
        "harmonies_env.game": "def f():\n    from harmonies_apps import cli\n",   # deferred import
        "agents.greedy": "import importlib\nM = importlib.import_module('experiments.train')\n",  # a module string
        "experiments.eval_mlp": "from harmonies_apps.tournament import run_games\n",
        "benchmarks.bench_engine": "from harmonies_apps import cli\n",
    }
    for module, added in cases.items():
        text, is_package = sources[module]
        changed = {**sources, module: (text + "\n" + added, is_package)}
        found = violations(changed)
        assert found and all(v.startswith(module + " -> ") for v in found), (module, found)
