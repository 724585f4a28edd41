"""A plain single-file PPO (CleanRL style): the standard-RL baseline to compare the project's agents against.

Why: what an off-the-shelf algorithm reaches here, with nothing of the project's own (no planner, no afterstates):
masked logits over the 268 micro-actions of `gym.make_vec("harmonies/Solo-v0", 8, vectorization_mode="sync")` (or
Versus-v0 against `random` / `greedy` with --players 2), CleanRL's `ppo.py` conventions (separate tanh actor and
critic MLPs with orthogonal init, GAE, normalised advantages, clipped value loss, the learning rate annealed to 0 over
`total_steps`), one torch thread, seeded: the same Args and seed give the same run. It writes NAME.npz (the weights,
no pickle) + NAME.json (this run's Args, its curve and the weights' SHA-256), prints one JSON line per update (steps,
process CPU seconds, mean points of the last 50 games that ended) and a last line with the curve every 30 CPU-s and
the evaluation on fresh seeds (argmax of the masked logits).

    python -m experiments.ppo_clean --hidden 128 --learning-rate 0.0005 --total-steps 1000000 --eval-seed 910000 \
        --out runs/ppo_clean/solo_lr5e4
    python -m experiments.ppo_clean --players 2 --opponent greedy --hidden 128 --total-steps 150000 \
        --out runs/ppo_clean/greedy
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import harmonies_env  # noqa: F401  (registers the envs)
from agents.checkpoint import write_checkpoint
from harmonies_env.stops import exit_status, stop_message, stop_on_signals


@dataclass(frozen=True)
class Args:
    """One run's settings (checked once by `check`)."""

    seed: int = 1
    players: int = 1  # 1: Solo-v0; 2-4: Versus-v0 against `opponent`
    opponent: str = "random"  # Versus-v0's other seats: "random" or "greedy"
    reward_scale: float = 0.1  # points x this enter the rewards (Versus-v0: its "dense" own-points reward)
    num_envs: int = 8
    num_steps: int = 128  # steps per env per update
    total_steps: int = 2_000_000  # the run's length: the learning rate falls linearly to 0 over it (reproducible)
    cpu_seconds: float = 600.0  # and a safety stop: after the update that passes this much process CPU time
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True
    gamma: float = 0.999  # a solo game is ~58 decisions: 0.99 would weigh its last points at ~0.56
    gae_lambda: float = 0.95
    minibatches: int = 4
    epochs: int = 4
    clip: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    eval_games: int = 50
    eval_seed: int = 900000  # fresh seeds: eval_seed .. eval_seed + eval_games - 1 (never used to tune)

    def check(self) -> Args:
        for name in ("players", "num_envs", "num_steps", "minibatches", "epochs", "hidden", "eval_games"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.players > 4 or self.opponent not in ("random", "greedy") or self.cpu_seconds <= 0 or \
                self.total_steps < 1:
            raise ValueError(f"players must be 1..4, opponent random or greedy, cpu_seconds > 0, total_steps >= 1: "
                             f"got {self}")
        if (self.num_envs * self.num_steps) % self.minibatches:
            raise ValueError("num_envs * num_steps must be a multiple of minibatches")
        return self


def make_env(args: Args, n: int) -> gym.vector.VectorEnv:
    """n games, stepped one after another (gymnasium's SyncVectorEnv); a finished game restarts in the same step."""
    same_step = {"vector_kwargs": {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}}
    if args.players == 1:
        return gym.make_vec("harmonies/Solo-v0", n, vectorization_mode="sync", reward_scale=args.reward_scale,
                            **same_step)
    from agents import make_agent
    opponents = None if args.opponent == "random" else [make_agent("greedy")] * (args.players - 1)
    return gym.make_vec("harmonies/Versus-v0", n, vectorization_mode="sync", num_players=args.players,
                        opponents=opponents, reward="dense", reward_scale=args.reward_scale, **same_step)


def layer(n_in: int, n_out: int, gain: float) -> nn.Linear:
    """A linear layer with orthogonal weights of this gain and zero bias (CleanRL's `layer_init`)."""
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, gain)
    nn.init.zeros_(lin.bias)
    return lin


