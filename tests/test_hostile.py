"""A hostile or careless user: crafted checkpoints, edited states, odd action types, hidden information,
broken records, bad scoring input, bad budgets, interrupted writes. See docs/safety.md for what is promised.

Every test here checks the promised behaviour: a clear error naming what was wrong (with the state unchanged),
or a correct result, never code run from a file, a leaked secret or a crashed process.
"""
from __future__ import annotations

import base64
import json
import math
import os
import pickle
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from harmonies_env import state as S
from harmonies_env.actions import NUM_ACTIONS
from harmonies_env.batch import BatchedGames, SelfPlayBatch, init_batch, rollout_batch
from harmonies_env.cards import card_name
from harmonies_env.config import GameConfig
from harmonies_env.env_aec import raw_env
from harmonies_env.env_gym import SoloEnv, VersusEnv
from harmonies_env.game import Game, IllegalActionError, determinize, score_board
from harmonies_env.io import atomic_write_bytes, atomic_write_text, atomic_writer
from harmonies_env.validate import check_state
from harmonies_env.view import PlayerView

ROOT = Path(__file__).resolve().parents[1]
BAD_ACTIONS = [True, False, 4.0, 4.7, "4", np.float32(4.0), np.bool_(True), None, [4], 2**63, 2**64, -(2**63) - 1,
               10**30]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---------------------------------------------------------------------------------------------------------
# 1. checkpoints never run code unless trusted
# ---------------------------------------------------------------------------------------------------------
class _CreatesFile:
    """Unpickling this creates a file: the stand-in for arbitrary code in a crafted checkpoint."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _evil_b64(path: Path) -> str:
    return base64.b64encode(pickle.dumps(_CreatesFile(path))).decode()


def _craft(src: Path, dst: Path, data_edit=None, members: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(src) as z:
        items = {n: z.read(n) for n in z.namelist()}
    data = json.loads(items["data"])
    if data_edit:
        data_edit(data)
    items["data"] = json.dumps(data).encode()
    items.update(members or {})
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in items.items():
            z.writestr(n, b)
    return dst


def test_crafted_lr_schedule_never_runs_by_default_but_does_when_trusted(tiny_zip, tmp_path):
    from agents import make_agent
    from agents.ppo import PPOAgent

    marker = tmp_path / "pwned"
    evil = _craft(tiny_zip, tmp_path / "evil.zip",
                  lambda d: d["lr_schedule"].__setitem__(":serialized:", _evil_b64(marker)))
    agent = PPOAgent(evil)  # weights only: the pickled schedule is never read
    assert not marker.exists()
    g = Game(1, seed=3)
    a = agent.act(PlayerView(g, 0))
    assert a in g.legal_actions()
    make_agent(f"ppo:{evil}")
    assert not marker.exists()
    # the opt-in is exactly what lets the file run code (which is why it is an opt-in)
    PPOAgent(evil, trust=True)
    assert marker.exists()


@pytest.mark.parametrize("where", ["policy_kwargs", "policy_class", "action_space", "policy.pth"])
def test_checkpoints_that_need_unpickling_are_refused_before_anything_runs(tiny_zip, tmp_path, where):
    from agents.ppo import PPOAgent, UntrustedCheckpointError

    marker = tmp_path / "pwned"
    evil = _evil_b64(marker)
    members = None
    if where == "policy_kwargs":
        def edit(d):
            d["policy_kwargs"] = {":type:": "<class 'dict'>", ":serialized:": evil}
    elif where == "policy_class":
        def edit(d):
            d["policy_class"] = {":type:": "<class 'abc.ABCMeta'>", ":serialized:": evil, "__module__": "os"}
    elif where == "action_space":
        def edit(d):
            d["action_space"] = {":type:": "<class 'gymnasium.spaces.multi_discrete.MultiDiscrete'>",
                                 ":serialized:": evil}
    else:
        edit = None
        members = {"policy.pth": pickle.dumps(_CreatesFile(marker))}
    path = _craft(tiny_zip, tmp_path / "evil.zip", edit, members)
    with pytest.raises(UntrustedCheckpointError, match="trust-checkpoint"):
        PPOAgent(path)
    assert not marker.exists()


def test_cli_refuses_a_crafted_checkpoint_in_one_line(tiny_zip, tmp_path):
    marker = tmp_path / "pwned"
    pickled = {":type:": "<class 'dict'>", ":serialized:": _evil_b64(marker)}
    path = _craft(tiny_zip, tmp_path / "evil.zip", lambda d: d.__setitem__("policy_kwargs", pickled))
    p = subprocess.run([sys.executable, "-m", "harmonies_apps.cli", "solo", "--agents", f"ppo:{path}", "--games", "1",
                        "--quiet"], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "--trust-checkpoint" in p.stderr and not marker.exists()


#: Refused learned checkpoints (tests/bad_checkpoints.py) each command must report in one line.
LEARNED_CLI_CASES = ("truncated", "empty", "pickle", "network-list", "deep-json", "extra-key", "bad-sha256", "lists")


@pytest.mark.parametrize("case", LEARNED_CLI_CASES)
def test_refused_learned_checkpoints_are_one_line_and_exit_2_from_both_commands(case, tmp_path, capsys):
    """`harmonies tournament --agents mlp:PATH` and `python -m experiments.eval_mlp --checkpoint PATH` print
    one line naming the file and what is wrong, exit 2, no traceback (docs/safety.md), for each way a learned
    checkpoint is refused: damaged, a pickle, a bad config, a wrong hash, weights that are not tensors. Each case runs
    both commands' `main` in this process; the pickle also runs them as processes of their own, as a user does."""
    pytest.importorskip("torch", reason="needs the train extra: pip install -e \".[train]\"")
    from bad_checkpoints import bad_checkpoint

    from experiments import eval_mlp
    from harmonies_apps import cli

    path, match = bad_checkpoint(case, tmp_path)
    commands = {"harmonies tournament: ": (cli.main, "harmonies_apps.cli",
                                           ["tournament", "--agents", f"mlp:{path}", "greedy", "--games", "1",
                                            "--quiet"]),
                "eval_mlp: ": (eval_mlp.main, "experiments.eval_mlp",
                               ["--checkpoint", str(path), "--games", "2", "--no-progress"])}
    for prefix, (main, module, argv) in commands.items():
        runs = [(main(argv), capsys.readouterr().err)]
        if case == "pickle":
            p = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, env=_env(),
                               cwd=tmp_path, timeout=300)
            runs.append((p.returncode, p.stderr))
        for code, err in runs:
            lines = err.strip().splitlines()
            assert code == 2 and "Traceback" not in err and len(lines) == 1, (argv, err)
            assert lines[0].startswith(prefix) and str(path.parent) in lines[0] and re.search(match, lines[0]), lines[0]


