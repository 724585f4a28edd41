"""Matches on a Ray cluster: `run_match`'s tasks as Ray tasks, agents and checkpoints shipped by value.

Why Ray: it is the project's distributed engine already (RLlib self-play, the "distributed" extra), so a tournament
on many machines needs no scheduler of our own. `RaySession(address)` connects (`"local"`: a Ray instance of this
machine's cores, or the one this process already started; else a cluster's address, `"auto"` or `HOST:PORT`, as
`ray start` prints it), and `RaySession.map(worker, tasks)` runs `worker(task)` for every task (one CPU each),
reporting each task as it finishes and returning the results in task order, not arrival order, so the match is the
same as with local processes (a game depends only on its index).

Agents reach the workers by value: a spec naming checkpoint files (`learned:PATH`, `mlp:PATH`,
`ppo:PATH`) is read on the driver (`ship_specs`: the files' bytes and SHA-256s, put once in Ray's object store); each
worker process writes them into a temporary folder of its own, checks the SHA-256s and plays the spec pointing there
(`local_spec`), so no worker needs the head node's filesystem. The shipped checkpoints (`learned`, `learned-search`,
`learned-win`, `mlp`, `mlp-search`) are inside the package on every worker. A task whose worker
process dies is retried (`MAX_RETRIES`): it plays the same games again, so nothing of the match is lost.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from .registry import lookup

#: How many times a task is run again when its worker process dies (a task's games are a function of its indices).
MAX_RETRIES = 3
#: Environment variables that the driver's agents depend on and a worker must see too.
FORWARDED_ENV = ("HARMONIES_TRUST_CHECKPOINT",)
_ADDRESS = re.compile(r"(ray://)?[A-Za-z0-9.\-_\[\]:]+:\d{1,5}")


def checkpoint_files(spec: str) -> list[Path]:
    """The files a spec's agent loads from disk (none for specs without a path): `learned:NAME.npz` is NAME.npz and
    NAME.json, `mlp:NAME.pt` NAME.pt and NAME.json (the registry's `weights` suffix); `ppo:PATH` is a weights-only
    export (NAME.pt + NAME.json) or a MaskablePPO .zip, found as `agents.ppo.load_policy` finds it.
    FileNotFoundError names a missing one."""
    kind, _, arg = spec.partition(":")
    found, arg = lookup(kind), arg.strip()
    suffix = None if found is None else found.weights  # the registry's: None when the argument is not a path
    if suffix is None or not arg:
        return []
    p = Path(arg)
    if suffix:
        p = p if p.suffix == suffix else p.with_suffix(suffix)
        files = [p, p.with_suffix(".json")]
    else:
        if p.suffix == ".json" and p.with_suffix(".pt").is_file():
            p = p.with_suffix(".pt")
        if not p.is_file() and p.suffix not in (".pt", ".zip"):
            p = next((p.with_name(p.name + e) for e in (".pt", ".zip") if p.with_name(p.name + e).is_file()), p)
        files = [p, p.with_suffix(".json")] if p.suffix == ".pt" else [p]
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"agent {spec!r}: checkpoint file {f} not found")
    return files


def ship_specs(specs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """spec -> {"kind", "main" (the file name the spec loads), "files": {name: bytes}, "sha256": {name: hex}} for
    every spec that loads checkpoint files: what a worker needs to play it without the driver's filesystem."""
    out: dict[str, dict[str, Any]] = {}
    for spec in dict.fromkeys(specs):
        files = checkpoint_files(spec)
        if not files:
            continue
        data = {f.name: f.read_bytes() for f in files}
        if len(data) != len(files):
            raise ValueError(f"agent {spec!r}: its checkpoint files share a name: {[str(f) for f in files]}")
        out[spec] = {"kind": spec.partition(":")[0].strip().lower(), "main": files[0].name, "files": data,
                     "sha256": {k: hashlib.sha256(v).hexdigest() for k, v in data.items()}}
    return out


#: This process's folders of shipped checkpoints: digest of a shipment -> folder (kept while the process lives).
_FOLDERS: dict[str, tempfile.TemporaryDirectory] = {}


def local_spec(spec: str, shipped: dict[str, dict[str, Any]]) -> str:
    """The spec to build here: `spec` itself, or for a shipped one, the same kind pointing at its files written
    into this process's temporary folder (once per process; SHA-256 checked after writing)."""
    item = shipped.get(spec)
    if item is None:
        return spec
    digest = hashlib.sha256("".join(f"{k}:{v}" for k, v in sorted(item["sha256"].items())).encode()).hexdigest()
    if digest not in _FOLDERS:
        folder = tempfile.TemporaryDirectory(prefix="harmonies-ckpt-")
        for name, data in item["files"].items():
            path = Path(folder.name) / name
            path.write_bytes(data)
            if hashlib.sha256(path.read_bytes()).hexdigest() != item["sha256"][name]:
                raise ValueError(f"agent {spec!r}: shipped file {name} does not match its SHA-256 "
                                 f"{item['sha256'][name]}")
        _FOLDERS[digest] = folder
    return f"{item['kind']}:{Path(_FOLDERS[digest].name) / item['main']}"


def run_task(worker: Callable[[Any], list[dict]], task: Any, shipped: dict[str, dict[str, Any]]) -> list[dict]:
    """A Ray task: `worker(task)` (an `agents.match.MatchTask`) with its specs pointing at this process's copies of the
    shipped checkpoints."""
    return worker(task._replace(specs=tuple(local_spec(s, shipped) for s in task.specs)))


def check_address(address: str) -> str:
    """`address` if it reads as a Ray address ("local", "auto", HOST:PORT or ray://HOST:PORT), else ValueError."""
    if not isinstance(address, str) or not (address in ("local", "auto") or _ADDRESS.fullmatch(address)):
        raise ValueError(f"--ray takes local, auto or a cluster address HOST:PORT (as `ray start --head` prints it), "
                         f"got {address!r}")
    return address


def reachable(address: str, timeout: float = 5.0) -> None:
    """ValueError naming the address when nothing listens at a HOST:PORT address: Ray itself would wait on it for
    a minute or more before giving up."""
    if address in ("local", "auto") or address.startswith("ray://"):
        return
    import socket

    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise ValueError(f"cannot reach a Ray cluster at {address!r}: {e.strerror or e}") from None


class RaySession:
    """A connection to a Ray cluster for the length of a match (`with RaySession(address) as s: s.map(...)`).

    "local" reuses the Ray instance this process already has, else starts one with this machine's cores (stopped
    again on exit); any other address attaches to that running cluster (and detaches on exit). A cluster that
    cannot be reached is a ValueError naming the address; ImportError (`ray`) when the extra is missing."""

    def __init__(self, address: str):
        check_address(address)
        import ray  # ImportError names "ray": the CLI says which extra installs it

        self.address = address
        self.started = False
        if not ray.is_initialized():
            reachable(address)
            try:
                if address == "local":
                    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                             logging_level="warning")
                else:
                    ray.init(address=address, log_to_driver=False, logging_level="warning")
            except (ConnectionError, RuntimeError, TimeoutError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ValueError(f"cannot reach a Ray cluster at {address!r}: {first}") from None
            self.started = True
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def __enter__(self) -> "RaySession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the Ray instance this session started (none it found running)."""
        if self.started:
            import ray

            ray.shutdown()
            self.started = False

    def map(self, worker: Callable[[tuple], list[dict]], tasks: Sequence[tuple],
            done: Callable[[int, list[dict]], None] | None = None) -> list[list[dict]]:
        """worker(task) for every task on the cluster, one CPU each; done(i, results) as task i finishes (any order:
        how `run_match` keeps each task's games at once); the results in task order. A task's own error is raised as
        itself (e.g. the ValueError of a bad checkpoint)."""
        import ray
        from ray.exceptions import RayTaskError

        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": MAX_RETRIES}
        if env:
            options["runtime_env"] = {"env_vars": env}
        remote = ray.remote(run_task).options(**options)
        shipped = ray.put(ship_specs([s for t in tasks for s in t.specs]))
        refs = [remote.remote(worker, t, shipped) for t in tasks]
        index = {r: i for i, r in enumerate(refs)}
        out: list[list[dict] | None] = [None] * len(refs)
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for r in ready:
                    try:
                        out[index[r]] = ray.get(r)
                    except RayTaskError as e:
                        cause = getattr(e, "cause", None)
                        if isinstance(cause, Exception):
                            raise cause from None
                        raise
                    if done is not None:
                        done(index[r], out[index[r]])
        finally:
            for r in pending:
                ray.cancel(r, force=True)
        return [r for r in out if r is not None]


__all__ = ["RaySession", "ship_specs", "local_spec", "checkpoint_files", "check_address", "run_task"]
