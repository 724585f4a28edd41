"""Seeded property tests of two of issue 47's fuzz targets: agent specs and training configs. Whatever text a user
types, the answer is an agent / a checked config, or one error line (ValueError / OSError naming what was wrong):
never another exception, a traceback's worth of text, or a hang (each example is small and bounded).
tests/hostile_state_fuzz.py fuzzes game states; tests/test_hostile.py holds the hand-picked cases."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.registry import all_names, make_agent
from experiments import train
from experiments.common import ConfigError, apply_overrides, load_config
from experiments.evaluators.ntuple import settings as ntuple_settings

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # old agent names: a note, not the point here
FUZZ = settings(derandomize=True, deadline=None, max_examples=150,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

#: Arguments people type, and what breaks parsers: numbers of every size and form, units, paths, junk.
ARGUMENTS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "0", "-1", "1e9", "1e308", "nan", "inf", "-inf", "0x10", "1_000", "3it", "0it", "-5it",
                     "1e12it", "0.5s", "0s", "-1s", "1e400s", "nans", "2**63", "9223372036854775808it", "/nonexistent",
                     "../../etc/passwd", "a:b:c", ":", "::", " 5 ", "５", "\x00", "\n", "true", "[1]", "{}"]),
    st.text(max_size=30),
)


def _one_line_error(e: BaseException) -> None:
    assert isinstance(e, (ValueError, OSError)), f"{type(e).__name__}: {e}"
    text = str(e)
    assert "\n" not in text.strip() and len(text) < 2000, text


@FUZZ
@given(kind=st.sampled_from(sorted(all_names())), arg=st.one_of(st.none(), ARGUMENTS))
def test_any_agent_spec_is_an_agent_or_one_line_error(kind, arg):
    spec = kind if arg is None else f"{kind}:{arg}"
    try:
        agent = make_agent(spec, seed=1)
    except Exception as e:  # noqa: BLE001 - the property: only the one-line errors
        _one_line_error(e)
    else:
        assert agent is not None


@FUZZ
@given(spec=st.text(max_size=40))
def test_any_text_as_an_agent_spec_is_an_agent_or_one_line_error(spec):
    try:
        make_agent(spec)
    except Exception as e:  # noqa: BLE001
        _one_line_error(e)


def _toml_value() -> st.SearchStrategy[str]:
    scalar = st.one_of(st.integers(-(2**66), 2**66), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                       st.text(max_size=10))

    def toml(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(toml(x) for x in v) + "]"
        return json.dumps(v) if isinstance(v, str) else str(v)

    return st.one_of(scalar.map(toml), st.lists(scalar, max_size=4).map(toml), st.text(max_size=20))


SCHEMA = train.schema("learned")
BASE = load_config(train.CONFIGS / "learned_tiny.toml", SCHEMA)
KEYS = [f"{sec}.{key}" for sec, keys in SCHEMA.items() for key in keys]


@FUZZ
@given(key=st.one_of(st.sampled_from(KEYS), st.text(max_size=20)), value=_toml_value())
def test_any_set_override_is_a_checked_config_or_one_line_error(key, value):
    try:
        cfg = ntuple_settings(apply_overrides(BASE, [f"{key}={value}"], SCHEMA))
    except ConfigError as e:
        _one_line_error(e)
    else:  # accepted: then every numeric setting is within its documented range
        from experiments.ranges import check_range

        for sec, values in cfg.items():
            for k, v in values.items():
                assert check_range(f"{sec}.{k}", v, k) is None, (sec, k, v)
