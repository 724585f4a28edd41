"""The one checkpoint format of the agents and trainers: a weights file plus a JSON sidecar with its SHA-256.

Why one module: the n-tuple network, the MLP, the PPO export and the trainers' checkpoints all store weights + JSON +
SHA-256; one writer and one reader treat the pair the same way for all of them (sizes checked before anything is
read, the hash before the weights are parsed) and refuse anything else with one `CheckpointError` line naming the
file. The weights themselves are parsed by `agents.archive`, the one reader that checks every declared size before
inflating anything.

The sidecar (`NAME.json` beside `NAME.<suffix>`), one schema for every kind:

    {"format": "mlp" | "ntuple" | "harmonies-ppo-policy" | "trainer" | "rllib", "version": 1, "weights": "NAME.pt",
     "bytes": 123, "sha256": "<hex of the weights file>", "shapes": {"name": [dims], ...},
     "config": {... what the kind needs to rebuild its model ...}, "training": {... provenance, free-form ...}}

Sidecars written before this schema (the shipped `learned.json` / `mlp.json`, PPO exports, trainer records) still
load: each reader passes `legacy`, which turns an old sidecar into the same fields.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from harmonies_env.validate import parse_json

#: Largest sidecar (NAME.json) read, in bytes: anything bigger is not a checkpoint config.
MAX_SIDECAR_BYTES = 1 << 20
#: Version of the sidecar schema written here.
SCHEMA_VERSION = 1
#: The sidecar's entries.
SIDECAR_KEYS = ("format", "version", "weights", "bytes", "sha256", "shapes", "config", "training")
SHA256 = re.compile(r"[0-9a-f]{64}")


class Checkpoint(NamedTuple):
    """A checked pair: the weights file's bytes (their SHA-256 verified) and its sidecar's fields."""

    weights_path: Path
    sidecar_path: Path
    data: bytes
    format: str
    config: Any  # the kind's own config (its loader checks it)
    shapes: dict[str, list[int]]
    training: dict[str, Any]


class CheckpointError(ValueError):
    """A checkpoint that is refused: missing or wrong SHA-256, weights that do not fit their config, a config that is
    not JSON or not one this code runs, a file larger than its kind can be. The message is one line naming the file
    and what is wrong."""


#: The shipped checkpoints' folder.
SHIPPED = Path(__file__).resolve().parent / "checkpoints"


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


def _sidecar_json(meta: Path, max_bytes: int, what: str) -> Any:
    """A sidecar's JSON, read only if at most `max_bytes` and parsed depth-limited (`validate.parse_json`); else
    CheckpointError naming the file."""
    if meta.stat().st_size > max_bytes:
        raise CheckpointError(f"{meta}: larger than {what}'s config can be ({max_bytes} bytes at most)")
    try:
        return parse_json(meta.read_bytes(), str(meta))
    except ValueError as e:
        raise CheckpointError(str(e)) from None


def read_sidecar(meta: Path, keys: tuple[str, ...], required: str, what: str,
                 max_bytes: int = MAX_SIDECAR_BYTES) -> dict[str, Any]:
    """A sidecar's JSON object, checked: at most `max_bytes`, JSON (depth-limited `validate.parse_json`), an object
    holding `required` and no entry outside `keys`; else CheckpointError naming the file."""
    doc = _sidecar_json(meta, max_bytes, what)
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


def sidecar(fmt: str, weights_name: str, data: bytes, config: dict[str, Any],
            shapes: dict[str, list[int]] | None = None, training: dict[str, Any] | None = None,
            **extra: Any) -> dict[str, Any]:
    """The sidecar of weights `data` saved as `weights_name` (the schema in the module docstring); `extra` entries
    (a trainer's `timesteps` and `state`) go beside the schema's."""
    return {"format": fmt, "version": SCHEMA_VERSION, "weights": weights_name, "bytes": len(data),
            "sha256": weights_sha256(data), "shapes": {k: [int(d) for d in v] for k, v in (shapes or {}).items()},
            "config": config, "training": training or {}, **extra}


def weights_match(data: bytes, record: Any) -> bool:
    """Whether `data` are the weights a sidecar record describes (size and SHA-256): a torn or swapped file is not."""
    return isinstance(record, dict) and type(record.get("bytes")) is int and len(data) == record["bytes"] and \
        weights_sha256(data) == record.get("sha256")


def write_checkpoint(path: str | Path, data: bytes, fmt: str, config: dict[str, Any],
                     shapes: dict[str, list[int]] | None = None, training: dict[str, Any] | None = None) -> Path:
    """Write weights `data` to `path` and its sidecar beside it (`NAME.json`), each atomically, the weights first (a
    sidecar exists only once its weights are complete); the folder is made if needed. Returns the weights' path."""
    from harmonies_env.io import atomic_write_bytes, atomic_write_text

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(p, data)
    atomic_write_text(p.with_suffix(".json"), json.dumps(sidecar(fmt, p.name, data, config, shapes, training),
                                                         indent=1) + "\n")
    return p


def read_checkpoint(path: str | Path, suffix: str, fmt: str, what: str, max_weights_bytes: int,
                    legacy: Callable[[dict[str, Any], Path], dict[str, Any]] | None = None,
                    max_sidecar_bytes: int = MAX_SIDECAR_BYTES,
                    before_read: Callable[[Any, dict[str, list[int]], int], None] | None = None) -> Checkpoint:
    """The checked pair NAME.suffix + NAME.json of kind `fmt` (`what` names it in messages).

    In this order, each failure one CheckpointError line naming the file: both files exist (else
    FileNotFoundError); the sidecar is at most `max_sidecar_bytes` of depth-limited JSON; it is this schema (or an
    older sidecar `legacy(doc, sidecar_path)` turns into its fields, or refuses) of format `fmt` and
    version <= SCHEMA_VERSION; `before_read(config, shapes, weights_size)` (the kind's own check of what the sidecar
    declares against its caps and the file's size: a ValueError becomes a CheckpointError naming the sidecar) passes;
    the weights file is at most `max_weights_bytes` (checked before reading) and has the recorded SHA-256. Parsing
    the weights is the caller's."""
    p, meta = checkpoint_pair(path, suffix, what)
    doc = _sidecar_json(meta, max_sidecar_bytes, what)
    if not isinstance(doc, dict):
        raise CheckpointError(f"{meta}: not {what}'s config (not a JSON object)")
    if "format" not in doc or "config" not in doc:
        if legacy is None:
            raise CheckpointError(f"{meta}: not {what}'s config (no 'format' and 'config' entries)")
        doc = legacy(doc, meta)  # an older sidecar: its own checks, then this schema's fields
    if doc.get("format") != fmt:
        raise CheckpointError(f"{meta}: a {str(doc.get('format'))[:40]!r} checkpoint, not {what} ({fmt!r})")
    if not (type(doc.get("version")) is int and 1 <= doc["version"] <= SCHEMA_VERSION):  # exactly: true is no 1
        raise CheckpointError(f"{meta}: sidecar version {str(doc.get('version'))[:20]!r} is not one this code reads "
                              f"(1..{SCHEMA_VERSION})")
    shapes, config, training = doc.get("shapes", {}), doc.get("config"), doc.get("training", {})
    if not isinstance(shapes, dict) or not isinstance(training, dict) or not all(
            isinstance(v, list) and all(type(d) is int and d >= 0 for d in v) for v in shapes.values()):
        raise CheckpointError(f"{meta}: 'shapes' and 'training' must be objects (shapes: lists of sizes)")
    if before_read is not None:
        try:
            before_read(config, shapes, p.stat().st_size)
        except CheckpointError:
            raise
        except ValueError as e:
            raise CheckpointError(f"{meta}: {e}") from None
    data = read_checked_weights(p, meta, doc.get("sha256"), max_weights_bytes, what)
    return Checkpoint(p, meta, data, fmt, config, shapes, training)


__all__ = ["Checkpoint", "CheckpointError", "SHIPPED", "MAX_SIDECAR_BYTES",
           "SCHEMA_VERSION", "SIDECAR_KEYS", "checkpoint_pair", "read_checked_weights", "read_checkpoint",
           "read_sidecar", "sidecar", "weights_match", "weights_sha256", "write_checkpoint"]
