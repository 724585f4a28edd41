"""Agents: legal play in every configuration, strength ordering, search budget, hidden-information independence."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents import GreedyAgent, MCTSAgent, RandomAgent, make_agent
from agents.greedy import (
    DEFAULT_WEIGHTS,
    MAX_PLAN,
    PARENT_CACHE,
    TERMS_SCRATCH,
    habitat_distance,
    heuristic_value,
    heuristic_value_after,
    heuristic_value_board,
    heuristic_value_child,
    heuristic_value_with,
    need_masks,
    no_turn_left,
    parent_cache,
    place_cubes_greedily,
    plan_candidates,
    plan_group,
    plan_turn,
    potential_terms,
)
from harmonies_apps.tournament import play_game
from harmonies_env import Game
from harmonies_env import actions as A
from harmonies_env import state as S
from harmonies_env.cards import FIRST_SPIRIT, habitat_cells, habitat_placements
from harmonies_env.config import GameConfig
from harmonies_env.data import LABELS
from harmonies_env.stacks import STACKS
from harmonies_env.view import PlayerView


class Checked:
    """Wraps an agent and asserts every action it returns is legal for the view it got."""

    def __init__(self, agent):
        self.agent = agent
        self.name = agent.name
        self.calls = 0

    def reset(self):
        self.agent.reset()

    def act(self, view):
        a = self.agent.act(view)
        assert a in view.legal_actions(), (self.name, a, view.describe_action(a))
        self.calls += 1
        return a


@pytest.mark.parametrize("num_players,side,spirits", [(1, "A", False), (2, "B", True), (3, "A", True),
                                                       (4, "B", False)])
def test_agents_play_legal_whole_games(num_players, side, spirits):
    kinds = [GreedyAgent(seed=1), RandomAgent(seed=2), MCTSAgent(iterations=4, seed=3, rollout_turns=2),
             GreedyAgent(beam=2, seed=4)]
    agents = [Checked(kinds[k]) for k in range(num_players)]
    game = play_game(agents, seed=11 + num_players, config=GameConfig(num_players, side, spirits))
    assert game.is_over
    assert all(a.calls > 0 for a in agents)
    if spirits:  # every seat chose a Spirit
        assert (game.field("spirit_kept")[:num_players] >= 0).all()


def test_greedy_beats_random_by_a_wide_margin():
    g_scores, r_scores = [], []
    for seed in range(4):
        agents = [GreedyAgent(), RandomAgent(seed)] if seed % 2 == 0 else [RandomAgent(seed), GreedyAgent()]
        game = play_game(agents, seed=seed)
        gi = 0 if seed % 2 == 0 else 1
        totals = [s["total"] for s in game.scores()]
        g_scores.append(totals[gi])
        r_scores.append(totals[1 - gi])
        assert game.winners() == [gi]
    assert np.mean(g_scores) >= np.mean(r_scores) + 25


# Plain-Python statement of a habitat's distance: the stack each habitat class ends as, by label.
_CLASS_TARGETS = {"blue": [("blue",)], "yellow": [("yellow",)], "tree1": [("green",)], "tree2": [("brown", "green")],
                  "tree3": [("brown", "brown", "green")], "mountain1": [("gray",)], "mountain2": [("gray", "gray")],
                  "mountain3": [("gray", "gray", "gray")],
                  "building": [("brown", "red"), ("gray", "red"), ("red", "red")]}


def _reference_distance(side: str, stacks: list[tuple[str, ...]], cubes: set[int], card: int) -> int:
    """Fewest tokens to add so that some placement of the card's pattern stands with its cube cell free."""
    best = 99
    for placed, cube_cell in habitat_placements(side, card):
        if cube_cell in cubes:
            continue
        cost = 0
        for cell, cls in placed:
            have = stacks[cell]
            needs = [len(t) - len(have) for t in _CLASS_TARGETS[LABELS[cls]] if t[: len(have)] == have]
            if not needs or (min(needs) > 0 and cell in cubes):
                cost = 99
                break
            cost += min(needs)
        best = min(best, cost)
    return best


