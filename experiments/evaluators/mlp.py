"""The afterstate MLP (`agents.mlp`, the agent `mlp`) as an evaluator of `experiments.selfplay`: the command `mlp`.

Its network reads the mover's afterstate features (`agents.afterstate.afterstate_features`) and predicts every
seat's final total / 100 and who wins (8 outputs, seats relative to the mover). Its fused turn (`decide_rows`) plans
every game's candidates and their features in one threaded numba call (`agents.mlp.Candidates`, the MLP agents' own
proposer: `selfplay.beam`, `selfplay.candidates`, `selfplay.diverse`), scores all of them in ONE forward pass, and
ranks them by the decision weights (`network.value`: P(win), margin, own total); the loop records the chosen
afterstates. A finished game's afterstates become replay-buffer rows (`learn`: their features, and each output's
TD(lambda) targets, `train.lam`, bootstrapped from the network's current predictions; the final outcome at the
end); `after_iteration` takes `train.steps_per_iter` Adam steps on minibatches from the buffer once it holds
`train.min_buffer` rows (learning rate decaying to `train.lr_final` over the schedule, `train.schedule` or
`train.iterations`, then kept; optional mirror-image augmentation). Its extra evaluation meets MCTS (`eval.mcts_every`).
Its agent checkpoint is `agents.mlp`'s (NAME.pt weights + NAME.json sidecar with their SHA-256, written atomically):
what `mlp:PATH` loads.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from agents.afterstate import (
    FEATURE_VERSION,
    NUM_FEATURES,
    SIDE_FEATURE,
    afterstate_features,
    plan_afterstate,
    symmetry_index,
)
from agents.afterstate_agent import Buffers
from agents.evaluator import Context, Evaluator, Finished
from agents.greedy import DEFAULT_WEIGHTS, plan_turn
from agents.mlp import DEFAULT_CONFIG, Candidates, candidate_outputs, check_config, decision_values, torch_net
from agents.mlp import save_checkpoint as save_mlp_checkpoint
from agents.td import lambda_returns
from harmonies_env import state as S
from harmonies_env.batch import play_plans
from harmonies_env.geometry import NUM_SYMMETRIES
from harmonies_env.rules import seat_score
from harmonies_env.scoring import NUM_CATEGORIES

from ..common import ConfigError, Setting
from ..selfplay_config import (
    EvalSection,
    RunSection,
    SelfPlaySection,
    TrainSection,
    check_unit,
    check_whole,
    checked,
    schema_of,
    typed,
)

#: The network's outputs: every seat's final total / 100, then every seat's win logit (seats relative to the mover).
OUTPUTS = 8


@dataclasses.dataclass(frozen=True)
class MLPSelfPlaySection(SelfPlaySection):
    """[selfplay] of the MLP: the framework's keys (its defaults the shipped run's) and the candidates' kind."""

    games: int = 128
    beam: int = 48
    candidates: int = 24
    max_decisions: int = 160
    diverse: bool = False  # candidates cover every central space and card choice (a beam per space), not the plain
    # beam's best plans (`greedy.plan_turn`)


@dataclasses.dataclass(frozen=True)
class MLPTrainSection(TrainSection):
    """[train] of the MLP: the framework's keys, the replay buffer and Adam."""

    lam: float = 1.0  # TD(lambda) of each output: 1 = Monte-Carlo (the final outcome)
    lr: float = 1e-3
    lr_final: float | None = None  # linear decay from lr to it over the schedule, then kept (None: constant)
    batch: int = 256
    steps_per_iter: int = 2  # Adam steps after each iteration (once the buffer holds min_buffer rows)
    buffer: int = 200_000  # replay buffer rows (a ring)
    min_buffer: int = 4096
    win_loss: float = 1.0  # the win head's cross-entropy weight beside the totals' squared error
    weight_decay: float = 0.0
    augment: bool = False  # train on a random mirror image of every seat's board (`afterstate.symmetry_index`)
    init: str = ""  # an MLP checkpoint (NAME.pt + NAME.json) whose weights the network starts from ("": random)


@dataclasses.dataclass(frozen=True)
class MLPEvalSection(EvalSection):
    """[eval] of the MLP: how the network plays the evaluations, and its extra one against MCTS."""

    every: int = 250
    beam: int = 96
    candidates: int = 24
    diverse: bool = False
    mcts_every: int = 0  # every this many iterations (0: never) also meet `mcts:<mcts_iterations>it`
    mcts_games: int = 16  # games (each seed with both seatings); slow (~0.5 s a decision), so rarer than `every`
    mcts_iterations: int = 200


