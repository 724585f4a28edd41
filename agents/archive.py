"""The one reader of every file that holds arrays or tensors: `.npz` archives (the n-tuple network, the trainers'
`step_*.npz` states) and torch zips (`torch.save` files: MLP and PPO exports, trainer `step_*.pt`, RLlib
`module.pt`, the `policy.pth` inside a Stable-Baselines3 zip).

Why one reader: a zip declares each member's uncompressed size, and a `.npy` header or a torch record its array's
shape; numpy and torch trust both and allocate or inflate first. A 3.6 MB zip declaring 2 GiB made the loaders take
2.4 GB before refusing it. Here every declared size is checked against the caller's cap and the file's own size
before anything is inflated, so refusing a crafted file costs about its own size in memory:

- a zip has at most MAX_MEMBERS members, no two members share bytes beyond the file, a stored member declares what
  it holds, a deflated one at most DEFLATE_MAX_RATIO times what it holds (more is impossible for deflate), no
  other compression; the declared total is at most the caller's cap;
- a torch zip is stored only (as `torch.save` writes it), so its declared total is at most the file's size; each
  tensor's storage (numel x element size, from the pickle, read first onto the meta device: nothing allocated) fits
  in the largest record; then `torch.load(weights_only=True)`, which never unpickles code;
- each `.npy` member's header (dtype without objects, shape) must describe exactly the bytes its member declares,
  and its data is read only to that size.

Every refusal is one `CheckpointError` line naming the file.
"""
from __future__ import annotations

import io
import math
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .checkpoint import CheckpointError

#: Most members a zip read here may list (an npz of a trainer's state holds a few dozen; a torch zip one per tensor).
MAX_MEMBERS = 4096
#: Deflate cannot expand data more than about 1032:1; a member declaring more than this times its compressed size
#: lies about its size.
DEFLATE_MAX_RATIO = 1032
#: Largest `data.pkl` (a torch zip's pickle of names, shapes and storage keys) read, in bytes.
MAX_PICKLE_BYTES = 64 << 20
#: Largest `.npy` header read (numpy's own default cap).
MAX_NPY_HEADER = 10_000


def _size_of(source: bytes | Path) -> int:
    return len(source) if isinstance(source, (bytes, bytearray)) else Path(source).stat().st_size


def _open(source: bytes | Path) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else Path(source))


def check_zip(zf: zipfile.ZipFile, file_size: int, max_bytes: int, where: Any, stored_only: bool = False) -> int:
    """The declared (uncompressed) total of zip `zf` (a file of `file_size` bytes), each member checked as the
    module docstring says before any is read; else CheckpointError naming `where`."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise CheckpointError(f"{where}: a zip of {len(infos):,} members, more than {MAX_MEMBERS:,}")
    total = packed = 0
    for i in infos:
        if i.compress_type == zipfile.ZIP_STORED:
            ok = i.file_size == i.compress_size
        elif i.compress_type == zipfile.ZIP_DEFLATED and not stored_only:
            ok = i.file_size <= DEFLATE_MAX_RATIO * i.compress_size + 1024
        else:
            raise CheckpointError(f"{where}: zip member {i.filename[:60]!r} is compressed ("
                                  f"{'this file is written stored' if stored_only else 'not stored or deflated'})")
        if not ok:
            raise CheckpointError(f"{where}: zip member {i.filename[:60]!r} declares {i.file_size:,} bytes from "
                                  f"{i.compress_size:,} stored (a zip bomb or a damaged zip)")
        total += i.file_size
        packed += i.compress_size
    if packed > file_size:
        raise CheckpointError(f"{where}: its zip members claim {packed:,} bytes, more than the file's {file_size:,}")
    if total > max_bytes:
        raise CheckpointError(f"{where}: its arrays would take {total:,} bytes, more than the {max_bytes:,} allowed")
    return total


class Arrays(dict):
    """The arrays of an .npz by name (a dict), usable where `np.load`'s NpzFile was: `.files`, `with`."""

    @property
    def files(self) -> list[str]:
        return list(self)

    def __enter__(self) -> Arrays:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _npy(f: Any, size: int, name: str, where: Any) -> np.ndarray:
    """One `.npy` member (file object `f`, declaring `size` bytes): its header must describe exactly `size` bytes
    of plain (no object) data, read only then."""
    from numpy.lib import format as npf

    try:
        version = npf.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npf.read_array_header_1_0(f, max_header_size=MAX_NPY_HEADER)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npf.read_array_header_2_0(f, max_header_size=MAX_NPY_HEADER)
        else:
            raise ValueError(f"npy version {version}")
    except (ValueError, TypeError, SyntaxError, EOFError, OSError, zlib.error, zipfile.BadZipFile) as e:
        raise CheckpointError(f"{where}: member {name[:60]!r} is not an .npy array ({str(e)[:100]})") from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise CheckpointError(f"{where}: member {name[:60]!r} holds {dtype} values, not plain numbers")
    nbytes = math.prod(shape) * dtype.itemsize
    if f.tell() + nbytes != size:
        raise CheckpointError(f"{where}: member {name[:60]!r} declares shape {tuple(shape)} of {dtype} "
                              f"({nbytes:,} bytes) in a member of {size:,} bytes")
    try:
        raw = f.read(nbytes)
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as e:
        raise CheckpointError(f"{where}: member {name[:60]!r} is damaged ({type(e).__name__})") from None
    if len(raw) != nbytes:
        raise CheckpointError(f"{where}: member {name[:60]!r} ends early")
    a = np.frombuffer(raw, dtype=dtype).copy()
    return a.reshape(shape, order="F" if fortran else "C")