def test_habitat_distance_matches_a_plain_reference_and_the_habitat_matcher():
    rng = np.random.default_rng(0)
    need = np.zeros((9, 4), dtype=np.int64)
    checked = {0: 0, 1: 0, 2: 0}
    for seed in range(12):
        g = Game(2, "AB"[seed % 2], False, seed=seed)
        for _ in range(int(rng.integers(0, 60))):  # random boards, from empty to crowded
            if g.is_over:
                break
            g.step(int(rng.choice(g.legal_actions())))
        side = seed % 2
        for p in range(2):
            bb = g.state[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15].copy()  # writable: no read-only compile
            cubes = int(g.state[S.CUBES + p])
            need_masks(bb, cubes, need)
            stacks = [STACKS[c] for c in g.field("stack")[p]]
            cube_cells = {i for i in range(25) if cubes >> i & 1}
            for card in range(1, FIRST_SPIRIT):
                d = habitat_distance(side, cubes, card, need)
                assert d == _reference_distance("AB"[side], stacks, cube_cells, card), (seed, p, card)
                assert (d == 0) == bool(habitat_cells(side, bb, cubes, card))
                if d in checked:
                    checked[d] += 1
    assert min(checked.values()) > 0  # standing, 1 and 2 tokens away all occurred


def test_habitat_distance_terms_make_the_planner_much_stronger():
    from experiments.tune_greedy import NO_DISTANCE_WEIGHTS, compare

    r = compare(DEFAULT_WEIGHTS, NO_DISTANCE_WEIGHTS, games=120)
    assert r["margin"] > 6 and r["win_rate_a"] > 0.65, r


def _midgame(seed: int = 4, turns: int = 10) -> Game:
    game = Game(2, "A", False, seed=seed)
    agent = GreedyAgent()
    while game.turn < turns:
        game.step(agent.act(PlayerView(game, game.current_player)))
    return game


def test_no_turn_left_follows_the_end_of_game_rules():
    game = _midgame()
    s = game.state.copy()
    mover = int(s[S.CURRENT])
    assert not no_turn_left(s, 0) and not no_turn_left(s, 1)
    t = s.copy()
    t[S.END_TRIGGER] = 1  # the final round: whoever has played it (seats <= the mover) is done
    assert no_turn_left(t, 0) and no_turn_left(t, mover) and no_turn_left(t, 1) == (mover == 1)
    t = s.copy()
    t[S.BITBOARD + 15 * mover] = 0b11  # the mover's board would trigger the end: 2 empty cells
    assert no_turn_left(t, mover) and not no_turn_left(t, 1 - mover)
    t = s.copy()
    S.field(t, "pouch")[:] = [2, 0, 0, 0, 0, 0]  # the pouch cannot refill the space being taken
    assert not no_turn_left(t, mover)  # no space taken yet this turn
    t[S.TAKEN_SPACE] = 0
    assert no_turn_left(t, mover) and not no_turn_left(t, 1 - mover)
    solo = Game(1, "A", False, seed=1).state.copy()
    S.field(solo, "pouch")[:] = [8, 0, 0, 0, 0, 0]  # solo refills all 3 spaces: 9 tokens needed
    assert no_turn_left(solo, 0)
    t = s.copy()
    t[S.GAME_OVER] = 1
    assert no_turn_left(t, 0) and no_turn_left(t, 1)


def test_evaluate_drops_the_potential_on_a_players_last_turn():
    game = _midgame()
    s = game.state.copy()
    p = int(s[S.CURRENT])
    sc = np.zeros(8, dtype=np.int64)
    terms = np.zeros(len(DEFAULT_WEIGHTS))
    potential_terms(s, p, terms)
    assert abs(float(DEFAULT_WEIGHTS @ terms)) > 0.1  # this position has potential
    assert heuristic_value(s, p, DEFAULT_WEIGHTS, sc) == pytest.approx(sc[7] + DEFAULT_WEIGHTS @ terms)
    s[S.END_TRIGGER] = 2
    assert heuristic_value(s, p, DEFAULT_WEIGHTS, sc) == sc[7] == game.scores()[p]["total"]


