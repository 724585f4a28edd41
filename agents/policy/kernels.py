"""The batch policies' jitted kernels: public copies, observations and uniform random moves of many games at once
(the classes that use them are in `agents.policy` and `agents.pool_env`)."""
from __future__ import annotations

from numba import njit

from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.observation import encode_observation


@njit(cache=True)
def public_rows(states, rows, out) -> None:
    """out[j] = the public copy of states[rows[j]] for its player to move (`state.hide_private`, the rule of
    `view.public_copy`).

    states int32 (N, STATE_SIZE) (read only); rows int64 (M,); out int32 (M, STATE_SIZE)."""
    for j in range(rows.shape[0]):
        out[j] = states[rows[j]]
        S.hide_private(out[j], out[j, S.CURRENT])


@njit(cache=True)
def _observe_rows(states, players, obs, masks, buf) -> None:
    for j in range(states.shape[0]):
        encode_observation(states[j], players[j], obs[j])
        rules.legal_mask(states[j], masks[j], buf)


@njit(cache=True)
def random_rows(states, rows, rng, out, buf) -> None:
    """A uniformly random legal action of the player to move in each listed row.

    states: int32 (N, STATE_SIZE), read only; rows: int64 (M,); rng: int64 (N,) each row's splitmix64
    generator (`state.random_below`), advanced here (`rules.random_action`, the engine's random player);
    out: int64 (M,) the actions (-1 where the game is over, the only position without a legal action);
    buf: int64 (NUM_ACTIONS,) scratch.
    """
    for j in range(rows.shape[0]):
        r = rows[j]
        out[j] = -1 if states[r, S.GAME_OVER] else rules.random_action(states[r], rng, r, buf)