def read_npz(source: bytes | Path, max_bytes: int, where: Any = None, stored_only: bool = False) -> Arrays:
    """Every array of an .npz (its bytes or its path), checked before it is inflated (the module docstring):
    at most `max_bytes` declared in all; with `stored_only` (what `np.savez` writes: the trainers' states) no
    compressed member, so no more than the file holds; no pickles. CheckpointError (one line naming `where`,
    default the path) for anything else."""
    where = where if where is not None else (source if isinstance(source, Path) else "the .npz")
    out = Arrays()
    try:
        with _open(source) as zf:
            check_zip(zf, _size_of(source), max_bytes, where, stored_only)
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise CheckpointError(f"{where}: member {info.filename[:60]!r} is not an .npy array")
                with zf.open(info) as f:
                    out[info.filename[:-4]] = _npy(f, info.file_size, info.filename, where)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError, NotImplementedError) as e:
        if isinstance(e, CheckpointError):
            raise
        raise CheckpointError(f"{where}: not a readable .npz ({type(e).__name__}: {str(e)[:100]})") from None
    return out


def _tensors(obj: Any, depth: int = 0) -> Iterator[Any]:
    import torch

    if depth > 32:
        return
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v, depth + 1)


def check_torch(data: bytes, max_bytes: int, where: Any) -> None:
    """Refuse (CheckpointError naming `where`) a torch zip whose members or tensors declare more than it holds:
    stored members only, at most `max_bytes` and the file's size in all, `data.pkl` at most MAX_PICKLE_BYTES,
    and every tensor's storage (read onto the meta device: nothing allocated) within the largest record."""
    import warnings

    import torch

    try:
        with _open(data) as zf:
            check_zip(zf, len(data), max_bytes, where, stored_only=True)
            infos = zf.infolist()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as e:
        raise CheckpointError(f"{where}: not a torch zip ({type(e).__name__}: {str(e)[:80]}; torch.save writes "
                              f"zips)") from None
    if any(i.filename.endswith("data.pkl") and i.file_size > MAX_PICKLE_BYTES for i in infos):
        raise CheckpointError(f"{where}: its data.pkl is larger than {MAX_PICKLE_BYTES:,} bytes")
    largest = max((i.file_size for i in infos if "/data/" in i.filename), default=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        meta = torch.load(io.BytesIO(data), map_location="meta", weights_only=True)
    for t in _tensors(meta):
        need = t.untyped_storage().nbytes()
        if need > largest:
            raise CheckpointError(f"{where}: a tensor of shape {tuple(t.shape)} declares a storage of {need:,} bytes, "
                                  f"more than any record in the file holds ({largest:,})")


def read_torch(data: bytes, max_bytes: int, where: Any, map_location: Any = "cpu") -> Any:
    """What `torch.save` wrote in `data`, after `check_torch`: `torch.load(weights_only=True)`, which refuses code
    (pickled objects) with its own exception (callers word it). CheckpointError naming `where` for a file whose
    declared sizes exceed what it holds or `max_bytes`."""
    import warnings

    import torch

    check_torch(data, max_bytes, where)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)


__all__ = ["Arrays", "DEFLATE_MAX_RATIO", "MAX_MEMBERS", "MAX_NPY_HEADER", "MAX_PICKLE_BYTES", "check_torch",
           "check_zip", "read_npz", "read_torch"]
