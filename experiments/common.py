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
import io
import json
import os
import re
import time
import tomllib
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from agents.checkpoint import sidecar, weights_match
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
    (`agents.checkpoint`'s sidecar, format "trainer", with `timesteps` and `state`).

    The record names the model file's size and SHA-256, so `latest_checkpoint` can tell a complete pair from a torn
    one. Keeps the newest `keep` complete checkpoints (older ones are removed record first). Returns the model file.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    folder = Path(folder)
    stem = f"step_{int(timesteps):012d}"
    zpath = atomic_write_bytes(folder / f"{stem}{suffix}", model)
    record = sidecar("trainer", zpath.name, model, {}, timesteps=int(timesteps), state=dict(state))
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


def remove_temp_files(folder: str | os.PathLike, recursive: bool = False) -> int:
    """Delete the temp files that killed atomic writes left in `folder` (and its subfolders if `recursive`; call only
    when no writer is running); returns how many there were."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    found = folder.rglob(".*.tmp") if recursive else folder.iterdir()
    stale = [p for p in found if p.name.startswith(".") and p.name.endswith(".tmp") and p.is_file()]
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
            zpath = rec_path.with_name(rec.get("weights") or rec["model"])  # "model": records before the schema
            data = zpath.read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if weights_match(data, rec):
            return zpath, rec
    return None


# ---------------------------------------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------------------------------------
class ConfigError(ValueError):
    """A config file, a `--set` override or a config value that cannot be used; the message names it."""


class Setting:
    """A setting whose kind is not its default's: `Setting(None, like=0.0)` is none or a number;
    `Setting(like=[64])` is a list that stays out of the config unless given (e.g. [ppo] keys passed on to
    MaskablePPO only when set, so the library's own default holds otherwise)."""

    ABSENT = object()

    def __init__(self, default: Any = ABSENT, like: Any = None):
        self.default, self.like = default, like


#: A command's settings: section -> setting -> default (its kind is the default's kind: true or false, a number,
#: text, a list, a table) or a `Setting`. `check_config` validates a config against it once, at load.
Schema = Mapping[str, Mapping[str, Any]]

_KINDS: tuple[tuple[Any, str], ...] = ((bool, "true or false"), ((int, float), "a number"), (str, "text"),
                                       (list, "a list"), (dict, "a table"))


def _check_kind(spec: Any, value: Any, what: str, name: str = "") -> None:
    """ConfigError when `value` is not of the setting's kind (`spec`: its default or `Setting`), or (`name`:
    "section.key") outside the setting's range (`experiments.ranges`)."""
    from .ranges import check_range

    like = spec
    if isinstance(spec, Setting):
        if value is None and spec.default is None:
            return
        like = spec.like
    for typ, kind in _KINDS:
        if isinstance(like, typ):
            if not isinstance(value, typ) or (typ is not bool and isinstance(value, bool)):
                raise ConfigError(f"{what} takes {kind}, got {value!r}")
            break
    out = check_range(name, value, what)
    if out is not None:
        raise ConfigError(out)


def _unknown_section(sec: Any, schema: Schema) -> str:
    return f"unknown section {sec!r} (sections: {', '.join(schema)})"


def _unknown_setting(sec: str, key: Any, schema: Schema) -> str:
    return f"unknown setting {sec}.{key} (known: {', '.join(schema[sec])})"


def check_config(config: Mapping[str, Any], schema: Schema, where: str = "config") -> dict[str, Any]:
    """`config` validated against `schema` (the one check every command's config goes through): every section and
    setting known, every value of its setting's kind; a ConfigError naming `where` and the setting otherwise.
    Returns a copy with every setting the config leaves out at its default: a run saved before a setting existed
    reads it as its default (which keeps the old behaviour)."""
    out: dict[str, Any] = {}
    for sec, values in config.items():
        if sec not in schema or not isinstance(values, Mapping):
            raise ConfigError(f"{where}: {_unknown_section(sec, schema)}")
        for key, value in values.items():
            if key not in schema[sec]:
                raise ConfigError(f"{where}: {_unknown_setting(sec, key, schema)}")
            _check_kind(schema[sec][key], value, f"{where}: {sec}.{key}", f"{sec}.{key}")
    for sec, settings in schema.items():
        given = config.get(sec, {})
        out[sec] = {}
        for key, spec in settings.items():
            default = spec.default if isinstance(spec, Setting) else spec
            if key in given:
                out[sec][key] = given[key]
            elif default is not Setting.ABSENT:
                out[sec][key] = default
    return json.loads(json.dumps(out))  # a copy: the schema's defaults are never shared


def read_toml(path: str | os.PathLike) -> dict[str, Any]:
    """A TOML file as nested dicts; a ConfigError naming the file if it is missing or malformed."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {str(p)!r} not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {str(p)!r}: {e}") from None


def load_config(path: str | os.PathLike, schema: Schema | None = None,
                overrides: Iterable[str] = ()) -> dict[str, Any]:
    """The one config loader: the TOML file `path`, validated against the command's `schema` (`check_config`:
    defaults filled in), then the `section.key=value` `overrides` (`apply_overrides`). Without a schema the file's
    dicts as they are (overrides then need keys the file has)."""
    data = read_toml(path)
    config = check_config(data, schema, str(path)) if schema is not None else data
    return apply_overrides(config, overrides, schema)


def parse_value(text: str) -> Any:
    """A `--set` value: TOML syntax (`3e-4`, `true`, `[64, 64]`, `"A"`), else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(config: dict[str, Any], overrides: Iterable[str], schema: Schema | None = None) -> dict[str, Any]:
    """Apply `section.key=value` overrides (the one `--set` syntax; value: `parse_value`) to a copy of `config`.

    With the command's `schema`: the setting must be in it and the value of its kind (a deeper key,
    `section.key.sub=value`, sets an entry of a table setting). Without: the key must already be in `config`.
    Why refuse unknown keys: a typo (`ppo.learning_rat=...`) would otherwise be silently ignored.
    """
    out = json.loads(json.dumps(config))
    for item in overrides:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) < 2 or not all(parts):
            raise ConfigError(f"--set takes section.key=value, got {item!r}")
        where = f"--set {item!r}"
        value = parse_value(text.strip())
        if schema is not None:
            sec, name = parts[0], parts[1]
            if sec not in schema:
                raise ConfigError(f"{where}: {_unknown_section(sec, schema)}")
            if name not in schema[sec]:
                raise ConfigError(f"{where}: {_unknown_setting(sec, name, schema)}")
            if len(parts) == 2:
                _check_kind(schema[sec][name], value, f"{where}: {sec}.{name}", f"{sec}.{name}")
            elif not isinstance(out.get(sec, {}).get(name), dict):
                raise ConfigError(f"{where}: {sec}.{name} is not a table")
            out.setdefault(sec, {})
        node = out
        for i, part in enumerate(parts[:-1]):
            if not isinstance(node.get(part), dict):
                raise ConfigError(f"{where}: {_unknown_section('.'.join(parts[:i + 1]), out)}")
            node = node[part]
        if schema is None and parts[-1] not in node:
            raise ConfigError(f"{where}: unknown setting {key.strip()} (known: {', '.join(node) or 'none'})")
        node[parts[-1]] = value
    return out


