"""MaskablePPO trains on Solo-v0 and Versus-v0 (vs random) and then only ever picks legal actions; self-play against
a pool: the batched `agents.pool_env.PoolVecEnv` plays each row as the agents would, and `experiments.train
selfplay-ppo` runs, resumes (also from another working directory) and reproduces."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

sb3_contrib = pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install -e \".[train]\"")
torch = pytest.importorskip("torch", reason="needs the train extra: pip install -e \".[train]\"")

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from agents import GreedyAgent  # noqa: E402
from agents.pool_env import PoolVecEnv, draw_episode  # noqa: E402
from agents.ppo import PPOAgent  # noqa: E402
from experiments import train  # noqa: E402
from harmonies_env.batch import episode_seed  # noqa: E402
from harmonies_env.config import GameConfig  # noqa: E402
from harmonies_env.env_gym import SoloEnv, VersusEnv  # noqa: E402
from harmonies_env.game import Game  # noqa: E402
from harmonies_env.observation import OBS_SIZE, encode_observation  # noqa: E402
from harmonies_env.rewards import final_rewards  # noqa: E402
from harmonies_env.view import PlayerView  # noqa: E402


def train_and_check(make_env, timesteps: int = 4096, eval_steps: int = 300) -> MaskablePPO:
    torch.set_num_threads(1)
    venv = DummyVecEnv([make_env, make_env])
    venv.seed(0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=256, batch_size=128, n_epochs=2, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [64, 64]})
    model.learn(total_timesteps=timesteps)
    assert model.num_timesteps >= timesteps
    env = make_env()
    obs, _ = env.reset(seed=123)
    legal = episodes = 0
    for _ in range(eval_steps):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        legal += bool(mask[int(action)])
        obs, _, term, trunc, info = env.step(int(action))
        assert "illegal_action" not in info
        if term or trunc:
            episodes += 1
            obs, _ = env.reset()
    assert legal == eval_steps  # 100% legal actions
    assert episodes >= 1
    return model


def test_maskable_ppo_solo():
    model = train_and_check(lambda: SoloEnv())
    # the masked policy's action distribution puts no probability on illegal actions
    env = SoloEnv()
    obs, _ = env.reset(seed=5)
    mask = env.action_masks()
    obs_t, _ = model.policy.obs_to_tensor(obs)
    dist = model.policy.get_distribution(obs_t, action_masks=mask[None])
    probs = dist.distribution.probs.detach().numpy()[0]
    assert probs[~mask].max() == 0 and np.isclose(probs[mask].sum(), 1.0)


def test_maskable_ppo_versus_random():
    train_and_check(lambda: VersusEnv(num_players=2, reward="win"))


# ---------------------------------------------------------------------------------------------------------
# self-play against a pool (agents.pool_env, experiments.train selfplay-ppo)
# ---------------------------------------------------------------------------------------------------------


def learner_obs(g: Game, seat: int) -> np.ndarray:
    out = np.empty(OBS_SIZE, dtype=np.float32)
    encode_observation(g.state.copy(), seat, out)  # writable, as the envs pass it (no read-only compile)
    return out


class Shadow:
    """Row r of a PoolVecEnv replayed in a `Game` whose opponents are agent objects acting on PlayerViews."""

    def __init__(self, env: PoolVecEnv, r: int, make_agent):
        self.env, self.r, self.make_agent = env, r, make_agent
        self.new_game()

    def new_game(self) -> None:
        env, r = self.env, self.r
        seed = episode_seed(int(env.batch.base_seeds[r]), int(env.batch.episodes[r]))
        self.game = Game(env.num_players, "AB"[env.batch.side_code], env.batch.spirits, seed=seed)
        self.seat, members, _ = draw_episode(seed, env.num_players, len(env.pool))
        self.agents = {p: self.make_agent(env.pool[m]) for p, m in enumerate(members) if m >= 0}
        self.opponents_move()

    def opponents_move(self) -> None:
        g = self.game
        while not g.is_over and g.current_player != self.seat:
            p = g.current_player
            g.step(self.agents[p].act(PlayerView(g, p)))

    def check_same(self, obs: np.ndarray) -> None:
        assert np.array_equal(self.env.batch.states[self.r], self.game.state)
        assert np.array_equal(obs[self.r], learner_obs(self.game, self.seat))


def play_beside_shadows(env: PoolVecEnv, make_agent, steps: int, reward: str) -> int:
    """Random legal learner moves in every row; every row must stay the shadow game, position for position,
    and end with the rewards and infos the rules give. Returns how many episodes ended."""
    rng = np.random.default_rng(1)
    obs = env.reset()
    shadows = [Shadow(env, r, make_agent) for r in range(env.num_envs)]
    for sh in shadows:
        sh.check_same(obs)
        assert env.reset_infos[sh.r]["seat"] == sh.seat
    ended = 0
    for _ in range(steps):
        masks = env.action_masks()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rew, dones, infos = env.step(acts)
        for sh, a in zip(shadows, acts):
            r, g = sh.r, sh.game
            g.step(int(a))
            sh.opponents_move()
            if g.is_over:
                ended += 1
                assert dones[r]
                expect = final_rewards(g, reward)[sh.seat]
                assert rew[r] == pytest.approx(expect, abs=1e-6)
                info = infos[r]
                assert info["seat"] == sh.seat and not info["TimeLimit.truncated"]
                assert info["score"] == int(g.scores()[sh.seat]["total"])
                assert info["won"] == (sh.seat in g.winners())
                assert np.array_equal(info["terminal_observation"], learner_obs(g, sh.seat))
                sh.new_game()
            else:
                assert not dones[r] and rew[r] == 0.0
            sh.check_same(obs)
    return ended


@pytest.mark.parametrize("players,reward", [(2, "score"), (3, "win")])
def test_pool_vec_env_greedy_rows_play_as_greedy_agent(players, reward):
    env = PoolVecEnv(3, config=GameConfig(players), reward=reward, pool=["greedy"], greedy_beam=4, seed=11)
    ended = play_beside_shadows(env, lambda m: GreedyAgent(beam=4), steps=70, reward=reward)
    assert ended >= 3


@pytest.mark.parametrize("fmt", ["pt", "zip"])
def test_pool_vec_env_snapshot_rows_play_as_ppo_agent(tmp_path, fmt):
    """A snapshot written as self-play writes them (weights-only .pt + .json) or a user's SB3 zip."""
    from agents.ppo import save_policy

    torch.manual_seed(0)
    model = MaskablePPO("MlpPolicy", VersusEnv(), seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
    path = str(tmp_path / f"snap.{fmt}")
    if fmt == "pt":
        save_policy(model.policy, path)
    else:
        model.save(path)
    env = PoolVecEnv(3, pool=[path], seed=5)
    agent = PPOAgent(path)
    assert play_beside_shadows(env, lambda m: agent, steps=60, reward="score") >= 3

    def sampled(seed: int, sample: bool = True) -> list[np.ndarray]:  # snapshots sampling their policy: seeded
        env = PoolVecEnv(3, pool=[path], seed=seed, opponent_sample=sample)
        seen = [env.reset()]
        for _ in range(60):
            seen.append(env.step(env.action_masks().argmax(axis=1))[0])
        return seen

    a, b = sampled(5), sampled(5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, sampled(5, sample=False)))


