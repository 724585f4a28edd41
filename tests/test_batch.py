"""The batched engine replays exactly what single `Game`s do, resets deterministically, and is thread-safe."""
from __future__ import annotations

import re

import numpy as np
import pytest
from habitat_reference import placement_habitat_cells
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.actions import NUM_ACTIONS, PLACE_CUBE
from harmonies_env.batch import OPPONENT_SALT, BatchedGames, SelfPlayBatch, episode_seed, init_batch, rollout_batch
from harmonies_env.cards import NUM_CARDS, NUM_CLASSES, class_grids, habitat_cells, habitat_cells_grid
from harmonies_env.config import GameConfig
from harmonies_env.game import Game
from harmonies_env.observation import OBS_SIZE, encode_observation, observe, to_float32


def _pick(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row."""
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)


def _opponents(g: Game, seat: int, orng: np.ndarray) -> None:
    """The built-in random opponent, replayed in Python with the same generator as the kernel."""
    while not g.is_over and g.current_player != seat:
        legal = g.legal_actions()
        g.step(legal[S.random_below(orng, 0, len(legal))])


def _new_game(num_players, side, spirits, seat, seed, versus):
    g = Game(num_players, side, spirits, seed)
    orng = np.array([seed ^ OPPONENT_SALT], dtype=np.int64)
    if versus:
        _opponents(g, seat, orng)
    return g, orng


@pytest.mark.parametrize("num_players,side,spirits,seat", [(1, "A", False, 0), (1, "B", True, 0),
                                                          (2, "A", False, 1), (3, "B", True, 0)])
def test_batch_matches_sequential_games_across_resets(num_players, side, spirits, seat):
    n, base = 3, 1000
    b = BatchedGames(n, config=GameConfig(num_players, side, spirits), seat=seat, seed=base, reward="dense",
                     reward_scale=1.0)
    versus = num_players > 1
    games = [_new_game(num_players, side, spirits, seat, base + r, versus) for r in range(n)]
    start = [g.scores()[seat]["total"] if versus else 0 for g, _ in games]  # solo counts from 0, as Solo-v0
    last = list(start)
    episodes = [0] * n
    rng = np.random.default_rng(7)
    returns = np.zeros(n)
    ended = 0
    for _ in range(260):
        for r, (g, _) in enumerate(games):
            np.testing.assert_array_equal(b.states[r], g.state)
            np.testing.assert_array_equal(b.obs[r], observe(g, seat))
            np.testing.assert_array_equal(b.masks[r], g.action_mask())
        acts = _pick(b.masks, rng)
        out = b.step(acts)
        returns += out.rewards
        for r, (g, orng) in enumerate(games):
            g.step(int(acts[r]))
            _opponents(g, seat, orng)
            now = g.scores()[seat]["total"]
            assert out.rewards[r] == now - last[r]
            last[r] = now
            assert out.terminated[r] == g.is_over and not out.truncated[r] and not out.illegal[r]
            if g.is_over:
                ended += 1
                np.testing.assert_array_equal(out.final_obs[r], observe(g, seat))
                totals = [sc["total"] for sc in g.scores()]
                assert out.final_scores[r, :num_players, -1].tolist() == totals
                assert np.flatnonzero(out.final_won[r]).tolist() == g.winners()
                assert returns[r] == totals[seat] - start[r] == out.episode_returns[r, seat]
                assert out.episode_seeds[r] == g.seed
                returns[r] = 0
                episodes[r] += 1
                seed = episode_seed(base + r, episodes[r])
                assert seed != g.seed
                games[r] = _new_game(num_players, side, spirits, seat, seed, versus)
                start[r] = last[r] = games[r][0].scores()[seat]["total"] if versus else 0
    assert ended >= 2  # the test went through auto-resets


def test_selfplay_matches_sequential_games():
    n, base = 2, 55
    b = SelfPlayBatch(n, config=GameConfig(2), seed=base, reward="win")
    games = [Game(2, seed=base + r) for r in range(n)]
    rng = np.random.default_rng(3)
    ended = 0
    for _ in range(250):
        for r, g in enumerate(games):
            assert b.players[r] == g.current_player
            np.testing.assert_array_equal(b.states[r], g.state)
            np.testing.assert_array_equal(b.obs[r], observe(g))
        acts = _pick(b.masks, rng)
        out = b.step(acts)
        for r, g in enumerate(games):
            g.step(int(acts[r]))
            if g.is_over:
                ended += 1
                w = g.winners()
                expect = [(1.0 / len(w) if len(w) < 2 else 0.0) if p in w else -1.0 for p in range(2)]
                assert out.rewards[r, :2].tolist() == expect and out.terminated[r]
                games[r] = Game(2, seed=episode_seed(base + r, int(b.episodes[r])))
            else:
                assert not out.rewards[r].any() and not out.terminated[r]
    assert ended >= 2


def test_illegal_action_changes_nothing_and_is_flagged():
    b = BatchedGames(2, config=GameConfig(2), seat=0, seed=5, illegal_reward=-0.5)
    states, obs = b.states.copy(), b.obs.copy()
    legal = int(np.flatnonzero(b.masks[1])[0])
    out = b.step([267, legal])  # ending the turn before taking tokens is illegal
    assert out.illegal.tolist() == [True, False]
    assert out.rewards[0] == -0.5
    np.testing.assert_array_equal(b.states[0], states[0])
    np.testing.assert_array_equal(b.obs[0], obs[0])
    assert not np.array_equal(b.states[1], states[1])
    out = b.step([-3, 10_000])  # outside the action space: the same, not a crash
    assert out.illegal.all()


def test_actions_of_any_other_shape_are_refused_and_change_nothing():
    """One action per game, shape (N,): a (4, 1) column, a (1, 4) row or a scalar is refused, naming the shape."""
    b = BatchedGames(4, config=GameConfig(2), seat=0, seed=5)
    states = b.states.copy()
    legal = np.array([int(np.flatnonzero(m)[0]) for m in b.masks])
    for bad in (legal[:, None], legal[None, :], legal[:2], np.int64(legal[0])):
        with pytest.raises(ValueError, match=rf"one action per game \(4\), got shape {re.escape(str(bad.shape))}"):
            b.step(bad)
        np.testing.assert_array_equal(b.states, states)
    assert not b.step(legal).illegal.any()
    one = SelfPlayBatch(1, config=GameConfig(2), seed=1)
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        one.step(int(np.flatnonzero(one.masks[0])[0]))


def test_determinism_for_any_thread_count():
    def run(threads, first=0, rows=16):
        b = SelfPlayBatch(rows, config=GameConfig(3, "B", True), seed=99 + first, reward="dense",
                          num_threads=threads)
        acc = []
        for k in range(150):  # each row's action depends only on its own mask, the step and its global index
            acts = [np.flatnonzero(m)[(31 * k + 7 * (first + r)) % m.sum()] for r, m in enumerate(b.masks)]
            out = b.step(acts)
            acc.append(np.concatenate([out.rewards, out.terminated[:, None], out.obs.sum(axis=1)[:, None]], axis=1))
        return b.states.copy(), np.stack(acc)

    s1, a1 = run(1)  # the serial kernel
    s2, a2 = run(2)  # the prange kernel on 2 threads
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(a1, a2)
    assert a1[:, :, 4].sum() >= 1  # some game ended (and was reset) on the way
    s3, a3 = run(1, first=5, rows=1)  # one row alone: rows do not affect each other
    np.testing.assert_array_equal(s3[0], s1[5])
    np.testing.assert_array_equal(a3[:, 0], a1[:, 5])


def test_rollouts_deterministic_and_match_single_game_playout():
    states = np.zeros((6, S.STATE_SIZE), dtype=S.STATE_DTYPE)
    init_batch(states, config=GameConfig(2, "A", False), seeds=np.arange(10, 16, dtype=np.int64))
    seeds = np.arange(100, 106)
    r1 = rollout_batch(states, seeds)
    r2 = rollout_batch(states, seeds, num_threads=2)
    np.testing.assert_array_equal(r1.totals, r2.totals)
    np.testing.assert_array_equal(r1.steps, r2.steps)
    assert (states[:, S.GAME_OVER] == 0).all()  # not in place by default
    g = Game(2, seed=12)
    rng = np.array([102], dtype=np.int64)
    s = g.state.copy()  # the kernel plays in place: on a writable copy (`Game.state` is read-only)
    steps = rules.random_playout(s, rng, np.zeros(268, dtype=np.int64))
    g.state = s
    assert r1.steps[2] == steps
    assert r1.totals[2, :2].tolist() == [sc["total"] for sc in g.scores()]
    assert np.flatnonzero(r1.won[2]).tolist() == g.winners()
    rollout_batch(states, seeds, inplace=True)
    assert (states[:, S.GAME_OVER] == 1).all()


def test_truncation_and_episode_statistics():
    b = BatchedGames(2, config=GameConfig(1), seed=3, max_steps=5)
    rng = np.random.default_rng(0)
    for k in range(5):
        out = b.step(_pick(b.masks, rng))
    assert out.truncated.all() and not out.terminated.any()
    assert out.episode_lengths.tolist() == [5, 5]
    assert b.episodes.tolist() == [1, 1]
    fresh = Game(1, seed=episode_seed(4, 1))
    np.testing.assert_array_equal(b.states[1], fresh.state)


def test_reset_with_seed_sequence_and_validation():
    b = BatchedGames(3, config=GameConfig(1), seed=[7, 70, 700])
    for r, s in enumerate([7, 70, 700]):
        np.testing.assert_array_equal(b.states[r], Game(1, seed=s).state)
    assert b.obs.shape == (3, OBS_SIZE) and b.masks.dtype == np.bool_
    with pytest.raises(ValueError, match="one action per game"):
        b.step([0, 1])
    with pytest.raises(ValueError, match="integers"):
        b.step(np.array([0.5, 1, 2]))
    with pytest.raises(ValueError, match="seat"):
        BatchedGames(2, config=GameConfig(2), seat=2)
    with pytest.raises(ValueError, match="reward must be"):
        BatchedGames(2, config=GameConfig(1), reward="final")
    with pytest.raises(ValueError, match="self-play needs"):
        SelfPlayBatch(2, config=GameConfig(1))
    with pytest.raises(ValueError, match="num_games"):
        BatchedGames(0)
    with pytest.raises(ValueError, match="states must be"):
        rollout_batch(np.zeros((2, 5), dtype=np.int64), [1, 2])


def test_versus_random_seat_per_episode_and_win_reward():
    b = BatchedGames(8, config=GameConfig(3), seat=None, seed=21, max_steps=0)
    assert set(b.seats.tolist()) == {0, 1, 2}  # drawn per row (and per episode)
    for r in range(8):
        g = b.game(r)
        assert g.current_player == b.seats[r]
        np.testing.assert_array_equal(b.obs[r], observe(g, int(b.seats[r])))
    rng = np.random.default_rng(2)
    seen = 0
    while seen < 8:
        seats = b.seats.copy()
        out = b.step(_pick(b.masks, rng))
        for r in np.flatnonzero(out.terminated):
            seen += 1
            assert out.seats[r] == seats[r]
            won = out.final_won[r, :3]
            k = won.sum()
            expect = 0.0 if k == 3 else (1.0 / k if won[seats[r]] else -1.0)
            assert out.rewards[r] == pytest.approx(expect)
        assert not out.rewards[~out.terminated].any()


def test_solo_win_reward_is_suns():
    b = BatchedGames(4, config=GameConfig(1), seed=8, reward="win")
    rng = np.random.default_rng(4)
    games = [Game(1, seed=8 + r) for r in range(4)]
    done = np.zeros(4, bool)
    while not done.all():
        acts = _pick(b.masks, rng)
        out = b.step(acts)
        for r in range(4):
            if done[r]:
                continue
            games[r].step(int(acts[r]))
            if games[r].is_over:
                done[r] = True
                assert out.terminated[r] and out.rewards[r] == games[r].suns() == out.suns[r]


# ---- the incremental observation / mask buffers are always a fresh encoding of the row's state ----------------
@njit(cache=True)
def _fresh(states, players, obs, masks):
    """obs / masks (N, OBS_SIZE) / (N, NUM_ACTIONS) = fresh encode_observation / legal_mask of each row."""
    buf = np.zeros(NUM_ACTIONS, dtype=np.int64)
    for r in range(states.shape[0]):
        encode_observation(states[r], players[r], obs[r])
        rules.legal_mask(states[r], masks[r], buf)


def _check_fresh(b, where: str) -> None:
    n = b.num_games
    assert ((b.players >= 0) & (b.players < b.num_players)).all(), f"{where}: a deciding seat is not a seat"
    obs = np.empty((n, OBS_SIZE), dtype=b.obs.dtype)
    masks = np.empty((n, NUM_ACTIONS), dtype=np.bool_)
    _fresh(b.states.copy(), np.ascontiguousarray(b.players), obs, masks)  # writable, as the batch's kernels get it
    bad = np.flatnonzero((obs != b.obs).any(axis=1) | (masks != b.masks).any(axis=1))
    if len(bad):
        r = int(bad[0])
        cols = np.flatnonzero(obs[r] != b.obs[r])[:10].tolist()
        acts = np.flatnonzero(masks[r] != b.masks[r])[:10].tolist()
        pytest.fail(f"{where}: row {r} differs from a fresh encoding (observation entries {cols}, mask entries {acts})")


def _drive(b, steps: int, seed: int, illegal_rate: float = 0.03) -> int:
    """Random legal actions (and now and then an arbitrary, mostly illegal, one), checking every row every step."""
    rng = np.random.default_rng(seed)
    ended = 0
    _check_fresh(b, "after reset")
    for k in range(steps):
        acts = _pick(b.masks, rng)
        wild = rng.random(b.num_games) < illegal_rate
        acts[wild] = rng.integers(-2, NUM_ACTIONS + 2, size=int(wild.sum()))
        out = b.step(acts)
        ended += int((out.terminated | out.truncated).sum())
        _check_fresh(b, f"step {k}")
    return ended


@pytest.mark.parametrize("num_players,side,spirits,seat,reward,max_steps", [
    (1, "A", False, 0, "dense", 5000), (1, "B", True, 0, "win", 5000), (1, "A", True, 0, "score", 40),
    (2, "A", False, None, "win", 5000), (2, "B", True, 1, "dense", 5000), (3, "A", True, None, "score", 5000),
    (4, "B", False, None, "win", 120), (4, "A", True, 3, "dense", 5000),
])
def test_batched_games_buffers_equal_fresh_encoding_every_step(num_players, side, spirits, seat, reward, max_steps):
    b = BatchedGames(12, config=GameConfig(num_players, side, spirits), seat=seat, seed=31 * num_players,
                     reward=reward, max_steps=max_steps)
    assert _drive(b, 260, seed=num_players) >= 1  # through auto-resets too


@pytest.mark.parametrize("num_players,side,spirits,reward", [
    (2, "A", False, "win"), (2, "B", True, "dense"), (3, "B", False, "score"), (4, "A", True, "win"),
])
def test_selfplay_buffers_equal_fresh_encoding_every_step(num_players, side, spirits, reward):
    b = SelfPlayBatch(10, config=GameConfig(num_players, side, spirits), seed=7 * num_players, reward=reward)
    assert _drive(b, 300, seed=num_players + 10) >= 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_players=st.integers(1, 4), side=st.sampled_from("AB"), spirits=st.booleans(),
       selfplay=st.booleans(), seed=st.integers(0, 2**40), steps=st.integers(1, 80),
       illegal=st.sampled_from([0.0, 0.2]), threads=st.sampled_from([1, 2]))
def test_property_buffers_equal_fresh_encoding(num_players, side, spirits, selfplay, seed, steps, illegal, threads):
    rows = 32  # 2 row ranges of 16 with 2 threads
    if selfplay and num_players > 1:
        b = SelfPlayBatch(rows, config=GameConfig(num_players, side, spirits), seed=seed, reward="dense",
                          num_threads=threads)
    else:
        b = BatchedGames(rows, config=GameConfig(num_players, side, spirits), seat=None, seed=seed,
                         reward="dense", max_steps=steps // 2 + 1, num_threads=threads)
    _drive(b, steps, seed=seed % 1000, illegal_rate=illegal)


@pytest.mark.parametrize("num_players,side,spirits,selfplay", [
    (1, "A", True, False), (1, "B", True, False), (2, "B", True, False), (3, "A", True, True), (4, "B", True, True),
])
def test_int16_batch_is_the_float32_batch_in_raw_values(num_players, side, spirits, selfplay):
    """obs_dtype=np.int16 plays the same games and its buffers convert (`to_float32`) to the float32 batch's, bit for
    bit, every step (incremental updates, final observations and resets included)."""
    cfg = GameConfig(num_players, side, spirits)
    make = (lambda dt: SelfPlayBatch(8, config=cfg, seed=5, obs_dtype=dt)) if selfplay else \
        (lambda dt: BatchedGames(8, config=cfg, seat=None, seed=5, obs_dtype=dt, max_steps=150))
    b32, b16 = make(np.float32), make(np.int16)
    assert b16.obs.dtype == np.int16 and b32.obs.dtype == np.float32
    rng = np.random.default_rng(num_players)
    ended = 0
    for k in range(220):
        acts = _pick(b32.masks, rng)
        o32, o16 = b32.step(acts), b16.step(acts)
        assert to_float32(o16.obs).tobytes() == o32.obs.tobytes(), f"step {k}"
        np.testing.assert_array_equal(o16.masks, o32.masks)
        np.testing.assert_array_equal(o16.rewards, o32.rewards)
        done = o32.terminated | o32.truncated
        np.testing.assert_array_equal(done, o16.terminated | o16.truncated)
        assert to_float32(o16.final_obs[done]).tobytes() == o32.final_obs[done].tobytes()
        ended += int(done.sum())
    assert ended >= 1
    _check_fresh(b16, "int16 after 220 steps")
    with pytest.raises(ValueError, match="obs_dtype"):
        BatchedGames(2, obs_dtype=np.float64)


def test_buffers_are_read_only_views_and_set_states_follows_new_positions():
    b = BatchedGames(3, config=GameConfig(2), seed=4)
    out = b.step(_pick(b.masks, np.random.default_rng(0)))
    for arr in (b.obs, b.masks, out.obs, out.masks, b.action_masks()):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0, 0] = 1
    assert np.shares_memory(out.obs, b.obs)  # views: the next step overwrites them
    g = Game(2, seed=99)
    for _ in range(7):
        g.step(int(g.legal_actions()[-1]))
    while g.current_player != b.seats[1]:  # a Versus row waits for its learner
        g.step(int(g.legal_actions()[-1]))
    for arr in (b.states, b.book, b.cfg):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1
    b.set_states(g.state, rows=1)
    np.testing.assert_array_equal(b.obs[1], observe(g, g.current_player))
    np.testing.assert_array_equal(b.masks[1], g.action_mask())
    _drive(b, 30, seed=1)


@njit(cache=True)
def _random_boards(n, seed, bbs, cubes, sides):
    """Random (not necessarily reachable) boards from a few stack codes each, so that habitats often stand."""
    rng = np.array([seed], dtype=np.int64)
    for k in range(n):
        side = S.random_below(rng, 0, 2)
        sides[k] = side
        palette = np.empty(3, dtype=np.int64)
        for j in range(3):
            palette[j] = S.random_below(rng, 0, 15)
        for i in range(23 if side == 0 else 25):
            bbs[k, palette[S.random_below(rng, 0, 3)]] |= 1 << i
            if S.random_below(rng, 0, 8) == 0:
                cubes[k] |= 1 << i


@njit(cache=True)
def _habitat_mismatches(bbs, cubes, sides):
    grids = np.zeros(NUM_CLASSES, dtype=np.int64)
    bad = 0
    found = 0
    for k in range(bbs.shape[0]):
        class_grids(sides[k], bbs[k], grids)
        for card in range(1, NUM_CARDS + 1):
            ref = placement_habitat_cells(sides[k], bbs[k], cubes[k], card)
            found += ref != 0
            bad += ref != habitat_cells_grid(sides[k], grids, cubes[k], card)
            bad += ref != habitat_cells(sides[k], bbs[k], cubes[k], card)
    return bad, found


def test_grid_habitat_matcher_equals_placement_reference():
    """The engine's grid matcher (both entry points) against the placement-by-placement test reference."""
    n = 20_000
    bbs = np.zeros((n, 15), dtype=np.int64)
    cubes = np.zeros(n, dtype=np.int64)
    sides = np.zeros(n, dtype=np.int64)
    _random_boards(n, 5, bbs, cubes, sides)
    bad, found = _habitat_mismatches(bbs, cubes, sides)
    assert bad == 0 and found > 10_000


@njit(cache=True)
def _legal_mismatches(num_players, side, spirits, seed, steps):
    """Random games: the cube actions of legal_actions (the state's habitat answers) against the placement reference,
    and
    write_mask(MASK_ALL) against legal_mask."""
    s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
    b1 = np.zeros(NUM_ACTIONS, dtype=np.int64)
    b2 = np.zeros(NUM_ACTIONS, dtype=np.int64)
    m1 = np.zeros(NUM_ACTIONS, dtype=np.bool_)
    m2 = np.ones(NUM_ACTIONS, dtype=np.bool_)
    rng = np.array([seed], dtype=np.int64)
    S.init_state(s, num_players, side, spirits, seed)
    bad = 0
    games = 0
    for _ in range(steps):
        if s[S.GAME_OVER]:
            games += 1
            S.init_state(s, num_players, side, spirits, seed + games)
        n = rules.legal_actions(s, b1)
        p = s[S.CURRENT]
        for h in range(S.MAX_SLOTS):  # cube actions of slot h, in order, are exactly the habitat's cells
            card = s[S.SLOT + S.MAX_SLOTS * p + h]
            want = 0
            if card >= 0 and not (s[S.SPIRITS] and s[S.SPIRIT_KEPT + p] < 0):
                want = placement_habitat_cells(s[S.SIDE], s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15],
                                               s[S.CUBES + p], card)
            got = 0
            last = -1
            for k in range(n):
                a = b1[k] - PLACE_CUBE - 25 * h
                if 0 <= a < 25:
                    got |= 1 << a
                    bad += a <= last
                    last = a
            bad += got != want
        rules.legal_mask(s, m1, b2)
        m2[:] = True
        rules.write_mask(s, m2, rules.MASK_ALL, 15)
        bad += (m1 != m2).any()
        rules.step(s, b1[S.random_below(rng, 0, n)])
    return bad, games


@pytest.mark.parametrize("num_players,side,spirits", [(1, 0, 0), (1, 1, 1), (2, 0, 1), (3, 1, 0), (4, 0, 1)])
def test_fast_legal_actions_and_mask_equal_the_reference(num_players, side, spirits):
    bad, games = _legal_mismatches(num_players, side, spirits, 17, 20_000)
    assert bad == 0 and games >= 20
