"""`plan-ppo`: MaskablePPO choosing among the greedy planner's best whole-turn plans, against the greedy agent
(how the plan-choosing `PPOAgent` checkpoint that once shipped was trained; play a run's with `ppo:PATH`).

The learner plays one seat of 2-4 player games against `GreedyAgent`; at each of its turns it picks one of the
planner's `PLAN_CHOICES` best plans (`agents.plan_choice`), so it can only beat greedy by choosing better than
the planner's own heuristic. All games are stepped in one numba call (`agents.plan_env.PlanChoiceVecEnv`,
`[run] engine_threads` cores). Evaluations play `[run] eval_episodes` fixed-seed games against greedy (win rate
with draws counting 1/2, scores, margin); the best policy so far is kept as `run/best.pt` (+ `best.json`, weights-only).
`[plan] warm_start = N` first fits a fresh policy to the planner's own first choice on N decisions
(cross-entropy), so PPO starts from the candidates' best plan instead of a uniform pick. `[run] init = PATH`
starts from a checkpoint instead (e.g. one fitted by `distill-mcts`).

    python -m experiments.train plan-ppo --set plan.warm_start=8192 --set run.engine_threads=2
    python -m experiments.train plan-ppo --set run.init=runs/distill-mcts-s0/model.pt
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .common import ConfigError, section
from .runner import RUN_DEFAULTS, PPOTask, RunArgs, export_policy, train_ppo

PLAN_ENV = {"n_envs": 256, "players": 2, "side": "A", "spirits": False, "margin_reward": 0.02}
PLAN = {"warm_start": 0}


def warm_start(model: Any, env: Any, decisions: int, epochs: int = 4, batch_size: int = 512,
               lr: float = 1e-3) -> float:
    """Fit the policy to choose plan 0 (the planner's own best) on `decisions` observations of `env`.

    Why: a fresh policy picks uniformly among the candidates and spends most of a run learning that plan 0 is
    usually right. Returns the final agreement with plan 0 on the collected observations.
    """
    import torch

    obs, masks = [], []
    o = env.reset()
    zeros = np.zeros(env.num_envs, dtype=np.int64)
    while len(obs) * env.num_envs < decisions:
        obs.append(o.copy())
        masks.append(env.action_masks().copy())
        o, _, _, _ = env.step(zeros)
    obs_t = torch.as_tensor(np.concatenate(obs))
    mask = np.concatenate(masks)
    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    n = len(obs_t)
    for _ in range(epochs):
        for idx in np.array_split(rng.permutation(n), max(1, n // batch_size)):
            logits = policy.get_distribution(obs_t[idx], action_masks=mask[idx]).distribution.logits
            loss = -torch.log_softmax(logits, dim=1)[:, 0].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        logits = policy.get_distribution(obs_t, action_masks=mask).distribution.logits
        return float((logits.argmax(dim=1) == 0).float().mean())


def make_env(env: dict[str, Any], n: int, seed: int, threads: int) -> Any:
    """A PlanChoiceVecEnv of n games from the [env] section."""
    from agents.plan_env import PlanChoiceVecEnv

    return PlanChoiceVecEnv(n, num_players=env["players"], side=env["side"], spirits=env["spirits"],
                            margin_reward=env["margin_reward"], num_threads=threads, seed=seed)


def eval_env(algo: str, config: dict[str, Any], n: int, device: str = "cpu") -> Any:
    """The evaluation env of a plan-ppo run with this config: n games against greedy."""
    run = section(config, "run", RUN_DEFAULTS)
    return make_env(section(config, "env", PLAN_ENV), n, 0, int(run["engine_threads"]))


def train(args: RunArgs) -> dict[str, Any]:
    """Train (or resume) a plan-choice run; see the module docstring."""
    env = section(args.config, "env", PLAN_ENV)
    plan = section(args.config, "plan", PLAN)
    run = section(args.config, "run", RUN_DEFAULTS)
    if int(env["n_envs"]) < 1:
        raise ConfigError(f"[env] n_envs must be positive, got {env['n_envs']!r}")
    threads = int(run["engine_threads"])
    best = {"win_rate": -1.0}

    def state() -> dict:
        return {"best_win_rate": best["win_rate"]}

    def restore(s: dict) -> None:
        best["win_rate"] = float(s.get("best_win_rate", -1.0))

    def on_eval(model: Any, row: dict) -> None:
        if row["win_rate"] > best["win_rate"]:
            best["win_rate"] = row["win_rate"]
            export_policy(model, args.run / "best.pt")

    def before_learn(model: Any) -> dict:
        if not plan["warm_start"]:
            return {}
        agree = warm_start(model, model.get_env(), int(plan["warm_start"]))
        print(f"warm start: the policy picks the planner's first plan in {agree:.3f} of "
              f"{plan['warm_start']} decisions", flush=True)
        return {"warm_start_agreement": agree}

    task = PPOTask("plan-ppo", lambda seed: make_env(env, int(env["n_envs"]), seed, threads),
                   lambda: make_env(env, int(run["eval_episodes"]), 0, threads), state=state, restore=restore,
                   before_learn=before_learn, on_eval=on_eval)
    return train_ppo(args, task)