def test_pool_vec_env_draws_follow_the_seed():
    def run(seed: int) -> list:
        env = PoolVecEnv(8, pool=["random", "greedy"], seed=seed)
        env.reset()
        seen = [(r, 0, i["seat"], tuple(i["opponents"])) for r, i in enumerate(env.reset_infos)]
        rng = np.random.default_rng(0)
        for _ in range(100):
            acts = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])
            _, rew, dones, infos = env.step(acts)
            seen += [(int(r), int(env.batch.episodes[r]), infos[r]["seat"], tuple(infos[r]["opponents"]),
                      round(float(rew[r]), 6)) for r in np.flatnonzero(dones)]
        # every episode's seat and opponents are draw_episode's for its game seed
        for r in range(env.num_envs):
            seed_r = episode_seed(int(env.batch.base_seeds[r]), int(env.batch.episodes[r]))
            seat, members, _ = draw_episode(seed_r, 2, 2)
            assert env._seat[r] == seat and env.opponents(r) == [env.pool[members[1 - seat]]]
        return seen

    a = run(7)
    assert len(a) > 8 + 8  # every row finished a game
    assert a == run(7)
    assert a != run(8)
    draws = [draw_episode(s, 2, 2) for s in range(200)]
    assert {d[0] for d in draws} == {0, 1} and {int(d[1][1 - d[0]]) for d in draws} == {0, 1}


