"""The self-play learner framework (experiments/selfplay.py): a user's own evaluator, exactly as docs/training.md
shows it ("Your own evaluator"), trains through it, learns and resumes exactly; the generic loop's helpers."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def doc_example() -> str:
    """The python block of docs/training.md's "Your own evaluator" section."""
    text = (ROOT / "docs" / "training.md").read_text()
    part = text[text.index("### Your own evaluator"):]
    start = part.index("```python\n") + len("```python\n")
    return part[start: part.index("\n```", start)] + "\n"


def test_the_documented_torch_evaluator_learns_through_the_framework_and_resumes(tmp_path):
    from agents.evaluator import Evaluator, load_weights
    from experiments.common import latest_checkpoint
    from experiments.selfplay import Learner

    space: dict = {"__name__": "__docs__"}
    exec(compile(doc_example(), "docs/training.md:Your own evaluator", "exec"), space)
    learner, make, cfg = space["learner"], space["TorchEvaluator"], space["cfg"]
    assert isinstance(learner.evaluator, Evaluator)
    fresh = make(cfg).get_weights()
    trained = learner.evaluator.get_weights()
    assert learner.games_done > 0 and np.isfinite(learner.loss_ema)
    assert any(not np.array_equal(fresh[k], trained[k]) for k in fresh)  # the finished games taught it

    def run(folder: Path, start: int, stop: int, resume: bool) -> Learner:
        t = Learner(cfg, seed=0, run=folder, make=make, progress=False)
        if resume:
            t.load(*latest_checkpoint(folder / "checkpoints"))
        for t.iteration in range(start, stop):
            t.step()
        t.iteration = stop
        t.save()
        return t

    run(tmp_path / "split", 0, 30, False)
    resumed = run(tmp_path / "split", 30, 60, True)
    whole = resumed.evaluator.get_weights()
    assert all(np.array_equal(whole[k], trained[k]) for k in trained)  # saved and resumed: the run never stopped
    config, arrays = load_weights(tmp_path / "split" / "model.npz")  # the agent's checkpoint, SHA-256 checked
    assert config["play"] == {"beam": 2, "candidates": 4}
    assert all(np.array_equal(arrays[k], trained[k]) for k in trained)


