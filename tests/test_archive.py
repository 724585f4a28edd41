"""The one reader of files holding arrays or tensors (`agents.archive`): a small crafted file declaring gigabytes is
refused in one line before anything is inflated, by every loader, with peak memory near the file's own size
(measured as the peak resident size, VmHWM, of a fresh process). docs/safety.md lists the limits."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents.archive import read_npz
from agents.checkpoint import CheckpointError

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30

#: Each loader given a bomb declaring 1 GiB in about 1 MB, in a fresh process; prints one JSON line per case:
#: the case, the peak resident growth in MiB since before the load, the refusal's text.
_SCRIPT = r"""
import json, sys, shutil, zipfile
from pathlib import Path
sys.path.insert(0, "tests")
from bad_checkpoints import copy_shipped, npz_bomb, torch_bomb
from agents.archive import read_npz, read_torch
from agents.mlp import DEFAULT_CHECKPOINT, load_checkpoint as load_mlp
from agents.ntuple import load_checkpoint as load_ntuple
from agents.checkpoint import write_checkpoint
GIB = 1 << 30
tmp = Path(sys.argv[1])
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024

def mlp():
    load_mlp(copy_shipped(tmp / "mlp", torch_bomb(GIB, pad=DEFAULT_CHECKPOINT.stat().st_size), fix_sha=True))

def ntuple():
    from agents.ntuple import DEFAULT_CHECKPOINT as NT
    shutil.copy(NT.with_suffix(".json"), tmp / "nt.json")
    doc = json.loads((tmp / "nt.json").read_text())
    bomb = npz_bomb(GIB)
    (tmp / "nt.npz").write_bytes(bomb)
    import hashlib
    doc["sha256"] = hashlib.sha256(bomb).hexdigest()
    doc.pop("bytes", None)
    (tmp / "nt.json").write_text(json.dumps(doc))
    load_ntuple(tmp / "nt.npz")

