"""Old name of `python -m experiments.train_mlp` (the MLP baseline's trainer, `train mlp`), kept for one release."""
from __future__ import annotations

import sys

from .train_mlp import main


def cli(argv: list[str] | None = None) -> int:
    """Say the new name on stderr, then run `experiments.train_mlp` with the same arguments."""
    print("note: experiments.train_learned is now experiments.train_mlp (`train mlp`; `train learned` is the n-tuple "
          "network); the old name works until the next release", file=sys.stderr)
    return main(argv)


if __name__ == "__main__":
    sys.exit(cli())
