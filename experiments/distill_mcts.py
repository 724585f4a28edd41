"""Distil the MCTS agent into the plan-choosing policy (expert iteration's first step), then fine-tune with PPO.

Why: self-play PPO on the plan choice (`experiments/train_plan_ppo.py`) learns to match the greedy agent but
its win/loss signal is too weak to find the few decisions where greedy's heuristic is wrong. The MCTS agent
(`agents.mcts`) searches exactly the same candidate plans (the greedy planner's 8 best) and beats greedy, so
its choices are good labels for the same observation (`agents.plan_choice.plan_observation`).

    # 1. play games MCTS vs greedy; at each MCTS turn record the observation and the search's result
    PYTHONPATH=. python experiments/distill_mcts.py collect --games 200 --iterations 200 --jobs 2 --out mcts.npz
    # 2. fit a MaskablePPO policy to the search's choices (cross-entropy), save it as a checkpoint
    PYTHONPATH=. python experiments/distill_mcts.py train --data mcts.npz --out checkpoints/plan_bc.zip
    # 3. optionally continue with PPO against greedy
    PYTHONPATH=. python experiments/train_plan_ppo.py --resume checkpoints/plan_bc.zip --timesteps 500000

`collect` shows a progress bar over games; game i uses seed `--seed + i` (learner seat i % 2), so a data set
is reproducible from its arguments. `train` prints the held-out agreement with the search and, with
`--eval-games`, the win rate against greedy of the fitted policy; its last line is a JSON summary.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


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
        n = plan_observation(private_copy(view, 0).state, DEFAULT_WEIGHTS, PLAN_BEAM, plans, lens, values, obs,
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


def collect(args: argparse.Namespace) -> dict[str, Any]:
    from multiprocessing import get_context

    from tqdm import tqdm

    tasks = [(args.seed + i, args.iterations) for i in range(args.games)]
    parts: list[dict[str, np.ndarray]] = []
    t0 = time.time()
    _play((args.seed, 2))  # compile the kernels once here; forked workers inherit them
    late = False
    with get_context("fork").Pool(max(1, args.jobs)) as pool:  # games come back in order: a prefix is reproducible
        for r in tqdm(pool.imap(_play, tasks), total=len(tasks), desc="mcts games", disable=args.no_progress):
            parts.append(r)
            if args.max_minutes and time.time() - t0 > 60 * args.max_minutes:
                late = True
                pool.terminate()
                break
    if late:
        print(f"--max-minutes reached: kept the first {len(parts)} games", flush=True)
    data = {k: np.concatenate([p[k] for p in parts if len(p[k])]) for k in ("obs", "mask", "means", "visits")}
    results = np.array([p["result"] for p in parts])
    np.savez_compressed(args.out, **data, results=results, seeds=np.array([t[0] for t in tasks[: len(parts)]]))
    won = (results[:, 0] > results[:, 1]) + 0.5 * (results[:, 0] == results[:, 1])
    summary = {"games": len(parts), "iterations": args.iterations, "decisions": int(len(data["obs"])),
               "wall_s": round(time.time() - t0, 1), "mcts_win_rate": float(won.mean()),
               "mcts_mean": float(results[:, 0].mean()), "greedy_mean": float(results[:, 1].mean()), "out": args.out}
    print(json.dumps(summary), flush=True)
    return summary


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from sb3_contrib import MaskablePPO

    from agents.plan_env import PlanChoiceVecEnv
    from experiments.train_plan_ppo import evaluate

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    d = np.load(args.data)
    obs, mask, means, visits = d["obs"], d["mask"], d["means"], d["visits"]
    ok = mask & (visits > 0)
    label = np.argmax(np.where(ok, means, -1.0), axis=1)
    # soft target: the search's mean rewards through a softmax of temperature --tau (0: the search's choice only)
    if args.tau > 0:
        z = np.where(ok, (means - means.max(axis=1, keepdims=True)) / args.tau, -np.inf)
        target = np.exp(z)
        target /= target.sum(axis=1, keepdims=True)
    else:
        target = np.eye(mask.shape[1], dtype=np.float64)[label]
    n = len(obs)
    order = rng.permutation(n)
    n_val = max(1, int(n * args.val_fraction))
    val, tr = order[:n_val], order[n_val:]
    env = PlanChoiceVecEnv(8, seed=0)
    if args.init:
        model = MaskablePPO.load(args.init, env=env, device="cpu")
    else:
        model = MaskablePPO("MlpPolicy", env, learning_rate=3e-4, n_steps=32, batch_size=1024, n_epochs=5, gamma=1.0,
                            ent_coef=0.01, seed=args.seed, verbose=0, device="cpu",
                            policy_kwargs={"net_arch": list(args.net)})
    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    obs_t = torch.as_tensor(obs)
    target_t = torch.as_tensor(target, dtype=torch.float32)

    def logits(idx: np.ndarray) -> torch.Tensor:
        dist = policy.get_distribution(obs_t[idx], action_masks=mask[idx])
        return dist.distribution.logits

    def agreement(idx: np.ndarray) -> float:
        with torch.no_grad():
            return float((logits(idx).argmax(dim=1).numpy() == label[idx]).mean())

    base = float((label[val] == 0).mean())  # how often the search agrees with greedy's own choice
    print(f"{n} decisions ({len(tr)} train, {n_val} held out); the search picks greedy's plan in {base:.3f} of them")
    for epoch in range(args.epochs):
        policy.train()
        perm = rng.permutation(tr)
        total = 0.0
        for k in range(0, len(perm), args.batch_size):
            idx = perm[k: k + args.batch_size]
            logp = torch.log_softmax(logits(idx), dim=1)
            loss = -(target_t[idx] * torch.where(target_t[idx] > 0, logp, torch.zeros_like(logp))).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        policy.eval()
        print(f"epoch {epoch + 1}: loss {total / len(tr):.4f}, agreement train {agreement(tr[:20000]):.3f} "
              f"held out {agreement(val):.3f}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    model.save(args.out)
    summary: dict[str, Any] = {"decisions": n, "held_out_agreement": agreement(val), "greedy_agreement": base,
                               "out": args.out}
    if args.eval_games:
        summary["eval_vs_greedy"] = evaluate(model, PlanChoiceVecEnv(args.eval_games, seed=10**9 + 7,
                                                                     num_threads=args.engine_threads))
    print(json.dumps(summary), flush=True)
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description="distil MCTS choices into the plan-choosing policy")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="play MCTS vs greedy games and record the searches")
    c.add_argument("--games", type=int, default=200)
    c.add_argument("--iterations", type=int, default=200, help="MCTS iterations per turn")
    c.add_argument("--seed", type=int, default=0, help="game i uses seed + i")
    c.add_argument("--jobs", type=int, default=1, help="parallel processes")
    c.add_argument("--out", default="mcts_choices.npz")
    c.add_argument("--max-minutes", type=float, default=0.0, help="stop after this much wall time (0: no limit)")
    c.add_argument("--no-progress", action="store_true")
    t = sub.add_parser("train", help="fit a MaskablePPO policy to recorded searches")
    t.add_argument("--data", nargs="+", required=True, help=".npz files from collect")
    t.add_argument("--out", default="checkpoints/plan_bc.zip")
    t.add_argument("--init", default=None, help="start from this checkpoint instead of a fresh policy")
    t.add_argument("--net", type=int, nargs="+", default=[256, 256])
    t.add_argument("--epochs", type=int, default=20)
    t.add_argument("--batch-size", type=int, default=512)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--tau", type=float, default=0.0, help="soft-target temperature on mean rewards (0: hard)")
    t.add_argument("--val-fraction", type=float, default=0.1)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--eval-games", type=int, default=0, help="then play this many games against greedy")
    t.add_argument("--engine-threads", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "collect":
        return collect(args)
    if len(args.data) > 1:  # merge
        parts = [np.load(f) for f in args.data]
        merged = Path(args.out).with_suffix(".data.npz")
        np.savez_compressed(merged, **{k: np.concatenate([p[k] for p in parts]) for k in ("obs", "mask", "means",
                                                                                         "visits")})
        args.data = str(merged)
    else:
        args.data = args.data[0]
    return train(args)


if __name__ == "__main__":
    main()
