"""One pool of self-play workers for our trainers (`learned`, `mlp`): N actors, on local processes or Ray actors.

Why: the trainers spend their time planning self-play decisions, not in the update, and self-play games share
nothing but the weights, so more cores mean more decisions. A worker is an *actor*: an object built in its own
process as `actor(*args, index=k, incarnation=i)` with four methods, `play(version, weights, steps)` (load the
weights when `version` is newer than the ones it holds, play `steps` turns, return its results), `snapshot()` (its
games in flight and generator), `restore(snapshot)` and `pid()`. `WorkerPool(actor, args, workers, transport)`
runs `workers` of them with one transport, chosen by one value:

- `"processes"`: local processes of this machine (`multiprocessing`, forkserver where the platform has it, else
  spawn; no Ray needed). Each talks to the driver over a pipe; the newest weights are written once into a
  shared-memory block (of two: never the one the call in flight reads), which a worker copies from at its next call
  when it does not hold that version yet (an older version, replayed to a worker put back, goes by the pipe).
- a Ray address (`"local"`, `"auto"`, `HOST:PORT`; `agents.distributed.RaySession`): Ray actors, named
  `harmonies-<name>-<pool id>-w<k>` so the Ray dashboard shows them; the weights are put once in the object store.

The interface: `publish(weights)` (the learner's newest weights, a dict of arrays: the version the workers play with
from their next call), `play(steps)` (every worker's results of `steps` turns, in worker order: with the same seed,
the same number of workers and the same publishing schedule, the same results on either transport; `submit(steps)`
then `gather()` is the same call split, so the learner can learn and publish while the workers play),
`snapshot()` / `restore(snaps)` (every worker's games in flight, for the learner's checkpoint; not while a call is in
flight), `pids()`, `restarts`, `close()`.

A worker that dies is put back: its process is started again (a new incarnation; on Ray, Ray restarts it,
`max_restarts`), the driver restores the worker's last snapshot (taken by `snapshot()`/`restore()`, when the pool
started, or by the pool itself, below) and replays that worker's calls since (the same weights versions, results
dropped), then makes the failed call again. So a dead worker costs the replay of its share since its last snapshot,
and the run's results are those of a run where no worker died. The driver keeps the weights of every call since the
last snapshot for that; once they span more than `held_versions` versions (default `MAX_HELD_VERSIONS`; None: no
limit) the pool takes a snapshot itself (which changes nothing in the workers), so the driver holds at most that
many copies of the weights.

The pool knows no learner (it imports nothing of the trainers): the self-play framework's actor,
`experiments.selfplay.SelfPlayActor`, plays every evaluator's games (`learned`'s, `mlp`'s, a user's); for each,
`--workers N` runs local processes and `--ray ADDRESS` Ray actors.
"""
from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import pickle
import signal
import time
import traceback
from typing import Any, Sequence

import numpy as np

#: Times Ray restarts a dead self-play actor (-1: without limit).
MAX_RESTARTS = -1
#: Times in a row the driver puts a dead worker back (restore + replay) before it gives up on the call.
MAX_RECOVERIES = 10
#: Weights versions the driver keeps for replaying a dead worker's calls before the pool takes a snapshot itself.
MAX_HELD_VERSIONS = 8
#: The transport of local processes (any other value is a Ray address).
PROCESSES = "processes"
_POOL_IDS = itertools.count()


def worker_seed(seed: int, index: int, incarnation: int = 0) -> int:
    """The generator seed of self-play worker `index` (its `incarnation`-th restart: fresh games, still seeded)."""
    return int((int(seed) * 1_000_003 + 7919 * (int(index) + 1) + 104_729 * int(incarnation)) % (2**62))


def check_transport(transport: str) -> str:
    """`transport` if it is "processes" or a Ray address (`agents.distributed.check_address`), else ValueError."""
    if transport == PROCESSES:
        return transport
    from agents.distributed import check_address

    return check_address(transport)


