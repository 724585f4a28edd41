"""The self-play framework's evaluator interface (`experiments.selfplay`): what an evaluator is (`Evaluator`; a
fused one, `FusedEvaluator`), the finished game it learns from (`Finished`), its TD(lambda) targets (`td_targets`),
its weights' files (`save_weights`, `load_weights`) and the evaluation every learner meets (`vs_greedy`). Every
evaluator (`experiments.evaluators.ntuple`, a user's own) implements it; the loop that plays and records is
`experiments.selfplay.Learner`."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from agents.afterstate import own_total
from agents.archive import read_npz
from agents.td import lambda_returns
from harmonies_env.config import GameConfig
from harmonies_env.scoring import NUM_CATEGORIES

#: The `agents.checkpoint` format of an evaluator's weights saved by `save_weights`, and their largest size read.
WEIGHTS_FORMAT = "selfplay-evaluator"
MAX_WEIGHTS_BYTES = 1 << 30


class Finished(NamedTuple):
    """A finished game, as `Evaluator.learn` reads it: its recorded afterstates afters[:m] (int64, STATE_SIZE wide),
    their movers, the predictions (remaining points) made for them at play time, the expert targets (NaN: none),
    every seat's final total and who won (int64 (4,))."""

    afters: np.ndarray
    seats: np.ndarray
    preds: np.ndarray
    targets: np.ndarray
    m: int
    totals: np.ndarray
    won: np.ndarray


@runtime_checkable
class Evaluator(Protocol):
    """What a self-play learner learns: a value of afterstates for their movers. The framework plays, records and
    checkpoints; the evaluator values, learns and saves. Its weights travel to the workers as a dict of arrays."""

    def values(self, afters: np.ndarray, movers: np.ndarray, out: np.ndarray) -> None:
        """out[i] (float64): the points mover[i] still scores after afterstate afters[i] (int64 (B, STATE_SIZE))."""

    def learn(self, game: Finished, scale: float) -> float:
        """Learn from one finished game (`td_targets` gives TD(lambda) targets), step sizes times `scale`; its loss."""

    def get_weights(self) -> dict[str, np.ndarray]:
        """The weights the workers play with (arrays; copied by the pool)."""

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Play with these weights (a worker's copy of the learner's)."""

    def arrays(self) -> dict[str, np.ndarray]:
        """The learner-side state a checkpoint holds (weights, optimizer state, ...), by name."""

    def load_arrays(self, arrays: dict[str, np.ndarray], where: str) -> None:
        """Take back `arrays()` from a checkpoint (ConfigError naming `where` and what does not fit)."""

    def save(self, path: Path, play: dict[str, int], info: dict[str, Any]) -> None:
        """The agent's checkpoint at `path` (weights + JSON sidecar, `agents.checkpoint`; `save_weights` does it
        for a dict of arrays). Optional, beside these: `agent(beam, candidates)` (an agent playing these weights, for
        the evaluation; default `EvaluatorAgent`), `after_iteration()`, `metrics()`, `meta()` / `load_meta(meta)`
        (plain values for the eval rows and the checkpoint's record), `expert_share` + `expert_turn(learner, row)`."""



@runtime_checkable
class FusedEvaluator(Evaluator, Protocol):
    """An evaluator that plans, values, chooses and plays one turn in every game in one call (optional capability:
    the same games as the framework's own loop, faster)."""

    def decide_rows(self, buf: Any, states: np.ndarray, kinds: np.ndarray, beam: int, greedy_beam: int,
                    explore: np.ndarray, pick: np.ndarray) -> None:
        """One whole turn in every unfinished game (as `decide_generic`), written to `buf` (`selfplay.Buffers`)."""


def td_targets(game: Finished, lam: float) -> np.ndarray:
    """TD(lambda) targets (remaining points) of a finished game's afterstates: for each seat's afterstates in order,
    the points it gained to its next afterstate plus lam x that one's target + (1 - lam) x its prediction; the last
    one's is the final total minus its total there."""
    m = int(game.m)
    out = np.zeros(m)
    sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    own = np.array([own_total(game.afters[i], int(game.seats[i]), sc) for i in range(m)], dtype=np.float64)
    lambda_returns(np.ascontiguousarray(game.seats[:m], dtype=np.int64), m, own,
                   np.asarray(game.preds[:m], dtype=np.float64), np.asarray(game.totals, dtype=np.float64),
                   1.0 - lam, lam, np.full(m, np.nan), 0.0, out)
    return out


def save_weights(path: str | Path, arrays: dict[str, np.ndarray], config: dict[str, Any],
                 training: dict[str, Any] | None = None) -> Path:
    """An evaluator's weights as NAME.npz + NAME.json (`agents.checkpoint`'s sidecar: SHA-256, shapes, `config`,
    how it was trained; atomic; no pickle). Returns the .npz's path."""
    from agents.checkpoint import write_checkpoint

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    shapes = {k: list(v.shape) for k, v in arrays.items()}
    return write_checkpoint(Path(path).with_suffix(".npz"), buf.getvalue(), WEIGHTS_FORMAT, config, shapes, training)


def load_weights(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(config, arrays) of a checkpoint `save_weights` wrote, its SHA-256 checked (CheckpointError naming it)."""
    from agents.checkpoint import read_checkpoint

    ck = read_checkpoint(path, ".npz", WEIGHTS_FORMAT, "an evaluator's weights", MAX_WEIGHTS_BYTES)
    return ck.config, dict(read_npz(ck.data, MAX_WEIGHTS_BYTES, ck.weights_path))


def vs_greedy(policy: Any, games: int, seed: int, opponent_beam: int, config: GameConfig | None = None,
              threads: int = 1) -> dict[str, float]:
    """`policy` (an agent or batch policy, named by its `name`) against the greedy planner (`GreedyAgent`, beam
    `opponent_beam`, in every other seat) in `games` games of `config` (default: 2 players, Side A) on seeds
    seed + i // players, seats rotated (`agents.match.play_match`, paired): every learner's periodic evaluation.
    Returns its win rate (shared wins split), its mean total and the other seats' mean total."""
    from agents.greedy import GreedyAgent
    from agents.match import play_match, totals_of, win_shares

    cfg = config or GameConfig()
    name = str(getattr(policy, "name", "learner"))
    n = cfg.num_players
    others = [GreedyAgent(beam=int(opponent_beam), name="greedy") for _ in range(1, n)]
    results = play_match([policy, *others], games=int(games), seed=int(seed), config=cfg, paired=True,
                         threads=int(threads))
    totals = np.array([[sc["total"] for sc in r["scores"]] for r in results], dtype=np.int64)
    mine = totals_of(results, name)
    theirs = (totals.sum(axis=1) - mine) / max(1, n - 1)
    return {"win_rate": float(win_shares(results, name).mean()), "mean_score": float(mine.mean()),
            "greedy_score": float(theirs.mean())}
