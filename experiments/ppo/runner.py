"""The one MaskablePPO set-up and training loop (`train_ppo`) that the PPO commands (solo-ppo, versus-ppo,
selfplay-ppo: `experiments.flat_ppo`) plug their environments into.

A run folder holds `config.json` (the command, its resolved config and seed: what `--resume` continues),
`checkpoints/` (atomic checkpoints, the newest two kept; `experiments.ppo.checkpoint`), `eval.csv` (periodic
evaluations, rewritten atomically), `tb/` (TensorBoard), `model.pt` + `model.json` (the final policy) and
`summary.json`.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..commands import RunArgs
from ..common import ConfigError, Setting, atomic_write_json, latest_checkpoint, remove_temp_files
from .checkpoint import export_policy, init_from, restore_checkpoint

#: The [run] section: how long to train and how often to evaluate / checkpoint (steps), torch threads.
RUN_DEFAULTS: dict[str, Any] = {"timesteps": 100_000, "eval_every": 50_000, "eval_episodes": 64,
                                "checkpoint_every": 50_000, "keep_checkpoints": 2, "threads": 1,
                                "engine_threads": 1, "init": ""}


#: The [ppo] section: MaskablePPO's own keyword arguments (passed on only when set: the library's defaults hold
#: otherwise) and `net_arch` / `activation` (policy_kwargs; `make_ppo`).
PPO_SETTINGS: dict[str, Any] = {
    **{k: Setting(like=0.0) for k in ("learning_rate", "gamma", "gae_lambda", "clip_range", "clip_range_vf",
                                      "ent_coef", "vf_coef", "max_grad_norm", "target_kl", "n_steps", "batch_size",
                                      "n_epochs", "stats_window_size")},
    "normalize_advantage": Setting(like=True), "net_arch": Setting(like=[64]), "activation": Setting(like="tanh")}


def make_ppo(venv: Any, ppo: dict[str, Any], seed: int, device: str, tb: str | None) -> Any:
    """The one MaskablePPO set-up: [ppo] keys are MaskablePPO's own keyword arguments, except `net_arch`
    (hidden layer sizes, for both heads) and `activation` ("tanh" / "relu"), which go to policy_kwargs."""
    import torch
    from sb3_contrib import MaskablePPO

    kw = dict(ppo)
    policy_kwargs: dict[str, Any] = {}
    if "net_arch" in kw:
        policy_kwargs["net_arch"] = list(kw.pop("net_arch"))
    if "activation" in kw:
        act = kw.pop("activation")
        acts = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
        if act not in acts:
            raise ConfigError(f"[ppo] activation must be one of {', '.join(acts)}, got {act!r}")
        policy_kwargs["activation_fn"] = acts[act]
    try:
        return MaskablePPO("MlpPolicy", venv, seed=seed, device=device, verbose=0, tensorboard_log=tb,
                           policy_kwargs=policy_kwargs, **kw)
    except TypeError as e:
        raise ConfigError(f"config section [ppo]: {e}") from None


@dataclass
class PPOTask:
    """How a PPO command differs from the others.

    make_env(seed) -> the training VecEnv whose row r plays games from base seed `seed` + r;
    evaluation: the match the policy is evaluated in (`experiments.ppo.evaluate.EvalMatch`; None: none);
    state() / restore(state): extra resumable state (e.g. the self-play pool); hooks: periodic (every,
    fn(model, timesteps)).
    """

    name: str
    make_env: Callable[[int], Any]
    evaluation: Any = None
    state: Callable[[], dict] | None = None
    restore: Callable[[dict], None] | None = None
    hooks: list[tuple[int, Callable[[Any, int], None]]] = field(default_factory=list)


def train_ppo(args: RunArgs, task: PPOTask) -> dict[str, Any]:
    """Train (or resume) a MaskablePPO run; returns the summary also written to `run/summary.json`.

    Checkpoints are taken between rollouts (`RunCallback`), so a resumed run on the batched engine continues
    bit-identically: same weights, same evaluation rows (but their wall/CPU minutes) as the run never stopped.
    `--resume` on a run folder without a complete checkpoint (killed before its first) starts it from scratch."""
    import torch
    from stable_baselines3.common.utils import set_random_seed

    from .callbacks import ProgressBar, RunCallback, StopTraining
    from .evaluate import EVAL_SEED, evaluate, train_seed

    cfg = args.config["run"]
    torch.set_num_threads(int(cfg["threads"]))
    set_random_seed(args.seed)
    run = args.run
    tb = str(run / "tb")
    device = args.resolved_device()
    if args.resume:  # what killed writes left behind
        for folder in (run / "checkpoints", run / "pool", run):  # pool/: the self-play opponents' exports
            remove_temp_files(folder)
    ck = latest_checkpoint(run / "checkpoints") if args.resume else None
    if args.resume and ck is None:
        print(f"--resume: no complete checkpoint in {run / 'checkpoints'} (killed before its first): "
              "starting the run from scratch", flush=True)
    if ck and ck[0].suffix != ".pt":
        raise SystemExit(f"--resume: {ck[0]} is a Stable-Baselines3 zip from an older version of this code; "
                         "resuming reads only weights-only .pt checkpoints (start the run again)")
    state = ck[1]["state"] if ck else {}
    if ck and task.restore is not None:
        task.restore(state)
    start = int(ck[1]["timesteps"]) if ck else 0
    venv = task.make_env(train_seed(args.seed))  # built as the run's first env was: a checkpoint's games go into it
    model = make_ppo(venv, args.config.get("ppo", {}), args.seed, device, tb)
    venv.seed(train_seed(args.seed))  # the model's own seeding reseeded the env: the run's games again
    if ck:
        why = restore_checkpoint(model, ck[0])  # last: the generators are the checkpoint's when learn() starts
        if why:
            venv.seed(train_seed(args.seed) + start)  # new games, not the run's first ones again
            print(f"note: {why}: the run goes on with new games, not bit-identical to the run never stopped "
                  "(docs/training.md)", flush=True)
        print(f"resumed {args.algo} from {ck[0]} at {start} steps", flush=True)
    elif cfg["init"]:
        init = Path(cfg["init"]).expanduser()
        init_from(model, init)
        print(f"initialised from {init}", flush=True)

    def run_eval(m: Any) -> dict:
        return evaluate(m, task.evaluation, EVAL_SEED)

    cb = RunCallback(run, run_eval if task.evaluation is not None else None, int(cfg["eval_every"]),
                     int(cfg["checkpoint_every"]), state=task.state, evals=state.get("evals", []),
                     keep=int(cfg["keep_checkpoints"]), hooks=task.hooks, max_minutes=args.max_minutes,
                     elapsed_minutes=float(state.get("minutes", 0.0)),
                     elapsed_cpu_minutes=float(state.get("cpu_minutes", 0.0)))
    remaining = int(cfg["timesteps"]) - start
    bar = ProgressBar(remaining, task.name, disable=not args.progress)
    t0 = time.perf_counter()
    if remaining > 0:
        try:
            model.learn(total_timesteps=remaining, reset_num_timesteps=not ck and not cfg["init"],
                        callback=[cb, bar], tb_log_name=task.name)
        except StopTraining:  # the time limit, met between two rollouts (where checkpoints are exact)
            cb.on_training_end()
            bar.on_training_end()
    else:  # nothing left to train (a finished run resumed): evaluate and save all the same
        cb.init_callback(model)
    wall = time.perf_counter() - t0
    steps = int(model.num_timesteps) - start
    # the checkpoint first: an evaluation off the eval_every grid (at the end, or at a time stop) is not carried
    # into it, so a resumed or extended run's eval.csv is the unstopped run's
    cb.checkpoint()
    if task.evaluation is not None and (not cb.evals or cb.evals[-1]["timesteps"] != model.num_timesteps):
        cb.run_eval()
    model_path = export_policy(model, run / "model.pt")
    summary = {"algo": args.algo, "timesteps": int(model.num_timesteps), "this_process_steps": steps,
               "wall_s": round(wall, 1), "steps_per_s": round(steps / max(wall, 1e-9), 1),
               "seconds": {k: round(v, 1) for k, v in cb.seconds.items()},
               "stopped_by_time": cb.stopped_by_time, "minutes": round(cb.minutes(), 2),
               "cpu_minutes": round(cb.cpu_minutes(), 2),
               "final_eval": cb.evals[-1] if cb.evals else None, "model": str(model_path),
               "seed": args.seed, **(task.state() if task.state else {})}
    atomic_write_json(run / "summary.json", summary)
    print(json.dumps(summary), flush=True)
    return summary
