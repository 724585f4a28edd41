"""Evaluators of the self-play learner framework: their interface (`base`: `Evaluator`, `Finished`, `td_targets`,
the weights' files, `vs_greedy`), then one module each: `ntuple`, the n-tuple network `learned` (with the fused fast
path)."""
