"""The MLP baseline `mlp`: afterstate features, the value network, checkpoints, the self-play trainer, the specs."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import mirror_board

torch = pytest.importorskip("torch", reason="needs the train extra: pip install -e \".[train]\"")

from bad_checkpoints import CASES, bad_checkpoint, copy_shipped, torch_bytes  # noqa: E402

from agents import GreedyAgent, RandomAgent, make_agent  # noqa: E402
from agents.afterstate import (  # noqa: E402
    GLOBAL,
    MIRRORS,
    NUM_FEATURES,
    SEAT,
    SEAT_HEAD,
    afterstate_features,
    candidate_features,
    plan_afterstate,
    symmetry_index,
)
from agents.base import private_copy  # noqa: E402
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN, NUM_TERMS, plan_group, potential_terms  # noqa: E402
from agents.mlp import (  # noqa: E402
    DEFAULT_CHECKPOINT,
    DEFAULT_CONFIG,
    CheckpointError,
    MLPAgent,
    MLPSearchAgent,
    ValueNet,
    decision_values,
    load_checkpoint,
    mirrored_outputs,
    search_leaves,
    torch_net,
)
from agents.mlp import save_checkpoint as save_agent_checkpoint  # noqa: E402
from experiments.common import ConfigError  # noqa: E402
from experiments.common import load_config as _load_config  # noqa: E402
from experiments.eval_mlp import main as eval_main  # noqa: E402
from experiments.eval_mlp import play_vs_greedy  # noqa: E402
from experiments.evaluators.mlp import DEFAULTS, settings  # noqa: E402
from experiments.selfplay_command import build  # noqa: E402
from harmonies_apps.tournament import play_game  # noqa: E402
from harmonies_env import Game, GameConfig  # noqa: E402
from harmonies_env import state as S  # noqa: E402
from harmonies_env.geometry import SYMMETRIES  # noqa: E402
from harmonies_env.scoring import CATEGORIES  # noqa: E402
from harmonies_env.view import PlayerView  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "experiments" / "configs" / "mlp_tiny.toml"


def _midgame(seed: int, turns: int, players: int = 2, side: str = "A", spirits: bool = False) -> Game:
    g = Game(players, side, spirits, seed=seed)
    agents = [GreedyAgent(beam=4, seed=k) for k in range(players)]
    while not g.is_over and g.turn < turns:
        g.step(agents[g.current_player].act(PlayerView(g, g.current_player)))
    return g


def _random_net(hidden=(16,), seed=0) -> ValueNet:
    cfg = {**DEFAULT_CONFIG, "hidden": list(hidden)}
    torch.manual_seed(seed)
    return ValueNet(cfg, torch_net(cfg).state_dict())


# ---------------------------------------------------------------------------------------------- features

@pytest.mark.parametrize("players,side,spirits", [(2, "A", False), (3, "B", True), (4, "A", True), (1, "B", False)])
def test_features_read_the_position(players, side, spirits):
    """Seat blocks hold each seat's score, potential terms and board, relative to the seat that moved."""
    g = _midgame(seed=players * 7, turns=3 * players + 1, players=players, side=side, spirits=spirits)
    s = g.state.copy()
    p = g.current_player
    f = np.zeros(NUM_FEATURES, dtype=np.float32)
    afterstate_features(s, p, f)
    assert f[players - 1] == 1.0 and f[4] == (side == "B") and f[5] == spirits
    assert f[8:14] * 20 == pytest.approx(S.field(s, "pouch").astype(np.float32))
    scores = g.scores()
    terms = np.zeros(NUM_TERMS)
    for j in range(4):
        block = f[GLOBAL + j * SEAT: GLOBAL + (j + 1) * SEAT]
        if j >= players:
            assert not block.any()
            continue
        q = (p + j) % players
        assert block[len(CATEGORIES) - 1] * 100 == pytest.approx(scores[q]["total"])
        assert block[0] * 20 == pytest.approx(scores[q]["trees"])
        potential_terms(s, q, terms)
        assert block[len(CATEGORIES): len(CATEGORIES) + NUM_TERMS] * 10 == pytest.approx(terms, abs=1e-4)
        board = block[SEAT_HEAD: SEAT_HEAD + 25 * 15].reshape(25, 15)
        stack = g.field("stack")[q]
        ncells = 23 if side == "A" else 25
        assert board[:ncells].sum(axis=1).tolist() == [1.0] * ncells  # every cell shows exactly one stack code
        assert board[np.arange(ncells), stack[:ncells]].all()
        cubes = block[SEAT_HEAD + 25 * 15: SEAT]
        assert int(sum(1 << i for i in range(25) if cubes[i])) == int(g.field("cubes")[q])