def test_pool_vec_env_illegal_action_and_truncation(monkeypatch):
    import agents.pool_env as pool_env

    writable = []  # each state the env hands a kernel: writable (a read-only view compiles a second variant)
    for name in ("encode_observation", "random_rows"):
        kernel = getattr(pool_env, name)
        monkeypatch.setattr(pool_env, name, lambda s, *a, k=kernel: (writable.append(s.flags.writeable), k(s, *a))[1])
    env = PoolVecEnv(2, pool=["random"], seed=3, max_steps=4)
    obs = env.reset()
    before = env.batch.states.copy()
    illegal = np.array([int(np.flatnonzero(~m)[0]) for m in env.action_masks()])
    obs2, rew, dones, infos = env.step(illegal)
    assert np.array_equal(obs2, obs) and np.array_equal(env.batch.states, before)
    assert np.allclose(rew, -0.01) and not dones.any()
    assert all(isinstance(i["illegal_action"], str) and i["illegal_action"] for i in infos)
    episodes = env.batch.episodes.copy()
    for _ in range(3):
        acts = env.action_masks().argmax(axis=1)
        obs, rew, dones, infos = env.step(acts)
    assert dones.all()  # 4 learner decisions (the illegal one counts)
    for i in infos:
        assert i["TimeLimit.truncated"] and i["episode"]["l"] == 4 and i["terminal_observation"].shape == (OBS_SIZE,)
    assert len(writable) >= 3 and all(writable)  # the random opponents' moves and the 2 truncated games' last views
    # the truncated games were played out; the rows wait on the learner in their next games
    assert (env.batch.episodes == episodes + 1).all()
    for r in range(2):
        g = env.batch.game(r)
        assert g.current_player == env._seat[r]
        assert np.array_equal(obs[r], learner_obs(g, int(env._seat[r])))


def test_pool_vec_env_rejects_bad_pools():
    with pytest.raises(FileNotFoundError):
        PoolVecEnv(2, pool=["random", "no/such/snapshot.zip"])
    with pytest.raises(ValueError):
        PoolVecEnv(2, pool=[])
    with pytest.raises(ValueError):
        PoolVecEnv(2, seat=2)