def test_a_placement_valued_from_its_parent_is_the_full_evaluation():
    """The beam's `heuristic_value_child` (a token placement valued from its parent's cached score, terms and
    grids) is `heuristic_value_board` of the child bit for bit: every token placement of up to 3 tokens into a turn,
    random weights, 1-4 players, both sides, Spirits, both river readings; and the final stage's
    `heuristic_value_after` (a card taken, cubes placed, the board's parts reused) is `heuristic_value_with`, and so
    is `taken_parts` (a card taken, no cube)."""
    from agents.greedy.incremental import after_parts, taken_parts, weigh
    from harmonies_env.batch import play_plan
    from harmonies_env.rules import legal_actions, step, token_cells
    from harmonies_env.stacks import STACK_AFTER

    rng = np.random.default_rng(7)
    plans, lens, vals = np.zeros((1, MAX_PLAN), dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1)
    buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
    sc = np.zeros(8, dtype=np.int64)
    scratch = np.empty(TERMS_SCRATCH, dtype=np.int64)
    pc = np.empty(PARENT_CACHE, dtype=np.int64)
    checked = finals = quick = 0
    for g in range(40):
        s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
        S.init_state(s, int(rng.integers(1, 5)), g % 2, int(g % 4 >= 2), int(rng.integers(1, 2**40)), int(g % 3 == 0))
        for _ in range(int(rng.integers(0, 25))):
            if s[S.GAME_OVER] or not plan_turn(s, DEFAULT_WEIGHTS, 2, plans, lens, vals):
                break
            play_plan(s, plans[0], lens[0])
        takes = [a for a in buf[: legal_actions(s, buf)] if a < A.PLACE_TOKEN] if not s[S.GAME_OVER] else []
        if not takes:
            continue
        step(s, takes[int(rng.integers(len(takes)))])
        p = int(s[S.CURRENT])
        w = rng.normal(size=DEFAULT_WEIGHTS.shape)
        for _depth in range(3):
            parent_cache(s, p, pc, True)
            moves = []
            for c in range(6):
                m = int(token_cells(s, p, c)) if s[S.HAND + c] > 0 else 0
                while m:
                    i = (m & -m).bit_length() - 1
                    m &= m - 1
                    old = int(S.stack_at(s, p, i))
                    new = int(STACK_AFTER[old, c])
                    bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15].copy()
                    bb[old] &= ~(1 << i)
                    bb[new] |= 1 << i
                    want = heuristic_value_board(s, p, bb, w, sc, scratch)
                    assert heuristic_value_child(s, p, bb, i, old, new, w, sc, scratch, pc) == want, (g, c, i)
                    checked += 1
                    moves.append(A.PLACE_TOKEN + 25 * c + i)
            if not moves:
                break
            step(s, moves[int(rng.integers(len(moves)))])
        parent_cache(s, p, pc, False)  # the final stage: a card taken or none, then cubes, on the same board
        parts = after_parts(s, p, sc, scratch, pc, s)
        for a in [-1] + [a for a in buf[: legal_actions(s, buf)] if A.TAKE_CARD <= a < A.PLACE_CUBE]:
            t = s.copy()
            if a >= 0:
                step(t, a)
            cubes = place_cubes_greedily(t, np.zeros(MAX_PLAN, dtype=np.int64), 0)
            want = heuristic_value_with(t, p, w, sc, scratch)
            assert heuristic_value_after(t, p, w, sc, scratch, pc, s) == want, (g, a)
            finals += 1
            if cubes == 0:  # no habitat stands: the final stage values it from the turn's parts
                got = weigh(parts if a < 0 else taken_parts(s, p, int(s[S.MARKET + a - A.TAKE_CARD]), pc, parts), w)
                assert got == want, (g, a)
                quick += 1
    assert checked > 1000 and finals > 40 and quick > 30