def sb3_zip():
    from agents.ppo import load_policy
    with zipfile.ZipFile(sys.argv[2]) as src, zipfile.ZipFile(tmp / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename != "policy.pth":
                dst.writestr(info.filename, src.read(info))
        dst.writestr("policy.pth", torch_bomb(GIB, pad=len(src.read("policy.pth"))))
    load_policy(tmp / "bomb.zip")

def trainer_npz():
    (tmp / "step.npz").write_bytes(npz_bomb(GIB))
    read_npz(tmp / "step.npz", (tmp / "step.npz").stat().st_size, tmp / "step.npz", stored_only=True)

def torch_zip():
    read_torch(torch_bomb(GIB), 4 * GIB, "module.pt")

import torch  # noqa: F401 (imported before the baseline, as every loader does)
for case in sys.argv[3].split(","):
    before = hwm()
    try:
        globals()[case]()
        said = "loaded"
    except Exception as e:
        said = f"{type(e).__name__}: {e}"
    print(json.dumps({"case": case, "mib": round(hwm() - before, 1), "said": said}), flush=True)
"""

CASES = ("torch_zip", "mlp", "sb3_zip", "ntuple", "trainer_npz")


def test_a_small_file_declaring_a_gigabyte_is_refused_in_one_line_by_every_loader_within_its_own_size(
        tmp_path, tiny_zip):
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path), str(tiny_zip), ",".join(CASES)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [r["case"] for r in rows] == list(CASES), out.stderr[-2000:]
    for r in rows:
        # each crafted file is about 1 MB (the MLP's and the SB3 zip's padded to their expected sizes, ~3 MB);
        # refusing it may read the file and little else
        assert r["mib"] < 48, r
        assert "\n" not in r["said"] and r["said"] != "loaded", r
        assert "ValueError" in r["said"] or "CheckpointError" in r["said"], r


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_npz_members_are_read_exactly_as_declared_and_nothing_else():
    a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.asfortranarray(np.eye(3, dtype=np.int64))
    got = read_npz(_npz(a=a, b=b), 1 << 20, "x.npz", stored_only=True)
    assert got.files == ["a", "b"] and np.array_equal(got["a"], a) and np.array_equal(got["b"], b)
    assert got["a"].flags.writeable
    with pytest.raises(CheckpointError, match=r"x\.npz: its arrays would take [0-9,]+ bytes, more than the 100 "):
        read_npz(_npz(a=a), 100, "x.npz")
    with pytest.raises(CheckpointError, match=r"x\.npz: member 'o\.npy' is not an \.npy array|holds object"):
        read_npz(_npz(o=np.array([None, 1], dtype=object)), 1 << 20, "x.npz")
    with pytest.raises(CheckpointError, match=r"x\.npz: zip member 'a\.npy' is compressed \(this file is written"):
        buf = io.BytesIO()
        np.savez_compressed(buf, a=a)
        read_npz(buf.getvalue(), 1 << 20, "x.npz", stored_only=True)
    npy = io.BytesIO()  # the header's shape edited to claim more than the member holds: refused before reading
    np.save(npy, a)
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a.npy", npy.getvalue().replace(b"(3, 4)", b"(9, 4)"))
    edited = z.getvalue()
    with pytest.raises(CheckpointError, match=r"x\.npz: member 'a\.npy' declares shape \(9, 4\) of float32"):
        read_npz(edited, 1 << 20, "x.npz")
    with pytest.raises(CheckpointError, match=r"x\.npz: not a readable \.npz"):
        read_npz(b"not a zip", 1 << 20, "x.npz")
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("notes.txt", b"hi")
    with pytest.raises(CheckpointError, match=r"member 'notes\.txt' is not an \.npy array"):
        read_npz(z.getvalue(), 1 << 20, "x.npz")


def test_a_torch_zip_loads_and_a_tensor_declaring_more_than_its_record_is_refused():
    torch = pytest.importorskip("torch")
    from bad_checkpoints import torch_bomb, zip_of

    from agents.archive import read_torch

    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0)}, buf)
    assert torch.equal(read_torch(buf.getvalue(), 1 << 20, "t.pt")["w"], torch.arange(6.0))
    with pytest.raises(CheckpointError, match=r"t\.pt: zip member '.*data/0' is compressed"):
        read_torch(torch_bomb(1 << 20), GIB, "t.pt")
    with zipfile.ZipFile(io.BytesIO(torch_bomb(1 << 20))) as zf:  # the same record stored, but only 4 bytes
        members = [(i.filename, zf.read(i) if "/data/" not in i.filename else bytes(4), 0,
                    4 if "/data/" in i.filename else i.file_size) for i in zf.infolist()]
    with pytest.raises(CheckpointError, match=r"t\.pt: a tensor of shape \(262144,\) declares a storage of "
                                              r"1,048,576 bytes, more than any record in the file holds \(4\)"):
        read_torch(zip_of(members), GIB, "t.pt")



_RESUME = r"""
import hashlib, json, sys
from pathlib import Path
sys.path.insert(0, "tests")
from bad_checkpoints import npz_bomb
from experiments.common import latest_checkpoint, load_config
from experiments.evaluators.ntuple import settings
from experiments.selfplay_command import build
run = Path(sys.argv[1])
cfg = settings(load_config("experiments/configs/learned_tiny.toml"))
t = build("learned", cfg, 5, run, progress=False)
t.iteration += 1  # no game played first: the file is replaced below, and a step compiled the agents (~70 s cold)
t.save()
step, record = latest_checkpoint(run / "checkpoints")
bomb = npz_bomb(1 << 30, name="kinds")  # a trainer state whose first array read declares 1 GiB, its record true
step.write_bytes(bomb)
record.update(bytes=len(bomb), sha256=hashlib.sha256(bomb).hexdigest())
step.with_suffix(".json").write_text(json.dumps(record))
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
again = build("learned", cfg, 5, run, progress=False)
before = hwm()
try:
    again.load(*latest_checkpoint(run / "checkpoints"))
    said = "loaded"
except Exception as e:
    said = f"{type(e).__name__}: {e}"
print(json.dumps({"mib": round(hwm() - before, 1), "said": said}))
"""


def test_resume_refuses_a_trainer_state_declaring_a_gigabyte_before_inflating_it(tmp_path):
    """`--resume` (`Learner.load`) reads the trainer's step_*.npz through the same reader: it is written stored,
    so no member may declare more than the file holds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _RESUME, str(tmp_path / "run")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert rows, out.stderr[-2000:]
    assert rows[0]["mib"] < 48 and "\n" not in rows[0]["said"], rows
    assert rows[0]["said"].startswith("CheckpointError: ") and "step_" in rows[0]["said"], rows
    assert "is compressed (this file is written stored)" in rows[0]["said"], rows


def test_a_trusted_sb3_zip_is_still_refused_before_a_bomb_inside_it_is_inflated(tmp_path, tiny_zip):
    """--trust-checkpoint lets the file run code through SB3, not make it inflate 1 GiB first."""
    from bad_checkpoints import torch_bomb

    from agents.ppo import load_policy

    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(tiny_zip) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info) if info.filename != "policy.pth" else torch_bomb(GIB))
    with pytest.raises(ValueError, match=r"bomb\.zip: policy\.pth: zip member '.*data/0' is compressed"):
        load_policy(bomb, trust=True)
    assert load_policy(tiny_zip, trust=True) is not None
