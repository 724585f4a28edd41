"""Where a result came from: package version, git commit, the agents' weights, date, machine and CPU time.

Why: a rating or a win rate is only worth what can be traced to the code and the weights that produced it. The
tournament writes `provenance(...)` into its JSON; the ladder is meant to record the same fields per game. Everything
here is cheap (one `git` call, the weights hashed once) and never fails a run: what cannot be known is None.
"""
from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

__all__ = ["cpu_model", "cpu_seconds", "git_state", "machine", "package_version", "provenance", "weights_files",
           "weights_sha256"]

#: The distribution whose version is recorded.
DISTRIBUTION = "harmonies-env"
#: The weights each spec kind without a PATH plays (the shipped checkpoints, `agents/checkpoints/`).
SHIPPED_WEIGHTS: dict[str, tuple[str, ...]] = {
    "learned": ("learned.npz",), "learned-search": ("learned.npz",), "learned-win": ("learned.npz", "learned-win.npz"),
    "mlp": ("mlp.pt",), "mlp-search": ("mlp.pt",),
}
_ROOT = Path(__file__).resolve().parents[1]


def package_version() -> str | None:
    """The installed harmonies-env version (None when run from a checkout that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


def git_state(path: str | Path = _ROOT) -> dict[str, Any] | None:
    """{"commit": HEAD's hash, "dirty": whether tracked files differ from it} of the checkout holding `path` (this
    package's, by default), or None when it is not in a git checkout or git is missing."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": None if status is None else bool(status.strip())}


def cpu_model() -> str | None:
    """The CPU's model name (Linux /proc/cpuinfo, else what `platform` says; None if nothing)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict[str, Any]:
    """The machine a run played on: platform, Python, CPU model, its logical cores and those this process may use."""
    from agents.match import cores

    return {"platform": platform.platform(), "python": platform.python_version(), "cpu": cpu_model(),
            "cores": os.cpu_count(), "usable_cores": cores()}


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and its finished child processes (e.g. `--jobs` workers): the
    difference over a run is its CPU time on this machine (a Ray cluster's workers are not counted)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def weights_files(spec: str) -> list[Path]:
    """The weights files an agent spec plays: its checkpoint's (`learned:PATH`, `mlp:PATH`, `ppo:PATH`: the weights
    file, not the sidecar) or the shipped ones (`SHIPPED_WEIGHTS`); none for agents without weights."""
    from agents.checkpoint import SHIPPED
    from agents.distributed import checkpoint_files
    from agents.registry import lookup

    files = checkpoint_files(spec)
    if files:
        return files[:1]
    kind = lookup(spec.partition(":")[0].strip().lower())
    if kind is None:
        return []
    return [SHIPPED / name for name in SHIPPED_WEIGHTS.get(kind.name, ())]


def weights_sha256(spec: str) -> dict[str, str]:
    """{file name: SHA-256} of each weights file `spec` plays: the hash its checkpoint's sidecar records (the loaders
    refuse a file that does not match it), computed from the file."""
    out = {}
    for f in weights_files(spec):
        h = hashlib.sha256()
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        out[f.name] = h.hexdigest()
    return out


def provenance(specs: Sequence[str], cpu: float | None = None, argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The record of a run of agent `specs`: {"package", "version", "git" (`git_state`), "date" (UTC, ISO 8601),
    "machine", "command" (`argv`, default this process's), "cpu_seconds" (`cpu`), "weights" ({spec: {file:
    SHA-256}} for the specs that play weights)}."""
    weights = {s: w for s in dict.fromkeys(specs) if (w := weights_sha256(s))}
    return {"package": DISTRIBUTION, "version": package_version(), "git": git_state(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
            "command": list(sys.argv if argv is None else argv), "cpu_seconds": cpu, "weights": weights}
