"""Self-play MaskablePPO: the learner against a pool of its own frozen past checkpoints and the heuristics.

    PYTHONPATH=. python experiments/selfplay_ppo.py --timesteps 200000 --run runs/selfplay --seed 0
    PYTHONPATH=. python experiments/selfplay_ppo.py --run runs/selfplay --resume   # carry on after an interruption
    PYTHONPATH=. python experiments/selfplay_ppo.py --vec single --n-envs 4         # the per-env path
    tensorboard --logdir runs/selfplay/tb

Each episode is a 2-4 player game. At its start the learner's seat and every other seat's opponent are drawn
from the pool: "random" (uniform legal moves), "greedy" (`GreedyAgent`, beam --greedy-beam) and every frozen
snapshot of the learner so far. Every --snapshot-every steps the current policy is frozen into the pool.

Two paths, the same learner and pool:
- `--vec batched` (default): `PoolVecEnv`, an SB3 VecEnv over the batched engine (`SelfPlayBatch`): the
  learner's actions for all games go in one numba call, then the opponents of every game that is not at a
  learner decision move together until all are (one torch forward per frozen snapshot for all its games,
  one numba call for all greedy games (`agents.batched_greedy`), one for all random ones, then one batched
  step). The game, the learner's seat and the opponents of every episode follow from the seed.
- `--vec single`: `harmonies/Versus-v0` per env with Python pool opponents, in a DummyVecEnv
  (or SubprocVecEnv with --subproc); episodes seeded per env as before.

Flags:
  --timesteps N          learner steps of this run (default 200000)
  --run DIR              output folder (default runs/selfplay)
  --seed S               seeds the games, the opponent draws, torch and PPO (default 0)
  --players {2,3,4}      seats per game (default 2); --side {A,B}; --spirits (Nature's Spirit variant)
  --reward {win,score,dense}  learner's reward as Versus-v0 (default score)
  --vec {batched,single} environment path (default batched)
  --n-envs N             games stepped together (default 32 batched, 4 single)
  --subproc              single path only: SubprocVecEnv workers instead of one process
  --opponent-sample      batched path only: frozen snapshots sample their masked policy (default: its argmax,
                         as PPOAgent plays)
  --lr, --n-steps (default 64 batched, 512 single: 2048 steps per update either way), --batch-size (256)
  --greedy-beam B        beam of the greedy opponent in the pool and in the evaluation (default 8)
  --no-heuristics        pool of random and the frozen snapshots only (no greedy)
  --snapshot-every, --checkpoint-every, --eval-every  steps (defaults 50000, 20000, 50000)
  --eval-episodes N      games of each evaluation (default 20)
  --threads N            torch CPU threads (default: torch's own choice)
  --resume               continue from DIR/checkpoints/latest.zip with its pool (new games: the batched env
                         is seeded from --seed and the step count reached)

Writes, under --run: `tb/` (tensorboard), `checkpoints/` (latest.zip + state.json with the pool, for --resume),
`pool/` (frozen snapshots), `eval.jsonl` (periodic evaluation against GreedyAgent: the learner's win rate (a
tie shared among the tied winners) and mean score, one JSON line each). Progress shows as a tqdm bar; the last
line printed is a JSON summary with the final evaluation and the learner's steps per second.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents import GreedyAgent, RandomAgent  # noqa: E402
from agents.batched_greedy import GreedyPlans, random_rows  # noqa: E402
from agents.ppo import PPOAgent  # noqa: E402
from experiments.common import progress_callback  # noqa: E402
from harmonies_env import actions as A  # noqa: E402
from harmonies_env import rules  # noqa: E402
from harmonies_env import state as S  # noqa: E402
from harmonies_env.batch import SelfPlayBatch, episode_seed  # noqa: E402
from harmonies_env.env_gym import VersusEnv  # noqa: E402
from harmonies_env.observation import OBS_HIGH, OBS_LOW, OBS_SIZE, encode_observation  # noqa: E402
from harmonies_env.scoring import NUM_CATEGORIES  # noqa: E402
from harmonies_env.vector import BatchVecEnvMethods  # noqa: E402

#: Mixed into a game's seed to draw that episode's seats and opponents (see `draw_episode`).
POOL_SALT = 0x51F1A7
#: Kinds of pool member.
RANDOM, GREEDY, SNAPSHOT = 0, 1, 2
#: The action an idle row is given while other rows' opponents move: illegal in every 2-4 player game, so the
#: batch leaves the row unchanged (its batch has illegal_reward 0; the learner's own illegal actions are
#: penalised here).
_IDLE = A.SOLO_REPLACE


def member_kind(member: str) -> int:
    """RANDOM, GREEDY or SNAPSHOT for a pool member name ("random", "greedy" or a checkpoint path)."""
    if not isinstance(member, str):
        raise ValueError(f"a pool member is 'random', 'greedy' or a checkpoint path, got {member!r}")
    if member == "random":
        return RANDOM
    if member == "greedy":
        return GREEDY
    p = Path(member)
    if not p.exists() and not p.with_suffix(".zip").exists():
        raise FileNotFoundError(f"pool member {member!r}: no MaskablePPO checkpoint there")
    return SNAPSHOT


def draw_episode(game_seed: int, num_players: int, pool_size: int,
                 seat: int | None = None) -> tuple[int, np.ndarray, int]:
    """Who plays the game with this seed: the learner's seat (drawn unless `seat` is given), each seat's pool
    index (int64 (4,), -1 at the learner's seat and at absent seats) and the seed of the random players'
    generator. A function of its arguments alone, so a run's opponents follow from its seed."""
    rng = np.random.default_rng([int(game_seed) % 2**64, POOL_SALT])
    learner = int(rng.integers(num_players)) if seat is None else int(seat)
    members = np.full(S.MAX_PLAYERS, -1, dtype=np.int64)
    for k in range(1, num_players):
        members[(learner + k) % num_players] = rng.integers(pool_size)
    return learner, members, int(rng.integers(2**62))


class PoolVecEnv(BatchVecEnvMethods, VecEnv):
    """N self-play games as an SB3 VecEnv that stops only at the learner's decisions; opponents from a pool.

    Built on `SelfPlayBatch`. `step_wait` plays the learner's action in every game, then, while some games
    wait on an opponent, decides all those opponents at once (per pool member: one numba call for the greedy
    games, one for the random ones, one torch forward per frozen snapshot) and steps the batch once; games
    already at a learner decision sit out (given an illegal action, which leaves a game unchanged).

    Rewards are the learner's, as Versus-v0 (`reward` "win" / "score" / "dense", points / 100), summed over
    everything that happened since its last decision; an illegal learner action leaves the game unchanged and
    earns `illegal_reward`. At each episode's start `draw_episode` (from the game's seed) picks the learner's
    seat (or `seat`) and the opponents. An ended episode reports `infos[i]` with "terminal_observation" (the
    learner's view of the final position), "episode" {"r", "l" (learner decisions), "t"}, "score", "won",
    "win_share" (1/k for one of k tied winners), "seat" and "opponents" (names). After `max_steps` learner
    decisions an episode is reported truncated; the rest of that game is played out at random before the row's
    next episode starts.

    `reset()` seeds row r's games from base seed b + r (`seed(b)` first, SB3 style), as `SelfPlayBatch`.
    """

    def __init__(self, num_envs: int = 32, num_players: int = 2, side: str = "A", spirits: bool = False,
                 reward: str = "score", pool: Sequence[str] = ("random", "greedy"), greedy_beam: int = 8,
                 opponent_sample: bool = False, seat: int | None = None, illegal_reward: float = -0.01,
                 max_steps: int = 5000, seed: int | None = None, device: str = "cpu"):
        self.batch = SelfPlayBatch(num_envs, num_players=num_players, side=side, spirits=spirits, seed=0,
                                   reward=reward, illegal_reward=0.0, max_steps=0)
        n = self.batch.num_games
        self.num_players = self.batch.num_players
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < self.num_players):
            raise ValueError(f"seat must be None or 0..{self.num_players - 1}, got {seat!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.fixed_seat = seat
        self.illegal_reward = float(illegal_reward)
        self.max_steps = int(max_steps)
        self.opponent_sample = bool(opponent_sample)
        self.device = device
        self.render_mode = None
        super().__init__(n, spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32), spaces.Discrete(A.NUM_ACTIONS))
        self.pool: list[str] = []
        self._kinds = np.zeros(0, dtype=np.int64)
        self._models: dict[str, Any] = {}
        for m in pool:
            self.add_to_pool(m)
        if not self.pool:
            raise ValueError("the opponent pool is empty")
        self.greedy = GreedyPlans(n, beam=greedy_beam)
        self._rng = np.zeros(n, dtype=np.int64)              # random players' generators, one per game
        self._seat = np.zeros(n, dtype=np.int64)             # learner's seat
        self._member = np.full((n, S.MAX_PLAYERS), -1, dtype=np.int64)  # pool index per seat
        self._abandoned = np.zeros(n, dtype=bool)            # truncated: played out at random, not the learner's
        self._ep_ret = np.zeros(n, dtype=np.float64)
        self._ep_len = np.zeros(n, dtype=np.int64)
        self._carry = np.zeros(n, dtype=np.float64)          # learner rewards of an episode begun mid-step
        self._starts = np.zeros(n, dtype=np.float64)
        self._obs = np.zeros((n, OBS_SIZE), dtype=np.float32)
        self._masks = np.zeros((n, A.NUM_ACTIONS), dtype=bool)
        self._sample_rng = np.random.default_rng(0)
        self._buf = np.zeros(A.NUM_ACTIONS, dtype=np.int64)
        self._scores = np.zeros((S.MAX_PLAYERS, NUM_CATEGORIES), dtype=np.int64)
        self._actions: np.ndarray | None = None
        if seed is not None:
            self.seed(seed)

    # ---- the pool ---------------------------------------------------------------------------------------
    def add_to_pool(self, member: str) -> None:
        """Add a member ("random", "greedy" or a checkpoint path); later episodes may draw it."""
        kind = member_kind(member)
        if member not in self.pool:
            self.pool.append(member)
            self._kinds = np.append(self._kinds, kind)

    def _model(self, path: str) -> Any:
        if path not in self._models:
            from sb3_contrib import MaskablePPO

            model = MaskablePPO.load(path, device=self.device)
            model.policy.set_training_mode(False)
            self._models[path] = model
        return self._models[path]

    def _policy_actions(self, path: str, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """One forward pass of a frozen snapshot for all its games: masked argmax, or a masked sample."""
        import torch

        policy = self._model(path).policy
        obs_t, _ = policy.obs_to_tensor(obs)
        with torch.no_grad():
            probs = policy.get_distribution(obs_t, action_masks=masks).distribution.probs.cpu().numpy()
        if self.opponent_sample:
            cdf = np.cumsum(probs, axis=1, dtype=np.float64)
            u = (1.0 - self._sample_rng.random(len(obs))) * cdf[:, -1]
            a = np.minimum((cdf < u[:, None]).sum(axis=1), A.NUM_ACTIONS - 1)
        else:
            a = probs.argmax(axis=1)
        bad = ~masks[np.arange(len(a)), a]
        if bad.any():  # rounding at the edge of a sample: never play an illegal move
            a[bad] = masks[bad].argmax(axis=1)
        return a.astype(np.int64)

    def _opponent_actions(self, rows: np.ndarray, movers: np.ndarray, obs: np.ndarray,
                          masks: np.ndarray) -> np.ndarray:
        members = self._member[rows, movers]
        kinds = np.where(members < 0, RANDOM, self._kinds[np.maximum(members, 0)])
        out = np.full(len(rows), -1, dtype=np.int64)
        states = self.batch.states
        sel = kinds == RANDOM
        if sel.any():
            tmp = np.empty(int(sel.sum()), dtype=np.int64)
            random_rows(states, np.ascontiguousarray(rows[sel]), self._rng, tmp, self._buf)
            out[sel] = tmp
        sel = kinds == GREEDY
        if sel.any():
            out[sel] = self.greedy.actions(states, rows[sel])
        for m in np.unique(members[kinds == SNAPSHOT]):
            sel = members == m
            out[sel] = self._policy_actions(self.pool[m], obs[rows[sel]], masks[rows[sel]])
        if (out < 0).any():
            r = int(rows[np.flatnonzero(out < 0)[0]])
            raise RuntimeError(f"game {r}: the player to move has no legal action")
        return out

    # ---- episodes ---------------------------------------------------------------------------------------
    def _start_episodes(self, rows: np.ndarray) -> None:
        base, eps = self.batch.base_seeds, self.batch.episodes
        now = time.perf_counter()
        for r in rows:
            seed = episode_seed(int(base[r]), int(eps[r]))
            self._seat[r], self._member[r], self._rng[r] = draw_episode(seed, self.num_players, len(self.pool),
                                                                       self.fixed_seat)
            self._starts[r] = now
        self.greedy.forget(rows)
        self._abandoned[rows] = False
        self._ep_ret[rows] = 0.0
        self._ep_len[rows] = 0

    def opponents(self, r: int) -> list[str]:
        """Pool members seated in game r's current episode, in seat order after the learner."""
        n = self.num_players
        return [self.pool[self._member[r, (self._seat[r] + k) % n]] for k in range(1, n)]

    def _finish(self, r: int, info: dict, final_obs: np.ndarray, scores: np.ndarray, won: np.ndarray,
                truncated: bool) -> None:
        seat = int(self._seat[r])
        k = int(won[: self.num_players].sum())
        info["terminal_observation"] = np.array(final_obs, dtype=np.float32)
        info["TimeLimit.truncated"] = truncated
        info["episode"] = {"r": float(self._ep_ret[r]), "l": int(self._ep_len[r]),
                           "t": round(time.perf_counter() - self._starts[r], 6)}
        info["score"] = int(scores[seat, -1])
        info["won"] = bool(won[seat])
        info["win_share"] = 1.0 / k if won[seat] and k else 0.0
        info["seat"] = seat
        info["opponents"] = self.opponents(r)

    # ---- stepping ---------------------------------------------------------------------------------------
    def _advance(self, obs: np.ndarray, masks: np.ndarray, players: np.ndarray, moved: np.ndarray,
                 rew: np.ndarray, dones: np.ndarray, infos: list[dict], fresh: np.ndarray) -> None:
        """Let opponents move until every game waits on the learner; keep a copy of each learner observation.

        obs / masks / players: the batch's last output; moved: bool (N,) the games stepped by that call;
        fresh: bool (N,) games whose episode began during this step (their learner rewards go to the next).
        """
        n = self.num_envs
        idx = np.arange(n)
        while True:
            learner = (players == self._seat) & ~self._abandoned
            take = learner & moved
            self._obs[take] = obs[take]
            self._masks[take] = masks[take]
            if learner.all():
                return
            rows = np.flatnonzero(~learner)
            acts = np.full(n, _IDLE, dtype=np.int64)
            acts[rows] = self._opponent_actions(rows, players[rows], obs, masks)
            ending = rows[(acts[rows] == A.END_TURN) & ~self._abandoned[rows]]
            before = self.batch.states[ending].copy()  # the learner's view of a game that ends here
            out = self.batch.step(acts)
            moved = ~learner
            if (out.illegal & moved).any():
                r = int(np.flatnonzero(out.illegal & moved)[0])
                raise RuntimeError(f"game {r}: opponent {self.pool[self._member[r, players[r]]]!r} "
                                   f"played the illegal action {acts[r]}")
            live = moved & ~self._abandoned
            lr = np.where(live, out.rewards[idx, self._seat], 0.0)
            self._ep_ret += lr
            rew += np.where(fresh, 0.0, lr)
            self._carry += np.where(fresh, lr, 0.0)
            ended = np.flatnonzero((out.terminated | out.truncated) & moved)
            for r in ended:
                if not self._abandoned[r]:
                    final = np.empty(OBS_SIZE, dtype=np.float32)
                    k = np.flatnonzero(ending == r)
                    if k.size:
                        s = before[k[0]]
                        rules.step(s, A.END_TURN)
                        encode_observation(s, int(self._seat[r]), final)
                    else:  # only END_TURN ends a multiplayer game; kept for safety
                        final[:] = out.final_obs[r]
                    self._finish(r, infos[r], final, out.final_scores[r], out.final_won[r], False)
                    dones[r] = True
                fresh[r] = True
            if ended.size:
                self._start_episodes(ended)
            obs, masks, players = out.obs, out.masks, np.array(out.players)

    def reset(self) -> np.ndarray:
        base: Any = None
        if all(s is not None for s in self._seeds):
            base = [int(s) for s in self._seeds]
            self._sample_rng = np.random.default_rng([base[0] % 2**64, POOL_SALT])
        obs, masks = self.batch.reset(base)
        self._reset_seeds()
        self._reset_options()
        n = self.num_envs
        self._start_episodes(np.arange(n))
        self._carry[:] = 0.0
        infos: list[dict] = [{} for _ in range(n)]
        self._advance(obs, masks, np.array(self.batch.players), np.ones(n, dtype=bool), np.zeros(n),
                      np.zeros(n, dtype=bool), infos, np.ones(n, dtype=bool))
        self.reset_infos = [{"seat": int(self._seat[r]), "opponents": self.opponents(r)} for r in range(n)]
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        n = self.num_envs
        idx = np.arange(n)
        acts = self._actions
        self._actions = None
        out = self.batch.step(acts)  # validates the actions (one per game, integers)
        rew = self._carry.copy()
        self._carry[:] = 0.0
        dones = np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        lr = out.rewards[idx, self._seat] + np.where(out.illegal, self.illegal_reward, 0.0)
        rew += lr
        self._ep_ret += lr
        self._ep_len += 1
        for r in np.flatnonzero(out.illegal):  # an illegal action left the game unchanged: ask the rules why
            s = self.batch.states[r].copy()
            infos[r]["illegal_action"] = rules.ERRORS[rules.step(s, int(np.asarray(acts).reshape(n)[r]))]
        fresh = np.zeros(n, dtype=bool)
        ended = np.flatnonzero(out.terminated | out.truncated)
        for r in ended:
            self._finish(r, infos[r], out.final_obs[r], out.final_scores[r], out.final_won[r], False)
            dones[r] = True
            fresh[r] = True
        if ended.size:
            self._start_episodes(ended)
        for r in np.flatnonzero(~fresh & (self._ep_len >= self.max_steps)):
            s = self.batch.states[r]
            final = np.empty(OBS_SIZE, dtype=np.float32)
            encode_observation(s, int(self._seat[r]), final)
            rules.scores_into(s, self._scores)
            won = np.zeros(S.MAX_PLAYERS, dtype=np.int64)
            self._finish(r, infos[r], final, self._scores, won, True)
            dones[r] = True
            self._abandoned[r] = True
        self._advance(out.obs, out.masks, np.array(out.players), np.ones(n, dtype=bool), rew, dones, infos, fresh)
        return self._obs.copy(), rew.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """bool (N, NUM_ACTIONS): the learner's legal actions in every game."""
        return self._masks.copy()


# ---------------------------------------------------------------------------------------------------------
# the per-env path (--vec single)
# ---------------------------------------------------------------------------------------------------------
class PoolOpponents(gymnasium.Wrapper):
    """Versus-v0 whose opponents are redrawn from a pool at every reset (seeded by the reset's seed)."""

    def __init__(self, env: VersusEnv, pool: list[str], greedy_beam: int = 8):
        super().__init__(env)
        self.pool = list(pool)
        self.greedy_beam = greedy_beam
        self._loaded: dict[str, Any] = {}
        self._rng = np.random.default_rng()

    def add_to_pool(self, member: str) -> None:
        if member not in self.pool:
            self.pool.append(member)

    def _agent(self, member: str):
        if member not in self._loaded:
            if member == "random":
                self._loaded[member] = RandomAgent(seed=int(self._rng.integers(2**31)))
            elif member == "greedy":
                self._loaded[member] = GreedyAgent(beam=self.greedy_beam)
            else:
                self._loaded[member] = PPOAgent(member)
        return self._loaded[member]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        env = self.env.unwrapped
        env.opponents = [self._agent(self.pool[int(self._rng.integers(len(self.pool)))])
                         for _ in range(env.num_players - 1)]
        for o in env.opponents:
            if hasattr(o, "reset"):
                o.reset()
        return self.env.reset(seed=seed, options=options)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def make_env(args: argparse.Namespace, pool: list[str], rank: int):
    def thunk():
        env = VersusEnv(num_players=args.players, side=args.side, spirits=args.spirits, reward=args.reward)
        env = PoolOpponents(env, pool, greedy_beam=args.greedy_beam)
        env.reset(seed=args.seed * 1000 + rank)
        return env
    return thunk


def evaluate(model, args: argparse.Namespace, episodes: int, seed: int) -> dict:
    """Learner (deterministic, masked) vs GreedyAgent in every other seat, one Versus-v0 game at a time."""
    env = VersusEnv(num_players=args.players, side=args.side, spirits=args.spirits, reward="win",
                    opponents=GreedyAgent(beam=args.greedy_beam))
    wins, scores = 0.0, []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        info: dict = {}
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _, term, trunc, info = env.step(int(action))
            done = term or trunc
        wins += 1.0 / len(info["winners"]) if info.get("won") else 0.0
        scores.append(info["scores"]["total"])
    return {"win_rate_vs_greedy": wins / episodes, "mean_score": float(np.mean(scores)),
            "std_score": float(np.std(scores)), "episodes": episodes}


def evaluate_batched(model, args: argparse.Namespace, episodes: int, seed: int) -> dict:
    """Learner (deterministic, masked) vs the greedy heuristic in every other seat: `episodes` games at once
    (the first game of each row of a `PoolVecEnv` whose pool is greedy alone); same figures as `evaluate`."""
    env = PoolVecEnv(episodes, num_players=args.players, side=args.side, spirits=args.spirits, reward="win",
                     pool=["greedy"], greedy_beam=args.greedy_beam, seed=seed)
    obs = env.reset()
    done = np.zeros(episodes, dtype=bool)
    share = np.zeros(episodes)
    scores = np.zeros(episodes)
    while not done.all():
        actions, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, dones, infos = env.step(actions)
        for r in np.flatnonzero(dones & ~done):
            share[r] = infos[r]["win_share"]
            scores[r] = infos[r]["score"]
        done |= dones
    return {"win_rate_vs_greedy": float(share.mean()), "mean_score": float(scores.mean()),
            "std_score": float(scores.std()), "episodes": episodes}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--timesteps", type=int, default=200_000)
    ap.add_argument("--run", default="runs/selfplay", help="output folder (tensorboard, checkpoints, pool)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--players", type=int, default=2, choices=[2, 3, 4])
    ap.add_argument("--side", default="A", choices=["A", "B"])
    ap.add_argument("--spirits", action="store_true")
    ap.add_argument("--reward", default="score", choices=["win", "score", "dense"])
    ap.add_argument("--vec", default="batched", choices=["batched", "single"],
                    help="batched: PoolVecEnv on the batched engine; single: Versus-v0 per env")
    ap.add_argument("--n-envs", type=int, default=None, help="games stepped together (default 32 batched, 4 single)")
    ap.add_argument("--subproc", action="store_true", help="--vec single: SubprocVecEnv workers, not one process")
    ap.add_argument("--opponent-sample", action="store_true",
                    help="--vec batched: frozen snapshots sample their masked policy instead of its argmax")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--n-steps", type=int, default=None, help="steps per env per update (default 64 batched, "
                    "512 single)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--greedy-beam", type=int, default=8, help="beam of the GreedyAgent in the pool and eval")
    ap.add_argument("--no-heuristics", action="store_true", help="pool of frozen snapshots (and random) only")
    ap.add_argument("--snapshot-every", type=int, default=50_000)
    ap.add_argument("--checkpoint-every", type=int, default=20_000)
    ap.add_argument("--eval-every", type=int, default=50_000)
    ap.add_argument("--eval-episodes", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--resume", action="store_true", help="continue from --run/checkpoints/latest.zip")
    args = ap.parse_args(argv)
    batched = args.vec == "batched"
    if args.subproc and batched:
        ap.error("--subproc is for --vec single (the batched env steps all games in one process)")
    if args.opponent_sample and not batched:
        ap.error("--opponent-sample is for --vec batched")
    if args.n_envs is None:
        args.n_envs = 32 if batched else 4
    if args.n_steps is None:
        args.n_steps = 64 if batched else 512
    if args.n_envs < 1 or args.n_steps < 1 or args.eval_episodes < 1:
        ap.error("--n-envs, --n-steps and --eval-episodes must be positive")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)

    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    from tqdm import tqdm

    if args.threads:
        torch.set_num_threads(args.threads)
    batched = args.vec == "batched"
    run = Path(args.run)
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run / "pool").mkdir(parents=True, exist_ok=True)
    state_file = run / "checkpoints" / "state.json"
    pool = ["random"] + ([] if args.no_heuristics else ["greedy"])
    start = 0
    if args.resume:
        if not state_file.exists():
            raise SystemExit(f"--resume: nothing to resume in {run} (no {state_file})")
        saved = json.loads(state_file.read_text())
        pool, start = saved["pool"], int(saved.get("timesteps", 0))
    torch.manual_seed(args.seed)
    if batched:
        venv: Any = PoolVecEnv(args.n_envs, num_players=args.players, side=args.side, spirits=args.spirits,
                               reward=args.reward, pool=pool, greedy_beam=args.greedy_beam,
                               opponent_sample=args.opponent_sample)
    else:
        fns = [make_env(args, pool, r) for r in range(args.n_envs)]
        venv = SubprocVecEnv(fns) if args.subproc else DummyVecEnv(fns)
    if args.resume:
        model = MaskablePPO.load(str(run / "checkpoints" / "latest.zip"), env=venv, device="cpu",
                                 tensorboard_log=str(run / "tb"))
    else:
        model = MaskablePPO("MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps,
                            batch_size=args.batch_size, seed=args.seed, verbose=0, device="cpu",
                            tensorboard_log=str(run / "tb"))
    if batched:  # after the model's own venv.seed(args.seed): a resumed run plays new games
        venv.seed(args.seed * 1_000_003 + start)
    evaluate_fn = evaluate_batched if batched else evaluate

    class SelfPlay(BaseCallback):
        def _on_step(self) -> bool:
            t = self.num_timesteps
            n = self.training_env.num_envs
            if t % args.checkpoint_every < n:
                self.model.save(run / "checkpoints" / "latest.zip")
                state_file.write_text(json.dumps({"pool": pool, "timesteps": t}))
            if t % args.snapshot_every < n:
                snap = run / "pool" / f"step_{t}.zip"
                self.model.save(snap)
                pool.append(str(snap))
                self.training_env.env_method("add_to_pool", str(snap))
            if t % args.eval_every < n:
                res = evaluate_fn(self.model, args, args.eval_episodes, seed=10_000 + t)
                res["timesteps"] = t
                with open(run / "eval.jsonl", "a") as f:
                    f.write(json.dumps(res) + "\n")
                self.logger.record("eval/win_rate_vs_greedy", res["win_rate_vs_greedy"])
                self.logger.record("eval/mean_score", res["mean_score"])
                tqdm.write(json.dumps(res))
            return True

    callbacks = [SelfPlay(), progress_callback(args.timesteps, "self-play")]
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.timesteps, callback=callbacks, reset_num_timesteps=not args.resume,
                tb_log_name="selfplay")
    wall = time.perf_counter() - t0
    model.save(run / "checkpoints" / "latest.zip")
    state_file.write_text(json.dumps({"pool": pool, "timesteps": int(model.num_timesteps)}))
    res = evaluate_fn(model, args, args.eval_episodes, seed=99_999)
    summary = {"final": True, **res, "timesteps": int(model.num_timesteps), "vec": args.vec,
               "n_envs": args.n_envs, "wall_s": round(wall, 1),
               "steps_per_s": round((model.num_timesteps - start) / max(wall, 1e-9), 1), "pool": pool}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
