"""`PoolVecEnv`: self-play games against a pool of opponents as a Stable-Baselines3 `VecEnv` (needs `.[train]`).

Each episode is a 2-4 player game. At its start the learner's seat and every other seat's opponent are drawn
from the pool: "random" (uniform legal moves), "greedy" (the greedy planner, beam `greedy_beam`) and frozen
MaskablePPO snapshots (checkpoint paths: the weights-only `.pt` exports self-play writes, or SB3 zips; read
weights-only by `agents.ppo.load_policy`). `PoolVecEnv` steps all games on the batched engine
(`harmonies_env.batch.SelfPlayBatch`): the learner's actions for all games go in one numba call, then the
opponents of every game that is not at a learner decision move together until all are (one torch forward per
frozen snapshot for all its games, one numba call for all greedy games (`agents.greedy.GreedyPlans`), one for all
random ones, then one batched step). The game, the learner's seat and the opponents of every episode follow
from the seed (`draw_episode`).

`PoolOpponents` is the per-env path: a `harmonies/Versus-v0` wrapper whose opponents are agent objects redrawn
from the same kind of pool at every reset.

Training with it: `python -m experiments.train selfplay-ppo --config experiments/configs/selfplay_ppo.toml`.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from harmonies_env import actions as A
from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.batch import SelfPlayBatch, episode_seed
from harmonies_env.config import GameConfig, make_config
from harmonies_env.env_gym import VersusEnv
from harmonies_env.observation import OBS_HIGH, OBS_LOW, OBS_SIZE, encode_observation
from harmonies_env.scoring import NUM_CATEGORIES
from harmonies_env.vector import BatchVecEnvMethods, batch_state, set_batch_state

from .greedy import GreedyAgent, GreedyPlans
from .policy.kernels import random_rows
from .random_agent import RandomAgent

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
    if not p.exists() and not any(p.with_name(p.name + ext).exists() for ext in (".pt", ".zip")):
        raise FileNotFoundError(f"pool member {member!r}: no MaskablePPO checkpoint there")
    return SNAPSHOT


def draw_episode(game_seed: int, seats: int, pool_size: int,
                 seat: int | None = None) -> tuple[int, np.ndarray, int]:
    """Who plays the game with this seed: the learner's seat (drawn unless `seat` is given), each seat's pool
    index (int64 (4,), -1 at the learner's seat and at absent seats) and the seed of the random players'
    generator. A function of its arguments alone, so a run's opponents follow from its seed."""
    rng = np.random.default_rng([int(game_seed) % 2**64, POOL_SALT])
    learner = int(rng.integers(seats)) if seat is None else int(seat)
    members = np.full(S.MAX_PLAYERS, -1, dtype=np.int64)
    for k in range(1, seats):
        members[(learner + k) % seats] = rng.integers(pool_size)
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
    config: the games' `GameConfig` (default: 2 players, Side A).
    """

    def __init__(self, num_envs: int = 32, config: GameConfig | None = None, reward: str = "score",
                 pool: Sequence[str] = ("random", "greedy"), greedy_beam: int = 8, opponent_sample: bool = False,
                 seat: int | None = None, illegal_reward: float = -0.01, max_steps: int = 5000,
                 seed: int | None = None, device: str = "cpu"):
        config = make_config(config)
        self.batch = SelfPlayBatch(num_envs, config=config, seed=0, reward=reward, illegal_reward=0.0, max_steps=0)
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

    def _policy(self, path: str) -> Any:
        """A frozen snapshot's policy, loaded weights-only (`agents.ppo.load_policy`: nothing in the file runs)."""
        if path not in self._models:
            import torch

            from .ppo import load_policy

            with torch.random.fork_rng(devices=[]):  # building the network draws initial weights: leave the
                self._models[path] = load_policy(path, device=self.device)  # learner's generator as it was
        return self._models[path]

    def _policy_actions(self, path: str, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """One forward pass of a frozen snapshot for all its games: masked argmax (`PPOAgent.act_batch`'s rule), or
        a masked sample."""
        from .ppo import policy_actions

        return policy_actions(self._policy(path), obs, masks, self._sample_rng if self.opponent_sample else None)

    def _opponent_actions(self, rows: np.ndarray, movers: np.ndarray, obs: np.ndarray,
                          masks: np.ndarray) -> np.ndarray:
        members = self._member[rows, movers]
        kinds = np.where(members < 0, RANDOM, self._kinds[np.maximum(members, 0)])
        out = np.full(len(rows), -1, dtype=np.int64)
        states = self.batch.states.copy()  # writable: a read-only view would compile a second variant of the kernels
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
            s = self.batch.states[r].copy()  # writable, as the kernels are compiled for (not a second variant)
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

    # ---- saving and restoring the games in flight (exact resumes) -------------------------------------------
    _ARRAYS = ("_rng", "_seat", "_member", "_abandoned", "_ep_ret", "_ep_len", "_carry", "_obs", "_masks")

    def get_state(self) -> dict[str, Any]:
        """Everything this env carries from one learner decision to the next, as copies: the batch
        (`harmonies_env.vector.batch_state`), each game's learner seat, opponents, random players' generator,
        episode counters and carried reward, the learner's observations and masks, the greedy players' plans,
        the snapshot sampler's generator state (plain ints) and the pool's size. Arrays, except
        `sample_rng` (a JSON-able dict) and `pool_size` (an int)."""
        out: dict[str, Any] = {f"batch_{k}": v for k, v in batch_state(self.batch).items()}
        out.update({k.lstrip("_"): getattr(self, k).copy() for k in self._ARRAYS})
        g = self.greedy
        out.update({f"greedy_{k}": getattr(g.rows, k).copy() for k in ("plans", "lens", "pos", "owner")})
        out["sample_rng"] = self._sample_rng.bit_generator.state
        out["pool_size"] = len(self.pool)
        return out

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from a `get_state` of an env of the same size, configuration and pool (its members are not
        stored: the caller rebuilds the pool). ValueError names what does not fit; the env is then unchanged."""
        if int(state.get("pool_size", -1)) != len(self.pool):
            raise ValueError(f"env state: saved with a pool of {state.get('pool_size')} members, this env has "
                             f"{len(self.pool)}")
        new: dict[str, np.ndarray] = {}
        for k in self._ARRAYS:
            cur = getattr(self, k)
            a = np.asarray(state.get(k.lstrip("_"), np.zeros(0)))
            if a.shape != cur.shape or a.dtype != cur.dtype:
                raise ValueError(f"env state {k.lstrip('_')!r}: want {cur.dtype.name} {cur.shape}, got "
                                 f"{a.dtype.name} {a.shape}")
            new[k] = a
        members = new["_member"][:, : self.num_players]
        if (new["_seat"] < 0).any() or (new["_seat"] >= self.num_players).any() or (members >= len(self.pool)).any():
            raise ValueError("env state: a learner seat or an opponent index out of range")
        g = self.greedy
        plans = {f"greedy_{k}": getattr(g.rows, k) for k in ("plans", "lens", "pos", "owner")}
        for k, cur in plans.items():
            a = np.asarray(state.get(k, np.zeros(0)))
            if a.shape != cur.shape or a.dtype != cur.dtype:
                raise ValueError(f"env state {k!r}: want {cur.dtype.name} {cur.shape}, got {a.dtype.name} {a.shape}")
        lens, pos = np.asarray(state["greedy_lens"]), np.asarray(state["greedy_pos"])
        if (lens < 0).any() or (lens > g.rows.plans.shape[1]).any() or (pos < 0).any():
            raise ValueError("env state 'greedy_lens' / 'greedy_pos': out of range")
        sampler = np.random.default_rng()
        try:
            sampler.bit_generator.state = state["sample_rng"]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"env state 'sample_rng': not a {type(sampler.bit_generator).__name__} state "
                             f"({e})") from None
        set_batch_state(self.batch, {k[len("batch_"):]: v for k, v in state.items() if k.startswith("batch_")})
        for k, a in new.items():
            getattr(self, k)[:] = a
        for k in plans:
            getattr(g.rows, k[len("greedy_"):])[:] = state[k]
        self._sample_rng = sampler


# ---------------------------------------------------------------------------------------------------------
# the per-env path (Versus-v0 per env, e.g. in a DummyVecEnv)
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

    def _agent(self, member: str) -> Any:
        if member not in self._loaded:
            if member == "random":
                self._loaded[member] = RandomAgent(seed=int(self._rng.integers(2**31)))
            elif member == "greedy":
                self._loaded[member] = GreedyAgent(beam=self.greedy_beam)
            else:
                from .ppo import PPOAgent

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


__all__ = ["PoolVecEnv", "PoolOpponents", "draw_episode", "member_kind", "POOL_SALT", "RANDOM", "GREEDY", "SNAPSHOT"]