class Policy(nn.Module):
    """Separate tanh MLPs for the policy and the value (CleanRL's `Agent`); illegal logits are masked."""

    def __init__(self, obs: int, actions: int, hidden: int):
        super().__init__()
        g = 2 ** 0.5
        self.critic = nn.Sequential(layer(obs, hidden, g), nn.Tanh(), layer(hidden, hidden, g), nn.Tanh(),
                                    layer(hidden, 1, 1.0))
        self.actor = nn.Sequential(layer(obs, hidden, g), nn.Tanh(), layer(hidden, hidden, g), nn.Tanh(),
                                   layer(hidden, actions, 0.01))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.distributions.Categorical, torch.Tensor]:
        logits = self.actor(x).masked_fill(~mask, -1e9)  # illegal actions: probability exactly 0, never NaN
        return torch.distributions.Categorical(logits=logits, validate_args=False), self.critic(x).squeeze(-1)


def evaluate(policy: Policy, args: Args) -> dict[str, float]:
    """The policy's argmax on `eval_games` games, seeds eval_seed.. (one env, no exploration): mean points (and win
    rate against the opponents)."""
    env = make_env(args, 1)
    points, wins = [], []
    for g in range(args.eval_games):
        obs, info = env.reset(seed=args.eval_seed + g)
        while True:
            with torch.no_grad():
                dist, _ = policy(torch.as_tensor(obs), torch.as_tensor(info["action_mask"]))
            obs, _, term, trunc, info = env.step(dist.probs.argmax(-1).numpy())
            if term[0] or trunc[0]:
                final = info["final_info"]
                points.append(float(final["scores"]["total"][0]))
                wins.append(float(final["won"][0]) if "won" in final else 0.0)
                break
    env.close()
    out = {"eval_games": args.eval_games, "eval_seeds": f"{args.eval_seed}-{args.eval_seed + args.eval_games - 1}",
           "eval_mean": round(float(np.mean(points)), 2), "eval_std": round(float(np.std(points)), 2)}
    return out | ({"eval_win_rate": round(float(np.mean(wins)), 3)} if args.players > 1 else {})


