"""The one agent registry (`agents.registry`): every table that names agent kinds comes from it, old names still
work with a one-line note, and registering a new agent is one entry that the tournament and the server then play."""
from __future__ import annotations

import json

import pytest

from agents import make_agent
from agents.random_agent import RandomAgent
from agents.registry import ALIASES, KINDS, AgentKind, is_timed, lookup, path_kinds, register, timed_kinds, unregister


def test_the_derived_tables_come_from_the_records():
    """The distributed runner's path kinds and the tournament's timed kinds are the records' fields, aliases
    included; nothing else names them."""
    assert path_kinds() == {"ppo": "", "learned": ".npz", "mlp": ".pt"}
    assert {k: v for k, v in timed_kinds().items() if k not in ALIASES} == \
        {"mcts": True, "learned-search": False, "mlp-search": True}
    assert [s for s in ("mcts", "mcts:9it", "learned-search", "learned-search:2.5", "mlp-search", "mlp-search:3it",
                        "greedy", "MLP-Search", "learned-search:8it:root12", "learned-search:root12",
                        "learned-search:root12:2.5") if is_timed(s)] == \
        ["mcts", "learned-search:2.5", "mlp-search", "MLP-Search", "learned-search:root12:2.5"]
    assert all(k.form and k.help and lookup(name) is k for name, k in KINDS.items())
    assert all(lookup(old) is KINDS[new] for old, new in ALIASES.items())
    with pytest.raises(ValueError, match="already registered"):
        register(AgentKind("learned", lambda *a: RandomAgent(), "x", "x"))
    # the names before issue 35 are gone
    for old in ("ntuple", "ntuple-win", "ntuple-search", "learned-mlp", "learned-mlp-search"):
        with pytest.raises(ValueError, match=f"unknown agent '{old}'"):
            make_agent(old)


def test_a_bad_argument_names_the_kind_and_its_form():
    assert ALIASES == {}  # no shipped kind keeps an old name
    with pytest.raises(ValueError, match="bad agent spec 'learned-win:x'.*learned-win takes"):
        make_agent("learned-win:x")


class Toy(RandomAgent):
    """A user's own agent: uniform over the legal actions."""


def _toy(arg: str, seed: int, name: str, trust: bool | None) -> Toy:
    if arg:
        raise ValueError(f"unexpected argument {arg!r}")
    return Toy(seed=seed, name=name)


@pytest.fixture()
def toy():
    kind = register(AgentKind("toy", _toy, "toy (no argument)", "toy (a test's agent)", aliases=("toy-old",)))
    yield kind
    unregister("toy")
    assert lookup("toy") is None and lookup("toy-old") is None


def test_a_registered_toy_agent_plays_a_tournament_and_is_offered_by_serve(toy, tmp_path, capsys):
    from harmonies_apps import cli

    assert isinstance(make_agent("toy", seed=3), Toy)
    with pytest.raises(ValueError, match="bad agent spec 'toy:3': unexpected argument '3'; toy takes toy"):
        make_agent("toy:3")
    assert "toy (a test's agent)" in cli.agents_help()
    assert cli.main(["tournament", "--agents", "toy", "random", "--games", "2", "--jobs", "1", "--quiet",
                     "--out", str(tmp_path)]) == 0
    summary = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert "toy" in json.dumps(summary) and "toy" in capsys.readouterr().out

    pytest.importorskip("starlette", reason='the play server needs the web extra: pip install -e ".[web]"')
    pytest.importorskip("httpx2", reason='Starlette\'s TestClient needs httpx2: pip install -e ".[web]"')
    from starlette.testclient import TestClient

    from harmonies_apps.serve import create_app

    with TestClient(create_app(["toy", "random"], bot_delay=0)) as c:
        assert c.get("/api/config").json()["opponents"] == ["toy", "random"]
        r = c.post("/api/games", json={"opponents": ["toy"], "seat": 0})
        assert r.status_code == 200, r.text
        assert r.json()["names"] == ["You", "toy (bot)"]
