"""harmonies-env: a fast, faithful engine and RL environments for the board game Harmonies (Libellud, 2024)."""
from .actions import NUM_ACTIONS
from .config import RIVER_LOOPS, GameConfig
from .game import Game, IllegalActionError, determinize, score_board
from .scoring import CATEGORIES

__version__ = "0.1.0"
__all__ = ["Game", "GameConfig", "RIVER_LOOPS", "IllegalActionError", "determinize", "score_board", "NUM_ACTIONS",
           "CATEGORIES", "env", "raw_env", "harmonies_v0"]


def __getattr__(name: str):
    """`harmonies_env.env(...)` / `raw_env(...)` / `harmonies_v0`: the PettingZoo AEC env, imported on first use."""
    if name in ("env", "raw_env"):
        from . import env_aec

        return getattr(env_aec, name)
    if name == "harmonies_v0":
        import importlib

        return importlib.import_module(".harmonies_v0", __name__)
    raise AttributeError(f"module 'harmonies_env' has no attribute {name!r}")

# Gymnasium ids harmonies/Solo-v0 and harmonies/Versus-v0 are registered on import.
from .env_gym import register_envs as _register_envs  # noqa: E402

_register_envs()
