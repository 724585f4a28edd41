"""The `harmonies` command: demo, play, tournament, solo, replay, serve, ladder, bench, train.

    harmonies demo --seed 1 --agents greedy greedy
    harmonies play --opponents greedy --side A
    harmonies tournament --agents greedy mcts:200it --games 200 --jobs 4 --seed 0 --out results/
    harmonies tournament --agents greedy random --games 1000 --ray HEAD_IP:6379   (on a Ray cluster)
    harmonies solo --agents greedy random --games 50
    harmonies replay game.json --html game.html            (an offline HTML replay viewer of game records)
    harmonies serve                                        (play against the bots in a browser; the "web" extra)
    harmonies ladder play ladder.db --until-ci 25 --jobs 2  (a persistent rating ladder: init, add, play, test, show)
    harmonies bench --games 2000                           (benchmarks/bench_engine.py's options)
    harmonies train solo-ppo --config experiments/configs/solo_ppo.toml   (experiments/train.py's options)

`bench` and `train` hand every argument after their name, unchanged, to the `main(argv)` of
`benchmarks.bench_engine` and `experiments.train`, so `harmonies train --help` is that module's help; an error
they end with (`SystemExit("message")`) is printed as one line, exit status 2.
Applications that add their own subcommand list their module in `APP_MODULES`; the module defines
`add_parser(subparsers)`, which adds its parser and sets `func` (see `harmonies_apps.play`).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harmonies_env.config import add_game_options, game_config_from
from harmonies_env.firstrun import install_hint, say_if_compiling
from harmonies_env.stops import Stopped, exit_status, quiet_exit, stop_message, stop_on_signals

from .options import HelpFormatter, OptionHelp, add_seed, agents_help, print_scores  # noqa: F401  (serve's parser)

if TYPE_CHECKING:
    from harmonies_env.config import GameConfig

#: Modules that add a subcommand: each defines `add_parser(subparsers)`, which adds its parser and sets `func`.
APP_MODULES: list[str] = [
    "harmonies_apps.play",     # a person against bots in the terminal
    "harmonies_apps.replay",   # HTML replay viewer (docs/web.md)
    "harmonies_apps.serve",    # play in the browser (docs/web.md; the "web" extra)
    "harmonies_apps.ladder.cli",  # a persistent rating ladder (docs/ladder.md)
]

#: Subcommands whose arguments go verbatim to another module's `main(argv) -> int`:
#: name -> (module, help line).
FORWARDED: dict[str, tuple[str, str]] = {
    "bench": ("benchmarks.bench_engine", "engine speed benchmark; options are benchmarks/bench_engine.py's "
                                         "(harmonies bench --help)"),
    "train": ("experiments.train", "training entry point; options are experiments/train.py's (harmonies train --help)"),
}


def forwarded_module(command: str) -> str:
    """The module `command` forwards to (the same name installed and in a checkout)."""
    return FORWARDED[command][0]


#: Optional top-level modules -> the pyproject extra that installs them.
EXTRA_OF: dict[str, str] = {
    "torch": "train", "stable_baselines3": "train", "sb3_contrib": "train", "tensorboard": "train",
    "matplotlib": "train", "ray": "distributed", "starlette": "web", "uvicorn": "web",
}

def missing_extra(err: ImportError) -> tuple[str, str] | None:
    """(module, extra) when `err` is an optional module that a pyproject extra installs, else None."""
    name = getattr(err, "name", None)
    if not name:  # the name is lost when the error crossed a process boundary: read it from the message
        msg = str(err)
        name = msg.split("'")[1] if msg.count("'") >= 2 else ""
    top = name.split(".")[0]
    return (top, EXTRA_OF[top]) if top in EXTRA_OF else None


def extra_message(command: str, module: str, extra: str) -> str:
    """The one line printed instead of a traceback when an optional module is missing."""
    return f'harmonies {command}: needs {module}, from the "{extra}" extra: {install_hint(extra)}'


def cmd_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """A seeded game of bots, printed turn by turn (actions in words + the mover's board), then scores."""
    from agents import make_agent
    from harmonies_env.render import board_lines

    from .tournament import agent_seed, play_game

    out = out or sys.stdout
    config = game_config_from(args, len(args.agents))
    n = config.num_players
    if len(args.agents) > n:
        raise ValueError(f"{len(args.agents)} agents for a {n}-player game (give at most one spec per seat)")
    specs = list(args.agents) if len(args.agents) == n else [args.agents[k % len(args.agents)] for k in range(n)]
    agents = [make_agent(s, seed=agent_seed(args.seed, 0, k)) for k, s in enumerate(specs)]

    def on_turn(game, p, said):
        print(f"\n--- round {(game.turn - 1) // n + 1}, player {p} ({specs[p]}) ---", file=out)
        for line in said:
            print("  " + line, file=out)
        for line in board_lines(game.side_code, game.field("stack")[p], int(game.field("cubes")[p])):
            print("    " + line, file=out)

    game = play_game(agents, seed=args.seed, on_turn=on_turn, config=config)
    print("\n=== final position ===", file=out)
    print(game, file=out)
    print("\n=== final scores ===", file=out)
    print_scores(game, out)
    return 0


def _check_specs(specs: list[str]) -> None:
    """Build each distinct agent once before playing: a bad spec or a missing extra fails now, not mid-run."""
    from agents import make_agent

    from .tournament import time_budget_specs

    for s in dict.fromkeys(specs):
        make_agent(s)
    timed = time_budget_specs(specs)
    if timed:
        print(f"note: {', '.join(timed)} search for a wall-clock time, so results depend on machine speed and "
              "load and are not reproducible; a budget of Nit is (mcts:Nit: N iterations, learned-search:Nit: N "
              "worlds)", file=sys.stderr)


def _run_match(args: argparse.Namespace, config: GameConfig, stem: str) -> int:
    from agents.match import cores, jobs_note

    from .provenance import cpu_seconds, provenance
    from .tournament import format_summary, run_games, write_outputs

    if args.ray is not None:
        from agents.distributed import check_address

        if args.jobs != 1:
            raise ValueError(f"--jobs {args.jobs} runs processes on this machine and --ray runs on a cluster's CPUs: "
                             "give one of them")
        check_address(args.ray)
        import ray  # noqa: F401  (a missing "distributed" extra is reported before any agent is built)
    _check_specs(list(args.agents))
    if args.ray is None and args.jobs > cores() and not args.jobs_oversubscribe:
        print(f"note: --jobs {args.jobs} is more than the {cores()} core(s) here: running --jobs {cores()} "
              f"(--jobs-oversubscribe runs {args.jobs})", file=sys.stderr)
        args.jobs = cores()
    note = jobs_note(min(args.jobs, args.games)) if args.ray is None else None
    if note:
        print(f"note: {note}", file=sys.stderr)
    # the weights hashed and the date taken as the games start
    args.provenance = provenance(args.agents, argv=getattr(args, "argv", None))
    args.cpu_start = cpu_seconds()
    played: list[dict] = []
    try:
        results = run_games(args.agents, games=args.games, seed=args.seed, jobs=args.jobs, progress=not args.quiet,
                            save_games=args.save_games, config=config, ray_address=args.ray, collect=played,
                            paired=getattr(args, "paired", False))
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: keep what finished, say it in the one line main prints
        raise _stopped(e, args, played, config, stem) from None
    summary = _summary(results, args, config)
    print(format_summary(summary))
    if args.out:
        for p in write_outputs(results, summary, args.out, stem=stem):
            print(f"wrote {p}")
    for note in summary.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    return 0


def _summary(results: list[dict], args: argparse.Namespace, config: GameConfig) -> dict:
    """The summary written to --out: the statistics, the run's configuration and its provenance."""
    from .provenance import cpu_seconds
    from .tournament import summarize

    summary = summarize(results)
    summary["config"] = {"agents": list(args.agents), "players": config.num_players, "side": config.side,
                         "spirits": config.spirits, "river_loops": config.river_loops, "seed": args.seed,
                         "games": args.games, "paired": getattr(args, "paired", False)}
    summary["provenance"] = {**args.provenance, "cpu_seconds": round(cpu_seconds() - args.cpu_start, 3)}
    return summary


def _stopped(e: KeyboardInterrupt, args: argparse.Namespace, played: list[dict], config: GameConfig,
             stem: str) -> Stopped:
    """A tournament or solo run stopped by a signal: the games played so far written to --out (the summary marked
    "partial"), or an --out this run made and left empty removed; the `Stopped` to raise says which."""
    from .tournament import write_outputs

    total = args.games * (len(args.agents) if config.num_players == 1 else 1)
    done = f"{len(played)} of {total} games played"
    if args.out and played:
        summary = _summary(played, args, config)
        summary["partial"] = True
        write_outputs(played, summary, args.out, stem=stem)
        detail = f"{done}, written to {args.out} (marked partial)"
    elif args.out:
        out = Path(args.out)
        if getattr(args, "made_out", False) and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
            detail = f"{done}; removed the empty {args.out}"
        else:
            detail = f"{done}; nothing written to {args.out}"
    else:
        detail = f"{done} (no --out: not saved)"
    return Stopped(e.signum if isinstance(e, Stopped) else signal.SIGINT, detail)


def cmd_tournament(args: argparse.Namespace) -> int:
    n = len(args.agents) if args.players is None else args.players
    if not 2 <= n <= 4:
        print(f"harmonies tournament: a tournament has 2-4 players, got {n} (use `harmonies solo` for 1)",
              file=sys.stderr)
        return 2
    return _run_match(args, game_config_from(args, n), "tournament")


def cmd_solo(args: argparse.Namespace) -> int:
    return _run_match(args, game_config_from(args, 1), "solo")


#: Subcommands that build agents from specs, so take --trust-checkpoint.
TRUST_COMMANDS = ("demo", "tournament", "solo", "play", "serve")


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


#: The files a run writes into --out (`write_outputs`), by stem ({stem} is the command).
OUT_FILES = ("{stem}.json", "{stem}_games.csv", "{stem}.png")


def _earlier_outputs(args: argparse.Namespace) -> list[Path]:
    """The files of an earlier run that this one would replace: its outputs in --out, game records in --save-games."""
    found = []
    if args.out and Path(args.out).is_dir():
        found += [p for name in OUT_FILES if (p := Path(args.out) / name.format(stem=args.command)).exists()]
    if args.save_games and Path(args.save_games).is_dir():
        found += sorted(p for pattern in ("game_*.json", "solo_*.json") for p in Path(args.save_games).glob(pattern))
    return found


def _prepare_out(args: argparse.Namespace) -> None:
    """Create --out before any game is played, so that an unusable folder fails at once, not after the games; refuse
    (nothing touched) to replace an earlier run's outputs or records unless --force."""
    if getattr(args, "command", None) not in ("tournament", "solo"):
        return
    earlier = [] if args.force else _earlier_outputs(args)
    if earlier:
        raise ValueError(f"{earlier[0].parent} already holds {earlier[0].name} of an earlier run: give another folder, "
                         "or --force to replace its files")
    if args.out:
        args.made_out = not Path(args.out).exists()  # a stop before any game removes it again
        Path(args.out).mkdir(parents=True, exist_ok=True)


def _fail(command: str, e: BaseException) -> int:
    """One clear line on stderr (no traceback) for errors caused by the user's input or files."""
    what = f"{type(e).__name__}: {e}" if isinstance(e, OSError) else str(e)
    print(f"harmonies {command}: {what}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    helptext = agents_help()
    ap = argparse.ArgumentParser(prog="harmonies", formatter_class=HelpFormatter, epilog=helptext,
                                 description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1]
                                 + "\n\n`harmonies COMMAND --help` lists a command's options with their defaults.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="a seeded game of bots printed turn by turn", formatter_class=HelpFormatter,
                       description="A seeded game of bots printed turn by turn, then the score breakdowns.",
                       epilog=helptext)
    p.add_argument("--agents", nargs="+", default=["greedy", "greedy"], help="one spec per seat (see below)")
    add_game_options(p)
    add_seed(p)
    p.set_defaults(func=cmd_demo)

    for name, fn, hlp in (("tournament", cmd_tournament, "seeded matches with rotated seats and statistics"),
                          ("solo", cmd_solo, "seeded solo games per agent: mean score and suns")):
        p = sub.add_parser(name, help=hlp, description=hlp + ".", epilog=helptext, formatter_class=HelpFormatter)
        p.add_argument("--agents", nargs="+", required=True, help="agent specs (see below)")
        p.add_argument("--games", type=int, default=20, help="games" + (" per agent" if name == "solo" else ""))
        p.add_argument("--jobs", type=int, default=1,
                       help="worker processes, at most the usable cores; results are identical for any --jobs "
                            "with reproducible agents")
        p.add_argument("--jobs-oversubscribe", action="store_true",
                       help="run --jobs processes even if they are more than the usable cores")
        p.add_argument("--ray", default=None, metavar="ADDRESS",
                       help="play the games on a Ray cluster instead of --jobs processes (the \"distributed\" extra): "
                            "local (a Ray instance with this machine's cores), auto or HOST:PORT of a running "
                            "cluster (docs/distributed.md); the same results as --jobs")
        p.add_argument("--out", default=None, help="folder for the CSV, JSON and PNG outputs; one that holds an "
                       "earlier run's is refused unless --force")
        p.add_argument("--force", action="store_true", help="replace the outputs of an earlier run in --out and "
                       "its game records in --save-games (other files there are left alone)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        p.add_argument("--save-games", default=None, metavar="DIR", help="write each game's record here "
                       "(one JSON per game; view them with `harmonies replay DIR`)")
        if name == "tournament":
            p.add_argument("--paired", action="store_true",
                           help="play each seed from every seating (2 players: 2 games, seats swapped; 3-4: every "
                                "rotation), so seat and deal luck cancel; --games must be a multiple of the players")
        add_game_options(p, players=(2, 3, 4) if name == "tournament" else None)
        add_seed(p)
        p.set_defaults(func=fn)

    for module in APP_MODULES:
        importlib.import_module(module).add_parser(sub)
    for p in sub.choices.values():  # the apps' parsers too: each default said once
        if p.formatter_class is argparse.ArgumentDefaultsHelpFormatter:
            p.formatter_class = OptionHelp
    for name in TRUST_COMMANDS:
        if name in sub.choices:
            _add_trust_option(sub.choices[name])

    for name, (_, hlp) in FORWARDED.items():
        sub.add_parser(name, help=hlp, add_help=False)  # never parsed here: main() forwards its argv
    return ap


def forward(command: str, argv: list[str]) -> int:
    """Run `command`'s module main(argv) with argv unchanged; a missing extra is one line and exit 2."""
    module_name = forwarded_module(command)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name or (e.name and module_name.startswith(e.name + ".")):
            print(f"harmonies {command}: {module_name} is not in this installation", file=sys.stderr)
            return 2
        raise
    old = sys.argv
    sys.argv = [f"harmonies {command}", *argv]  # so the module's argparse names itself "harmonies <command>"
    try:
        return int(module.main(argv) or 0)
    except SystemExit as e:  # argparse's --help and usage errors (int), or a module's own error message (str)
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(f"harmonies {command}: {e.code}", file=sys.stderr)  # the message, which the module would print
        return 2
    finally:
        sys.argv = old


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.print_help()
        return 0
    command = argv[0]
    try:
        with stop_on_signals():
            if command in FORWARDED:
                return forward(command, argv[1:])
            args = parser.parse_args(argv)
            args.argv = ["harmonies", *argv]  # as typed, for the provenance of what it writes
            say_if_compiling()  # a first run's 30 s compile, said on a terminal
            _apply_trust_option(args)
            _prepare_out(args)
            return int(args.func(args) or 0)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: one line saying what was kept, exit 130 / 143
        print(stop_message(f"harmonies {command}", e), file=sys.stderr)
        quiet_exit()  # and nothing after it (a stop inside numba's compiler leaves noisy finalizers)
        return exit_status(e)
    except ImportError as e:
        found = missing_extra(e)
        if found is None:
            raise
        print(extra_message(command, *found), file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:  # bad input or files: FileNotFoundError, PermissionError, ...
        return _fail(command, e)


if __name__ == "__main__":
    sys.exit(main())
