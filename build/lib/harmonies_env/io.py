"""Atomic file writes: a reader (or a resumed run) sees the old file or the new one, never a torn one.

Why: a process killed mid-write (SIGKILL, power loss, a full disk) otherwise leaves a truncated file in place of
the last good one. Each write goes to a temporary file in the SAME folder (so the rename never crosses file
systems), is flushed and fsync'ed, then `os.replace`d over the target (atomic on POSIX and Windows), and the
folder is fsync'ed so the rename itself survives a crash. On any error the temporary file is removed and the
target is untouched.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterator

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_writer", "atomic_save", "fsync_dir"]


def fsync_dir(folder: str | os.PathLike) -> None:
    """fsync a folder, so that a rename into it survives a crash (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. Windows: folders cannot be opened; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None,
                  newline: str | None = None) -> Iterator[IO]:
    """`with atomic_writer(p, "w") as f: ...` writes p atomically ("w" text or "wb" bytes).

    The file appears under its name only when the block finishes without an exception.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        try:  # mkstemp makes 0600 files: keep an existing file's permissions, else the usual 0644
            os.chmod(tmp, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        except OSError:
            pass
        with os.fdopen(fd, mode, encoding=encoding if mode == "w" else None,
                       newline=newline if mode == "w" else None) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_writer(path, "wb") as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically; returns the path."""
    with atomic_writer(path, "w", encoding=encoding) as f:
        f.write(text)
    return Path(path)


def atomic_save(path: str | os.PathLike, save: Callable[[IO[bytes]], None]) -> Path:
    """Atomically write what `save(binary_file)` writes (e.g. `lambda f: image.save(f, format="PNG")`)."""
    with atomic_writer(path, "wb") as f:
        save(f)
    return Path(path)