def test_a_cards_distance_after_a_token_from_its_witnesses_is_the_full_match():
    """`near_after_token` (a card's habitat distance after one token, from the parent's `near_witness`) is
    `habitat_near` of the child board whenever it answers, for every card on random boards of both sides, and it
    answers most of the time."""
    from agents.greedy.habitats import MAX_ROTATIONS, habitat_near, near_after_token, near_witness, need_grids
    from agents.greedy.terms import CARD_CLASSES
    from harmonies_env.cards import NUM_CARDS, to_grid
    from harmonies_env.rules import step, token_cells
    from harmonies_env.stacks import STACK_AFTER

    rng = np.random.default_rng(11)
    need = np.empty((9, 4), dtype=np.int64)
    child = np.empty((9, 4), dtype=np.int64)
    wit = np.empty(11, dtype=np.int64)
    checked = answered = 0
    for g in range(16):
        s = np.zeros(S.STATE_SIZE, dtype=S.STATE_DTYPE)
        S.init_state(s, 2, g % 2, 0, int(rng.integers(1, 2**40)))
        p = int(s[S.CURRENT])
        side = int(s[S.SIDE])
        for _ in range(int(rng.integers(0, 16))):  # a random board: tokens placed anywhere legal
            c = int(rng.integers(6))
            m = int(token_cells(s, p, c))
            if m:
                bits = [i for i in range(25) if (m >> i) & 1]
                s[S.HAND + c] += 1
                step(s, A.PLACE_TOKEN + 25 * c + bits[int(rng.integers(len(bits)))])
        s[S.CUBES + p] = int(rng.integers(0, 2**25)) & int(rng.integers(0, 2**25)) & int(rng.integers(0, 2**25))
        bb = s[S.BITBOARD + 15 * p: S.BITBOARD + 15 * p + 15].copy()
        cubes = int(s[S.CUBES + p])
        need_grids(side, bb, cubes, need)
        for card in rng.choice(np.arange(1, NUM_CARDS + 1), 10, replace=False):
            near_witness(side, cubes, int(card), need, wit, 0, np.empty(4 * MAX_ROTATIONS, dtype=np.int64))
            assert wit[0] == habitat_near(side, cubes, int(card), need)
            for c in range(6):
                m = int(token_cells(s, p, c)) & ~cubes
                while m:
                    i = (m & -m).bit_length() - 1
                    m &= m - 1
                    old = int(S.stack_at(s, p, i))
                    new = int(STACK_AFTER[old, c])
                    cb = bb.copy()
                    cb[old] &= ~(1 << i)
                    cb[new] |= 1 << i
                    need_grids(side, cb, cubes, child)
                    got = near_after_token(CARD_CLASSES[side, card], to_grid(side, 1 << i), old, new, wit, 0)
                    checked += 1
                    if got >= 0:
                        answered += 1
                        assert got == habitat_near(side, cubes, int(card), child), (g, card, c, i)
    assert checked > 2000 and answered > 0.8 * checked


@pytest.mark.parametrize("players,side,spirits", [(2, "A", False), (1, "B", False), (3, "B", True), (4, "A", False)])
def test_diverse_candidates_cover_every_space_and_card_choice(players, side, spirits):
    """`plan_candidates`: the best plan of every (central space, card or none) pair, then the best of the rest; every
    plan is a legal whole turn, and the first is the best plan found (what the heuristic alone would play)."""
    game = Game(players, side, spirits, seed=17 + players)
    agent = GreedyAgent(beam=4)
    checked = 0
    while not game.is_over and checked < 6:
        s = game.state.copy()
        start = s[S.TAKEN_SPACE] < 0 and not s[S.TOOK_CARD]  # a turn's first decision
        if start and not (spirits and s[S.SPIRIT_KEPT + game.current_player] < 0) and game.turn >= players:
            K = 40
            plans = np.zeros((K, MAX_PLAN), np.int64)
            lens = np.zeros(K, np.int64)
            vals = np.zeros(K)
            n = plan_candidates(s, DEFAULT_WEIGHTS, 6, plans, lens, vals)
            assert np.array_equal(s, game.state)  # not modified
            legal = game.legal_actions()
            spaces = [a - A.TAKE_TOKENS for a in legal if a < A.PLACE_TOKEN]
            cards = [a - A.TAKE_CARD for a in legal if A.TAKE_CARD <= a < A.PLACE_CUBE]
            want = {6 * sp + c for sp in spaces for c in [*cards, 5]}
            groups = [plan_group(plans[k], lens[k]) for k in range(n)]
            assert set(groups) == want and len(want) <= n <= K
            first = len(want)
            assert len(set(groups[:first])) == first  # one plan per group first, best groups first
            assert (np.diff(vals[:first]) <= 0).all() and (np.diff(vals[first:n]) <= 0).all()
            assert vals[0] == vals[:n].max()
            for k in range(n):
                c = game.clone()
                plan = plans[k, : lens[k]].tolist()
                assert plan[-1] == A.END_TURN
                for a in plan:
                    assert a in c.legal_actions()
                    c.step(a)
            checked += 1
        game.step(agent.act(PlayerView(game, game.current_player)))
    assert checked == 6


def test_greedy_with_a_beam_per_space_plays_the_diverse_generators_first_plan():
    """`greedy:BEAM:spaces` is the heuristic's own choice among the candidates the learned agent ranks."""
    game = Game(2, "A", False, seed=8)
    agent = make_agent("greedy:8:spaces")
    while game.turn < 6:
        s = game.state.copy()
        a = agent.act(PlayerView(game, game.current_player))
        if s[S.TAKEN_SPACE] < 0:
            plans = np.zeros((3, MAX_PLAN), np.int64)
            lens = np.zeros(3, np.int64)
            plan_candidates(s, DEFAULT_WEIGHTS, 8, plans, lens, np.zeros(3))
            assert agent._plan == plans[0, 1: lens[0]].tolist() and a == plans[0, 0]
        game.step(a)


