"""Pieces every training command shares that need no torch: atomic writes, the run folder with its checkpoints,
and the TOML configs.

Why atomic writes: a training run may be killed at any moment (SIGKILL, a full machine, a time limit). Every
file written here goes through `harmonies_env.io` (the project's one atomic writer: a temporary file in the same
folder, flushed and fsync'ed, then renamed over the target with `os.replace`), so a reader (or `--resume`) sees
the old file or the new one, never half of one. A checkpoint is a weights-only `.pt` (written first;
`runner.checkpoint_bytes`) plus its `.json` record (written second, naming the file's size and SHA-256), so a
checkpoint counts only once both are complete and agree; `--resume` takes the newest such pair and skips anything
torn.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping

from harmonies_env import io as _io

#: Checkpoints are `checkpoints/step_<timesteps, 12 digits>.pt` (weights only) + `.json` (its record).
CHECKPOINT_RE = re.compile(r"^step_(\d{12})\.json$")


# ---------------------------------------------------------------------------------------------------------
# atomic writes
# ---------------------------------------------------------------------------------------------------------
def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """`harmonies_env.io.atomic_write_bytes` (the project's one atomic writer), making the folder first: run
    folders and their `checkpoints/`, `pool/` subfolders appear on demand."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return _io.atomic_write_bytes(path, data)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """`atomic_write_bytes` of UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """`atomic_write_bytes` of `obj` as indented JSON (plus a final newline)."""
    return atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def atomic_write_csv(path: str | os.PathLike, rows: Iterable[Mapping[str, Any]]) -> Path:
    """The whole table `rows` (dicts; columns in order of first appearance) written atomically as CSV.

    Why rewrite instead of append: an append killed halfway leaves a torn last line; these tables are small.
    """
    rows = list(rows)
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(cols), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _csv_value(v) for k, v in r.items()})
    return atomic_write_text(path, buf.getvalue())


def _csv_value(v: Any) -> Any:
    return round(v, 6) if isinstance(v, float) else v


def read_csv(path: str | os.PathLike) -> list[dict[str, str]]:
    """Rows of a CSV written by `atomic_write_csv` (values as strings)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------------------
def save_checkpoint(folder: str | os.PathLike, timesteps: int, model: bytes, state: Mapping[str, Any],
                    keep: int = 2, suffix: str = ".pt") -> Path:
    """Write checkpoint `step_<timesteps>`: the model bytes (`step_<timesteps><suffix>`), then its JSON record
    with `state`.

    The record names the model file's size and SHA-256, so `latest_checkpoint` can tell a complete pair from a torn
    one. Keeps the newest `keep` complete checkpoints (older ones are removed record first). Returns the model file.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    folder = Path(folder)
    stem = f"step_{int(timesteps):012d}"
    zpath = atomic_write_bytes(folder / f"{stem}{suffix}", model)
    record = {"timesteps": int(timesteps), "model": zpath.name, "bytes": len(model),
              "sha256": hashlib.sha256(model).hexdigest(), "state": dict(state)}
    atomic_write_json(folder / f"{stem}.json", record)
    for old in _records(folder)[keep:]:
        old.unlink(missing_ok=True)
        for ext in (".pt", ".zip"):  # .zip: checkpoints of older versions
            old.with_suffix(ext).unlink(missing_ok=True)
    return zpath


def _records(folder: Path) -> list[Path]:
    """Checkpoint records in `folder`, newest first."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if CHECKPOINT_RE.match(p.name)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def remove_temp_files(folder: str | os.PathLike) -> int:
    """Delete the temp files that killed atomic writes left in `folder` (call only when no writer is running);
    returns how many there were."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    stale = [p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def latest_checkpoint(folder: str | os.PathLike) -> tuple[Path, dict[str, Any]] | None:
    """The newest complete checkpoint in `folder`: (model file path, record), or None if there is none.

    Complete: the record parses and its model file exists with the recorded size and SHA-256. Torn or stray files
    (a temp file of a killed write, a zip whose record never got written) are skipped, not deleted.
    """
    for rec_path in _records(Path(folder)):
        try:
            rec = json.loads(rec_path.read_text())
            zpath = rec_path.with_name(rec["model"])
            data = zpath.read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if len(data) == rec.get("bytes") and hashlib.sha256(data).hexdigest() == rec.get("sha256"):
            return zpath, rec
    return None


# ---------------------------------------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------------------------------------
class ConfigError(ValueError):
    """A config file, a `--set` override or a config value that cannot be used; the message names it."""


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """A TOML config file as nested dicts; a clear error naming the file if it is missing or malformed."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {str(p)!r} not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {str(p)!r}: {e}") from None


def parse_value(text: str) -> Any:
    """A `--set` value: TOML syntax (`3e-4`, `true`, `[64, 64]`, `"A"`), else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(config: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply `section.key=value` overrides to a copy of `config`; the key must already exist there.

    Why must exist: a typo (`ppo.learning_rat=...`) would otherwise be silently ignored.
    """
    out = json.loads(json.dumps(config))
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set takes section.key=value, got {item!r}")
        parts = key.strip().split(".")
        node = out
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise ConfigError(f"--set {item!r}: the config has no section {'.'.join(parts[:-1])!r}")
            node = node[part]
        if parts[-1] not in node:
            known = ", ".join(sorted(node)) or "none"
            raise ConfigError(f"--set {item!r}: no key {parts[-1]!r} there (known: {known})")
        node[parts[-1]] = parse_value(text.strip())
    return out


def section(config: Mapping[str, Any], name: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """`config[name]` over `defaults`; unknown keys are an error naming the section and the known keys."""
    given = dict(config.get(name, {}))
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(f"config section [{name}]: unknown key(s) {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(defaults))})")
    return {**defaults, **given}
