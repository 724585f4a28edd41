"""Applications on top of the engine and the agents: the `harmonies` command, tournaments, play and viewers.

Layers depend one way: `harmonies_env` (kernels, game, envs) -> `agents` -> `experiments` / `harmonies_apps`.
Nothing in `harmonies_env` or `agents` imports this package.
"""
