"""The observation: layout, perspective, contents, and that nothing hidden leaks into it."""
from __future__ import annotations

import numpy as np
import pytest

from harmonies_env import Game
from harmonies_env import state as S
from harmonies_env.actions import PLACE_TOKEN, TAKE_TOKENS
from harmonies_env.cards import FIRST_SPIRIT
from harmonies_env.geometry import MAX_CELLS
from harmonies_env.observation import (
    G_CENTRAL,
    G_DEALT,
    G_HAND,
    G_NUM_PLAYERS,
    G_POUCH,
    G_ROUND,
    OBS_DIVISOR,
    OBS_HIGH,
    OBS_LAYOUT,
    OBS_LOW,
    OBS_SIZE,
    P_CUBES,
    P_PRESENT,
    P_SCORE,
    P_SEAT,
    P_SLOTS,
    P_SPIRIT,
    P_STACKS,
    P_TO_MOVE,
    PLAYER_BLOCK,
    encode_batch,
    encode_observation,
    observe,
    to_float32,
)
from harmonies_env.scoring import CATEGORIES
from harmonies_env.view import PlayerView


def play_random(game: Game, steps: int, seed: int = 0) -> Game:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if game.is_over:
            break
        game.step(int(rng.choice(game.legal_actions())))
    return game


def stack_planes(obs: np.ndarray, block: int) -> np.ndarray:
    """(15, 25) one-hot stack planes of a seat block."""
    b = block * PLAYER_BLOCK + P_STACKS
    return obs[b: b + 15 * MAX_CELLS].reshape(15, MAX_CELLS)


def test_layout_is_contiguous_and_covers_the_vector():
    per_seat = [row for row in OBS_LAYOUT if row[1] < PLAYER_BLOCK]
    glob = [row for row in OBS_LAYOUT if row[1] >= PLAYER_BLOCK]
    off = 0
    for _, o, n, _ in per_seat:
        assert o == off
        off += n
    assert off == PLAYER_BLOCK
    off = 4 * PLAYER_BLOCK
    for _, o, n, _ in glob:
        assert o == off
        off += n
    assert off == OBS_SIZE


@pytest.mark.parametrize("side,cells", [("A", 23), ("B", 25)])
def test_every_cell_has_exactly_one_stack_code(side, cells):
    g = play_random(Game(2, side, seed=3), 40)
    obs = observe(g, 0)
    for block, seat in ((0, 0), (1, 1)):
        planes = stack_planes(obs, block)
        assert planes[:, :cells].sum(axis=0).tolist() == [1.0] * cells
        assert planes[:, cells:].sum() == 0
        codes = planes[:, :cells].argmax(axis=0)
        assert codes.tolist() == g.field("stack")[seat, :cells].tolist()


def test_own_board_first_then_turn_order_and_absent_seats_zero():
    g = Game(3, "A", seed=5)
    g.step(TAKE_TOKENS + 0)
    colour = int(np.flatnonzero(g.field("hand"))[0])
    g.step(PLACE_TOKEN + MAX_CELLS * colour + 4)  # player 0 puts a token on cell 4
    for viewer in range(3):
        obs = observe(g, viewer)
        block_of_p0 = (0 - viewer) % 3
        for block in range(3):
            assert obs[block * PLAYER_BLOCK + P_PRESENT] == 1
            seat = (viewer + block) % 3
            assert obs[block * PLAYER_BLOCK + P_SEAT + seat] == 1
            assert stack_planes(obs, block)[0, 4] == (0.0 if block == block_of_p0 else 1.0)
        assert obs[block_of_p0 * PLAYER_BLOCK + P_TO_MOVE] == 1
        assert not obs[3 * PLAYER_BLOCK: 4 * PLAYER_BLOCK].any()  # seat block 3 is absent in a 3-player game
        assert obs[G_NUM_PLAYERS + 2] == 1


