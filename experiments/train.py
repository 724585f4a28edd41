"""The one training entry point: `python -m experiments.train ALGO [--config FILE] [run-level flags]`.

Hyperparameters live in TOML config files (`experiments/configs/`); the command line carries only run-level
settings and `--set section.key=value` overrides of config keys:

    python -m experiments.train solo-ppo --config experiments/configs/solo_ppo.toml --max-minutes 10
    python -m experiments.train versus-ppo --config experiments/configs/versus_greedy_ppo.toml --seed 1
    python -m experiments.train selfplay-ppo --run runs/sp --set run.timesteps=2000000
    python -m experiments.train selfplay-ppo --run runs/sp --resume          # after a kill, or to extend it
    python -m experiments.train learned --run runs/learned --max-minutes 150   # the n-tuple network (`learned`)
    tensorboard --logdir runs

Without --config the command's default config in `experiments/configs/` is used (`ALGO --help` names it). The
config is validated once, here, against the command's schema (`SCHEMAS` in its module: every section and setting
with its default and kind; `experiments.common.check_config`): an unknown setting or a value of the wrong kind is
refused by name. Every run writes into --run (default `runs/<algo>-s<seed>`): config.json (the command, its
resolved config and seed), atomic checkpoints in checkpoints/ (newest two kept), the evaluations (eval.csv),
tb/, summary.json and the model, weights-only, with its JSON (recording the command
line): model.pt + model.json for the PPO commands and mlp, model.npz + model.json for learned and the other self-play
learners (rllib-ppo: its iter_NNNNN/ checkpoints; tune-greedy: summary.json only). `--resume` continues from the
newest complete checkpoint with the run's saved config (plus any --set), and exports the model again; a self-play
learner's run refuses, in one line naming them, settings that would change how it trains (all but its length, its
evaluation and checkpoint cadence and where its workers run: `experiments.selfplay_config.RESUMABLE`). The same
seed gives the same run (up to torch's own nondeterminism on some hardware). Ctrl-C or SIGTERM stops a run in one
line (exit status 130 / 143): the self-play learners finish the iteration and checkpoint it, the others keep their
last checkpoint; either way `--resume` goes on. `harmonies train ALGO ...` forwards here.

Adding a self-play learner: its evaluator class and one line in the learners' registry (`agents.learners`); it is a
command here by that line (docs/agents.md, "Adding an agent or a learner"). Adding another command: one line in
`experiments.commands.COMMANDS`: name -> (module, function, default config, help), and its schema in the module's
`SCHEMAS`; the function takes a `RunArgs` (run-level flags parsed here, config loaded
and validated) and returns a summary dict. A command whose module parses its own flags registers with default config
None: `function(argv)` then gets every argument after the command's name, unchanged, and returns an exit status.
"""
from __future__ import annotations

import argparse
import importlib
import json
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from harmonies_env.firstrun import say_if_compiling
from harmonies_env.stops import Stopped, exit_status, quiet_exit, stop_message, stop_on_signals

from .commands import CONFIGS, RunArgs, commands, learners, save_run_config, saved_run, schema
from .common import (
    ConfigError,
    apply_overrides,
    check_config,
    latest_checkpoint,
    load_config,
    remove_temp_files,
)

#: How usage lines and error messages name this command when it is run as a module.
PROG = "python -m experiments.train"


def prog() -> str:
    """`harmonies train` when the `harmonies` command forwards here (it sets sys.argv[0] so), else `PROG`."""
    return sys.argv[0] if sys.argv and sys.argv[0].startswith("harmonies ") else PROG


