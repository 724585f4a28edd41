"""The plan-choice action space, its training env and a plan-choosing PPO checkpoint (made by the test: none ships)."""
from __future__ import annotations

import numpy as np
import pytest
from test_agents import Checked

from agents import GreedyAgent, make_agent
from agents.greedy import DEFAULT_WEIGHTS, NUM_TERMS, evaluate, no_turn_left, potential_terms
from agents.plan_choice import (
    GLOBAL_FEATURES,
    PLAN_BEAM,
    PLAN_CHOICES,
    PLAN_FEATURES,
    PLAN_OBS_SIZE,
    describe,
)
from harmonies_apps.tournament import play_game
from harmonies_env import Game, determinize
from harmonies_env import state as S
from harmonies_env.batch import episode_seed
from harmonies_env.scoring import CATEGORIES, NUM_CATEGORIES


def _midgame(seed: int, actions: int) -> Game:
    g = Game(2, "A", False, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(actions):
        if g.is_over:
            break
        legal = g.legal_actions()
        g.step(int(rng.choice(legal)))
    return g


def _to_turn_start(g: Game) -> None:
    """Random legal actions until a turn begins (nothing taken yet this turn)."""
    rng = np.random.default_rng(0)
    while g.field("took_tokens") or g.field("took_card"):
        g.step(int(rng.choice(g.legal_actions())))


def test_evaluate_is_score_plus_weighted_potential_terms():
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    t = np.zeros(NUM_TERMS, dtype=np.float64)
    seen = set()
    for seed in range(30):
        g = _midgame(seed, 10 + 3 * seed)
        for p in range(2):
            potential_terms(g.state, p, t)
            v = evaluate(g.state, p, DEFAULT_WEIGHTS, sc)
            last = no_turn_left(g.state, p)  # on a last turn only points count
            seen.add(bool(last))
            assert v == pytest.approx(g.scores()[p]["total"] + (0.0 if last else float(DEFAULT_WEIGHTS @ t)), abs=1e-9)
            assert t[9] == 23 - int((g.field("stack")[p][:23] > 0).sum())  # empty cells
    assert seen == {False, True}  # both mid-game and last-turn positions were checked


def test_plan_zero_is_the_greedy_plan_and_features_describe_each_plan():
    g = _midgame(3, 25)
    _to_turn_start(g)
    obs, mask, plans = describe(g)
    assert obs.shape == (PLAN_OBS_SIZE,) and obs.dtype == np.float32
    assert mask.sum() == len(plans) > 1
    greedy = GreedyAgent(beam=PLAN_BEAM)  # the candidates come from the wider planner
    from harmonies_env.view import PlayerView

    view = PlayerView(g, g.current_player)
    first = [greedy.act(view)]
    assert plans[0][0] == first[0]
    p = g.current_player
    before = g.scores()[p]
    for k, plan in enumerate(plans):
        h = g.clone()
        for a in plan[:-1]:  # everything but END_TURN: the features describe the position before the refill
            h.step(a)
        after = h.scores()[p]
        o = GLOBAL_FEATURES + k * PLAN_FEATURES
        gains = obs[o + 1: o + 1 + NUM_CATEGORIES]
        for c, name in enumerate(CATEGORIES):
            assert gains[c] == pytest.approx((after[name] - before[name]) / 10.0, abs=1e-6), (k, name)
        assert obs[o + PLAN_FEATURES - 1] == pytest.approx(k / PLAN_CHOICES)
    assert obs[GLOBAL_FEATURES] == 0.0  # plan 0 is the best by the planner's value
    assert (obs[GLOBAL_FEATURES + len(plans) * PLAN_FEATURES:] == 0).all()  # absent candidates are zeros


def test_plan_observation_depends_only_on_what_the_player_sees():
    g = _midgame(8, 31)
    _to_turn_start(g)
    p = g.current_player
    obs, mask, plans = describe(g)
    for seed in (1, 2, 3):
        h = determinize(g, p, seed)
        assert not np.array_equal(S.field(h.state, "deck"), S.field(g.state, "deck")) or seed > 1
        o2, m2, p2 = describe(h)
        np.testing.assert_array_equal(obs, o2)
        np.testing.assert_array_equal(mask, m2)
        assert plans == p2


def test_training_env_plan_zero_replays_greedy_vs_greedy_and_is_seeded():
    pytest.importorskip("stable_baselines3")
    from agents.plan_env import PlanChoiceVecEnv

    env = PlanChoiceVecEnv(3, seed=40)
    obs = env.reset()
    assert obs.shape == (3, PLAN_OBS_SIZE) and env.action_masks().shape == (3, PLAN_CHOICES)
    results: dict[int, dict] = {}
    trace = [obs.copy()]
    while len(results) < 3:
        obs, rewards, dones, infos = env.step(np.zeros(3, dtype=np.int64))
        trace.append(obs.copy())
        for r in np.flatnonzero(dones):
            if r not in results:
                results[r] = infos[r]
                assert rewards[r] == pytest.approx(infos[r]["won"] + 0.02 * (infos[r]["score"]
                                                                             - infos[r]["opponent_score"]))
    for r in range(3):  # episode 0 of row r is the game with seed 40 + r: plan 0 = the beam-PLAN_BEAM planner
        seed = int(episode_seed(40 + r, 0))
        seat = (seed >> 17) % 2
        agents = [GreedyAgent(), GreedyAgent()]
        agents[seat] = GreedyAgent(beam=PLAN_BEAM)
        game = play_game(agents, 2, "A", False, seed=seed)
        totals = [sc["total"] for sc in game.scores()]
        assert results[r]["score"] == totals[seat] and results[r]["opponent_score"] == totals[1 - seat]
    env2 = PlanChoiceVecEnv(3, seed=40, num_threads=2)
    o = env2.reset()
    np.testing.assert_array_equal(o, trace[0])
    np.testing.assert_array_equal(env2.step(np.zeros(3, dtype=np.int64))[0], trace[1])
    with pytest.raises(ValueError, match="not a candidate"):
        env2.step(np.array([0, PLAN_CHOICES, 0]))
    with pytest.raises(ValueError, match="num_players"):
        PlanChoiceVecEnv(2, num_players=1)


def test_a_plan_choosing_checkpoint_plays_legal_deterministic_games(plan_zip):
    agent = make_agent(f"ppo:{plan_zip}", seed=0)
    assert agent.kind == "plan"
    checked = Checked(agent)
    g1 = play_game([checked, GreedyAgent()], 2, "A", False, seed=5)
    g2 = play_game([make_agent(f"ppo:{plan_zip}"), GreedyAgent()], 2, "A", False, seed=5)
    assert g1.is_over and checked.calls > 20
    assert g1.record()["actions"] == g2.record()["actions"]
    g3 = play_game([GreedyAgent(), Checked(make_agent(f"ppo:{plan_zip}"))], 2, "B", True, seed=6)  # other seat, variant
    assert g3.is_over


def test_plan_ppo_and_distill_mcts_commands_run_and_resume(tmp_path):
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    import json

    from experiments import train

    def summary(run) -> dict:
        return json.loads((run / "summary.json").read_text())

    small = ["--no-progress", "--set", "env.n_envs=8", "--set", "ppo.n_steps=8", "--set", "ppo.batch_size=32",
             "--set", "run.eval_episodes=8"]
    run = tmp_path / "plan"
    assert train.main(["plan-ppo", "--run", str(run), "--set", "run.timesteps=128", "--set", "run.eval_every=64",
                       "--set", "plan.warm_start=64", *small]) == 0
    out = summary(run)
    assert out["timesteps"] >= 128 and 0.0 <= out["best_win_rate"] <= 1.0 and "warm_start_agreement" in out
    assert (run / "model.pt").exists() and (run / "best.pt").exists() and (run / "best.json").exists()
    assert not list(run.rglob("*.zip"))
    assert make_agent(f"ppo:{run / 'best.pt'}").kind == "plan"
    assert train.main(["plan-ppo", "--run", str(run), "--resume", "--set", "run.timesteps=192", *small]) == 0
    assert summary(run)["timesteps"] >= out["timesteps"] + 64
    bc = tmp_path / "bc"
    assert train.main(["distill-mcts", "--run", str(bc), "--no-progress", "--set", "collect.games=2",
                       "--set", "collect.iterations=8", "--set", "fit.epochs=2", "--set", "ppo.net_arch=[16]",
                       "--set", "fit.eval_games=4"]) == 0
    t = summary(bc)
    assert t["collect"]["games"] == 2 and t["decisions"] > 5 and 0.0 <= t["held_out_agreement"] <= 1.0
    assert 0.0 <= t["eval_vs_greedy"]["win_rate"] <= 1.0
    assert make_agent(f"ppo:{bc / 'model.pt'}").kind == "plan"
    # fit again on the recorded searches only (no games), then continue it with PPO
    bc2 = tmp_path / "bc2"
    assert train.main(["distill-mcts", "--run", str(bc2), "--no-progress",
                       "--set", f'collect.data=["{bc / "mcts.npz"}"]', "--set", "fit.epochs=1",
                       "--set", "ppo.net_arch=[16]"]) == 0
    assert "collect" not in summary(bc2) and summary(bc2)["decisions"] == t["decisions"]
    run2 = tmp_path / "plan2"
    assert train.main(["plan-ppo", "--run", str(run2), "--set", "run.timesteps=64", "--set", "run.eval_every=0",
                       "--set", f'run.init="{bc2 / "model.pt"}"', "--set", "ppo.net_arch=[16]", *small]) == 0
    assert summary(run2)["timesteps"] >= 64