def test_features_hide_what_the_mover_cannot_see():
    """Resampling the hidden parts (draw pile order, generator, others' Spirits) changes no feature and no choice."""
    g = _midgame(seed=11, turns=6, spirits=True)
    view = PlayerView(g, g.current_player)
    K = 16
    out = []
    for seed in (1, 2, 3):
        c = private_copy(view, seed)
        assert not np.array_equal(c.state, g.state)
        # kernels get writable copies, as the agents pass them: a read-only view is another numba type, and would
        # compile the whole planner a second time (about a minute on a cold cache)
        plans = np.zeros((K, MAX_PLAN), np.int64)
        lens = np.zeros(K, np.int64)
        vals = np.zeros(K)
        feats = np.zeros((K, NUM_FEATURES), np.float32)
        n = candidate_features(c.state.copy(), DEFAULT_WEIGHTS, 16, False, plans, lens, vals, feats)
        out.append((plans[:n].copy(), feats[:n].copy()))
    for plans, feats in out[1:]:
        assert np.array_equal(plans, out[0][0]) and np.array_equal(feats, out[0][1])
    net = _random_net()
    agent = MLPAgent(net=net, beam=16, candidates=K)
    choices = {tuple(agent.choose_plan(view, private_copy(view, seed))) for seed in (5, 6, 7)}
    assert len(choices) == 1


@pytest.mark.parametrize("players,side,spirits", [(2, "A", False), (3, "B", True), (4, "A", True), (1, "B", False)])
def test_symmetry_index_gives_the_features_of_the_mirrored_position(players, side, spirits):
    """Training's augmentation (`symmetry_index`) is exact: permuting feature columns equals computing the features of
    the position with every seat's board mirrored, each by its own symmetry."""
    rng = np.random.default_rng(players)
    for turns in (2, 7, 12):
        g = _midgame(seed=turns + players, turns=turns * players // 2 + 1, players=players, side=side,
                     spirits=spirits)
        s = g.state.copy()
        me = g.current_player
        f = np.zeros(NUM_FEATURES, np.float32)
        afterstate_features(s, me, f)
        for _ in range(4):
            ks = rng.integers(0, 4, size=4)
            t = s.copy()
            for j in range(players):
                t = mirror_board(t, (me + j) % players, SYMMETRIES[int(side == "B"), ks[j]])
            want = np.zeros(NUM_FEATURES, np.float32)
            afterstate_features(t, me, want)
            idx = symmetry_index(np.array([int(side == "B")]), ks[None])
            assert np.array_equal(f[idx[0]], want)
            if ks[:players].any():
                assert not np.array_equal(want, f)  # the boards did move


def test_afterstate_is_the_position_before_end():
    g = _midgame(seed=3, turns=4)
    K = 8
    plans = np.zeros((K, MAX_PLAN), np.int64)
    lens = np.zeros(K, np.int64)
    feats = np.zeros((K, NUM_FEATURES), np.float32)
    n = candidate_features(g.state.copy(), DEFAULT_WEIGHTS, 8, False, plans, lens, np.zeros(K), feats)
    assert n > 1
    for k in range(n):
        c = g.clone()
        plan = plans[k, : lens[k]].tolist()
        assert plan[-1] == 267  # END_TURN
        for a in plan[:-1]:
            c.step(a)
        f = np.zeros(NUM_FEATURES, np.float32)
        afterstate_features(c.state.copy(), g.current_player, f)
        assert np.array_equal(f, feats[k])
        t = g.state.copy()
        plan_afterstate(t, plans[k], lens[k])
        assert np.array_equal(t, c.state)


# ---------------------------------------------------------------------------------------------- network

def test_numpy_inference_matches_torch():
    cfg = {**DEFAULT_CONFIG, "hidden": [24, 12]}
    torch.manual_seed(3)
    tnet = torch_net(cfg)
    net = ValueNet(cfg, tnet.state_dict())
    x = np.random.default_rng(0).random((7, NUM_FEATURES), dtype=np.float32)
    with torch.no_grad():
        want = tnet(torch.from_numpy(x)).numpy()
    assert net(x) == pytest.approx(want, abs=1e-5)


def test_decision_values():
    out = np.zeros((2, 8), np.float32)
    out[0, :4] = [0.9, 0.8, 0, 0]    # 90 vs 80
    out[1, :4] = [0.7, 0.9, 0, 0]    # 70 vs 90
    out[0, 4:6] = [2.0, 0.0]
    value = {"win": 1.0, "margin": 0.5, "score": 0.25}
    v = decision_values(out, 2, value)
    pw = 1 / (1 + np.exp(-2.0))
    assert v[0] == pytest.approx(pw + 0.5 * 0.1 + 0.25 * 0.9)
    assert v[1] == pytest.approx(0.5 + 0.5 * -0.2 + 0.25 * 0.7)
    assert decision_values(out, 2, value, seat=1)[1] == pytest.approx(0.5 + 0.5 * 0.2 + 0.25 * 0.9)
    assert decision_values(out, 1, value).tolist() == pytest.approx([0.9, 0.7])