class _DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default once: not when its help already says it, nor an empty one (None, False, [])."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == [] or \
                "default" in (action.help or "").lower():
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog(), description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="algo", metavar="ALGO", required=True)
    learning = learners()
    for name, (_, _, default, help_) in commands().items():
        if default is None:  # listed here; its own parser handles its flags (main forwards before parsing)
            sub.add_parser(name, help=f"{help_} (its own flags: {name} --help)", add_help=False)
            continue
        p = sub.add_parser(name, help=help_, description=help_,
                           formatter_class=_DefaultsHelp)
        where = f"experiments/configs/{default}" if default else "every setting at its default"
        p.add_argument("--config", default=None,
                       help=f"TOML config (default: {where}; with --resume: the run's own)")
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override one config key (TOML value syntax); repeatable")
        p.add_argument("--seed", type=int, default=None, help="seeds games, torch and the trainer (default 0; with "
                       "--resume: the run's own)")
        p.add_argument("--run", default=None, help="run folder (default runs/<algo>-s<seed>)")
        p.add_argument("--resume", action="store_true", help="continue the run in --run from its newest "
                       "complete checkpoint" + (" (with its own settings: a --set or --config that changes how it "
                                                "trains is refused; experiments.selfplay_config.RESUMABLE)"
                                                if name in learning else ""))
        p.add_argument("--max-minutes", type=float, default=0.0,
                       help="stop after this much training wall time, checkpointed there (the PPO commands also "
                       "evaluate and export the model; the self-play learners keep the schedule's evaluations); "
                       "0: no limit")
        if name not in learning:  # the self-play learners run numba and small torch networks on the CPU
            p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, auto")
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
        if name in learning:  # one pool (experiments.selfplay_workers.WorkerPool), processes by default
            p.add_argument("--workers", type=int, default=None, metavar="N",
                           help="self-play workers, each with its own selfplay.games games (--set "
                           "selfplay.workers=N): local processes, or Ray actors with --ray; 0: in this process")
            p.add_argument("--ray", default=None, metavar="ADDRESS",
                           help="run the --workers as Ray actors: local (a Ray instance of this machine's cores), "
                           "auto or HOST:PORT of a running cluster (--set run.ray=...)")
    return ap


def resolve(ns: argparse.Namespace) -> RunArgs:
    """The run-level settings and the config of a parsed command line (the saved ones with --resume), the config
    validated against the command's schema."""
    run = Path(ns.run) if ns.run else Path("runs") / f"{ns.algo}-s{0 if ns.seed is None else ns.seed}"
    run = run.expanduser().resolve()  # absolute: resumes work from any working directory
    spec = schema(ns.algo)
    if ns.resume:
        saved = saved_run(run)
        if saved is None:
            raise SystemExit(f"--resume: {run} holds no run (no config.json)")
        if saved["algo"] != ns.algo:
            raise SystemExit(f"--resume: {run} is a {saved['algo']} run, not {ns.algo}")
        if ns.seed is not None and ns.seed != saved["seed"]:
            raise SystemExit(f"--resume: the run's seed is {saved['seed']}, not {ns.seed}")
        # settings added since the run was made read as their defaults
        before = check_config(saved["config"], spec, str(run / "config.json")) if spec else saved["config"]
        config = load_config(ns.config, spec) if ns.config is not None else before
        seed = int(saved["seed"])
    else:
        if latest_checkpoint(run / "checkpoints") is not None:
            raise SystemExit(f"{run} already holds a run: pass --resume to continue it, or another --run")
        default = commands()[ns.algo][2]
        if ns.config or default:
            config = load_config(ns.config if ns.config else CONFIGS / default, spec)
        else:  # a learner without a config file of its own: every setting at its default
            config = check_config({}, spec, ns.algo)
        seed = 0 if ns.seed is None else ns.seed
    overrides = list(ns.overrides)
    if getattr(ns, "workers", None) is not None:
        overrides.append(f"selfplay.workers={ns.workers}")
    if getattr(ns, "ray", None) is not None:
        from agents.distributed import check_address

        try:
            check_address(ns.ray)
        except ValueError as e:
            raise SystemExit(str(e)) from None
        overrides.append(f"run.ray={json.dumps(ns.ray)}")  # "" is local processes, so "local" is kept
    config = apply_overrides(config, overrides, spec)
    if ns.resume and ns.algo in learners():
        from .selfplay_config import changed_on_resume

        changed = changed_on_resume(before, config)
        if changed:
            raise SystemExit(f"--resume: {run} was trained with other settings, which would change how it goes on: "
                             f"{', '.join(changed)}; resume with its own, or start another --run")
    if ns.max_minutes < 0 or ns.max_minutes != ns.max_minutes:
        raise SystemExit(f"--max-minutes must be >= 0, got {ns.max_minutes}")
    return RunArgs(algo=ns.algo, config=config, seed=seed, run=run, resume=ns.resume,
                   device=getattr(ns, "device", "cpu"), max_minutes=ns.max_minutes, progress=not ns.no_progress)


