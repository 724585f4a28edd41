"""The tables of benchmarks/STRENGTH.md, RESULTS.md, LADDER.md and LEARNING.md, generated from the benchmarks' JSON
lines.

Why: the reference pages show current figures only, each with the command that printed it, and a figure cannot drift
from its data. The data are the JSON lines the benchmark scripts print (`benchmarks.strength`, `bench_*`,
`experiments.eval_mlp`, `experiments.ppo_clean`), stored in `benchmarks/results/*.jsonl` with a few keys of our own:
`table` (which table shows the line), `command` (what printed it), `machine`, `date`, and where known `commit`,
`label` (the row's wording), `transcribed` (copied from an older table, so fields that table did not record are
absent) and `note`.
Lines of retired or superseded measurements live in `benchmarks/results/history.jsonl` (docs/history.md).

    python -m benchmarks.tables            # rewrite the generated blocks of the four pages
    python -m benchmarks.tables --check    # exit 1, naming the page, if a block is not what the lines give

A generated block sits between `<!-- table NAME -->` and `<!-- end table -->`; everything else on the pages is
written by hand. To publish a new measurement: add its line (with the keys above) to the data file, drop the line
it supersedes into history.jsonl, run this module, commit both.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
#: Keys this project adds to a script's JSON line (everything else is what the script printed).
META_KEYS = ("table", "command", "machine", "date", "commit", "label", "transcribed", "note")
_BLOCK = re.compile(r"(<!-- table (\S+) -->\n)(.*?)(<!-- end table -->)", re.S)


def load(name: str) -> list[dict[str, Any]]:
    """The JSON lines of benchmarks/results/NAME.jsonl, in file order."""
    path = RESULTS_DIR / f"{name}.jsonl"
    rows = []
    for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path.name}:{k}: not JSON ({e})") from None
    return rows


def fixed(x: float, digits: int) -> str:
    """`x` with `digits` decimals, halves rounded up as a reader does (99.25 -> 99.3; format() would say 99.2)."""
    return str(Decimal(str(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _measured(r: dict[str, Any]) -> str:
    out = r["date"]
    if r.get("commit"):
        out += f", `{r['commit']}`"
    if "load1" in r:
        out += f", load {r['load1']}"
    if r.get("transcribed"):
        out += " (transcribed)"
    return out


def _machine_line(rows: list[dict[str, Any]]) -> str:
    machines = sorted({r["machine"] for r in rows})
    return f"Machine: {'; '.join(machines)}.\n\n"


def _agents(r: dict[str, Any]) -> list[str]:
    """The agent entries of a `benchmarks.strength` line, in printed order."""
    return [k for k, v in r.items() if isinstance(v, dict) and "mean" in v and k not in META_KEYS]


def match_table(rows: list[dict[str, Any]]) -> str:
    """`benchmarks.strength` lines: one table row per agent of each line."""
    out = [_machine_line(rows), "| case | games | seeds | agent | mean (sd) | win rate [95% CI] / suns | measured | "
           "command |\n", "|---|---|---|---|---|---|---|---|\n"]
    for r in rows:
        for k, name in enumerate(_agents(r)):
            a = r[name]
            res = f"{fixed(a['suns'], 2)} suns" if "suns" in a else \
                f"{fixed(a['win_rate'], 3)} [{fixed(a['win_rate_ci95'][0], 3)}, {fixed(a['win_rate_ci95'][1], 3)}]"
            first = k == 0
            seeds = f"{r['seed']}-{r['seed'] + r['games'] - 1}"
            cells = [r.get("label", r["case"]) if first else "", str(r["games"]) if first else "",
                     seeds if first else "", name, f"{fixed(a['mean'], 1)} ({fixed(a['std'], 1)})", res,
                     _measured(r) if first else "", f"`{r['command']}`" if first else ""]
            out.append("| " + " | ".join(cells) + " |\n")
    return "".join(out)


def _weights(v: dict[str, float]) -> str:
    if v == {"win": 0.0, "margin": 0.0, "score": 1.0}:
        return "own total"
    if v == {"win": 1.0, "margin": 0.5, "score": 0.25}:
        return "P(win) + 0.5 margin + 0.25 own (training's)"
    return f"win {v['win']:g}, margin {v['margin']:g}, own {v['score']:g}"


def eval_table(rows: list[dict[str, Any]]) -> str:
    """`experiments.eval_mlp` lines."""
    out = [_machine_line(rows), "| what | candidates | ranked by | mirror images | wins [95% CI] | network's mean | "
           "greedy's mean | measured | command |\n", "|---|---|---|---|---|---|---|---|---|\n"]
    for r in rows:
        gen = f"a beam of {r['beam']} per space" if r["diverse"] else f"plain beam {r['beam']}"
        cand = f"{gen}, its first plan" if r["candidates"] == 1 else f"{gen}, best {r['candidates']}"
        ranked = "(no network)" if r["candidates"] == 1 else _weights(r["value"])
        lo, hi = r["win_ci95"]
        cells = [r.get("label", ""), cand, ranked, str(r["symmetries"]),
                 f"{fixed(100 * r['win_rate'], 1)}% [{fixed(100 * lo, 1)}, {fixed(100 * hi, 1)}]",
                 fixed(r["mean_score"], 2), fixed(r["greedy_score"], 2), _measured(r), f"`{r['command']}`"]
        out.append("| " + " | ".join(cells) + " |\n")
    return "".join(out)


def _config(r: dict[str, Any]) -> str:
    return f"{r['players']}p {r['side']}{' + Spirits' if r['spirits'] else ''}"


def _threads(r: dict[str, Any]) -> str:
    return f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}"


def _workers(r: dict[str, Any], what: str, plural: str) -> str:
    return f"{r['workers']} {what}{plural if r['workers'] > 1 else ''}"


def _against(r: dict[str, Any]) -> str:
    """What one case of `bench_engine --against` played."""
    what = {"random": "random games", "rollout": "`rollout_batch`, one thread",
            "mcts": "`mcts:200it` vs random"}[r["kind"]]
    return f"{what}, {_config(r)}"


def _guard(r: dict[str, Any]) -> tuple[str, str]:
    """A line of `bench_engine --against` and/or `--c-source` (its case names the games it played)."""
    against = f"`{r['against'][:7]}`" if "against" in r else None
    c = "the C engine" if "c_games_per_cpu_s" in r else None
    config = f"guard vs {' and '.join(x for x in (against, c) if x)}: {_against(r)}, {r['rounds']}×{r['games']:,}"
    parts = []
    if against:
        parts.append(f"{r['engine_games_per_cpu_s']:,} vs {r['against_games_per_cpu_s']:,} games/CPU-s: "
                     f"**{r['ratio']}×**")
    if c:
        parts.append(f"C {r['c_games_per_cpu_s']:,} ({r['engine_ns_per_action']} vs {r['c_ns_per_action']} ns an "
                     f"action; C: {r['c_actions_per_game']} actions, score {r['c_mean_score']}): "
                     f"**{r['ratio_to_c']}× C**")
    return config, "; ".join(parts)


def _selfplay(r: dict[str, Any]) -> str:
    return f"each {r['games']} games, beam {r['beam']}, {r['candidates']} candidates, {_threads(r)}"


#: case -> (configuration, result) of one speed line.
SPEED: dict[str, Callable[[dict[str, Any]], tuple[str, str]]] = {
    "numba_random_games": lambda r: (f"whole random games inside numba, {_config(r)}",
                                     f"{r['games_per_cpu_s']:,} games/CPU-s ({r['actions_per_game']} actions a game)"
                                     if "games_per_cpu_s" in r else
                                     f"{r['games_per_s']:,} games/s ({r['actions_per_game']} actions a game)"),
    "python_api_step_and_mask": lambda r: (f"`Game.step` + `action_mask()` from Python, {_config(r)}",
                                           f"{r['actions_per_cpu_s']:,} actions/CPU-s" if "actions_per_cpu_s" in r
                                           else f"{r['actions_per_s']:,} actions/s"),
    "reference_ratio": lambda r: (f"scoring kernel vs the plain-Python reference: {r['what']}",
                                  f"{r['kernel_us']} µs vs {r['reference_us']} µs: {r['ratio']}×"),
    "habitat_matcher": lambda r: (f"habitat matcher (grid) vs the placement reference: {r['what']}",
                                  f"{r['grid_ns']} ns vs {r['placements_reference_ns']} ns: {r['ratio']}×"),
    "observation_encode": lambda r: (f"observation, one Python→njit call, {_config(r)}", f"{r['us_per_call']} µs"),
    "observation_encode_batch": lambda r: (f"observation inside numba (`encode_batch`), {_config(r)}",
                                           f"{r['us_per_row']} µs a row"),
    "aec_step_observe": lambda r: (f"AEC `last()` + `step()`, {r['players']} players, "
                                   f"{'`env()` (PettingZoo wrappers)' if r['wrapped'] else '`raw_env()`'}",
                                   f"{r['steps_per_s']:,} steps/s"),
    "gym_step": lambda r: (f"`{r['env']}` `action_masks()` + `step()`, "
                           f"{'via `gym.make`' if r['gym_make_wrappers'] else 'unwrapped'}",
                           f"{r['steps_per_s']:,} steps/s"),
    "gym_single": lambda r: ("single `Solo-v0` env class, one core (the baseline)", f"{r['steps_per_s']:,} steps/s"),
    "gym_make_single": lambda r: ("single env via `gym.make(\"harmonies/Solo-v0\")`, one core",
                                  f"{r['steps_per_s']:,} steps/s"),
    "step": lambda r: (f"batched step, {r['mode']}, batch {r['batch']}, {_threads(r)}",
                       f"{r['steps_per_s']:,} steps/s"
                       + (f" ({r['speedup_vs_gym']}× the env class)" if "speedup_vs_gym" in r else "")),
    "step_sizes": lambda r: (f"batched step, {r['mode']}, {r['batch']:,} rows, {r['obs_dtype']} obs, {_threads(r)}",
                             f"{r['steps_per_cpu_s']:,} steps/CPU-s ({r['ratio_to_best']}× the best size"
                             + (f", {r['ratio_to_float32']}× float32" if "ratio_to_float32" in r else "") + ")"),
    "threads_step": lambda r: (f"batched step, {r['mode']}, batch {r['batch']}, {_threads(r)}",
                               f"{r['steps_per_s']:,} steps/s"
                               + (f" ({r['speedup_vs_gym']}× the env class on one core)" if "speedup_vs_gym" in r
                                  else "")),
    "rollout": lambda r: (f"whole random {r['mode']} games, `rollout_batch`, batch {r['batch']}, {_threads(r)}",
                          f"{r['games_per_s']:,} games/s"),
    "threads_rollout": lambda r: (f"whole random {r['mode']} games, `rollout_batch`, batch {r['batch']}, "
                                  f"{_threads(r)}", f"{r['games_per_s']:,} games/s "
                                  f"({r['games_per_s_per_thread']:,} a thread)"),
    "selfplay_mlp": lambda r: (f"`mlp` trainer's self-play alone: {r['games']} games, beam {r['beam']}, "
                               f"{r['candidates']} candidates, {_threads(r)}", f"{r['decisions_per_s']} decisions/s"),
    "train_mlp": lambda r: (f"`mlp` trainer's Adam steps alone: batch {r['batch']}, {_threads(r)}",
                            f"{r['samples_per_s']:,.0f} samples/s ({r['ms_per_step']} ms a step)"),
    "iteration_mlp": lambda r: ("`mlp` trainer's loop (self-play step + 2 Adam steps)",
                                f"{r['decisions_per_s']} decisions/s, {r['samples_per_s']:,.0f} samples/s"),
    "ladder_speed": lambda r: (f"`ladder play --until-games {r['games']}` (`--jobs 1`), bots "
                               f"{', '.join(r['agents'])}, against the match engine alone on the same games",
                               f"{r['ladder_games_per_cpu_s']} vs {r['engine_games_per_cpu_s']} games/CPU-s: "
                               f"ratio {r['ratio']} (best of {r['repeats']})"),
    "ladder_test": lambda r: (f"`ladder test {r['new']} {r['base']}`, {r['statistic']} bounds "
                              f"[{r['bounds'][0]:g}, {r['bounds'][1]:g}], ladder seed {r['seed']}",
                              f"{r['verdict']} after {r['games']} games (LLR {r['llr']}, {r['cpu_s']} CPU-s)"),
    "ladder_place": lambda r: (f"`ladder add {r['new']}` then `play --bot {r['new']} --until-ci {r['target']:g}` "
                               f"(`--jobs {r['jobs']}`) on a ladder of {', '.join(r['references'])} settled by "
                               f"{r['settle_games']:,} games",
                               f"{r['cpu_s']} CPU-s, {r['games']} games (placement interval "
                               f"±{r['placement_half_width']}, `show`'s ±{r['show_half_width']}; rating "
                               f"{r['rating']:.0f})"),


    "ladder_test_summary": lambda r: (f"`ladder test {r['new']}{' (copy)' if r['new'] == r['base'] else ''} "
                                      f"{r['base']}`, Elo bounds [0, 10] (`gsprt+e`) and points bounds [0, 1], "
                                      f"ladder seeds {r['seeds'][0]}–{r['seeds'][-1]}",
                                      f"Elo: {_verdicts(r['elo_verdict'])} after {r['mean_elo_games']:g} games on "
                                      f"average ({min(r['elo_games'])}–{max(r['elo_games'])}); points: "
                                      f"{_verdicts(r['points_verdict'])} after {r['mean_points_games']:g} "
                                      f"({min(r['points_games'])}–{max(r['points_games'])}); points/Elo games "
                                      f"{r['points_to_elo_mean_games']:g}"),
    "ladder_sprt_sim": lambda r: (f"`{r['shape']}` ({r['shape_note']}) at {r['elo']:g} Elo, `{r['statistic']}`, "
                                  f"{r['runs']:,} runs",
                                  (f"false {'H1' if r['truth'] == 'H0' else 'H0'} {r['error']:.4f} ± "
                                   f"{r['error_se']:.4f}; " if r['truth'] else "")
                                  + f"mean {r['mean_pairs']:g} pairs (median {r['median_pairs']:g})"
                                  + (f", {r['undecided']} undecided at {r['max_pairs']:,}" if r['undecided'] else "")),
    "tournament_jobs": lambda r: (f"tournament {' vs '.join(r['agents'])}, {r['games']} games, `--jobs {r['jobs']}`",
                                  f"{r['games_per_s']} games/s ({r['seconds']} s)"),
    "tournament_ray": lambda r: (f"tournament {' vs '.join(r['agents'])}, {r['games']} games, `--ray local` "
                                 f"({r['cpus']} CPUs), {'warm workers' if r['warm'] else 'first match'}",
                                 f"{r['games_per_s']} games/s ({r['seconds']} s; Ray start {r['start_s']} s)"),
    "selfplay_learned": lambda r: (f"{r.get('label', '`learned` (n-tuple) self-play')}: {r['games']} games, "
                                  f"{r['candidates']} candidates, beam {r['beam']}, {_threads(r)}, "
                                  f"{r['cpu_s']} CPU-s",
                                  f"{r['decisions_per_cpu_s']:,} decisions/CPU-s, "
                                  f"{r['candidates_per_cpu_s']:,.0f} candidates/CPU-s"),
    "selfplay_learned_trainer": lambda r: (f"{r.get('label', '`learned` (n-tuple) trainer')}: `Trainer.step`, "
                                          f"{r['games']} games, {r['candidates']} candidates, beam {r['beam']}, "
                                          f"{_threads(r)}, {r['cpu_s']} CPU-s",
                                          f"{r['decisions_per_cpu_s']:,} decisions/CPU-s"),
    "selfplay_processes": lambda r: (f"trainer's self-play, {_workers(r, 'worker process', 'es')}, {_selfplay(r)}",
                                     f"{r['decisions_per_s']} decisions/s"),
    "selfplay_ray": lambda r: (f"trainer's self-play, {_workers(r, 'Ray actor', 's')} (`MLPWorkers`, "
                               f"{r['steps']} step{'s' * (r['steps'] != 1)} a round), {_selfplay(r)}",
                               f"{r['decisions_per_s']} decisions/s"),
    "chance_outcomes": lambda r: (f"listing one {r['node']} chance node's outcomes and probabilities "
                                  f"({r['outcomes_per_node']} outcomes a node; {r['nodes']} nodes of random 3p A + "
                                  f"Spirits games)", f"{r['numba_us']} µs inside numba, {r['njit_call_us']} µs a "
                                  f"Python→njit call, {r['game_us']} µs `Game.chance_outcomes()`"),
    "openspiel_random_sims": lambda r: (f"whole random games, {_config(r)}: OpenSpiel (`python_harmonies`) vs `Game` "
                                        f"from Python", f"{r['openspiel_games_per_s']} vs {r['game_games_per_s']} "
                                        f"games/s: `Game` {r['ratio']}× faster"),
}


def _verdicts(verdicts: list[str]) -> str:
    """"H1 ×4, undecided ×1": how many runs ended with each verdict."""
    return ", ".join(f"{v} ×{verdicts.count(v)}" for v in sorted(set(verdicts)))


def _decision(r: dict[str, Any]) -> tuple[str, str]:
    """A `SPEC_decision` line of bench_learned or bench_mlp: the spec it timed is the line's `agent`."""
    median = f", median {r['median_ms']} ms" if "median_ms" in r else ""
    cpu = (f"; CPU mean {r['cpu_mean_ms']} ms, p95 {r['cpu_p95_ms']} ms, max {r['cpu_max_ms']} ms" if "cpu_mean_ms" in r
           else "")
    return (f"`{r['agent']}` deciding a turn (the checkpoint's play settings)",
            f"{'wall ' if cpu else ''}mean {r['mean_ms']} ms{median}, p95 {r['p95_ms']} ms, max {r['max_ms']} ms{cpu} "
            f"({r['decisions']} decisions)")


