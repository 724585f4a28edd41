"""The n-tuple value function (agents/ntuple/) and its training (the learner `learned`,
experiments/evaluators/ntuple.py)."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import mirror_board
from ntuple_reference import reference_market_keys, reference_output, reference_remaining

from agents import RandomAgent, make_agent
from agents import ntuple as N
from agents.afterstate import NUM_FEATURES
from agents.base import private_copy
from agents.checkpoint import CheckpointError
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN, plan_turn
from agents.ntuple.learning import td_step
from experiments.selfplay import vs_greedy
from harmonies_apps.tournament import play_game
from harmonies_env import Game, determinize
from harmonies_env import state as S
from harmonies_env.batch import play_plan
from harmonies_env.geometry import SYMMETRIES
from harmonies_env.rules import seat_score
from harmonies_env.view import PlayerView

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "experiments" / "configs" / "learned_tiny.toml"


def _positions(count: int, seed: int) -> list[tuple[np.ndarray, int]]:
    """Afterstates of games played by the greedy planner (beam 2) to random depths, on both sides, 2-4 players:
    (state, the seat that just moved)."""
    rng = np.random.default_rng(seed)
    plans = np.zeros((1, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(1, dtype=np.int64)
    vals = np.zeros(1)
    out = []
    for i in range(count):
        s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
        S.init_state(s, int(rng.integers(2, 5)), i % 2, 0, int(rng.integers(1, 2**40)))
        for _ in range(int(rng.integers(0, 30))):
            if s[S.GAME_OVER] or not plan_turn(s, DEFAULT_WEIGHTS, 2, plans, lens, vals):
                break
            play_plan(s, plans[0], lens[0])
        if s[S.GAME_OVER] or not plan_turn(s, DEFAULT_WEIGHTS, 2, plans, lens, vals):
            continue
        p = int(s[S.CURRENT])
        play_plan(s, plans[0], lens[0], True)  # the afterstate, just before END
        out.append((s, p))
    return out


def _random_weights(seed: int, layout: int = N.NTUPLE_VERSION) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=N.LAYOUT_WEIGHTS[layout]).astype(np.float32)


@pytest.mark.parametrize("layout", [1, 2, 3, 4])
def test_kernels_agree_with_the_plain_python_reference(layout):
    w = _random_weights(1, layout)
    pos = _positions(40, 2)
    if layout == 3:  # every stage is met
        assert {int(N.stage_of(s)) for s, _ in pos} == set(range(N.STAGES))
    assert len(pos) >= 25 and any(s[S.CUBES: S.CUBES + 4].any() for s, _ in pos)  # cubes on boards are covered
    held = [int((s[S.SLOT + 4 * p: S.SLOT + 4 * p + 4] >= 0).sum()) for s, p in pos]
    assert max(held) >= 3 and min(held) <= 1  # the card shapes: one card held, and several
    states = np.stack([s for s, _ in pos])
    seats = np.array([p for _, p in pos], dtype=np.int64)
    got = np.zeros(len(pos))
    N.evaluate_batch(states, seats, w, got)
    want = np.array([reference_remaining(s, p, w) for s, p in pos])
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9)
    assert np.count_nonzero(got) > len(pos) // 2  # not only positions with no turn left (valued 0)
    if layout == 2:  # the card tables count: the layout-1 part of the same vector gives other numbers
        short = np.zeros(len(pos))
        N.evaluate_batch(states, seats, np.ascontiguousarray(w[: N.CARD_FROM]), short)
        assert not np.allclose(short, got)
    if layout == 3:  # each afterstate reads its own stage's block: the first block alone gives other numbers
        first = np.zeros(len(pos))
        N.evaluate_batch(states, seats, np.ascontiguousarray(w[: N.STAGE_WEIGHTS]), first)
        late = np.array([N.stage_of(s) > 0 for s in states])
        assert np.allclose(first[~late], got[~late]) and not np.allclose(first[late], got[late])
    if layout == 4:  # the market tables count, and their look-ups are the reference's on every position
        short = np.zeros(len(pos))
        N.evaluate_batch(states, seats, np.ascontiguousarray(w[: N.MARKET_FROM]), short)
        assert not np.allclose(short, got)
        from agents.ntuple.market import MARKET_ACTIVE, NEED_ROW, market_keys

        keys = np.zeros(MARKET_ACTIVE, np.int64)
        rows = []
        for (s, p), h in zip(pos, held):
            k = market_keys(s, p, keys, np.zeros(NEED_ROW, np.int64))
            assert list(keys[:k]) == reference_market_keys(s, p)
            assert k == h + int((s[S.MARKET: S.MARKET + S.MAX_MARKET] >= 0).sum())
            rows += [int(x) % 48 for x in keys[:k]]
        distance, supply, spaces = np.array(rows) // 12, np.array(rows) // 3 % 4, np.array(rows) % 3
        # every distance met, and cards that one space supplies 1 and 2 of their missing tokens, from 1 and 2+ spaces
        assert set(distance) == {0, 1, 2, 3} and {1, 2} <= set(supply) and {0, 1, 2} <= set(spaces)


def test_the_win_head_agrees_with_the_reference_and_learns_the_winner():
    """`candidate_wins` is the logistic of the plain-Python output at each candidate's afterstate, also where the
    mover has no turn left; `learn_win` moves every afterstate of a game towards its seat's share of the victory."""
    w = _random_weights(8) * np.float32(0.01)
    g = Game(2, "A", seed=21)
    greedy = make_agent("greedy:2")
    for _ in range(15):
        g.step(greedy.act(PlayerView(g, g.current_player)))
    s = g.state.copy()
    plans = np.zeros((16, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(16, dtype=np.int64)
    n = N.candidate_values(s, w, DEFAULT_WEIGHTS, 2, plans, lens, np.zeros(16), np.zeros(16),
                           np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE))
    assert n >= 2
    got = np.zeros(n)
    N.candidate_wins(s, plans, lens, n, w, got)
    p = int(s[S.CURRENT])
    for j in range(n):
        after = s.copy()
        play_plan(after, plans[j], lens[j], True)
        assert got[j] == pytest.approx(1.0 / (1.0 + np.exp(-reference_output(after, p, w))), rel=1e-9)
    pos = _positions(30, 10)
    afters = np.stack([s for s, _ in pos])
    seats = np.array([q % 2 for q in range(len(pos))], dtype=np.int64)  # seat 0 wins, seat 1 loses
    share = np.array([1.0, 0.0, 0.0, 0.0])
    wv = np.zeros(N.NUM_WEIGHTS, dtype=np.float32)
    # coherence=None given, as the trainer gives it: left out, it is another numba signature (learn_game and
    # learn_win compiled a second time)
    losses = [N.learn_win(wv, afters, seats, len(pos), share, 1.0, 0.1, 0.01, None) for _ in range(60)]
    assert losses[-1] < 0.6 * losses[0] and losses[0] > 0.9 * len(pos) * np.log(2)
    prob = np.array([1.0 / (1.0 + np.exp(-reference_output(a, q, wv))) for a, q in zip(afters, seats)])
    assert prob[seats == 0].mean() > 0.6 and prob[seats == 1].mean() < 0.4  # boards share keys: on average


def test_expert_targets_replace_the_lambda_returns():
    """Where a search valued an afterstate (targets not NaN), `learn_game` moves it towards that value (mix 1)."""
    pos = _positions(16, 11)
    afters = np.stack([s for s, _ in pos])
    seats = np.array([q % 2 for q in range(len(pos))], dtype=np.int64)
    preds = np.zeros(len(pos))
    final = np.array([120, 80, 0, 0], dtype=np.int64)
    targets = np.full(len(pos), 7.0)  # a search valued every afterstate at 7 points still to come
    w = np.zeros(N.NUM_WEIGHTS, dtype=np.float32)
    for _ in range(300):
        N.learn_game(w, afters, seats, preds, len(pos), final, 0.5, 0.1, 0.0, targets, 1.0, None)
    live = [j for j in range(len(pos)) if not N.no_turn_left(afters[j], seats[j])]
    assert len(live) > len(pos) // 2
    for j in live:  # the lambda-returns (final - total: far from 7) count for nothing
        assert reference_remaining(afters[j], seats[j], w) == pytest.approx(7.0, abs=1.0), j
    targets[::2] = np.nan  # a target on some afterstates only: a different update from none at all
    w0 = np.zeros(N.NUM_WEIGHTS, dtype=np.float32)
    w1 = np.zeros(N.NUM_WEIGHTS, dtype=np.float32)
    N.learn_game(w0, afters, seats, preds, len(pos), final, 0.5, 0.1, 0.01, np.full(len(pos), np.nan), 1.0, None)
    N.learn_game(w1, afters, seats, preds, len(pos), final, 0.5, 0.1, 0.01, targets, 0.0, None)
    assert np.array_equal(w0, w1) and np.abs(w0).sum() > 0  # mix 0: the targets change nothing
    N.learn_game(w1, afters, seats, preds, len(pos), final, 0.5, 0.1, 0.01, targets, 0.5, None)
    N.learn_game(w0, afters, seats, preds, len(pos), final, 0.5, 0.1, 0.01, np.full(len(pos), np.nan), 0.5, None)
    assert not np.array_equal(w0, w1)


def test_temporal_coherence_slows_the_weights_that_only_oscillate():
    """With temporal-coherence step sizes (`td_step`'s coherence), a first step is the plain one; a weight whose
    corrections keep one sign keeps its full rate, one pushed back and forth slows towards 0 (|E| / A), and the
    accumulators are the sums of the plain steps and of their sizes."""
    s, p = _positions(4, 12)[0]
    idx = np.empty(N.MAX_ACTIVE, dtype=np.int64)
    lin = np.empty(N.NUM_LINEAR, dtype=np.float64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    k = N.tuple_indices(s, p, idx, True, False)  # market given, as the kernels give it (no second signature)
    N.linear_features(s, p, feats, lin)
    sel = np.unique(idx[:k])
    plain = np.zeros(N.NUM_WEIGHTS, dtype=np.float32)
    coh = np.zeros((2, N.NUM_WEIGHTS), dtype=np.float32)
    tc = plain.copy()
    td_step(plain, idx, k, lin, 2.0, 0.1, 0.0)
    td_step(tc, idx, k, lin, 2.0, 0.1, 0.0, coh)
    assert np.array_equal(plain, tc) and np.abs(tc[sel]).min() > 0  # a first step: rate 1
    assert np.allclose(coh[1, sel], np.abs(coh[0, sel])) and coh[1, sel].min() > 0
    td_step(plain, idx, k, lin, 2.0, 0.1, 0.0)
    td_step(tc, idx, k, lin, 2.0, 0.1, 0.0, coh)
    assert np.allclose(plain, tc)  # one sign: still the full rate
    for _ in range(20):  # pushed back and forth: |E| stays small while A grows
        for err in (-2.0, 2.0):
            td_step(tc, idx, k, lin, err, 0.1, 0.0, coh)
    rate = np.abs(coh[0, sel]) / coh[1, sel]
    assert rate.max() < 0.1
    before = tc.copy()
    plain2 = tc.copy()
    td_step(tc, idx, k, lin, 2.0, 0.1, 0.0, coh)
    td_step(plain2, idx, k, lin, 2.0, 0.1, 0.0)
    assert (np.abs(tc - before)[sel] / np.abs(plain2 - before)[sel]).max() < 0.15  # each weight's own rate
    w0 = np.zeros(N.NUM_WEIGHTS, dtype=np.float32)  # learn_game and learn_win pass it on
    w1 = w0.copy()
    pos = _positions(8, 13)
    afters = np.stack([a for a, _ in pos])
    seats = np.array([q % 2 for q in range(len(pos))], dtype=np.int64)
    final = np.array([100, 90, 0, 0], dtype=np.int64)
    none = np.full(len(pos), np.nan)
    c = np.zeros((2, N.NUM_WEIGHTS), dtype=np.float32)
    for _ in range(3):
        N.learn_game(w0, afters, seats, np.zeros(len(pos)), len(pos), final, 0.5, 0.1, 0.01, none, 1.0, None)
        N.learn_game(w1, afters, seats, np.zeros(len(pos)), len(pos), final, 0.5, 0.1, 0.01, none, 1.0, c)
    assert not np.array_equal(w0, w1) and c[1].sum() > 0
    cw = np.zeros((2, N.NUM_WEIGHTS), dtype=np.float32)
    N.learn_win(w1, afters, seats, len(pos), np.array([1.0, 0, 0, 0]), 0.5, 0.1, 0.01, cw)
    assert cw[1].sum() > 0


@pytest.mark.parametrize("layout", [2, 3])
def test_heuristic_weights_are_the_greedy_evaluation(layout):
    """Own total + remaining under `heuristic_weights` is `greedy.heuristic_value` (up to float32 rounding), in
    every stage of a layout-3 network."""
    from agents.afterstate import NUM_FEATURES
    from agents.greedy import heuristic_value

    w = N.heuristic_weights(layout)
    sc = np.zeros(16, dtype=np.int64)
    idx = np.zeros(N.MAX_ACTIVE, dtype=np.int64)
    feats = np.zeros(NUM_FEATURES, dtype=np.float32)
    lin = np.zeros(N.NUM_LINEAR)
    stages = set()
    for s, p in _positions(20, 3):
        got = seat_score(s, p, sc) + N.remaining(s, p, w, idx, feats, lin)
        assert got == pytest.approx(heuristic_value(s, p, DEFAULT_WEIGHTS, sc), abs=1e-4)
        stages.add(int(N.stage_of(s)))
    assert len(stages) == N.STAGES


def test_a_layout_3_network_learns_each_afterstate_in_its_own_stage_block():
    """Layout 3 (multistage): `learn_game` (and `learn_win`) move only the block of each afterstate's stage, exactly as
    a layout-2 network learning that stage's afterstates alone would (targets fixed by expert targets at mix 1, so
    the returns do not depend on which afterstates are learned); `stage_of` is the mover's own turn in STAGE_STARTS."""
    pos = _positions(40, 12)
    afters = np.stack([s for s, _ in pos])
    seats = np.array([p for _, p in pos], dtype=np.int64)
    stage = np.array([N.stage_of(s) for s in afters])
    own = afters[:, S.TURN] // afters[:, S.NUM_PLAYERS]
    assert np.array_equal(stage, np.searchsorted(N.STAGE_STARTS, own, side="right") - 1)
    assert set(stage) == set(range(N.STAGES))
    targets = np.random.default_rng(3).uniform(0, 40, len(pos))
    final = np.array([100, 90, 80, 70], dtype=np.int64)
    w3 = np.zeros(N.LAYOUT_WEIGHTS[3], np.float32)
    N.learn_game(w3, afters, seats, np.zeros(len(pos)), len(pos), final, 0.5, 0.1, 0.01, targets, 1.0, None)
    share = np.array([1.0, 0, 0, 0])
    win3 = np.zeros_like(w3)
    N.learn_win(win3, afters, seats, len(pos), share, 0.5, 0.1, 0.01, None)
    for b in range(N.STAGES):
        mine = np.flatnonzero(stage == b)
        w2 = np.zeros(N.LAYOUT_WEIGHTS[2], np.float32)
        N.learn_game(w2, afters[mine], seats[mine], np.zeros(len(mine)), len(mine), final, 0.5, 0.1, 0.01,
                     targets[mine], 1.0, None)
        block = w3[b * N.STAGE_WEIGHTS: (b + 1) * N.STAGE_WEIGHTS]
        assert np.array_equal(block, w2) and np.abs(w2).sum() > 0
        # the win head's returns bootstrap along each seat's afterstates: its blocks differ from a lone stage's,
        # but each moved, and only by its own stage's afterstates
        assert np.abs(win3[b * N.STAGE_WEIGHTS: (b + 1) * N.STAGE_WEIGHTS]).sum() > 0
    idx = np.empty(N.MAX_ACTIVE, np.int64)
    feats = np.empty(NUM_FEATURES, np.float32)
    lin = np.empty(N.NUM_LINEAR)
    for j in range(len(pos)):  # and each afterstate's value is read from its stage's block
        if not N.no_turn_left(afters[j], seats[j]):
            assert abs(N.remaining(afters[j], seats[j], w3, idx, feats, lin)
                       - reference_remaining(afters[j], seats[j], w3)) < 1e-9


def test_the_value_is_the_same_on_the_boards_mirror_images():
    w = _random_weights(4)
    for s, p in _positions(12, 5):
        base = np.zeros(1)
        N.evaluate_batch(s[None], np.array([p]), w, base)
        for k in range(1, 4):
            got = np.zeros(1)
            N.evaluate_batch(mirror_board(s, p, SYMMETRIES[int(s[S.SIDE]), k])[None], np.array([p]), w, got)
            assert got[0] == pytest.approx(base[0], rel=1e-9, abs=1e-9)


def test_the_choice_is_the_same_on_determinized_copies():
    """The agent reads public information only: copies with other hidden draws give the same plan."""
    agent = N.NTupleAgent(weights=_random_weights(6), beam=4, candidates=32)
    g = Game(2, "A", seed=11)
    greedy = make_agent("greedy:4")
    for _ in range(9):  # a few turns in, so boards and cards differ from the deal
        g.step(greedy.act(PlayerView(g, g.current_player)))
    view = PlayerView(g, g.current_player)
    plans = [agent.choose_plan(view, private_copy(view, seed)) for seed in (1, 2, 3)]
    plans.append(agent.choose_plan(view, determinize(g, g.current_player, 99)))
    assert all(pl == plans[0] for pl in plans) and plans[0]
    search = N.NTupleSearchAgent(weights=_random_weights(6), beam=4, candidates=32, worlds=2, root=3, reply_beam=2,
                                 reply_candidates=8)
    chosen = [search.choose_plan(view, private_copy(view, seed)) for seed in (1, 2)]
    chosen.append(search.choose_plan(view, determinize(g, g.current_player, 99)))
    assert all(pl == chosen[0] for pl in chosen) and chosen[0]
    with pytest.raises(ValueError, match="worlds"):
        make_agent("learned-search:0it")
    with pytest.raises(ValueError, match="seconds"):
        make_agent("learned-search:0")
    assert make_agent("learned-search").worlds == 8 and make_agent("learned-search:3it").worlds == 3
    # A time budget adds worlds until the next would not fit: a tiny one stops after the first.
    timed = N.NTupleSearchAgent(weights=_random_weights(6), beam=4, candidates=32, seconds=1e-6, root=3,
                                reply_beam=2, reply_candidates=8)
    assert timed.choose_plan(view, private_copy(view, 1)) and timed.last_worlds == 1
    assert make_agent("learned-search:0.5").seconds == 0.5
    win = N.NTupleWinAgent(weights=_random_weights(6), win_weights=_random_weights(7) * np.float32(0.01), beam=4,
                           candidates=32)
    chosen = [win.choose_plan(view, private_copy(view, seed)) for seed in (1, 2)]
    chosen.append(win.choose_plan(view, determinize(g, g.current_player, 99)))
    assert all(pl == chosen[0] for pl in chosen) and chosen[0]
    with pytest.raises(ValueError, match="win_weight"):
        make_agent("learned-win:-1")


def test_checkpoints_are_weights_only_and_checked(tmp_path):
    w = _random_weights(7)
    path = N.save_checkpoint(tmp_path / "net", w, {"beam": 3, "candidates": 16}, {"note": "test"})
    config, got = N.load_checkpoint(path)
    assert np.array_equal(got, w) and config["play"] == {"beam": 3, "candidates": 16}
    agent = make_agent(f"learned:{path}")
    assert agent.beam == 3 and agent.candidates == 16 and agent.name == f"learned:{path}"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data))
    bad.with_suffix(".json").write_bytes(path.with_suffix(".json").read_bytes())
    with pytest.raises(CheckpointError, match=r"bad\.npz: SHA-256"):
        N.load_checkpoint(bad)
    with pytest.raises(CheckpointError, match=r"bad\.npz: SHA-256"):
        make_agent(f"learned:{bad}")
    # an object array (which only unpickling could read) with a matching hash is refused too
    import io

    buf = io.BytesIO()
    np.savez(buf, weights=np.array([{"x": 1}], dtype=object))
    (tmp_path / "obj.npz").write_bytes(buf.getvalue())
    doc = json.loads(path.with_suffix(".json").read_text())
    doc["sha256"] = N.weights_sha256(buf.getvalue())
    (tmp_path / "obj.json").write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="obj.npz"):
        N.load_checkpoint(tmp_path / "obj.npz")
    doc["config"]["num_weights"] = 5
    (tmp_path / "obj.json").write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="layout"):
        N.load_checkpoint(tmp_path / "obj.npz")
    # a layout-3 (multistage) network records where its stages start; other stages are refused, not misread
    w3 = _random_weights(7, layout=3)
    path3 = N.save_checkpoint(tmp_path / "staged", w3)
    config, got = N.load_checkpoint(path3)
    assert config["version"] == 3 and config["stage_starts"] == [int(x) for x in N.STAGE_STARTS]
    assert np.array_equal(got, w3)
    doc = json.loads(path3.with_suffix(".json").read_text())
    doc["config"]["stage_starts"] = [0, 4, 8]
    path3.with_suffix(".json").write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="layout"):
        N.load_checkpoint(path3)
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        N.load_checkpoint(tmp_path / "nope.npz")