def test_public_counts_and_scores():
    g = play_random(Game(2, "B", seed=11), 57)
    obs = observe(g, 1)
    np.testing.assert_allclose(obs[G_POUCH: G_POUCH + 6], g.field("pouch") / 30.0, rtol=1e-6)
    np.testing.assert_allclose(obs[G_HAND: G_HAND + 6], g.field("hand") / 3.0, rtol=1e-6)
    central = g.field("central")
    for sp in range(5):
        for c in range(6):
            assert obs[G_CENTRAL + 6 * sp + c] == pytest.approx((central[sp] == c).sum() / 3.0)
    scores = g.scores()
    for block, seat in ((0, 1), (1, 0)):
        got = obs[block * PLAYER_BLOCK + P_SCORE: block * PLAYER_BLOCK + P_SCORE + len(CATEGORIES)]
        np.testing.assert_allclose(got, [scores[seat][c] / 100.0 for c in CATEGORIES], rtol=1e-6)
        cubes = int(g.state[S.CUBES + seat])
        assert [int(x) for x in obs[block * PLAYER_BLOCK + P_CUBES: block * PLAYER_BLOCK + P_CUBES + MAX_CELLS]] \
            == [(cubes >> i) & 1 for i in range(MAX_CELLS)]


def test_held_cards_show_card_and_cubes_left():
    g = Game(2, "A", seed=2)
    rng = np.random.default_rng(1)
    while not (g.field("slot")[0] >= 0).any():  # play until player 0 holds a card
        legal = g.legal_actions()
        cards = [a for a in legal if 155 <= a < 160]
        g.step(cards[0] if cards and g.current_player == 0 else int(rng.choice(legal)))
    obs = observe(g, 0)
    h = int(np.flatnonzero(g.field("slot")[0] >= 0)[0])
    card = int(g.field("slot")[0, h])
    row = obs[P_SLOTS + 43 * h: P_SLOTS + 43 * (h + 1)]
    assert row[card - 1] == 1 and row[:42].sum() == 1
    from harmonies_env.cards import CUBES_ON_CARD
    assert row[42] == pytest.approx(CUBES_ON_CARD[card] / 5.0)


def test_hidden_information_does_not_change_the_observation():
    g = play_random(Game(3, "A", spirits=True, seed=8), 30)
    twin = g.clone()
    s = twin.state.copy()
    n = int(s[S.DECK_COUNT])
    deck = S.field(s, "deck")
    deck[:n] = deck[:n][::-1].copy()  # another draw pile order
    S.set_rng(s, S.get_rng(s) ^ 0x123456789)  # another pouch draw order
    twin.state = s  # validated
    assert not np.array_equal(g.state, twin.state)
    for p in range(3):
        assert np.array_equal(observe(g, p), observe(twin, p))


def test_others_unkept_spirits_are_hidden_but_own_dealt_spirits_are_seen():
    g = Game(2, "A", spirits=True, seed=4)
    dealt = g.field("spirit_dealt")
    obs1 = observe(g, 1)  # player 1 has not chosen yet and sees their own two Spirits
    for j in range(2):
        assert obs1[G_DEALT + 10 * j + int(dealt[1, j]) - FIRST_SPIRIT] == 1
    twin = g.clone()
    unused = sorted(set(range(FIRST_SPIRIT, FIRST_SPIRIT + 10)) - set(dealt.ravel().tolist()))
    S.field(twin._state, "spirit_dealt")[0] = unused[:2]  # player 0 was dealt other Spirits
    assert np.array_equal(observe(g, 1), observe(twin, 1))
    assert not np.array_equal(observe(g, 0), observe(twin, 0))
    g.step(260)  # player 0 keeps their first Spirit: now public
    kept = int(g.field("spirit_kept")[0])
    assert observe(g, 1)[PLAYER_BLOCK + P_SPIRIT + kept - FIRST_SPIRIT] == 1
    assert not observe(g, 0)[G_DEALT: G_DEALT + 20].any()  # no longer choosing


@pytest.mark.parametrize("n,side,spirits", [(1, "A", True), (2, "B", False), (4, "A", True)])
def test_observation_stays_in_bounds_over_whole_games(n, side, spirits):
    g = Game(n, side, spirits, seed=21)
    rng = np.random.default_rng(2)
    out = np.empty(OBS_SIZE, dtype=np.float32)
    while True:
        for p in range(n):
            encode_observation(g.state.copy(), p, out)  # writable, as the envs pass it (no read-only compile)
            assert np.isfinite(out).all()
            assert (out >= OBS_LOW).all() and (out <= OBS_HIGH).all()
        if g.is_over:
            break
        g.step(int(rng.choice(g.legal_actions())))