def test_damaged_or_crafted_ppo_files_are_one_line_refusals(tiny_zip, tmp_path):
    """Issue 38: a flipped byte in an SB3 zip (BadZipFile before), its `data` nested 100,000 deep (RecursionError
    before), a policy.pth far larger than the architecture it declares (a zip bomb) and an export declaring
    net_arch [10000000] with a matching SHA-256 (112 GB before) are each one ValueError line naming the file, refused
    before anything large is allocated."""
    import torch

    from agents.checkpoint import sidecar
    from agents.ppo import load_policy, save_policy

    raw = bytearray(tiny_zip.read_bytes())
    start = raw.find(b"policy.pth") + 200  # inside the weights member: its CRC no longer matches
    raw[start] ^= 0xFF
    (tmp_path / "flipped.zip").write_bytes(bytes(raw))
    deep = _craft(tiny_zip, tmp_path / "deep.zip", members={"data": b"[" * 100_000 + b"]" * 100_000})
    bomb = _craft(tiny_zip, tmp_path / "bomb.zip", members={"policy.pth": bytes(50 << 20)})
    cases = {tmp_path / "flipped.zip": "damaged zip", deep: "nested deeper than", bomb: "declared architecture holds"}
    for path, words in cases.items():
        with pytest.raises(ValueError) as e:
            load_policy(path)
        assert words in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value), str(e.value)
    export = save_policy(load_policy(tiny_zip), tmp_path / "export.pt")
    side = json.loads(export.with_suffix(".json").read_text())
    side["config"]["policy_kwargs"]["net_arch"] = [10_000_000]
    export.with_suffix(".json").write_text(json.dumps(sidecar(side["format"], export.name, export.read_bytes(),
                                                              side["config"])))
    with pytest.raises(ValueError, match=r"export\.pt: net_arch \[10000000\] is not at most 16 layers"):
        load_policy(export)
    side["config"]["policy_kwargs"]["net_arch"] = [4096, 4096]  # within the caps, but not what the file holds
    export.with_suffix(".json").write_text(json.dumps(sidecar(side["format"], export.name, export.read_bytes(),
                                                              side["config"])))
    with pytest.raises(ValueError, match="declared architecture holds .* bytes of weights"):
        load_policy(export)
    assert torch.load(export, weights_only=True)  # the file itself was fine


