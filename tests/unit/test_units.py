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


# --- prices off the 6-decimal grid (the live venue's V2 records) -----------------------------
from bot.venue.units import traded_price  # noqa: E402


@pytest.mark.parametrize("text,size,expected", [
    ("0.7210000476613491", 11_371_898, (721_000, 8_199_139)),
    ("0.3099999112272578", 2_365_591, (310_000, 733_333)),
    ("0.3500000023297493", 579_461_479, (350_000, 202_811_519)),
    ("0.52", 5_000_000, (520_000, None)),
    ("0.5000", 25_000_000, (500_000, None)),
    ("0.0000005", 2_000_000, (0, 1)),  # half a micro-unit: half-even rounds the price down, the cash is exact
    ("0.0000015", 1_000_000, (2, 2)),
])
def test_traded_price(text, size, expected):
    assert traded_price(text, size) == expected


@pytest.mark.parametrize("text", ["-0.7210000476613491", "abc", "nan", "inf", "0.7210000476613491" + "1" * 30,
                                  "1e40", "0.72.1"])
def test_traded_price_refuses(text):
    with pytest.raises(UnitsError):
        traded_price(text, 1_000_000)


def test_parse_refuses_digits_past_a_decimal_contexts_precision():
    # 40 significant digits: a 28-digit context would round them away and read 0.72
    with pytest.raises(UnitsError):
        parse_units("0.72000000000000000000000000000000000000001")
    assert parse_units("0.720000000000000000000000000000000000000000") == 720_000
    assert parse_units("-0.000001000") == -1


@given(st.integers(1, 10**15), st.data())
def test_a_price_printed_from_two_settled_amounts_gives_the_cash_back(size, data):
    """The venue's price is USDC over shares (at most 1 USDC a share, both below 10**9 whole
    units) printed as a float: the cash comes back exactly."""
    cash = data.draw(st.integers(0, size))
    price, got = traded_price(repr(cash / size), size)
    exact = Decimal(cash) / Decimal(size)
    if got is None:  # the float printed on the grid: price x size is the cash
        assert price * size == cash * 1_000_000
    else:
        assert got == cash
        assert abs(Decimal(price) - exact * 1_000_000) <= Decimal("0.5") + Decimal(10) ** -6