def test_checkpoint_round_trip_and_refusals(tmp_path):
    cfg = {**DEFAULT_CONFIG, "hidden": [8]}
    tnet = torch_net(cfg)
    save_agent_checkpoint(tmp_path / "m", tnet.state_dict(), cfg, {"note": "test"})
    saved = json.loads((tmp_path / "m.json").read_text())  # the trainer records the weights' SHA-256
    assert saved["sha256"] == hashlib.sha256((tmp_path / "m.pt").read_bytes()).hexdigest()
    config, state = load_checkpoint(tmp_path / "m.pt")
    assert config["hidden"] == [8]
    x = np.ones((1, NUM_FEATURES), np.float32)
    with torch.no_grad():
        assert ValueNet(config, state)(x) == pytest.approx(tnet(torch.from_numpy(x)).numpy(), abs=1e-5)
    with pytest.raises(FileNotFoundError, match="two files"):
        load_checkpoint(tmp_path / "missing.pt")
    bad = json.loads((tmp_path / "m.json").read_text())
    bad["config"]["feature_version"] = 999
    (tmp_path / "m.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="version 999"):
        ValueNet.load(tmp_path / "m.pt")


def test_play_settings_come_from_the_checkpoint(tmp_path):
    """`play` in a checkpoint's JSON says how the agents propose candidates (a checkpoint without it plays the plain
    beam 800's best 32); arguments override it; a malformed entry is refused by name."""
    cfg = {**DEFAULT_CONFIG, "hidden": [8], "play": {"beam": 7, "candidates": 5, "diverse": True},
           "value": {"win": 0.0, "margin": 0.0, "score": 1.0}}
    save_agent_checkpoint(tmp_path / "m", torch_net(cfg).state_dict(), cfg, {})
    agent = MLPAgent(tmp_path / "m.pt")
    assert (agent.beam, agent.candidates, agent.diverse) == (7, 5, True)
    assert agent.value == {"win": 0.0, "margin": 0.0, "score": 1.0}  # no play.value: the network's value
    g = _midgame(seed=2, turns=4)
    plans, values, _ = agent.rank(g)
    assert len(plans) == 5 and len({plan_group(np.array(p), len(p)) for p in plans}) == 5  # diverse: 5 choices
    other = MLPAgent(tmp_path / "m.pt", beam=9, candidates=3, diverse=False, value={"win": 1, "margin": 0,
                                                                                        "score": 0})
    assert (other.beam, other.candidates, other.diverse, other.value["win"]) == (9, 3, False, 1)
    cfg["play"]["value"] = {"win": 0.0, "margin": 0.0, "score": 1.0}
    cfg["value"] = {"win": 1.0, "margin": 0.5, "score": 0.25}
    save_agent_checkpoint(tmp_path / "m", torch_net(cfg).state_dict(), cfg, {})
    assert MLPAgent(tmp_path / "m.pt").value == cfg["play"]["value"]  # learned plays for points
    search = MLPSearchAgent(tmp_path / "m.pt", iterations=4)
    assert search.value == cfg["value"] and search.diverse  # the search plays for the win, on the same candidates
    assert MLPSearchAgent(tmp_path / "m.pt", iterations=4, value=cfg["play"]["value"]).value["score"] == 1.0
    old = json.loads((tmp_path / "m.json").read_text())
    del old["config"]["play"]
    (tmp_path / "m.json").write_text(json.dumps(old))
    assert (MLPAgent(tmp_path / "m.pt").beam, MLPAgent(tmp_path / "m.pt").diverse) == (800, False)
    for bad, named in (({"beam": 0, "candidates": 5, "diverse": True}, "beam"),
                       ({"beam": 7, "candidates": 5, "diverse": 1}, "diverse"),
                       ({"beam": 7, "candidates": 5, "nope": 1}, "settings"), ({"symmetries": 2}, "symmetries"),
                       ({"symmetries": True}, "symmetries"), ({"symmetries": 4.0}, "symmetries"),
                       ({"beam": 7.0}, "beam"), ({"beam": 10**9}, "beam"), ({"candidates": 10**6}, "candidates"),
                       ({"value": {"win": 1}}, "value"), (["beam", 7], "settings")):
        old["config"]["play"] = bad
        (tmp_path / "m.json").write_text(json.dumps(old))
        with pytest.raises(ValueError, match=f"play must be .*\\({named} must be"):
            MLPAgent(tmp_path / "m.pt")
    # arguments are checked by the same rules as the checkpoint's entry, and name what was wrong
    for kwargs, named in (({"candidates": 0}, "candidates"), ({"candidates": 64.0}, "candidates"),
                          ({"symmetries": True}, "symmetries"), ({"diverse": 1}, "diverse"), ({"beam": 0}, "beam")):
        with pytest.raises(ValueError, match=f"^{named} must be"):
            MLPAgent(net=_random_net(), **kwargs)
    agent = MLPAgent(net=_random_net(), beam=np.int64(5), candidates=np.int64(3), diverse=np.bool_(True))
    assert (agent.beam, agent.candidates, agent.diverse) == (5, 3, True)


def test_mirrored_outputs_do_not_depend_on_which_mirror_image_is_shown():
    """Averaged over the 4 mirror images (each applied to every board), the outputs are the same for a position and
    any of its mirror images; a single network's are not."""
    net = _random_net(hidden=(32,), seed=4)
    g = _midgame(seed=9, turns=9)
    x = np.zeros((1, NUM_FEATURES), np.float32)
    afterstate_features(g.state.copy(), g.current_player, x[0])
    avg = mirrored_outputs(net, x, 0, 4)
    assert np.array_equal(mirrored_outputs(net, x, 0, 1), net(x))
    for k in (1, 2, 3):
        y = x[:, symmetry_index(np.zeros(1, np.int64), np.full((1, 4), k))[0]]
        for side in (0, 1):  # the agents' precomputed columns are symmetry_index's
            assert np.array_equal(MIRRORS[side, k], symmetry_index(np.array([side]), np.full((1, 4), k))[0])
        assert not np.allclose(net(y), net(x), atol=1e-6)
        assert mirrored_outputs(net, y, 0, 4) == pytest.approx(avg, abs=1e-6)


class _Evil:
    def __reduce__(self):
        return (os.system, (f"touch {_Evil.target}",))


def test_checkpoint_with_code_is_refused(tmp_path):
    """A .pt that would run code when unpickled is refused by weights_only loading, even when its JSON records its
    true SHA-256 (whoever crafted one file can write the other); the code never runs."""
    _Evil.target = str(tmp_path / "pwned")
    with open(tmp_path / "evil.pt", "wb") as f:
        # padded to the size its config's weights take, so the size check before reading lets it through
        torch.save({"0.weight": _Evil(), "pad": torch.zeros(NUM_FEATURES + 64)}, f, pickle_module=pickle)
    sha = hashlib.sha256((tmp_path / "evil.pt").read_bytes()).hexdigest()
    (tmp_path / "evil.json").write_text(json.dumps({"network": {**DEFAULT_CONFIG, "hidden": [1]}, "sha256": sha}))
    with pytest.raises(CheckpointError, match=r"evil\.pt: not a weights-only .*refused it: .*GLOBAL .*system"):
        ValueNet.load(tmp_path / "evil.pt")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.skipif(not DEFAULT_CHECKPOINT.exists(), reason="no shipped checkpoint in this checkout")
def test_learned_checkpoints_are_checked_by_sha256_and_hold_float32_tensors_only(tmp_path):
    """A flipped byte, a wrong or missing SHA-256, and weights that are not the config's float32 tensors are each
    refused by name with a CheckpointError (a ValueError); an untouched copy loads to the shipped network."""
    raw = DEFAULT_CHECKPOINT.read_bytes()
    doc = json.loads(DEFAULT_CHECKPOINT.with_suffix(".json").read_text())
    true = hashlib.sha256(raw).hexdigest()
    assert doc["sha256"] == true  # the shipped JSON records its weights' hash
    x = np.linspace(-1, 1, 2 * NUM_FEATURES, dtype=np.float32).reshape(2, NUM_FEATURES)
    ok = ValueNet.load(copy_shipped(tmp_path / "ok"))
    assert np.array_equal(ok(x), ValueNet.load(DEFAULT_CHECKPOINT)(x))
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0x01
    bad = hashlib.sha256(bytes(flipped)).hexdigest()
    with pytest.raises(CheckpointError, match=rf"flip/m\.pt: SHA-256 {bad} is not the {true} that m\.json records"):
        ValueNet.load(copy_shipped(tmp_path / "flip", bytes(flipped)))
    with pytest.raises(CheckpointError, match=rf"SHA-256 {true} is not the {'0' * 64}"):
        load_checkpoint(copy_shipped(tmp_path / "bogus", edit=lambda d: {**d, "sha256": "0" * 64}))
    for sha in ("abc", 12, [], "A" * 64):
        with pytest.raises(CheckpointError, match="'sha256' must be 64 lowercase hex digits"):
            load_checkpoint(copy_shipped(tmp_path / "form", edit=lambda d: {**d, "sha256": sha}))
    # an older checkpoint without the hash: refused, saying how to add it
    with pytest.raises(CheckpointError, match=rf"m\.json: no 'sha256' of m\.pt.*add \"sha256\": \"{true}\" to m\.json"):
        load_checkpoint(copy_shipped(tmp_path / "old", edit=lambda d: {k: v for k, v in d.items() if k != "sha256"}))
    state = torch.load(DEFAULT_CHECKPOINT, weights_only=True)
    for name, weights, match in (
            ("lists", {k: v.tolist() for k, v in state.items()}, "'0.weight' must be a \\(dense\\) tensor, got list"),
            ("arrays", {k: v.numpy() for k, v in state.items()}, "not a weights-only .*refused it: .*GLOBAL numpy"),
            ("f64", {k: v.double() for k, v in state.items()}, "'0.weight' must be float32, got float64"),
            ("extra", {**state, "6.weight": state["4.weight"]}, "must hold exactly .*unknown \\['6.weight'\\]"),
            ("missing", {k: v for k, v in state.items() if k != "2.bias"}, "missing \\['2.bias'\\]"),
            ("shape", {**state, "4.bias": torch.zeros(9)}, "'4.bias' must have shape \\(8,\\) for this config, got "
                                                           "\\(9,\\)"),
            ("nan", {**state, "4.bias": torch.full((8,), float("nan"))}, "'4.bias' must hold finite"),
            ("notdict", list(state.values()), "must be a state dict")):
        with pytest.raises(CheckpointError, match=rf"{name}/m\.pt: .*{match}"):
            MLPAgent(copy_shipped(tmp_path / name, torch_bytes(weights), fix_sha=True))


@pytest.mark.skipif(not DEFAULT_CHECKPOINT.exists(), reason="no shipped checkpoint in this checkout")
@pytest.mark.parametrize("case", CASES)
def test_each_refused_checkpoint_is_one_checkpoint_error_naming_the_file(case, tmp_path):
    """Every way a learned checkpoint is refused is a CheckpointError with a one-line message naming the file (what
    the commands print), also when the pair was crafted together (the JSON holding the bad file's true hash)."""
    path, match = bad_checkpoint(case, tmp_path)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path) in msg and re.search(match, msg), msg


