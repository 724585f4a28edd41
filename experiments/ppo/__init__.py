"""MaskablePPO training: the one set-up and loop the PPO commands plug their environments into (`runner`), its
callbacks (`callbacks`), weights-only checkpoints and policy exports (`checkpoint`) and the policy's evaluation on
the match engine (`evaluate`; `python -m experiments.ppo.evaluate RUN` re-evaluates a finished run). The commands
themselves (solo-ppo, versus-ppo, selfplay-ppo) are `experiments.flat_ppo`'s."""