@pytest.mark.parametrize("n,side,spirits,seed", [(1, "A", True, 1), (1, "B", True, 2), (2, "B", True, 3),
                                                  (2, "A", False, 4), (3, "A", True, 5), (4, "B", True, 6)])
def test_raw_int16_encoding_is_the_float32_observation_bit_for_bit(n, side, spirits, seed):
    """The one kernel writes raw values into int16 and scaled ones into float32: to_float32 joins them exactly."""
    g = Game(n, side, spirits, seed=seed)
    rng = np.random.default_rng(seed)
    f32 = np.empty(OBS_SIZE, dtype=np.float32)
    raw = np.empty((n, OBS_SIZE), dtype=np.int16)
    scaled = set()
    while True:
        for p in range(n):
            s = g.state.copy()  # writable, as the kernels get it (a read-only view compiles a second variant)
            encode_observation(s, p, f32)
            encode_observation(s, p, raw[p])
            assert to_float32(raw[p]).tobytes() == f32.tobytes()
            scaled |= set(np.flatnonzero(raw[p] > 1).tolist())
        assert to_float32(raw).shape == (n, OBS_SIZE)
        if g.is_over:
            break
        g.step(int(rng.choice(g.legal_actions())))
    assert G_ROUND in scaled and P_SCORE + 7 in scaled  # raw, not scaled, values went through


def test_divisors_follow_the_layout_and_raw_values_fit_int16():
    assert OBS_DIVISOR[P_SCORE] == 100 and OBS_DIVISOR[G_POUCH] == 30 and OBS_DIVISOR[G_CENTRAL] == 3
    assert OBS_DIVISOR[P_SLOTS + 42] == 5 and OBS_DIVISOR[P_SLOTS + 41] == 1 and OBS_DIVISOR[P_STACKS] == 1
    for name, off, size, meaning in OBS_LAYOUT:  # "/ d" in a meaning is that block's divisor
        if name != "held_cards":
            want = int(meaning.split("/ ")[1].split()[0]) if "/ " in meaning else 1
            assert (OBS_DIVISOR[off: off + size] == want).all(), name
    assert (OBS_HIGH * OBS_DIVISOR < 2**15).all()
    with pytest.raises(ValueError, match="int16"):
        to_float32(np.zeros(OBS_SIZE, dtype=np.float32))


def test_encode_batch_matches_single_rows():
    games = [play_random(Game(2, "A", seed=k), 10 * k) for k in range(4)]
    states = np.stack([g.state for g in games])
    players = np.array([0, 1, 1, 0], dtype=np.int64)
    out = np.zeros((4, OBS_SIZE), dtype=np.float32)
    encode_batch(states, players, out)
    for k, g in enumerate(games):
        assert np.array_equal(out[k], observe(g, int(players[k])))


def test_observe_rejects_bad_seat():
    g = Game(2, seed=1)
    with pytest.raises(ValueError, match="seat 0..1"):
        observe(g, 2)


def test_player_view():
    g = Game(2, "A", spirits=True, seed=9)
    v0, v1 = PlayerView(g, 0), PlayerView(g, 1)
    assert (v0.player, v0.num_players, v0.side, v0.spirits) == (0, 2, "A", True)
    assert v0.legal_actions() == [260, 261] and v1.legal_actions() == []
    assert v0.action_mask.dtype == np.bool_ and v0.action_mask.sum() == 2 and not v1.action_mask.any()
    assert np.array_equal(v1.observation, observe(g, 1))
    assert "Spirit" in v0.describe_action(260)
    assert v0.scores() == g.scores()
    d = v1.determinize(seed=3)
    assert isinstance(d, Game) and d is not g
    assert np.array_equal(observe(d, 1), observe(g, 1))  # the determinized game looks the same to player 1
    with pytest.raises(ValueError):
        PlayerView(g, 2)
