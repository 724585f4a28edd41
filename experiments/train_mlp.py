"""Train the afterstate MLP (`agents.mlp`, the agent `mlp`) by batched self-play: the command `mlp`, a thin entry of
the one self-play learner framework (`experiments.selfplay`, with the MLP as its evaluator,
`experiments.evaluators.mlp`: its features from the recorded afterstates, a replay buffer and Adam steps after each
iteration, an extra evaluation against MCTS).

    python -m experiments.train mlp --config experiments/configs/mlp.toml --run runs/mlp --seed 0
    harmonies train mlp --run runs/mlp --max-minutes 60      # the same command, from the CLI
    python -m experiments.train mlp --run runs/mlp --resume  # after a kill, or to go on

Everything a framework run does it does: `--workers N` / `--ray ADDRESS` (self-play in workers, the learning in the
driver), eval.csv and TensorBoard, atomic checkpoints (`checkpoints/step_<iteration>.npz` + `.json`: the network,
Adam's state, the replay buffer, the games in flight, the generator) from which `--resume` goes on bit-identically,
and the agent's checkpoint, model.pt + model.json (and best.*): `agents.mlp`'s weights-only file with its JSON
sidecar and SHA-256, what `mlp:PATH` loads. `train.init` (an MLP checkpoint, e.g. `agents/checkpoints/mlp.pt`)
starts the network from its weights (same architecture); model.json records that file's SHA-256.
"""
from __future__ import annotations

from typing import Any

from .commands import RunArgs
from .common import latest_checkpoint
from .evaluators.mlp import DEFAULTS, make, make_resumed, settings
from .selfplay import Factory, Learner, run_learner

#: The one config loader's schema (experiments.common: kinds and unknown keys checked at load; `settings` adds ranges).
SCHEMAS = {"mlp": DEFAULTS}


class Trainer(Learner):
    """The framework's `Learner` of the MLP evaluator."""

    name = "mlp"

    def __init__(self, cfg: dict[str, dict[str, Any]], seed: int, run: Any, progress: bool = True, init: bool = True,
                 maker: Factory = make):
        super().__init__(cfg, seed, run, maker, progress=progress, init=init)


def run(args: RunArgs) -> dict[str, Any]:
    """The `mlp` training command (`python -m experiments.train mlp ...`): train, resume (the weights from the
    checkpoint, `train.init` not read again), summarise."""
    resumes = args.resume and latest_checkpoint(args.run / "checkpoints") is not None
    return run_learner(args, Trainer(settings(args.config), args.seed, args.run, progress=args.progress,
                                     maker=make_resumed if resumes else make))