def train(args: Args, out: Path | None = None, log=print) -> tuple[Policy, list[dict]]:
    """PPO for `total_steps` (or until `cpu_seconds` of process CPU time); returns the policy and the curve (one dict
    per update)."""
    args.check()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    envs = make_env(args, args.num_envs)
    n_obs, n_act = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    policy = Policy(n_obs, n_act, args.hidden)
    opt = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, eps=1e-5)
    T, E = args.num_steps, args.num_envs
    obs_b, mask_b = torch.zeros(T, E, n_obs), torch.zeros(T, E, n_act, dtype=torch.bool)
    act_b, logp_b, rew_b, done_b, val_b = (torch.zeros(T, E) for _ in range(5))
    obs, info = envs.reset(seed=args.seed)
    obs, mask, done = torch.as_tensor(obs), torch.as_tensor(info["action_mask"]), torch.zeros(E)
    returns, ep_ret, curve, steps, start = [], np.zeros(E), [], 0, time.process_time()
    try:  # Ctrl-C ends the run where it is (mid-update too): the policy so far is saved, then the stop goes on up
        while time.process_time() - start < args.cpu_seconds and steps < args.total_steps:
            if args.anneal_lr:
                opt.param_groups[0]["lr"] = args.learning_rate * (1.0 - steps / args.total_steps)
            for t in range(T):
                obs_b[t], mask_b[t], done_b[t] = obs, mask, done
                with torch.no_grad():
                    dist, v = policy(obs, mask)
                    a = dist.sample()
                act_b[t], logp_b[t], val_b[t] = a, dist.log_prob(a), v
                o, r, term, trunc, info = envs.step(a.numpy())
                ep_ret += r
                d = term | trunc
                returns += list(ep_ret[d] / args.reward_scale)  # points
                ep_ret[d] = 0.0
                rew_b[t] = torch.as_tensor(r, dtype=torch.float32)
                obs, mask = torch.as_tensor(o), torch.as_tensor(info["action_mask"])
                done = torch.as_tensor(d, dtype=torch.float32)
            steps += T * E
            with torch.no_grad():  # generalised advantage estimation, cut where a game ended
                _, nxt = policy(obs, mask)
                adv, last = torch.zeros(T, E), torch.zeros(E)
                for t in reversed(range(T)):
                    nonterminal = 1.0 - (done if t == T - 1 else done_b[t + 1])
                    nv = nxt if t == T - 1 else val_b[t + 1]
                    delta = rew_b[t] + args.gamma * nv * nonterminal - val_b[t]
                    adv[t] = last = delta + args.gamma * args.gae_lambda * nonterminal * last
                ret = adv + val_b
            b = (obs_b.reshape(T * E, n_obs), mask_b.reshape(T * E, n_act), act_b.reshape(-1), logp_b.reshape(-1),
                 adv.reshape(-1), ret.reshape(-1), val_b.reshape(-1))
            size = T * E // args.minibatches
            for _ in range(args.epochs):
                for idx in torch.randperm(T * E).split(size):
                    o_, m_, a_, lp_, ad_, rt_, v_ = (x[idx] for x in b)
                    dist, v = policy(o_, m_)
                    ratio = (dist.log_prob(a_) - lp_).exp()
                    ad_ = (ad_ - ad_.mean()) / (ad_.std() + 1e-8)
                    pg = torch.max(-ad_ * ratio, -ad_ * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
                    vloss = (v - rt_) ** 2
                    if args.clip_vloss:  # the value moves at most `clip` from the one that collected the data
                        vloss = torch.max(vloss, (v_ + (v - v_).clamp(-args.clip, args.clip) - rt_) ** 2)
                    loss = pg + args.vf_coef * 0.5 * vloss.mean() - args.ent_coef * dist.entropy().mean()
                    opt.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
                    opt.step()
            row = {"steps": steps, "cpu_s": round(time.process_time() - start, 1), "episodes": len(returns),
                   "mean_return_last_50": round(float(np.mean(returns[-50:])), 2) if returns else None}
            curve.append(row)
            log(json.dumps(row))
    except KeyboardInterrupt:
        envs.close()
        if out is not None:
            save(policy, args, curve, out)
        raise
    envs.close()
    if out is not None:
        save(policy, args, curve, out)
    return policy, curve


def milestones(curve: list[dict], every: float = 30.0) -> list[list[float]]:
    """[CPU-s, steps, mean points of the last 50 training games] at the first update past each `every` CPU-seconds
    (and the last): the curve by CPU time, short enough for one JSON line."""
    out, mark = [], every
    for k, row in enumerate(curve):
        if row["cpu_s"] >= mark or k == len(curve) - 1:
            out.append([row["cpu_s"], row["steps"], row["mean_return_last_50"]])
            while mark <= row["cpu_s"]:
                mark += every
    return out


def save(policy: Policy, args: Args, curve: list[dict], out: Path) -> Path:
    """NAME.npz (the state dict as plain float32 arrays) + NAME.json (Args, curve, SHA-256), each atomically."""
    buf = io.BytesIO()
    arrays = {k: v.detach().numpy().astype(np.float32) for k, v in policy.state_dict().items()}
    np.savez(buf, **arrays)
    return write_checkpoint(Path(out).with_suffix(".npz"), buf.getvalue(), "ppo_clean",
                            {"args": dataclasses.asdict(args)}, {k: list(v.shape) for k, v in arrays.items()},
                            {"curve": curve})


def _flag(text: str) -> bool:
    if text.lower() not in ("true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() in ("true", "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Args):
        kind = type(f.default)
        ap.add_argument("--" + f.name.replace("_", "-"), default=f.default, metavar=kind.__name__.upper(),
                        type={bool: _flag}.get(kind, kind))
    ap.add_argument("--out", type=Path, default=None, help="NAME: write NAME.npz + NAME.json")
    ns = vars(ap.parse_args(argv))
    out = ns.pop("out")
    try:
        args = Args(**ns).check()
    except ValueError as e:
        ap.error(str(e))
    try:
        with stop_on_signals():  # Ctrl-C or SIGTERM: one line, exit 130 / 143, the policy so far saved with --out
            policy, curve = train(args, out)
            print(json.dumps({"args": dataclasses.asdict(args), "final": curve[-1] if curve else None,
                              "curve": milestones(curve), **evaluate(policy, args)}), flush=True)
    except KeyboardInterrupt as e:
        kept = f"the policy so far is in {out.with_suffix('.npz')}" if out is not None else "nothing saved (no --out)"
        print(stop_message("ppo_clean", e, kept), file=sys.stderr)
        return exit_status(e)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
