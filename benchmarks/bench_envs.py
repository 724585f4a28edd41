"""Environment speed: observation encoding, the PettingZoo AEC env and the Gymnasium envs.

Warm up (numba compilation, caches), then time. Actions are random legal ones drawn from the mask
(flatnonzero + one pre-drawn uniform number), so the numbers are the envs' own cost plus that draw.
Prints one JSON line per case.

    PYTHONPATH=. python benchmarks/bench_envs.py [--seconds 3]
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import gymnasium as gym
import numpy as np

import harmonies_env.env_gym  # noqa: F401  (registers the Gymnasium envs)
from harmonies_env import Game, GameConfig
from harmonies_env.env_aec import env as aec_env
from harmonies_env.env_aec import raw_env
from harmonies_env.observation import OBS_SIZE, encode_batch, encode_observation


def emit(case: str, **fields) -> None:
    print(json.dumps({"case": case, **fields, "python": platform.python_version()}), flush=True)


def mid_game(config: GameConfig, steps: int) -> Game:
    g = Game(seed=1, config=config)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        if g.is_over:
            break
        g.step(int(rng.choice(g.legal_actions())))
    return g


def bench_observation(seconds: float) -> None:
    for n, side, spirits in ((2, "A", False), (4, "B", True)):
        g = mid_game(GameConfig(n, side, spirits), 40 * n)
        out = np.empty(OBS_SIZE, dtype=np.float32)
        for _ in range(1000):
            encode_observation(g.state, 0, out)
        calls, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(1000):
                encode_observation(g.state, 0, out)
            calls += 1000
        dt = time.perf_counter() - t0
        emit("observation_encode", players=n, side=side, spirits=spirits, calls=calls,
             us_per_call=round(dt / calls * 1e6, 3), note="one Python->njit call per observation")
        rows = 1024
        states = np.repeat(g.state[None, :], rows, axis=0)
        players = np.arange(rows, dtype=np.int64) % n
        outb = np.empty((rows, OBS_SIZE), dtype=np.float32)
        encode_batch(states, players, outb)
        reps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            encode_batch(states, players, outb)
            reps += 1
        dt = time.perf_counter() - t0
        emit("observation_encode_batch", players=n, side=side, spirits=spirits, rows=rows * reps,
             us_per_row=round(dt / (rows * reps) * 1e6, 3))


def bench_aec(seconds: float, wrapped: bool) -> None:
    for n in (2, 4):
        e = aec_env(num_players=n) if wrapped else raw_env(num_players=n)
        rng = np.random.default_rng(0)
        u = rng.random(1 << 16)
        k = 0
        steps = games = 0
        seed = 0
        e.reset(seed=seed)
        warm = True
        t0 = time.perf_counter()
        while True:
            for agent in e.agent_iter():
                obs, _, term, trunc, _ = e.last()
                if term or trunc:
                    e.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                e.step(int(legal[int(u[k & 0xFFFF] * len(legal))]))
                k += 1
                steps += 1
            games += 1
            seed += 1
            e.reset(seed=seed)
            if warm:
                warm, steps, games, t0 = False, 0, 0, time.perf_counter()
            elif time.perf_counter() - t0 >= seconds:
                break
        dt = time.perf_counter() - t0
        emit("aec_step_observe", players=n, wrapped=wrapped, steps=steps, games=games,
             steps_per_s=round(steps / dt), note="env.last() (observe) + env.step() per action")


def bench_gym(seconds: float, env_id: str, make_kwargs: dict, via_make: bool) -> None:
    e = gym.make(env_id, **make_kwargs) if via_make else gym.make(env_id, **make_kwargs).unwrapped
    masks = e.get_wrapper_attr("action_masks") if via_make else e.action_masks
    rng = np.random.default_rng(0)
    u = rng.random(1 << 16)
    k = 0
    e.reset(seed=0)
    for _ in range(2000):  # warm-up
        legal = np.flatnonzero(masks())
        _, _, term, trunc, _ = e.step(int(legal[int(u[k & 0xFFFF] * len(legal))]))
        k += 1
        if term or trunc:
            e.reset()
    steps = episodes = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(1000):
            legal = np.flatnonzero(masks())
            _, _, term, trunc, _ = e.step(int(legal[int(u[k & 0xFFFF] * len(legal))]))
            k += 1
            steps += 1
            if term or trunc:
                e.reset()
                episodes += 1
    dt = time.perf_counter() - t0
    emit("gym_step", env=env_id, **make_kwargs, gym_make_wrappers=via_make, steps=steps, episodes=episodes,
         steps_per_s=round(steps / dt), note="action_masks() + step() per action (+ reset at episode end)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="timed seconds per case")
    args = ap.parse_args()
    bench_observation(args.seconds)
    bench_aec(args.seconds, wrapped=True)
    bench_aec(args.seconds, wrapped=False)
    bench_gym(args.seconds, "harmonies/Solo-v0", {}, via_make=True)
    bench_gym(args.seconds, "harmonies/Solo-v0", {}, via_make=False)
    bench_gym(args.seconds, "harmonies/Versus-v0", {"num_players": 2}, via_make=True)


if __name__ == "__main__":
    main()