@pytest.mark.skipif(not DEFAULT_CHECKPOINT.exists(), reason="no shipped checkpoint in this checkout")
def test_shipped_checkpoint_loads_weights_only_and_beats_random():
    state = torch.load(DEFAULT_CHECKPOINT, map_location="cpu", weights_only=True)
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    config, checked = load_checkpoint(DEFAULT_CHECKPOINT)  # its SHA-256, names, shapes and dtypes pass
    assert config["hidden"] == [256, 256] and checked.keys() == state.keys()
    for seed in range(3):
        agent = make_agent("mlp")
        g = play_game([agent, RandomAgent(seed=seed)], seed=seed)
        sc = g.scores()
        assert sc[0]["total"] > sc[1]["total"] + 20


# ---------------------------------------------------------------------------------------------- agents

def test_specs_and_budgets(tmp_path):
    net = _random_net()
    assert isinstance(make_agent("mlp-search:3it") if DEFAULT_CHECKPOINT.exists() else
                      MLPSearchAgent(net=net, iterations=3), MLPSearchAgent)
    for bad in ("mlp-search:nan", "mlp-search:inf", "mlp-search:-1", "mlp-search:0it",
                "mlp-search:xit"):
        with pytest.raises(ValueError):
            make_agent(bad)
    with pytest.raises((ValueError, FileNotFoundError)):
        make_agent(f"mlp:{tmp_path / 'nothing.pt'}")
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(CheckpointError, match=r"^bad agent spec 'mlp:.*empty"):  # the spec named, the type kept
        make_agent(f"mlp:{tmp_path / 'empty.pt'}")
    with pytest.raises(ValueError, match=r"^bad agent spec 'learned:.*empty\.pt'.*'mlp:.*empty\.pt'"):
        make_agent(f"learned:{tmp_path / 'empty.pt'}")  # `learned` is the n-tuple network now: pointed to mlp


