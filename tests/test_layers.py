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

#: harmonies_env modules that hold the jitted kernels and the data they read: pure functions over arrays, no classes
#: that wrap them. Every other harmonies_env module is the game-and-envs layer.
KERNELS = {"data", "geometry", "stacks", "cards", "actions", "state", "scoring", "rules", "chance", "observation",
           "validate", "io", "batch_kernels"}

RANK = {"kernels": 0, "harmonies_env": 1, "agents": 2, "experiments": 3, "benchmarks": 4, "harmonies_apps": 5}
#: A project module named in a string: "pkg.mod", or "pkg.mod:name" (an object in it, imported when first used, as
#: `agents.learners` names an evaluator).
MODULE_NAME = re.compile(r"^(%s)(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$" % "|".join(PACKAGES))


def layer(module: str) -> str | None:
    """The layer of a dotted module name, or None for a module outside the project."""
    parts = module.split(".")
    top = parts[0]
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
            found.add(node.value.partition(":")[0])
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
            if RANK[theirs] > RANK[own]:
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


# ------------------------------------------------------------------------------------------- no cycle inside a package

#: Import edges of a cycle exempted while a change in flight removes them (none now; an entry whose edge is gone fails).
PENDING_CYCLE_EDGES: set[tuple[str, str]] = set()


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the project modules it imports (module level or deferred, or names as a module string), each edge
    within one package (a cycle inside a package; across packages the layers above forbid them). A package's
    `from . import x` names the package itself: no edge."""
    graph = {}
    for module, (source, is_package) in sources.items():
        top = module.split(".")[0]
        graph[module] = {m for m in imports(module, source, is_package)
                         if m in sources and m != module and m.split(".")[0] == top
                         and (module, m) not in PENDING_CYCLE_EDGES}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module, each as one cycle through it: ['a', 'b', 'a'].
    Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(_cycle_through(graph, set(component)))
    return found


def _cycle_through(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One cycle inside a strongly connected component, from its first module back to it (for the message)."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first, inside the component, until an edge leads back to the start
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return sorted(component)


def test_no_import_cycle_inside_a_package():
    """No module of a package imports, through any chain of imports (deferred ones and module strings included),
    a module that imports it back: each package's modules form layers of their own."""
    sources = project_sources()
    graph = import_graph(sources)
    assert sum(len(v) for v in graph.values()) > 200  # the walk found the project's edges
    assert cycles(graph) == []
    for a, b in PENDING_CYCLE_EDGES:  # an exemption of an edge that is gone is removed
        assert b in imports(a, *sources[a]), f"{a} no longer imports {b}: remove it from PENDING_CYCLE_EDGES"


def test_an_import_cycle_is_caught():
    """The check fails on a cycle added in any of the forms an import takes: module level, deferred, relative, a
    module string, through a chain of modules."""
    sources = project_sources()
    cases = {
        "agents.greedy.terms": "from agents.greedy.agent import GreedyAgent\n",                    # a two-module cycle
        "experiments.common": "def f():\n    from .train import main\n",                          # deferred, relative
        "benchmarks.decisions": "import importlib\nM = importlib.import_module('benchmarks.bench_mlp')\n",  # string
        "harmonies_env.state": "from harmonies_env import game\n",                                 # a longer chain
    }
    for module, added in cases.items():
        text, is_package = sources[module]
        found = cycles(import_graph({**sources, module: (text + "\n" + added, is_package)}))
        assert len(found) == 1 and module in found[0] and found[0][0] == found[0][-1], (module, found)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


# ------------------------------------------------------------------------------------ no source module over 700 lines

MAX_LINES = 700
#: Modules exempted while a change in flight splits them (none now; an entry must still exist).
PENDING_SPLITS: set[str] = set()


