"""Evaluators of the self-play learner framework (`experiments.selfplay.Evaluator`), one module each: `ntuple`, the
n-tuple network `learned` (with the fused fast path)."""
