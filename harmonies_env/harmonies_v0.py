"""Harmonies' versioned PettingZoo module, as in `pettingzoo.classic`: `from harmonies_env import harmonies_v0`.

`harmonies_v0.env(...)` (the classic wrappers) and `harmonies_v0.raw_env(...)` take the same arguments; the
environment and its reference docstring live in `harmonies_env.env_aec`. A change that alters games or spaces
makes a `harmonies_v1`, so code written against v0 keeps meaning what it meant.
"""
from .env_aec import env, raw_env

__all__ = ["env", "raw_env"]
