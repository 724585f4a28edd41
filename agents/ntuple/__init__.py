"""The n-tuple afterstate value function (the `learned` agent): weights shared across the board, costing
microseconds. It replaced the MLP (now `mlp`, agents/mlp/) as `learned`.

Why (issue 30): the learned MLP reads each board as 25 x 15 one-hot cells with no weight shared between cells and
costs a forward pass per decision batch. An n-tuple network (as in the strongest 2048 and Othello programs,
Szubert and Jaskowski 2014) is a sum of table look-ups: each small set of cells (a *tuple*) indexes a table by its
cells' contents, and one table serves every place on the board where that shape fits. It is evaluated in a few
hundred look-ups, learns from every afterstate by TD(lambda), and so can rank every candidate the planner proposes.

What it predicts: the points the mover (the player who just planned its turn) will still score from this
afterstate to the end of the game: `remaining(after)`. A candidate's value for its mover is its own total now
(exact, `scoring.score_into`) plus that prediction; an afterstate after which the mover has no turn left
(`greedy.no_turn_left`) has nothing left to score (0, exactly).

remaining(after) = sum of the tuple weights its board selects + the linear part, with:

* the mover's board only (an opponent's board does not change with the mover's choice); each cell's content is one
  of `VALUES` = 30 numbers: stack code (0..14) + 15 if an animal cube stands on it;
* shapes (`SHAPES`), each a table shared by every placement of the shape on the board and indexed by a key that is
  the same for the shape's mirror images and rotations (scoring, habitats and cards are rotation- and
  mirror-invariant, so the board's symmetries `geometry.SYMMETRIES` and more are shared for free):
  `cell` (one table row per cell *orbit* under the board's 4 symmetries, per side: where on the board matters, e.g.
  the edges), `pair` (two neighbours, unordered), `triangle` (three mutual neighbours, unordered), `line` (three
  cells in a straight line: middle, then the two ends unordered) and `rhombus` (two triangles sharing an edge: the
  two tips unordered, the two shared cells unordered);
* card shapes (`CARD_SHAPES`, layout 2): for each card the mover holds (incomplete, in its slots), the board's
  cells, pairs, triangles and lines again, in a table per card id. Why: an animal card pays for a habitat of 2-4
  cells of given stacks, so what a pattern on the board is worth depends on the cards held, which the board shapes
  alone cannot see (layout 1 networks scored 5 animal points a game fewer than the MLP, `mlp`, which reads
  the cards);
* a linear part over the public non-board afterstate features (`afterstate.afterstate_features` without the
  board one-hots: scores, the greedy planner's potential terms, held cards' progress and habitat distances, the
  market, pouch, turn; every seat's block) plus a bias. Its weights can start at the greedy planner's own
  evaluation (`heuristic_weights`), so an untrained network plays as `greedy:BEAM:spaces` does.

A second weight vector of the same layout can be a *win head* (`win_logit`, `learn_win`): its output is the logit of
the mover's share of the victory, learned from the same games; `NTupleWinAgent` (`learned-win`) adds C x its
probability to each candidate's value. `learn_game` can also take a search's value of an afterstate as its target
(expert iteration, experiments/evaluators/ntuple.py).

Layout of the one float32 weight vector: [linear (NUM_LINEAR)] [cell] [pair] [triangle] [line] [rhombus], then in
layout 2 [card_cell] [card_pair] [card_triangle] [card_line] (offsets `OFFSETS`); the kernels read the layout from
the vector's length (`LAYOUT_WEIGHTS`), so a layout-1 network plays exactly as it did. Layout 3 is a layout-2 vector
per game stage (multistage weights: the stage of an afterstate is where the mover's own turn stands in
`STAGE_STARTS`; `stage_of`), each afterstate valued and learned by its stage's block alone. Layout 4 is layout 2
then [held_supply] [market_supply] (`MARKET_SHAPES`, market.py): per held and per face-up card, a table per card id at
(its nearest habitat's distance, how many of the tokens it lacks one central space supplies, how many spaces supply
any). Checkpoints are `NAME.npz`
(one array `weights`, read by `agents.archive.read_npz`) + `NAME.json` (its config with the layout, and the
SHA-256 of NAME.npz, checked before anything plays). A new layout gets a new version in `LAYOUT_WEIGHTS`. The
plain-Python reference in tests/ntuple_reference.py computes the same numbers.

The package: kernels.py (the jitted kernels over arrays), market.py (layout 4's market look-ups), agent.py
(`NTupleAgent`, `NTupleWinAgent`, weight vectors and checkpoint files), search.py (`NTupleSearchAgent`;
`distinct_candidates`, the search's root, which expert iteration's `targets = "all"` shares).
"""
from ..checkpoint import weights_sha256
from .agent import (
    DEFAULT_CHECKPOINT,
    DEFAULT_PLAY,
    DEFAULT_WIN_CHECKPOINT,
    HEADS,
    MAX_CANDIDATES,
    NTupleAgent,
    NTupleWinAgent,
    check_layout,
    check_play,
    grown_weights,
    heuristic_weights,
    layout_of,
    load_checkpoint,
    network_config,
    save_checkpoint,
    weights_bytes,
)
from .kernels import (
    CARD_FROM,
    CARD_SHAPES,
    COUNTS,
    LAYOUT_WEIGHTS,
    LINEAR_INDEX,
    LINES,
    MARKET_FROM,
    MAX_ACTIVE,
    NTUPLE_VERSION,
    NUM_LINEAR,
    NUM_WEIGHTS,
    OFFSETS,
    ORBIT,
    PAIRS,
    RHOMBI,
    SHAPES,
    STAGE_STARTS,
    STAGE_WEIGHTS,
    STAGES,
    TRIANGLES,
    VALUES,
    candidate_values,
    candidate_wins,
    cell_values,
    choose_rows,
    decide_rows,
    evaluate_batch,
    linear_features,
    no_turn_left,
    remaining,
    search_values,
    stage_of,
    tuple_indices,
    value_of,
    win_logit,
)
from .learning import learn_game, learn_win, selected_norm
from .market import MARKET_SHAPES
from .search import NTupleSearchAgent

__all__ = ["NTupleAgent", "NTupleSearchAgent", "NTupleWinAgent", "search_values", "win_logit", "candidate_wins",
           "learn_win", "HEADS", "DEFAULT_WIN_CHECKPOINT",
           "NTUPLE_VERSION", "NUM_WEIGHTS", "NUM_LINEAR", "OFFSETS", "SHAPES", "CARD_SHAPES", "VALUES",
           "LAYOUT_WEIGHTS", "CARD_FROM", "MARKET_FROM", "MARKET_SHAPES", "check_layout", "layout_of",
           "STAGE_STARTS", "STAGE_WEIGHTS", "STAGES", "stage_of", "grown_weights",
           "LINEAR_INDEX", "MAX_ACTIVE", "DEFAULT_CHECKPOINT", "DEFAULT_PLAY", "tuple_indices", "linear_features",
           "remaining", "evaluate_batch", "candidate_values", "choose_rows", "decide_rows", "learn_game",
           "heuristic_weights",
           "save_checkpoint", "load_checkpoint", "weights_bytes", "network_config", "check_play",
           "MAX_CANDIDATES", "COUNTS", "ORBIT", "PAIRS", "TRIANGLES", "LINES", "RHOMBI", "cell_values", "no_turn_left",
           "selected_norm", "value_of", "weights_sha256"]