def test_trusted_zip_that_sb3_cannot_load_is_one_line_and_exit_2(tiny_zip, tmp_path, capsys, monkeypatch):
    """`--trust-checkpoint` on a zip whose policy.pth is a pickle of something else: one line, exit 2 (a traceback
    before)."""
    from harmonies_apps import cli

    monkeypatch.setenv("HARMONIES_TRUST_CHECKPOINT", "")  # the CLI sets it for its workers: undone after the test
    path = _craft(tiny_zip, tmp_path / "other.zip", members={"policy.pth": pickle.dumps({"not": "weights"})})
    code = cli.main(["solo", "--agents", f"ppo:{path}", "--games", "1", "--quiet", "--trust-checkpoint"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0] and str(path) in err[0], err


def test_cli_trust_checkpoint_is_the_only_way_a_file_runs_code(tiny_zip, tmp_path):
    marker = tmp_path / "pwned"
    evil = _craft(tiny_zip, tmp_path / "evil.zip",
                  lambda d: d["lr_schedule"].__setitem__(":serialized:", _evil_b64(marker)))
    cmd = [sys.executable, "-m", "harmonies_apps.cli", "solo", "--agents", f"ppo:{evil}", "--games", "1", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr  # weights-only: it plays, and the pickle is never read
    assert not marker.exists()
    p = subprocess.run([*cmd, "--trust-checkpoint"], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                       timeout=300)
    assert marker.exists(), p.stderr  # the opt-in loads through SB3, which runs the file's pickle


def test_weights_only_loading_plays_exactly_like_stable_baselines3(tiny_zip):
    from agents.ppo import load_policy

    safe, trusted = load_policy(tiny_zip), load_policy(tiny_zip, trust=True)
    rng = np.random.default_rng(0)
    obs = rng.random((64, safe.observation_space.shape[0]), dtype=np.float32)
    masks = rng.random((64, NUM_ACTIONS)) < 0.3
    masks[:, 0] = True
    a1, _ = safe.predict(obs, action_masks=masks, deterministic=True)
    a2, _ = trusted.predict(obs, action_masks=masks, deterministic=True)
    np.testing.assert_array_equal(a1, a2)


def test_not_a_checkpoint_and_no_path(tmp_path):
    from agents import make_agent
    from agents.ppo import PPOAgent

    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a zip"):
        make_agent(f"ppo:{junk}")
    with pytest.raises(FileNotFoundError, match="no MaskablePPO checkpoint"):
        make_agent("ppo:/missing.zip")
    for spec in ("ppo", "ppo:", "ppo: "):  # no PPO checkpoint ships: the path is required
        with pytest.raises(ValueError, match=r"needs a checkpoint: ppo:PATH"):
            make_agent(spec)
    with pytest.raises(ValueError, match=r"needs a checkpoint: ppo:PATH"):
        PPOAgent(None)


def test_a_weights_only_export_plays_exactly_like_the_zip_and_refuses_tampering(tiny_zip, tmp_path):
    """`save_policy` / `load_policy` on NAME.pt + NAME.json: the same moves as the SB3 zip it came from; a torn or
    edited pair, a missing JSON, a foreign format and a .pt holding a pickle (with a JSON that matches it) are
    refused, and the pickle never runs."""
    import hashlib
    import io

    import torch

    from agents.ppo import UntrustedCheckpointError, load_policy, save_policy

    zpol = load_policy(tiny_zip)
    path = save_policy(zpol, tmp_path / "export")
    assert path == tmp_path / "export.pt" and (tmp_path / "export.json").is_file()
    saved = json.loads((tmp_path / "export.json").read_text())  # agents.checkpoint's sidecar
    assert saved["format"] == "harmonies-ppo-policy" and saved["config"]["policy_kwargs"]["net_arch"] == [8]
    config = {"format": saved["format"], "version": 1, **saved["config"]}  # an export written before that schema
    rng = np.random.default_rng(0)
    obs = rng.random((64, zpol.observation_space.shape[0]), dtype=np.float32)
    masks = rng.random((64, NUM_ACTIONS)) < 0.3
    masks[:, 0] = True
    for name in (path, tmp_path / "export.json", tmp_path / "export"):  # NAME.pt, NAME.json or NAME
        pol = load_policy(name)
        np.testing.assert_array_equal(pol.predict(obs, action_masks=masks, deterministic=True)[0],
                                      zpol.predict(obs, action_masks=masks, deterministic=True)[0])

    def pair(weights: bytes, edit=None) -> Path:
        p = tmp_path / f"t{len(list(tmp_path.iterdir()))}.pt"
        p.write_bytes(weights)
        c = dict(json.loads(json.dumps(config)), weights=p.name, weights_bytes=len(weights),
                 weights_sha256=hashlib.sha256(weights).hexdigest())
        if edit:
            edit(c)
        p.with_suffix(".json").write_text(json.dumps(c))
        return p

    good = path.read_bytes()
    torn = pair(good)
    torn.write_bytes(good[:-10])
    with pytest.raises(ValueError, match="SHA-256 .* is not the"):
        load_policy(torn)
    assert load_policy(pair(good)).state_dict().keys() == zpol.state_dict().keys()  # the older sidecar still loads
    with pytest.raises(ValueError, match="format"):
        load_policy(pair(good, lambda c: c.__setitem__("format", "something-else")))
    with pytest.raises(ValueError, match="version"):
        load_policy(pair(good, lambda c: c.__setitem__("version", 99)))
    with pytest.raises(ValueError, match="policy_kwargs"):
        load_policy(pair(good, lambda c: c["policy_kwargs"].__setitem__("activation_fn", "os.system")))
    with pytest.raises(ValueError, match="declared architecture holds .* not this network's weights"):
        load_policy(pair(good, lambda c: c["policy_kwargs"].__setitem__("net_arch", [16])))  # before it is built
    with pytest.raises(ValueError, match="do not fit"):  # as many weights, other shapes: the strict load refuses
        load_policy(pair(good, lambda c: c["policy_kwargs"].__setitem__("net_arch", {"pi": [8], "vf": [7]})))
    lone = tmp_path / "lone.pt"
    lone.write_bytes(good)
    with pytest.raises(ValueError, match="no lone.json beside it"):
        load_policy(lone)
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    torch.save({"action_net.weight": _CreatesFile(marker), "pad": torch.zeros(len(good) // 4)}, buf)  # runs code
    evil = pair(buf.getvalue())  # and its JSON even matches it
    with pytest.raises(UntrustedCheckpointError, match="more than tensors"):
        load_policy(evil, trust=True)  # a .pt is read weights-only whatever trust says
    assert not marker.exists()
    assert torch.load(path, weights_only=True).keys() == zpol.state_dict().keys()


def test_an_export_names_its_activation_and_refuses_what_json_cannot_describe(tmp_path):
    """[ppo] activation = "relu" (a pickled activation_fn in an SB3 zip) round-trips by name; other activations are
    refused at save time rather than written as a file that would load as another network."""
    import gymnasium as gym
    import torch
    from sb3_contrib import MaskablePPO

    import harmonies_env.env_gym  # noqa: F401  (registers the envs)
    from agents.ppo import load_policy, save_policy

    def policy(act):
        return MaskablePPO("MlpPolicy", gym.make("harmonies/Solo-v0"), n_steps=32, batch_size=32, seed=0, verbose=0,
                           policy_kwargs={"net_arch": {"pi": [8], "vf": [4]}, "activation_fn": act}).policy

    relu = policy(torch.nn.ReLU)
    loaded = load_policy(save_policy(relu, tmp_path / "relu.pt"))
    assert loaded.activation_fn is torch.nn.ReLU and loaded.net_arch == {"pi": [8], "vf": [4]}
    assert all(torch.equal(v, relu.state_dict()[k]) for k, v in loaded.state_dict().items())
    with pytest.raises(ValueError, match="activation GELU cannot be exported"):
        save_policy(policy(torch.nn.GELU), tmp_path / "gelu.pt")
    assert not (tmp_path / "gelu.pt").exists()


def test_no_pickle_bearing_checkpoint_ships():
    root = Path(__file__).resolve().parents[1]
    assert not list((root / "agents").rglob("*.zip")) and not list((root / "agents").rglob("*.pkl"))


# ---------------------------------------------------------------------------------------------------------
# 2. atomic writes
# ---------------------------------------------------------------------------------------------------------
def test_atomic_writes_replace_whole_files_or_leave_the_old_one(tmp_path):
    p = tmp_path / "out.json"
    atomic_write_text(p, "old")
    os.chmod(p, 0o640)
    with pytest.raises(RuntimeError):
        with atomic_writer(p, "w") as f:
            f.write("half of the new conte")
            raise RuntimeError("killed mid-write")
    assert p.read_text() == "old" and sorted(x.name for x in tmp_path.iterdir()) == ["out.json"]
    atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"new" and (p.stat().st_mode & 0o777) == 0o640
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "no" / "such" / "dir.txt", "x")


def test_save_png_is_atomic(tmp_path):
    pytest.importorskip("PIL")
    from harmonies_env.render_image import save_png

    p = tmp_path / "g.png"
    save_png(Game(2, seed=1), str(p), width=300)
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and len(list(tmp_path.iterdir())) == 1


# ---------------------------------------------------------------------------------------------------------
# 3. no crash from state edits
# ---------------------------------------------------------------------------------------------------------
def test_field_views_are_read_only_and_from_state_validates():
    g = Game(2, "A", False, seed=1)
    with pytest.raises(ValueError, match="read-only"):
        g.field("stack")[0, 0] = 10**6
    assert g.field("current") == 0  # scalars come back as values
    with pytest.raises(ValueError, match="unknown state field"):
        g.field("nope")
    s = g.state.copy()
    s[S.CURRENT] = 10**6
    with pytest.raises(ValueError, match="'current'"):
        Game.from_state(s)
    h = Game.from_state(g.state)
    assert h.state is not g.state and np.array_equal(h.state, g.state) and h.legal_actions() == g.legal_actions()
    with pytest.raises(ValueError, match="no record"):
        h.to_json()


@pytest.mark.parametrize("field,index,value", [
    ("num_players", 0, 9), ("side", 0, 2), ("spirits", 0, -1), ("num_spaces", 0, 4), ("stack_words", 0, 15),
    ("stack_words", 3, 1), ("stack_words", 3, 1 << 4), ("bitboard", 0, 0), ("cubes", 0, 1 << 30), ("pouch", 0, 99),
    ("central", 0, 6),
    ("market", 0, 40), ("deck", 0, 0), ("deck_count", 0, 33), ("slot", 0, 5), ("card_held", 1, 7),
    ("card_held", 0, 0), ("card_held", 1, 8 * 3),
    ("spirit_dealt", 0, 33), ("spirit_kept", 0, 40), ("animal_cubes", 0, 3), ("hand", 0, 2),
    ("habitat", 0, 1), ("took_card", 0, -1), ("taken_space", 0, 7), ("turn", 0, -5),
    ("end_trigger", 0, 3), ("game_over", 0, 1), ("discarded", 0, -1), ("current", 0, -(10**9)),
])
def test_each_bad_field_is_named(field, index, value):
    s = Game(2, "A", False, seed=2).state.copy()
    S.field(s, field).reshape(-1)[index] = value
    with pytest.raises(ValueError, match="state field"):
        Game.from_state(s)


def test_all_zero_state_and_bad_batches_raise_clear_errors():
    with pytest.raises(ValueError, match="'num_players'"):
        Game.from_state(np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE))
    with pytest.raises(ValueError, match="row 0, field 'num_players'"):
        rollout_batch(np.zeros((2, S.STATE_SIZE), dtype=S.STATE_DTYPE), [1, 2])
    states = np.zeros((3, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    with pytest.raises(TypeError, match="positional argument"):  # no old loose form
        init_batch(states, 9, 0, 0, np.arange(3))
    with pytest.raises(ValueError, match="config must be a harmonies_env.GameConfig"):
        init_batch(states, seeds=np.arange(3), config={"num_players": 2})
    with pytest.raises(ValueError, match="seeds"):
        init_batch(states, seeds=np.arange(10), config=GameConfig(2))
    with pytest.raises(ValueError, match="seeds"):
        init_batch(states, seeds=[-1, 0, 1], config=GameConfig(2))
    init_batch(states, seeds=np.arange(3), config=GameConfig(2, "B", True))
    assert np.array_equal(states[1], Game(2, "B", True, seed=1).state)
    s = Game(2, seed=1).state.copy()
    s[S.CURRENT] = -(10**9)
    with pytest.raises(ValueError, match="'current'"):
        rollout_batch(s[None, :], [0])
    b = BatchedGames(2, config=GameConfig(2), seed=0)
    before = b.states.copy()
    bad = before.copy()
    bad[1, S.STACK_WORDS] = 0xF  # stack code 15 on cell 0
    with pytest.raises(ValueError, match="row 1, field 'stack_words'"):
        b.set_states(bad)
    with pytest.raises(ValueError, match="row 1, field 'stack_words'"):
        b.set_states(bad[1], rows=[1])
    with pytest.raises(ValueError, match="row 0, field 'num_players'"):
        b.set_states(Game(3, seed=0).state, rows=0)
    with pytest.raises(ValueError, match="rows must be"):
        b.set_states(before, rows=[0, 0])
    with pytest.raises(ValueError, match=r"states must be \(1, "):
        b.set_states(before, rows=[0])
    assert np.array_equal(b.states, before)  # every refusal left the batch unchanged


def test_public_state_arrays_are_read_only_and_cannot_be_made_writable():
    """`Game.state`, `BatchedGames.states` / `book` / `cfg` (and views of them) refuse writes: the kernels would
    trust what was written (issue 13: `current = 10**6` then `legal_actions()` crashed the process)."""
    import copy
    import pickle as pkl

    g = Game(2, "A", False, seed=1)
    b = BatchedGames(2, config=GameConfig(2), seed=0)
    out = b.step(b.masks.argmax(axis=1))
    for arr in (g.state, S.field(g.state, "stack"), g.field("stack"), np.asarray(g.state), b.states, b.states[1],
                b.book, b.cfg, b.obs, b.masks, b.game(0).state, b.players, b.seats, b.episodes, b.base_seeds,
                out.players, out.obs, out.masks):
        with pytest.raises(ValueError, match="read-only"):
            arr.reshape(-1)[0] = 1
        with pytest.raises(ValueError, match="WRITEABLE"):
            arr.flags.writeable = True
    with pytest.raises(AttributeError):
        b.states = np.zeros_like(b.states)  # no setter: set_states validates
    assert g.legal_actions() and g.current_player == 0
    # the validating setter: refused -> unchanged; accepted -> the new position, no seed or history
    s = g.state.copy()
    s[S.CURRENT] = 10**6
    with pytest.raises(ValueError, match="'current'"):
        g.state = s
    assert g.current_player == 0 and g.seed == 1
    h = Game(2, "A", False, seed=2)
    h.step(h.legal_actions()[0])
    g.state = h.state
    assert np.array_equal(g.state, h.state) and g.seed == -1 and g.history == [] and not g.state.flags.writeable
    g.step(g.legal_actions()[0])
    assert not np.array_equal(g.state, h.state)  # a copy: h is untouched
    # copies of a game keep a live read-only view of their own state
    for c in (copy.deepcopy(g), copy.copy(g), pkl.loads(pkl.dumps(g)), g.clone()):
        assert np.array_equal(c.state, g.state) and not c.state.flags.writeable
        c.step(c.legal_actions()[0])
        assert len(c.history) == len(g.history) + 1 and not np.array_equal(c.state, g.state)
    # kernels that write refuse a read-only array when they are compiled (numba), before anything runs
    from harmonies_env import rules
    with pytest.raises(Exception, match="readonly"):
        rules.step(g.state, g.legal_actions()[0])


def test_random_field_edits_never_crash_the_process():
    """Hypothesis writes random values into random fields (tests/hostile_state_fuzz.py) in a subprocess: a
    segfault there fails this test instead of killing pytest."""
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "hostile_state_fuzz.py"), "400"], capture_output=True,
                       text=True, env=_env(), timeout=540)
    assert p.returncode == 0, f"rc={p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    counts = dict(kv.split("=") for kv in p.stdout.split()[-2:])
    assert int(counts["valid"]) > 0 and int(counts["refused"]) > 0


def test_reachable_states_are_valid():
    rng = np.random.default_rng(0)
    for n, side, spirits in ((1, "B", True), (2, "A", True), (3, "B", False), (4, "A", True)):
        g = Game(n, side, spirits, seed=int(rng.integers(1000)))
        while not g.is_over:
            check_state(g.state.copy())  # writable, as Game.from_state passes it (no read-only compile)
            la = g.legal_actions()
            g.step(la[int(rng.integers(len(la)))])
        check_state(g.state.copy())


# ---------------------------------------------------------------------------------------------------------
# 4. hidden information
# ---------------------------------------------------------------------------------------------------------
def _walk(obj, seen: set, depth: int = 0):
    """Everything reachable from obj: attributes, __slots__, __dict__, containers, properties, and the results of
    the view's public no-argument methods (bounded depth)."""
    if depth > 8 or id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, (int, float, str, bytes, bool, type(None), np.generic)):
        return
    if isinstance(obj, np.ndarray):
        if obj.base is not None:
            yield from _walk(obj.base, seen, depth + 1)
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(k, seen, depth + 1)
            yield from _walk(v, seen, depth + 1)
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from _walk(v, seen, depth + 1)
        return
    if callable(obj) and not hasattr(obj, "__dict__") and not hasattr(type(obj), "__slots__"):
        return
    names = set(getattr(obj, "__dict__", {}))
    for klass in type(obj).__mro__:
        names |= set(getattr(klass, "__slots__", ()))
        names |= {k for k, v in vars(klass).items() if isinstance(v, property)}
    for name in names:
        try:
            v = getattr(obj, name)
        except Exception:
            continue
        yield from _walk(v, seen, depth + 1)
    if isinstance(obj, PlayerView):
        for meth in ("legal_actions", "scores", "text", "__repr__"):
            yield from _walk(getattr(obj, meth)(), seen, depth + 1)
        yield from _walk([obj.describe_action(a) for a in range(NUM_ACTIONS)], seen, depth + 1)
    if isinstance(obj, Game):
        yield from _walk(obj.render(), seen, depth + 1)


def _contains_run(arr: np.ndarray, run: np.ndarray) -> bool:
    a = np.asarray(arr).reshape(-1)
    k = len(run)
    if k < 2 or a.size < k or not np.issubdtype(a.dtype, np.integer):
        return False
    win = np.lib.stride_tricks.sliding_window_view(a, k)
    return bool((win == run).all(axis=1).any())


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_nothing_reachable_from_a_view_tells_the_hidden_information(num_players):
    g = Game(num_players, "A", True, seed=12345)
    rng = np.random.default_rng(1)
    for step in range(60):
        s = g.state
        n = int(s[S.DECK_COUNT])
        deck = S.field(s, "deck")[:n].copy()
        dealt, kept = S.field(s, "spirit_dealt"), S.field(s, "spirit_kept")
        for p in range(num_players):
            hidden = {int(dealt[o, j]) for o in range(num_players) if o != p for j in range(2)
                      if dealt[o, j] != kept[o]} - set(dealt[p].tolist())
            secrets = {S.get_rng(s), int(s[S.RNG]), int(s[S.RNG + 1]), g.seed}  # the generator and its halves
            view = PlayerView(g, p)
            for x in _walk(view, set()):
                if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
                    assert int(x) not in secrets, f"seat {p} reaches the generator state or the seed"
                elif isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.integer):
                    assert not np.isin(x, list(secrets)).any(), f"seat {p} reaches the generator state or the seed"
                    if not np.array_equal(deck, np.sort(deck)):
                        assert not _contains_run(x, deck), f"seat {p} reaches the draw pile order"
                    if x.shape == (S.STATE_SIZE,):
                        for f in ("spirit_dealt", "spirit_kept", "slot"):
                            assert not set(S.field(x, f).reshape(-1).tolist()) & hidden, \
                                f"seat {p} reaches another seat's dealt Spirits ({f})"
                        placed = S.field(x, "cubes_placed")
                        assert all(placed[:, c].max() < 0 for c in hidden), f"seat {p} sees a hidden Spirit held"
                elif isinstance(x, str):
                    for c in hidden:
                        assert card_name(c) not in x, f"seat {p} is told another seat's dealt Spirit: {x!r}"
            d = view.determinize(7)
            assert d.seed == -1 and S.get_rng(d.state) != S.get_rng(s)
        la = g.legal_actions()
        g.step(la[int(rng.integers(len(la)))])


