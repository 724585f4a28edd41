"""What `harmonies ladder show` prints, built from plain inputs: the JSON payload, a text leaderboard and one
self-contained offline HTML page (inline CSS, JS and SVG; it fetches nothing).

Every number is refitted from the games given (`stats`); nothing here reads the ladder's file.
"""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

import numpy as np

from harmonies_env.scoring import CATEGORIES

from ..replay import _json_for_script
from ..table import static_text
from . import stats
from .sequential import sprt_bounds
from .stats import GameResult

__all__ = ["HISTORY_POINTS", "build_report", "html_page", "text_table"]

#: At most this many refits make a bot's rating history (at every k-th block), so `show` stays cheap.
HISTORY_POINTS = 24
#: The 7 scoring categories of a seat, in GameResult.categories order.
CATEGORY_NAMES = CATEGORIES[:stats.NUM_CATEGORIES]


def _num(x: float) -> float | None:
    """A JSON number: None for NaN / inf (unrated, no interval)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _history(games: Sequence[GameResult], num_bots: int, anchor: int) -> dict[str, Any]:
    """Ratings refitted on the games of blocks <= b, for up to HISTORY_POINTS block numbers b."""
    blocks, counts, ratings = stats.rating_history(games, num_bots, anchor, HISTORY_POINTS)
    return {"blocks": blocks, "games": counts, "ratings": [[_num(r) for r in row] for row in ratings]}


def build_report(bots: list[dict], games: list[GameResult], tests: list[dict], references: list[int], seed: int,
                 anchor: int | None = None, samples: int = stats.BOOTSTRAP_SAMPLES) -> dict:
    """The `ladder show --json` payload, every number refitted from `games`.

    `bots[i]` is bot index i in the games (name, spec, sha256 or None, reproducible); `references` are bot indices
    (margins are taken against them); the anchor, rated 0, is `anchor` or else the first reference (`random`).
    `tests` are the stored sequential tests (new, base, kind, bounds, alpha, beta, verdict, llr, trajectory, games).
    `seed` seeds the block bootstrap. Bots come out sorted by rating, unrated ones last; JSON has null for NaN.
    In "history", "ratings"[k][i] is bot index i's rating after "games"[k] games (blocks <= "blocks"[k]); in
    "win_matrix" and "nash", rows and columns follow the sorted "bots".
    """
    n = len(bots)
    anchor = anchor if anchor is not None else (references[0] if references else 0)
    rating = stats.fit_ratings(games, n, anchor)
    low, high = stats.bootstrap_intervals(games, n, anchor, seed=seed, samples=samples)
    played = np.zeros(n, dtype=np.int64)
    for g in games:
        for b in set(g.bots):
            played[b] += 1
    order = sorted(range(n), key=lambda i: (math.isnan(rating[i]), -np.nan_to_num(rating[i]), bots[i]["name"]))
    rows = []
    for i in order:
        mean, lo, hi = stats.points_margin(games, i, references)
        rows.append({
            "name": bots[i]["name"], "spec": bots[i]["spec"], "sha256": bots[i].get("sha256"),
            "reproducible": bool(bots[i].get("reproducible", True)), "reference": i in references,
            "rating": _num(rating[i]), "ci_low": _num(low[i]), "ci_high": _num(high[i]), "games": int(played[i]),
            "margin": {"mean": _num(mean), "low": _num(lo), "high": _num(hi)},
            "categories": [{"name": c, "mean": _num(m), "low": _num(a), "high": _num(b)}
                           for c, (m, a, b) in zip(CATEGORY_NAMES, stats.category_means(games, i))],
        })
    _, met = stats.pairwise_counts(games, n)
    rate = stats.win_matrix(games, n)
    pay = stats.nash_payoff(games, n)
    met_any = [i for i in order if met[i].sum() > 0]
    weights = np.full(n, np.nan)
    nash_score = np.full(n, np.nan)
    if met_any:
        w, s = stats.nash_average(pay[np.ix_(met_any, met_any)])
        weights[met_any], nash_score[met_any] = w, s
    name = {i: bots[i]["name"] for i in range(n)}
    out_tests = []
    for t in tests:
        alpha, beta = t.get("alpha", 0.05), t.get("beta", 0.05)
        lower, upper = sprt_bounds(alpha, beta)
        out_tests.append({**t, "new": name.get(t["new"], t["new"]), "base": name.get(t["base"], t["base"]),
                          "bounds": list(t["bounds"]), "alpha": alpha, "beta": beta, "lower": lower, "upper": upper,
                          "verdict": t.get("verdict"), "llr": _num(t.get("llr", math.nan)),
                          "games": int(t.get("games", 0)), "trajectory": [_num(v) for v in t.get("trajectory", [])]})
    return {
        "anchor": bots[anchor]["name"] if n else None, "seed": seed, "games": len(games),
        "blocks": len({g.block for g in games}), "players": sorted({len(g.bots) for g in games}),
        "category_names": list(CATEGORY_NAMES), "bots": rows,
        "win_matrix": {"bots": [bots[i]["name"] for i in order],
                       "rates": [[_num(rate[i, j]) for j in order] for i in order],
                       "meetings": [[int(met[i, j]) for j in order] for i in order]},
        "nash": {"bots": [bots[i]["name"] for i in order], "weights": [_num(weights[i]) for i in order],
                 "scores": [_num(nash_score[i]) for i in order]},
        "history": {**_history(games, n, anchor), "bots": [b["name"] for b in bots]},
        "tests": out_tests,
    }


def _f(x: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def text_table(report: dict) -> str:
    """The leaderboard as aligned text: rank, bot, rating with its 95% interval, games, points margin against the
    references, Nash average; then one line per test."""
    head = ["#", "bot", "rating", "95% interval", "games", "margin vs refs", "nash", "notes"]
    rows = [head]
    nash = dict(zip(report["nash"]["bots"], report["nash"]["scores"]))
    for k, b in enumerate(report["bots"], 1):
        m = b["margin"]
        flags = ("ref" if b.get("reference") else "") + ("" if b["reproducible"] else " not-reproducible")
        ci = "-" if b["ci_low"] is None else f"[{_f(b['ci_low'])}, {_f(b['ci_high'])}]"
        margin = "-" if m["mean"] is None else (f"{m['mean']:+.1f}" + ("" if m["low"] is None else
                                                                       f" [{m['low']:+.1f}, {m['high']:+.1f}]"))
        rows.append([str(k), b["name"], _f(b["rating"]), ci, str(b["games"]), margin,
                     _f(nash.get(b["name"]), "{:+.2f}"), flags.strip()])
    width = [max(len(r[c]) for r in rows) for c in range(len(head))]
    right = {0, 2, 4, 6}
    lines = ["  ".join(v.rjust(w) if c in right else v.ljust(w) for c, (v, w) in enumerate(zip(r, width))).rstrip()
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in width).rstrip())
    lines.append(f"{report['games']} games in {report['blocks']} blocks; ratings in Elo, {report['anchor']} = 0; "
                 f"intervals by block bootstrap (seed {report['seed']})")
    for t in report["tests"]:
        lo, hi = t["bounds"]
        unit = "Elo" if t["kind"] == "elo" else "points"
        lines.append(f"test {t['new']} vs {t['base']} ({t['kind']} [{lo:g}, {hi:g}] {unit}, alpha {t['alpha']:g}, "
                     f"beta {t['beta']:g}): {t.get('verdict') or 'undecided'}, LLR {_f(t['llr'], '{:.2f}')} "
                     f"[{t['lower']:.2f}, {t['upper']:.2f}], {t.get('games', 0)} games")
    return "\n".join(lines)


_CSS = """
section.box { margin: 12px 0; }
table.board { border-collapse: collapse; font-variant-numeric: tabular-nums; }
table.board th, table.board td { padding: 3px 9px; border-bottom: 1px solid var(--line); text-align: right; }
table.board th { cursor: pointer; user-select: none; background: #f1ece0; }
table.board th.sorted::after { content: " \\25BE"; }
table.board th.sorted.asc::after { content: " \\25B4"; }
table.board td.name, table.board th.name, table.board th.sha { text-align: left; }
table.board td.sha { font-family: monospace; color: var(--dim); text-align: left; }
svg text { font: 11px system-ui, sans-serif; fill: var(--ink); }
svg .axis line, svg .grid line { stroke: #ccc; }
svg .ci { stroke-width: 2.5; }
.legend span { display: inline-block; margin-right: 12px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
.tests { display: flex; flex-wrap: wrap; gap: 14px; }
.note { color: var(--dim); }
"""

_JS = r"""
const R = JSON.parse(document.getElementById('ladder-data').textContent);
const NS = 'http://www.w3.org/2000/svg';
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf',
                 '#7f7f7f', '#bcbd22'];
const colour = name => COLOURS[R.history.bots.indexOf(name) % COLOURS.length];
function svg(parent, tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}
function html(parent, tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}
const fmt = (v, d) => v === null || v === undefined ? '-' : v.toFixed(d === undefined ? 0 : d);
function scale(lo, hi, a, b) {
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const f = v => a + (v - lo) / (hi - lo) * (b - a);
  f.end = b;
  f.ticks = n => {
    const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(+t.toFixed(10));
    return out;
  };
  return f;
}
function xAxis(g, x, y0, y1, label) {
  const ax = svg(g, 'g', {class: 'axis'});
  for (const t of x.ticks(6)) {
    svg(ax, 'line', {x1: x(t), x2: x(t), y1: y0, y2: y1});
    svg(ax, 'text', {x: x(t), y: y1 + 13, 'text-anchor': 'middle'}, t);
  }
  if (label) svg(ax, 'text', {x: x.end, y: y1 + 26, 'text-anchor': 'end'}, label);
}
function done(id) { document.getElementById(id).setAttribute('data-drawn', '1'); }

function board() {
  const sec = document.getElementById('leaderboard');
  const nash = {}, weight = {};
  R.nash.bots.forEach((b, i) => { nash[b] = R.nash.scores[i]; weight[b] = R.nash.weights[i]; });
  const cols = [['#', r => r.rank], ['bot', r => r.name, 'name'], ['rating', r => r.rating],
    ['95% low', r => r.ci_low], ['95% high', r => r.ci_high], ['games', r => r.games],
    ['margin vs refs', r => r.margin.mean, '', r => fmt(r.margin.mean, 1) + (r.margin.low === null ? '' :
      ' [' + fmt(r.margin.low, 1) + ', ' + fmt(r.margin.high, 1) + ']')],
    ['nash', r => nash[r.name], '', r => fmt(nash[r.name], 2)],
    ['nash weight', r => weight[r.name], '', r => fmt(weight[r.name], 2)],
    ['reproducible', r => r.reproducible ? 1 : 0, '', r => r.reproducible ? 'yes' : 'no'],
    ['sha256', r => r.sha256 || '', 'sha', r => (r.sha256 || '').slice(0, 12)]];
  const rows = R.bots.map((b, i) => Object.assign({rank: i + 1}, b));
  const table = html(sec, 'table', {class: 'board', id: 'board'});
  const tr = html(html(table, 'thead', {}), 'tr', {});
  const body = html(table, 'tbody', {});
  let key = 0, asc = true;
  function fill() {
    const get = cols[key][1];
    rows.sort((a, b) => {
      const va = get(a), vb = get(b);
      if (va === null || va === undefined) return 1;
      if (vb === null || vb === undefined) return -1;
      return (va < vb ? -1 : va > vb ? 1 : 0) * (asc ? 1 : -1);
    });
    body.textContent = '';
    for (const r of rows) {
      const row = html(body, 'tr', {'data-bot': r.name});
      for (const c of cols) {
        const v = c[1](r);
        html(row, 'td', {class: c[2] || ''}, c[3] ? c[3](r) : typeof v === 'number' ? fmt(v) : v === null ? '-' : v);
      }
    }
    tr.querySelectorAll('th').forEach((th, i) => th.className = (cols[i][2] || '') +
      (i === key ? ' sorted' + (asc ? ' asc' : '') : ''));
  }
  cols.forEach((c, i) => html(tr, 'th', {class: c[2] || '', 'data-col': i}, c[0]).addEventListener('click', () => {
    asc = key === i ? !asc : (i === 0 || i === 1 || i === 10); key = i; fill();
    document.body.setAttribute('data-sort', c[0] + (asc ? ' asc' : ' desc'));
  }));
  fill();
  done('leaderboard');
}

function forest() {
  const rated = R.bots.filter(b => b.rating !== null);
  const W = 720, row = 22, top = 10, left = 170, H = top + row * Math.max(rated.length, 1) + 34;
  const s = svg(document.getElementById('forest'), 'svg', {width: W, height: H});
  const vals = rated.flatMap(b => [b.rating, b.ci_low, b.ci_high]).filter(v => v !== null).concat([0]);
  const x = scale(Math.min(...vals), Math.max(...vals), left, W - 20);
  xAxis(s, x, top, H - 30, 'Elo');
  rated.forEach((b, i) => {
    const y = top + row * i + row / 2;
    svg(s, 'text', {x: left - 8, y: y + 4, 'text-anchor': 'end'}, b.name);
    if (b.ci_low !== null) svg(s, 'line', {class: 'ci', x1: x(b.ci_low), x2: x(b.ci_high), y1: y, y2: y,
                                           stroke: colour(b.name)});
    svg(s, 'circle', {class: 'rating', cx: x(b.rating), cy: y, r: 4.5, fill: colour(b.name)});
  });
  done('forest');
}

function heat() {
  const sec = document.getElementById('heatmap');
  const names = R.win_matrix.bots, n = names.length, c = 46, left = 170, top = 110;
  const s = svg(sec, 'svg', {width: left + c * n + 90, height: top + c * n + 10});
  names.forEach((b, j) => svg(s, 'text', {x: 0, y: 0, transform: `translate(${left + c * j + c / 2},${top - 6}) ` +
    'rotate(-45)'}, b));
  for (let i = 0; i < n; i++) {
    svg(s, 'text', {x: left - 8, y: top + c * i + c / 2 + 4, 'text-anchor': 'end'}, names[i]);
    for (let j = 0; j < n; j++) {
      const v = R.win_matrix.rates[i][j], m = R.win_matrix.meetings[i][j];
      const fill = v === null ? '#eee' : `hsl(${Math.round(v * 120)}, 65%, ${85 - 30 * Math.abs(v - 0.5)}%)`;
      const cell = svg(s, 'rect', {class: 'cell', x: left + c * j, y: top + c * i, width: c - 2, height: c - 2, fill});
      svg(cell, 'title', {}, `${names[i]} vs ${names[j]}: ${v === null ? 'never met' : fmt(100 * v) + '% of ' + m}`);
      if (v !== null) svg(s, 'text', {x: left + c * j + c / 2 - 1, y: top + c * i + c / 2 + 3,
                                      'text-anchor': 'middle'}, fmt(100 * v));
    }
  }
  done('heatmap');
}

function categories() {
  const sec = document.getElementById('categories');
  const bots = R.bots.filter(b => b.games > 0), cats = R.category_names;
  const legend = html(sec, 'div', {class: 'legend'});
  bots.forEach(b => { const l = html(legend, 'span', {}); html(l, 'i', {style: 'background:' + colour(b.name)});
                      l.appendChild(document.createTextNode(b.name)); });
  const gw = Math.max(60, 14 * bots.length + 16), H = 230, top = 10, bottom = 40, left = 40;
  const s = svg(sec, 'svg', {width: left + gw * cats.length + 10, height: H});
  const vals = bots.flatMap(b => b.categories.flatMap(c => [c.high, c.mean])).filter(v => v !== null).concat([0]);
  const y = scale(0, Math.max(...vals), H - bottom, top);
  for (const t of y.ticks(5)) {
    svg(s, 'line', {x1: left, x2: left + gw * cats.length, y1: y(t), y2: y(t), stroke: '#ddd'});
    svg(s, 'text', {x: left - 5, y: y(t) + 4, 'text-anchor': 'end'}, t);
  }
  cats.forEach((cat, k) => {
    const x0 = left + gw * k + 8;
    svg(s, 'text', {x: x0 + gw / 2 - 8, y: H - bottom + 16, 'text-anchor': 'middle'}, cat);
    bots.forEach((b, i) => {
      const c = b.categories[k];
      if (c.mean === null) return;
      const bx = x0 + 14 * i;
      svg(svg(s, 'rect', {class: 'bar', x: bx, y: y(c.mean), width: 11, height: Math.max(0, y(0) - y(c.mean)),
                          fill: colour(b.name)}), 'title', {}, `${b.name} ${cat}: ${fmt(c.mean, 2)}`);
      if (c.low !== null) svg(s, 'line', {x1: bx + 5.5, x2: bx + 5.5, y1: y(c.low), y2: y(c.high), stroke: '#222'});
    });
  });
  done('categories');
}

function history() {
  const sec = document.getElementById('history');
  const H = R.history, W = 720, Ht = 260, left = 50, top = 10, bottom = 36;
  const s = svg(sec, 'svg', {width: W, height: Ht});
  const vals = H.ratings.flat().filter(v => v !== null).concat([0]);
  const x = scale(0, Math.max(1, ...H.games), left, W - 130), y = scale(Math.min(...vals), Math.max(...vals),
                                                                      Ht - bottom, top);
  xAxis(s, x, top, Ht - bottom, 'games');
  for (const t of y.ticks(5)) svg(s, 'text', {x: left - 5, y: y(t) + 4, 'text-anchor': 'end'}, t);
  const labels = [];
  H.bots.forEach((b, i) => {
    const pts = H.games.map((g, k) => [g, H.ratings[k][i]]).filter(p => p[1] !== null);
    if (!pts.length) return;
    svg(s, 'polyline', {class: 'line', fill: 'none', stroke: colour(b), 'stroke-width': 2,
                        points: pts.map(p => x(p[0]) + ',' + y(p[1])).join(' ')});
    const last = pts[pts.length - 1];
    labels.push([y(last[1]) + 4, x(last[0]) + 5, b]);
  });
  labels.sort((a, b) => a[0] - b[0]);
  labels.forEach((l, k) => { if (k && l[0] < labels[k - 1][0] + 12) l[0] = labels[k - 1][0] + 12; });
  for (const [ly, lx, b] of labels) svg(s, 'text', {x: lx, y: ly, style: 'fill:' + colour(b)}, b);
  done('history');
}

function tests() {
  const sec = document.getElementById('tests');
  const box = html(sec, 'div', {class: 'tests'});
  if (!R.tests.length) html(box, 'p', {class: 'note'}, 'No tests yet (harmonies ladder test DB NEW BASE).');
  for (const t of R.tests) {
    const fig = html(box, 'figure', {class: 'test'});
    const unit = t.kind === 'elo' ? 'Elo' : 'points';
    html(fig, 'figcaption', {}, `${t.new} vs ${t.base}: ${t.kind} [${t.bounds[0]}, ${t.bounds[1]}] ${unit}, ` +
      `${t.verdict || 'undecided'}, LLR ${fmt(t.llr, 2)}, ${t.games} games`);
    const W = 340, Ht = 180, left = 36, top = 8, bottom = 26, tr = t.trajectory;
    const s = svg(fig, 'svg', {width: W, height: Ht});
    const vals = tr.filter(v => v !== null).concat([t.lower * 1.1, t.upper * 1.1]);
    const x = scale(0, Math.max(1, tr.length), left, W - 10);
    const y = scale(Math.min(...vals), Math.max(...vals), Ht - bottom, top);
    xAxis(s, x, top, Ht - bottom, 'pairs');
    for (const [b, lab] of [[t.lower, 'H0'], [t.upper, 'H1']]) {
      svg(s, 'line', {class: 'bound', x1: left, x2: W - 10, y1: y(b), y2: y(b), stroke: '#c0392b',
                      'stroke-dasharray': '5 4'});
      svg(s, 'text', {x: left - 4, y: y(b) + 4, 'text-anchor': 'end'}, lab);
    }
    svg(s, 'line', {x1: left, x2: W - 10, y1: y(0), y2: y(0), stroke: '#999'});
    svg(s, 'polyline', {class: 'llr', fill: 'none', stroke: '#1f77b4', 'stroke-width': 2,
                        points: [[0, 0]].concat(tr.map((v, k) => [k + 1, v])).filter(p => p[1] !== null)
                          .map(p => x(p[0]) + ',' + y(p[1])).join(' ')});
  }
  done('tests');
}

for (const f of [board, forest, heat, categories, history, tests]) {
  try { f(); } catch (e) { console.error(f.name + ': ' + e); }
}
document.body.setAttribute('data-ready', '1');
"""


def html_page(report: dict, title: str = "Harmonies ladder") -> str:
    """One self-contained offline page for `report` (`build_report`): a sortable leaderboard, a forest plot of the
    ratings with their intervals, the pairwise heat map, per-category bars, each bot's rating over the ladder's
    history and each test's LLR curve between its bounds. Inline CSS, JS and SVG; it loads nothing."""
    t = html.escape(title)
    summary = html.escape(f"{report['games']} games in {report['blocks']} blocks · Elo, {report['anchor']} = 0 · "
                          f"95% intervals by block bootstrap (seed {report['seed']})")
    sections = [("leaderboard", "Leaderboard (click a column to sort)"), ("forest", "Ratings with 95% intervals"),
                ("heatmap", "Pairwise score rate, row against column (%)"),
                ("categories", "Mean points per category, with 95% intervals"),
                ("history", "Ratings over the ladder's history"), ("tests", "Sequential tests: LLR between bounds")]
    body = "\n".join(f'<section class="box" id="{sid}"><h3>{html.escape(h)}</h3></section>' for sid, h in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{t}</title>\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<style>{static_text('harmonies.css')}{_CSS}</style></head>\n"
            f'<body><header class="top"><h1>{t}</h1><span class="cfg">{summary}</span></header>\n<main>\n{body}\n'
            f'</main>\n<script type="application/json" id="ladder-data">{_json_for_script(report)}</script>\n'
            f"<script>{_JS}</script>\n</body></html>\n")
