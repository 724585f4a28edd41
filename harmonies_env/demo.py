"""The main job: a seeded game played by uniformly random agents, printed turn by turn as text boards.

    python -m harmonies_env.demo --seed 1 --players 2 --side A
"""
from __future__ import annotations

import argparse
import sys
from typing import TextIO

import numpy as np

from .game import Game
from .render import board_lines


def play_demo(seed: int = 1, num_players: int = 2, side: str = "A", spirits: bool = False,
              out: TextIO = sys.stdout) -> Game:
    """Play one seeded random game, printing each turn's actions and the mover's board; return the game."""
    game = Game(num_players, side, spirits, seed=seed)
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
    w = game.winners()
    print(("winner: player " if len(w) == 1 else "shared victory: players ") + ", ".join(map(str, w)), file=out)
    if num_players == 1:
        print(f"suns: {game.suns()}", file=out)
    return game


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--players", type=int, default=2, choices=[1, 2, 3, 4])
    ap.add_argument("--side", default="A", choices=["A", "B"])
    ap.add_argument("--spirits", action="store_true")
    args = ap.parse_args(argv)
    play_demo(args.seed, args.players, args.side, args.spirits)


if __name__ == "__main__":
    main()
