"""The shipped evaluators of the self-play framework, one module each: `ntuple` (the n-tuple network `learned`, with
the fused fast path and expert iteration) and `mlp` (the afterstate MLP `mlp`). Their interface is
`agents.evaluator`; each is registered below by its one line of the learners' registry (`agents.learners`), which
gives its training command; each plays through its own agent kind (`learned`, `mlp`). Their modules are imported
only when a run builds one."""
from agents.learners import LearnerKind, register_learner

register_learner(LearnerKind(
    "learned", "experiments.evaluators.ntuple:make",
    "the n-tuple network `learned` (agents/ntuple/) by TD(lambda) from self-play", config="learned.toml",
    schema="experiments.evaluators.ntuple:DEFAULTS", settings="experiments.evaluators.ntuple:settings",
    agent="learned"))
register_learner(LearnerKind(
    "mlp", "experiments.evaluators.mlp:make", "the MLP baseline `mlp` (agents/mlp/) from scratch by batched self-play",
    config="mlp.toml", schema="experiments.evaluators.mlp:DEFAULTS", settings="experiments.evaluators.mlp:settings",
    resumed="experiments.evaluators.mlp:make_resumed", agent="mlp"))