def section(config: Mapping[str, Any], name: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """`config[name]` over `defaults`, checked as `check_config` checks a whole config (for a section read on its
    own, e.g. a saved run's)."""
    return check_config({name: config.get(name, {})}, {name: defaults})[name]


def iterate(trainer: Any, iterations: int, max_minutes: float | None, step: Callable[[], None],
            evaluate: Callable[[Any], None], postfix: Callable[[], dict[str, Any]], eval_every: int,
            checkpoint_every: int, desc: str, progress: bool = True) -> None:
    """The iteration loop of our own trainers (`learned`, `mlp`): one place for when they evaluate, checkpoint and
    stop, so a run means the same schedule for both and their resumes stay exact.

    trainer: has `iteration` (int, advanced here), `evals` (the rows so far), `save()` (a complete checkpoint, then
    the model export) and `export()` (the model export alone). step(): one iteration's work. evaluate(bar): one
    evaluation row recorded (the untrained start too, unless the run already has rows); every `eval_every` iterations
    (0: never). A checkpoint every `checkpoint_every` iterations and at the end; `max_minutes` (None or 0: no limit)
    stops after the iteration that passes it, checkpointed there.

    A resumed run (iteration > 0) first exports its model again: a kill between a checkpoint and its export left the
    model of the checkpoint before, and a resume with nothing left to do would otherwise keep it. SIGINT / SIGTERM
    (`harmonies_env.stops`, held by the commands) wait for the iteration's end, which is checkpointed, then stop
    (`Stopped`, its detail naming the iteration)."""
    from tqdm import tqdm

    from harmonies_env import stops

    kept = trainer.iteration  # the newest checkpoint's iteration (0: none yet)
    if kept > 0:
        trainer.export()
    deadline = time.time() + 60.0 * max_minutes if max_minutes else None
    bar = tqdm(total=iterations, initial=trainer.iteration, unit="it", dynamic_ncols=True, disable=not progress,
               desc=desc)
    if eval_every > 0 and trainer.iteration == 0 and not trainer.evals:
        evaluate(bar)
    try:
        while trainer.iteration < iterations:
            with stops.held():
                step()
                trainer.iteration += 1
                bar.update(1)
                bar.set_postfix(**postfix())
                if eval_every > 0 and trainer.iteration % eval_every == 0:
                    evaluate(bar)
                saved = trainer.iteration % checkpoint_every == 0 or trainer.iteration == iterations
                over = deadline is not None and time.time() >= deadline
                if saved or over or stops.requested():
                    trainer.save()
                    kept = trainer.iteration
            if over:
                bar.write(f"--max-minutes reached at iteration {trainer.iteration}")
                break
    except stops.Stopped as e:
        if not e.detail:
            e.detail = (f"the checkpoint of iteration {kept} is kept: --resume goes on from it" if kept
                        else "no checkpoint yet: the run starts afresh")
        raise
    finally:
        bar.close()
