"""Batched evaluation of a learned MLP (`mlp`) against the heuristic planner: a thousand games in two minutes.

    python -m experiments.eval_mlp                                # the shipped MLP as `mlp` plays it
    python -m experiments.eval_mlp --checkpoint runs/mlp/model.pt --games 1024
    python -m experiments.eval_mlp --candidates 1                 # the planner's first plan: no network at all
    python -m experiments.eval_mlp --value 1,0.5,0.25             # other decision weights (win, margin, score)
    python -m experiments.eval_mlp --no-diverse --beam 96 --candidates 24 --symmetries 1 --value 1,0.5,0.25
                                                                      # as the trainer evaluates
    python -m experiments.eval_mlp --side B --spirits --players 3

Why: the trainer's periodic evaluation (`Trainer.evaluate` calls `play_vs_greedy`), as a command, so that a question
about a network (how many candidates, which decision weights, which variant) costs a minute instead of an hour of
tournament. The games are played by the match engine (`agents.match.play_match`): every game advances together, ONE
threaded numba call plans the network's turns in all games that start one, ONE forward pass scores all their
candidates (`MLPAgent.act_batch`), and the heuristic's turns likewise (`GreedyAgent.act_batch`). The network picks
as `MLPAgent` does (it is that agent: `candidates` plans of the planner at beam `beam`, diverse or not, then
`decision_values` of outputs averaged over `symmetries` mirror images), against `GreedyAgent(beam=opponent_beam)` in
every other seat; the same games as the sequential `Game` with those agents (tested). Unset options take the
checkpoint's `play` settings and decision weights, so the default is the agent as it plays.

Game i plays seed `seed + i // players` with the seats rotated by i (`play_match(paired=True)`: the network sits in
seat (-i) mod players), so each seed is played from every seat (use a multiple of `players` games). Seeds here are
small integers; training draws its games' seeds from [2**40, 2**62), so none is ever a training game. The trainer's
own evaluation uses `--seed 1000000` (config `eval.seed`); pick other seeds for figures you publish. Prints one JSON
line.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, Callable

import numpy as np

from agents.greedy import GreedyAgent, planner_settings
from agents.match import play_match, totals_of, wilson_interval, win_shares
from agents.mlp import DEFAULT_CHECKPOINT, MLPAgent, ValueNet, play_settings, play_value
from harmonies_env.config import GameConfig, add_game_options, game_config_from

#: Default base seed of the command (the trainer's evaluations use 1_000_000; these games are others).
DEFAULT_SEED = 3_000_000


def play_vs_greedy(net: ValueNet, games: int, seed: int, value: dict[str, float], *, beam: int = 96,
                   candidates: int = 24, diverse: bool = False, symmetries: int = 1, opponent_beam: int = 24,
                   threads: int = 2, progress: Callable[[int], None] | None = None,
                   config: GameConfig | None = None) -> dict[str, Any]:
    """Play `games` games, the network against the heuristic planner, all at once (`play_match`); their summary.

    config: the games' `GameConfig` (default: 2 players, Side A, no Spirits).

    The network plays as `MLPAgent(net=net, beam=beam, candidates=candidates, diverse=diverse,
    symmetries=symmetries, value=value)`, `GreedyAgent(beam=opponent_beam)` in the other seats. Game i: seed
    `seed + i // players`, seats rotated by i. Returns win_rate (a shared win counts its share), mean_score (the
    network's mean total), greedy_score (the other seats' mean total), per game `totals` int (games, players) by
    seat and `net_seat` (games,), and the engine's `results`. progress(k) is called with the number of finished games.
    """
    cfg = config or GameConfig()
    n = cfg.num_players
    net_agent = MLPAgent(net=net, beam=beam, candidates=candidates, diverse=diverse, symmetries=symmetries,
                             value=value, name="mlp")
    others = [GreedyAgent(beam=opponent_beam, name="greedy") for _ in range(1, n)]  # greedy#1, greedy#2 ...
    results = play_match([net_agent, *others], games=int(games), seed=int(seed), config=cfg, paired=True,
                         threads=threads, progress=progress)
    totals = np.array([[sc["total"] for sc in r["scores"]] for r in results], dtype=np.int64)
    net_seat = np.array([r["seats"].index("mlp") for r in results], dtype=np.int64)
    mine = totals_of(results, "mlp")
    theirs = (totals.sum(axis=1) - mine) / max(1, n - 1)
    return {"win_rate": float(win_shares(results, "mlp").mean()), "mean_score": float(mine.mean()),
            "greedy_score": float(theirs.mean()), "totals": totals, "net_seat": net_seat, "results": results}


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
    ap = argparse.ArgumentParser(prog="python -m experiments.eval_mlp", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="NAME.pt (+ NAME.json beside it)")
    ap.add_argument("--games", type=int, default=1024, help="games (a multiple of --players: every seat per seed)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="game i plays seed SEED + i // players")
    add_game_options(ap, players=(2, 3, 4), default_players=2)
    ap.add_argument("--beam", type=int, default=None, help="planner beam proposing the network's candidates "
                    "(default: the checkpoint's play settings, as `mlp` plays; the trainer evaluates at 96)")
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
        print(f"eval_mlp: {e}", file=sys.stderr)
        return 2
    value = args.value or play_value(net.config)
    from tqdm import tqdm

    bar = tqdm(total=args.games, unit="game", disable=args.no_progress, dynamic_ncols=True, desc="eval")

    def progress(done: int) -> None:
        bar.update(done - bar.n)

    start = time.perf_counter()
    config = game_config_from(args)
    res = play_vs_greedy(net, args.games, args.seed, value, config=config, beam=args.beam, candidates=args.candidates,
                         diverse=args.diverse, symmetries=args.symmetries, opponent_beam=args.opponent_beam,
                         threads=args.threads, progress=progress)
    bar.close()
    wall = time.perf_counter() - start
    mine = res["totals"][np.arange(args.games), res["net_seat"]]
    lo, hi = wilson_interval(res["win_rate"] * args.games, args.games)
    print(json.dumps({
        "checkpoint": str(args.checkpoint), "games": args.games, "seed": args.seed, "players": args.players,
        "side": args.side, "spirits": args.spirits,
        "river_loops": args.river_loops, "beam": args.beam, "candidates": args.candidates,
        "diverse": args.diverse, "symmetries": args.symmetries, "opponent_beam": args.opponent_beam, "value": value,
        "win_rate": round(res["win_rate"], 4), "win_ci95": [round(lo, 4), round(hi, 4)],
        "mean_score": round(res["mean_score"], 2), "score_sd": round(float(mine.std()), 2),
        "greedy_score": round(res["greedy_score"], 2), "wall_s": round(wall, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
