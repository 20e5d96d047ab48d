from decimal import Decimal

import pytest
from hypothesis import given, strategies as st

from bot.venue.units import UnitsError, format_units, parse_units


@pytest.mark.parametrize(
    "text,units",
    [("0.52", 520000), ("100", 100000000), ("0.001", 1000), ("1.000000", 1000000), (".5", 500000),
     ("-3.25", -3250000), ("1e-3", 1000), ("0", 0), ("21.37", 21370000)],
)
def test_parse_exact(text, units):
    assert parse_units(text) == units


@pytest.mark.parametrize("text", ["0.0000001", "abc", "", "nan", "inf", "1.2.3", "9" * 5000, "1" * 19 + ".5",
                                  "1e30", "-" + "9" * 30])
def test_parse_refuses(text):
    with pytest.raises(UnitsError):
        parse_units(text)


@given(st.integers(min_value=-10**15, max_value=10**15))
def test_format_parse_roundtrip(units):
    text = format_units(units)
    assert parse_units(text) == units
    assert Decimal(text) * 1_000_000 == units
