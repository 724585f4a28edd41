"""GameConfig: validation, how constructors merge it with their loose arguments, and that the river_loops rules
option reaches every path that scores (Game, records, the batched engine, the vector, Gymnasium and PettingZoo
envs, the observation's score features)."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

import harmonies_env
from agents.policy import AgentPolicy
from harmonies_env import Game, GameConfig, score_board
from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.batch import BatchedGames, SelfPlayBatch, init_batch
from harmonies_env.env_aec import raw_env
from harmonies_env.env_gym import SoloEnv, VersusEnv
from harmonies_env.geometry import NUM_CELLS, cell_index, cell_qr
from harmonies_env.observation import OBS_SIZE, encode_observation
from harmonies_env.stacks import STACKS
from harmonies_env.validate import check_state
from harmonies_env.vector import SoloVectorEnv, VersusVectorEnv

BGA = GameConfig(num_players=1, river_loops="bga")


# ---- GameConfig -------------------------------------------------------------------------------------------

def test_defaults_and_codes():
    c = GameConfig()
    assert (c.num_players, c.side, c.spirits, c.river_loops) == (2, "A", False, "rulebook")
    assert (c.side_code, c.river_loops_code) == (0, 0)
    b = GameConfig(np.int64(3), "B", np.bool_(True), "bga")
    assert (b.num_players, b.side_code, b.spirits, b.river_loops_code) == (3, 1, True, 1)
    assert type(b.num_players) is int and type(b.spirits) is bool
    assert harmonies_env.RIVER_LOOPS == ("rulebook", "bga")


@pytest.mark.parametrize("kwargs,match", [
    ({"num_players": 5}, r"num_players must be an integer from 1 to 4 \(1 = solo\), got 5"),
    ({"num_players": 0}, "num_players .* got 0"),
    ({"num_players": True}, "num_players .* got True"),
    ({"num_players": 2.0}, "num_players .* got 2.0"),
    ({"side": "C"}, "side must be 'A' or 'B', got 'C'"),
    ({"side": 0}, "side must be 'A' or 'B', got 0"),
    ({"spirits": 1}, "spirits must be True or False, got 1"),
    ({"spirits": "yes"}, "spirits must be True or False, got 'yes'"),
    ({"river_loops": "BGA"}, "river_loops must be one of 'rulebook', 'bga', got 'BGA'"),
    ({"river_loops": 1}, "river_loops must be one of 'rulebook', 'bga', got 1"),
])
def test_bad_fields_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GameConfig(**kwargs)


def test_frozen_and_replace():
    c = GameConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.side = "B"  # type: ignore[misc]
    assert c.replace(river_loops="bga") == GameConfig(river_loops="bga")
    with pytest.raises(ValueError, match="river_loops must be"):
        c.replace(river_loops="loop")
    with pytest.raises(ValueError, match="GameConfig has no field 'players'"):
        c.replace(players=3)


def test_game_takes_a_config_or_loose_arguments():
    assert Game(seed=1).config == GameConfig()
    assert Game(3, "B", True, seed=1, river_loops="bga").config == GameConfig(3, "B", True, "bga")
    g = Game(seed=1, config=GameConfig(4, "B", True, "bga"))
    assert (g.num_players, g.side, g.spirits, g.river_loops) == (4, "B", True, "bga")
    assert g.field("river_loops") == 1 and g.field("num_players") == 4
    # a loose argument that says the same as the config is fine; one that says otherwise names both
    assert Game(2, "A", seed=1, config=GameConfig()).config == GameConfig()
    for kwargs, match in (({"num_players": 3}, "num_players=3 conflicts with config.num_players=2"),
                          ({"side": "B"}, "side='B' conflicts with config.side='A'"),
                          ({"spirits": True}, "spirits=True conflicts with config.spirits=False"),
                          ({"river_loops": "bga"}, "river_loops='bga' conflicts with config.river_loops='rulebook'")):
        with pytest.raises(ValueError, match=match):
            Game(seed=1, config=GameConfig(), **kwargs)
    with pytest.raises(ValueError, match="config must be a harmonies_env.GameConfig, got dict"):
        Game(seed=1, config={"num_players": 2})
    with pytest.raises(ValueError, match="river_loops must be one of"):
        Game(seed=1, river_loops="house")
    assert Game(2, "A", 1, seed=1).spirits is True  # loose spirits still takes 0/1, as before


def test_the_option_changes_no_deal():
    a, b = Game(3, "B", True, seed=9), Game(3, "B", True, seed=9, river_loops="bga")
    diff = np.flatnonzero(a.state != b.state)
    assert diff.tolist() == [S.RIVER_LOOPS]


# ---- the option reaches the kernels --------------------------------------------------------------------

RING = [(2, 0), (3, 0), (3, 1), (2, 2), (1, 2), (1, 1)]  # six cells around (2, 1), which the policy keeps free
RING_CELLS = {cell_index("A", *c) for c in RING}
KEEP_FREE = RING_CELLS | {cell_index("A", 2, 1)}


def ring_policy(g: Game) -> int:
    """Build a blue ring around (2, 1) on Side A: take the space with the most blue, blue onto the ring, every
    other token elsewhere, never take cards; then end the turn."""
    legal = g.legal_actions()
    kinds = {a: A.decode(a) for a in legal}
    take = [a for a in legal if kinds[a][0] == "take_tokens"]
    if take:
        central = g.field("central")
        return max(take, key=lambda a: (int(np.sum(central[kinds[a][1]] == 0)), -a))
    place = [a for a in legal if kinds[a][0] == "place_token"]
    if place:
        ring = [a for a in place if kinds[a][1] == 0 and kinds[a][2] in RING_CELLS]
        away = [a for a in place if kinds[a][2] not in KEEP_FREE]
        return (ring or away or place)[0]
    return next((a for a in legal if kinds[a][0] == "end_turn"), legal[0])


def board_of(g: Game, p: int) -> tuple[dict, list]:
    """Seat p's board {(q, r): stack} and held cards [(card, cubes placed)], as score_board takes them."""
    stacks = g.field("stack")[p, : NUM_CELLS[g.side_code]]
    board = {cell_qr(g.side, i): STACKS[c] for i, c in enumerate(stacks) if c}
    placed = g.field("cubes_placed")[p]
    return board, [(c, int(k)) for c, k in enumerate(placed) if c and k >= 0]


