"""The one checkpoint format of the agents and trainers: a weights file plus a JSON sidecar with its SHA-256.

Why one module: the n-tuple network, the MLP, the PPO export and the trainers' checkpoints all store weights + JSON +
SHA-256; one reader checks the pair the same way for all of them (sizes before reading, the hash before parsing the
weights) and refuses anything else with one `CheckpointError` line naming the file. The weights' own parsers
(np.load without pickles, torch.load weights-only) stay with the agents that read them.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from harmonies_env.validate import parse_json

#: Largest sidecar (NAME.json) read, in bytes: anything bigger is not a checkpoint config.
MAX_SIDECAR_BYTES = 1 << 20
SHA256 = re.compile(r"[0-9a-f]{64}")


class CheckpointError(ValueError):
    """A checkpoint that is refused: missing or wrong SHA-256, weights that do not fit their config, a config that is
    not JSON or not one this code runs, a file larger than its kind can be. The message is one line naming the file
    and what is wrong."""


def checkpoint_pair(path: str | Path, suffix: str, what: str) -> tuple[Path, Path]:
    """(NAME.suffix, NAME.json) of a weights-plus-JSON checkpoint given as either file or its stem, both present, else
    FileNotFoundError naming `what` and the two files. Every checkpoint loader starts here."""
    p = Path(path)
    if p.suffix != suffix:
        p = p.with_suffix(suffix)
    meta = p.with_suffix(".json")
    if not p.is_file() or not meta.is_file():
        raise FileNotFoundError(f"{what} is two files, {p.name} and {meta.name}; not found in {p.parent}")
    return p, meta


def weights_sha256(data: bytes) -> str:
    """The SHA-256 (hex) of a checkpoint's weights file, as its sidecar records it."""
    return hashlib.sha256(data).hexdigest()


def read_sidecar(meta: Path, keys: tuple[str, ...], required: str, what: str,
                 max_bytes: int = MAX_SIDECAR_BYTES) -> dict[str, Any]:
    """A sidecar's JSON object, checked: at most `max_bytes`, JSON (depth-limited `validate.parse_json`), an object
    holding `required` and no entry outside `keys`; else CheckpointError naming the file."""
    if meta.stat().st_size > max_bytes:
        raise CheckpointError(f"{meta}: larger than {what}'s config can be ({max_bytes} bytes at most)")
    try:
        doc = parse_json(meta.read_bytes(), str(meta))
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    if not isinstance(doc, dict) or required not in doc:
        raise CheckpointError(f"{meta}: not {what}'s config (no {required!r} entry)")
    unknown = [str(k) for k in doc if k not in keys]
    if unknown:
        raise CheckpointError(f"{meta}: unknown entries {sorted(unknown)[:5]} ({what}'s are {', '.join(keys)})")
    return doc


def read_checked_weights(p: Path, meta: Path, want: Any, max_bytes: int, what: str) -> bytes:
    """The bytes of weights file `p`, read only if at most `max_bytes` and returned only if their SHA-256 is `want`
    (the sidecar's record); else CheckpointError naming the file (a missing hash says how to add it)."""
    if p.stat().st_size > max_bytes:
        raise CheckpointError(f"{p}: larger than {what} could be ({max_bytes} bytes at most)")
    data = p.read_bytes()
    actual = weights_sha256(data)
    if want is None:
        raise CheckpointError(f"{meta}: no 'sha256' of {p.name}, so the pair cannot be checked (checkpoints saved "
                              f"before it was recorded); if you trust both files, add \"sha256\": \"{actual}\" "
                              f"to {meta.name}")
    if not (isinstance(want, str) and SHA256.fullmatch(want)):
        raise CheckpointError(f"{meta}: 'sha256' must be 64 lowercase hex digits, got {str(want)[:80]!r}")
    if actual != want:
        raise CheckpointError(f"{p}: SHA-256 {actual} is not the {want} that {meta.name} records (a damaged, "
                              f"edited or mixed-up pair of files)")
    return data


__all__ = ["CheckpointError", "MAX_SIDECAR_BYTES", "checkpoint_pair", "read_checked_weights", "read_sidecar",
           "weights_sha256"]
