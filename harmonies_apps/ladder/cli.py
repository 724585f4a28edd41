"""`harmonies ladder ...`: the ladder's command line (docs/ladder.md).

    harmonies ladder init DB [--players N] [--side A|B] [--spirits] [--river-loops rulebook|bga] [--seed S]
                             [--references SPEC...]
    harmonies ladder add DB SPEC [--name NAME]
    harmonies ladder play DB --until-games N [--until-ci ELO] [--bot NAME] [--jobs J | --ray ADDRESS]
    harmonies ladder test DB NEW BASE [--elo0 0 --elo1 10 | --points0 0 --points1 1] [--alpha 0.05 --beta 0.05]
                                      [--max-games N] [--json]
    harmonies ladder show DB [--html FILE] [--json]
    harmonies ladder verify DB [--sample N]
    harmonies ladder export DB

Bad input (an unknown spec, a file that is not a ladder, a checkpoint whose hash changed, a pool mismatch, a second
writer) is one line and exit status 2, the file unchanged; a stopped `play` or `test` keeps every committed block
(exit 130 on Ctrl-C), and the same command again goes on from there.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from harmonies_env.config import add_game_options, game_config_from

from .bots import DEFAULT_REFERENCES


def _open(args: argparse.Namespace, write: bool) -> Any:
    from .store import open_ladder

    return open_ladder(args.db, write=write)


class _Bar:
    """A progress bar on stderr that appears with the first finished block (so a refusal stays one line)."""

    def __init__(self, args: argparse.Namespace, total: int | None, what: str):
        self.quiet, self.total, self.what, self.bar = args.quiet, total, what, None

    def update(self, n: int) -> None:
        if self.quiet:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, desc=self.what, unit="game", leave=False, file=sys.stderr)
        self.bar.update(n)

    def write(self, line: str) -> None:
        if self.quiet:
            return
        if self.bar is None:
            print(line, file=sys.stderr)
        else:
            self.bar.write(line, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _bar(args: argparse.Namespace, total: int | None, what: str) -> _Bar:
    return _Bar(args, total, what)


def _check_jobs(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.ray is not None:
        from agents.distributed import check_address

        if args.jobs != 1:
            raise ValueError(f"--jobs {args.jobs} runs processes on this machine and --ray runs on a cluster's CPUs: "
                             "give one of them")
        check_address(args.ray)
        import ray  # noqa: F401  (a missing "distributed" extra is said before anything is played)


def cmd_init(args: argparse.Namespace) -> int:
    from .commands import init
    from .store import describe

    config = game_config_from(args, 2)
    with init(args.db, config, args.seed, args.references) as ladder:
        names = ", ".join(b.name for b in ladder.bots())
    print(f"{args.db}: a ladder of {describe(config)}, seed {args.seed}; references {names} (random = 0 Elo)")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from .commands import add

    with _open(args, write=True) as ladder:
        bot = add(ladder, args.spec, args.name)
    note = "" if bot.reproducible else " (a time budget: its games are not reproducible)"
    print(f"added {bot.name!r} ({bot.spec}" + (f", sha256 {bot.sha256[:12]}" if bot.sha256 else "") + f"){note}")
    return 0


def _stopped(e: KeyboardInterrupt, detail: str) -> BaseException:
    import signal

    from harmonies_env.stops import Stopped

    return Stopped(e.signum if isinstance(e, Stopped) else signal.SIGINT, detail)


def cmd_play(args: argparse.Namespace) -> int:
    from .commands import play, ready

    _check_jobs(args)
    with _open(args, write=True) as ladder:
        ready(ladder)  # a changed bot or engine is refused before the progress bar shows
        before = ladder.game_count()
        total = None if args.until_games is None else max(0, args.until_games - before)
        bar = _bar(args, total, "ladder")

        def on_block(number: int, games: list) -> None:
            bar.update(len(games))

        try:
            blocks = play(ladder, args.until_games, args.until_ci, args.jobs, args.ray, say=bar.write,
                          on_block=on_block, bot=args.bot)
        except KeyboardInterrupt as e:
            raise _stopped(e, f"{ladder.game_count() - before} games committed by this run, {ladder.game_count()} in "
                              f"{args.db}; run the same command again to go on") from None
        finally:
            bar.close()
        print(f"{args.db}: {blocks} blocks played ({ladder.game_count() - before} games); it holds "
              f"{ladder.game_count()} games")
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    from .commands import ready, run_test

    _check_jobs(args)
    points = args.points0 is not None or args.points1 is not None
    if points and (args.elo0 is not None or args.elo1 is not None):
        raise ValueError("give Elo bounds (--elo0 --elo1) or points bounds (--points0 --points1), not both")
    kind = "points" if points else "elo"
    bounds = (0.0 if args.points0 is None else args.points0, 1.0 if args.points1 is None else args.points1) if points \
        else (0.0 if args.elo0 is None else args.elo0, 10.0 if args.elo1 is None else args.elo1)
    if not bounds[0] < bounds[1]:
        raise ValueError(f"the bounds must increase: {bounds[0]} then {bounds[1]}")
    if not (0 < args.alpha < 1 and 0 < args.beta < 1):
        raise ValueError(f"--alpha and --beta must be in (0, 1), got {args.alpha} and {args.beta}")
    with _open(args, write=True) as ladder:
        ready(ladder)
        bar = _bar(args, args.max_games, "test")
        try:
            out = run_test(ladder, args.new, args.base, kind, bounds, args.alpha, args.beta, args.max_games,
                           args.jobs, args.ray, on_block=lambda n, g: bar.update(len(g)))
        except KeyboardInterrupt as e:
            raise _stopped(e, "the test's committed pairs are stored; the same command resumes it") from None
        finally:
            bar.close()
    if args.json:
        print(json.dumps(out))
    else:
        unit = "Elo" if kind == "elo" else "points"
        said = {"H1": f"H1: {out['new']} is at least {bounds[1]:g} {unit} better than {out['base']}",
                "H0": f"H0: {out['new']} is at most {bounds[0]:g} {unit} better than {out['base']}",
                "undecided": f"undecided after --max-games {args.max_games}"}[out["verdict"]]
        low, high = out["llr_bounds"]
        print(f"{said}\n{out['games']} games ({out['pairs']} pairs), LLR {out['llr']:.3f} in [{low:.3f}, "
              f"{high:.3f}], pentanomial counts (LL..WW) {out['counts']}, mean margin "
              f"{out['mean_margin']:+.2f} points")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .commands import report
    from .report import html_page, text_table

    with _open(args, write=False) as ladder:
        rep = report(ladder)
        title = f"Ladder {ladder.path.name}"
    if args.html:
        from harmonies_apps.table import write_text_atomic

        write_text_atomic(args.html, html_page(rep, title))
        print(f"wrote {args.html}", file=sys.stderr)
    print(json.dumps(rep) if args.json else text_table(rep))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .commands import verify

    if args.sample < 1:
        raise ValueError(f"--sample must be at least 1, got {args.sample}")
    with _open(args, write=False) as ladder:
        bad = verify(ladder, args.sample, args.jobs, say=lambda s: print(s, file=sys.stderr))
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} stored games differ from their re-play", file=sys.stderr)
        return 1
    print("every re-played game matches its stored scores")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .commands import export

    with _open(args, write=False) as ladder:
        try:
            export(ladder, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _database_errors(func: Any) -> Any:
    """`func` with SQLite's errors (a damaged file, a full disk) as the one-line ValueError the CLI prints."""
    import functools
    import sqlite3

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except sqlite3.Error as e:
            raise ValueError(f"{args.db}: {type(e).__name__}: {e}") from None

    return run


