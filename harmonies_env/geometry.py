"""Board geometry: cell index <-> axial (q, r), neighbour tables, and bitmask helpers.

A board is at most 25 cells, so any set of cells is one int64 bitmask (bit i = cell i). Neighbourhood,
flood fill and distance are mask operations; the kernels here are what scoring and habitats build on.
Axial convention (see the reference data): flat-top hexes in columns, q grows right, r grows down.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from llvmlite.binding import get_host_cpu_features as _host_cpu_features
from llvmlite.binding import get_host_cpu_name as _host_cpu_name
from numba import njit, types
from numba.core import config as numba_config
from numba.extending import intrinsic

from .data import BOARD_CELLS, SIDES

MAX_CELLS = 25
#: Neighbour directions N, NE, SE, S, SW, NW as axial offsets.
DIRECTIONS = ((0, -1), (1, -1), (1, 0), (0, 1), (-1, 1), (-1, 0))

#: NUM_CELLS[side] -> 23 (A) or 25 (B). int64 (2,)
NUM_CELLS = np.array([len(BOARD_CELLS[s]) for s in SIDES], dtype=np.int64)
#: CELL_QR[side, i] -> (q, r); padding rows are (-99, -99). int64 (2, 25, 2)
CELL_QR = np.full((2, MAX_CELLS, 2), -99, dtype=np.int64)
#: NEIGHBOURS[side, i, d] -> neighbouring cell index in direction d, or -1 off the board. int64 (2, 25, 6)
NEIGHBOURS = np.full((2, MAX_CELLS, 6), -1, dtype=np.int64)
#: NEIGHBOUR_MASK[side, i] -> bitmask of cells adjacent to i. int64 (2, 25)
NEIGHBOUR_MASK = np.zeros((2, MAX_CELLS), dtype=np.int64)
#: FULL_MASK[side] -> bitmask of every cell of the board. int64 (2,)
FULL_MASK = np.zeros(2, dtype=np.int64)
_INDEX: list[dict[tuple[int, int], int]] = []

for _s, _side in enumerate(SIDES):
    _cells = BOARD_CELLS[_side]
    _INDEX.append({qr: i for i, qr in enumerate(_cells)})
    FULL_MASK[_s] = (1 << len(_cells)) - 1
    for _i, (_q, _r) in enumerate(_cells):
        CELL_QR[_s, _i] = (_q, _r)
        for _d, (_dq, _dr) in enumerate(DIRECTIONS):
            _j = _INDEX[_s].get((_q + _dq, _r + _dr), -1)
            NEIGHBOURS[_s, _i, _d] = _j
            if _j >= 0:
                NEIGHBOUR_MASK[_s, _i] |= 1 << _j


def _symmetries() -> np.ndarray:
    """The board's automorphisms: its mirror images that map the board onto itself (identity, left-right, top-bottom,
    and both, i.e. the half turn). Cell centres are x = q, y = r + q / 2 (flat-top hexes in columns); a mirror of the
    plane keeps hex adjacency, and both board shapes (columns 5-4-5-4-5 and 4-3-4-3-4-3-4) are symmetric in both
    axes. Padding cells (23, 24 on Side A) map to themselves."""
    out = np.tile(np.arange(MAX_CELLS, dtype=np.int64), (2, 4, 1))
    for s, side in enumerate(SIDES):
        cells = BOARD_CELLS[side]
        twice = [(2 * q, 2 * r + q) for q, r in cells]  # 2x, 2y: integers
        index = {xy: i for i, xy in enumerate(twice)}
        xs = min(x for x, _ in twice) + max(x for x, _ in twice)
        ys = min(y for _, y in twice) + max(y for _, y in twice)
        for k, (fx, fy) in enumerate(((False, False), (True, False), (False, True), (True, True))):
            for i, (x, y) in enumerate(twice):
                out[s, k, i] = index[(xs - x if fx else x, ys - y if fy else y)]
    return out


#: SYMMETRIES[side, k, i] -> the cell that cell i becomes under the board's k-th symmetry (k = 0 is the identity).
#: Scoring, habitats (every card's pattern is allowed in all 6 rotations, and none is chiral) and the game's rules
#: treat a board and its mirror images alike, so a value function may learn from all four. int64 (2, 4, 25)
SYMMETRIES = _symmetries()
NUM_SYMMETRIES = 4


def permute_mask(m: int, perm: np.ndarray) -> int:
    """The cell mask m with each cell i moved to perm[i] (a board symmetry applied to a set of cells)."""
    out = 0
    for i in range(MAX_CELLS):
        if (m >> i) & 1:
            out |= 1 << int(perm[i])
    return out


def side_code(side: str) -> int:
    """'A' -> 0, 'B' -> 1; anything else is a clear error."""
    if side not in SIDES:
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    return SIDES.index(side)


def cell_index(side: str, q: int, r: int) -> int:
    """Index of axial cell (q, r) on a board side; ValueError if the board has no such cell."""
    idx = _INDEX[side_code(side)].get((int(q), int(r)))
    if idx is None:
        raise ValueError(f"side {side} has no cell at (q={q}, r={r})")
    return idx


def cell_qr(side: str, i: int) -> tuple[int, int]:
    """Axial (q, r) of cell index i."""
    return BOARD_CELLS[side][i]


# ---- bit kernels -------------------------------------------------------------------------------------

@intrinsic
def _ctpop(typingctx, x):
    """LLVM's population count of an integer, as int64: one `popcnt` instruction where the CPU has it."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ctpop(context.cast(builder, args[0], sig.args[0], types.int64))

    return types.int64(x), codegen