def play_vs_greedy(w, games, seed, beam, candidates, opponent_beam, threads=1):
    """The network as `NTupleAgent` plays it against the greedy planner (the framework's evaluation)."""
    return vs_greedy(N.NTupleAgent(weights=w, beam=beam, candidates=candidates, name="ntuple"), games, seed,
                     opponent_beam, threads=threads)


def test_the_heuristic_start_beats_greedy_and_random():
    """Untrained (`heuristic_weights`), the network plays as greedy:BEAM:spaces: above `greedy` at its beam."""
    res = play_vs_greedy(N.heuristic_weights(), 8, 1_000_000, beam=4, candidates=32, opponent_beam=4)
    assert res["mean_score"] > 60 and 0.0 <= res["win_rate"] <= 1.0
    # The games' turns split over threads (`decide_rows` row ranges) are the same games.
    assert play_vs_greedy(N.heuristic_weights(), 8, 1_000_000, beam=4, candidates=32, opponent_beam=4,
                          threads=2) == res
    agent = N.NTupleAgent(weights=N.heuristic_weights(), beam=2, candidates=8)
    g = play_game([agent, RandomAgent(seed=1)], seed=3)
    totals = [sc["total"] for sc in g.scores()]
    assert totals[0] > totals[1]


@pytest.mark.skipif(not N.DEFAULT_CHECKPOINT.is_file(), reason="no shipped ntuple checkpoint")
def test_the_shipped_checkpoint_loads_weights_only_and_beats_random(tmp_path):
    config, w = N.load_checkpoint(N.DEFAULT_CHECKPOINT)
    assert w.dtype == np.float32 and config["training"].get("command", "").startswith("python -m experiments.train")
    data = bytearray(N.DEFAULT_CHECKPOINT.read_bytes())
    data[-10] ^= 0xFF
    (tmp_path / "x.npz").write_bytes(bytes(data))
    (tmp_path / "x.json").write_bytes(N.DEFAULT_CHECKPOINT.with_suffix(".json").read_bytes())
    with pytest.raises(CheckpointError, match="x.npz"):
        make_agent(f"learned:{tmp_path / 'x.npz'}")
    win_config, _ = N.load_checkpoint(N.DEFAULT_WIN_CHECKPOINT)  # the shipped win head: checked the same way
    assert win_config["head"] == "win" and make_agent("learned-win").win_weight == 20.0
    with pytest.raises(CheckpointError, match="win head"):
        make_agent(f"learned:{N.DEFAULT_WIN_CHECKPOINT}")
    agent = make_agent("learned")
    for seed in (1, 2):
        seats = [agent, RandomAgent(seed=seed)] if seed == 1 else [RandomAgent(seed=seed), agent]
        g = play_game(seats, seed=seed)
        me = seats.index(agent)
        assert me in g.winners()