def actor_incarnation(given: int = 0) -> int:
    """An actor's incarnation: `given`, or 1 inside a Ray actor that Ray restarted (it is built with its first
    arguments again, so it cannot be told)."""
    if given:
        return int(given)
    try:
        import ray

        if ray.is_initialized() and ray.get_runtime_context().was_current_actor_reconstructed:
            return 1
    except (ImportError, AttributeError, RuntimeError):  # outside a Ray actor: the first incarnation
        pass
    return 0


def pack_rows(a: np.ndarray) -> dict[str, np.ndarray]:
    """An integer array (rows, columns) made compact for the wire: int16 where every value of a column fits, the
    other columns (e.g. a state's generator) kept beside it in the array's own dtype; `unpack_rows` gives it back
    exactly, dtype included (states come back int32, the state's dtype)."""
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.integer):
        a = a.astype(np.int64)
    info = np.iinfo(np.int16)
    wide = np.flatnonzero(((a < info.min) | (a > info.max)).any(axis=0)) if a.size else np.zeros(0, np.int64)
    small = a.astype(np.int16)
    small[:, wide] = 0
    return {"small": small, "cols": wide.astype(np.int64), "wide": a[:, wide].copy()}


def unpack_rows(p: dict[str, np.ndarray]) -> np.ndarray:
    """The array `pack_rows` packed, in its dtype."""
    a = p["small"].astype(p["wide"].dtype)
    a[:, p["cols"]] = p["wide"]
    return a


class WorkerDied(Exception):
    """A worker's process ended while the driver waited on it (the pool puts it back)."""


def _describe(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip() + "\n" + traceback.format_exc()


def _serve(conn: Any, actor: type, args: tuple, index: int, incarnation: int) -> None:
    """A worker process: build the actor, then answer the driver's calls (method, args) until it closes the pipe.
    Ctrl-C is the driver's to handle (it finishes its iteration, then closes the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        obj = actor(*args, index=index, incarnation=incarnation)
    except Exception as e:  # noqa: BLE001 - reported to the driver, which raises it
        conn.send(("err", _describe(e)))
        return
    conn.send(("ok", None))
    shared: dict[str, Any] = {}  # the driver's shared-memory blocks, attached once
    while True:
        try:
            method, call = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if method == "play":  # the weights: None (it holds them), in shared memory, or pickled (a replay's)
                version, sent, steps = call
                call = (version, _weights_from(sent, shared), steps)
            out = ("ok", getattr(obj, method)(*call))
        except Exception as e:  # noqa: BLE001 - reported to the driver, which raises it
            out = ("err", _describe(e))
        try:
            conn.send(out)
        except OSError:  # the driver closed the pool while this call was in flight (or died): nothing to answer
            return


def _weights_from(sent: Any, shared: dict[str, Any]) -> dict[str, np.ndarray] | None:
    """The weights a play call carries to a worker process: None, ("shm", block name, layout) (views of the driver's
    shared memory, valid during the call: the actor copies what it keeps) or ("pickle", bytes)."""
    if sent is None:
        return None
    if sent[0] == "pickle":
        return pickle.loads(sent[1])
    from multiprocessing import shared_memory

    _, name, layout = sent
    if name not in shared:
        shared.clear()  # (a block of another size replaced the last one)
        shared[name] = shared_memory.SharedMemory(name=name)
    buf = shared[name].buf
    return {k: np.ndarray(shape, dtype=np.dtype(dt), buffer=buf, offset=off) for k, dt, shape, off in layout}


class _Process:
    """One worker process and the driver's end of its pipe; `version`: the weights version it holds."""

    def __init__(self, ctx: Any, actor: type, args: tuple, index: int, incarnation: int):
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, actor, args, index, incarnation), daemon=True,
                                name=f"harmonies-selfplay-w{index}")
        self.proc.start()
        child.close()
        self.conn, self.index, self.incarnation, self.version = parent, index, incarnation, -1

    def send(self, method: str, call: tuple) -> None:
        try:
            self.conn.send((method, call))
        except (OSError, EOFError, ValueError) as e:
            raise WorkerDied(str(e)) from None

    def recv(self) -> Any:
        try:
            status, value = self.conn.recv()
        except (OSError, EOFError) as e:
            raise WorkerDied(str(e)) from None
        if status == "err":
            raise RuntimeError(f"self-play worker {self.index}: {value}")
        return value

    def pid(self) -> int:
        return int(self.proc.pid)

    def close(self) -> None:
        self.conn.close()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


