"""`distill-mcts`: distil the MCTS agent into the plan-choosing policy (expert iteration's first step).

Why: PPO on the plan choice (`plan-ppo`) learns to match the greedy agent but its win/loss signal is too weak to
find the few decisions where greedy's heuristic is wrong. The MCTS agent (`agents.mcts`) searches exactly the
same candidate plans (the greedy planner's best) and beats greedy, so its choices are good labels for the same
observation (`agents.plan_choice.plan_observation`).

    # play [collect] games MCTS vs greedy, record each search, fit a MaskablePPO policy to its choices
    python -m experiments.train distill-mcts --set collect.games=200 --set collect.jobs=2 --run runs/bc
    # reuse recorded searches instead of playing: --set 'collect.data=["runs/bc/mcts.npz"]'
    # then continue with PPO against greedy
    python -m experiments.train plan-ppo --set run.init=runs/bc/model.pt

Collecting shows a progress bar over games; game i uses seed `[collect] seed + i` (MCTS in seat i % 2), so a
data set is reproducible from its settings. The fit prints the held-out agreement with the search and, with
`[fit] eval_games`, the win rate against greedy of the fitted policy (`experiments.evaluate`). Writes
`mcts.npz` (the searches), `model.pt` + `model.json` (the fitted policy, weights-only) and `summary.json` into the
run folder, atomically.
"""
from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from .common import ConfigError, atomic_write_bytes, atomic_write_json, section
from .runner import RunArgs, export_policy

COLLECT = {"games": 200, "iterations": 200, "seed": 0, "jobs": 1, "data": []}
FIT = {"epochs": 20, "batch_size": 512, "lr": 1e-3, "tau": 0.0, "val_fraction": 0.1,
       "eval_games": 0, "engine_threads": 1, "init": ""}


def _play(task: tuple[int, int]) -> dict[str, np.ndarray]:
    """One 2-player Side A game, MCTS (seat seed % 2, `iterations` per turn) vs greedy: for each MCTS turn the
    plan observation, its mask and the search's mean reward and visits per candidate."""
    seed, iterations = task
    from agents.base import private_copy
    from agents.greedy import DEFAULT_WEIGHTS, MAX_PLAN, GreedyAgent
    from agents.mcts import MCTSAgent
    from agents.plan_choice import PLAN_BEAM, PLAN_CHOICES, PLAN_OBS_SIZE, plan_observation
    from harmonies_env.game import Game
    from harmonies_env.view import PlayerView

    game = Game(2, "A", False, seed=seed)
    seat = seed % 2
    mcts = MCTSAgent(iterations=iterations, seed=seed, candidates=PLAN_CHOICES, beam=PLAN_BEAM)
    greedy = GreedyAgent()
    plans = np.zeros((PLAN_CHOICES, MAX_PLAN), dtype=np.int64)
    lens = np.zeros(PLAN_CHOICES, dtype=np.int64)
    values = np.zeros(PLAN_CHOICES, dtype=np.float64)
    rows: dict[str, list] = {"obs": [], "mask": [], "means": [], "visits": []}
    while not game.is_over:
        p = game.current_player
        if p != seat:
            game.step(greedy.act(PlayerView(game, p)))
            continue
        view = PlayerView(game, p)  # views are snapshots: one per decision
        obs = np.zeros(PLAN_OBS_SIZE, dtype=np.float32)
        mask = np.zeros(PLAN_CHOICES, dtype=bool)
        n = plan_observation(private_copy(view, 0).state.copy(), DEFAULT_WEIGHTS, PLAN_BEAM, plans, lens, values, obs,
                             mask)
        cands, visits, means = mcts.search(view)
        if len(cands) != n or any(cands[k] != plans[k, : lens[k]].tolist() for k in range(n)):
            raise RuntimeError("the search's candidates differ from the observation's")  # same planner, same copy
        j = int(np.argmax(np.where(visits > 0, means, -1.0))) if visits.sum() else 0
        if n > 1:
            full_means = np.zeros(PLAN_CHOICES, dtype=np.float32)
            full_visits = np.zeros(PLAN_CHOICES, dtype=np.int32)
            full_means[:n] = means
            full_visits[:n] = visits
            for key, v in (("obs", obs), ("mask", mask), ("means", full_means), ("visits", full_visits)):
                rows[key].append(v)
        for a in cands[j]:
            game.step(a)
    s = game.scores()
    out = {k: np.array(v) for k, v in rows.items()}
    out["result"] = np.array([s[seat]["total"], s[1 - seat]["total"]])
    return out


def collect(c: dict[str, Any], out: Path, max_minutes: float = 0.0, progress: bool = True) -> dict[str, Any]:
    """Play c["games"] MCTS-vs-greedy games (c["jobs"] processes) and write their searches to `out` (.npz)."""
    from multiprocessing import get_context

    from tqdm import tqdm

    tasks = [(int(c["seed"]) + i, int(c["iterations"])) for i in range(int(c["games"]))]
    parts: list[dict[str, np.ndarray]] = []
    t0 = time.time()
    _play((int(c["seed"]), 2))  # compile the kernels once here; forked workers inherit them
    late = False
    with get_context("fork").Pool(max(1, int(c["jobs"]))) as pool:  # games come back in order: a prefix is
        for r in tqdm(pool.imap(_play, tasks), total=len(tasks), desc="mcts games",  # reproducible
                      disable=not progress):
            parts.append(r)
            if max_minutes and time.time() - t0 > 60 * max_minutes:
                late = True
                pool.terminate()
                break
    if late:
        print(f"--max-minutes reached: kept the first {len(parts)} games", flush=True)
    data = {k: np.concatenate([p[k] for p in parts if len(p[k])]) for k in ("obs", "mask", "means", "visits")}
    results = np.array([p["result"] for p in parts])
    save_npz(out, **data, results=results, seeds=np.array([t[0] for t in tasks[: len(parts)]]))
    won = (results[:, 0] > results[:, 1]) + 0.5 * (results[:, 0] == results[:, 1])
    summary = {"games": len(parts), "iterations": int(c["iterations"]), "decisions": int(len(data["obs"])),
               "wall_s": round(time.time() - t0, 1), "mcts_win_rate": float(won.mean()),
               "mcts_mean": float(results[:, 0].mean()), "greedy_mean": float(results[:, 1].mean()), "out": str(out)}
    print(json.dumps(summary), flush=True)
    return summary


