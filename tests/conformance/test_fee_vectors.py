"""The version-2 fee rule (bot.venue.fees) against the upstream fee vectors
(data/vectors/polymarket_signing_vectors.json, ``fees_v2_formula_vectors``: 10 platform fees, 2
builder fees, 1 combined)."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest

from bot.venue.enums import Side
from bot.venue.fees import FeeSchedule, booked_fee, builder_fee, fee_value, fee_worth, schedule_from_wire, taker_fee
from bot.venue.units import UNIT, parse_units


@pytest.fixture(scope="module")
def fee_vectors(data_dir):
    data = json.loads((data_dir / "vectors" / "polymarket_signing_vectors.json").read_text())
    return data["fees_v2_formula_vectors"]


def units(value) -> int:
    return parse_units(str(value))  # refuses a vector finer than a micro-unit


def test_there_are_thirteen_vectors(fee_vectors):
    n = len(fee_vectors["platform_fee"]) + len(fee_vectors["builder_fee"]) + 1
    assert n == 13


def test_platform_fees_exactly_and_booked_within_a_micro_unit(fee_vectors):
    tolerance = Fraction(Decimal(str(fee_vectors["tolerance"])))
    for vec in fee_vectors["platform_fee"]:
        assert vec["amount_usd"] == "contracts*price"
        sched = schedule_from_wire(vec["fee_rate"], vec["fee_exponent"])
        price, size = units(vec["price"]), units(vec["contracts"])
        expected = Fraction(Decimal(str(vec["expected"])))
        # (amount / price) * rate * (p(1-p))^exp with amount = contracts * price: exact
        assert fee_value(price, size, sched) / UNIT == expected, vec
        booked = fee_worth(price, size, sched)  # floored to micro-units
        assert 0 <= expected - Fraction(booked, UNIT) < Fraction(1, UNIT) <= tolerance, vec
        assert taker_fee(Side.SELL, price, size, sched) == booked
        # a taker BUY gives up shares worth that fee at the price: never more than the fee worth
        shares = taker_fee(Side.BUY, price, size, sched)
        assert shares == int(fee_value(price, size, sched) * UNIT / price)
        got, fee = booked_fee(Side.BUY, price, size, sched, False)
        assert got == size - shares and fee == price * shares // UNIT <= booked


def test_builder_and_combined_fees(fee_vectors):
    for vec in fee_vectors["builder_fee"]:
        rate = units(vec["builder_taker_fee_rate"])  # millionths
        fee = builder_fee(units(vec["price"]), units(vec["contracts"]), rate)
        assert fee == units(vec["expected"]), vec
    comb = fee_vectors["combined"]
    price, size = units(comb["price"]), units(comb["contracts"])
    sched = schedule_from_wire(comb["fee_rate"], comb["fee_exponent"])
    total = fee_worth(price, size, sched) + builder_fee(price, size, units(comb["builder_taker_fee_rate"]))
    assert total == units(comb["expected_total"])


def test_schedule_from_the_wire_is_exact():
    s = schedule_from_wire(0.0175, 2, "0.2", True)
    assert s == FeeSchedule(rate=17_500, exponent=2, rebate=200_000, taker_only=True)
    assert s.bps == 175
