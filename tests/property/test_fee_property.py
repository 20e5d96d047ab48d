"""Properties of the fee rule (bot.venue.fees): bounds, symmetry p <-> 1 - p, monotone in size."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from bot.venue.enums import Side
from bot.venue.fees import RATE_SCALE, FeeSchedule, booked_fee, fee_value, fee_worth, maker_rebate, taker_fee
from bot.venue.units import LOT, UNIT

prices = st.integers(1, UNIT - 1)
sizes = st.integers(0, 10**6).map(lambda n: n * LOT)  # up to a million shares, in lots
schedules = st.builds(FeeSchedule, rate=st.integers(0, RATE_SCALE), exponent=st.integers(1, 8),
                      rebate=st.integers(0, RATE_SCALE))


@given(prices, sizes, schedules)
def test_bounds(price, size, sched):
    exact = fee_value(price, size, sched)
    worth = fee_worth(price, size, sched)
    # floored to micro-units, never above the exact rule, and at most r * (1/4)^e per share
    assert 0 <= worth <= exact < worth + 1
    assert exact <= Fraction(size * sched.rate, RATE_SCALE) / 4 ** sched.exponent
    # a taker BUY gives up fewer shares than it bought; what they are worth never exceeds the fee
    shares = taker_fee(Side.BUY, price, size, sched)
    assert 0 <= shares <= size
    assert shares <= exact * UNIT / price < shares + 1
    got, fee = booked_fee(Side.BUY, price, size, sched, False)
    assert got == size - shares and 0 <= fee <= worth
    assert booked_fee(Side.SELL, price, size, sched, False) == (size, worth)
    # a maker's rebate is a share of the same worth, booked as a negative fee
    rebate = maker_rebate(price, size, sched)
    assert 0 <= rebate <= worth
    assert booked_fee(Side.BUY, price, size, sched, True) == (size, -rebate)


@given(prices, sizes, schedules)
def test_symmetric_in_p_and_one_minus_p(price, size, sched):
    assert fee_value(price, size, sched) == fee_value(UNIT - price, size, sched)
    assert fee_worth(price, size, sched) == fee_worth(UNIT - price, size, sched)
    assert taker_fee(Side.SELL, price, size, sched) == taker_fee(Side.SELL, UNIT - price, size, sched)
    assert maker_rebate(price, size, sched) == maker_rebate(UNIT - price, size, sched)


@given(prices, sizes, sizes, schedules)
def test_monotone_in_size(price, a, b, sched):
    small, large = sorted((a, b))
    for side in (Side.BUY, Side.SELL):
        assert taker_fee(side, price, small, sched) <= taker_fee(side, price, large, sched)
    assert fee_worth(price, small, sched) <= fee_worth(price, large, sched)
    assert maker_rebate(price, small, sched) <= maker_rebate(price, large, sched)


@given(prices, sizes, schedules)
def test_no_rate_no_fee(price, size, sched):
    free = FeeSchedule(rate=0, exponent=sched.exponent, rebate=sched.rebate)
    assert fee_worth(price, size, free) == taker_fee(Side.BUY, price, size, free) == 0
    assert maker_rebate(price, size, free) == 0