def ppo_table(rows: list[dict[str, Any]]) -> str:
    """`experiments.ppo_clean` lines: each run's budget and fresh-seed figures, then their curves side by side (mean
    points of the last 50 training games at each 30 CPU-seconds, as the script's `curve` holds them)."""
    out = [_machine_line(rows), "| run | steps | CPU-s | last 50 training games | fresh seeds | argmax policy: "
           "mean (sd) | wins | measured | command |\n", "|---|---|---|---|---|---|---|---|---|\n"]
    for r in rows:
        f = r["final"]
        wins = f"{fixed(100 * r['eval_win_rate'], 1)}%" if "eval_win_rate" in r else ""
        cells = [r["label"], f"{f['steps']:,}", fixed(f["cpu_s"], 1), fixed(f["mean_return_last_50"], 1),
                 r["eval_seeds"], f"**{fixed(r['eval_mean'], 1)}** ({fixed(r['eval_std'], 1)})", wins, _measured(r),
                 f"`{r['command']}`"]
        out.append("| " + " | ".join(cells) + " |\n")
    marks = sorted({30 * int(c[0] // 30) for r in rows for c in r["curve"]})
    out += ["\n| CPU-s | " + " | ".join(r["label"] for r in rows) + " |\n", "|---" * (len(rows) + 1) + "|\n"]
    for m in marks:
        cells = [next((fixed(c[2], 1) for c in r["curve"] if 30 * int(c[0] // 30) == m), "") for r in rows]
        out.append(f"| {m} | " + " | ".join(cells) + " |\n")
    return "".join(out)


def speed_table(rows: list[dict[str, Any]]) -> str:
    """Lines of the bench_* scripts (a `machine` line only feeds the machine sentence)."""
    out = [_machine_line(rows), "| case | configuration | result | measured | command |\n", "|---|---|---|---|---|\n"]
    for r in rows:
        if r["case"] == "machine":
            continue
        if r["case"].endswith("_decision") and "agent" in r:
            config, result = _decision(r)
        elif r.get("guard"):
            config, result = _guard(r)
        elif r["case"] in SPEED:
            config, result = SPEED[r["case"]](r)
        else:
            raise ValueError(f"no speed table format for case {r['case']!r}")
        out.append(f"| `{r['case']}` | {config} | {result} | {_measured(r)} | `{r['command']}` |\n")
    return "".join(out)


#: table name -> (data file, formatter)
TABLES: dict[str, tuple[str, Callable[[list[dict[str, Any]]], str]]] = {
    "mlp_2p": ("strength", match_table),
    "mlp_other": ("strength", match_table),
    "eval_mlp": ("strength", eval_table),
    "baselines": ("strength", match_table),
    "learned_2p": ("strength", match_table),
    "learned_other": ("strength", match_table),
    "engine": ("speed", speed_table),
    "envs": ("speed", speed_table),
    "batch": ("speed", speed_table),
    "learned": ("speed", speed_table),
    "distributed": ("speed", speed_table),
    "chance": ("speed", speed_table),
    "ladder": ("speed", speed_table),
    "ladder_sim": ("speed", speed_table),
    "ppo_clean": ("learning", ppo_table),
}
PAGES = (HERE / "STRENGTH.md", HERE / "RESULTS.md", HERE / "LADDER.md", HERE / "LEARNING.md")


def render(table: str) -> str:
    """The markdown of one generated table, from the lines whose `table` is its name."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; tables are {', '.join(TABLES)}")
    data, fmt = TABLES[table]
    rows = [r for r in load(data) if r.get("table") == table]
    if not rows:
        raise ValueError(f"no line of benchmarks/results/{data}.jsonl has table {table!r}")
    return fmt(rows)


def regenerate(text: str) -> str:
    """`text` with every generated block replaced by what the lines give now."""
    return _BLOCK.sub(lambda m: m.group(1) + render(m.group(2)) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if a page is out of date")
    args = ap.parse_args(argv)
    stale = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        try:
            new = regenerate(text)
        except (ValueError, KeyError) as e:
            print(f"benchmarks.tables: {page.name}: {e}", file=sys.stderr)
            return 2
        if new != text:
            stale.append(page.name)
            if not args.check:
                from harmonies_env.io import atomic_write_text

                atomic_write_text(page, new)
    if args.check and stale:
        print(f"benchmarks.tables: out of date: {', '.join(stale)} (run python -m benchmarks.tables)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
