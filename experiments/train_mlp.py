"""Train the afterstate value network (`agents.mlp`, the MLP that spec `mlp` plays) from scratch by
batched self-play. The algo keeps its name: `python -m experiments.train mlp`.

    python -m experiments.train mlp --run runs/mlp --set run.iterations=17500
    harmonies train mlp --run runs/mlp --max-minutes 60      # the same command, from the CLI
    python -m experiments.train mlp --run runs/mlp --resume  # after a kill, or to go on

It runs under `experiments.train` like every training command: the run-level flags (--config --set --seed --run
--resume --max-minutes --device --no-progress) are parsed there, the config is validated there against `SCHEMAS`
(`experiments.common.check_config`), the run folder holds config.json, checkpoints/ (`experiments.common`'s
atomic checkpoints: `step_<iteration>.pt` + its `.json` record with size and SHA-256), tb/ (when tensorboard is
installed) and summary.json as every run does.

Each iteration every game of the batch makes one decision: ONE numba call plans the mover's turn in every game
(`agents.mlp.Candidates`, the MLP agents' proposer: threads over row ranges) and writes each candidate's
afterstate features, ONE forward pass of the network scores all candidates of all games, each game plays its best
candidate (a uniformly random one with probability `epsilon`), and ONE numba call plays the chosen plans
(`batch.play_plans`, the engine's whole-plan stepper). A game's recorded afterstates get Monte-Carlo targets when it
ends (every seat's final total and who won, relative to the mover) and go to a replay buffer; `steps_per_iter` Adam
steps on minibatches from it follow each iteration. A fraction of the games (`greedy_games`) seats the heuristic (the
planner's first plan) in one seat, so the network also meets the hand-written evaluation; the rest is pure self-play.

Before the first iteration and every `eval.every` iterations the network (alone, `eval.beam` candidates as `mlp`
plays) meets GreedyAgent's planner (beam 24) on `eval.games` fixed seeds that training never uses (each seed with
both seatings); every `eval.mcts_every` iterations it also meets `mcts:200it` (`eval.mcts_games` games on fixed
seeds of their own). The rows go to `progress.csv` (and TensorBoard when installed), the best network by win rate
against greedy to `best.pt/.json`. Evaluations draw nothing from the training generator, so they do not change
the run.

`--workers N` (`selfplay.workers`) plays the self-play in N workers instead (`experiments.mlp_workers`: each
with its own `selfplay.games` games; local processes, as for `learned`, or Ray actors with `--ray ADDRESS`,
`run.ray`): each iteration every worker makes one decision in each of its games, the ended games' samples go into
the replay buffer in worker order, and the weights are published to the workers every `selfplay.publish_every` Adam
steps. The same seed and worker count give the same run; checkpoints hold the workers' games in flight, so `--resume`
is exact; a worker that dies is put back where it was (docs/distributed.md).

`run.init` (an MLP checkpoint, e.g. `agents/checkpoints/mlp.pt`) starts the network from its weights instead of
random ones (same architecture; fresh optimizer and buffer): fine-tuning, or another variant from the shipped network.
The run then depends on that file's contents too; `model.json` records its SHA-256.

Reproducible and kill-safe: a run is a function of its config and `--seed` alone (iteration-based schedules,
one numpy generator whose state is checkpointed, deterministic torch CPU kernels); every `checkpoint_every`
iterations the complete trainer state (network, optimizer, generator, games in flight, replay buffer) is written to
`checkpoints/step_<iteration>.pt` (tensors) and its `.json` record (the rest, and the .pt's SHA-256; written
second, so a checkpoint counts only once both are complete), and `--resume` continues from the newest complete
checkpoint, so a run killed at any moment and resumed ends bit-identical to one never interrupted. A resumed run
must keep the settings that shape it (all but `network.play` and `run.iterations`).
Nothing is pickled: tensors go through `torch.save`/`torch.load(weights_only=True)`, everything else is JSON.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from agents.afterstate import (
    NUM_FEATURES,
    SIDE_FEATURE,
    symmetry_index,
)
from agents.greedy import DEFAULT_WEIGHTS
from agents.mlp import (
    Candidates,
    candidate_outputs,
    check_config,
    decision_values,
    torch_net,
)
from agents.mlp import save_checkpoint as save_checkpoint_files
from agents.td import lambda_returns
from harmonies_env import state as S
from harmonies_env.batch import outcome, play_plans
from harmonies_env.config import GameConfig
from harmonies_env.firstrun import install_hint
from harmonies_env.geometry import NUM_SYMMETRIES
from harmonies_env.scoring import NUM_CATEGORIES

from .commands import RunArgs
from .common import (
    ConfigError,
    atomic_write_csv,
    atomic_write_json,
    iterate,
    latest_checkpoint,
    remove_temp_files,
    save_checkpoint,
)
from .common import check_config as check_settings
from .mlp_config import (
    DEFAULTS,
    SCHEMAS,  # noqa: F401  (the command's schema: experiments.commands reads it here)
    TRAIN_SEED_LOW,
    _training_part,
    network_config,
)

#: Largest trainer state (`step_*.pt`) read on --resume, in bytes; its members may declare no more than it holds.
MAX_STATE_BYTES = 4 << 30

# ------------------------------------------------------------------------------------------------ atomic files


def _torch_bytes(obj: Any) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def save_agent_checkpoint(path: Path, state_dict: dict, netcfg: dict, info: dict) -> None:
    """NAME.pt (weights only) + NAME.json (`agents.checkpoint`'s sidecar: the config the agent needs, the SHA-256
    of NAME.pt, which `agents.mlp.load_checkpoint` checks, and how it was trained): `agents.mlp.save_checkpoint`."""
    save_checkpoint_files(path, state_dict, netcfg, info)


# ------------------------------------------------------------------------------------------------ the trainer

class Trainer:
    """Batched self-play + replay-buffer training of the value network (see the module docstring)."""

    def __init__(self, cfg: dict, seed: int, run: Path, device: str = "cpu", progress: bool = True,
                 init: bool = True):
        """init: start the network from `run.init` when set (False when a checkpoint will be loaded instead)."""
        import torch

        self.cfg = cfg
        self.sp = cfg["selfplay"]
        self.tr = cfg["train"]
        self.ev = cfg["eval"]
        self.seed = int(seed)
        self.run = run
        self.device = torch.device(device)
        self.progress = progress
        self.netcfg = network_config(cfg)
        threads = int(cfg["run"]["threads"])
        torch.set_num_threads(max(1, threads))
        torch.use_deterministic_algorithms(True)
        torch.manual_seed(self.seed)
        self.threads = max(1, threads)
        self.net = torch_net(self.netcfg).to(self.device)
        self.init_sha256: str | None = None
        if init and cfg["run"]["init"]:
            self.init_sha256 = self._init_from(str(cfg["run"]["init"]))
        self.opt = torch.optim.Adam(self.net.parameters(), lr=float(self.tr["lr"]),
                                    weight_decay=float(self.tr["weight_decay"]))
        self.rng = np.random.default_rng(self.seed)
        G, K = int(self.sp["games"]), int(self.sp["candidates"])
        self.G, self.K = G, K
        self.D = int(self.sp["max_decisions"])
        self.states = np.zeros((G, S.STATE_SIZE), dtype=np.int64)
        self.greedy_seat = np.full(G, -1, dtype=np.int64)     # seat played by the heuristic, -1 = none
        self.pend_x = np.zeros((G, self.D, NUM_FEATURES), dtype=np.float16)
        self.pend_seat = np.zeros((G, self.D), dtype=np.int64)
        self.pend_n = np.zeros(G, dtype=np.int64)
        self.pend_v = np.zeros((G, self.D, 8), dtype=np.float32)  # prediction at play time: totals, win probs
        cap = int(self.tr["buffer"])
        self.buf_x = np.zeros((cap, NUM_FEATURES), dtype=np.float16)
        self.buf_tot = np.zeros((cap, 4), dtype=np.float32)
        self.buf_win = np.zeros((cap, 4), dtype=np.float32)
        self.buf_np = np.zeros(cap, dtype=np.int64)
        self.buf_size = 0
        self.buf_pos = 0
        self.iteration = 0
        self.games_done = 0
        self.decisions = 0
        self.samples_trained = 0
        self.loss_ema = float("nan")
        self.best_win = -1.0
        self.evals: list[dict[str, Any]] = []
        self.started = time.time()
        self.command = "python -m experiments.train mlp"  # `run` sets the one typed, with its arguments
        self.elapsed_before = 0.0
        self.pool: Any = None  # the self-play workers (`connect`), when selfplay.workers > 0
        self.published: dict[str, Any] | None = None  # the weights the workers play with (a copy)
        self.since_publish = 0  # Adam steps since they were published
        self.worker_snaps: list[dict[str, Any]] | None = None  # the workers' games in flight, from a checkpoint
        self._worker_plain: list[dict[str, Any]] = []  # their snapshot's plain values, for meta()
        self.cands = Candidates(G, K)  # the MLP agents' own proposer and buffers
        self.plans, self.lens, self.feats, self.counts = (self.cands.plans, self.cands.lens, self.cands.feats,
                                                          self.cands.counts)
        self._tmp = np.zeros(NUM_CATEGORIES, dtype=np.int64)
        for r in range(G):
            self._new_game(r)

    def _init_from(self, path: str) -> str:
        """Load the network's starting weights from an MLP checkpoint (weights only); their SHA-256. ValueError
        (or FileNotFoundError) naming what does not fit."""
        import torch

        from agents.mlp import load_checkpoint

        config, state = load_checkpoint(path)
        theirs = check_config(config)
        for key in ("feature_version", "num_features", "hidden"):
            if theirs[key] != self.netcfg[key]:
                raise ValueError(f"run.init {path}: its network has {key} = {theirs[key]!r}, this run's has "
                                 f"{self.netcfg[key]!r}")
        try:
            self.net.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
        except RuntimeError as e:
            raise ValueError(f"run.init {path}: its weights do not fit this network: {e}") from None
        return hashlib.sha256(Path(path).with_suffix(".pt").read_bytes()).hexdigest()  # the file load_checkpoint read

    # ---- games ----
    def _new_game(self, r: int) -> None:
        sp = self.sp
        n = int(self.rng.choice(np.asarray(sp["players"], dtype=np.int64)))
        side = 0 if str(self.rng.choice(np.asarray(sp["sides"]))) == "A" else 1
        spirits = int(bool(self.rng.choice(np.asarray(sp["spirits"], dtype=bool))))
        seed = int(self.rng.integers(TRAIN_SEED_LOW, 2**62))
        S.init_state(self.states[r], n, side, spirits, seed)
        g = self.rng.random() < float(sp["greedy_games"]) and n > 1
        self.greedy_seat[r] = int(self.rng.integers(n)) if g else -1
        self.pend_n[r] = 0

    def _play(self, states: np.ndarray, active: np.ndarray, plans: np.ndarray, lens: np.ndarray,
              choice: np.ndarray) -> None:
        """Each active row plays its chosen plan (`batch.play_plans`, two rows are worth a thread); the plans
        were made on these very states, so none is refused."""
        play_plans(states, active, plans, lens, choice, num_threads=self.threads, min_rows=2)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.net(torch.from_numpy(x).to(self.device)).cpu().numpy()

    def _outputs(self, feats: np.ndarray, counts: np.ndarray, rows: np.ndarray) -> dict[int, np.ndarray]:
        """Network outputs for every candidate of the given rows, in ONE forward pass: row -> (counts[r], 8)."""
        return candidate_outputs(self._forward, feats, counts, rows)

    def selfplay_step(self) -> None:
        """One decision in every game: plan, score all candidates in one forward, play, collect finished games."""
        G = self.G
        active = np.ones(G, dtype=np.bool_)
        self.cands.propose(self.states, active, DEFAULT_WEIGHTS, int(self.sp["beam"]), bool(self.sp["diverse"]),
                           self.threads)
        movers = self.states[:, S.CURRENT]
        choice = np.zeros(G, dtype=np.int64)
        spirit = self.cands.spirit()
        use_net = (self.counts > 1) & (movers != self.greedy_seat) & ~spirit
        lam = float(self.tr["lam"])
        rows = np.flatnonzero((self.counts > 0) & ~spirit) if lam < 1.0 else np.flatnonzero(use_net)
        explore = self.rng.random(G) < float(self.sp["epsilon"])
        outs = self._outputs(self.feats, self.counts, rows)
        value = self.netcfg["value"]
        for r, o in outs.items():
            if use_net[r]:
                choice[r] = int(np.argmax(decision_values(o, int(self.states[r, S.NUM_PLAYERS]), value)))
        rand = self.rng.integers(0, np.maximum(self.counts, 1))
        choice = np.where(use_net & explore, rand, choice)
        for r in range(G):  # record the chosen afterstate (not the Spirit choice: the board does not change)
            if self.counts[r] and not spirit[r] and self.pend_n[r] < self.D:
                j = self.pend_n[r]
                self.pend_x[r, j] = self.feats[r, choice[r]]
                self.pend_seat[r, j] = movers[r]
                if lam < 1.0:
                    o = outs[r][choice[r]]
                    n = int(self.states[r, S.NUM_PLAYERS])
                    self.pend_v[r, j, :4] = o[:4]
                    e = np.exp(o[4: 4 + n] - o[4: 4 + n].max())
                    self.pend_v[r, j, 4:] = 0.0
                    self.pend_v[r, j, 4: 4 + n] = e / e.sum()
                self.pend_n[r] += 1
        self.decisions += int((self.counts > 0).sum())
        self._play(self.states, active, self.plans, self.lens, choice)
        totals = np.zeros(4, dtype=np.int64)
        won = np.zeros(4, dtype=np.int64)
        for r in np.flatnonzero(self.states[:, S.GAME_OVER] | (self.counts == 0)):
            if self.states[r, S.GAME_OVER]:
                outcome(self.states[r], totals, self._tmp, won)
                self._store(r, totals, won)
                self.games_done += 1
            self._new_game(int(r))

    # ---- self-play on workers ----
    def connect(self, address: str) -> None:
        """Start `selfplay.workers` self-play actors (`experiments.mlp_workers`): local processes
        ("processes"), or Ray actors at a Ray address ("local": this machine); put back the checkpoint's games in
        flight when resuming, and publish the weights they played with (the network's own when starting)."""
        from .mlp_workers import MLPWorkers

        self.pool = MLPWorkers(type(self), self.cfg, self.seed, int(self.sp["workers"]), address)
        if self.worker_snaps is not None:
            self.pool.restore(self.worker_snaps)
            self.worker_snaps = None
        if self.published is None:
            self.published = {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()}
        self.pool.publish(self.published)

    def publish(self) -> None:
        """The network's current weights to the workers (for their next decisions)."""
        self.published = {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()}
        self.pool.publish(self.published)
        self.since_publish = 0

    def collect_step(self) -> None:
        """One decision in every game of every worker; the ended games' samples into the buffer, worker order."""
        from .mlp_workers import feed

        feed(self, self.pool.collect(1))

    def _store(self, r: int, totals: np.ndarray, won: np.ndarray) -> None:
        n = int(self.states[r, S.NUM_PLAYERS])
        m = int(self.pend_n[r])
        cap = self.buf_x.shape[0]
        nw = max(1, int(won[:n].sum()))
        lam = float(self.tr["lam"])
        final = np.zeros((8, S.MAX_PLAYERS), dtype=np.float32)  # each output's outcome, for each seat's view
        for p in range(n):
            rel = [(p + q) % n for q in range(n)]
            final[:n, p] = totals[rel] / 100.0
            final[4: 4 + n, p] = won[rel] / nw
        # each output's lambda-returns (G_k = (1 - lam) V(next) + lam G_next, G_last = the outcome), in float32
        seats = np.ascontiguousarray(self.pend_seat[r, :m], dtype=np.int64)
        own, none = np.zeros(m, dtype=np.float32), np.full(m, np.nan)
        target = np.zeros((8, m), dtype=np.float32)
        for c in range(8):
            lambda_returns(seats, m, own, np.ascontiguousarray(self.pend_v[r, :m, c]), final[c],
                           np.float32(1.0 - lam), np.float32(lam), none, 0.0, target[c])
        target = target.T
        for j in range(m):
            i = self.buf_pos
            self.buf_x[i] = self.pend_x[r, j]
            self.buf_tot[i] = target[j, :4]
            self.buf_win[i] = target[j, 4:]
            self.buf_np[i] = n
            self.buf_pos = (i + 1) % cap
            self.buf_size = min(cap, self.buf_size + 1)

    def train_step(self) -> float:
        import torch

        B = int(self.tr["batch"])
        idx = self.rng.integers(0, self.buf_size, size=B)
        xb = self.buf_x[idx]
        if self.tr["augment"]:  # each seat's board in a random one of its 4 mirror images: the same value
            ks = self.rng.integers(0, NUM_SYMMETRIES, size=(B, S.MAX_PLAYERS))
            xb = np.take_along_axis(xb, symmetry_index(xb[:, SIDE_FEATURE] > 0.5, ks), axis=1)
        x = torch.from_numpy(xb.astype(np.float32)).to(self.device)
        tot = torch.from_numpy(self.buf_tot[idx]).to(self.device)
        win = torch.from_numpy(self.buf_win[idx]).to(self.device)
        npl = torch.from_numpy(self.buf_np[idx]).to(self.device)
        seats = torch.arange(4, device=self.device)[None, :]
        present = (seats < npl[:, None]).float()
        out = self.net(x)
        score_loss = (((out[:, :4] - tot) ** 2) * present).sum() / present.sum()
        logits = out[:, 4:].masked_fill(present == 0, -1e9)
        multi = (npl > 1).float()
        ce = -(win * torch.log_softmax(logits, dim=1)).sum(dim=1)
        win_loss = (ce * multi).sum() / multi.sum().clamp(min=1.0)
        loss = score_loss + float(self.tr["win_loss"]) * win_loss
        final = self.tr["lr_final"]
        if final is not None:  # linear decay over the configured iterations (a function of the iteration alone)
            frac = min(1.0, self.iteration / max(1, int(self.tr["iterations"])))
            for group in self.opt.param_groups:
                group["lr"] = float(self.tr["lr"]) + frac * (float(final) - float(self.tr["lr"]))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.samples_trained += B
        return float(loss.item())

    # ---- evaluation ----
    def _value_net(self) -> Any:
        """The network being trained as the agents play it (numpy inference of its current weights)."""
        from agents.mlp import ValueNet

        return ValueNet(self.netcfg, {k: v.detach().cpu() for k, v in self.net.state_dict().items()})

    def _mlp(self, net: Any) -> Any:
        """The network as the evaluations play it: `eval.candidates` candidates at beam `eval.beam`, `eval.diverse`,
        the training decision weights, no mirror images."""
        from agents.mlp import MLPAgent

        ev = self.ev
        return MLPAgent(net=net, beam=int(ev["beam"]), candidates=int(ev["candidates"]),
                            diverse=bool(ev["diverse"]), symmetries=1, value=self.netcfg["value"], name="mlp")

    def evaluate(self) -> dict[str, Any]:
        """The network (`_mlp`) vs the heuristic planner (beam `eval.opponent_beam`, GreedyAgent's) on fixed
        seeds, each with both seatings; 2 players, Side A: every learner's one evaluation (`experiments.selfplay
        .vs_greedy` on the match engine; the games of `python -m experiments.eval_mlp`)."""
        from .evaluators.base import vs_greedy

        ev = self.ev
        return vs_greedy(self._mlp(self._value_net()), int(ev["games"]), int(ev["seed"]), int(ev["opponent_beam"]),
                         GameConfig(), self.threads)

    def evaluate_mcts(self) -> dict[str, Any]:
        """The network as the greedy evaluation plays it (`_mlp`) vs `MCTSAgent` (`eval.mcts_iterations`
        iterations a decision, one seeded agent per game) on `eval.mcts_games` fixed seeds, each with both seatings
        (2 players, Side A; `agents.match.play_match`)."""
        from agents.match import play_match, totals_of, win_shares
        from agents.mcts import MCTSAgent
        from agents.policy import AgentPolicy

        ev = self.ev
        mcts = AgentPolicy(lambda s: MCTSAgent(iterations=int(ev["mcts_iterations"]), seed=s), name="mcts")
        res = play_match([self._mlp(self._value_net()), mcts], games=int(ev["mcts_games"]),
                         seed=int(ev["seed"]) + 500_000, config=GameConfig(), paired=True, threads=self.threads)
        return {"mcts_win_rate": float(win_shares(res, "mlp").mean()),
                "mcts_mean_score": float(totals_of(res, "mlp").mean()),
                "mcts_score": float(totals_of(res, "mcts").mean())}

    def _evaluation_row(self) -> dict[str, Any]:
        row = {"iteration": self.iteration, "games": self.games_done, "decisions": self.decisions,
               "hours": round(self.elapsed() / 3600, 4),
               "loss": None if math.isnan(self.loss_ema) else round(self.loss_ema, 6),
               **{k: round(v, 4) for k, v in self.evaluate().items()}}
        every_m = int(self.ev["mcts_every"])
        if every_m > 0 and int(self.ev["mcts_games"]) > 0 and self.iteration % every_m == 0:
            row.update({k: round(v, 4) for k, v in self.evaluate_mcts().items()})
        return row

    # ---- checkpoints ----
    def state_tensors(self) -> dict[str, Any]:
        import torch

        n = self.buf_size
        t = torch.from_numpy
        return {
            "net": {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()},
            "opt": self.opt.state_dict(),
            "states": t(self.states.copy()), "greedy_seat": t(self.greedy_seat.copy()),
            "pend_x": t(self.pend_x.copy()), "pend_seat": t(self.pend_seat.copy()), "pend_n": t(self.pend_n.copy()),
            "pend_v": t(self.pend_v.copy()),
            "buf_x": t(self.buf_x[:n].copy()), "buf_tot": t(self.buf_tot[:n].copy()),
            "buf_win": t(self.buf_win[:n].copy()), "buf_np": t(self.buf_np[:n].copy()),
            **self._worker_tensors(),
        }

    def _worker_tensors(self) -> dict[str, Any]:
        """With workers: their games in flight (`snapshot()`, arrays) and the weights they play with."""
        import torch

        if self.pool is None:
            return {}
        self._worker_plain = []
        games = []
        for snap in self.pool.snapshot():
            games.append({k: torch.from_numpy(np.asarray(v).copy()) for k, v in snap.items()
                          if isinstance(v, np.ndarray)})
            self._worker_plain.append({k: v for k, v in snap.items() if not isinstance(v, np.ndarray)})
        return {"worker_games": games, "published": {k: v.clone() for k, v in self.published.items()}}

    def meta(self) -> dict[str, Any]:
        return {"iteration": self.iteration, "games_done": self.games_done, "decisions": self.decisions,
                "samples_trained": self.samples_trained, "buf_size": self.buf_size, "buf_pos": self.buf_pos,
                "best_win": self.best_win, "loss_ema": self.loss_ema, "evals": self.evals,
                "rng": self.rng.bit_generator.state, "seed": self.seed, "config": self.cfg,
                "init_sha256": self.init_sha256,
                **({"workers": self._worker_plain, "since_publish": self.since_publish} if self.pool else {}),
                "elapsed": self.elapsed()}

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.started

    def save(self) -> Path:
        """Checkpoint the complete trainer state (`experiments.common.save_checkpoint`: the tensors as
        `checkpoints/step_<iteration>.pt`, then the rest as its JSON record), then `export()`."""
        tensors = _torch_bytes(self.state_tensors())  # first: it takes the workers' snapshot that meta() records
        path = save_checkpoint(self.run / "checkpoints", self.iteration, tensors, self.meta(),
                               keep=int(self.cfg["run"]["keep"]))
        self.export()
        return path

    def export(self) -> None:
        """model.pt/.json (the agent's checkpoint of the current weights) and progress.csv."""
        info = {"command": self.command, "iteration": self.iteration, "games": self.games_done,
                "decisions": self.decisions, "seed": self.seed, "hours": round(self.elapsed() / 3600, 3),
                "config": self.cfg,
                **({"init_sha256": self.init_sha256} if self.init_sha256 else {})}
        save_agent_checkpoint(self.run / "model", self.net.state_dict(), self.netcfg, info)
        self._write_progress()

    def load(self, path: Path, meta: dict[str, Any]) -> None:
        """Take back the state of a checkpoint: its tensors file `path` (read weights-only) and its `meta`."""
        from agents.archive import read_torch

        if path.stat().st_size > MAX_STATE_BYTES:
            raise ConfigError(f"{path}: larger than a trainer state can be ({MAX_STATE_BYTES:,} bytes at most)")
        st = read_torch(path.read_bytes(), MAX_STATE_BYTES, path)
        self.net.load_state_dict(st["net"])
        self.opt.load_state_dict(st["opt"])
        self.states[:] = st["states"].numpy()
        self.greedy_seat[:] = st["greedy_seat"].numpy()
        self.pend_x[:] = st["pend_x"].numpy()
        self.pend_seat[:] = st["pend_seat"].numpy()
        self.pend_n[:] = st["pend_n"].numpy()
        self.pend_v[:] = st["pend_v"].numpy()
        n = int(meta["buf_size"])
        self.buf_x[:n] = st["buf_x"].numpy()
        self.buf_tot[:n] = st["buf_tot"].numpy()
        self.buf_win[:n] = st["buf_win"].numpy()
        self.buf_np[:n] = st["buf_np"].numpy()
        self.buf_size, self.buf_pos = n, int(meta["buf_pos"])
        for k in ("iteration", "games_done", "decisions", "samples_trained"):
            setattr(self, k, int(meta[k]))
        self.best_win = float(meta["best_win"])
        self.loss_ema = float(meta["loss_ema"])
        self.evals = list(meta["evals"])
        self.rng.bit_generator.state = meta["rng"]
        self.elapsed_before = float(meta["elapsed"])
        self.init_sha256 = meta.get("init_sha256")
        if int(self.sp["workers"]) > 0:
            if "worker_games" not in st:
                raise ValueError(f"{path}: a checkpoint of a run without self-play workers cannot go on with them")
            self.worker_snaps = [{**{k: v.numpy() for k, v in games.items()}, **plain}
                                 for games, plain in zip(st["worker_games"], meta["workers"])]
            self.published = dict(st["published"])
            self.since_publish = int(meta["since_publish"])
        self.started = time.time()

    def _write_progress(self) -> None:
        if self.evals:  # MCTS columns only on some rows: empty elsewhere
            atomic_write_csv(self.run / "progress.csv", self.evals)

    # ---- the loop ----
    def _record_evaluation(self, row: dict[str, Any], log: Any, bar: Any) -> None:
        self.evals.append(row)
        if log is not None:
            for k in ("win_rate", "mean_score", "loss", "mcts_win_rate", "mcts_mean_score"):
                if row.get(k) is not None and not (isinstance(row[k], float) and math.isnan(row[k])):
                    log.add_scalar(f"eval/{k}", row[k], self.games_done)
        bar.write(json.dumps(row))
        if row["win_rate"] > self.best_win:
            self.best_win = row["win_rate"]
            info = {"iteration": self.iteration, "games": self.games_done, "eval": row, "seed": self.seed,
                    "config": self.cfg}
            save_agent_checkpoint(self.run / "best", self.net.state_dict(), self.netcfg, info)

    def train(self, iterations: int, max_minutes: float | None, log: Any = None) -> None:
        iterate(self, iterations, max_minutes, self.iteration_step,
                lambda bar: self._record_evaluation(self._evaluation_row(), log, bar),
                lambda: {"games": self.games_done, "loss": f"{self.loss_ema:.4f}", "best": f"{self.best_win:.3f}"},
                int(self.ev["every"]), int(self.cfg["run"]["checkpoint_every"]), "self-play", self.progress)

    def iteration_step(self) -> None:
        """One iteration: a self-play decision in every game (in-process or from the workers), then
        `steps_per_iter` Adam steps once the buffer holds `min_buffer` samples, publishing weights to the workers
        every `publish_every` steps."""
        if self.pool is not None:
            self.collect_step()
        else:
            self.selfplay_step()
        if self.buf_size >= int(self.tr["min_buffer"]):
            for _ in range(int(self.tr["steps_per_iter"])):
                loss = self.train_step()
                self.loss_ema = loss if math.isnan(self.loss_ema) else 0.98 * self.loss_ema + 0.02 * loss
                self.since_publish += 1
        if self.pool is not None and self.since_publish >= int(self.sp["publish_every"]):
            self.publish()


def remove_stale_writes(run: Path) -> int:
    """Delete what killed writes left in a run folder: atomic writes' temp files (in the run folder and in
    checkpoints/). Call only when no trainer is writing to `run`."""
    return remove_temp_files(run) + remove_temp_files(run / "checkpoints")


def _checkpoint(run: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest complete checkpoint: (tensors file, trainer state) from checkpoints/, or None."""
    ck = latest_checkpoint(run / "checkpoints")
    return None if ck is None else (ck[0], ck[1]["state"])


def run(args: RunArgs) -> dict[str, Any]:
    """`mlp`: train (or, with --resume, go on with) a run under `experiments.train`; returns the summary also
    written to `run/summary.json`."""
    cfg = args.config
    folder = args.run
    removed = remove_stale_writes(folder) if args.resume else 0
    if removed:
        print(f"removed {removed} unfinished write(s) a killed run left in {folder}", file=sys.stderr)
    ck = _checkpoint(folder) if args.resume else None
    if args.resume and ck is None:
        print(f"--resume: no complete checkpoint in {folder} (killed before its first): starting the run from "
              "scratch", file=sys.stderr)
    if ck is not None:
        saved = check_settings(ck[1]["config"], DEFAULTS, str(ck[0]))
        changed = [f"{sec}.{k}" for sec, values in _training_part(cfg).items() for k, v in values.items()
                   if _training_part(saved)[sec].get(k) != v]
        if changed:
            raise SystemExit(f"--resume: {ck[0].name} was made with another config ({', '.join(changed)} differ); "
                             "a run goes on with the settings it was made with (only network.play and "
                             "run.iterations may change): start another --run")
    workers, address = int(cfg["selfplay"]["workers"]), str(cfg["run"]["ray"])
    if workers < 0 or int(cfg["selfplay"]["publish_every"]) < 1:
        raise ConfigError(f"selfplay.workers must be >= 0 and selfplay.publish_every >= 1, got {workers} and "
                          f"{cfg['selfplay']['publish_every']}")
    if address and not workers:
        raise ConfigError(f"run.ray (--ray {address}) runs self-play workers on a cluster: give selfplay.workers "
                          "(--workers N) too")
    try:  # a resumed run takes its weights from the checkpoint: run.init is read only when starting
        trainer = Trainer(cfg, args.seed, folder, device=args.resolved_device(), progress=args.progress,
                          init=ck is None)
        trainer.command = args.command or trainer.command
        if ck is not None:
            trainer.load(*ck)
            print(f"resumed from {ck[0]} (iteration {trainer.iteration})", file=sys.stderr)
        if workers:
            from .selfplay_workers import PROCESSES

            trainer.connect(address or PROCESSES)
    except ImportError as e:
        raise ConfigError(f"selfplay.workers needs {e.name or 'ray'}, from the \"distributed\" extra: "
                          f"{install_hint('distributed')}") from None
    except (ValueError, OSError) as e:
        raise ConfigError(str(e)) from None
    log = None
    try:
        from torch.utils.tensorboard import SummaryWriter

        log = SummaryWriter(str(folder / "tb"))
    except ImportError:  # tensorboard not installed: progress.csv only
        pass
    if cfg["run"]["iterations"] < 0:
        raise ConfigError(f"run.iterations must be >= 0, got {cfg['run']['iterations']}")
    iterations = int(cfg["run"]["iterations"]) or int(cfg["train"]["iterations"])
    t0 = time.perf_counter()
    start = trainer.iteration
    try:
        trainer.train(iterations, args.max_minutes or None, log)
    finally:
        restarts = trainer.pool.restarts if trainer.pool is not None else 0
        if trainer.pool is not None:
            trainer.pool.close()
        if log is not None:
            log.close()
    summary = {"algo": args.algo, "iterations": trainer.iteration, "this_process_iterations": trainer.iteration - start,
               "games": trainer.games_done, "wall_s": round(time.perf_counter() - t0, 1),
               "hours": round(trainer.elapsed() / 3600, 4), "best_win_rate": trainer.best_win,
               "final_eval": trainer.evals[-1] if trainer.evals else None, "model": str(folder / "model.pt"),
               "seed": args.seed, **({"workers": workers, "worker_restarts": restarts} if workers else {})}
    atomic_write_json(folder / "summary.json", summary)
    print(json.dumps(summary), flush=True)
    return summary