@pytest.mark.parametrize("players,spirits", [(2, False), (3, True), (1, False)])
def test_search_agent_plays_whole_games(players, spirits):
    net = _random_net()
    agents = [MLPSearchAgent(net=net, iterations=6, beam=8, candidates=6, reply_beam=2, seed=k)
              for k in range(players)]
    g = play_game(agents, seed=2, config=GameConfig(players, "A", spirits))
    assert g.is_over
    assert all(a.last_iterations <= 6 for a in agents)


def test_search_leaf_depth():
    """`turns` = how many whole turns the leaves play after the candidate before the network judges: 0 judges our
    own position, 1 (2 players' default) the opponent's reply, more plays further; deeper leaves end more games."""
    net = _random_net()
    g = _midgame(seed=4, turns=8)
    view = PlayerView(g, g.current_player)
    for turns in (0, 1, 3, 40):
        agent = MLPSearchAgent(net=net, iterations=8, beam=8, candidates=4, root=4, reply_beam=2, turns=turns)
        plan = agent.choose_plan(view, private_copy(view, 0))
        assert plan and plan[-1] == 267 and agent.last_iterations == 8
    state = private_copy(view, 1).state
    for turns, ended in ((1, False), (200, True)):
        roots = np.stack([state.copy()])
        cp = np.zeros((1, MAX_PLAN), dtype=np.int64)
        plans = MLPAgent(net=net, beam=8, candidates=2).rank(private_copy(view, 1))[0]
        cp[0, : len(plans[0])] = plans[0]
        cl = np.array([len(plans[0])], dtype=np.int64)
        feats = np.zeros((1, NUM_FEATURES), dtype=np.float32)
        seat, exact = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.bool_)
        et, ew = np.zeros((1, 4), dtype=np.int64), np.zeros((1, 4), dtype=np.int64)
        heur = np.zeros((1, 4))
        search_leaves(roots, cp, cl, np.zeros(1, dtype=np.int64), DEFAULT_WEIGHTS, 2, turns, feats, seat, exact,
                      et, ew, heur)
        assert bool(heur[0, :2].min() > 0) is (not ended)  # the heuristic's estimates where the network judges
        assert bool(exact[0]) is ended
        assert bool(et[0].sum() > 0) is ended and bool(np.abs(feats[0]).sum() > 0) is (not ended)
        if not ended:
            assert seat[0] == 1  # judged by the opponent, whose afterstate it is
    with pytest.raises(ValueError, match="turns"):
        MLPSearchAgent(net=net, iterations=8, turns=-1)


