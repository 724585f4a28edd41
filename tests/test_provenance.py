"""Provenance: what a result records of the code, weights, machine and time that produced it."""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from agents.checkpoint import SHIPPED
from harmonies_apps.provenance import git_state, provenance, weights_files


def test_provenance_names_the_weights_by_their_sidecars_hash_and_the_machine(tmp_path):
    rec = provenance(["learned", "greedy", "learned-win", "mlp-search:4it", "learned"], cpu=2.5, argv=["x", "y"])
    sidecar = json.loads((SHIPPED / "learned.json").read_text())["sha256"]
    assert rec["weights"]["learned"] == {"learned.npz": sidecar}
    assert set(rec["weights"]) == {"learned", "learned-win", "mlp-search:4it"}  # greedy plays no weights
    assert set(rec["weights"]["learned-win"]) == {"learned.npz", "learned-win.npz"}
    assert rec["weights"]["mlp-search:4it"] == {"mlp.pt": json.loads((SHIPPED / "mlp.json").read_text())["sha256"]}
    assert weights_files(f"learned:{SHIPPED / 'learned.npz'}") == [SHIPPED / "learned.npz"]
    when = datetime.fromisoformat(rec["date"])
    assert when.tzinfo == timezone.utc and abs((datetime.now(timezone.utc) - when).total_seconds()) < 3600
    assert rec["cpu_seconds"] == 2.5 and rec["command"] == ["x", "y"] and rec["package"] == "harmonies-env"
    assert rec["machine"]["cores"] >= 1 and rec["machine"]["platform"]
    git = rec["git"]
    if git is not None:  # a checkout (not an installed wheel): HEAD and whether tracked files changed
        assert re.fullmatch(r"[0-9a-f]{40}", git["commit"]) and isinstance(git["dirty"], bool)
    assert git_state(tmp_path) is None  # not a git checkout
    json.dumps(rec)  # plain JSON
