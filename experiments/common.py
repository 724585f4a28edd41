"""Pieces the training scripts share."""
from __future__ import annotations

from typing import Any


def progress_callback(total: int, desc: str = "training") -> Any:
    """An SB3 callback showing a tqdm bar over `total` steps of this `learn()` call (SB3's own bar needs `rich`).

    Counts from the model's step count at the start of training, so a resumed run's bar also starts at 0.
    """
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm import tqdm

    class TqdmProgress(BaseCallback):
        def _on_training_start(self) -> None:
            self.start = self.num_timesteps
            self.bar = tqdm(total=total, unit="step", desc=desc, dynamic_ncols=True)

        def _on_step(self) -> bool:
            self.bar.update(self.num_timesteps - self.start - self.bar.n)
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    return TqdmProgress()
