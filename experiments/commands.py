"""The training commands: their table (`commands()`: `COMMANDS`, name -> module, function, default config, help, and
one command for each learner registered in `agents.learners`, run by `experiments.selfplay_command`), each one's
settings (`schema`), the run-level arguments every command function takes (`RunArgs`) and the run's saved record
(`config.json`: `save_run_config`, `saved_run`). The CLI (`experiments.train`) reads them; so does every module
that needs to know a run's command (e.g. `experiments.ppo.evaluate`), which therefore never imports the CLI.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import Schema, atomic_write_json


@dataclass
class RunArgs:
    """The run-level settings of one training command (everything else is in `config`: the command's complete
    config, validated against its schema by `experiments.train`, every setting present but [ppo]'s optional ones)."""

    algo: str
    config: dict[str, Any]
    seed: int = 0
    run: Path = Path("runs")
    resume: bool = False
    device: str = "cpu"
    max_minutes: float = 0.0
    progress: bool = True
    command: str = ""  # the command line that started this process, arguments included (the models record it)

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"


def save_run_config(args: RunArgs) -> None:
    """`run/config.json`: the command, config and seed a `--resume` continues with."""
    atomic_write_json(args.run / "config.json", {"algo": args.algo, "seed": args.seed, "config": args.config})


CONFIGS = Path(__file__).resolve().parent / "configs"
#: name -> (module, function, default config file in experiments/configs/ (None: the module's `function(argv)`
#: parses its own flags; "": none, every setting at its default), one-line help). The self-play learners are not
#: here: each is its line in `agents.learners` (`commands()`).
COMMANDS: dict[str, tuple[str, str, str | None, str]] = {
    "solo-ppo": (".flat_ppo", "solo", "solo_ppo.toml", "MaskablePPO on the solo rules"),
    "versus-ppo": (".flat_ppo", "versus", "versus_random_ppo.toml",
                   "MaskablePPO against a fixed opponent (random or greedy)"),
    "selfplay-ppo": (".flat_ppo", "selfplay", "selfplay_ppo.toml",
                     "MaskablePPO against a pool of its past selves and the heuristics"),
    "tune-greedy": (".tune_greedy", "run", "tune_greedy.toml",
                    "compare / hill-climb the greedy planner's weights in numba"),
    "rllib-ppo": (".rllib_selfplay", "run", "rllib_ppo.toml",
                  "self-play PPO with Ray RLlib on the AEC env (needs .[distributed])"),
}
#: The module and function of every learner's command (`agents.learners`).
LEARNER_COMMAND = (".selfplay_command", "run")
#: Commands renamed since a run could be saved: the name a run folder's config.json records -> today's (read only).
_SAVED_BEFORE_RENAME: dict[str, str] = {"ntuple": "learned"}


def learners() -> tuple[str, ...]:
    """The registered learners' names (`agents.learners`, the shipped ones among them): each is a command."""
    from agents.learners import LEARNERS

    from . import evaluators  # noqa: F401  (registers the shipped learners)

    return tuple(LEARNERS)


def commands() -> dict[str, tuple[str, str, str | None, str]]:
    """Every training command: `COMMANDS`, then each registered learner's (`LEARNER_COMMAND`, its default config
    file or "", its help), read when called (a learner registered since is one)."""
    from agents.learners import LEARNERS

    out = dict(COMMANDS)
    for name in learners():
        kind = LEARNERS[name]
        out[name] = (*LEARNER_COMMAND, kind.config or "", kind.help)
    return out


def schema(algo: str) -> Schema | None:
    """The command's settings (a learner's, `selfplay_command.schema`; else its module's `SCHEMAS[algo]`; None: a
    command that names none, its config unchecked)."""
    module = importlib.import_module(commands()[algo][0], __package__)
    if algo in learners():
        return module.schema(algo)
    return getattr(module, "SCHEMAS", {}).get(algo)


def saved_run(run: Path) -> dict | None:
    """The run's config.json record (command, seed, config), or None: no run there. Runs saved by earlier versions,
    before the commands were renamed, read under today's names: `ntuple` is `learned`, and an MLP run saved as
    `learned` is `mlp` (the run folder's file is read, never rewritten)."""
    path = run / "config.json"
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    old = saved.get("algo")
    if old == "learned" and isinstance(saved.get("config"), dict) and "selfplay" in saved["config"] \
            and "network" in saved["config"]:  # the MLP's trainer was `learned` until the rename
        saved["algo"] = "mlp"
    saved["algo"] = _SAVED_BEFORE_RENAME.get(saved["algo"], saved["algo"])
    return saved