def check_final(g: Game) -> None:
    """Every seat's score is score_board's under the game's reading; seat 0's ring makes the readings differ."""
    for p, got in enumerate(g.scores()):
        board, cards = board_of(g, p)
        assert got == score_board(g.side, board, cards, river_loops=g.river_loops)
    board, cards = board_of(g, 0)
    assert all(board.get(c) == ("blue",) for c in RING) and (2, 1) not in board  # the loop stands
    if g.river_loops == "bga":
        assert g.scores()[0]["water"] > score_board("A", board, cards)["water"]


@pytest.mark.parametrize("river_loops", ["rulebook", "bga"])
def test_a_game_scores_its_final_board_by_its_reading(river_loops):
    rng = np.random.default_rng(0)
    g = Game(2, "A", seed=0, river_loops=river_loops)
    while not g.is_over:
        legal = g.legal_actions()
        g.step(ring_policy(g) if g.current_player == 0 else int(rng.choice(legal)))
    check_final(g)
    again = Game.replay(g.to_json())
    assert again.river_loops == river_loops and again.scores() == g.scores()


def test_solo_batch_keeps_scores_and_observations_by_the_reading():
    """BatchedGames (the vector envs' engine): the incremental observation (score features included) equals a fresh
    encoding at every step, and the final scores are the game's under "bga"."""
    b = BatchedGames(1, seed=0, config=BGA)
    assert b.config == BGA and b.river_loops == "bga" and b.states[0, S.RIVER_LOOPS] == 1
    g = Game(seed=0, config=BGA)
    fresh = np.zeros(OBS_SIZE, dtype=np.float32)
    while True:
        a = ring_policy(g)
        g.step(a)
        out = b.step([a])
        if out.terminated[0]:
            break
        assert np.array_equal(b.states[0], g.state)
        encode_observation(g.state.copy(), 0, fresh)  # writable, as the envs pass it (no read-only compile)
        assert np.array_equal(b.obs[0], fresh)
    check_final(g)
    assert out.final_scores[0, 0].tolist() == list(g.scores()[0].values())