def test_describe_action_speaks_for_the_views_player():
    g = Game(2, "A", True, seed=9)
    mine = card_name(int(g.field("spirit_dealt")[0, 1]))
    assert mine in PlayerView(g, 0).describe_action(261)
    assert mine not in PlayerView(g, 1).describe_action(261)
    assert mine in g.describe_action(261)  # the game itself withholds nothing


def test_views_are_snapshots_and_determinize_as_before():
    g = Game(2, "A", True, seed=21)
    v0, v1 = PlayerView(g, 0), PlayerView(g, 1)
    for p, v in ((0, v0), (1, v1)):  # the same determinized copies as from the real game
        assert np.array_equal(v.determinize(5).state, determinize(g, p, 5).state)
    g.step(260)
    assert v0.legal_actions() == [260, 261]  # a snapshot: it does not follow the game
    assert PlayerView(g, 0).legal_actions() != [260, 261]


# ---------------------------------------------------------------------------------------------------------
# 5. envs: whose turn, real integers only
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", BAD_ACTIONS, ids=repr)
def test_game_and_raw_env_refuse_non_integer_actions(bad):
    g = Game(2, seed=3)
    before = g.state.copy()
    with pytest.raises(IllegalActionError):
        g.step(bad)
    assert np.array_equal(g.state, before) and g.history == []
    e = raw_env(num_players=2)
    e.reset(seed=3)
    before = e.game.state.copy()
    agent = e.agent_selection
    with pytest.raises(IllegalActionError):
        e.step(bad)
    assert np.array_equal(e.game.state, before) and e.agent_selection == agent
    e.step(int(e.game.legal_actions()[0]))  # and it goes on
    with pytest.raises(IllegalActionError):
        g.describe_action(bad)


