"""The `harmonies` command: demo, play, tournament, solo, bench, train.

    harmonies demo --seed 1 --agents greedy greedy
    harmonies play --opponents greedy --side A
    harmonies tournament --agents greedy mcts:0.5 --games 200 --jobs 4 --seed 0 --out results/
    harmonies solo --agents greedy random --games 50
    harmonies bench [args passed to benchmarks/bench_engine.py]
    harmonies train [args passed to experiments/train_solo_ppo.py]   (--selfplay: the self-play script)
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path
from typing import Callable, TextIO

from harmonies_env.render import board_lines
from harmonies_env.scoring import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]


def _add_config(p: argparse.ArgumentParser, players: bool = True) -> None:
    if players:
        p.add_argument("--players", type=int, default=None, help="1-4 (default: number of agents)")
    p.add_argument("--side", choices=["A", "B"], default="A", help="board side (A river, B islands)")
    p.add_argument("--spirits", action="store_true", help="play with the Nature's Spirit variant")
    p.add_argument("--seed", type=int, default=0, help="base seed (results are reproducible from it)")


def _print_scores(game, out: TextIO) -> None:
    for p, sc in enumerate(game.scores()):
        print(f"player {p}: " + ", ".join(f"{k} {sc[k]}" for k in CATEGORIES), file=out)
    w = game.winners()
    print(("winner: player " if len(w) == 1 else "shared victory: players ") + ", ".join(map(str, w)), file=out)
    if game.num_players == 1:
        print(f"suns: {game.suns()}", file=out)


def cmd_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """A seeded game of bots, printed turn by turn (actions in words + the mover's board), then scores."""
    from agents import make_agent

    from .tournament import agent_seed, play_game

    out = out or sys.stdout
    n = args.players or len(args.agents)
    specs = list(args.agents) if len(args.agents) == n else [args.agents[k % len(args.agents)] for k in range(n)]
    agents = [make_agent(s, seed=agent_seed(args.seed, 0, k)) for k, s in enumerate(specs)]

    def on_turn(game, p, said):
        print(f"\n--- round {(game.turn - 1) // n + 1}, player {p} ({specs[p]}) ---", file=out)
        for line in said:
            print("  " + line, file=out)
        for line in board_lines(game.side_code, game.field("stack")[p], int(game.field("cubes")[p])):
            print("    " + line, file=out)

    game = play_game(agents, n, args.side, args.spirits, seed=args.seed, on_turn=on_turn)
    print("\n=== final position ===", file=out)
    print(game, file=out)
    print("\n=== final scores ===", file=out)
    _print_scores(game, out)
    return 0


class HumanAgent:
    """A person at the terminal: the legal moves are listed in words and numbered; bad input re-prompts."""

    name = "human"

    def __init__(self, input_fn: Callable[[str], str] = input, out: TextIO | None = None):
        self.input_fn = input_fn
        self.out = out or sys.stdout

    def reset(self) -> None:
        pass

    def act(self, view) -> int:
        legal = view.legal_actions()
        print("\n" + view.text(), file=self.out)
        print(f"\nyou are player {view.player}; your moves:", file=self.out)
        for k, a in enumerate(legal):
            print(f"  {k:>3}: {view.describe_action(a)}", file=self.out)
        while True:
            try:
                raw = self.input_fn(f"choose 0-{len(legal) - 1} (q to quit): ").strip()
            except EOFError:
                raise SystemExit("input ended: game abandoned") from None
            if raw.lower() in ("q", "quit", "exit"):
                raise SystemExit("game abandoned")
            try:
                k = int(raw)
            except ValueError:
                print(f"'{raw}' is not a move number: type a number from 0 to {len(legal) - 1}", file=self.out)
                continue
            if not 0 <= k < len(legal):
                print(f"{k} is not in the list: type a number from 0 to {len(legal) - 1}", file=self.out)
                continue
            return int(legal[k])


def cmd_play(args: argparse.Namespace, input_fn: Callable[[str], str] = input, out: TextIO | None = None) -> int:
    """A person (seat --seat) against bots, in the terminal."""
    from agents import make_agent

    from .tournament import agent_seed, play_game

    out = out or sys.stdout
    n = 1 + len(args.opponents)
    if not 0 <= args.seat < n:
        print(f"--seat must be 0..{n - 1}", file=sys.stderr)
        return 2
    bots = [make_agent(s, seed=agent_seed(args.seed, 0, k)) for k, s in enumerate(args.opponents)]
    agents = bots[: args.seat] + [HumanAgent(input_fn, out)] + bots[args.seat:]

    def on_turn(game, p, said):
        if p != args.seat:
            print(f"\nplayer {p} ({agents[p].name}): " + "; ".join(said), file=out)

    game = play_game(agents, n, args.side, args.spirits, seed=args.seed, on_turn=on_turn)
    print("\n=== final position ===", file=out)
    print(game, file=out)
    _print_scores(game, out)
    return 0


def cmd_tournament(args: argparse.Namespace) -> int:
    from .tournament import format_summary, run_games, summarize, write_outputs

    n = args.players or len(args.agents)
    if not 2 <= n <= 4:
        print(f"a tournament has 2-4 players, got {n} (use `harmonies solo` for 1)", file=sys.stderr)
        return 2
    results = run_games(args.agents, n, args.games, args.side, args.spirits, args.seed, args.jobs,
                        progress=not args.quiet)
    summary = summarize(results)
    summary["config"] = {"agents": list(args.agents), "players": n, "side": args.side, "spirits": args.spirits,
                         "seed": args.seed, "games": args.games}
    print(format_summary(summary))
    if args.out:
        for p in write_outputs(results, summary, args.out, stem="tournament"):
            print(f"wrote {p}")
    return 0


def cmd_solo(args: argparse.Namespace) -> int:
    from .tournament import format_summary, run_games, summarize, write_outputs

    results = run_games(args.agents, 1, args.games, args.side, args.spirits, args.seed, args.jobs,
                        progress=not args.quiet)
    summary = summarize(results)
    summary["config"] = {"agents": list(args.agents), "players": 1, "side": args.side, "spirits": args.spirits,
                         "seed": args.seed, "games": args.games}
    print(format_summary(summary))
    if args.out:
        for p in write_outputs(results, summary, args.out, stem="solo"):
            print(f"wrote {p}")
    return 0


def _run_script(path: Path, argv: list[str]) -> int:
    if not path.exists():
        print(f"{path.relative_to(ROOT)} is not in this checkout", file=sys.stderr)
        return 2
    old = sys.argv
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(ROOT))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else 1
    finally:
        sys.argv = old
    return 0


