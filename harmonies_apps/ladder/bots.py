"""A ladder's bots: which specs it accepts, what they are rated as, and the weights they must still be.

Why here: a rating means something only for the exact weights that earned it. A bot's SHA-256 is taken when it is
added (a checkpoint's from its sidecar, checked against the file; the shipped networks' likewise; a `py:` bot's
module source) and taken again at every load (`check_bots`): a changed file is refused, never silently re-rated.
Specs without files (random, greedy, mcts:Nit) have none. Time-budget specs are accepted and marked not reproducible.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from .store import Bot, LadderError

#: The fixed references `init` adds: `random` first (the anchor, rated 0, always a reference).
ANCHOR = "random"
DEFAULT_REFERENCES = ("random", "greedy", "mcts:200it", "learned")


def _sidecar_sha256(weights: Path) -> str:
    """The SHA-256 of a checkpoint's weights file, which must be the one its sidecar (NAME.json) records."""
    meta = weights.with_suffix(".json")
    try:
        want = json.loads(meta.read_text()).get("sha256") if meta.is_file() else None
    except (OSError, ValueError, AttributeError):
        want = None
    actual = hashlib.sha256(weights.read_bytes()).hexdigest()
    if want is None:
        raise LadderError(f"{weights}: its sidecar {meta.name} records no SHA-256, so the ladder cannot pin it")
    if actual != want:
        raise LadderError(f"{weights}: SHA-256 {actual} is not the {want} that {meta.name} records")
    return actual


def spec_sha256(spec: str) -> str | None:
    """The SHA-256 that pins a spec's weights: a checkpoint's (checked against its sidecar), the shipped network's
    for kinds that play one, a `py:` bot's module source; several files' hashes are hashed together. None for
    specs that load nothing."""
    from agents.checkpoint import SHIPPED
    from agents.distributed import checkpoint_files
    from agents.registry import lookup

    kind_name, _, arg = spec.partition(":")
    kind, arg = lookup(kind_name), arg.strip()
    if kind is None:
        return None
    if kind.name == "py":
        from agents.user import source_sha256

        return source_sha256(arg)
    files = [f for f in checkpoint_files(spec) if f.suffix != ".json"] if arg and kind.weights is not None else \
        [SHIPPED / f for f in kind.shipped]
    hashes = [_sidecar_sha256(f) if f.with_suffix(".json").is_file() else hashlib.sha256(f.read_bytes()).hexdigest()
              for f in files]
    if not hashes:
        return None
    return hashes[0] if len(hashes) == 1 else hashlib.sha256(" ".join(hashes).encode()).hexdigest()


def check_spec(spec: str) -> tuple[str | None, bool]:
    """(sha256, reproducible) of a spec the ladder can play, after building its agent once (a bad spec, a missing
    file or a refused checkpoint is a ValueError naming it)."""
    from agents import make_agent
    from agents.registry import is_timed

    make_agent(spec)
    return spec_sha256(spec), not is_timed(spec)


def check_bots(bots: Sequence[Bot]) -> None:
    """LadderError naming the first bot whose weights are no longer the ones it was rated with."""
    for b in bots:
        try:
            now = spec_sha256(b.spec)
        except (OSError, ValueError) as e:
            raise LadderError(f"bot {b.name!r} ({b.spec}): cannot be loaded as it was added: {e}") from None
        if now != b.sha256:
            raise LadderError(f"bot {b.name!r} ({b.spec}): its weights changed (SHA-256 {now} is not the {b.sha256} "
                              f"it was rated with); refused, never re-rated: add the new file as a new bot")


__all__ = ["ANCHOR", "DEFAULT_REFERENCES", "check_bots", "check_spec", "spec_sha256"]