def selfplay(run, *extra: str) -> dict:
    """A tiny selfplay-ppo run (or resume) in `run`; its summary.json."""
    argv = ["selfplay-ppo", "--run", str(run), "--no-progress",
            "--set", "run.timesteps=256", "--set", "run.checkpoint_every=128", "--set", "run.eval_every=256",
            "--set", "run.eval_episodes=2", "--set", "env.n_envs=4", "--set", "env.greedy_beam=2",
            "--set", "selfplay.snapshot_every=128", "--set", "selfplay.eval_beam=2",
            "--set", "ppo.n_steps=32", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=2", *extra]
    assert train.main(argv) == 0
    return json.loads((run / "summary.json").read_text())


def test_selfplay_batched_runs_and_resumes_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = selfplay(Path("run"))  # a relative --run
    run = tmp_path / "run"
    assert first["timesteps"] == 256 and (run / "model.pt").exists() and list((run / "tb").iterdir())
    assert first["model"] == str(run / "model.pt") and not list(run.rglob("*.zip"))
    snaps = sorted(p.name for p in (run / "pool").iterdir())  # weights-only snapshots: .pt + .json
    assert snaps == ["step_000000000128.json", "step_000000000128.pt", "step_000000000256.json",
                     "step_000000000256.pt"]
    assert first["pool"] == ["random", "greedy", "pool/step_000000000128.pt", "pool/step_000000000256.pt"]
    evals = train_rows(run / "eval.csv")
    assert [int(e["timesteps"]) for e in evals] == [0, 256] and 0.0 <= float(evals[-1]["win_rate"]) <= 1.0
    # resume from elsewhere, with the same relative name meaning nothing there: the pool paths still resolve
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (run / "pool" / ".step_000000000384.pt.k1ll.tmp").write_bytes(b"torn")  # a snapshot write a kill cut short
    again = selfplay(run, "--resume", "--set", "run.timesteps=512")
    assert again["timesteps"] == 512 and len(again["pool"]) == 6
    assert not [p.name for p in (run / "pool").iterdir() if p.name.startswith(".")]
    assert [int(e["timesteps"]) for e in train_rows(run / "eval.csv")] == [0, 256, 512]
    with pytest.raises(SystemExit, match="already holds a run"):
        selfplay(run)


def train_rows(path) -> list[dict]:
    from experiments.common import read_csv

    return read_csv(path)


def test_selfplay_is_reproducible(tmp_path):
    a = selfplay(tmp_path / "a", "--seed", "3")
    b = selfplay(tmp_path / "b", "--seed", "3")
    pa = torch.load(tmp_path / "a" / "model.pt", weights_only=True)
    pb = torch.load(tmp_path / "b" / "model.pt", weights_only=True)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert a["final_eval"]["mean_score"] == b["final_eval"]["mean_score"]


def test_selfplay_per_env_path(tmp_path):
    out = selfplay(tmp_path / "s", "--set", 'env.vec="dummy"', "--set", "env.n_envs=2")
    assert out["timesteps"] == 256 and len(out["pool"]) == 4
    with pytest.raises(SystemExit, match="opponent_sample"):
        selfplay(tmp_path / "t", "--set", 'env.vec="dummy"', "--set", "env.opponent_sample=true")


# ---------------------------------------------------------------------------------------------------------
# resuming a PPO run is exact: the same weights and evaluation rows as the run never stopped
# ---------------------------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
#: Tiny runs: 2 games, rollouts of 2 x 64 steps (a checkpoint after each), evaluations every 256 steps.
TINY = {"solo-ppo": ["--set", "env.n_envs=2", "--set", "ppo.net_arch=[32]"],
        "versus-ppo": ["--set", "env.n_envs=2", "--set", "ppo.net_arch=[32]"],
        "selfplay-ppo": ["--set", "env.n_envs=2", "--set", "env.greedy_beam=2", "--set", "selfplay.snapshot_every=128",
                         "--set", "selfplay.eval_beam=2", "--set", "env.opponent_sample=true"]}
COMMON = ["--no-progress", "--set", "run.checkpoint_every=128", "--set", "run.eval_every=256",
          "--set", "run.eval_episodes=2", "--set", "ppo.n_steps=64", "--set", "ppo.batch_size=64",
          "--set", "ppo.n_epochs=2"]


def ppo_argv(algo: str, run: Path, steps: int | None, *extra: str) -> list[str]:
    out = [algo, "--run", str(run), *COMMON, *TINY[algo], *extra]
    return out + (["--set", f"run.timesteps={steps}"] if steps is not None else [])


def final_checkpoint(run: Path) -> dict:
    from experiments.common import latest_checkpoint

    return torch.load(latest_checkpoint(run / "checkpoints")[0], weights_only=True)


def assert_same(a, b, where: str = "") -> None:
    """Every tensor equal (torch.equal), every other value equal, recursively."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, set(a) ^ set(b))
        for k in a:
            assert_same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def episodes(ck: dict) -> list[tuple]:
    """The finished training episodes in a checkpoint's statistics window (return, length: not wall time)."""
    return [(e["r"], e["l"]) for e in json.loads(ck["ep_info"])]


def assert_same_run(a: Path, b: Path) -> None:
    """Runs a and b ended bit-identical: final checkpoint (weights, optimizer, counters, generators, games in
    flight), exported policy, and evaluation rows but for their wall / CPU minutes."""
    ca, cb = final_checkpoint(a), final_checkpoint(b)
    assert episodes(ca) == episodes(cb)
    ca.pop("ep_info"), cb.pop("ep_info")
    assert_same(ca, cb)
    assert_same(torch.load(a / "model.pt", weights_only=True), torch.load(b / "model.pt", weights_only=True))
    rows = [[{k: v for k, v in r.items() if "minutes" not in k} for r in train_rows(run / "eval.csv")]
            for run in (a, b)]
    assert rows[0] == rows[1] and len(rows[0]) >= 3


@pytest.mark.parametrize("algo", ["solo-ppo", "versus-ppo", "selfplay-ppo"])
def test_ppo_stopped_and_resumed_is_bit_identical(tmp_path, algo, capsys):
    """A run stopped after 3 updates (run.timesteps) and resumed to 6 ends as the run of 6 updates never stopped:
    the games in flight, SB3's last observations, the generators and the optimizer all come back."""
    assert train.main(ppo_argv(algo, tmp_path / "a", 768)) == 0
    assert train.main(ppo_argv(algo, tmp_path / "b", 384)) == 0
    stopped = final_checkpoint(tmp_path / "b")
    assert stopped["num_timesteps"] == 384 and "env" in stopped and "last_obs" in stopped
    capsys.readouterr()
    assert train.main([algo, "--run", str(tmp_path / "b"), "--resume", "--no-progress",
                       "--set", "run.timesteps=768"]) == 0
    out = capsys.readouterr().out
    assert "at 384 steps" in out and "not bit-identical" not in out
    assert_same_run(tmp_path / "a", tmp_path / "b")
    done = final_checkpoint(tmp_path / "a")
    # games were cut mid-episode at the stop, and episodes ended on both sides of it
    assert 0 < len(episodes(stopped)) < len(episodes(done))


#: Steps of the solo runs killed or stopped by time (16 updates: long enough to kill it after its first checkpoint).
REF_STEPS = 2048


@pytest.fixture(scope="module")
def solo_reference(tmp_path_factory) -> Path:
    """The uninterrupted solo run the killed ones are compared with."""
    run = tmp_path_factory.mktemp("ref") / "run"
    assert train.main(ppo_argv("solo-ppo", run, REF_STEPS)) == 0
    return run


def test_ppo_killed_after_a_checkpoint_resumes_bit_identical(tmp_path, solo_reference):
    """A real training process SIGKILLed right after its first checkpoint resumes to the unstopped run."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from experiments.common import latest_checkpoint

    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "experiments.train", *ppo_argv("solo-ppo", run, REF_STEPS)],
                            cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600  # a loaded machine slows the start (imports, kernels)
    while latest_checkpoint(run / "checkpoints") is None and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    out = proc.communicate()[0]
    killed_at = latest_checkpoint(run / "checkpoints")[1]["timesteps"]
    assert killed_at < REF_STEPS and not (run / "summary.json").exists(), out[-3000:]
    assert train.main(["solo-ppo", "--run", str(run), "--resume", "--no-progress"]) == 0
    assert_same_run(solo_reference, run)


def test_ppo_killed_before_its_first_checkpoint_resumes_from_scratch(tmp_path, solo_reference, capsys):
    """A folder a kill left before any checkpoint (its config, the step-0 evaluation, a torn write) is started
    again by --resume, from scratch, and ends as the unstopped run; a folder of another command or seed is
    still refused."""
    from experiments.commands import save_run_config
    from experiments.common import atomic_write_csv

    run = tmp_path / "run"
    save_run_config(train.resolve(train.build_parser().parse_args(ppo_argv("solo-ppo", run, REF_STEPS))))
    atomic_write_csv(run / "eval.csv", [{"timesteps": 0, "mean_score": -1.0}])
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / ".step_000000000128.pt.x1.tmp").write_bytes(b"torn")
    with pytest.raises(SystemExit, match="is a solo-ppo run, not versus-ppo"):
        train.main(["versus-ppo", "--run", str(run), "--resume"])
    with pytest.raises(SystemExit, match="the run's seed is 0, not 1"):
        train.main(["solo-ppo", "--run", str(run), "--resume", "--seed", "1"])
    capsys.readouterr()
    assert train.main(["solo-ppo", "--run", str(run), "--resume", "--no-progress"]) == 0
    assert "starting the run from scratch" in capsys.readouterr().out
    assert_same_run(solo_reference, run)


def test_env_states_put_back_continue_the_same_games():
    """`get_state` / `set_state` of the batched training envs: a fresh env given a state mid-game steps on exactly
    as the env it came from; a state that does not fit is refused and leaves the env as it was."""
    from harmonies_env.vector import make_sb3_vec_env

    def play(env, rng, steps: int) -> list:
        seen = []
        for _ in range(steps):
            acts = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])
            obs, rew, dones, infos = env.step(acts)
            seen.append((obs, rew, dones, [{k: v for k, v in i.items() if k != "episode"} for i in infos]))
        return seen

    def same(x, y) -> None:
        for (o1, r1, d1, i1), (o2, r2, d2, i2) in zip(x, y):
            assert np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2)
            assert [sorted(i) for i in i1] == [sorted(i) for i in i2]
            for a, b in zip(i1, i2):
                for k in a:
                    assert np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k]

    for make in (lambda: make_sb3_vec_env(3, num_players=2, seat=None, max_steps=70, seed=4),
                 lambda: make_sb3_vec_env(2, num_players=1, seed=9),
                 lambda: PoolVecEnv(3, pool=["random", "greedy"], greedy_beam=2, opponent_sample=True, seed=2)):
        env = make()
        env.reset()
        play(env, np.random.default_rng(0), 60)
        state = env.get_state()
        masks = env.action_masks()
        later = play(env, np.random.default_rng(1), 150)
        other = make()
        other.reset()
        before = other.get_state()
        bad = dict(state)
        key = "states" if "states" in bad else "batch_states"
        bad[key] = bad[key].copy()
        bad[key][1, 0] = 99  # not a valid position
        with pytest.raises(ValueError):
            other.set_state(bad)
        after = other.get_state()
        assert all(np.array_equal(before[k], after[k]) for k in before if isinstance(before[k], np.ndarray))
        other.set_state(state)
        assert np.array_equal(other.action_masks(), masks)
        same(later, play(other, np.random.default_rng(1), 150))


def test_pool_env_loads_snapshots_without_touching_torchs_generator(tmp_path):
    """Loading a snapshot builds a network (which draws initial weights): the learner's generator must not move,
    or a resumed run, loading its snapshots anew, would sample other actions than the unstopped one."""
    from agents.ppo import save_policy

    model = MaskablePPO("MlpPolicy", VersusEnv(), seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
    path = save_policy(model.policy, tmp_path / "snap.pt")
    env = PoolVecEnv(2, pool=[str(path)], seed=5)
    torch.manual_seed(3)
    before = torch.get_rng_state()
    env.reset()
    while str(path) not in env._models:  # until a snapshot opponent has moved
        env.step(env.action_masks().argmax(axis=1))
    assert torch.equal(torch.get_rng_state(), before)


def test_ppo_stopped_by_the_time_limit_resumes_bit_identical(tmp_path, solo_reference):
    """--max-minutes stops training between two rollouts, where the last checkpoint catches everything."""
    run = tmp_path / "run"
    assert train.main(ppo_argv("solo-ppo", run, REF_STEPS, "--max-minutes", "0.005")) == 0
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["stopped_by_time"] and stopped["timesteps"] < REF_STEPS and stopped["timesteps"] % 128 == 0
    assert train.main(["solo-ppo", "--run", str(run), "--resume", "--no-progress"]) == 0
    assert_same_run(solo_reference, run)


def test_ppo_resume_says_when_it_cannot_be_exact(tmp_path, capsys):
    """Where the games in flight cannot come back (another number of games, the per-env path), --resume goes on
    with new games and says so in one line."""
    run = tmp_path / "run"
    assert train.main(ppo_argv("solo-ppo", run, 128)) == 0
    capsys.readouterr()
    assert train.main(["solo-ppo", "--run", str(run), "--resume", "--no-progress", "--set", "env.n_envs=4",
                       "--set", "run.timesteps=384"]) == 0
    out = capsys.readouterr().out
    assert "note: its games in flight do not fit this run's env" in out and "not bit-identical" in out
    assert json.loads((run / "summary.json").read_text())["timesteps"] == 384
    d = tmp_path / "dummy"
    assert train.main(ppo_argv("solo-ppo", d, 128, "--set", 'env.vec="dummy"')) == 0
    capsys.readouterr()
    assert train.main(["solo-ppo", "--run", str(d), "--resume", "--no-progress", "--set", "run.timesteps=256"]) == 0
    assert "(DummyVecEnv) cannot take back games in flight" in capsys.readouterr().out


def test_export_records_the_observation_version_and_loading_refuses_another(tmp_path):
    """A policy export names the observation encoding it was trained on (`OBS_VERSION`); `PPOAgent`, `ppo:PATH`
    and `[run] init` refuse another version, naming both; an older export without the field loads by its size."""
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from agents import make_agent
    from agents.ppo import load_policy, save_policy
    from experiments.common import ConfigError
    from experiments.ppo.checkpoint import init_from
    from harmonies_env.actions import NUM_ACTIONS
    from harmonies_env.observation import OBS_VERSION

    model = MaskablePPO("MlpPolicy", VersusEnv(), seed=0, device="cpu", policy_kwargs={"net_arch": [8]})
    path = save_policy(model.policy, tmp_path / "p.pt")
    cpath = path.with_suffix(".json")
    saved = json.loads(cpath.read_text())  # agents.checkpoint's sidecar: the policy config in "config"
    config = saved["config"]
    assert config["observation_version"] == OBS_VERSION and isinstance(OBS_VERSION, int)
    assert PPOAgent(path).kind == "action"
    other = OBS_VERSION + 1
    cpath.write_text(json.dumps({**saved, "config": {**config, "observation_version": other}}))
    msg = f"observation version {other}, this code encodes observation version {OBS_VERSION}"
    with pytest.raises(ValueError, match=msg):
        PPOAgent(path)
    with pytest.raises(ValueError, match=msg):
        make_agent(f"ppo:{path}")
    with pytest.raises(ConfigError, match=msg):
        init_from(model, path)
    checkpoint = tmp_path / "ck.pt"  # a resume checkpoint recording another version: refused by [run] init too
    torch.save({"format": "harmonies-ppo-checkpoint-2", "policy": model.policy.state_dict(),
                "observation_version": other}, checkpoint)
    with pytest.raises(ConfigError, match=msg):
        init_from(model, checkpoint)
    old = {k: v for k, v in config.items() if k != "observation_version"}  # written before the field existed
    cpath.write_text(json.dumps({**saved, "config": old}))
    agent = PPOAgent(path)
    view = PlayerView(Game(2, seed=1), 0)
    assert view.action_mask[agent.act(view)]
    init_from(model, path)
    # an old export of another observation size: loads as a policy, but no agent plays it (by its size, as before)
    small = MaskableActorCriticPolicy(spaces.Box(-1, 1, (5,), np.float32), spaces.Discrete(NUM_ACTIONS),
                                      lambda _: 0.0, net_arch=[4])
    spath = save_policy(small, tmp_path / "small.pt")
    assert json.loads(spath.with_suffix(".json").read_text())["config"]["observation_version"] is None
    assert load_policy(spath).observation_space.shape == (5,)
    with pytest.raises(ValueError, match=r"observation shape \(5,\)"):
        PPOAgent(spath)
