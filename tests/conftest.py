"""Shared helpers for the rules/game tests: the stacking rule from the rules text, and position builders.

Tests may write a position into the state directly, through the game's private writable array `Game._state`
(the public `Game.state` is a read-only view; these helpers keep the stack array and bitboards consistent, not every
invariant `Game.from_state` checks), but the rule under test is then always driven through `Game.step`.
"""
from __future__ import annotations

import numpy as np
import pytest

from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.game import Game
from harmonies_env.geometry import MAX_CELLS, cell_index, permute_mask
from harmonies_env.stacks import STACKS

COLOURS = ("blue", "gray", "brown", "green", "yellow", "red")
#: The 15 stacks of the rules text (bottom -> top).
RULE_STACKS = {(), ("blue",), ("yellow",), ("green",), ("gray",), ("gray", "gray"), ("gray", "gray", "gray"),
               ("brown",), ("brown", "brown"), ("brown", "green"), ("brown", "brown", "green"), ("red",),
               ("brown", "red"), ("gray", "red"), ("red", "red")}
#: "On top of tokens only to build these stacks": (stack below, colour placed).
ON_TOP = {(("gray",), "gray"), (("gray", "gray"), "gray"), (("brown",), "brown"), (("brown",), "green"),
          (("brown", "brown"), "green"), (("brown",), "red"), (("gray",), "red"), (("red",), "red")}


def rule_after_table() -> np.ndarray:
    """int64 (15, 6): engine stack code after placing a colour, by the rules text; -1 where not allowed."""
    code = {st: i for i, st in enumerate(STACKS)}
    t = np.full((len(STACKS), 6), -1, dtype=np.int64)
    for st, i in code.items():
        for c, colour in enumerate(COLOURS):
            if st == () or (st, colour) in ON_TOP:
                t[i, c] = code[st + (colour,)]
    return t


def code_of(*colours: str) -> int:
    return STACKS.index(tuple(colours))


def set_cell(g: Game, player: int, cell: int, *colours: str) -> None:
    """Write a stack (bottom -> top colours) on a cell, keeping the bitboards consistent."""
    new = code_of(*colours)
    old = int(g.field("stack")[player, cell])
    bb = S.field(g._state, "bitboard")
    bb[player, old] &= ~(1 << cell)
    bb[player, new] |= 1 << cell
    S.set_stack_at(g._state, player, cell, new)
    rules.refresh_habitats(g._state)  # the held cards' answers follow the board, as `rules.step` keeps them


def mirror_board(s: np.ndarray, p: int, perm: np.ndarray) -> np.ndarray:
    """State s with seat p's board (stacks, bitboards, cubes) moved cell i -> perm[i]."""
    t = s.copy()
    codes = S.field(s, "stack")[p]
    for i in range(MAX_CELLS):
        S.set_stack_at(t, p, int(perm[i]), int(codes[i]))
    for k in range(15):
        t[S.BITBOARD + 15 * p + k] = permute_mask(int(s[S.BITBOARD + 15 * p + k]), perm)
    t[S.CUBES + p] = permute_mask(int(s[S.CUBES + p]), perm)
    return t


def cell(g: Game, q: int, r: int) -> int:
    return cell_index(g.side, q, r)


def clear_board(g: Game, player: int) -> None:
    """Take every token and cube off a board; the tokens go to the discarded pile so 120 stay accounted for."""
    stacks = S.field(g._state, "stack")  # (a decoded copy, read before any cell is cleared)
    disc = S.field(g._state, "discarded")
    for i in range(MAX_CELLS):
        for colour in STACKS[stacks[player, i]]:
            disc[COLOURS.index(colour)] += 1
        if i < g.num_cells and stacks[player, i]:
            set_cell(g, player, i)
    S.field(g._state, "cubes")[player] = 0


def give_hand(g: Game, *colours: str) -> None:
    """Put tokens in the hand of the player to move, as if this turn's tokens were taken."""
    S.field(g._state, "hand")[:] = 0
    for c in colours:
        S.field(g._state, "hand")[COLOURS.index(c)] += 1
    g._state[S.TAKEN_SPACE] = 0  # (tokens were taken this turn: from space 0)


