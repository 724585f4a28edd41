"""How tests/data/old_checkpoints/ was written: each file by the writer of the commit in its folder's name, run in
that commit's tree (never by today's code, never edited by hand), so that tests/test_old_checkpoints.py proves that
today's loaders read what earlier versions wrote.

    git archive COMMIT | tar -x -C /tmp/old-COMMIT
    cd /tmp/old-COMMIT && PYTHONPATH=$PWD python /path/to/tests/old_checkpoints.py KIND OUT [ARGS]

    mlp-76a8f8b     mlp OUT/mlp experiments.train_learned agents.learned   sidecar {network, training}, no sha256
    mlp-2902963     mlp OUT/mlp experiments.train_mlp agents.mlp.agent     sidecar {network, sha256, training}
    ntuple-245b3c4  ntuple OUT/ntuple agents.ntuple                        {ntuple, sha256, training}, layout 1
    ntuple-d540ad2  ntuple OUT/learned-win agents.ntuple.agent 2 win       the same, layout 2, the win head
    ppo-afbaac7     ppo OUT/policy.pt                                      flat export, no observation_version
    ppo-2902963     ppo OUT/policy.pt                                      flat export with observation_version
    ppo-76a8f8b     ppo_resume OUT/step_1234.pt experiments.runner         resume checkpoint, format 1 (no games)
    run-2902963     trainer OUT/checkpoints experiments.runner             a run's checkpoint record before the schema
    rllib-2902963   rllib OUT/iter_00003                                   RLlib folder: checkpoint.json + module.pt

Each prints what its network computes on a fixed input; the tests compare today's load with those numbers. Today's
own format (`agents.checkpoint`'s sidecar schema 1) is written and read by the round-trip tests in test_checkpoint.py.
"""
from __future__ import annotations

import sys
from pathlib import Path


def mlp(out: Path, trainer: str, agent: str) -> None:
    """A 1968-2-8 network (seed 0) by the trainer's own `save_agent_checkpoint`."""
    import torch

    tr = __import__(trainer, fromlist=["x"])
    net_of = __import__(agent, fromlist=["x"]).torch_net
    cfg = tr.with_defaults({"network": {"hidden": [2]}}) if hasattr(tr, "with_defaults") else \
        tr.load_config(None, ["network.hidden=[2]"])
    netcfg = tr.network_config(cfg)
    torch.manual_seed(0)
    net = net_of(netcfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    tr.save_agent_checkpoint(out, net.state_dict(), netcfg, {"fixture": f"written by {trainer}.save_agent_checkpoint"})
    print(net(torch.linspace(-1, 1, netcfg["num_features"])[None]).detach().numpy().tolist())


def ntuple(out: Path, module: str, layout: str | None = None, head: str | None = None) -> None:
    """Zeros but every 99,991st weight (-3.0, -2.5, ...): a full layout that compresses to a few KB."""
    import numpy as np

    m = __import__(module, fromlist=["x"])
    n = m.NUM_WEIGHTS if layout is None else m.LAYOUT_WEIGHTS[int(layout)]
    w = np.zeros(n, dtype=np.float32)
    w[::99991] = np.arange(len(w[::99991]), dtype=np.float32) * 0.5 - 3.0
    out.parent.mkdir(parents=True, exist_ok=True)
    kw = {} if head is None else {"head": head}
    m.save_checkpoint(out, w, {"beam": 4, "candidates": 8}, {"fixture": f"written by {module}.save_checkpoint"}, **kw)
    print(n)


def ppo(out: Path) -> None:
    """A MaskableActorCriticPolicy with net_arch [1] (seed 0) by `agents.ppo.save_policy`."""
    import numpy as np
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from agents import ppo as ppo_agents
    from harmonies_env import actions as A
    from harmonies_env.observation import OBS_SIZE

    torch.manual_seed(0)
    policy = MaskableActorCriticPolicy(spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
                                       spaces.Discrete(A.NUM_ACTIONS), lambda _: 0.0, net_arch=[1])
    ppo_agents.save_policy(policy, out)
    x = torch.linspace(0, 1, OBS_SIZE)[None]
    with torch.no_grad():
        print(policy.get_distribution(x).distribution.logits[0, :4].tolist(), policy.predict_values(x)[0].tolist())


def stub_ppo(seed: int = 0):
    """A MaskablePPO (net_arch [1], seed) on a stand-in env of the game's spaces (the checkpoint's format does not
    depend on the env; no engine runs)."""
    import gymnasium as gym
    import numpy as np
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from harmonies_env import actions as A
    from harmonies_env.observation import OBS_SIZE

    class Stand(gym.Env):
        observation_space = gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        action_space = gym.spaces.Discrete(A.NUM_ACTIONS)

        def reset(self, seed=None, options=None):
            return np.zeros(OBS_SIZE, np.float32), {}

        def step(self, action):
            return np.zeros(OBS_SIZE, np.float32), 0.0, True, False, {}

    return MaskablePPO("MlpPolicy", DummyVecEnv([Stand]), seed=seed, policy_kwargs={"net_arch": [1]}, verbose=0)


def ppo_resume(out: Path, runner: str) -> None:
    """A resume checkpoint (`step_N.pt`) by the runner's own `checkpoint_bytes`, of a stand-in model at 1,234 steps
    and 5 updates."""
    model = stub_ppo()
    model.num_timesteps, model._n_updates = 1234, 5
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(__import__(runner, fromlist=["x"]).checkpoint_bytes(model))
    print(float(sum(v.double().sum() for v in model.policy.state_dict().values())))


def trainer(out: Path, runner: str) -> None:
    """A run folder's checkpoint (step_N.pt + its record {timesteps, model, bytes, sha256, state}) by
    `experiments.common.save_checkpoint`, holding the runner's resume checkpoint of a stand-in model at 1,234 steps."""
    from experiments.common import save_checkpoint

    model = stub_ppo()
    model.num_timesteps, model._n_updates = 1234, 5
    save_checkpoint(out, 1234, __import__(runner, fromlist=["x"]).checkpoint_bytes(model),
                    {"evals": [], "minutes": 1.5, "cpu_minutes": 1.25})


def rllib(out: Path) -> None:
    """An RLlib weights-only folder by `experiments.rllib_selfplay.save_checkpoint`, of a stand-in algorithm whose
    learner holds a 2x3 and a 3 array (the writer asks it for nothing else; building a real one needs a Ray cluster
    and writes megabytes)."""
    import numpy as np

    from experiments.rllib_selfplay import POLICY, save_checkpoint

    class Learners:
        def get_weights(self, ids):
            return {POLICY: {"pi.weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
                             "pi.bias": np.array([0.5, -1.0, 2.0], dtype=np.float32)}}

    algo = type("Stand", (), {"learner_group": Learners()})()
    save_checkpoint(algo, out, {"num_players": 2, "side": "B", "spirits": True, "hidden": [1], "seed": 7}, 3)


if __name__ == "__main__":
    kind, out, *rest = sys.argv[1:]
    {"mlp": mlp, "ntuple": ntuple, "ppo": ppo, "ppo_resume": ppo_resume, "trainer": trainer,
     "rllib": rllib}[kind](Path(out), *rest)
