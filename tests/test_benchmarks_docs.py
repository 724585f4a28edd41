"""The benchmark pages say what their data say: every table of benchmarks/STRENGTH.md and RESULTS.md is what
`python -m benchmarks.tables` generates from benchmarks/results/*.jsonl, every stored line's command would print
that line (its case, seeds, games, settings), and every script, module and file the reference pages and docs name
exists. Cheap: no benchmark runs, and nothing imports the engine."""
from __future__ import annotations

import ast
import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest

from benchmarks import tables

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = [ROOT / "benchmarks" / name for name in ("STRENGTH.md", "RESULTS.md", "LEARNING.md")]
#: Pages whose named scripts must exist (docs/history.md names retired ones on purpose).
NAMING = [*REFERENCE, ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "history.md")]
PACKAGES = ("agents", "benchmarks", "experiments", "harmonies_env", "harmonies_apps", "tests", "docs")
DATA = ("strength", "speed", "learning")


def strength_cases() -> dict:
    """benchmarks.strength.CASES, read from the source (importing it would import the tournament and the engine)."""
    tree = ast.parse((ROOT / "benchmarks" / "strength.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CASES":
            return ast.literal_eval(node.value)
    raise AssertionError("benchmarks/strength.py has no CASES")


def lines(name: str) -> list[dict]:
    return tables.load(name)


def test_the_pages_are_generated_from_the_lines_and_short():
    seen = []
    for page in tables.PAGES:
        text = page.read_text()
        assert len(text.encode()) < 20 * 1024, f"{page.name} is {len(text.encode())} bytes: a reference, not a notebook"
        blocks = tables._BLOCK.findall(text)
        assert blocks, f"{page.name} has no generated table"
        seen += [name for _, name, _, _ in blocks]
        assert tables.regenerate(text) == text, f"{page.name} is out of date: run python -m benchmarks.tables"
    assert sorted(seen) == sorted(tables.TABLES), "every table appears once on a page"


def test_a_changed_line_changes_its_page(monkeypatch):
    rows = lines("strength")
    first = next(r for r in rows if r["table"] == "mlp_2p")
    text = tables.PAGES[0].read_text()
    assert "| 100.3 (11.0) |" in text
    first["mlp"]["mean"] = 77.7
    monkeypatch.setattr(tables, "load", lambda name: rows if name == "strength" else lines(name))
    assert "| 77.7 (11.0) |" in tables.regenerate(text) and tables.regenerate(text) != text
    assert tables.fixed(99.25, 1) == "99.3" and tables.fixed(0.86, 3) == "0.860"


@pytest.mark.parametrize("name", DATA)
def test_every_line_says_where_it_came_from(name):
    for r in lines(name):
        for key in ("table", "case" if name == "speed" else "command", "command", "machine", "date"):
            assert r.get(key), f"{name}.jsonl line {r.get('case', r.get('command'))}: no {key}"
        assert r["table"] in tables.TABLES and tables.TABLES[r["table"]][0] == name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"]) and "2-core" in r["machine"]
    history = lines("history")
    assert history and all(r["table"] == "history" and r["command"] and r["label"] for r in history)


def _strength_args(argv: list[str]) -> dict:
    """The options of `python -m benchmarks.strength` (its parser's names and defaults)."""
    out: dict = {"cases": None, "games": None, "seed": 0, "jobs": 1}
    k = 0
    while k < len(argv):
        opt = argv[k]
        assert opt.startswith("--") and opt[2:] in out, f"unknown option {opt}"
        if opt == "--cases":
            j = k + 1
            while j < len(argv) and not argv[j].startswith("--"):
                j += 1
            out["cases"], k = argv[k + 1:j], j
        else:
            out[opt[2:]], k = int(argv[k + 1]), k + 2
    return out


def _agent_names(specs: list[str]) -> list[str]:
    """How the tournament names seats: a spec that appears more than once is numbered #1, #2, ..."""
    return [f"{s}#{specs[:i + 1].count(s)}" if specs.count(s) > 1 else s for i, s in enumerate(specs)]


def test_strength_commands_would_print_their_lines():
    cases = strength_cases()
    for r in lines("strength"):
        argv = shlex.split(r["command"])
        if r["table"] == "eval_mlp":
            continue
        assert argv[:3] == ["python", "-m", "benchmarks.strength"], r["command"]
        a = _strength_args(argv[3:])
        assert a["cases"] == [r["case"]], r["command"]
        specs, players, side, spirits, games = cases[r["case"]]
        assert (r["players"], r["side"], r["spirits"]) == (players, side, spirits), r["case"]
        assert (a["games"] or games, a["seed"], a["jobs"]) == (r["games"], r["seed"], r["jobs"]), r["command"]
        assert tables._agents(r) == _agent_names(specs), r["case"]
        for name in tables._agents(r):
            e = r[name]
            assert ("suns" in e) == (players == 1)
            if players > 1:
                lo, hi = e["win_rate_ci95"]
                assert lo <= e["win_rate"] <= hi, (r["case"], name)


def test_eval_mlp_commands_would_print_their_lines():
    play = json.loads((ROOT / "agents" / "checkpoints" / "mlp.json").read_text())["network"]["play"]
    rows = [r for r in lines("strength") if r["table"] == "eval_mlp"]
    assert rows
    for r in rows:
        argv = shlex.split(r["command"])
        assert argv[:3] == ["python", "-m", "experiments.eval_mlp"], r["command"]
        want = {"beam": play["beam"], "candidates": play["candidates"], "diverse": play["diverse"],
                "symmetries": play["symmetries"], "value": play["value"], "games": 1024, "seed": 3_000_000,
                "players": 2, "side": "A", "spirits": False, "opponent_beam": 24}
        k, rest = 0, argv[3:]
        while k < len(rest):
            opt = rest[k]
            if opt in ("--diverse", "--no-diverse", "--spirits"):
                want["spirits" if opt == "--spirits" else "diverse"] = opt != "--no-diverse"
                k += 1
                continue
            key, val = opt[2:].replace("-", "_"), rest[k + 1]
            assert key in want, f"unknown option {opt}"
            if key == "value":
                w, m, s = (float(x) for x in val.split(","))
                want[key] = {"win": w, "margin": m, "score": s}
            else:
                want[key] = val if key == "side" else int(val)
            k += 2
        got = {key: r[key] for key in want}
        assert got == want, r["command"]
        assert r["win_ci95"][0] <= r["win_rate"] <= r["win_ci95"][1]


#: bench_batch's --only group of each case it prints.
BATCH_GROUP = {"gym_single": "gym", "gym_make_single": "gym", "step": "step", "rollout": "rollout",
               "threads_step": "threads", "threads_rollout": "threads", "step_sizes": "sizes", "machine": None}


#: the modules a speed line's command may run.
BENCH_MODULES = ("benchmarks.bench_", "harmonies_apps.ladder.bench", "harmonies_apps.ladder.sprt_sim")


def test_speed_commands_name_the_script_that_prints_the_case():
    for r in lines("speed"):
        argv = shlex.split(r["command"])
        if argv[0] == "taskset":
            argv = argv[3:]
        # a benchmark script (benchmarks.bench_*), or an app's own (the ladder's sits above benchmarks/ in the layers)
        assert argv[:2] == ["python", "-m"] and argv[2].startswith(BENCH_MODULES), r["command"]
        source = (ROOT / (argv[2].replace(".", "/") + ".py")).read_text()
        assert f'"{r["case"]}"' in source, f"{argv[2]} prints no case {r['case']!r}"
        if argv[2] == "benchmarks.bench_batch" and "--only" in argv:
            groups = argv[argv.index("--only") + 1].split(",")
            assert BATCH_GROUP[r["case"]] in (None, *groups), r["command"]
        if "--cases" in argv:  # a case's summary row (CASE_summary) is printed by the case it sums up
            assert r["case"].removesuffix("_summary") in argv[argv.index("--cases") + 1:], r["command"]


def _ignored_output(path: str) -> bool:
    """A folder the code writes into and git ignores (e.g. tests/artifacts/): named before it exists."""
    ignored = [line.strip().strip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    return any(path.strip("/") == g or path.startswith(g + "/") for g in ignored if "/" in g)


def _module_exists(module: str) -> bool:
    top = module.split(".")[0]
    if top in PACKAGES:
        base = ROOT.joinpath(*module.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
    return importlib.util.find_spec(top) is not None


@pytest.mark.parametrize("page", NAMING, ids=[str(p.relative_to(ROOT)) for p in NAMING])
def test_every_module_script_and_file_a_page_names_exists(page):
    text = page.read_text()
    for module in re.findall(r"python -m ([\w.]+)", text):
        assert _module_exists(module), f"{page.name} runs python -m {module}, which does not exist"
    for path in re.findall(r"(?<![\w/.-])((?:%s)/[\w./-]*\w)" % "|".join(PACKAGES), text):
        assert (ROOT / path).exists() or _ignored_output(path), f"{page.name} names {path}, which does not exist"


@pytest.mark.parametrize("page", REFERENCE, ids=[p.name for p in REFERENCE])
def test_reference_pages_local_links_resolve(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if "://" not in target:
            assert (page.parent / target).resolve().exists(), f"{page.name} links to missing {target}"
