"""Expert iteration's TreeStrap-style targets (`[expert] targets = "all"`, experiments/evaluators/ntuple.py): every
distinct root candidate of a search is trained towards its own search mean; "chosen" (the default) is the golden
fixture's run (tests/test_ntuple.py) and stays bit-identical."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from ntuple_reference import reference_remaining

from agents import ntuple as N
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN
from agents.ntuple.search import afterstate_key
from experiments.common import ConfigError, load_config
from experiments.evaluators.ntuple import settings
from experiments.selfplay_command import build
from harmonies_env import state as S
from harmonies_env.batch import play_plan
from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

TINY = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "learned_tiny.toml"


def _cfg(**expert) -> dict:
    base = load_config(TINY)
    return settings({**base, "expert": {**base["expert"], **expert}})


def _search_means(s: np.ndarray, w: np.ndarray, beam: int, K: int, ex: dict, rng: np.random.Generator):
    """The search of one decision written out plainly: the candidates (`candidate_values`), the best `root` distinct
    positions among them (checked by key here: the first of each key in value order), `worlds` worlds drawn from rng
    as the trainer draws them, and each root candidate's mean of `search_values`: (afterstates, means)."""
    plans = np.zeros((K, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(K, dtype=np.int64)
    pvals, values = np.zeros(K), np.zeros(K)
    after = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    n = N.candidate_values(s.copy(), w, DEFAULT_WEIGHTS, beam, plans, lens, pvals, values, after)
    p = int(s[S.CURRENT])
    root, keys = [], set()
    for o in np.argsort(-values[:n], kind="stable"):
        a = s.copy()
        play_plan(a, plans[o], lens[o], True)
        if afterstate_key(a, p) not in keys and len(root) < ex["root"]:
            keys.add(afterstate_key(a, p))
            root.append(int(o))
    W, cards = ex["worlds"], int(s[S.DECK_COUNT])
    worlds = np.repeat(s[None], W, axis=0)
    for j in range(W):
        S.set_rng(worlds[j], int(rng.integers(1, 2**62)))
        deck = S.field(worlds[j], "deck")
        deck[:cards] = rng.permutation(deck[:cards])
    out = np.zeros(W)
    afters, means = [], []
    for o in root:
        N.search_values(worlds.copy(), np.zeros(W, dtype=np.int64), plans[o:o + 1], lens[o:o + 1], w,
                        DEFAULT_WEIGHTS, ex["reply_beam"], ex["reply_candidates"], out)
        a = s.copy()
        play_plan(a, plans[o], lens[o], True)
        afters.append(a)
        means.append(out.mean())
    return afters, np.array(means)


def test_all_targets_train_every_distinct_root_candidate_towards_its_search_mean(tmp_path):
    cfg = _cfg(share=1.0, targets="all", root=6, worlds=2)
    ex = cfg["expert"]
    tr = build("learned", cfg, 3, tmp_path / "run", progress=False)
    ev = tr.evaluator
    for _ in range(12):  # some learning first, so the network's values differ between candidates
        tr.step()
        tr.iteration += 1
        assert ev.root_rows == []  # learnt in the iteration that searched them
    assert tr.searched > 0
    checked = 0
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    for r in range(tr.G):
        s = tr.states[r]
        if s[S.GAME_OVER] or tr.kinds[r, int(s[S.CURRENT])]:
            continue
        start, rng, p = s.copy(), copy.deepcopy(tr.rng), int(s[S.CURRENT])
        sp = cfg["selfplay"]
        afters, means = _search_means(start, tr.evaluator.w, int(sp["beam"]), int(sp["candidates"]), ex, rng)
        target = ev.expert_turn(tr.context(), r)
        if np.isnan(target):  # a Spirit choice or a single candidate: nothing searched, nothing recorded
            assert ev.root_rows == []
            continue
        c = int(np.argmax(means))
        assert np.array_equal(tr.buf.after[r], afters[c])
        assert target == pytest.approx(means[c] - seat_score(afters[c], p, sc))
        rows = ev.root_rows
        assert len(rows) == len(afters) - 1  # every root candidate but the chosen one (its target: learn_game's)
        keys = {afterstate_key(a, p) for a in afters}
        assert len(keys) == len(afters)  # no repeated position among the trained root candidates
        others = [i for i in range(len(afters)) if i != c]
        for (a, q, t), i in zip(rows, others):
            assert q == p and np.array_equal(a, afters[i])
            assert t == pytest.approx(means[i] - seat_score(a, p, sc))
        # each row alone moves its afterstate's value by the chosen one's step sizes towards its target
        a_tuple, a_linear = ev._alphas(tr.progress_fraction())
        w0 = tr.evaluator.w.copy()
        for a, q, t in rows:
            if N.no_turn_left(a, q):
                continue
            ev.root_rows = [(a, q, t)]
            tr.evaluator.w[...] = w0
            before = reference_remaining(a, q, tr.evaluator.w)
            ev.after_iteration(tr.context())
            after = reference_remaining(a, q, tr.evaluator.w)
            assert after - t == pytest.approx((before - t) * (1 - a_tuple - a_linear), abs=1e-2)
            checked += 1
        tr.evaluator.w[...] = w0
        ev.root_rows = []
    assert checked >= 3


def test_targets_is_checked_and_all_refuses_workers():
    assert _cfg()["expert"]["targets"] == "chosen"
    with pytest.raises(ConfigError, match=r'^\[expert\] targets must be "chosen" or "all", got \'every\'$'):
        _cfg(targets="every")
    base = load_config(TINY)
    with pytest.raises(ConfigError, match=r"^\[expert\] targets = \"all\" needs selfplay.workers = 0"):
        settings({**base, "expert": {**base["expert"], "targets": "all"},
                  "selfplay": {**base["selfplay"], "workers": 2}})
    settings({**base, "expert": {**base["expert"], "targets": "all", "share": 0.0},
              "selfplay": {**base["selfplay"], "workers": 2}})  # no search: nothing to learn in the driver


def test_a_run_with_all_targets_resumes_exactly_and_learns_otherwise(tmp_path):
    """The root candidates are learnt in the iteration that searched them, so a checkpoint holds nothing pending: a
    run saved and resumed is the run never stopped; and their targets change what is learned."""
    from selfplay_runs import whole_and_resumed

    whole, second = whole_and_resumed(_cfg(share=0.5, targets="all", root=4), 7, tmp_path, 20)
    w, w2 = whole.evaluator, second.evaluator
    assert whole.searched > 0 and np.array_equal(w.w, w2.w) and np.array_equal(w.wwin, w2.wwin)
    chosen = build("learned", _cfg(share=0.5, targets="chosen", root=4), 7, tmp_path / "chosen", progress=False)
    for _ in range(40):
        chosen.step()
        chosen.iteration += 1
    assert chosen.searched > 0 and not np.array_equal(chosen.evaluator.w, whole.evaluator.w)
