"""The batch policies' jitted kernels: public copies and observations of many games at once (the classes that
use them are in `agents.policy`)."""
from __future__ import annotations

from numba import njit

from harmonies_env import rules
from harmonies_env import state as S
from harmonies_env.observation import encode_observation


@njit(cache=True)
def public_rows(states, rows, out) -> None:
    """out[j] = the public copy of states[rows[j]] for its player to move (`state.hide_private`, the rule of
    `view.public_copy`).

    states int64 (N, STATE_SIZE) (read only); rows int64 (M,); out int64 (M, STATE_SIZE)."""
    for j in range(rows.shape[0]):
        out[j] = states[rows[j]]
        S.hide_private(out[j], out[j, S.CURRENT])


@njit(cache=True)
def _observe_rows(states, players, obs, masks, buf) -> None:
    for j in range(states.shape[0]):
        encode_observation(states[j], players[j], obs[j])
        rules.legal_mask(states[j], masks[j], buf)