@pytest.mark.parametrize("bad", BAD_ACTIONS, ids=repr)
def test_gym_envs_treat_non_integer_actions_as_illegal(bad):
    for env in (SoloEnv(), VersusEnv(seat=0)):
        env.reset(seed=1)
        before = env.game.state.copy()
        _, r, term, _, info = env.step(bad)
        assert "illegal_action" in info and r == env.illegal_reward and not term
        assert np.array_equal(env.game.state, before)


def test_batch_refuses_non_integer_action_arrays():
    b = BatchedGames(2, config=GameConfig(2), seed=0)
    before = b.states.copy()
    for bad in ([True, False], [0.5, 1.0], ["4", "5"], [None, 4], [2**64, 0]):
        with pytest.raises(ValueError, match="integers|shape"):
            b.step(bad)
        assert np.array_equal(b.states, before)
    out = b.step([2**63, 2**63 + 1])  # uint64 beyond int64: outside the action space, refused as illegal
    assert out.illegal.all() and np.array_equal(b.states, before)
    sp = SelfPlayBatch(1, seed=0)
    with pytest.raises(ValueError):
        sp.step(np.array([4.0]))


def test_versus_refuses_to_go_on_after_an_opponent_error():
    class Flaky:
        calls = 0

        def act(self, view):
            Flaky.calls += 1
            if Flaky.calls == 3:
                raise RuntimeError("opponent bug")
            return view.legal_actions()[0]

    env = VersusEnv(opponents=Flaky(), seat=0)
    env.reset(seed=2)
    with pytest.raises(RuntimeError, match="opponent bug"):
        for _ in range(200):
            env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert env.game.current_player != env.seat
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    obs, info = env.reset(seed=3)
    assert env.game.current_player == env.seat and env.action_masks().any()
    env.step(int(np.flatnonzero(env.action_masks())[0]))

    def cheater(obs, mask):
        return 4.7  # not an integer: a bug in the opponent, named
    env = VersusEnv(opponents=cheater, seat=1)
    with pytest.raises(IllegalActionError):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_budgets_must_be_finite_and_positive():
    from agents import make_agent

    for spec in ("mcts:nan", "mcts:inf", "mcts:-inf", "mcts:0", "mcts:-2", "mcts:0it", "greedy:0", "greedy:-3",
                 "greedy:99999999999", "mcts:fast"):
        with pytest.raises(ValueError, match="bad agent spec"):
            make_agent(spec)
    from agents.mcts import MCTSAgent
    for kw in ({"seconds": math.nan}, {"seconds": True}, {"iterations": 2.5}, {"candidates": 0}):
        with pytest.raises(ValueError):
            MCTSAgent(**kw)