def add_parser(sub: Any) -> None:
    """`harmonies ladder` and its commands (harmonies_apps.cli's APP_MODULES)."""
    from harmonies_apps.options import HelpFormatter, agents_help

    first = __doc__.split("\n\n")[0]
    ladder = sub.add_parser("ladder", help="a persistent, anchored, reproducible rating ladder (docs/ladder.md)",
                            description=first + "\n\n" + __doc__.split("\n\n")[1], formatter_class=HelpFormatter)
    cmds = ladder.add_subparsers(dest="ladder_command", metavar="COMMAND", required=True)

    def new(name: str, hlp: str, func: Any) -> argparse.ArgumentParser:
        p = cmds.add_parser(name, help=hlp, description=hlp + ".", formatter_class=HelpFormatter,
                            epilog=agents_help() if name in ("init", "add", "test") else None)
        p.add_argument("db", metavar="DB", help="the ladder's file (SQLite)")
        p.set_defaults(func=_database_errors(func))
        return p

    def jobs(p: argparse.ArgumentParser, ray: bool = True) -> None:
        p.add_argument("--jobs", type=int, default=1, help="worker processes; the same games for any --jobs")
        if ray:
            p.add_argument("--ray", default=None, metavar="ADDRESS",
                           help="play on a Ray cluster instead (local, auto or HOST:PORT; the \"distributed\" "
                                "extra): the same games as --jobs")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = new("init", "make a ladder file for one rules pool, with its references", cmd_init)
    add_game_options(p, players=(2, 3, 4), default_players=2)
    p.add_argument("--seed", type=int, default=0, help="the ladder's seed: every block's seed comes from it")
    p.add_argument("--references", nargs="+", default=list(DEFAULT_REFERENCES), metavar="SPEC",
                   help="the fixed reference bots (random, the anchor at 0 Elo, is always one; default: "
                        + " ".join(DEFAULT_REFERENCES) + ")")

    p = new("add", "add a bot: an agent spec, a checkpoint, or py:MODULE:FACTORY (runs that module's code)", cmd_add)
    p.add_argument("spec", metavar="SPEC", help="the bot's agent spec (see below)")
    p.add_argument("--name", default=None, help="its name in the ladder (default: the spec)")

    p = new("play", "play blocks chosen by the pairing until a target is reached", cmd_play)
    p.add_argument("--until-games", type=int, default=None, metavar="N",
                   help="until the ladder holds N games (required: the cap)")
    p.add_argument("--until-ci", type=float, default=None, metavar="ELO",
                   help="stop sooner, once every bot's 95%% interval is at most ±ELO (looked at between rounds)")
    p.add_argument("--bot", default=None, metavar="NAME",
                   help="place this bot (a name or spec of the ladder): every new block holds it, and --until-ci "
                        "looks at its interval against the ladder as it stands only (docs/ladder.md)")
    jobs(p)

    p = new("test", "a sequential test of NEW against BASE on paired games", cmd_test)
    p.add_argument("new", metavar="NEW", help="a bot of the ladder (its name or spec)")
    p.add_argument("base", metavar="BASE", help="a bot of the ladder (its name or spec)")
    p.add_argument("--elo0", type=float, default=None, help="H0: NEW is at most this many Elo better (default 0)")
    p.add_argument("--elo1", type=float, default=None, help="H1: NEW is at least this many Elo better (default 10)")
    p.add_argument("--points0", type=float, default=None,
                   help="test the points margin instead: H0, at most this many points a game (default 0)")
    p.add_argument("--points1", type=float, default=None, help="H1: at least this many points a game (default 1)")
    p.add_argument("--alpha", type=float, default=0.05, help="false positive rate")
    p.add_argument("--beta", type=float, default=0.05, help="false negative rate")
    p.add_argument("--max-games", type=int, default=1000, help="stop undecided after this many games")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    jobs(p)

    p = new("show", "the leaderboard, refitted from every stored game", cmd_show)
    p.add_argument("--html", default=None, metavar="FILE", help="also write one self-contained offline page")
    p.add_argument("--json", action="store_true", help="print the leaderboard as JSON")

    p = new("verify", "re-play a seeded sample of stored games and check every score (exit 1 on a mismatch)",
            cmd_verify)
    p.add_argument("--sample", type=int, default=200, metavar="N", help="games to re-play")
    jobs(p, ray=False)

    new("export", "every stored game as one JSON line", cmd_export)


__all__ = ["add_parser"]
