"""The error rates and lengths of `ladder test`'s Elo statistic, by simulation: one JSON line per (shape, truth,
statistic).

    python -m harmonies_apps.ladder.sprt_sim                       # every shape, 2,000 runs each
    python -m harmonies_apps.ladder.sprt_sim --shapes sweeps --runs 200

Each run draws pairs from one pentanomial distribution (numpy, seeded) and feeds every statistic the same pairs,
looking after each pair, until all of them decided or `--max-pairs`. Statistics, Elo bounds [0, 10], alpha = beta
= 0.05:
* `gsprt`: Fishtest's pentanomial GSPRT (`sequential.pentanomial_llr`, point hypotheses elo0 and elo1);
* `composite`: the GLR of the composite hypotheses, l(max(s_hat, s1)) - l(min(s_hat, s0)) with l the same profile
  log-likelihood (what a GLR "at least elo1 / at most elo0" would be), against Wald's bounds;
* `gsprt+e`: the ladder's statistic (`sequential.SequentialTest`, `elo_llr`).
A shape at Elo elo0 has truth H0 (its error is a false H1), at elo1 truth H1 (a false H0); beyond the bounds only the
pairs count. `error` is the rate of wrong verdicts among all runs (undecided runs are not wrong), with its standard
error; `mean_pairs` counts an undecided run at `--max-pairs`.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np

from .sequential import (
    PRIOR_COUNT,
    VALUES,
    _mle_mean,
    e_numerator,
    elo_llr,
    pentanomial_llr,
    sprt_bounds,
    sup_loglik,
)
from .stats import elo_to_score, score_to_elo

COMMAND = "python -m harmonies_apps.ladder.sprt_sim"
STATISTICS = ("gsprt", "composite", "gsprt+e")
#: name -> (pentanomial LL..WW before tilting to each Elo, Elos to simulate, what it stands for)
SHAPES: dict[str, tuple[list[float], list[float | str], str]] = {
    "fishtest_stc": ([0.01, 0.2, 0.58, 0.2, 0.01], ["elo0", "elo1"], "Fishtest STC-like"),
    "heavy_draw": ([0.002, 0.05, 0.896, 0.05, 0.002], ["elo0", "elo1"], "heavy draws, LTC-like"),
    "harmonies": ([0.15, 0.02, 0.66, 0.02, 0.15], ["elo0", "elo1", 150.0], "few draws, paired seeds correlated"),
    "rare_sweeps": ([0.0288, 0.0, 0.9424, 0.0, 0.0288], ["elo0", "elo1"], "1-1 pairs with rare sweeps both ways"),
    "one_sided_sweeps": ([0.0, 0.0, 1.0, 0.0, 0.0], ["elo0", "elo1"],
                         "1-1 pairs, rare 2-0 sweeps; at elo0 every pair 1-1: identical bots"),
    "sweeps": ([0.0, 0.0, 0.0, 0.02, 0.98], ["as is"], "a bot that sweeps, like greedy vs random"),
}


def tilt(base: np.ndarray, s: float) -> np.ndarray:
    """`base` exponentially tilted to mean score `s` per game (outcomes of probability 0 stay 0)."""
    lo, hi = -60.0, 60.0
    for _ in range(200):
        t = 0.5 * (lo + hi)
        w = base * np.exp(t * (VALUES - VALUES.mean()))
        if (w / w.sum()) @ VALUES < s:
            lo = t
        else:
            hi = t
    return w / w.sum()


def distribution(shape: str, elo: float | str, bounds: tuple[float, float]) -> tuple[np.ndarray, float]:
    base = np.asarray(SHAPES[shape][0], dtype=np.float64)
    if elo == "as is":
        return base, float(score_to_elo(base @ VALUES))
    target = {"elo0": bounds[0], "elo1": bounds[1]}.get(elo, elo)  # type: ignore[arg-type]
    s = float(elo_to_score(target))
    if shape == "one_sided_sweeps":  # every pair 1-1 but a share 2 (s - 1/2) of 2-0 sweeps
        p = 2.0 * (s - 0.5)
        return np.array([0.0, 0.0, 1.0 - p, 0.0, p]), float(target)
    return tilt(base, s), float(target)


def composite_llr(counts: np.ndarray, s0: float, s1: float) -> np.ndarray:
    """l(max(s_hat, s1)) - l(min(s_hat, s0)), l the regularised profile log-likelihood of `pentanomial_llr`."""
    c = np.where(counts == 0, 1e-3, counts.astype(np.float64))
    n = c.sum(axis=-1)
    phat = c / n[:, None]
    shat = phat @ VALUES

    def loglik(s: np.ndarray) -> np.ndarray:
        return n * (phat * np.log(_mle_mean(phat, s))).sum(axis=-1)

    return loglik(np.maximum(shat, s1)) - loglik(np.minimum(shat, s0))


def simulate(p: np.ndarray, runs: int, max_pairs: int, seed: int, bounds: tuple[float, float],
             alpha: float, beta: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per statistic: (verdict per run, +1 H1 / -1 H0 / 0 undecided; pairs at the verdict)."""
    rng = np.random.default_rng(seed)
    s0, s1 = (float(elo_to_score(e)) for e in bounds)
    low, up = sprt_bounds(alpha, beta)
    verdict = {k: np.zeros(runs, dtype=np.int64) for k in STATISTICS}
    pairs = {k: np.full(runs, max_pairs, dtype=np.int64) for k in STATISTICS}
    counts = np.zeros((runs, 5), dtype=np.int64)
    forecast = np.zeros((runs, 2))
    active = np.arange(runs)
    cdf = np.cumsum(p)
    for n in range(1, max_pairs + 1):
        if not len(active):
            break
        k = np.minimum(np.searchsorted(cdf, rng.random(len(active)) * cdf[-1], side="right"), 4)
        c = counts[active]
        rows = np.arange(len(active))
        forecast[active, 0] += np.log(e_numerator(c, s1, "above")[rows, k])
        forecast[active, 1] += np.log(e_numerator(c, s0, "below")[rows, k])
        c[rows, k] += 1
        counts[active] = c
        g = pentanomial_llr(c, *bounds)
        stat = {"gsprt": g, "composite": composite_llr(c, s0, s1),
                "gsprt+e": elo_llr(g, forecast[active, 0] - sup_loglik(c, s0, "below"),
                                   forecast[active, 1] - sup_loglik(c, s1, "above"), alpha, beta)}
        for name, v in stat.items():
            v = np.atleast_1d(v)
            fresh = (verdict[name][active] == 0) & ((v >= up) | (v <= low))
            idx = active[fresh]
            verdict[name][idx] = np.where(v[fresh] >= up, 1, -1)
            pairs[name][idx] = n
        active = active[np.any([verdict[name][active] == 0 for name in STATISTICS], axis=0)]
    return {k: (verdict[k], pairs[k]) for k in STATISTICS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--runs", type=int, default=2000, help="simulated tests per case")
    ap.add_argument("--max-pairs", type=int, default=10000, help="a run still undecided here is undecided")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    bounds, alpha, beta = (0.0, 10.0), 0.05, 0.05
    for shape in args.shapes:
        for ei, elo in enumerate(SHAPES[shape][1]):
            p, target = distribution(shape, elo, bounds)
            seed = args.seed * 1000 + 10 * list(SHAPES).index(shape) + ei
            t0 = time.process_time()
            out = simulate(p, args.runs, args.max_pairs, seed, bounds, alpha, beta)
            cpu = time.process_time() - t0
            truth = "H0" if target <= bounds[0] else "H1" if target >= bounds[1] else None
            for name, (verdict, pairs) in out.items():
                wrong = int(np.sum(verdict == (1 if truth == "H0" else -1))) if truth else None
                row = {"table": "ladder_sim", "case": "ladder_sprt_sim", "shape": shape,
                       "shape_note": SHAPES[shape][2], "pentanomial": [round(float(x), 5) for x in p],
                       "elo": round(target, 2), "truth": truth, "statistic": name, "runs": args.runs,
                       "wrong": wrong,
                       "error": None if wrong is None else round(wrong / args.runs, 4),
                       "error_se": None if wrong is None else round(
                           math.sqrt(max(wrong, 1) * (args.runs - wrong) / args.runs) / args.runs, 4),
                       "h1": int(np.sum(verdict == 1)), "h0": int(np.sum(verdict == -1)),
                       "undecided": int(np.sum(verdict == 0)), "mean_pairs": round(float(pairs.mean()), 1),
                       "median_pairs": float(np.median(pairs)), "max_pairs": args.max_pairs,
                       "bounds": list(bounds), "alpha": alpha, "beta": beta, "prior_count": PRIOR_COUNT,
                       "seed": seed, "cpu_s": round(cpu, 1), "load1": round(os.getloadavg()[0], 2),
                       "command": COMMAND + (f" --runs {args.runs}" if args.runs != 2000 else "")}
                print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
