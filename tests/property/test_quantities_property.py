"""Sizes, amounts and prices written as people write them (``bot.core.quantities``): exact, or
refused with the key."""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest
from hypothesis import given, strategies as st

from bot.core.quantities import (MICRO_LOOKING, OrderSize, Price, QuantityError, Shares, Usdc, as_written, in_units, order_sizes, to_units,
                                 undersized)
from bot.venue.units import UNIT

micro = st.integers(min_value=0, max_value=10**15)


def decimal_text(units: int) -> str:
    whole, frac = divmod(units, UNIT)
    return f"{whole}.{frac:06d}".rstrip("0").rstrip(".")


@given(micro)
def test_decimal_text_is_read_exactly(units):
    assert to_units(decimal_text(units)) == units
    assert to_units(" " + decimal_text(units) + " ") == units


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=999_999))
def test_a_float_of_at_most_fifteen_digits_is_read_as_written(whole, frac):
    text = f"{whole}.{frac:06d}".rstrip("0").rstrip(".")
    if sum(c.isdigit() for c in text.lstrip("0.")) > 15:
        return
    assert to_units(float(text)) == int(Decimal(text) * UNIT)


@given(st.integers(min_value=-10**12, max_value=10**12))
def test_an_integer_is_whole_units(n):
    assert to_units(n) == n * UNIT


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=999_999),
       st.integers(min_value=1, max_value=9))
def test_a_seventh_decimal_is_refused_never_rounded(whole, frac, digit):
    with pytest.raises(QuantityError, match="more than 6 decimals"):
        to_units(f"{whole}.{frac:06d}{digit}")
    assert to_units(f"{whole}.{frac:06d}0") == whole * UNIT + frac  # a trailing zero is no decimal


@pytest.mark.parametrize("value, message", [
    (True, "expected a number of shares, got true"),
    ("ten", "expected shares as a number"),
    ("nan", "out of range"),
    (10**18, "out of range"),
    (123456789012.1234567, "write it as a string"),
    (None, "expected a number of shares, got NoneType"),
])
def test_what_is_not_an_exact_number_is_refused(value, message):
    with pytest.raises(QuantityError, match=message):
        to_units(value)


class Band(msgspec.Struct, frozen=True):
    size: OrderSize
    ticks: int = 1


class Params(msgspec.Struct, frozen=True, kw_only=True):
    order_size: OrderSize = 10 * UNIT
    max_inventory: Shares = 100 * UNIT
    loss: Usdc | None = None
    margin: Price = 5_000
    count: int = 3
    bands: tuple[Band, ...] = ()
    label: str = ""


def test_only_the_marked_fields_are_converted_in_nested_tables():
    table = {"order_size": "10.5", "max_inventory": 100, "loss": 2.5, "margin": 0.005, "count": 7,
             "bands": [{"size": 20, "ticks": 2}, {"size": "0.01"}], "label": "12"}
    p = msgspec.convert(in_units(table, Params), Params)
    assert p == Params(order_size=10_500_000, max_inventory=100 * UNIT, loss=2_500_000, margin=5_000, count=7,
                       bands=(Band(20 * UNIT, 2), Band(10_000)), label="12")
    assert table["order_size"] == "10.5"  # the table itself is left as it was
    assert in_units({"loss": None}, Params) == {"loss": None}


def test_an_error_names_the_key_and_offers_off_where_a_setting_may_be_off():
    with pytest.raises(QuantityError, match=r"^`p.bands\[1\].size`: 0.0000001 shares has more than 6 decimals$"):
        in_units({"bands": [{"size": 1}, {"size": "0.0000001"}]}, Params, where="p")
    with pytest.raises(QuantityError, match=r'^`loss`: expected USDC as a number \(10, 10.5 or "10.5"\) or "off", '
                                            r"got 'Off'$"):
        in_units({"loss": "Off"}, Params, off="off")


def test_order_sizes_are_found_in_nested_structs_and_checked_against_each_market():
    p = Params(order_size=3 * UNIT, bands=(Band(20 * UNIT), Band(4 * UNIT)))
    assert order_sizes(p) == [("order_size", 3 * UNIT), ("bands[0].size", 20 * UNIT), ("bands[1].size", 4 * UNIT)]
    lines = undersized(p, {"0xa": 5 * UNIT, "0xb": 15 * UNIT, "0xc": 1 * UNIT})
    assert lines == [
        "order_size = 3 shares is below the minimum order of 2 market(s) (up to 15 shares: 0xa, 0xb): none is sent there",
        "bands[1].size = 4 shares is below the minimum order of 2 market(s) (up to 15 shares: 0xa, 0xb): none is sent there",
    ]
    assert undersized(Params(), {"0xa": 5 * UNIT}) == []


@given(st.builds(Params, order_size=micro, max_inventory=micro, loss=st.none() | micro, margin=micro,
                 bands=st.lists(st.builds(Band, size=micro), max_size=3).map(tuple)))
def test_what_is_written_back_reads_as_the_same_micro_units(p):
    written = as_written(msgspec.to_builtins(p), Params)
    for key, unit in (("order_size", "shares"), ("margin", "price")):  # an int only where it cannot look like micro-units
        v = written[key]
        assert isinstance(v, str) or v < MICRO_LOOKING[unit]
    assert msgspec.convert(in_units(written, Params), Params) == p