def test_greedy_is_deterministic_and_replans_after_unexpected_positions():
    game = Game(2, "A", False, seed=5)
    agent = GreedyAgent()
    v = PlayerView(game, 0)
    first = agent.act(v)
    assert agent.act(v) == first  # the view did not move as the plan expected: it plans again, identically
    fresh = GreedyAgent()
    assert fresh.act(PlayerView(game, 0)) == first
    # a position the plan did not expect (another action taken) makes it plan again, legally
    other = [a for a in game.legal_actions() if a != first][0]
    game.step(other)
    assert agent.act(PlayerView(game, 0)) in game.legal_actions()


def test_mcts_respects_iteration_budget_and_reports_it():
    game = Game(2, "A", False, seed=3)
    agent = MCTSAgent(iterations=7, seed=1, rollout_turns=2)
    cands, visits, means = agent.search(PlayerView(game, 0))
    assert len(cands) > 1
    assert visits.sum() == 7 == agent.last_iterations
    assert ((means >= 0) & (means <= 1)).all()


def test_mcts_seconds_budget_stops():
    game = Game(2, "A", False, seed=3)
    agent = MCTSAgent(seconds=0.05, seed=1, rollout_turns=2)
    agent.act(PlayerView(game, 0))
    assert agent.last_iterations >= 1


def _hidden_twin(game: Game, seed: int) -> Game:
    """Same position for seat 0, different hidden draw-pile order and chance generator."""
    twin = game.clone()
    s = twin.state.copy()
    n = int(s[S.DECK_COUNT])
    deck = S.field(s, "deck")
    deck[:n] = np.random.default_rng(seed).permutation(deck[:n])
    S.set_rng(s, seed * 7919 + 17)
    twin.state = s  # validated
    return twin


@pytest.mark.parametrize("make", [lambda: MCTSAgent(iterations=12, seed=4, rollout_turns=4),
                                  lambda: GreedyAgent(seed=4)])
def test_search_never_sees_hidden_information(make):
    game = Game(2, "A", False, seed=21)
    bots = [GreedyAgent(), GreedyAgent()]
    while game.turn < 4:  # a few turns in: cards and tokens have been drawn
        game.step(bots[game.current_player].act(PlayerView(game, game.current_player)))
    twin = _hidden_twin(game, 99)
    assert not np.array_equal(game.state, twin.state)
    decisions = []
    for g in (game, twin):
        agent = make()
        decisions.append([agent.act(PlayerView(g, 0))])
        if isinstance(agent, MCTSAgent):
            _, visits, means = agent.search(PlayerView(g, 0))
            decisions[-1] += visits.tolist() + np.round(means, 12).tolist()
    assert decisions[0] == decisions[1]
    # and the true hidden order does matter to the game itself (the twin really differs)
    a, b = game.clone(), twin.clone()
    while not a.is_over and a.turn == game.turn:
        act = a.legal_actions()[-1]
        a.step(act)
        b.step(act)
    assert not np.array_equal(S.field(a._state, "central"), S.field(b._state, "central")) or \
        not np.array_equal(S.field(a._state, "market"), S.field(b._state, "market"))


def test_make_agent_specs_and_errors():
    assert isinstance(make_agent("greedy"), GreedyAgent)
    assert make_agent("mcts:0.25").seconds == 0.25
    assert make_agent("mcts:30it").iterations == 30
    assert isinstance(make_agent("random", seed=3), RandomAgent)
    g = make_agent("greedy:12:spaces")
    assert (g.beam, g.diverse, make_agent("greedy:12").diverse) == (12, True, False)
    assert (make_agent("greedy:spaces").beam, make_agent("greedy:spaces").diverse) == (24, True)
    with pytest.raises(ValueError, match=r"greedy\[:BEAM\]\[:spaces\]"):
        make_agent("greedy:12:wide")
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("alphazero")
    with pytest.raises(ValueError, match="bad agent spec"):
        make_agent("mcts:fast")
    with pytest.raises(FileNotFoundError, match="no MaskablePPO checkpoint"):
        make_agent("ppo:no/such/model.zip")


