"""The main job: a seeded game played by uniformly random agents, printed turn by turn as text boards.

It ends with the score breakdowns and the winner, naming the tie-break when points tie (`winner_line`).

    python -m harmonies_env.demo --seed 1 --players 2 --side A
"""
from __future__ import annotations

import argparse
import sys
from typing import TextIO

import numpy as np

from .config import GameConfig, add_game_options, game_config_from
from .firstrun import say_if_compiling
from .game import Game
from .render import board_lines


def play_demo(seed: int = 1, config: GameConfig | None = None, out: TextIO = sys.stdout) -> Game:
    """Play one seeded random game of `config` (default: 2 players, Side A), printing each turn's actions and the
    mover's board; return the game."""
    game = Game(seed=seed, config=config or GameConfig())
    rng = np.random.default_rng(seed)
    print(game, file=out)
    while not game.is_over:
        p, turn = game.current_player, game.turn
        print(f"\n--- round {game.round}, player {p} ---", file=out)
        while not game.is_over and game.turn == turn:
            legal = game.legal_actions()
            a = legal[int(rng.integers(len(legal)))]
            print("  " + game.describe_action(a), file=out)
            game.step(a)
        board = game.field("stack")[p]
        for line in board_lines(game.side_code, board, int(game.field("cubes")[p])):
            print("    " + line, file=out)
    print("\n=== final position ===", file=out)
    print(game, file=out)
    print("\n=== final scores ===", file=out)
    for p, sc in enumerate(game.scores()):
        print(f"player {p}: " + ", ".join(f"{k} {v}" for k, v in sc.items()), file=out)
    print(winner_line(game), file=out)
    if game.num_players == 1:
        print(f"suns: {game.suns()}", file=out)
    return game


def _seats(seats: list[int]) -> str:
    """[0, 2, 3] -> '0, 2 and 3'."""
    names = [str(p) for p in seats]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def winner_line(game: Game) -> str:
    """Who won a finished game, in words, with the tie-break when points tie.

    The rules: most points wins; tied on points, most animal cubes placed (the Spirit cube does not count); still
    tied, a shared victory. A bare "winner: player 1" after a 20-20 game reads like a mistake, so the line says
    what decided it: "winner: player 1 with 20 points, on the tie-break: players 0 and 1 tie on points, and
    player 1 placed more animal cubes (player 0 0, player 1 1)".
    """
    totals = [int(sc["total"]) for sc in game.scores()]
    winners = game.winners()
    best = max(totals)
    if game.num_players == 1:
        return f"solo: player 0 scored {best} points"
    tied = [p for p, t in enumerate(totals) if t == best]
    if len(tied) == 1:
        return f"winner: player {winners[0]} with {best} points"
    cubes = game.animal_cubes()
    counts = ", ".join(f"player {p} {int(cubes[p])}" for p in tied)
    tie = f"players {_seats(tied)} tie on points"
    if len(winners) == 1:
        more = "more" if len(tied) == 2 else "the most"
        return (f"winner: player {winners[0]} with {best} points, on the tie-break: {tie}, and player {winners[0]} "
                f"placed {more} animal cubes ({counts})")
    if len(winners) == len(tied):
        return (f"shared victory: players {_seats(winners)} with {best} points, still tied after the tie-break "
                f"(animal cubes placed: {counts})")
    return (f"shared victory: players {_seats(winners)} with {best} points: {tie}, and players {_seats(winners)} "
            f"placed the most animal cubes, as many each ({counts})")


def main(argv: list[str] | None = None) -> int:
    """Parse argv (None: sys.argv[1:]) and play the demo; a bad setting is one line on stderr and exit status 2."""
    ap = argparse.ArgumentParser(prog="python -m harmonies_env.demo", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="seeds the game and the random agents (>= 0)")
    add_game_options(ap, default_players=2)
    args = ap.parse_args(argv)
    say_if_compiling()  # a first run's 30 s compile, said on a terminal
    try:
        play_demo(args.seed, game_config_from(args))
    except ValueError as e:  # a setting the game refuses (a negative seed): say which, no traceback
        print(f"{ap.prog}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
