"""The n-tuple search's root (`NTupleSearchAgent.root_candidates`) and its spec options: no two root candidates are
the same position, and where the network's best candidates held no repeat the search values them as before."""
from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from agents import ntuple as N
from agents.base import private_copy
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN
from agents.registry import is_timed
from harmonies_env import Game, GameConfig
from harmonies_env import state as S
from harmonies_env.batch import play_plan
from harmonies_env.geometry import MAX_CELLS, SYMMETRIES
from harmonies_env.view import PlayerView


def _same_position(a: np.ndarray, b: np.ndarray, p: int) -> bool:
    """Whether afterstates a and b are one position: equal but for seat p's board, which is a mirror image (or a
    copy) of the other's, cubes included."""
    at = S.STACK_WORDS + S.STACK_WORDS_PER_SEAT * p
    board = np.r_[at: at + S.STACK_WORDS_PER_SEAT, S.BITBOARD: S.BITBOARD + 15 * S.MAX_PLAYERS, S.CUBES + p]
    rest = np.setdiff1d(np.arange(S.STATE_SIZE), board)
    if not np.array_equal(a[rest], b[rest]):
        return False
    cells = np.arange(MAX_CELLS)
    stacks_a, stacks_b = S.field(a, "stack")[p], S.field(b, "stack")[p]
    for perm in SYMMETRIES[a[S.SIDE]]:
        moved = np.empty(MAX_CELLS, dtype=np.int64)
        moved[perm] = stacks_a
        cubes = sum(1 << int(perm[i]) for i in cells if a[S.CUBES + p] >> i & 1)
        if np.array_equal(moved, stacks_b) and cubes == b[S.CUBES + p]:
            return True
    return False


def _previous_search(agent: N.NTupleSearchAgent, view, game, plans, values) -> tuple[np.ndarray, np.ndarray]:
    """The search before its root was deduplicated: the `root` best by value, each summed over the same worlds."""
    order = np.argsort(-values, kind="stable")[: agent.root]
    cp = np.zeros((len(order), MAX_PLAN), dtype=np.int64)
    cl = np.array([len(plans[o]) for o in order], dtype=np.int64)
    for k, o in enumerate(order):
        cp[k, : cl[k]] = plans[o]
    total, out = np.zeros(len(order)), np.zeros(len(order))
    for j in range(agent.worlds):
        world = private_copy(view, agent._seed_for(int(game.turn), j)).state
        N.search_values(np.repeat(world[None], len(order), axis=0), np.arange(len(order)), cp, cl, agent.weights,
                        DEFAULT_WEIGHTS, agent.reply_beam, agent.reply_candidates, out)
        total += out
    return order, total


def test_the_root_holds_no_repeated_position_and_keeps_the_values_where_none_was():
    """Real positions (the shipped network playing itself): the network's best 6 often hold repeats (the same
    afterstate, or its mirror image); the root never does, and where the best 6 held none, the root is those 6 and
    each is valued exactly as the previous search valued it."""
    agent = N.NTupleSearchAgent(worlds=2, reply_beam=2, reply_candidates=8)
    g = Game(seed=31, config=GameConfig(2, "A"))
    repeats = plain = 0
    while not g.is_over and g.state[S.TURN] < 16:
        view = PlayerView(g, g.current_player)
        game = private_copy(view, 0)
        plan = agent.choose_plan(view, game)
        plans, values = agent.rank(game)
        p = int(game.state[S.CURRENT])
        if len(agent.last_root):
            afters = []
            for o in agent.last_root:
                a = game.state.copy()
                play_plan(a, np.array(plans[o], dtype=np.int64), len(plans[o]), True)
                afters.append(a)
            assert len(agent.last_root) == agent.root
            assert not any(_same_position(afters[i], afters[j], p) for i in range(len(afters)) for j in range(i))
            order, total = _previous_search(agent, view, game, plans, values)
            old = []
            for o in order:
                a = game.state.copy()
                play_plan(a, np.array(plans[o], dtype=np.int64), len(plans[o]), True)
                old.append(a)
            if any(_same_position(old[i], old[j], p) for i in range(len(old)) for j in range(i)):
                repeats += 1
                shared = [k for k, o in enumerate(agent.last_root) if o in order]
                assert np.array_equal(agent.last_totals[shared], total[[list(order).index(agent.last_root[k])
                                                                        for k in shared]])
            else:
                plain += 1
                assert np.array_equal(agent.last_root, order) and np.array_equal(agent.last_totals, total)
        for a in plan:
            g.step(a)
    assert repeats >= 2 and plain >= 2  # both kinds of position were met


def test_the_spec_sets_the_root_and_the_replies():
    s = make_agent("learned-search:4it:root12")
    assert (s.worlds, s.root, s.reply_beam, s.reply_candidates) == (4, 12, 8, 32) and not is_timed(s.name)
    s = make_agent("learned-search:ROOT3:replybeam4:replycandidates16")
    assert (s.worlds, s.root, s.reply_beam, s.reply_candidates) == (8, 3, 4, 16)
    assert make_agent("learned-search").root == 12 and not is_timed("learned-search:root12")
    s = make_agent("learned-search:root12:0.5")
    assert s.seconds == 0.5 and s.root == 12 and is_timed("learned-search:root12:0.5")
    for spec, why in (("root0", "root must be a whole number 1..1024, got 0"),
                      ("root2000", "root must be a whole number 1..1024, got 2000"),
                      ("root-3", "root must be a whole number 1..1024, got -3"),
                      ("replybeam0", "reply_beam must be a whole number 1..100000, got 0"),
                      ("replycandidates5000", "reply_candidates must be a whole number 1..1024, got 5000"),
                      ("root", "root '' is not a whole number"),
                      ("rootx", "unknown option 'rootx' \\(options are rootN, replybeamN, replycandidatesN\\)"),
                      ("8it:4it", "two budgets, '8it' and '4it'"),
                      ("root3:root4", "root is given twice"),
                      ("8it::root3", "an empty part in '8it::root3'"),
                      ("0it:root3", "worlds must be a whole number 1..10000, got 0")):
        with pytest.raises(ValueError, match=f"^bad agent spec 'learned-search:{spec}': {why}; learned-search takes"
                                             f" learned-search\\[:BUDGET\\]") as e:
            make_agent(f"learned-search:{spec}")
        assert "\n" not in str(e.value)