def test_td_targets_are_the_lambda_returns():
    from agents.evaluator import Finished, td_targets
    from harmonies_env import state as S

    afters = np.zeros((3, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    for a in afters:
        S.init_state(a, 2, 0, 0, 7)  # empty boards: every own total is 0
    g = Finished(afters, np.array([0, 1, 0]), np.array([5.0, 7.0, 3.0]), np.full(3, np.nan), 3,
                 np.array([10, 20, 0, 0]), np.array([0, 1, 0, 0]))
    got = td_targets(g, 0.5)
    assert got[2] == 10.0 and got[1] == 20.0  # each seat's last: its final total minus its total there
    assert got[0] == 0.5 * 10.0 + 0.5 * 3.0  # lam x the next one's target + (1 - lam) x its prediction
    assert np.array_equal(td_targets(g, 1.0), [10.0, 20.0, 10.0])


def test_config_sections_are_checked_once_with_one_line_errors():
    from experiments.common import ConfigError
    from experiments.selfplay import SelfPlaySection, settings, typed

    cfg = settings({"selfplay": {"games": 3}})
    sp = typed(SelfPlaySection, cfg["selfplay"], "selfplay")
    assert sp.games == 3 and sp.players == (2,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sp.games = 4  # type: ignore[misc]
    for bad, words in (({"selfplay": {"games": 0}}, "selfplay.games = 0 is outside its range"),
                       ({"train": {"lam": 2}}, "train.lam = 2 is outside its range 0..1"),
                       ({"selfplay": {"nope": 1}}, "nope"), ({"nope": {}}, "nope")):
        with pytest.raises(ConfigError) as e:
            settings(bad)
        assert words in str(e.value) and "\n" not in str(e.value)


def test_the_fused_fast_path_plays_the_games_of_the_generic_loop(tmp_path):
    """The n-tuple evaluator's fused `decide_rows` is an optional hook: with the base class's default (the
    framework's own turn, `decide_generic`, valuing through `values`) the tiny run plays the same games and learns
    the same weights."""
    from agents.evaluator import Evaluator
    from experiments.common import read_toml
    from experiments.evaluators.ntuple import NTupleEvaluator, make, settings
    from experiments.selfplay import Learner

    class Plain(NTupleEvaluator):  # the n-tuple evaluator without its fused path
        decide_rows = Evaluator.decide_rows

    base = read_toml(ROOT / "experiments" / "configs" / "learned_tiny.toml")
    cfg = settings({**base, "expert": {"share": 0.0}, "selfplay": {**base["selfplay"], "games": 3}})
    fused = Learner(cfg, 2, None, make, progress=False)
    plain = Learner(cfg, 2, None, Plain, progress=False)
    assert type(fused.evaluator).decide_rows is not Evaluator.decide_rows
    for it in range(50):
        for t in (fused, plain):
            t.iteration = it
            t.step()
        assert np.array_equal(fused.states, plain.states)
    assert fused.games_done > 0 and fused.decisions == plain.decisions
    assert np.array_equal(fused.evaluator.w, plain.evaluator.w)


def test_a_misspelled_hook_is_an_error_and_every_hook_has_a_default():
    """The interface is declared: a method named like a hook that is none is refused when the class is defined, an
    evaluator missing a required method cannot be built, and one defining only those has every hook (no-ops)."""
    from agents.evaluator import HOOKS, Context, Evaluator
    from experiments.selfplay import Learner, settings

    with pytest.raises(TypeError, match="after_iterations is no evaluator hook .did you mean after_iteration"):
        type("Typo", (Evaluator,), {"after_iterations": lambda self, ctx: 0.0})
    with pytest.raises(TypeError, match="decide_turn is no evaluator hook"):
        type("Typo", (Evaluator,), {"decide_turn": lambda self: None})
    with pytest.raises(TypeError, match="abstract"):
        type("Missing", (Evaluator,), {})()

    class Zero(Evaluator):
        def __init__(self, cfg, learns=True, seed=0):
            pass

        def values(self, afters, movers, out):
            out[:] = 0.0

        def learn(self, game, progress):
            return float(game.m)

        def get_weights(self):
            return {}

        def set_weights(self, weights):
            pass

        def arrays(self):
            return {}

        def load_arrays(self, arrays, where):
            pass

        def _helper(self):  # a private helper is no hook
            pass

    cfg = settings({"selfplay": {"games": 2, "beam": 1, "candidates": 2}, "train": {"iterations": 5}})
    learner = Learner(cfg, 0, None, Zero, progress=False)
    ctx = learner.context()
    assert isinstance(ctx, Context) and ctx.rng is learner.rng and ctx.states is learner.states
    ev = learner.evaluator
    assert all(getattr(type(ev), h) is getattr(Evaluator, h) for h in HOOKS)
    assert np.isnan(ev.after_iteration(ctx)) and np.isnan(ev.expert_turn(ctx, 0))
    assert ev.metrics() == {} and ev.meta() == {} and ev.extra_evaluation(ctx) == {}
    for learner.iteration in range(5):
        learner.step()
    assert learner.decisions > 0
    with pytest.raises(TypeError, match="not an agents.evaluator.Evaluator"):
        Learner(cfg, 0, None, lambda cfg, learns, seed: object(), progress=False)


def test_the_mlp_trainer_evaluates_through_the_one_evaluation(tmp_path):
    """`mlp` trains through the framework (its evaluator, `experiments.evaluators.mlp`); its periodic evaluation is
    `selfplay.vs_greedy`: the games `python -m experiments.eval_mlp` plays."""
    from agents.mlp import ValueNet
    from experiments.common import read_toml
    from experiments.eval_mlp import play_vs_greedy
    from experiments.evaluators.mlp import settings
    from experiments.selfplay_command import build

    base = read_toml(ROOT / "experiments" / "configs" / "mlp_tiny.toml")
    cfg = settings({**base, "eval": {**base["eval"], "games": 2, "beam": 2, "candidates": 2}})
    tr = build("mlp", cfg, seed=0, run=tmp_path, progress=False)
    ev = tr.evaluator
    net = ValueNet(ev.netcfg, {k: v.clone() for k, v in ev.net.state_dict().items()})
    want = play_vs_greedy(net, 2, cfg["eval"]["seed"], ev.netcfg["value"], beam=2, candidates=2,
                          diverse=cfg["eval"]["diverse"], opponent_beam=cfg["eval"]["opponent_beam"], threads=1)
    got = tr.evaluate()
    assert {k: got[k] for k in ("win_rate", "mean_score", "greedy_score")} == \
        {k: round(want[k], 4) for k in ("win_rate", "mean_score", "greedy_score")}
