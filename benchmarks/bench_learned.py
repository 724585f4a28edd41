"""Decision times of the learned agents (`learned`, the n-tuple network, and its variants): one JSON line per case
(results in benchmarks/RESULTS.md). Each case is named after the spec it times; the flagship's self-play is
`benchmarks.bench_selfplay`, the MLP baseline's cases are `benchmarks.bench_mlp`.

    python -m benchmarks.bench_learned --cases learned_decision learned_win_decision learned_search_decision

Cases: `SPEC_decision` (`learned_decision` times `learned`): the agent deciding a turn with its checkpoint's play
settings, ms per decision (wall and the thread's CPU time): `learned` (the shipped n-tuple network), `learned-win`,
`learned-search` (the shipped default) and `learned-search:8it:root6` (the root before issue 48). The line names
the spec it timed (`agent`).
"""
from __future__ import annotations

import argparse
import json

from .decisions import decision_line

#: The decision-time cases: case -> (agent spec, games of 2 players, Side A, seeds 0..games-1).
DECISIONS = {"learned_decision": ("learned", 4), "learned_win_decision": ("learned-win", 4),
             "learned_search_decision": ("learned-search", 4),
             "learned_search_root6_decision": ("learned-search:8it:root6", 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--cases", nargs="*", default=list(DECISIONS), choices=list(DECISIONS))
    args = ap.parse_args(argv)
    for case, (spec, games) in DECISIONS.items():
        if case in args.cases:
            print(json.dumps(decision_line(case, spec, games)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