def test_learned_is_the_ntuple_agent_and_the_mlp_is_mlp(tmp_path):
    """`learned` / `learned-search` are the n-tuple agents (the shipped network and its play settings), the MLP plays
    on as `mlp` / `mlp-search`, and `learned:` with an MLP's .pt is one line pointing to mlp."""
    from agents.ntuple import NTupleAgent, NTupleSearchAgent, NTupleWinAgent

    learned = make_agent("learned")
    shipped = NTupleAgent()
    assert type(learned) is NTupleAgent and learned.name == "learned"
    assert np.array_equal(learned.weights, shipped.weights)
    assert (learned.beam, learned.candidates) == (shipped.beam, shipped.candidates)
    search = make_agent("learned-search")
    assert type(search) is NTupleSearchAgent and search.worlds == make_agent("learned-search").worlds == 8
    assert make_agent("learned-search:3it").worlds == 3 and make_agent("learned-search:0.5").seconds == 0.5
    assert type(make_agent("learned-win")) is NTupleWinAgent
    with pytest.raises(ValueError, match="learned-search takes"):
        make_agent("learned-search:0it")
    for spec in ("learned:x.pt", f"learned:{tmp_path / 'net.pt'}", " learned : runs/mlp/model.PT"):
        with pytest.raises(ValueError) as err:
            make_agent(spec)
        msg = str(err.value)
        path = spec.partition(":")[2].strip()
        assert "\n" not in msg and msg.startswith(f"bad agent spec {spec!r}: ") and f"'mlp:{path}'" in msg, msg
    (tmp_path / "run.pt").write_bytes(b"")  # a stem whose only weights are an MLP's: the same pointer
    with pytest.raises(ValueError, match="mlp:"):
        make_agent(f"learned:{tmp_path / 'run'}")
    with pytest.raises(FileNotFoundError, match="n-tuple checkpoint"):  # an .npz that is not there: not the MLP's
        make_agent(f"learned:{tmp_path / 'absent.npz'}")

    pytest.importorskip("torch", reason="the MLP reads its weights with torch")
    from agents.mlp import MLPAgent, MLPSearchAgent

    mlp = make_agent("mlp")
    assert type(mlp) is MLPAgent and mlp.name == "mlp"
    assert type(make_agent("mlp-search")) is MLPSearchAgent
    assert make_agent("mlp-search").seconds == 1.0 and make_agent("mlp-search:5it").iterations == 5
    with pytest.raises(ValueError, match="mlp-search takes"):
        make_agent("mlp-search:abc")


def test_checkpoint_files_follow_each_kind_of_path_spec(tmp_path):
    """What a Ray tournament ships for a spec with a path (`agents.distributed.checkpoint_files`, no Ray needed):
    `learned:` an n-tuple pair (.npz + .json), `mlp:` the MLP's (.pt + .json)."""
    from agents.distributed import checkpoint_files, local_spec, ship_specs
    from agents.ntuple import DEFAULT_CHECKPOINT

    for suffix in (".npz", ".json"):
        (tmp_path / f"net{suffix}").write_bytes(DEFAULT_CHECKPOINT.with_suffix(suffix).read_bytes())
    (tmp_path / "mlp.pt").write_bytes(b"x")
    (tmp_path / "mlp.json").write_text("{}")
    for arg in ("net", "net.npz", "net.json"):
        assert checkpoint_files(f"learned:{tmp_path / arg}") == [tmp_path / "net.npz", tmp_path / "net.json"]
    assert checkpoint_files(f"mlp:{tmp_path / 'mlp'}") == [tmp_path / "mlp.pt", tmp_path / "mlp.json"]
    assert all(checkpoint_files(s) == [] for s in ("learned", "learned-search:8it", "mlp", "learned-win"))
    with pytest.raises(FileNotFoundError, match="mlp.npz"):
        checkpoint_files(f"learned:{tmp_path / 'mlp'}")
    spec = f"learned:{tmp_path / 'net.npz'}"
    local = local_spec(spec, ship_specs([spec]))
    assert local.startswith("learned:") and Path(local[8:]).parent != tmp_path
    assert np.array_equal(make_agent(local).weights, make_agent("learned").weights)
def test_ppo_agent_plays_legal_actions_from_a_tiny_model(tmp_path):
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import harmonies_env.env_gym  # noqa: F401  (registers harmonies/Versus-v0)
    from agents.ppo import PPOAgent

    env = gym.make("harmonies/Versus-v0")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [16]}, verbose=0)
    model.learn(total_timesteps=128)
    path = tmp_path / "tiny.zip"
    model.save(path)
    agent = Checked(PPOAgent(path))
    game = play_game([agent, RandomAgent(1)], seed=2)
    assert game.is_over and agent.calls > 10
    with pytest.raises(FileNotFoundError):
        PPOAgent(tmp_path / "missing.zip")
