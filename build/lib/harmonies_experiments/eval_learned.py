"""Batched evaluation of a learned network against the heuristic planner: a thousand games in about two minutes.

    python -m experiments.eval_learned                                # the shipped network as `learned` plays it
    python -m experiments.eval_learned --checkpoint runs/learned/model.pt --games 1024
    python -m experiments.eval_learned --candidates 1                 # the planner's first plan: no network at all
    python -m experiments.eval_learned --value 1,0.5,0.25             # other decision weights (win, margin, score)
    python -m experiments.eval_learned --no-diverse --beam 96 --candidates 24 --symmetries 1 --value 1,0.5,0.25
                                                                      # as the trainer evaluates
    python -m experiments.eval_learned --side B --spirits --players 3

Why: the trainer's periodic evaluation (`Trainer.evaluate` calls `play_vs_greedy`), as a command, so that a question
about a network (how many candidates, which decision weights, which variant) costs a minute instead of an hour of
tournament. Every game advances together: ONE numba call plans the network's turns in all games
(`agents.afterstate.candidate_rows`), ONE forward pass scores all their candidates, ONE numba call plays the chosen
plans (`batch.play_plans`); the heuristic's turns likewise. The network picks as `LearnedAgent` does (`candidates`
plans of the planner at beam `beam`, diverse or not, then `decision_values` of outputs averaged over `symmetries`
mirror images), against `GreedyAgent(beam=opponent_beam)` in every other seat; the two give the same games as the
sequential `Game` with those agents (tested). Unset options take the checkpoint's `play` settings and decision
weights, so the default is the agent as it plays.

Game i plays seed `seed + i // players` with the network in seat `i % players`, so each seed is played from every
seat (use a multiple of `players` games). Seeds here are small integers; training draws its games' seeds from
[2**40, 2**62), so none is ever a training game. The trainer's own evaluation uses `--seed 1000000` (config
`eval.seed`); pick other seeds for figures you publish. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, Callable

import numpy as np

from agents.afterstate import NUM_FEATURES, candidate_rows, spirit_choice
from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN, planner_settings
from agents.learned import (
    DEFAULT_CHECKPOINT,
    ValueNet,
    decision_values,
    mirrored_outputs,
    play_settings,
    play_value,
)
from harmonies_env import state as S
from harmonies_env.batch import outcome, play_plans, run_rows
from harmonies_env.scoring import NUM_CATEGORIES

#: Default base seed of the command (the trainer's evaluations use 1_000_000; these games are others).
DEFAULT_SEED = 3_000_000


def candidate_outputs(forward: Callable[[np.ndarray], np.ndarray], feats: np.ndarray, counts: np.ndarray,
                      rows: np.ndarray) -> dict[int, np.ndarray]:
    """Network outputs for every candidate of the given rows, in ONE forward pass: row -> float32 (counts[r], 8).

    feats float32 (N, K, NUM_FEATURES), counts int64 (N,), rows int64 (R,); forward maps float32 (B, NUM_FEATURES)
    to (B, 8) (the numpy `ValueNet` or the trainer's torch module)."""
    if not len(rows):
        return {}
    k = counts[rows]
    out = forward(np.concatenate([feats[r, : k[i]] for i, r in enumerate(rows)]))
    ofs = np.concatenate([[0], np.cumsum(k)])
    return {int(r): out[ofs[i]: ofs[i + 1]] for i, r in enumerate(rows)}


def play_vs_greedy(forward: Callable[[np.ndarray], np.ndarray], games: int, seed: int, value: dict[str, float], *,
                   players: int = 2, side: int = 0, spirits: bool = False, beam: int = 96, candidates: int = 24,
                   diverse: bool = False, symmetries: int = 1, opponent_beam: int = 24, threads: int = 2,
                   progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Play `games` games, the network against the heuristic planner, all at once; their summary.

    The network picks as `LearnedAgent(beam=beam, candidates=candidates, diverse=diverse, symmetries=symmetries)`
    does. Game i: seed `seed + i // players`, the network in seat `i % players`, `GreedyAgent(beam=opponent_beam)` in
    the others. Returns win_rate (a shared win counts its share), mean_score (the network's mean total), greedy_score
    (the other seats' mean total), and per game `totals` int (games, players) by seat and `net_seat` (games,).
    progress(k) is called with the number of finished games after every round of turns.
    """
    E, n = int(games), int(players)
    net_forward = forward
    if symmetries != 1:
        def forward(x: np.ndarray) -> np.ndarray:
            return mirrored_outputs(net_forward, x, int(side), int(symmetries))
    states = np.zeros((E, S.STATE_SIZE), dtype=np.int64)
    net_seat = np.zeros(E, dtype=np.int64)
    for i in range(E):
        S.init_state(states[i], n, int(side), int(bool(spirits)), int(seed) + i // n)
        net_seat[i] = i % n
    K = int(candidates)
    plans = np.zeros((E, K, MAX_PLAN), dtype=np.int64)
    lens = np.zeros((E, K), dtype=np.int64)
    vals = np.zeros((E, K), dtype=np.float64)
    feats = np.zeros((E, K, NUM_FEATURES), dtype=np.float32)
    counts = np.zeros(E, dtype=np.int64)
    gp = np.zeros((E, 1, MAX_PLAN), dtype=np.int64)
    gl = np.zeros((E, 1), dtype=np.int64)
    gv = np.zeros((E, 1), dtype=np.float64)
    gf = np.zeros((E, 1, NUM_FEATURES), dtype=np.float32)
    gc = np.zeros(E, dtype=np.int64)
    zero = np.zeros(E, dtype=np.int64)
    while not states[:, S.GAME_OVER].all():
        live = states[:, S.GAME_OVER] == 0
        mine = live & (states[:, S.CURRENT] == net_seat)
        theirs = live & ~mine
        run_rows(candidate_rows, E, threads, states, mine, DEFAULT_WEIGHTS, int(beam), bool(diverse), plans, lens, vals,
                 feats, counts, min_rows=2)
        run_rows(candidate_rows, E, threads, states, theirs, DEFAULT_WEIGHTS, int(opponent_beam), False, gp, gl, gv, gf,
                 gc, min_rows=2)
        choice = np.zeros(E, dtype=np.int64)
        rows = np.flatnonzero(mine & (counts > 1))
        rows = rows[~spirit_choice(plans[rows, 0, 0])]  # the first-turn Spirit choice: the planner's order
        for r, o in candidate_outputs(forward, feats, counts, rows).items():
            choice[r] = int(np.argmax(decision_values(o, n, value)))
        play_plans(states, mine, plans, lens, choice, num_threads=threads, min_rows=2)
        play_plans(states, theirs, gp, gl, zero, num_threads=threads, min_rows=2)
        if progress is not None:
            progress(int(states[:, S.GAME_OVER].sum()))
    totals = np.zeros((E, n), dtype=np.int64)
    t4 = np.zeros(4, dtype=np.int64)
    won = np.zeros(4, dtype=np.int64)
    tmp = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    wins, mine_pts, theirs_pts = 0.0, 0.0, 0.0
    for i in range(E):
        outcome(states[i], t4, tmp, won)
        totals[i] = t4[:n]
        p = int(net_seat[i])
        wins += won[p] / max(1, int(won[:n].sum()))
        mine_pts += t4[p]
        theirs_pts += (t4[:n].sum() - t4[p]) / (n - 1)
    return {"win_rate": wins / E, "mean_score": mine_pts / E, "greedy_score": theirs_pts / E, "totals": totals,
            "net_seat": net_seat}


def _value(text: str) -> dict[str, float]:
    parts = text.split(",")
    try:
        w = [float(x) for x in parts]
    except ValueError:
        w = []
    if len(w) != 3 or not all(math.isfinite(x) for x in w):
        raise argparse.ArgumentTypeError(f"--value takes three finite numbers WIN,MARGIN,SCORE, got {text!r}")
    return {"win": w[0], "margin": w[1], "score": w[2]}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m experiments.eval_learned", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="NAME.pt (+ NAME.json beside it)")
    ap.add_argument("--games", type=int, default=1024, help="games (a multiple of --players: every seat per seed)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="game i plays seed SEED + i // players")
    ap.add_argument("--players", type=int, default=2, choices=[2, 3, 4])
    ap.add_argument("--side", default="A", choices=["A", "B"])
    ap.add_argument("--spirits", action="store_true", help="the Nature's Spirit variant")
    ap.add_argument("--beam", type=int, default=None, help="planner beam proposing the network's candidates "
                    "(default: the checkpoint's play settings, as `learned` plays; the trainer evaluates at 96)")
    ap.add_argument("--candidates", type=int, default=None, help="candidates the network ranks (1: the planner's "
                    "first plan, no network; default: the checkpoint's; the trainer evaluates 24)")
    ap.add_argument("--diverse", action=argparse.BooleanOptionalAction, default=None,
                    help="candidates from a beam per central space, covering every space and card choice "
                    "(`greedy.plan_candidates`; --beam is then per space), or the plain beam's best (--no-diverse; "
                    "default: the checkpoint's)")
    ap.add_argument("--symmetries", type=int, default=None, choices=[1, 4], help="outputs averaged over this many "
                    "mirror images of the boards (default: the checkpoint's)")
    ap.add_argument("--opponent-beam", type=int, default=24, help="the heuristic opponents' beam (GreedyAgent's)")
    ap.add_argument("--value", type=_value, default=None, metavar="WIN,MARGIN,SCORE",
                    help="decision weights (default: the checkpoint's play.value, else its value)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def main(argv: list[str] | None = None) -> int:
    from harmonies_apps.tournament import wilson_interval

    args = build_parser().parse_args(argv)
    try:
        if args.games < 1:
            raise ValueError(f"--games must be >= 1, got {args.games}")
        if args.threads < 1:
            raise ValueError(f"--threads must be >= 1, got {args.threads}")
        net = ValueNet.load(args.checkpoint)
        play = play_settings(net.config["play"], beam=args.beam, candidates=args.candidates, diverse=args.diverse,
                             symmetries=args.symmetries)
        for key in ("beam", "candidates", "diverse", "symmetries"):
            setattr(args, key, play[key])
        planner_settings(args.opponent_beam)
    except (ValueError, OSError) as e:
        print(f"eval_learned: {e}", file=sys.stderr)
        return 2
    value = args.value or play_value(net.config)
    from tqdm import tqdm

    bar = tqdm(total=args.games, unit="game", disable=args.no_progress, dynamic_ncols=True, desc="eval")

    def progress(done: int) -> None:
        bar.update(done - bar.n)

    start = time.perf_counter()
    res = play_vs_greedy(net, args.games, args.seed, value, players=args.players, side=int(args.side == "B"),
                         spirits=args.spirits, beam=args.beam, candidates=args.candidates,
                         diverse=args.diverse, symmetries=args.symmetries, opponent_beam=args.opponent_beam,
                         threads=args.threads, progress=progress)
    bar.close()
    wall = time.perf_counter() - start
    mine = res["totals"][np.arange(args.games), res["net_seat"]]
    lo, hi = wilson_interval(res["win_rate"] * args.games, args.games)
    print(json.dumps({
        "checkpoint": str(args.checkpoint), "games": args.games, "seed": args.seed, "players": args.players,
        "side": args.side, "spirits": args.spirits, "beam": args.beam, "candidates": args.candidates,
        "diverse": args.diverse, "symmetries": args.symmetries, "opponent_beam": args.opponent_beam, "value": value,
        "win_rate": round(res["win_rate"], 4), "win_ci95": [round(lo, 4), round(hi, 4)],
        "mean_score": round(res["mean_score"], 2), "score_sd": round(float(mine.std()), 2),
        "greedy_score": round(res["greedy_score"], 2), "wall_s": round(wall, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