def command_line(argv: list[str]) -> str:
    """The command as typed, arguments included (`harmonies train ...` or `python -m experiments.train ...`)."""
    return " ".join([prog(), *map(shlex.quote, argv)])


def _run_as_found(run: Path) -> tuple[bool, bytes | None, Any]:
    """What a refusal must leave as it is: whether the run folder existed, its config.json, its newest checkpoint."""
    config = run / "config.json"
    return run.exists(), config.read_bytes() if config.is_file() else None, latest_checkpoint(run / "checkpoints")


def _leave_as_found(run: Path, before: tuple[bool, bytes | None, Any]) -> None:
    """After a refused command (a config the command itself refused, e.g. `--resume --workers 3` of a run with 2):
    its config.json as it was (or gone), and a run folder it made removed if nothing else was written there. Not
    once a new checkpoint exists (the run went on with that config)."""
    from harmonies_env.io import atomic_write_bytes

    existed, config, newest = before
    if latest_checkpoint(run / "checkpoints") != newest:
        return
    if config is not None:
        atomic_write_bytes(run / "config.json", config)
        return
    (run / "config.json").unlink(missing_ok=True)
    if not existed and run.is_dir() and not any(p.is_file() for p in run.rglob("*")):
        import shutil

        shutil.rmtree(run, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default: sys.argv[1:]), run the command; 0 on success. A bad setting, config file or run
    folder raises SystemExit with one line naming it (`cli()` and `harmonies train` print it, exit status 2)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # no command: the list of commands, not an error
        build_parser().print_help()
        return 0
    table = commands()
    if argv[0] in table and table[argv[0]][2] is None:  # a command that parses its own flags
        module, function, _, _ = table[argv[0]]
        return int(getattr(importlib.import_module(module, __package__), function)(argv[1:]) or 0)
    ns = build_parser().parse_args(argv)
    args = before = None
    try:
        args = resolve(ns)
        before = _run_as_found(args.run)
        args.command = command_line(argv)
        module, function, _, _ = table[args.algo]
        fn = getattr(importlib.import_module(module, __package__), function)
        args.run.mkdir(parents=True, exist_ok=True)
        say_if_compiling()  # a first run's 30 s compile, said on a terminal
        removed = remove_temp_files(args.run, recursive=True)  # what writes killed by SIGKILL left
        if removed:
            print(f"removed {removed} unfinished write(s) a killed run left in {args.run}", file=sys.stderr)
        save_run_config(args)
        fn(args)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: `cli` prints one line; say what --resume goes on from
        if args is None or getattr(e, "detail", ""):
            raise
        ck = latest_checkpoint(args.run / "checkpoints")
        kept = (f"its newest checkpoint, {ck[0].name}, is kept: --resume goes on from it" if ck is not None
                else "no checkpoint yet: the run starts afresh")
        raise Stopped(e.signum if isinstance(e, Stopped) else signal.SIGINT, kept) from None
    except ConfigError as e:  # a bad config: say which, no traceback, and leave the run folder as it was
        if before is not None:
            _leave_as_found(args.run, before)
        raise SystemExit(f"{ns.algo}: {e}") from None
    except OSError as e:  # an unusable --run or a missing file: say which, no traceback
        raise SystemExit(f"{ns.algo}: {type(e).__name__}: {e}") from None
    finally:
        if args is not None:  # on every exit: a stop's interrupted writes, a crash's (their writers are gone)
            remove_temp_files(args.run, recursive=True)
    return 0


def cli(argv: list[str] | None = None) -> int:
    """`main` for the shell: a refusal raised as SystemExit("message") is one line on stderr and exit status 2
    (as `harmonies train` prints it), not Python's bare message and status 1; Ctrl-C or SIGTERM is one line saying
    what --resume goes on from, exit status 130 / 143 (`harmonies_env.stops`)."""
    try:
        with stop_on_signals():
            return main(argv)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            raise
        print(f"{prog()}: {e.code}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: one line (what was kept), exit 130 / 143
        print(stop_message(prog(), e), file=sys.stderr)
        quiet_exit()  # and nothing after it (a stop inside numba's compiler leaves noisy finalizers)
        return exit_status(e)


if __name__ == "__main__":
    sys.exit(cli())
