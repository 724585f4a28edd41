"""A shared test pattern of the self-play learner: one run never stopped beside the same run saved and resumed."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def whole_and_resumed(cfg: dict[str, Any], seed: int, tmp_path: Path, steps: int) -> tuple[Any, Any]:
    """(the run never stopped, the same run saved after `steps` iterations, resumed from its checkpoint by a new
    learner), both after 2 x `steps` iterations of `learned` with `cfg`; the loop advances the iteration as `iterate`
    does (the step sizes' schedule reads it)."""
    from experiments.common import latest_checkpoint
    from experiments.selfplay_command import build

    whole = build("learned", cfg, seed, tmp_path / "whole", progress=False)
    first = build("learned", cfg, seed, tmp_path / "split", progress=False)
    for _ in range(steps):
        for t in (whole, first):
            t.step()
            t.iteration += 1
    first.save()
    second = build("learned", cfg, seed, tmp_path / "split", progress=False)
    second.load(*latest_checkpoint(tmp_path / "split" / "checkpoints"))
    for _ in range(steps):
        for t in (whole, second):
            t.step()
            t.iteration += 1
    return whole, second