@pytest.mark.parametrize("argv", [["tournament", "--agents", "ppo:/missing.zip", "random", "--games", "1"],
                                  ["tournament", "--agents", "random", "random", "--games", "1", "--out", "/proc/x"],
                                  ["solo", "--agents", "mcts:nan", "--games", "1"]])
def test_cli_bad_input_is_one_line_without_traceback(argv, tmp_path):
    p = subprocess.run([sys.executable, "-m", "harmonies_apps.cli", *argv, "--quiet"], capture_output=True, text=True,
                       env=_env(), cwd=tmp_path, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("harmonies ")


# ---------------------------------------------------------------------------------------------------------
# 6. records
# ---------------------------------------------------------------------------------------------------------
def test_records_have_a_concrete_seed_and_a_checked_version():
    g = Game(2, seed=None)
    for a in g.legal_actions()[:1]:
        g.step(a)
    rec = g.record()
    assert isinstance(rec["seed"], int) and rec["version"] == 1
    assert Game.replay(json.dumps(rec)).history == g.history
    for bad, match in (({"seed": None}, "seed is null"), ({"version": 99}, "version 99"),
                       ({"version": "1"}, "version '1'"), ({"version": True}, "version True"),
                       ({"actions": "0"}, "actions must be a list"), ({"seed": -1}, "seed"),
                       ({"actions": [True]}, "action #0"), ({"actions": [1.0]}, "action #0")):
        with pytest.raises(ValueError, match=match):
            Game.replay({**rec, **bad})
    no_version = dict(rec)
    del no_version["version"]
    with pytest.raises(ValueError, match="version"):
        Game.replay(no_version)
    for junk in ("not json", "[1, 2]", "null"):
        with pytest.raises(ValueError):
            Game.replay(junk)
    # spirits is a JSON true/false, as records write it: 1 / 0 are refused by name, like 2
    for spirits in (1, 0, 2, "true", None):
        with pytest.raises(ValueError, match=f"spirits must be true or false, got {spirits!r}"):
            Game.replay({**rec, "spirits": spirits})
    # nesting deeper than validate.MAX_JSON_DEPTH is one ValueError, never a RecursionError
    text = json.dumps(rec)
    for deep in (text[:-1] + ', "x": ' + "[" * 1000 + "]" * 1000 + "}", text[:-1] + ', "x": ' + "[" * 33 + "]" * 33
                 + "}", "[" * 100_000 + "]" * 100_000):
        with pytest.raises(ValueError, match="game record: JSON nested deeper than 32 levels"):
            Game.replay(deep)
    assert Game.replay(text[:-1] + ', "x": ' + "[" * 31 + "]" * 31 + "}").history == g.history
    nested: list = []
    for _ in range(5000):  # a record built in Python: its actions are checked by type, never printed whole
        nested = [nested]
    with pytest.raises(ValueError, match="action #0 must be an integer, got list"):
        Game.replay({**rec, "actions": [nested]})


def test_cli_replay_refuses_a_deep_record_and_a_bad_annotation_in_one_line(tmp_path):
    g = Game(2, seed=4)
    for _ in range(3):
        g.step(g.legal_actions()[0])
    rec = g.record()
    (tmp_path / "deep.json").write_text(json.dumps(rec)[:-1] + ', "x": ' + "[" * 1000 + "]" * 1000 + "}")
    (tmp_path / "ann.json").write_text(json.dumps({**rec, "annotations": [{"ply": 1, "candidates": ["abc"]}]}))
    for name, match in (("deep", "deep.json: JSON nested deeper than 32 levels"),
                        ("ann", r"ann: annotation #0 \(ply 1\) candidate #0 must be an object")):
        p = subprocess.run([sys.executable, "-m", "harmonies_apps.cli", "replay", str(tmp_path / f"{name}.json")],
                           capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and "Traceback" not in p.stderr and len(lines) == 1, p.stderr
        assert lines[0].startswith("harmonies replay: ") and re.search(match, lines[0]), lines[0]
        assert not (tmp_path / f"{name}.html").exists()


def test_batch_rows_and_copies_refuse_to_export_a_record_that_would_not_replay():
    b = BatchedGames(2, config=GameConfig(2), seed=5)
    b.step(np.argmax(b.masks, axis=1))
    g = b.game(1)
    assert np.array_equal(g.state, b.states[1])
    with pytest.raises(ValueError, match="no record"):
        g.to_json()
    with pytest.raises(ValueError, match="no record"):
        determinize(Game(2, seed=1), 0, 3).record()


@pytest.mark.parametrize("players,seat,mode", [(1, 0, "solo"), (2, None, "versus"), (3, 1, "versus"),
                                               (2, 0, "selfplay"), (4, 0, "selfplay")])
def test_batch_rows_export_records_that_replay_to_the_row(players, seat, mode):
    """record=True: every row's game exports seed + every action (the learner's, and the built-in opponents'
    redrawn from the episode seed); Game.replay of it is the row's position, through episode ends (auto-reset)
    and illegal actions (not recorded: they change nothing)."""
    rng = np.random.default_rng(players)
    if mode == "selfplay":
        b = SelfPlayBatch(6, config=GameConfig(players), seed=40, record=True, num_threads=2)
    else:
        b = BatchedGames(6, config=GameConfig(players), seat=seat, seed=40, record=True, num_threads=2)
    plain = (SelfPlayBatch(6, config=GameConfig(players), seed=40) if mode == "selfplay"
             else BatchedGames(6, config=GameConfig(players), seat=seat, seed=40))
    ended = 0
    for t in range(400):
        legal = [rng.choice(np.flatnonzero(m)) for m in b.masks]
        acts = np.array([a if rng.random() > 0.05 else NUM_ACTIONS + 3 for a in legal])  # some illegal
        out = b.step(acts)
        plain.step(acts)
        ended += int(out.terminated.sum())
        if t % 97 == 0 or out.terminated.any():
            for r in range(6):
                g = b.game(r)
                assert np.array_equal(g.state, b.states[r])
                again = Game.replay(g.to_json())
                assert np.array_equal(again.state, b.states[r]) and again.history == g.history
    assert ended > 0 and np.array_equal(plain.states, b.states)  # recording changes nothing
    b.set_states(b.states[[2]].copy(), rows=[2])  # a position put in by hand has no record until its game ends
    with pytest.raises(ValueError, match="no record"):
        b.game(2).to_json()
    assert Game.replay(b.game(3).to_json()).state.tolist() == b.states[3].tolist()
    with pytest.raises(ValueError, match="record"):
        BatchedGames(2, record="yes")


# ---------------------------------------------------------------------------------------------------------
# 7. score_board
# ---------------------------------------------------------------------------------------------------------
def test_score_board_refuses_what_it_would_otherwise_truncate():
    tree3 = ["brown", "brown", "green"]
    assert score_board("A", {(np.int64(0), 0): tree3})["trees"] == score_board("A", {(0, 0): tree3})["trees"]
    for board, match in (({(0.9, 0.9): tree3}, "integers"), ({("0", "0"): tree3}, "integers"),
                         ({(True, 0): tree3}, "integers"), ({(0, 0): tree3, (0.4, 0): []}, "integers"),
                         ({(0, 0): "blue"}, "list of colours"), ({(0, 0): [1]}, "colours are names"),
                         ({(0,): []}, "pairs"), ({(0, 0, 0): []}, "pairs")):
        with pytest.raises(ValueError, match=match):
            score_board("A", board)
    for cards, match in (([(1, 2.9)], "cubes_placed=2.9"), ([(1, True)], "cubes_placed=True"),
                         ([(True, 0)], "card id"), ([(1.0, 0)], "card id"), ([("1", 0)], "card id"),
                         ([(1,)], "pairs"), ([(1, 0, 0)], "pairs"), ([(1, -1)], "cubes_placed=-1")):
        with pytest.raises(ValueError, match=match):
            score_board("A", {}, cards)
    with pytest.raises(ValueError, match="mapping"):
        score_board("A", [((0, 0), tree3)])


# ---------------------------------------------------------------------------------------------------------
# 8. determinize
# ---------------------------------------------------------------------------------------------------------
def test_determinize_arguments():
    g = Game(2, seed=1)
    for player in (True, np.bool_(False), 1.0, "0", 2, -1):
        with pytest.raises(ValueError, match="player must be a seat"):
            determinize(g, player, 1)
    with pytest.raises(ValueError, match="concrete seed"):
        determinize(g, 0, None)
    with pytest.raises(ValueError, match="seed"):
        determinize(g, 0, -5)
    assert np.array_equal(determinize(g, 0, 4).state, determinize(g, np.int64(0), 4).state)


def test_ppo_hands_torch_only_writable_arrays(tiny_zip, monkeypatch):
    """`ppo:PATH` on the engine's read-only views printed torch's "The given NumPy array is not writable" warning
    (issue 47): the batched decision copies them first. Checked at torch.as_tensor itself, as torch warns only once
    per process."""
    import torch

    from agents import make_agent
    from agents.match import play_match

    real, read_only = torch.as_tensor, []

    def as_tensor(data, *args, **kwargs):
        if isinstance(data, np.ndarray) and not data.flags.writeable:
            read_only.append(data.shape)
        return real(data, *args, **kwargs)

    monkeypatch.setattr(torch, "as_tensor", as_tensor)
    results = play_match([make_agent(f"ppo:{tiny_zip}"), "random"], games=2, seed=1)
    assert len(results) == 2 and read_only == []


# ---------------------------------------------------------------------------------------------------------
# unpickled games and envs, sidecar types (issue 47)
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [("NUM_PLAYERS", 99), ("NUM_MARKET", 10**8), ("SIDE", 7)])
def test_an_edited_pickled_game_or_env_is_refused_in_one_line(field, value):
    g = Game(2, seed=3)
    for _ in range(6):
        g.step(g.legal_actions()[0])
    twin = pickle.loads(pickle.dumps(g))
    assert np.array_equal(twin.state, g.state) and twin.history == g.history
    g._state[getattr(S, field)] = value  # a data-only edit of what the pickle holds
    with pytest.raises(ValueError) as e:
        pickle.loads(pickle.dumps(g))
    assert "\n" not in str(e.value)
    env = SoloEnv()
    env.reset(seed=1)
    env.game._state[getattr(S, field)] = value
    with pytest.raises(ValueError):
        pickle.loads(pickle.dumps(env))


def test_pickled_games_keep_their_types_and_explicit_chance_round_trips():
    import copy

    g = Game(3, seed=4, explicit_chance=True)  # its set-up's first chance node: not a valid decision state
    assert np.array_equal(pickle.loads(pickle.dumps(g)).state, g.state)
    g.sample_chance()
    assert np.array_equal(pickle.loads(pickle.dumps(g))._chance, g._chance)
    fresh = Game(3, seed=5, explicit_chance=True)
    fresh._state[S.NUM_PLAYERS] = 9  # an edited fresh game is not the one its seed deals
    with pytest.raises(ValueError):
        pickle.loads(pickle.dumps(fresh))
    h = Game(2, seed=1)
    for bad in ({"num_players": True}, {"seed": 2.0}, {"history": [True]}, {"history": (1,)}, {"extra": 1}):
        d = {**h.__getstate__(), **bad}
        with pytest.raises(ValueError):
            Game.__new__(Game).__setstate__(d)
    assert copy.deepcopy(h).history == h.history


def test_sidecar_numbers_are_exactly_ints_not_booleans(tmp_path):
    from agents.checkpoint import CheckpointError, read_checkpoint, weights_match, write_checkpoint

    path = write_checkpoint(tmp_path / "w.npz", b"data", "ntuple", {"k": 1}, {"weights": [1]})
    doc = json.loads(path.with_suffix(".json").read_text())
    assert read_checkpoint(path, ".npz", "ntuple", "x", 100).config == {"k": 1}
    for edit in ({"version": True}, {"shapes": {"weights": [True]}}):
        path.with_suffix(".json").write_text(json.dumps({**doc, **edit}))
        with pytest.raises(CheckpointError):
            read_checkpoint(path, ".npz", "ntuple", "x", 100)
    assert weights_match(b"d", {**doc, "bytes": 1, "sha256": doc["sha256"]}) is False
    assert not weights_match(b"d", {"bytes": True, "sha256": __import__("hashlib").sha256(b"d").hexdigest()})
