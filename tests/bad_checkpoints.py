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
                r"m\.pt: not a weights-only .*refused it")
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
