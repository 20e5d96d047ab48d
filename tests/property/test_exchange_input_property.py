"""The exchange's input readers over their whole input space: JSON depth and strict numbers."""

from __future__ import annotations

import math

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.exchange.bodies import decode_json
from bot.venue.models.decoding import MAX_JSON_DEPTH, json_depth
from bot.exchange.query import MAX_DIGITS, parse_int, parse_number

brackety = st.text(alphabet='[]{}"\\,:ab', max_size=12)  # strings full of what the scan must skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | brackety,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(brackety, c, max_size=3),
    max_leaves=30,
)


def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@given(json_values)
def test_json_depth_counts_nesting_not_brackets_in_strings(value):
    raw = msgspec.json.encode(value)
    assert json_depth(raw) == depth(value)
    if depth(value) <= MAX_JSON_DEPTH:
        assert decode_json(raw) == value


@given(st.integers(MAX_JSON_DEPTH + 1, 100_000), st.sampled_from(["[", '{"a":']))
def test_too_deep_is_refused_before_decoding(n, opener):
    closer = "]" if opener == "[" else "}"
    raw = (opener * n + "1" + closer * n).encode()
    with pytest.raises(ValueError, match="nested deeper"):
        decode_json(raw)


@given(st.text(max_size=30))
def test_numbers_are_finite_in_range_or_refused(text):
    try:
        value = parse_number(text, 0, 1e6)
    except ValueError:
        return
    assert math.isfinite(value) and 0 <= value <= 1e6 and text.isascii()


@given(st.integers(-(10**MAX_DIGITS) + 1, 10**MAX_DIGITS - 1), st.integers(-1000, 1000))
def test_integers_round_trip_inside_their_range(n, lo):
    if n < lo:
        with pytest.raises(ValueError):
            parse_int(str(n), lo)
    else:
        assert parse_int(str(n), lo) == n
    for spelled in (f" {n}", f"{n} ", f"+{n}", f"{n}.0", f"{n:_}" if abs(n) >= 1000 else f"{n}x", str(n) + "0" * 20):
        with pytest.raises(ValueError):
            parse_int(spelled, -(10**30))