@intrinsic
def _cttz(typingctx, x):
    """LLVM's count of trailing zero bits of a non-zero integer, as int64 (`tzcnt` / `bsf`)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[0], sig.args[0], types.int64)
        return builder.cttz(value, ir.Constant(ir.IntType(1), 1))

    return types.int64(x), codegen


def _bit_gather(name: str):
    """An x86 BMI2 bit deposit / extract (`llvm.x86.bmi.pdep.64` / `pext.64`) as a numba intrinsic over int64s."""

    @intrinsic
    def gather(typingctx, x, mask):
        if not (isinstance(x, types.Integer) and isinstance(mask, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            i64 = ir.IntType(64)
            fn = builder.module.declare_intrinsic(f"llvm.x86.bmi.{name}.64", fnty=ir.FunctionType(i64, [i64, i64]))
            return builder.call(fn, [context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args)])

        return types.int64(x, mask), codegen

    return gather


#: Whether this CPU deposits and extracts bits in one fast instruction (`pdep` / `pext`: x86 BMI2, but microcoded
#: and slow on AMD before Zen 3). The habitat matcher's grid conversions use them where true, tables elsewhere; numba
#: caches a kernel per CPU, so a cache never crosses this line.
#: A CPU named for numba (`NUMBA_CPU_NAME`, e.g. a portable "generic" cache) is not trusted to have them.
FAST_BIT_GATHER = (not numba_config.CPU_NAME and bool(_host_cpu_features().get("bmi2", False))
                   and _host_cpu_name() not in ("znver1", "znver2", "bdver1", "bdver2", "bdver3", "bdver4"))
#: deposit(x, mask): the low bits of x laid in order on the set bits of mask. extract(x, mask): the bits of x at
#: mask's set bits, packed low. Only where FAST_BIT_GATHER (elsewhere the instruction does not exist).
deposit = _bit_gather("pdep")
extract = _bit_gather("pext")


@njit(cache=True, inline="always")
def popcount(x: int) -> int:
    """Number of set bits of a mask below 2**32 (an LLVM intrinsic: the table-free bit trick cost ~12 operations)."""
    return _ctpop(x)


@njit(cache=True, inline="always")
def lowest_cell(x: int) -> int:
    """Index of the lowest set bit of a non-zero mask below 2**32 (an LLVM intrinsic, where a de Bruijn table lookup
    cost a multiply and a load)."""
    return _cttz(x)


@njit(cache=True)
def grow(side: int, m: int) -> int:
    """Mask of every cell adjacent to some cell of m (m itself not included unless adjacent)."""
    out = 0
    while m:
        i = lowest_cell(m)
        m &= m - 1
        out |= NEIGHBOUR_MASK[side, i]
    return out


@njit(cache=True)
def component_of(side: int, cell: int, within: int) -> int:
    """The connected group of cells of `within` that contains `cell` (a mask)."""
    comp = 1 << cell
    frontier = comp
    while frontier:
        frontier = grow(side, frontier) & within & ~comp
        comp |= frontier
    return comp


@njit(cache=True)
def eccentricity(side: int, cell: int, within: int) -> int:
    """Largest shortest-path distance (in steps) from `cell` to a cell of its group in `within`."""
    seen = 1 << cell
    frontier = seen
    d = 0
    while True:
        frontier = grow(side, frontier) & within & ~seen
        if frontier == 0:
            return d
        seen |= frontier
        d += 1