def _add_trust_option(p: argparse.ArgumentParser) -> None:
    """--trust-checkpoint: allow ppo:PATH checkpoints that only Stable-Baselines3 can load (see docs/safety.md)."""
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="load ppo:PATH checkpoints through Stable-Baselines3 even when that unpickles objects from "
                        "the file, which can run arbitrary code: only for files you trust (docs/safety.md)")


def _apply_trust_option(args: argparse.Namespace) -> None:
    """Pass --trust-checkpoint on through the environment, so that worker processes (--jobs) see it too."""
    if getattr(args, "trust_checkpoint", False):
        from agents.ppo import TRUST_ENV

        os.environ[TRUST_ENV] = "1"


def _prepare_out(args: argparse.Namespace) -> None:
    """Create --out before any game is played, so that an unusable folder fails at once, not after the games."""
    if getattr(args, "out", None):
        Path(args.out).mkdir(parents=True, exist_ok=True)


def _fail(command: str, e: BaseException) -> int:
    """One clear line on stderr (no traceback) for errors caused by the user's input or files."""
    what = f"{type(e).__name__}: {e}" if isinstance(e, OSError) else str(e)
    print(f"harmonies {command}: {what}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="harmonies", description="Harmonies engine, bots and tools.")
    sub = ap.add_subparsers(dest="command", required=True)
    agents_help = "agents: random, greedy[:beam], mcts[:SECONDS|:Nit], ppo:PATH"

    p = sub.add_parser("demo", help="a seeded game of bots printed turn by turn")
    p.add_argument("--agents", nargs="+", default=["greedy", "greedy"], help=agents_help)
    _add_config(p)
    _add_trust_option(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("play", help="play against bots in the terminal")
    p.add_argument("--opponents", nargs="*", default=["greedy"], help=agents_help + " (none = solo)")
    p.add_argument("--seat", type=int, default=0, help="your seat (0 plays first)")
    _add_config(p, players=False)
    _add_trust_option(p)
    p.set_defaults(func=cmd_play)

    for name, fn, hlp in (("tournament", cmd_tournament, "seeded matches with rotated seats and statistics"),
                          ("solo", cmd_solo, "seeded solo games per agent: mean score and suns")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--agents", nargs="+", required=True, help=agents_help)
        p.add_argument("--games", type=int, default=20, help="games (per agent for solo)")
        p.add_argument("--jobs", type=int, default=1, help="worker processes (results do not depend on it)")
        p.add_argument("--out", default=None, help="folder for CSV, JSON and PNG outputs")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        _add_config(p, players=name == "tournament")
        _add_trust_option(p)
        p.set_defaults(func=fn)

    p = sub.add_parser("bench", help="engine benchmark (benchmarks/bench_engine.py), args passed through")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda a: _run_script(ROOT / "benchmarks" / "bench_engine.py", a.rest))

    p = sub.add_parser("train", help="training script (experiments/train_solo_ppo.py), args passed through")
    p.add_argument("--selfplay", action="store_true", help="run experiments/selfplay_ppo.py instead")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda a: _run_script(
        ROOT / "experiments" / ("selfplay_ppo.py" if a.selfplay else "train_solo_ppo.py"), a.rest))
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _apply_trust_option(args)
    try:
        _prepare_out(args)
        return int(args.func(args) or 0)
    except (ValueError, OSError) as e:  # bad input or files: FileNotFoundError, PermissionError, ...
        return _fail(args.command, e)


if __name__ == "__main__":
    sys.exit(main())