def long_modules(root: Path = ROOT) -> dict[str, int]:
    """'folder/module.py' -> its line count, for every module of the packages over MAX_LINES."""
    out = {}
    for folder in PACKAGES:
        for path in sorted((root / folder).rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > MAX_LINES:
                out[path.relative_to(root).as_posix()] = n
    return out


def test_no_source_module_is_over_700_lines(tmp_path):
    """A module that holds several jobs is split along its seams; the check can fail."""
    found = long_modules()
    assert set(found) - PENDING_SPLITS == set(), found
    assert all((ROOT / m).exists() for m in PENDING_SPLITS)
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert long_modules(tmp_path) == {"agents/big.py": MAX_LINES + 1}


# ------------------------------------------------------------------------ one GameConfig below the public constructors

#: The loose game arguments. Below the public constructors a game's rules travel as ONE `config: GameConfig`.
LOOSE = {"num_players", "side", "spirits", "river_loops"}
#: The public constructors (README and docs show users calling them): they take the loose arguments and build the
#: one config. The vector envs users construct are SoloVectorEnv, VersusVectorEnv and make_sb3_vec_env
#: (docs/distributed.md); score_board is the engine's public scorer (docs/engine.md).
PUBLIC_CONSTRUCTORS = {
    "harmonies_env.game.Game.__init__", "harmonies_env.game.score_board",
    "harmonies_env.env_aec.env", "harmonies_env.env_aec.raw_env.__init__",
    "harmonies_env.env_gym.SoloEnv.__init__", "harmonies_env.env_gym.VersusEnv.__init__",
    "harmonies_env.vector.SoloVectorEnv.__init__", "harmonies_env.vector.VersusVectorEnv.__init__",
    "harmonies_env.vector.make_sb3_vec_env",
}
#: Where loose values from outside (arguments, a command line, an HTTP request, a run's [env] settings) become the
#: config: each takes the players it counted (agents given, opponents), nothing else loose.
CONFIG_BUILDERS = {"harmonies_env.config.game_config_from",
                   "harmonies_apps.serve.sessions.request_config", "experiments.flat_ppo.env_config"}
#: The engine's and the match's entry points below the public constructors: each takes `config` by keyword and
#: nothing loose (no *args or **kwargs an old positional or keyword form could hide in).
CONFIG_TAKERS = {"agents.match.play_match", "agents.match.run_match", "agents.match.play_game",
                 "agents.match.replay_result", "harmonies_apps.tournament.run_games",
                 "harmonies_env.batch.init_batch", "harmonies_env.batch.BatchedGames.__init__",
                 "harmonies_env.batch.SelfPlayBatch.__init__"}
#: Not converted yet, because another change owns the file this round (remove each entry once it takes a config).
PENDING: set[str] = set()


def _jitted(fn: ast.FunctionDef) -> bool:
    return any(_called(d) in ("njit", "jit", "vectorize") for d in fn.decorator_list)


def functions(module: str, source: str) -> list[tuple[str, ast.FunctionDef]]:
    """('module.Qualified.name', node) of every function and method in `source`."""
    found = []

    def walk(node: ast.AST, prefix: str) -> None:
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((f"{module}.{prefix}{n.name}", n))
                walk(n, f"{prefix}{n.name}.")
            elif isinstance(n, ast.ClassDef):
                walk(n, f"{prefix}{n.name}.")
            else:
                walk(n, prefix)

    walk(ast.parse(source), "")
    return found


def loose_parameters(module: str, source: str) -> list[str]:
    """'module.Qualified.name' of every function or method in `source` that takes a loose game argument by name.
    Jitted kernels are exempt: they are functions over arrays and scalars (a state's header codes)."""
    return [name for name, fn in functions(module, source) if not _jitted(fn) and LOOSE & {
        x.arg for x in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}]


def test_no_loose_game_arguments_below_the_public_constructors():
    """Variants travel as one `GameConfig`: no function of the project below the public constructors (the batched
    engine, match engine, tournaments, serve, play, agents, experiments, benchmarks, the CLI) takes num_players,
    side, spirits or river_loops as a parameter; kernel modules are functions over arrays and scalars, exempt."""
    found = []
    for module, (source, _) in project_sources().items():
        if layer(module) != "kernels":
            found += loose_parameters(module, source)
    allowed = PUBLIC_CONSTRUCTORS | CONFIG_BUILDERS | PENDING
    assert sorted(set(found) - allowed) == []
    assert sorted(allowed - set(found)) == [], "an allow-listed name no longer takes loose arguments: remove it"
    # no old loose form hides behind *args/**kwargs: the entry points take config by keyword and nothing loose
    takers = {name: fn for module, (source, _) in project_sources().items() for name, fn in functions(module, source)
              if name in CONFIG_TAKERS}
    assert sorted(takers) == sorted(CONFIG_TAKERS)
    assert {name for name, fn in takers.items() if "config" not in {a.arg for a in fn.args.kwonlyargs}
            or fn.args.vararg or fn.args.kwarg} == set()
    import harmonies_env.config

    assert not hasattr(harmonies_env.config, "old_arguments")  # the one-release shim is gone with its callers
    # the scan can fail: a new function with a loose argument, a method, a keyword-only one
    assert loose_parameters("m", "def f(x, side='A'):\n    pass\n") == ["m.f"]
    assert loose_parameters("m", "class C:\n    def g(self, *, river_loops=None):\n        pass\n") == ["m.C.g"]
    assert loose_parameters("m", "from numba import njit\n@njit\ndef k(side):\n    return side\n") == []


#: The game options every command line takes from `harmonies_env.config.add_game_options` and nowhere else.
GAME_OPTIONS = ("--players", "--side", "--spirits", "--river-loops")


def own_game_options(source: str) -> list[str]:
    """The game options a source adds to a parser itself (`add_argument("--side", ...)`), not through the helper."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and _called(n) == "add_argument":
            out += [a.value for a in n.args if isinstance(a, ast.Constant) and a.value in GAME_OPTIONS]
    return out


def test_every_parser_takes_its_game_options_from_the_one_helper():
    """No parser adds --players/--side/--spirits/--river-loops itself: each calls `add_game_options` (same names and
    help everywhere) and builds the config with `game_config_from`."""
    import argparse

    from harmonies_apps import cli
    from harmonies_env.config import add_game_options

    sources = project_sources()
    bad = {m: own_game_options(s) for m, (s, _) in sources.items() if m != "harmonies_env.config"}
    assert {m: v for m, v in bad.items() if v} == {}
    users = sorted(m for m, (s, _) in sources.items() if "add_game_options(" in s and m != "harmonies_env.config")
    assert {"harmonies_apps.cli", "harmonies_apps.play", "harmonies_env.demo", "experiments.eval_mlp"} <= set(users)
    for m in users:
        assert "game_config_from(" in sources[m][0], f"{m} adds the game options but does not build the config"
    assert own_game_options('p.add_argument("--side", choices=["A", "B"])\n') == ["--side"]  # the scan can fail

    reference = argparse.ArgumentParser()
    add_game_options(reference)
    helps = {a.option_strings[0]: a.help for a in reference._actions if a.option_strings[0] in GAME_OPTIONS[1:]}
    subparsers = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in subparsers.choices.items():
        mine = {a.option_strings[0]: a.help for a in parser._actions if a.option_strings
                and a.option_strings[0] in helps}
        assert mine in ({}, helps), name  # none of the options, or all of them worded as the helper words them
