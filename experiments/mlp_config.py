"""The MLP trainer's settings (`experiments.train_mlp`, the command `mlp`): every setting with its default, the
schema the CLI validates against, which settings a resumed run may change, and the network's JSON config."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.afterstate import FEATURE_VERSION, NUM_FEATURES
from agents.mlp import DEFAULT_CONFIG, check_config

from .common import Setting, apply_overrides
from .common import check_config as check_settings
from .common import load_config as _load_config

#: Every setting, with its default (its kind is the default's); a config file (TOML, sections as here) or --set
#: overrides them.
DEFAULTS: dict[str, dict[str, Any]] = {
    "network": {"hidden": [256, 256], "value": dict(DEFAULT_CONFIG["value"]),
                "play": dict(DEFAULT_CONFIG["play"])},  # how `mlp` proposes candidates to it (its JSON)
    "selfplay": {
        "games": 128,            # games played at once (one decision each per iteration)
        "players": [2],          # drawn per game
        "sides": ["A"],          # drawn per game
        "spirits": [False],      # drawn per game
        "beam": 48,              # candidate planner beam while training
        "candidates": 24,        # candidates per decision
        "diverse": False,        # candidates cover every central space and card choice (a beam per space: `beam` is
                                 # then per space; `greedy.plan_candidates`), not just the plain beam's best plans
        "epsilon": 0.05,         # chance of a uniformly random candidate
        "greedy_games": 0.2,     # fraction of games with one seat played by the heuristic (planner's first plan)
        "max_decisions": 160,    # decisions kept per game (a longer game's extra ones are dropped)
        "workers": 0,            # self-play workers (Ray actors, each with its own `games` games); 0: in this process
        "publish_every": 2,      # with workers: Adam steps between two publications of the weights to them
    },
    "train": {
        "lr": 1e-3,
        "lr_final": Setting(None, like=0.0),  # linear decay from lr to it over `iterations` (None: constant)
        "batch": 256, "steps_per_iter": 2, "buffer": 200_000, "min_buffer": 4096,
        "win_loss": 1.0, "weight_decay": 0.0, "iterations": 100_000,
        "lam": 1.0,              # TD(lambda) targets: 1 = Monte-Carlo (the final outcome), < 1 mixes in the
                                 # network's own later predictions of the same seat (less variance, some bias)
        "augment": False,        # train on a random mirror image of every seat's board (`afterstate.symmetry_index`)
    },
    "eval": {"every": 250, "games": 64, "beam": 96, "candidates": 24, "diverse": False, "opponent_beam": 24,
             "seed": 1_000_000,
             "mcts_every": 0,        # every this many iterations (0 = never) also meet MCTS on fixed seeds:
             "mcts_games": 16,       # games (each seed with both seatings), the network with eval's candidates
             "mcts_iterations": 200},  # vs `mcts:<N>it`; slow (~0.5 s a decision), so rarer than `every`
    "run": {"checkpoint_every": 50, "keep": 2, "threads": 2,
            "iterations": 0,     # stop after this many iterations (0: train.iterations); may change on --resume
            "init": "",          # an MLP checkpoint (NAME.pt + NAME.json) whose weights the network starts from
                                 # ("" = from scratch); the same architecture; optimizer and buffer start empty
            "ray": ""},          # with selfplay.workers: a Ray address ("local", "auto", HOST:PORT; "" = local
}                                # processes, as for `learned`); may change on --resume
#: The command's settings (`experiments.train` validates a config against them at load).
SCHEMAS = {"mlp": DEFAULTS}
#: Settings a resumed run may change: how the result is played, and how long to train.
FREE_ON_RESUME = {("network", "play"), ("run", "iterations"), ("run", "ray")}
#: Training games' seeds are drawn from [TRAIN_SEED_LOW, 2**62): never one of the small seeds evaluations use.
TRAIN_SEED_LOW = 2**40


# ------------------------------------------------------------------------------------------------ configuration

def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """The settings of a TOML file (None: the defaults) and `section.key=value` overrides, validated
    (`experiments.common.load_config` with this command's schema)."""
    if path is None:
        return apply_overrides(check_settings({}, DEFAULTS), overrides, DEFAULTS)
    return _load_config(path, DEFAULTS, overrides)


def _training_part(cfg: dict) -> dict:
    """The settings that shape a run: all but `FREE_ON_RESUME`."""
    return {sec: {k: v for k, v in values.items() if (sec, k) not in FREE_ON_RESUME} for sec, values in cfg.items()}


def network_config(cfg: dict) -> dict[str, Any]:
    return check_config({"feature_version": FEATURE_VERSION, "num_features": NUM_FEATURES,
                         "hidden": list(cfg["network"]["hidden"]), "value": dict(cfg["network"]["value"]),
                         "play": dict(cfg["network"]["play"])})
