"""Every numeric training setting's range, checked once at load (`experiments.common.check_config`, through which
every command's config and every `--set` goes): one line naming the key, the value and the range.

Why: the kinds alone let `selfplay.games=1e8` or `eval.seed=2**63` through to a MemoryError or an OverflowError
traceback minutes later. The upper ends keep the largest arrays a config makes to about a gigabyte (the self-play
buffers grow with games x max_decisions, the MLP's replay buffer with its size) and every seed and counter inside
int64 arithmetic. A setting used by several commands (`run.checkpoint_every`: iterations or PPO steps) has one range
wide enough for each. A list of numbers (`network.hidden`, `ppo.net_arch`) has the range of each entry. Tables
(`network.play`, `network.value`) are checked by the code that reads them. The table below is the documentation;
`tests/test_config.py` checks that every numeric setting of every command has a range holding its default.
"""
from __future__ import annotations

import math
from typing import Any

from agents.greedy import MAX_BEAM

#: Largest seed: seeds are offset by game indices and mixed in int64 (2**32 leaves room for any offset).
MAX_SEED = 2**32 - 1
#: Largest step or iteration count of any schedule (a run of 10**12 steps takes years).
MAX_STEPS = 10**12

#: "section.key" -> (lowest, highest), both allowed.
RANGES: dict[str, tuple[float, float]] = {
    # [selfplay]: the framework's self-play (learned, mlp) and PPO's pool
    "selfplay.games": (1, 2048), "selfplay.beam": (1, MAX_BEAM), "selfplay.candidates": (1, 1024),
    "selfplay.epsilon": (0, 1), "selfplay.greedy_games": (0, 1), "selfplay.max_decisions": (1, 1000),
    "selfplay.threads": (1, 256), "selfplay.workers": (0, 1024), "selfplay.sync_every": (1, 10**6),
    "selfplay.eval_beam": (1, MAX_BEAM),
    "selfplay.snapshot_every": (1, MAX_STEPS), "selfplay.players": (2, 4),
    # [train]
    "train.iterations": (1, 10**9), "train.schedule": (0, 10**9), "train.lam": (0, 1), "train.layout": (1, 4),
    "train.alpha_tuple": (0, 10), "train.alpha_linear": (0, 10), "train.alpha_final": (0, 10),
    "train.batch": (1, 65_536),
    "train.buffer": (1, 1_000_000), "train.min_buffer": (1, 1_000_000), "train.lr": (0, 1), "train.lr_final": (0, 1),
    "train.steps_per_iter": (1, 10_000), "train.weight_decay": (0, 1), "train.win_loss": (0, 100),
    # [eval]
    "eval.every": (0, 10**9), "eval.games": (0, 100_000), "eval.opponent_beam": (1, MAX_BEAM),
    "eval.seed": (0, MAX_SEED), "eval.beam": (1, MAX_BEAM), "eval.candidates": (1, 1024),
    "eval.mcts_every": (0, 10**9), "eval.mcts_games": (0, 10_000), "eval.mcts_iterations": (1, 10**6),
    # [expert]
    "expert.mix": (0, 1), "expert.share": (0, 1), "expert.reply_beam": (1, MAX_BEAM),
    "expert.reply_candidates": (1, 1024), "expert.root": (1, 1024), "expert.worlds": (1, 1024),
    # [run]
    "run.checkpoint_every": (1, MAX_STEPS), "run.keep": (1, 1000), "run.keep_checkpoints": (1, 1000),
    "run.threads": (1, 256), "run.engine_threads": (1, 256), "run.eval_episodes": (1, 100_000),
    "run.eval_every": (0, MAX_STEPS), "run.timesteps": (1, MAX_STEPS), "run.iterations": (0, 10**9),
    # [env]: the PPO commands' and RLlib's environments
    "env.greedy_beam": (1, MAX_BEAM), "env.max_steps": (1, 10**6), "env.n_envs": (1, 4096),
    "env.num_players": (1, 4), "env.players": (2, 4), "env.seat": (-1, 3),
    # [ppo]: MaskablePPO's keyword arguments and RLlib's PPO
    "ppo.batch_size": (1, 10**6), "ppo.n_steps": (1, 10**6), "ppo.n_epochs": (1, 1000), "ppo.num_epochs": (1, 1000),
    "ppo.learning_rate": (0, 1), "ppo.lr": (0, 1), "ppo.gamma": (0, 1), "ppo.gae_lambda": (0, 1),
    "ppo.clip_range": (0, 10), "ppo.clip_range_vf": (0, 10), "ppo.ent_coef": (0, 10), "ppo.vf_coef": (0, 1000),
    "ppo.max_grad_norm": (0, 10**6), "ppo.target_kl": (0, 1000), "ppo.stats_window_size": (1, 10**6),
    "ppo.minibatch_size": (1, 10**6), "ppo.train_batch_size": (1, 10**7), "ppo.net_arch": (1, 1 << 14),
    "ppo.hidden": (1, 4096),
    # [network]: the MLP's hidden widths
    "network.hidden": (1, 4096),
    # [rllib]
    "rllib.checkpoint_every": (1, 10**9), "rllib.envs_per_runner": (1, 1024), "rllib.gpus_per_learner": (0, 64),
    "rllib.iterations": (1, 10**9), "rllib.num_env_runners": (0, 1024), "rllib.num_learners": (0, 1024),
    # [tune]: tune-greedy
    "tune.beam": (1, MAX_BEAM), "tune.games": (1, 10**7), "tune.search_minutes": (0, 10**6),
}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_range(name: str, value: Any, what: str) -> str | None:
    """Why `value` of setting `name` ("section.key") is out of its range (one line starting with `what`), or None:
    in range, not a number (its kind is checked elsewhere), or a setting without a range (a table's)."""
    span = RANGES.get(name)
    if span is None:
        return None
    low, high = span
    for v in (value if isinstance(value, list) else [value]):
        if _number(v) and not (math.isfinite(v) and low <= v <= high):
            shown = f"{value!r}"[:60]
            return f"{what} = {shown} is outside its range {low:,}..{high:,}"
    return None


__all__ = ["MAX_SEED", "MAX_STEPS", "RANGES", "check_range"]
