"""The plan-choice action space, its training env and the shipped plan-choosing PPO checkpoint."""
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


def test_the_shipped_checkpoint_plays_legal_deterministic_games():
    pytest.importorskip("sb3_contrib")
    agent = make_agent("ppo", seed=0)
    assert agent.kind == "plan"
    checked = Checked(agent)
    g1 = play_game([checked, GreedyAgent()], 2, "A", False, seed=5)
    g2 = play_game([make_agent("ppo"), GreedyAgent()], 2, "A", False, seed=5)
    assert g1.is_over and checked.calls > 20
    assert g1.record()["actions"] == g2.record()["actions"]
    g3 = play_game([GreedyAgent(), Checked(make_agent("ppo"))], 2, "B", True, seed=6)  # other seat and variant
    assert g3.is_over


def test_train_plan_ppo_and_distill_scripts_run_and_resume(tmp_path):
    pytest.importorskip("sb3_contrib")
    from experiments import distill_mcts, train_plan_ppo

    out = train_plan_ppo.main(["--timesteps", "128", "--n-envs", "8", "--n-steps", "8", "--batch-size", "32",
                               "--warm-start", "64", "--eval-freq", "64", "--eval-games", "8",
                               "--checkpoint-dir", str(tmp_path / "ck"),
                               "--logdir", "", "--no-progress"])
    assert out["timesteps"] >= 128 and 0.0 <= out["best_win_rate"] <= 1.0
    assert (tmp_path / "ck" / "last.zip").exists() and (tmp_path / "ck" / "best.zip").exists()
    again = train_plan_ppo.main(["--resume", str(tmp_path / "ck" / "last.zip"), "--timesteps", "64", "--n-envs", "8",
                                 "--n-steps", "8", "--batch-size", "32", "--eval-freq", "0", "--eval-games", "8",
                                 "--checkpoint-dir", str(tmp_path / "ck2"), "--logdir", "", "--no-progress"])
    assert again["timesteps"] >= out["timesteps"] + 64
    data = tmp_path / "m.npz"
    c = distill_mcts.main(["collect", "--games", "2", "--iterations", "8", "--out", str(data), "--no-progress"])
    assert c["games"] == 2 and c["decisions"] > 5
    t = distill_mcts.main(["train", "--data", str(data), "--out", str(tmp_path / "bc.zip"), "--epochs", "2",
                           "--net", "16", "--eval-games", "4"])
    assert (tmp_path / "bc.zip").exists() and 0.0 <= t["held_out_agreement"] <= 1.0
    assert make_agent(f"ppo:{tmp_path / 'bc.zip'}").kind == "plan"