class WorkerPool:
    """`workers` self-play actors on local processes or Ray (see the module docstring); `close()` (or `with`) ends
    them."""

    def __init__(self, actor: type, args: tuple, workers: int, transport: str = PROCESSES, name: str = "selfplay",
                 held_versions: int | None = MAX_HELD_VERSIONS):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        check_transport(transport)
        self.actor, self.args, self.transport = actor, tuple(args), transport
        self.held_versions = held_versions
        self.version = -1
        self.weights: Any = None  # the newest published weights (Ray: an object ref; processes: the arrays)
        self._blocks: list[Any] = [None, None]  # processes: two shared-memory blocks of weights (one may be read by
        self._layouts: list[list] = [[], []]  # the call in flight while the other takes the newest weights)
        self._cur = 0  # the block of the newest weights
        self._kept: dict[int, dict[str, np.ndarray]] = {}  # processes: the weights versions calls may replay
        self._spare: list[dict[str, np.ndarray]] = []  # ... and buffers of versions no call needs any more
        self._pending: tuple[tuple[int, Any, int], list[Any], int] | None = None  # (call, handles, block) in flight
        self.restarts = 0  # workers put back after their process died
        self.session: Any = None
        self._history: list[tuple[int, Any, int]] = []  # every play call since the last snapshot
        self._base: list[Any] = []  # each worker's last snapshot (Ray: object refs)
        tag = f"{os.getpid()}-{next(_POOL_IDS)}"
        if transport == PROCESSES:
            methods = mp.get_all_start_methods()
            self._ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
            self.actors: list[Any] = [_Process(self._ctx, actor, self.args, k, 0) for k in range(workers)]
            try:
                for p in self.actors:
                    try:
                        p.recv()  # built (an actor's own error is raised here)
                    except WorkerDied:
                        raise RuntimeError(f"self-play worker {p.index}'s process ended while it started (its "
                                           "error is printed above)") from None
            except BaseException:
                self.close()
                raise
        else:
            import ray

            from agents.distributed import RaySession

            self.session = RaySession(transport)
            # no retries by Ray: a call on a dead worker fails here, and the driver replays it where it was
            remote = ray.remote(actor)
            self.actors = [remote.options(num_cpus=1, max_restarts=MAX_RESTARTS, max_task_retries=0,
                                          name=f"harmonies-{name}-{tag}-w{k}").remote(*self.args, index=k)
                           for k in range(workers)]
        self._base = [self._put(s) for s in self._all("snapshot", ())]

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- the transport ----
    def _put(self, obj: Any) -> Any:
        if self.transport == PROCESSES:
            return obj
        import ray

        return ray.put(obj)

    def _submit(self, k: int, method: str, call: tuple) -> Any:
        """Start worker k's call; a handle for `_wait`. WorkerDied when its process is gone."""
        actor = self.actors[k]
        if self.transport != PROCESSES:
            return getattr(actor, method).remote(*call)
        if method == "play":  # the weights only to a worker that does not hold them yet
            version, arrays, steps = call
            if actor.version == version:
                sent = None
            elif version == self.version:  # the newest: every worker copies it from the one shared block
                sent = ("shm", self._blocks[self._cur].name, self._layouts[self._cur])
            else:  # an older version (a dead worker's calls replayed): by the pipe
                sent = ("pickle", pickle.dumps(arrays, protocol=pickle.HIGHEST_PROTOCOL))
            call = (version, sent, steps)
            actor.version = version
        actor.send(method, call)
        return actor

    def _wait(self, handle: Any) -> Any:
        if self.transport == PROCESSES:
            return handle.recv()
        import ray
        from ray.exceptions import RayActorError

        try:
            return ray.get(handle)
        except RayActorError as e:
            raise WorkerDied(str(e)) from None

    def _revive(self, k: int) -> None:
        """Worker k died: a new process in its place (Ray restarts its actors itself)."""
        if self.transport == PROCESSES:
            old = self.actors[k]
            old.close()
            self.actors[k] = _Process(self._ctx, self.actor, self.args, k, old.incarnation + 1)
            self.actors[k].recv()

    def _call(self, k: int, method: str, call: tuple) -> Any:
        return self._wait(self._submit(k, method, call))

    def _all(self, method: str, call: tuple) -> list[Any]:
        """`method(*call)` on every worker at once; the results in worker order, dead workers put back."""
        return self._all_each(method, [call] * len(self.actors))

    def _all_each(self, method: str, calls: list[tuple]) -> list[Any]:
        """`method(*calls[k])` on every worker k at once; the results in worker order, dead workers put back."""
        handles: list[Any] = []
        for k, call in enumerate(calls):
            try:
                handles.append(self._submit(k, method, call))
            except WorkerDied:
                handles.append(None)
        return [self._finish(k, h, method, calls[k]) for k, h in enumerate(handles)]

    def _finish(self, k: int, handle: Any, method: str, call: tuple) -> Any:
        """Worker k's result; when the worker died, put it back (`_recover`) and make the call again."""
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                if handle is None:
                    self._recover(k)
                    handle = self._submit(k, method, call)
                return self._wait(handle)
            except WorkerDied:
                if attempt == MAX_RECOVERIES:
                    raise RuntimeError(f"self-play worker {k} died {attempt + 1} times in a row") from None
                self.restarts += handle is not None  # (not again while it is being put back)
                handle = None
                if self.transport != PROCESSES:
                    time.sleep(min(5.0, 0.2 * 2 ** attempt))  # while Ray restarts its process
        raise AssertionError("unreachable")

    def _recover(self, k: int) -> None:
        """Put worker k back where it was: a new process, its last snapshot, its play calls since replayed
        (results dropped)."""
        self._revive(k)
        self._call(k, "restore", (self._base[k],))
        for call in self._history:
            self._call(k, "play", call)

    # ---- the interface ----
    def publish(self, weights: dict[str, Any]) -> int:
        """The learner's weights (arrays or tensors, copied now) for the workers' next calls; their version."""
        arrays = {k: v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v) for k, v in weights.items()}
        self.version += 1
        if self.transport == PROCESSES:
            self.weights = self._keep(arrays)
            self._share(arrays)
        else:
            self.weights = self._put(arrays)
        return self.version

    def _keep(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A copy of the weights for replaying a dead worker's calls, in the buffers of a version no call since the
        last snapshot used when there is one (a fresh 13 MB array costs more in page faults than the copy)."""
        used = {v for v, _, _ in self._history} | {self.version - 1}
        if self._pending is not None:
            used.add(self._pending[0][0])
        for v in [v for v in self._kept if v not in used]:
            self._spare.append(self._kept.pop(v))
        del self._spare[(self.held_versions or 0) + 2:]
        spare = self._spare.pop() if self._spare else None
        fits = spare is not None and spare.keys() == arrays.keys() and all(
            spare[k].shape == a.shape and spare[k].dtype == a.dtype for k, a in arrays.items())
        out = spare if fits else {k: np.empty_like(a) for k, a in arrays.items()}
        for k, a in arrays.items():
            out[k][...] = a
        self._kept[self.version] = out
        return out

    def _share(self, arrays: dict[str, np.ndarray]) -> None:
        """Write the newest weights into a shared-memory block the worker processes read them from: not the block of
        the call in flight (its workers may still be copying from it), a new block when their size changed."""
        from multiprocessing import shared_memory

        layout, off = [], 0
        for k, v in arrays.items():
            off = -(-off // 64) * 64
            layout.append((k, v.dtype.str, tuple(v.shape), off))
            off += v.nbytes
        b = 1 - (self._pending[2] if self._pending is not None else self._cur)
        if self._blocks[b] is None or self._blocks[b].size < max(off, 1):
            self._unshare(b)
            self._blocks[b] = shared_memory.SharedMemory(create=True, size=max(off, 1))
        for (k, dt, shape, o), v in zip(layout, arrays.values()):
            np.ndarray(shape, dtype=np.dtype(dt), buffer=self._blocks[b].buf, offset=o)[...] = v
        self._layouts[b], self._cur = layout, b

    def _unshare(self, b: int) -> None:
        if self._blocks[b] is not None:
            self._blocks[b].close()
            self._blocks[b].unlink()
            self._blocks[b] = None

    @property
    def busy(self) -> bool:
        """Whether a play call is in flight (`submit` made, `gather` not yet)."""
        return self._pending is not None

    def _idle(self, what: str) -> None:
        if self._pending is not None:
            raise RuntimeError(f"{what} while a play call is in flight: gather() it first")

    def submit(self, steps: int = 1) -> None:
        """Start every worker's `steps` turns with the newest published weights; `gather()` returns the results. The
        learner may learn and publish meanwhile (the newer weights are for the calls after this one)."""
        self._idle("submit()")
        call = (self.version, self.weights, int(steps))
        handles: list[Any] = []
        for k in range(len(self.actors)):
            try:
                handles.append(self._submit(k, "play", call))
            except WorkerDied:
                handles.append(None)
        self._pending = (call, handles, self._cur)

    def gather(self) -> list[Any]:
        """The results of the call in flight, in worker order (a worker that died meanwhile put back and asked
        again)."""
        if self._pending is None:
            raise RuntimeError("gather() without a play call in flight: submit() one first")
        call, handles, _ = self._pending
        out = [self._finish(k, h, "play", call) for k, h in enumerate(handles)]
        self._history.append(call)
        self._pending = None
        if self.held_versions is not None and len({v for v, _, _ in self._history}) > self.held_versions:
            self.snapshot()  # a new base to replay from: the old weights can go
        return out

    def play(self, steps: int = 1) -> list[Any]:
        """Every worker's results of `steps` turns with the newest published weights (worker order)."""
        self.submit(steps)
        return self.gather()

    def snapshot(self) -> list[Any]:
        """Every worker's games in flight and generator (worker order); also where a dead worker is put back."""
        self._idle("snapshot()")
        snaps = self._all("snapshot", ())
        self._base, self._history = [self._put(s) for s in snaps], []
        return snaps

    def restore(self, snaps: Sequence[Any]) -> None:
        """Every worker back to a snapshot (`snapshot()`'s list, e.g. from a checkpoint)."""
        self._idle("restore()")
        if len(snaps) != len(self.actors):
            raise ValueError(f"a snapshot of {len(snaps)} workers cannot resume {len(self.actors)}")
        self._base, self._history = [self._put(s) for s in snaps], []
        self._all_each("restore", [(b,) for b in self._base])

    def pids(self) -> list[int]:
        self._idle("pids()")
        return [int(p) for p in self._all("pid", ())]

    def close(self) -> None:
        if self.transport == PROCESSES:
            for p in self.actors:
                p.close()
            self._unshare(0)
            self._unshare(1)
        else:
            import ray

            for a in self.actors:
                ray.kill(a, no_restart=True)
            if self.session is not None:
                self.session.close()
        self.actors = []


__all__ = ["WorkerPool", "worker_seed", "pack_rows", "unpack_rows", "check_transport", "PROCESSES"]
