"""Learned checkpoints that must be refused, built from copies of the shipped one (tests/test_learned.py and
tests/test_hostile.py): each as NAME.pt + NAME.json in its own folder, with a regex its CheckpointError matches.

Needs torch only to build the tensor cases; the shipped files are never changed.
"""
from __future__ import annotations

import hashlib
import io
import json
import pickle
from pathlib import Path
from typing import Any, Callable

from agents.mlp import DEFAULT_CHECKPOINT

#: The refusals every command must report in one line (docs/safety.md): name -> what the message says.
CASES = ("truncated", "empty", "pickle", "network-list", "deep-json", "extra-key", "extra-top-key", "not-json",
         "bad-sha256", "lists")


def copy_shipped(folder: Path, pt: bytes | None = None, edit: Callable[[dict], Any] | None = None,
                 fix_sha: bool = False) -> Path:
    """A copy of the shipped checkpoint as folder/m.pt + m.json: other weights `pt`, its JSON replaced by edit(doc)
    (a dict, or text written as is), and with fix_sha the JSON recording the copy's true SHA-256 (a pair crafted
    together, so the check after the hash is what refuses it)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = DEFAULT_CHECKPOINT.read_bytes() if pt is None else pt
    doc = json.loads(DEFAULT_CHECKPOINT.with_suffix(".json").read_text())
    if fix_sha:
        doc["sha256"] = hashlib.sha256(data).hexdigest()
    if edit is not None:
        doc = edit(doc)
    (folder / "m.pt").write_bytes(data)
    (folder / "m.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return folder / "m.pt"


def torch_bytes(obj: Any) -> bytes:
    """What `torch.save(obj)` writes."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def bad_checkpoint(case: str, folder: Path) -> tuple[Path, str]:
    """(the refused checkpoint `case` of CASES in folder/case, a regex its one-line message matches)."""
    raw = DEFAULT_CHECKPOINT.read_bytes()
    d = folder / case
    if case == "truncated":
        return (copy_shipped(d, raw[: len(raw) // 2], fix_sha=True),
                r"m\.json: the network config holds [0-9,]+ bytes of weights, the weights file [0-9,]+")
    if case == "empty":
        return copy_shipped(d, b"", fix_sha=True), r"m\.json: the network config holds [0-9,]+ bytes .* file 0:"
    if case == "pickle":  # a pickle naming a function: the weights-only unpickler refuses it, nothing runs
        return (copy_shipped(d, pickle.dumps({"0.weight": print, "pad": bytes(len(raw))}), fix_sha=True),
                r"m\.pt: not a torch zip")
    if case == "network-list":
        return copy_shipped(d, edit=lambda doc: {**doc, "network": [1]}), r"m\.json: the network config must be an"
    if case == "deep-json":
        return (copy_shipped(d, edit=lambda doc: '{"network": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                r"m\.json: JSON nested deeper than 32 levels")
    if case == "extra-key":
        return (copy_shipped(d, edit=lambda doc: {**doc, "network": {**doc["network"], "extra": 1}}),
                r"m\.json: the network config has unknown entries \['extra'\]")
    if case == "extra-top-key":
        return copy_shipped(d, edit=lambda doc: {**doc, "extra": 1}), r"m\.json: unknown entries \['extra'\]"
    if case == "not-json":
        return copy_shipped(d, edit=lambda doc: "{nope"), r"m\.json: not valid JSON"
    if case == "bad-sha256":  # one flipped bit, the JSON as shipped
        return copy_shipped(d, raw[:-1] + bytes([raw[-1] ^ 1])), r"m\.pt: SHA-256 [0-9a-f]{64} is not the [0-9a-f]{64}"
    if case == "lists":
        import torch

        state = torch.load(DEFAULT_CHECKPOINT, map_location="cpu", weights_only=True)
        return (copy_shipped(d, torch_bytes({k: v.tolist() for k, v in state.items()}), fix_sha=True),
                r"m\.pt: '0\.weight' must be a \(dense\) tensor, got list")
    raise ValueError(f"unknown case {case!r}")


def deflated_zeros(n: int) -> bytes:
    """A raw deflate stream of `n` zero bytes (n a multiple of 1 MiB), about n / 1000 bytes long, built from one
    flushed 1 MiB piece repeated, so that a test never holds the n bytes."""
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    return piece * (n >> 20) + c.flush(zlib.Z_FINISH)


def zip_of(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of (name, payload as written, method 0 stored / 8 deflated, declared uncompressed size) members,
    written by hand so that a member may declare any size (a deflated member's CRC is 0: the readers must refuse
    it before checking)."""
    import struct
    import zlib

    out, central = bytearray(), bytearray()
    for name, payload, method, size in members:
        n = name.encode()
        offset, crc = len(out), zlib.crc32(payload) if method == 0 else 0
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(payload), size, len(n), 0)
        out += n + payload
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(payload), size,
                               len(n), 0, 0, 0, 0, 0, offset) + n
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)


def torch_bomb(declared: int, pad: int = 0) -> bytes:
    """A torch zip whose one tensor 'w' declares `declared` bytes (float32, at most 8 GiB), its record a deflate
    bomb of that size in about declared / 1000 bytes, plus a stored member of `pad` zeros (to reach a size a loader
    expects): a saved 123,457-float tensor with that count rewritten in its pickle."""
    import struct
    import zipfile

    import torch

    buf = io.BytesIO()
    torch.save({"w": torch.zeros(123_457)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        members = [(i.filename, zf.read(i), 0, i.file_size) for i in zf.infolist() if "/data/" not in i.filename]
    old, count = struct.pack("<i", 123_457), struct.pack("<i", declared // 4)
    pkl = members[0][1].replace(b"J" + old, b"J" + count)
    assert pkl != members[0][1]
    members[0] = (members[0][0], pkl, 0, len(pkl))
    prefix = members[0][0].split("/")[0]
    members.append((f"{prefix}/data/0", deflated_zeros(declared), 8, declared))
    if pad:
        members.append((f"{prefix}/pad", bytes(pad), 0, pad))
    return zip_of(members)


def npz_bomb(declared: int, pad: int = 0, name: str = "weights") -> bytes:
    """An .npz whose one array `name` declares `declared` bytes (float32), deflated as a bomb (see torch_bomb)."""
    import zlib

    from numpy.lib import format as npf

    head = io.BytesIO()
    npf.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (declared // 4,)})
    h = head.getvalue()
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = c.compress(h) + c.flush(zlib.Z_FULL_FLUSH) + deflated_zeros(declared)
    members = [(f"{name}.npy", stream, 8, len(h) + declared)]
    if pad:
        members.append(("pad.npy", bytes(pad), 0, pad))
    return zip_of(members)