#: Every setting with its default (a config's sections override them; unknown keys are refused).
DEFAULTS: dict[str, dict[str, Any]] = {
    "network": {"hidden": [256, 256], "value": dict(DEFAULT_CONFIG["value"]), "play": dict(DEFAULT_CONFIG["play"])},
    "selfplay": schema_of(MLPSelfPlaySection),
    "train": {**schema_of(MLPTrainSection), "lr_final": Setting(None, like=0.0)},
    "eval": schema_of(MLPEvalSection), "run": schema_of(RunSection)}


def network_config(cfg: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The network's JSON config (`agents.mlp.check_config`) of a checked config's [network]."""
    net = cfg["network"]
    return check_config({"feature_version": FEATURE_VERSION, "num_features": NUM_FEATURES,
                         "hidden": list(net["hidden"]), "value": dict(net["value"]), "play": dict(net["play"])})


def settings(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The validated settings of a config (ConfigError naming a bad section, key or value)."""
    cfg = checked(config, DEFAULTS)
    tr, ev = cfg["train"], cfg["eval"]
    check_whole("train", tr, (("batch", 1), ("steps_per_iter", 0), ("buffer", 1), ("min_buffer", 1)))
    check_whole("eval", ev, (("beam", 1), ("candidates", 1), ("mcts_every", 0), ("mcts_games", 0),
                             ("mcts_iterations", 1)))
    check_unit("train", tr, ("lam",))
    for key in ("lr", "win_loss", "weight_decay", *(("lr_final",) if tr["lr_final"] is not None else ())):
        if not (math.isfinite(tr[key]) and tr[key] >= 0):
            raise ConfigError(f"[train] {key} must be a number >= 0, got {tr[key]!r}")
    if tr["min_buffer"] > tr["buffer"]:
        raise ConfigError(f"[train] min_buffer = {tr['min_buffer']} is more than the buffer holds ({tr['buffer']})")
    try:
        network_config(cfg)
    except ValueError as e:
        raise ConfigError(f"[network] {e}") from None
    return cfg


class MLPEvaluator(Evaluator):
    """The MLP as an `agents.evaluator.Evaluator` (module docstring). learns: False for a self-play worker
    (the network only: no optimizer, no buffer, no start from `train.init`); start: False for a run that resumes
    (its weights come from its checkpoint: `train.init` is not read again)."""

    def __init__(self, cfg: dict[str, dict[str, Any]], learns: bool = True, seed: int = 0, start: bool = True):
        import torch

        self.sp: MLPSelfPlaySection = typed(MLPSelfPlaySection, cfg["selfplay"], "selfplay")
        self.tr: MLPTrainSection = typed(MLPTrainSection, cfg["train"], "train")
        self.ev: MLPEvalSection = typed(MLPEvalSection, cfg["eval"], "eval")
        self.netcfg = network_config(cfg)
        self.threads = max(1, self.sp.threads)
        torch.set_num_threads(self.threads)
        torch.use_deterministic_algorithms(True)
        torch.manual_seed(int(seed))
        self.net = torch_net(self.netcfg)
        self.learns = learns
        self.init_sha256: str | None = None
        self.cands: Candidates | None = None
        self.samples_trained = 0
        self.buf_size = self.buf_pos = 0
        if not learns:
            return
        if self.tr.init and start:
            self.init_sha256 = self._start_from(self.tr.init)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=float(self.tr.lr),
                                    weight_decay=float(self.tr.weight_decay))
        cap = int(self.tr.buffer)
        self.buf_x = np.zeros((cap, NUM_FEATURES), dtype=np.float16)
        self.buf_tot = np.zeros((cap, 4), dtype=np.float32)
        self.buf_win = np.zeros((cap, 4), dtype=np.float32)
        self.buf_np = np.zeros(cap, dtype=np.int64)

    def _start_from(self, path: str) -> str:
        """The network's starting weights from an MLP checkpoint (the same architecture); their file's SHA-256.
        ConfigError naming what does not fit."""
        import torch

        from agents.checkpoint import CheckpointError
        from agents.mlp import load_checkpoint

        try:
            config, state = load_checkpoint(path)
        except (CheckpointError, OSError) as e:
            raise ConfigError(f"[train] init: {e}") from None
        for key in ("feature_version", "num_features", "hidden"):
            if config[key] != self.netcfg[key]:
                raise ConfigError(f"[train] init: {path}'s network has {key} = {config[key]!r}, this run's has "
                                  f"{self.netcfg[key]!r}")
        self.net.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
        return hashlib.sha256(Path(path).with_suffix(".pt").read_bytes()).hexdigest()

    # ---- valuing ----
    def _forward(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.net(torch.from_numpy(np.asarray(x, dtype=np.float32))).numpy()

    def _features(self, afters: np.ndarray, movers: np.ndarray) -> np.ndarray:
        x = np.zeros((len(afters), NUM_FEATURES), dtype=np.float32)
        for i in range(len(afters)):
            afterstate_features(afters[i], int(movers[i]), x[i])
        return x

    def values(self, afters: np.ndarray, movers: np.ndarray, out: np.ndarray) -> None:
        """The points each mover still scores: its predicted final total minus its total at the afterstate."""
        o = self._forward(self._features(afters, movers)) if len(afters) else np.zeros((0, OUTPUTS))
        sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
        for i in range(len(afters)):
            out[i] = 100.0 * float(o[i, 0]) - seat_score(afters[i], int(movers[i]), sc)

    def decide_rows(self, buf: Buffers, states: np.ndarray, kinds: np.ndarray, beam: int, greedy_beam: int,
                    explore: np.ndarray, pick: np.ndarray) -> None:
        """One whole turn in every unfinished game: the candidates and their features in one threaded numba call,
        one forward pass over all of them, each game's best by the decision weights (candidate int(pick x count)
        where `explore`; the greedy planner's plan in its seats; the planner's first at the Spirit choice), the
        chosen afterstates recorded in `buf`, the plans played in one call."""
        G, K = buf.plans.shape[:2]
        if self.cands is None or self.cands.plans.shape[:2] != (G, K):
            self.cands = Candidates(G, K)
        c = self.cands
        buf.recorded[:] = False
        live = states[:, S.GAME_OVER] == 0
        movers = states[:, S.CURRENT].copy()
        greedy = live & (kinds[np.arange(G), movers] == 1)
        c.propose(states, live & ~greedy, DEFAULT_WEIGHTS, beam, self.sp.diverse, self.threads)
        for r in np.flatnonzero(greedy):
            c.counts[r] = plan_turn(states[r], DEFAULT_WEIGHTS, greedy_beam, c.plans[r, :1], c.lens[r, :1],
                                    c.values[r, :1])
        counts = c.counts
        spirit = c.spirit()
        rows = np.flatnonzero(live & ~greedy & ~spirit & (counts > 0))
        outs = candidate_outputs(self._forward, c.feats, counts, rows)
        choice = np.zeros(G, dtype=np.int64)
        value = self.netcfg["value"]
        for r in np.flatnonzero(live & ~greedy & (counts > 0)):
            n = int(counts[r])
            if explore[r]:
                choice[r] = min(n - 1, int(pick[r] * n))
            elif not spirit[r]:
                choice[r] = int(np.argmax(decision_values(outs[r], int(states[r, S.NUM_PLAYERS]), value)))
        sc = np.zeros(NUM_CATEGORIES, dtype=np.int64)
        for r in np.flatnonzero(live & (counts > 0) & ~spirit):  # the Spirit choice changes no board: no afterstate
            k = choice[r]
            buf.after[r] = states[r]
            plan_afterstate(buf.after[r], c.plans[r, k], c.lens[r, k])
            buf.seat[r] = movers[r]
            buf.pred[r] = 100.0 * float(outs[r][k, 0]) - seat_score(buf.after[r], int(movers[r]), sc) if r in outs \
                else 0.0
            buf.recorded[r] = True
        states[live & (counts == 0), S.GAME_OVER] = 1  # cannot happen on a legal position; end the game
        buf.chosen[:] = choice
        play_plans(states, live & (counts > 0), c.plans, c.lens, choice, num_threads=self.threads, min_rows=2)

    # ---- learning ----
    def learn(self, g: Finished, progress: float) -> float:
        """The game's afterstates into the replay buffer, each with its 8 outputs' TD(lambda) targets (bootstrapped
        from the network's current predictions; the final totals / 100 and win shares, from each mover's seat)."""
        m = int(g.m)
        if not self.learns or m == 0:
            return math.nan
        n = int(g.afters[0, S.NUM_PLAYERS])
        seats = np.ascontiguousarray(g.seats[:m], dtype=np.int64)
        x = self._features(g.afters[:m], seats)
        lam = float(self.tr.lam)
        pred = np.zeros((m, OUTPUTS), dtype=np.float32)
        if lam < 1.0:
            o = self._forward(x)
            pred[:, :4] = o[:, :4]
            e = np.exp(o[:, 4: 4 + n] - o[:, 4: 4 + n].max(axis=1, keepdims=True))
            pred[:, 4: 4 + n] = e / e.sum(axis=1, keepdims=True)
        won = np.asarray(g.won, dtype=np.float64)
        nw = max(1.0, float(won[:n].sum()))
        final = np.zeros((OUTPUTS, S.MAX_PLAYERS), dtype=np.float32)  # each output's outcome, for each seat's view
        for p in range(n):
            rel = [(p + q) % n for q in range(n)]
            final[:n, p] = np.asarray(g.totals, dtype=np.float64)[rel] / 100.0
            final[4: 4 + n, p] = won[rel] / nw
        own, none = np.zeros(m, dtype=np.float32), np.full(m, np.nan)
        target = np.zeros((OUTPUTS, m), dtype=np.float32)
        for k in range(OUTPUTS):
            lambda_returns(seats, m, own, np.ascontiguousarray(pred[:, k]), final[k], np.float32(1.0 - lam),
                           np.float32(lam), none, 0.0, target[k])
        cap = self.buf_x.shape[0]
        at = (self.buf_pos + np.arange(m)) % cap
        self.buf_x[at] = x
        self.buf_tot[at] = target[:4].T
        self.buf_win[at] = target[4:].T
        self.buf_np[at] = n
        self.buf_pos = int((self.buf_pos + m) % cap)
        self.buf_size = int(min(cap, self.buf_size + m))
        return math.nan

    def after_iteration(self, ctx: Context) -> float:
        """`train.steps_per_iter` Adam steps on minibatches drawn (ctx.rng) from the buffer, once it holds
        `train.min_buffer` rows; their mean loss."""
        if not self.learns or self.buf_size < int(self.tr.min_buffer) or self.tr.steps_per_iter == 0:
            return math.nan
        return float(np.mean([self._adam_step(ctx) for _ in range(int(self.tr.steps_per_iter))]))

    def _adam_step(self, ctx: Context) -> float:
        import torch

        B = int(self.tr.batch)
        idx = ctx.rng.integers(0, self.buf_size, size=B)
        xb = self.buf_x[idx]
        if self.tr.augment:  # each seat's board in a random one of its 4 mirror images: the same value
            ks = ctx.rng.integers(0, NUM_SYMMETRIES, size=(B, S.MAX_PLAYERS))
            xb = np.take_along_axis(xb, symmetry_index(xb[:, SIDE_FEATURE] > 0.5, ks), axis=1)
        x = torch.from_numpy(xb.astype(np.float32))
        tot = torch.from_numpy(self.buf_tot[idx])
        win = torch.from_numpy(self.buf_win[idx])
        npl = torch.from_numpy(self.buf_np[idx])
        present = (torch.arange(4)[None, :] < npl[:, None]).float()
        out = self.net(x)
        score_loss = (((out[:, :4] - tot) ** 2) * present).sum() / present.sum()
        logits = out[:, 4:].masked_fill(present == 0, -1e9)
        multi = (npl > 1).float()
        ce = -(win * torch.log_softmax(logits, dim=1)).sum(dim=1)
        loss = score_loss + float(self.tr.win_loss) * (ce * multi).sum() / multi.sum().clamp(min=1.0)
        if self.tr.lr_final is not None:  # linear decay over the schedule (a function of the iteration alone)
            for group in self.opt.param_groups:
                group["lr"] = float(self.tr.lr) + ctx.progress * (float(self.tr.lr_final) - float(self.tr.lr))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.samples_trained += B
        return float(loss.item())

    # ---- weights ----
    def get_weights(self) -> dict[str, np.ndarray]:
        return {k: v.detach().numpy() for k, v in self.net.state_dict().items()}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        import torch

        self.net.load_state_dict({k: torch.as_tensor(np.array(v)) for k, v in weights.items()})

    def arrays(self) -> dict[str, np.ndarray]:
        """The network, Adam's moments and steps, and the buffer's filled rows."""
        out = {f"net.{k}": v.copy() for k, v in self.get_weights().items()}
        for i, st in self.opt.state_dict()["state"].items():
            out.update({f"adam.{i}.{k}": v.detach().numpy().copy() for k, v in st.items()})
        n = self.buf_size
        out.update(buf_x=self.buf_x[:n], buf_tot=self.buf_tot[:n], buf_win=self.buf_win[:n], buf_np=self.buf_np[:n])
        return out

    def load_arrays(self, arrays: dict[str, np.ndarray], where: str) -> None:
        import torch

        try:
            self.set_weights({k[4:]: v for k, v in arrays.items() if k.startswith("net.")})
        except RuntimeError as e:
            raise ConfigError(f"{where}: its network does not fit this config's: {e}") from None
        state: dict[int, dict[str, Any]] = {}
        for key, v in arrays.items():
            if key.startswith("adam."):
                _, i, name = key.split(".")
                state.setdefault(int(i), {})[name] = torch.from_numpy(np.array(v))
        self.opt.load_state_dict({"state": state, "param_groups": self.opt.state_dict()["param_groups"]})
        n = len(arrays["buf_np"])
        if n > self.buf_x.shape[0]:
            raise ConfigError(f"{where}: holds {n} buffer rows, this config's train.buffer is {self.buf_x.shape[0]}")
        for name in ("buf_x", "buf_tot", "buf_win", "buf_np"):
            getattr(self, name)[:n] = arrays[name]

    def meta(self) -> dict[str, Any]:
        return {"buf_size": self.buf_size, "buf_pos": self.buf_pos, "samples_trained": self.samples_trained,
                "init_sha256": self.init_sha256}

    def load_meta(self, meta: dict[str, Any]) -> None:
        self.buf_size, self.buf_pos = int(meta["buf_size"]), int(meta["buf_pos"])
        self.samples_trained, self.init_sha256 = int(meta["samples_trained"]), meta.get("init_sha256")

    def save(self, path: Path, play: dict[str, int], info: dict[str, Any]) -> None:
        """NAME.pt + NAME.json (`agents.mlp.save_checkpoint`: what `mlp:PATH` loads); how it plays is the
        network's own `network.play`, not the self-play's `play`."""
        extra = {"init_sha256": self.init_sha256} if self.init_sha256 else {}
        save_mlp_checkpoint(path, self.net.state_dict(), self.netcfg, {**info, **extra})

    # ---- evaluation ----
    def agent(self, beam: int, candidates: int) -> Any:
        """The network as the evaluations play it: `eval.candidates` candidates at beam `eval.beam`, `eval.diverse`,
        the training decision weights, no mirror images (numpy inference of the current weights)."""
        from agents.mlp import MLPAgent, ValueNet

        net = ValueNet(self.netcfg, {k: v.detach().clone() for k, v in self.net.state_dict().items()})
        return MLPAgent(net=net, beam=self.ev.beam, candidates=self.ev.candidates, diverse=self.ev.diverse,
                        symmetries=1, value=self.netcfg["value"], name="mlp")

    def extra_evaluation(self, ctx: Context) -> dict[str, float]:
        """Every `eval.mcts_every` iterations: the network as `agent` plays it vs `MCTSAgent` (`eval.mcts_iterations`
        a decision, one seeded agent per game) on `eval.mcts_games` fixed seeds, each with both seatings."""
        ev = self.ev
        if not (ev.mcts_every > 0 and ev.mcts_games > 0 and ctx.iteration % ev.mcts_every == 0):
            return {}
        from agents.match import play_match, totals_of, win_shares
        from agents.mcts import MCTSAgent
        from agents.policy import AgentPolicy
        from harmonies_env.config import GameConfig

        mcts = AgentPolicy(lambda s: MCTSAgent(iterations=int(ev.mcts_iterations), seed=s), name="mcts")
        res = play_match([self.agent(0, 0), mcts], games=int(ev.mcts_games), seed=int(ev.seed) + 500_000,
                         config=GameConfig(), paired=True, threads=ctx.threads)
        return {"mcts_win_rate": float(win_shares(res, "mlp").mean()),
                "mcts_mean_score": float(totals_of(res, "mlp").mean()),
                "mcts_score": float(totals_of(res, "mcts").mean())}


def make(cfg: dict[str, dict[str, Any]], learns: bool = True, seed: int = 0) -> MLPEvaluator:
    """The framework's `Factory` of the MLP evaluator (its initial weights drawn from the seed, or `train.init`)."""
    return MLPEvaluator(cfg, learns, seed)


def make_resumed(cfg: dict[str, dict[str, Any]], learns: bool = True, seed: int = 0) -> MLPEvaluator:
    """The `Factory` of a resumed run's MLP evaluator: `train.init` is not read (the checkpoint holds the weights)."""
    return MLPEvaluator(cfg, learns, seed, start=False)