def save_npz(path: Path, **arrays: np.ndarray) -> None:
    """np.savez_compressed, written atomically."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def load_searches(paths: list[Path]) -> dict[str, np.ndarray]:
    """The recorded searches of one or more .npz files from `collect`, concatenated."""
    parts = [np.load(p) for p in paths]
    return {k: np.concatenate([p[k] for p in parts]) for k in ("obs", "mask", "means", "visits")}


def fit(f: dict[str, Any], d: dict[str, np.ndarray], seed: int, ppo: dict[str, Any],
        device: str = "cpu") -> tuple[Any, dict[str, Any]]:
    """Fit a MaskablePPO plan-choice policy to the searches `d` (cross-entropy); (model, summary).

    The policy is built from `ppo` (the [ppo] section, as `plan-ppo` uses it), so `plan-ppo` can continue it
    with `[run] init`; `[fit] init` starts from a checkpoint's weights instead (its network must be the [ppo] one)."""
    import torch

    from agents.plan_env import PlanChoiceVecEnv

    from .evaluate import EVAL_SEED, evaluate
    from .runner import init_from, make_ppo

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    obs, mask, means, visits = d["obs"], d["mask"], d["means"], d["visits"]
    ok = mask & (visits > 0)
    label = np.argmax(np.where(ok, means, -1.0), axis=1)
    # soft target: the search's mean rewards through a softmax of temperature tau (0: the search's choice only)
    if f["tau"] > 0:
        z = np.where(ok, (means - means.max(axis=1, keepdims=True)) / f["tau"], -np.inf)
        target = np.exp(z)
        target /= target.sum(axis=1, keepdims=True)
    else:
        target = np.eye(mask.shape[1], dtype=np.float64)[label]
    n = len(obs)
    order = rng.permutation(n)
    n_val = max(1, int(n * f["val_fraction"]))
    val, tr = order[:n_val], order[n_val:]
    env = PlanChoiceVecEnv(8, seed=0)
    model = make_ppo(env, ppo, seed, device, None)
    if f["init"]:  # weights only (a .pt written by the training commands, or an SB3 zip read without unpickling)
        init_from(model, f["init"])
    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=f["lr"])
    obs_t = torch.as_tensor(obs, device=policy.device)
    target_t = torch.as_tensor(target, dtype=torch.float32, device=policy.device)

    def logits(idx: np.ndarray) -> torch.Tensor:
        dist = policy.get_distribution(obs_t[idx], action_masks=mask[idx])
        return dist.distribution.logits

    def agreement(idx: np.ndarray) -> float:
        with torch.no_grad():
            return float((logits(idx).argmax(dim=1).cpu().numpy() == label[idx]).mean())

    base = float((label[val] == 0).mean())  # how often the search agrees with greedy's own choice
    print(f"{n} decisions ({len(tr)} train, {n_val} held out); the search picks greedy's plan in {base:.3f} of them")
    bs = int(f["batch_size"])
    for epoch in range(int(f["epochs"])):
        policy.train()
        perm = rng.permutation(tr)
        total = 0.0
        for k in range(0, len(perm), bs):
            idx = perm[k: k + bs]
            logp = torch.log_softmax(logits(idx), dim=1)
            loss = -(target_t[idx] * torch.where(target_t[idx] > 0, logp, torch.zeros_like(logp))).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        policy.eval()
        print(f"epoch {epoch + 1}: loss {total / max(len(tr), 1):.4f}, agreement train "
              f"{agreement(tr[:20000]):.3f} held out {agreement(val):.3f}", flush=True)
    summary: dict[str, Any] = {"decisions": n, "held_out_agreement": agreement(val), "greedy_agreement": base}
    if f["eval_games"]:
        venv = PlanChoiceVecEnv(int(f["eval_games"]), num_threads=int(f["engine_threads"]))
        summary["eval_vs_greedy"] = evaluate(model, venv, EVAL_SEED)
    return model, summary


def run(args: RunArgs) -> dict[str, Any]:
    """`distill-mcts`: collect searches (unless [collect] data names recorded ones), fit, save, summarise."""
    c = section(args.config, "collect", COLLECT)
    f = section(args.config, "fit", FIT)
    if not isinstance(c["data"], list):
        raise ConfigError(f"[collect] data must be a list of .npz files, got {c['data']!r}")
    summary: dict[str, Any] = {"algo": args.algo, "seed": args.seed}
    if c["data"]:
        paths = [Path(p).expanduser() for p in c["data"]]
    else:
        paths = [args.run / "mcts.npz"]
        summary["collect"] = collect(c, paths[0], args.max_minutes, args.progress)
    model, fitted = fit(f, load_searches(paths), args.seed, args.config.get("ppo", {}), args.resolved_device())
    model_path = export_policy(model, args.run / "model.pt")  # weights-only: model.pt + model.json
    summary.update(fitted, model=str(model_path), data=[str(p) for p in paths])
    atomic_write_json(args.run / "summary.json", summary)
    print(json.dumps(summary), flush=True)
    return summary