def hold_card(g: Game, player: int, card: int, slot: int | None = None) -> int:
    """Give a player an incomplete card in a free slot (returns the slot)."""
    slots = S.field(g._state, "slot")
    if slot is None:
        slot = int(np.flatnonzero(slots[player] < 0)[0])
    slots[player, slot] = card
    S.set_cubes_placed(g._state, player, card, 0)
    rules.refresh_habitats(g._state)
    return slot


# ---- pytest-xdist: the suite runs on every core (pyproject's addopts: -n auto) -------------------------------
#: Test files that start a local Ray instance: one worker runs them all, one after the other (two Ray instances on
#: a small machine fight for their CPUs and memory).
RAY_FILES = {"test_ray.py", "test_rllib.py"}
#: Test files with a module-scoped fixture (a wheel built, a game or a run played once for the file): each runs on
#: one worker, in order, so the fixture is built once.
WHOLE_FILES = {"test_browser.py", "test_ladder_report.py", "test_packaging.py", "test_play.py", "test_render.py",
               "test_training.py", "test_workers.py"}
#: Tests (file::name prefixes) that compile the int16 variant of the observation and batch kernels
#: (`obs_dtype=np.int16`, ~25 s of compiling): one worker runs them all, so it is compiled once, not once a worker.
INT16_TESTS = ("test_batch.py::test_int16_", "test_observation.py::test_raw_int16_")
#: Units whose games are played mostly by other processes (Ray workers, self-play worker processes) or that need the
#: greedy, n-tuple and MLP kernels every other file compiles too: handed out halfway through the queue (not first, as
#: their size would put them), when the numba cache holds those kernels, so their processes load them instead of each
#: compiling them cold at the same time as the other xdist worker does.
LATE_UNITS = ("ray", "test_workers.py", "test_play.py")


def pytest_xdist_make_scheduler(config, log):
    """How xdist shares the tests out (with its default `--dist load`): the Ray files as one unit, each of
    WHOLE_FILES as one unit, the INT16_TESTS as one unit, every other test on its own, to whichever worker is free,
    so a long file is shared out too; the largest units first (xdist's order), except LATE_UNITS, halfway.
    Everything a test writes goes to its own tmp_path, ports are picked free (port 0) and numba's cache writes are
    atomic, so tests may run side by side. (A scheduler rather than `xdist_group` marks: xdist 3.8 renames node ids
    to group them, which pytest 9 no longer allows, so `--dist loadgroup` silently groups nothing.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            name = path.rsplit("/", 1)[-1]
            if name in RAY_FILES:
                return "ray"
            if nodeid.rsplit("/", 1)[-1].startswith(INT16_TESTS):
                return "int16"
            return path if name in WHOLE_FILES else nodeid

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_late_placed", False):  # (the queue is complete at the first assignment)
                self._late_placed = True
                late = [u for u in self.workqueue if u.rsplit("/", 1)[-1] in LATE_UNITS]
                rest = [u for u in self.workqueue if u not in late]
                order = rest[: len(rest) // 2] + late + rest[len(rest) // 2:]
                self.workqueue = type(self.workqueue)((u, self.workqueue[u]) for u in order)
            super()._assign_work_unit(node)

    return Scheduling(config, log)


# ---- small Stable-Baselines3 checkpoints, made on the spot (no PPO checkpoint ships with the package) -----
@pytest.fixture(scope="session")
def tiny_zip(tmp_path_factory):
    """A real (untrained) MaskablePPO checkpoint over the flat action space, saved by Stable-Baselines3."""
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import harmonies_env.env_gym  # noqa: F401  (registers the envs)

    model = MaskablePPO("MlpPolicy", gym.make("harmonies/Solo-v0"), n_steps=32, batch_size=32, seed=0,
                        policy_kwargs={"net_arch": [8]}, verbose=0)
    path = tmp_path_factory.mktemp("ckpt") / "tiny.zip"
    model.save(path)
    return path
