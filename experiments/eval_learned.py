"""Old name of `python -m experiments.eval_mlp` (the MLP baseline's evaluation), kept for one release."""
from __future__ import annotations

import sys

from .eval_mlp import main


def cli(argv: list[str] | None = None) -> int:
    """Say the new name on stderr, then run `experiments.eval_mlp` with the same arguments."""
    print("note: experiments.eval_learned is now experiments.eval_mlp; the old name works until the next release",
          file=sys.stderr)
    return main(argv)


if __name__ == "__main__":
    sys.exit(cli())