# ------------------------------------------------------------------------------------------------ the trainer

def _train_args(run: Path, extra: list[str] | None = None) -> list[str]:
    """`python -m experiments.train`'s arguments for `learned` on the tiny config, seed 5; with --resume when the run
    folder holds a run (config.json)."""
    return ["learned", "--config", str(TINY), "--run", str(run), "--seed", "5", "--no-progress",
            *(["--resume"] if (run / "config.json").exists() else []), *(extra or [])]


def _train(run: Path, extra: list[str] | None = None) -> subprocess.Popen:
    """`python -m experiments.train learned` (`_train_args`) as a process of its own, for a test that kills it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "experiments.train", *_train_args(run, extra)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _train_here(run: Path, extra: list[str] | None = None) -> int:
    """The same command in this process (`experiments.train.cli`, what `python -m experiments.train` runs: a
    refusal is one line on stderr and exit status 2); its exit status."""
    from experiments import train

    return train.cli(_train_args(run, extra))


def test_a_tiny_run_lowers_its_loss_and_resumes_bit_identically_after_sigkill_on_two_threads(tmp_path):
    half = ["--set", "train.iterations=200"]  # the tiny config at half length: evaluations at 0, 100 and 200
    # the run never stopped, in this process (one interpreter start fewer); the killed one is a process of its own
    assert _train_here(tmp_path / "ref", half) == 0
    rows = list(csv.DictReader(open(tmp_path / "ref" / "eval.csv")))
    losses = [float(r["loss"]) for r in rows if r["loss"]]
    assert len(losses) >= 2 and losses[-1] < losses[0], losses
    want = N.load_checkpoint(tmp_path / "ref" / "model.npz")[1]
    assert np.abs(want).sum() > 0
    run = tmp_path / "killed"  # on two threads: the turns are split, the games and weights are the same
    kills = 0
    # Each attempt is killed as soon as the checkpoint of an iteration >= `at` is on disk (a point every run reaches;
    # the kill then lands wherever the run is: mid-turn, mid-evaluation, mid-checkpoint or mid-export), with at
    # least 50 of the 200 iterations still to play, so the run is surely still going.
    for at in (50, 100, 150):
        p = _train(run, [*half, "--set", "selfplay.threads=2"])
        while not any(int(f.stem[5:]) >= at for f in (run / "checkpoints").glob("step_*.json")):
            assert p.poll() is None, p.stdout.read().decode()
            time.sleep(0.01)
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills += 1
    p = _train(run, [*half, "--set", "selfplay.threads=2"])
    assert p.wait(timeout=300) == 0, p.stdout.read().decode()
    assert kills == 3
    got = N.load_checkpoint(run / "model.npz")[1]
    assert np.array_equal(got, want)
    assert json.loads((run / "summary.json").read_text())["iteration"] == 200


def test_a_run_with_temporal_coherence_resumes_exactly_and_learns_otherwise(tmp_path):
    """train.coherence: its accumulators are in the trainer's checkpoint (a run saved and resumed is the run never
    stopped), and they change what is learned."""
    from selfplay_runs import whole_and_resumed

    from experiments.common import load_config
    from experiments.evaluators.ntuple import settings
    from experiments.selfplay_command import build

    base = load_config(TINY)
    cfg = settings({**base, "train": {**base["train"], "coherence": True}, "expert": {"share": 0.0}})
    whole, second = whole_and_resumed(cfg, 5, tmp_path, 40)
    assert whole.games_done > 0 and whole.evaluator.coh[1].any() and whole.evaluator.coh_win[1].any()
    assert np.array_equal(whole.evaluator.w, second.evaluator.w)
    assert np.array_equal(whole.evaluator.coh, second.evaluator.coh)
    assert np.array_equal(whole.evaluator.wwin, second.evaluator.wwin)
    plain = build("learned", settings({**base, "expert": {"share": 0.0}}), 5, tmp_path / "plain", progress=False)
    for _ in range(80):
        plain.step()
        plain.iteration += 1
    assert plain.evaluator.coh is None and plain.games_done == whole.games_done
    assert not np.array_equal(plain.evaluator.w, whole.evaluator.w)


def test_a_layout_1_network_starts_a_layout_2_run_with_its_card_tables_at_zero(tmp_path):
    from experiments.common import load_config
    from experiments.evaluators.ntuple import settings
    from experiments.selfplay_command import build

    old = N.save_checkpoint(tmp_path / "old", _random_weights(3, layout=1))
    assert N.load_checkpoint(old)[0]["version"] == 1
    cfg = settings({**load_config(TINY), "train": {**load_config(TINY)["train"], "init": str(old)}})
    w = build("learned", cfg, 0, tmp_path / "run", progress=False).evaluator.w
    assert w.shape == (N.LAYOUT_WEIGHTS[2],) and np.array_equal(w[: N.CARD_FROM], _random_weights(3, layout=1))
    assert not w[N.CARD_FROM:].any()
    cfg["train"]["layout"] = 1
    assert build("learned", cfg, 0, tmp_path / "run", progress=False).evaluator.w.shape == (N.LAYOUT_WEIGHTS[1],)
    # a layout-2 network starts a layout-3 (multistage) run in every stage
    two = N.save_checkpoint(tmp_path / "two", _random_weights(4, layout=2))
    cfg = settings({**load_config(TINY), "train": {**load_config(TINY)["train"], "init": str(two), "layout": 3}})
    w = build("learned", cfg, 0, tmp_path / "run3", progress=False).evaluator.w
    assert w.shape == (N.LAYOUT_WEIGHTS[3],)
    assert all(np.array_equal(w[b * N.STAGE_WEIGHTS: (b + 1) * N.STAGE_WEIGHTS], _random_weights(4, layout=2))
               for b in range(N.STAGES))
    cfg["train"]["layout"], cfg["train"]["init"] = 2, str(N.save_checkpoint(tmp_path / "three", w))
    with pytest.raises(Exception, match="layout-3 network"):
        settings(cfg)
    # a layout-2 network starts a layout-4 run (the market tables at zero); a layout-4 one fits no other layout
    cfg = settings({**load_config(TINY), "train": {**load_config(TINY)["train"], "init": str(two), "layout": 4}})
    w = build("learned", cfg, 0, tmp_path / "run4", progress=False).evaluator.w
    assert w.shape == (N.LAYOUT_WEIGHTS[4],) and np.array_equal(w[: N.MARKET_FROM], _random_weights(4, layout=2))
    assert not w[N.MARKET_FROM:].any()
    for layout in (1, 2, 3):
        with pytest.raises(ValueError, match="layout-4 network"):
            N.grown_weights(w, layout)
    cfg["train"]["layout"], cfg["train"]["init"] = 3, str(N.save_checkpoint(tmp_path / "four", w))
    with pytest.raises(Exception, match="layout-4 network"):
        settings(cfg)


def test_a_tiny_layout_4_run_saves_a_network_that_learned_plays(tmp_path):
    """`--set train.layout=4` trains the market tables (they move from zero) and `learned:PATH` plays the result."""
    assert _train_here(tmp_path / "run", ["--set", "train.layout=4", "--set", "train.iterations=40",
                                          "--set", "eval.every=40", "--set", "expert.share=0"]) == 0
    config, w = N.load_checkpoint(tmp_path / "run" / "model.npz")
    assert config["version"] == 4 and config["shapes"][-2:] == list(N.MARKET_SHAPES)
    assert w.shape == (N.LAYOUT_WEIGHTS[4],) and w[N.MARKET_FROM:].any()
    agent = make_agent(f"learned:{tmp_path / 'run' / 'model.npz'}")
    g = play_game([agent, RandomAgent(seed=3)], seed=3)
    assert g.is_over and g.winners()


def test_bad_settings_are_one_line_errors(tmp_path, capsys):
    from experiments import train

    run = tmp_path / "run"
    for setting, words in (("train.lam=2", ["lam"]), (f"train.init={tmp_path / 'none.npz'}", ["init", "none.npz"]),
                           ("train.layout=5", ["layout"])):
        assert train.cli(["learned", "--config", str(TINY), "--set", setting, "--run", str(run)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and all(w in err[0] for w in words), err


def test_act_batch_plays_the_moves_act_plays_one_view_at_a_time():
    """The native batch (every game whose turn starts planned and ranked in one threaded call, `PlanRows`) answers,
    game for game and micro-action for micro-action, what `act` answers one view at a time; the search is not native
    (it samples worlds per decision) and falls back to the loop over `act`."""
    from agents.policy import BatchView, is_native

    w = _random_weights(3)
    assert is_native(N.NTupleAgent(weights=w)) and not is_native(N.NTupleSearchAgent(weights=w))
    for num_players, side, spirits in ((3, "B", True), (2, "A", False)):
        games = [Game(num_players, side, spirits, seed=40 + i) for i in range(4)]
        ones = [N.NTupleAgent(weights=w, beam=4, candidates=8) for _ in games]
        batched = N.NTupleAgent(weights=w, beam=4, candidates=8)
        batched.reset_batch(np.arange(len(games)))
        moves = 0
        while True:
            rows = np.array([i for i, g in enumerate(games) if not g.is_over], dtype=np.int64)
            if not rows.size:
                break
            views = [PlayerView(games[i], games[i].current_player) for i in rows]
            got = batched.act_batch(BatchView(np.stack([g.state for g in games]), rows, threads=2))
            want = [ones[i].act(v) for i, v in zip(rows, views)]
            assert got.tolist() == want, moves
            for i, a in zip(rows, want):
                games[i].step(a)
            moves += 1
        assert all(g.is_over for g in games) and moves > 50


def test_play_match_with_ntuple_is_the_games_act_plays():
    """`play_match(["learned", "greedy"], ...)` (ntuple natively batched) plays the games the same agents play one view
    at a time through `Game`, and the same games as through the per-view loop (`AgentPolicy`)."""
    from agents.match import agent_seed, play_match, policy_of
    from agents.policy import AgentPolicy

    assert isinstance(policy_of("learned"), N.NTupleAgent)
    res = play_match(["learned", "greedy"], games=8, seed=0, record=True)
    for r in res:
        i = r["game"]
        slots = [(k + i) % 2 for k in range(2)]
        agents = [make_agent(["learned", "greedy"][j], seed=agent_seed(0, i, j)) for j in slots]
        g = Game(2, "A", False, seed=r["seed"])
        for a in agents:
            a.reset()
        while not g.is_over:
            g.step(agents[g.current_player].act(PlayerView(g, g.current_player)))
        assert g.history == r["actions"] and r["winners"] == g.winners() and r["scores"] == g.scores(), i
    looped = play_match([AgentPolicy(lambda s: make_agent("learned", seed=s), name="learned"), "greedy"], games=8,
                        seed=0, record=True)
    assert looped == res


# ---- issue 37: fast self-play gives what the slow one gave --------------------------------------------------------

def test_candidates_values_and_a_tiny_run_are_what_they_were_before_fast_self_play():
    """tests/data/ntuple_golden.npz was written by tests/ntuple_golden.py on the code before the planner's memo,
    grid habitat distances and fused tuple sums: the same candidate plans, the same values (to 1e-9: since the
    candidates' tuple sums are shared by board, their weights add in another order), the same tiny run."""
    import ntuple_golden as G

    want = np.load(ROOT / "tests" / "data" / "ntuple_golden.npz")
    pos = G.positions()
    assert np.array_equal(pos, want["pos"])
    for K, beam in G.SETTINGS:
        vals, digests = G.candidates(pos, G.weights(), K, beam)
        assert list(digests) == list(want[f"plans_{K}_{beam}"]), (K, beam)
        old = want[f"values_{K}_{beam}"]
        assert np.array_equal(np.isnan(vals), np.isnan(old)), (K, beam)
        assert np.abs(np.nan_to_num(vals) - np.nan_to_num(old)).max() < 1e-9, (K, beam)
    w, counts = G.tiny_run()
    assert list(counts) == list(want["trainer_counts"]) and counts[2] > 0  # games ended, the search played
    assert list(w) == list(want["trainer_w"])


def test_the_candidates_shared_board_values_equal_the_full_evaluation_on_random_candidates():
    """`candidate_values` keeps each distinct board's tuple sums, each held card's per board, each board's market
    distances and each token prefix's state once for the candidates that share them: every candidate's value is
    still its total + `remaining` of its own afterstate, computed from scratch (to 1e-9; the weights add in another
    order), on random weights, on the golden fixture's positions (1-4 players, both sides, with and without
    Spirits), narrow and wide, and on a layout-3 network (the stage's block) and a layout-4 one (each board's market
    need rows kept per card)."""
    import ntuple_golden as G

    sc = np.zeros(8, np.int64)
    idx = np.empty(N.MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(N.NUM_LINEAR)
    checked = shared = 0
    for w, K, beam in ((_random_weights(8), 16, 3), (_random_weights(8), 128, 24), (_random_weights(8, 3), 16, 3),
                       (_random_weights(8, 4), 16, 3)):
        P = np.zeros((K, MAX_PLAN), np.int64)
        L = np.zeros(K, np.int64)
        V = np.zeros(K)
        for s in G.positions():
            n = N.candidate_values(s.copy(), w, DEFAULT_WEIGHTS, beam, P, L, np.zeros(K), V, np.zeros_like(s))
            if n == 0 or (V[0] == 0 and n > 1 and V[1] == -1):  # the Spirit choice: the planner's order
                continue
            p = s[S.CURRENT]
            boards = set()
            for k in range(n):
                a = s.copy()
                play_plan(a, P[k], L[k], True)
                full = seat_score(a, p, sc) + N.remaining(a, p, w, idx, feats, lin)
                assert abs(V[k] - full) < 1e-9, (k, V[k], full)
                boards.add(S.board_words(a, p))
                checked += 1
            shared += n - len(boards)
    assert checked > 400 and shared > 100  # many candidates did share a board


def test_the_fused_tuple_sum_is_the_full_evaluation_bit_for_bit():
    """`remaining` (linear part from the head features, tuple part summed as the board is read) equals the value of
    every selected index (`tuple_indices` + `value_of` over the full `afterstate_features`) on random afterstates."""
    from agents.afterstate import GLOBAL, NUM_FEATURES, SEAT, SEAT_HEAD, afterstate_features, afterstate_head_features

    w = _random_weights(5)
    w4 = _random_weights(5, 4)
    idx = np.empty(N.MAX_ACTIVE, dtype=np.int64)
    feats = np.empty(NUM_FEATURES, dtype=np.float32)
    full = np.empty(NUM_FEATURES, dtype=np.float32)
    lin = np.empty(N.NUM_LINEAR)
    head = np.concatenate([np.arange(GLOBAL)] + [np.arange(GLOBAL + j * SEAT, GLOBAL + j * SEAT + SEAT_HEAD)
                                                 for j in range(S.MAX_PLAYERS)])
    checked = 0
    for s, p in _positions(30, 11):
        afterstate_features(s, p, full)
        feats[:] = np.nan  # what the head features do not write stays as it was
        afterstate_head_features(s, p, feats)
        assert np.array_equal(feats[head], full[head])
        if N.no_turn_left(s, p):
            continue
        for weights in (w, np.ascontiguousarray(w[: N.CARD_FROM]), w4):
            k = N.tuple_indices(s, p, idx, weights.shape[0] > N.CARD_FROM, weights.shape[0] > N.MARKET_FROM)
            N.linear_features(s, p, feats, lin)
            assert N.remaining(s, p, weights, idx, feats, lin) == N.value_of(weights, idx, k, lin)
        checked += 1
    assert checked >= 15


def test_the_planners_shortcuts_are_the_slow_answers():
    """Habitat distances on the grid (`habitat_near`) are min(3, `habitat_distance`) and the beam's `best_first` is the
    prefix of the stable sort it replaced."""
    from agents.greedy import best_first, habitat_distance, habitat_near, need_grids, need_masks
    from harmonies_env.cards import FIRST_SPIRIT

    need = np.zeros((9, 4), dtype=np.int64)
    grid = np.zeros((9, 4), dtype=np.int64)
    seen = set()
    for s, _ in _positions(20, 13):
        side = int(s[S.SIDE])
        for q in range(int(s[S.NUM_PLAYERS])):
            bb = s[S.BITBOARD + 15 * q: S.BITBOARD + 15 * q + 15]
            cubes = int(s[S.CUBES + q])
            need_masks(bb, cubes, need)
            need_grids(side, bb, cubes, grid)
            for card in range(1, FIRST_SPIRIT):
                d = min(3, habitat_distance(side, cubes, card, need))
                assert habitat_near(side, cubes, card, grid) == d
                seen.add(d)
    assert seen == {0, 1, 2, 3}
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 200))
        k = min(n, int(rng.integers(1, 30)))
        vals = rng.integers(-4, 4, n).astype(float) if trial % 2 else rng.normal(size=n)  # ties, and none
        order = np.zeros(k, dtype=np.int64)
        best_first(vals, n, k, order, np.zeros(k))
        assert np.array_equal(order, np.argsort(-vals, kind="mergesort")[:k])