def test_self_play_batch_and_init_batch_carry_the_option():
    sp = SelfPlayBatch(2, seed=3, config=GameConfig(3, "B", True, "bga"))
    assert (sp.states[:, S.RIVER_LOOPS] == 1).all() and sp.num_players == 3
    sp.step(np.argmax(sp.masks, axis=1))
    states = np.zeros((2, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    init_batch(states, seeds=[4, 5], config=GameConfig(river_loops="bga"))
    assert np.array_equal(states[1], Game(seed=5, river_loops="bga").state)
    with pytest.raises(TypeError, match="positional argument"):  # no old loose form
        init_batch(states, 2, "A", False, [4, 5])
    with pytest.raises(ValueError, match="needs seeds"):
        init_batch(states, config=GameConfig())
    with pytest.raises(TypeError, match="num_players"):
        BatchedGames(1, num_players=2, config=BGA)
    with pytest.raises(ValueError, match="self-play needs 2-4 players"):
        SelfPlayBatch(1, config=BGA)


def test_batches_refuse_states_of_the_other_reading():
    b = BatchedGames(2, config=GameConfig(2), seed=0)
    s = b.states.copy()
    s[:, S.RIVER_LOOPS] = 1
    with pytest.raises(ValueError, match="field 'river_loops': this batch plays river_loops = 0, got 1"):
        b.set_states(s)
    s[:, S.RIVER_LOOPS] = 2
    with pytest.raises(ValueError, match="river_loops.*must be 0 \\(rulebook\\) or 1 \\(bga\\)"):
        b.set_states(s)
    with pytest.raises(ValueError, match="river_loops"):
        check_state(s[0])


def test_batch_record_replays_with_the_option():
    b = BatchedGames(1, config=GameConfig(2, river_loops="bga"), seed=2, record=True)
    for _ in range(30):
        b.step(np.argmax(b.masks, axis=1))
    rec = b.game(0).record()
    assert rec["version"] == 2 and rec["river_loops"] == "bga"
    assert np.array_equal(Game.replay(rec).state, b.states[0])


def test_vector_envs_take_the_option():
    solo = SoloVectorEnv(2, config=BGA)
    assert solo.config == BGA and (solo.batch.states[:, S.RIVER_LOOPS] == 1).all()
    solo = SoloVectorEnv(2, side="B", river_loops="bga")
    assert solo.config == GameConfig(1, "B", False, "bga")
    versus = VersusVectorEnv(2, config=GameConfig(3, river_loops="bga"))
    assert versus.batch.num_players == 3 and (versus.batch.states[:, S.RIVER_LOOPS] == 1).all()
    with pytest.raises(ValueError, match="SoloVectorEnv plays the solo rules: config.num_players must be 1, got 2"):
        SoloVectorEnv(2, config=GameConfig())
    with pytest.raises(ValueError, match="Versus needs 2-4 players"):
        VersusVectorEnv(2, config=BGA)
    with pytest.raises(ValueError, match="side='B' conflicts with config.side='A'"):
        VersusVectorEnv(2, side="B", config=GameConfig())


def test_solo_env_scores_by_the_reading():
    env = SoloEnv(config=BGA)
    env.reset(seed=0)
    assert env.unwrapped.game.river_loops == "bga"
    total, terminated, info = 0.0, False, {}
    while not terminated:
        _, reward, terminated, _, info = env.step(ring_policy(env.unwrapped.game))
        total += reward
    g = env.unwrapped.game
    check_final(g)
    assert info["scores"] == g.scores()[0] and total == g.scores()[0]["total"]
    with pytest.raises(ValueError, match="Solo-v0 plays the solo rules: config.num_players must be 1, got 2"):
        SoloEnv(config=GameConfig())


def test_versus_and_aec_envs_take_the_option():
    v = VersusEnv(config=GameConfig(3, "B", river_loops="bga"), seat=0)
    v.reset(seed=1)
    assert v.game.config == GameConfig(3, "B", False, "bga")
    with pytest.raises(ValueError, match="Versus-v0 needs 2-4 players"):
        VersusEnv(config=BGA)
    e = raw_env(river_loops="bga")
    e.reset(seed=2)
    assert e.game.config == GameConfig(river_loops="bga") and e.config == e.game.config
    e = raw_env(config=GameConfig(4, "A", True, "bga"))
    e.reset(seed=2)
    assert e.game.num_players == 4 and e.game.river_loops == "bga"
    with pytest.raises(ValueError, match="num_players=3 conflicts with config.num_players=4"):
        raw_env(num_players=3, config=GameConfig(4))
    again = harmonies_env.env(river_loops="bga")
    again.reset(seed=3)
    assert again.unwrapped.game.river_loops == "bga"


# ---- records -------------------------------------------------------------------------------------------

def test_records_name_the_option_only_off_its_default():
    g = Game(seed=4)
    g.step(g.legal_actions()[0])
    rec = g.record()
    assert rec["version"] == 1 and "river_loops" not in rec  # exactly the records written before the option
    assert Game.replay(rec).river_loops == "rulebook"
    b = Game(seed=4, river_loops="bga")
    b.step(b.legal_actions()[0])
    rec2 = json.loads(b.to_json())
    assert rec2["version"] == 2 and rec2["river_loops"] == "bga"
    assert Game.replay(rec2).river_loops == "bga"


def test_old_records_still_load():
    old = {"version": 1, "num_players": 2, "side": "A", "spirits": False, "seed": 11, "actions": [0]}
    g = Game.replay(json.dumps(old))
    assert g.river_loops == "rulebook" and g.history == [0]
    assert Game.replay({**old, "river_loops": "rulebook"}).river_loops == "rulebook"
    with pytest.raises(ValueError, match="version 1 cannot carry river_loops 'bga'"):  # only version 2 names it
        Game.replay({**old, "river_loops": "bga"})


def test_bad_records_are_named():
    rec = {"version": 2, "num_players": 2, "side": "A", "spirits": False, "river_loops": "bga", "seed": 11,
           "actions": []}
    no_option = dict(rec)
    del no_option["river_loops"]
    with pytest.raises(ValueError, match=r"lacks \['river_loops'\]"):
        Game.replay(no_option)
    for bad in ("house", None, 1, ["bga"]):
        want = f"record river_loops must be one of 'rulebook', 'bga', got {bad!r}"
        with pytest.raises(ValueError, match=re.escape(want)):
            Game.replay({**rec, "river_loops": bad})
        with pytest.raises(ValueError, match="record river_loops must be"):
            Game.replay({**rec, "version": 1, "river_loops": bad})
    with pytest.raises(ValueError, match="version 3 is not supported"):
        Game.replay({**rec, "version": 3})


def test_the_replay_viewer_and_annotations_keep_the_records_reading():
    """`harmonies replay` rebuilds a "bga" record under "bga": its last frame's scores are the game's."""
    from harmonies_apps.annotate import annotations
    from harmonies_apps.replay import build_game

    rng = np.random.default_rng(0)
    g = Game(2, "A", seed=0, river_loops="bga")
    while not g.is_over:
        g.step(ring_policy(g) if g.current_player == 0 else int(rng.choice(g.legal_actions())))
    record = g.record()
    frames = build_game(record)["frames"]
    assert [p["scores"] for p in frames[-1]["players"]] == g.scores()
    rulebook = Game.replay({**record, "version": 1, "river_loops": "rulebook"})
    assert g.scores()[0]["water"] > rulebook.scores()[0]["water"]
    assert annotations(record, [None, None]) == []  # replays the record (under its reading) without error


def test_the_planners_score_by_the_states_reading():
    """greedy's evaluation reads the state's river_loops field: the same ring scores more under "bga"."""
    from agents.greedy import DEFAULT_WEIGHTS, heuristic_value
    from harmonies_env.scoring import NUM_CATEGORIES

    rng = np.random.default_rng(0)
    g = Game(2, "A", seed=0, river_loops="bga")
    while not g.is_over:
        g.step(ring_policy(g) if g.current_player == 0 else int(rng.choice(g.legal_actions())))
    s = np.array(g.state)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    bga = heuristic_value(s, 0, np.asarray(DEFAULT_WEIGHTS, dtype=np.float64), sc)
    s[S.RIVER_LOOPS] = 0
    rulebook = heuristic_value(s, 0, np.asarray(DEFAULT_WEIGHTS, dtype=np.float64), sc)
    assert bga == g.scores()[0]["total"] and bga > rulebook


# ---- the option reaches the match engine, the tournament and the CLI -------------------------------------------


class RingAgent:
    """`ring_policy` as an agent (`act(view)`): a determinization of its view holds every public fact it reads."""

    name = "ring"

    def act(self, view) -> int:
        return ring_policy(view.determinize(0))


class ChoiceAgent:
    """The opponent of `test_a_game_scores_its_final_board_by_its_reading`: rng.choice of the legal actions."""

    name = "choice"

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def act(self, view) -> int:
        return int(self.rng.choice(view.legal_actions()))


def test_match_engine_plays_and_replays_by_the_config():
    """play_game / play_match under config river_loops "bga" play that test's game and score the ring by "bga";
    replay_result and make_record replay it by the same config."""
    from agents import RandomAgent
    from agents.match import play_game, play_match, replay_result
    from harmonies_env.game import make_record

    g = play_game([RingAgent(), ChoiceAgent()], seed=0, config=GameConfig(2, "A", river_loops="bga"))
    assert g.river_loops == "bga"
    check_final(g)  # the engine scored seat 0's ring by "bga": more water than the rulebook gives
    res = play_match([AgentPolicy(RingAgent()), AgentPolicy(ChoiceAgent())], games=[0], seed=0, record=True,
                     config=GameConfig(2, "A", river_loops="bga"))[0]
    assert res["actions"] == g.history
    again = replay_result(res, config=GameConfig(2, "A", river_loops="bga"))
    assert again.river_loops == "bga" and again.scores() == res["scores"]
    check_final(again)
    rec = make_record(GameConfig(2, "A", river_loops="bga"), res["seed"], res["actions"])
    assert rec["version"] == 2 and rec["river_loops"] == "bga"
    assert "river_loops" not in make_record(GameConfig(), 0, [])  # the rulebook's: version 1, as Game.record
    with pytest.raises(ValueError, match="games is required"):
        play_match([RandomAgent(), RandomAgent()], config=GameConfig())


def test_tournament_records_carry_the_config(tmp_path):
    """run_games(config=...): every saved record names river_loops and replays to the scores the match reported."""
    from harmonies_apps.tournament import run_games

    cfg = GameConfig(2, "B", True, "bga")
    results = run_games(["greedy:2", "random"], games=3, seed=4, progress=False, save_games=tmp_path, config=cfg)
    for r in results:
        rec = json.loads((tmp_path / f"game_{r['game']:05d}.json").read_text())
        assert (rec["version"], rec["river_loops"], rec["side"], rec["spirits"]) == (2, "bga", "B", True)
        g = Game.replay(rec)
        assert g.config == cfg and g.scores() == r["scores"]


def test_cli_river_loops_flows_into_the_games(tmp_path):
    """`harmonies tournament --river-loops bga` (a subprocess): the summary's config and every record name it, and
    the records replay to the reported scores; a bad value is one line, exit 2."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                         os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "harmonies_apps.cli", "tournament", "--agents", "greedy:2", "random", "--games",
           "2", "--seed", "5", "--quiet", "--river-loops", "bga", "--out", str(tmp_path / "out"), "--save-games",
           str(tmp_path / "games")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "out" / "tournament.json").read_text())
    assert out["summary"]["config"]["river_loops"] == "bga"
    for r in out["games"]:
        rec = json.loads((tmp_path / "games" / f"game_{r['game']:05d}.json").read_text())
        assert rec["river_loops"] == "bga" and Game.replay(rec).scores() == r["scores"]
    bad = subprocess.run(cmd[:-6] + ["--river-loops", "house"], capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 2 and "--river-loops: invalid choice: 'house'" in bad.stderr


def test_demo_and_play_take_the_config(capsys):
    """`harmonies demo --river-loops bga` plays; `play(config=...)` sets its game up by the config, and a config
    that contradicts the opponents' count is refused naming both."""
    import io

    from harmonies_apps import cli
    from harmonies_apps.play import play

    assert cli.main(["demo", "--agents", "random", "random", "--river-loops", "bga", "--side", "B", "--seed", "2"]) == 0
    assert "=== final scores ===" in capsys.readouterr().out
    g = play(["random"], config=GameConfig(2, "B", river_loops="bga"), input_fn=lambda _: "quit", out=io.StringIO())
    assert (g.num_players, g.side, g.river_loops) == (2, "B", "bga")
    with pytest.raises(ValueError, match="config.num_players=3 but you and 1 opponents make 2 players"):
        play(["random"], config=GameConfig(3), input_fn=lambda _: "quit", out=io.StringIO())


def test_the_one_argparse_helper_builds_the_config_and_names_a_bad_option(capsys):
    """`add_game_options` + `game_config_from`: the options every command line takes, one GameConfig from them; a bad
    value is argparse's one-line error naming the option; a config the options cannot make names the option."""
    import argparse

    from harmonies_env.config import add_game_options, game_config_from

    ap = argparse.ArgumentParser(prog="x")
    add_game_options(ap)
    assert game_config_from(ap.parse_args([]), 3) == GameConfig(3)  # --players unset: the caller's count
    args = ap.parse_args(["--players", "4", "--side", "B", "--spirits", "--river-loops", "bga"])
    assert game_config_from(args, 2) == GameConfig(4, "B", True, "bga")
    for bad, words in ((["--players", "5"], "argument --players: must be 1-4 (1: solo), got '5'"),
                       (["--players", "two"], "argument --players: must be 1-4"),
                       (["--side", "C"], "argument --side: invalid choice: 'C'"),
                       (["--river-loops", "house"], "argument --river-loops: invalid choice: 'house'")):
        with pytest.raises(SystemExit):
            ap.parse_args(bad)
        assert words in capsys.readouterr().err
    with pytest.raises(ValueError, match="^--players: num_players must be an integer from 1 to 4"):
        game_config_from(ap.parse_args([]), 5)  # e.g. five agents given
    versus = argparse.ArgumentParser(prog="y")
    add_game_options(versus, players=(2, 3, 4), default_players=2)
    assert game_config_from(versus.parse_args([])) == GameConfig(2)
    with pytest.raises(SystemExit):
        versus.parse_args(["--players", "1"])
    assert "argument --players: must be 2-4, got '1'" in capsys.readouterr().err
    solo = argparse.ArgumentParser(prog="z")
    add_game_options(solo, players=None)
    assert not any("--players" in a.option_strings for a in solo._actions)
    assert game_config_from(solo.parse_args(["--side", "B"]), 1) == GameConfig(1, "B")