def test_search_agent_uses_its_budget():
    net = _random_net()
    g = _midgame(seed=4, turns=2)
    view = PlayerView(g, g.current_player)
    agent = MLPSearchAgent(net=net, iterations=40, beam=16, candidates=16, root=8, reply_beam=2)
    plan = agent.choose_plan(view, private_copy(view, 0))
    assert plan and plan[-1] == 267
    assert 32 <= agent.last_iterations <= 40
    agent = MLPSearchAgent(net=net, seconds=0.3, beam=16, candidates=16, root=4, reply_beam=2)
    t = time.perf_counter()
    agent.choose_plan(view, private_copy(view, 0))
    assert agent.last_iterations >= 4 and time.perf_counter() - t < 5.0


# ---------------------------------------------------------------------------------------------- batched evaluation

@pytest.mark.parametrize("players, side, spirits, games, diverse, symmetries",
                         [(2, "A", False, 4, False, 1), (3, "B", True, 3, True, 4), (2, "B", False, 2, True, 1)])
def test_batched_evaluation_plays_the_same_games_as_the_agents(players, side, spirits, games, diverse, symmetries):
    """`play_vs_greedy` (all games at once) gives, game for game, the totals of MLPAgent vs GreedyAgent played
    one at a time through `Game`: same seeds, same seats, same choices."""
    net = _random_net(seed=4)
    value = net.config["value"]
    cfg = GameConfig(players, side, spirits)
    res = play_vs_greedy(net, games, 7, value, config=cfg,
                         beam=3 if diverse else 8, candidates=4, diverse=diverse, symmetries=symmetries,
                         opponent_beam=4, threads=2)
    for i in range(games):
        me = (-i) % players  # the match engine rotates the seats: seat k holds policy (k + i) % players
        agents = [GreedyAgent(beam=4) for _ in range(players)]
        agents[me] = MLPAgent(net=net, beam=3 if diverse else 8, candidates=4, diverse=diverse,
                                  symmetries=symmetries)
        g = play_game(agents, seed=7 + i // players, config=cfg)
        assert res["totals"][i].tolist() == [sc["total"] for sc in g.scores()], i
        assert res["net_seat"][i] == me
    mine = res["totals"][np.arange(games), res["net_seat"]]
    assert res["mean_score"] == pytest.approx(mine.mean())


def test_eval_command(tmp_path, capsys):
    cfg = {**DEFAULT_CONFIG, "hidden": [8]}
    torch.manual_seed(0)
    save_agent_checkpoint(tmp_path / "net", torch_net(cfg).state_dict(), cfg, {})
    args = ["--checkpoint", str(tmp_path / "net.pt"), "--games", "2", "--beam", "4", "--candidates", "2",
            "--opponent-beam", "2", "--no-progress", "--value", "0,0,1"]
    assert eval_main(args) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["games"] == 2 and row["value"] == {"win": 0.0, "margin": 0.0, "score": 1.0}
    assert (row["beam"], row["candidates"], row["diverse"], row["symmetries"]) == (4, 2, False, 1)  # checkpoint's
    assert eval_main(args + ["--diverse", "--symmetries", "4"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["diverse"], row["symmetries"]) == (True, 4)
    assert 0.0 <= row["win_rate"] <= 1.0 and row["win_ci95"][0] <= row["win_rate"] <= row["win_ci95"][1]
    assert row["mean_score"] > 0
    assert eval_main(args[:2] + ["--games", "0"]) == 2
    assert "--games must be >= 1" in capsys.readouterr().err
    assert eval_main(args + ["--candidates", "0"]) == 2  # the same checks as MLPAgent's, naming the setting
    assert "candidates must be a whole number 1..1024" in capsys.readouterr().err
    assert eval_main(args + ["--beam", "0"]) == 2
    assert "beam must be a whole number" in capsys.readouterr().err
    assert eval_main(["--checkpoint", str(tmp_path / "nope.pt")]) == 2
    assert "not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        eval_main(args + ["--value", "1,2"])
    assert "three finite numbers" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- training

def mlp_learner(cfg, seed, run, progress=False):
    """The `mlp` learner's `Learner` (`experiments.selfplay_command.build`, what its command runs)."""
    return build("mlp", cfg, seed, run, progress=progress)


def load_config(path, overrides):
    """The checked settings of a config file and `--set` overrides, as `python -m experiments.train mlp` reads them."""
    return settings(_load_config(path, DEFAULTS, overrides))


def test_training_lowers_the_loss(tmp_path):
    """The framework's games fill the evaluator's replay buffer (`learn`); its Adam steps lower the loss on it."""
    tr = mlp_learner(load_config(TINY, ["train.min_buffer=4000"]), seed=3, run=tmp_path, progress=False)
    ev = tr.evaluator
    while ev.buf_size < 400:
        tr.step()
    idx = np.arange(400)

    def loss_on_fixed_batch() -> float:
        with torch.no_grad():
            out = ev.net(torch.from_numpy(ev.buf_x[idx].astype(np.float32)))
            return float(((out[:, :2] - torch.from_numpy(ev.buf_tot[idx, :2])) ** 2).mean())

    before = loss_on_fixed_batch()
    ctx = tr.context()
    for _ in range(60):
        ev._adam_step(ctx)
    after = loss_on_fixed_batch()
    assert after < 0.5 * before


def test_evaluations_start_at_game_zero_and_meet_mcts(tmp_path):
    """The curve's first row is the untrained network (no loss yet); MCTS columns (the evaluator's extra evaluation)
    appear on the rows that met it; evaluating draws nothing from the training generator, so the run is unchanged."""
    over = ["eval.mcts_every=2", "eval.mcts_games=2", "eval.mcts_iterations=2", "eval.games=2", "train.iterations=3"]
    tr = mlp_learner(load_config(TINY, over), seed=3, run=tmp_path, progress=False)
    tr.train()
    rows = list(csv.DictReader(open(tmp_path / "eval.csv")))
    assert [r["iteration"] for r in rows] == ["0"]
    assert rows[0]["games"] == "0" and rows[0]["loss"] == ""
    assert 0.0 <= float(rows[0]["mcts_win_rate"]) <= 1.0 and float(rows[0]["mcts_mean_score"]) > 0
    (tmp_path / "c").mkdir()
    tr2 = mlp_learner(load_config(TINY, [*over, "eval.every=1"]), seed=3, run=tmp_path / "c", progress=False)
    tr2.train()
    rows = list(csv.DictReader(open(tmp_path / "c" / "eval.csv")))
    assert [r["iteration"] for r in rows] == ["0", "1", "2", "3"]
    assert [r["mcts_win_rate"] != "" for r in rows] == [True, False, True, False]
    (tmp_path / "d").mkdir()
    plain = mlp_learner(load_config(TINY, ["train.iterations=3"]), seed=3, run=tmp_path / "d", progress=False)
    plain.train()  # the same run without evaluations against MCTS ends with the same weights
    for k, v in plain.evaluator.net.state_dict().items():
        assert torch.equal(v, tr2.evaluator.net.state_dict()[k]), k


def test_config_errors():
    with pytest.raises(ValueError, match="unknown setting"):
        load_config(TINY, ["train.nope=1"])
    with pytest.raises(ValueError, match="unknown section"):
        load_config(TINY, ["nope.lr=1"])
    assert load_config(TINY, ["train.lr=0.5"])["train"]["lr"] == 0.5
    assert load_config(TINY, ["train.init=runs/x/model.pt"])["train"]["init"] == "runs/x/model.pt"  # bare text
    with pytest.raises(ValueError, match="train.lr takes a number, got 'abc'"):
        load_config(TINY, ["train.lr=abc"])
    with pytest.raises(ValueError, match="selfplay.sides takes a list"):
        load_config(TINY, ["selfplay.sides=A"])
    with pytest.raises(ConfigError, match="min_buffer = 5000 is more than the buffer holds"):
        load_config(TINY, ["train.min_buffer=5000"])
    with pytest.raises(ConfigError, match=r"\[network\] .*play"):
        load_config(TINY, ["network.play={beam = 8, candidates = 4, nope = 1}"])


def _train_args(run: Path, iterations: int, extra: list[str] | None = None) -> list[str]:
    """`python -m experiments.train`'s arguments for `mlp` on the tiny config, seed 5, `iterations` iterations; with
    --resume when the run folder holds a run (config.json)."""
    return ["mlp", "--config", str(TINY), "--run", str(run), "--seed", "5", "--set", f"train.iterations={iterations}",
            "--no-progress", *(["--resume"] if (run / "config.json").exists() else []), *(extra or [])]


def _train(run: Path, iterations: int, extra: list[str] | None = None) -> subprocess.Popen:
    """`python -m experiments.train mlp` (`_train_args`) as a process of its own, for a test that kills it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "experiments.train", *_train_args(run, iterations, extra)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _train_here(run: Path, iterations: int, extra: list[str] | None = None) -> int:
    """The same command in this process (`experiments.train.cli`, what `python -m experiments.train` runs: a
    refusal is one line on stderr and exit status 2); its exit status."""
    from experiments import train

    return train.cli(_train_args(run, iterations, extra))


def _weights(run: Path) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in torch.load(run / "model.pt", weights_only=True).items()}


def test_resume_after_sigkill_is_bit_identical(tmp_path):
    """A run killed (SIGKILL) three times, resumed each time, ends with the same weights as one never killed; the
    model it writes is `agents.mlp`'s checkpoint, what `mlp:PATH` loads."""
    light = ["--set", "eval.games=2"]  # evaluations of 2 games (at 0 and 30): the run's checkpoints are what counts
    # the run never stopped, in this process (one interpreter start fewer); the killed one is a process of its own
    assert _train_here(tmp_path / "ref", 40, light) == 0
    want = _weights(tmp_path / "ref")
    run = tmp_path / "killed"
    kills = 0
    # Each attempt is killed as soon as the checkpoint of an iteration >= `at` is on disk (every run gets there; the
    # kill then lands wherever the run is), with 10 of the 40 iterations still to go, so the run is surely going on.
    for at in (10, 20, 30):
        p = _train(run, 40, light)
        while not any(int(f.stem[5:]) >= at for f in (run / "checkpoints").glob("step_*.json")):
            assert p.poll() is None, p.stdout.read().decode()
            time.sleep(0.01)
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills += 1
    p = _train(run, 40, light)
    assert p.wait(timeout=300) == 0, p.stdout.read().decode()
    assert kills == 3
    got = _weights(run)
    assert got.keys() == want.keys()
    for k in want:
        assert np.array_equal(got[k], want[k]), k
    assert (run / "eval.csv").read_text().splitlines()[0].startswith("iteration,")
    agent = make_agent(f"mlp:{run / 'model.pt'}")
    assert isinstance(agent, MLPAgent) and np.array_equal(agent.net.biases[0], want["0.bias"])


def test_a_checkpoint_of_the_trainer_before_the_framework_is_refused_on_resume(tmp_path, capsys):
    """A run folder of the MLP's own trainer (issue 45 retired it: its checkpoints were .pt files) cannot go on; the
    error says so in one line (its model still plays)."""
    assert _train_here(tmp_path, 10) == 0
    for rec in (tmp_path / "checkpoints").glob("step_*.json"):
        doc = json.loads(rec.read_text())
        old = rec.with_name(doc["weights"])
        old.rename(old.with_suffix(".pt"))
        doc["weights"] = old.with_suffix(".pt").name
        rec.write_text(json.dumps(doc))
    capsys.readouterr()
    code = _train_here(tmp_path, 20, ["--set", "train.schedule=10"])  # longer, its schedule kept: what --resume allows
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "before the self-play framework" in err[0], err


def test_a_run_can_start_from_a_saved_network(tmp_path, capsys):
    """train.init: the network starts from a checkpoint's weights (same architecture, else a clear error), the
    model's JSON records the file's SHA-256, and a resumed run never reads it again."""
    (tmp_path / "a").mkdir()
    first = mlp_learner(load_config(TINY, ["train.iterations=10"]), seed=3, run=tmp_path / "a", progress=False)
    first.train()
    src = tmp_path / "a" / "model.pt"
    tr = mlp_learner(load_config(TINY, [f'train.init="{src}"']), seed=4, run=tmp_path / "b", progress=False)
    for k, v in first.evaluator.net.state_dict().items():
        assert torch.equal(v, tr.evaluator.net.state_dict()[k]), k
    assert tr.evaluator.init_sha256 == hashlib.sha256(src.read_bytes()).hexdigest()
    with pytest.raises(ConfigError, match="hidden"):
        mlp_learner(load_config(TINY, [f'train.init="{src}"', "network.hidden=[16]"]), seed=4, run=tmp_path,
                    progress=False)
    with pytest.raises(ConfigError, match="nope"):
        mlp_learner(load_config(TINY, [f'train.init="{tmp_path / "nope.pt"}"']), seed=4, run=tmp_path, progress=False)
    copy = tmp_path / "init.pt"
    copy.write_bytes(src.read_bytes())
    (tmp_path / "init.json").write_bytes(src.with_suffix(".json").read_bytes())
    assert _train_here(tmp_path / "c", 10, ["--set", f'train.init="{copy}"']) == 0
    info = json.loads((tmp_path / "c" / "model.json").read_text())["training"]
    assert info["init_sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest()
    copy.unlink()  # resuming takes the weights from the run's checkpoint, not from train.init
    assert _train_here(tmp_path / "c", 20, ["--set", f'train.init="{copy}"', "--set", "train.schedule=10"]) == 0
    info = json.loads((tmp_path / "c" / "model.json").read_text())["training"]
    assert info["iteration"] == 20 and info["init_sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    capsys.readouterr()
    assert _train_here(tmp_path / "d", 10, ["--set", f'train.init="{copy}"']) == 2
    assert "not found" in capsys.readouterr().err