def test_candidates_reuse_the_other_seats_features_exactly():
    """`candidate_head_features` (the other seats' numbers from the turn's start, the market fixed) is
    `afterstate_head_features` of every candidate's afterstate, in 2-4 player games on both sides."""
    import ntuple_golden as G

    from agents.afterstate import NUM_FEATURES, afterstate_head_features, candidate_head_features
    from agents.greedy import plan_candidates
    from harmonies_env.actions import KEEP_SPIRIT

    others = np.empty(NUM_FEATURES, dtype=np.float32)
    got = np.empty(NUM_FEATURES, dtype=np.float32)
    want = np.empty(NUM_FEATURES, dtype=np.float32)
    plans = np.zeros((32, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(32, dtype=np.int64)
    vals = np.zeros(32)
    taken = 0
    for s in G.positions():
        p = int(s[S.CURRENT])
        n = plan_candidates(s, DEFAULT_WEIGHTS, 4, plans, lens, vals)
        if n == 0 or plans[0, 0] >= KEEP_SPIRIT:
            continue
        afterstate_head_features(s, p, others)
        for k in range(n):
            after = s.copy()
            play_plan(after, plans[k], lens[k], True)
            taken += int((after[S.MARKET: S.MARKET + S.MAX_MARKET] != s[S.MARKET: S.MARKET + S.MAX_MARKET]).any())
            got[:] = want[:] = 0.0
            candidate_head_features(after, p, got, others)
            afterstate_head_features(after, p, want)
            assert np.array_equal(got, want)
    assert taken > 10  # candidates that take a market card are covered
