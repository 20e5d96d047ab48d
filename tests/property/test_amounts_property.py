"""The integer amount math equals a literal Decimal transcription of venue.md section 3."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext

from hypothesis import given, settings, strategies as st

from bot.venue.amounts import (
    AmountError,
    TICK_RULES,
    check_signed_amounts,
    limit_amounts,
    market_amounts,
)
from bot.venue.enums import OrderType, Side

TICKS = {100_000: "0.1", 10_000: "0.01", 1_000: "0.001", 100: "0.0001"}
MARKET_MAKER_DECIMALS, MARKET_TAKER_DECIMALS = 2, 4  # the venue's refusal: "a max accuracy of 2 ... 4 decimals"
ROUNDING = {"0.1": (1, 2, 3), "0.01": (2, 2, 4), "0.001": (3, 2, 5), "0.0001": (4, 2, 6)}


# ---- reference: venue.md section 3, in exact decimals, written from the text -----------------


def decimals_of(x: Decimal) -> int:
    return max(0, -x.normalize().as_tuple().exponent)


def floor_dp(x: Decimal, d: int) -> Decimal:
    return x.quantize(Decimal(1).scaleb(-d), rounding=ROUND_FLOOR)


def ceil_dp(x: Decimal, d: int) -> Decimal:
    return x.quantize(Decimal(1).scaleb(-d), rounding=ROUND_CEILING)


def fix(v: Decimal, a: int) -> Decimal:
    if decimals_of(v) > a:
        v = ceil_dp(v, a + 4)
        if decimals_of(v) > a:
            v = floor_dp(v, a)
    return v


def to_units(x: Decimal) -> int:
    return int((x * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def ref_limit(side: str, price: str, size: str, tick: str) -> tuple[int, int]:
    with localcontext() as ctx:
        ctx.prec = 80
        _, size_dp, amount_dp = ROUNDING[tick]
        p, t = Decimal(price), Decimal(tick)
        assert p % t == 0 and t <= p <= 1 - t
        shares = floor_dp(Decimal(size), size_dp)
        assert shares > 0
        usdc = to_units(fix(shares * p, amount_dp))
        return (usdc, to_units(shares)) if side == "BUY" else (to_units(shares), usdc)


def ref_market(side: str, price: str, amount: str, tick: str) -> tuple[int, int]:
    with localcontext() as ctx:
        ctx.prec = 80
        price_dp, size_dp, amount_dp = ROUNDING[tick]
        amount_dp = min(amount_dp, MARKET_TAKER_DECIMALS)  # production refuses more on a market order
        p = floor_dp(Decimal(price), price_dp)
        amt = floor_dp(Decimal(amount), size_dp)
        if side == "BUY":
            return to_units(amt), to_units(fix(amt / p, amount_dp))
        return to_units(amt), to_units(fix(amt * p, amount_dp))


def text(units: int) -> str:
    return str(Decimal(units).scaleb(-6))


# ---- strategies --------------------------------------------------------------------------------

ticks = st.sampled_from(sorted(TICK_RULES))
sides = st.sampled_from([Side.BUY, Side.SELL])
sizes = st.one_of(
    st.integers(min_value=10_000, max_value=10**12),  # any micro-unit size >= 0.01
    st.integers(min_value=1, max_value=10**6).map(lambda n: n * 10_000),  # 2-decimal sizes
)


@st.composite
def grid_price(draw, tick: int) -> int:
    return draw(st.integers(min_value=1, max_value=1_000_000 // tick - 1)) * tick


@settings(max_examples=1500, deadline=None)
@given(data=st.data(), tick=ticks, side=sides, size=sizes)
def test_limit_equals_reference(data, tick, side, size):
    price = data.draw(grid_price(tick))
    got = limit_amounts(side, price, size, tick)
    assert got == ref_limit(side.value, text(price), text(size), TICKS[tick])
    # the exchange's check accepts it and reads back the exact price
    terms = check_signed_amounts(side, got.maker, got.taker, OrderType.GTC, tick)
    assert terms.price == price


@settings(max_examples=1500, deadline=None)
@given(data=st.data(), tick=ticks, side=sides, amount=sizes)
def test_market_equals_reference(data, tick, side, amount):
    # any micro-unit price that floors onto the grid within [tick, 1 - tick]
    price = data.draw(grid_price(tick)) + data.draw(st.integers(min_value=0, max_value=tick - 1))
    try:
        got = market_amounts(side, amount, price, tick)
    except AmountError:
        # only refused when flooring leaves nothing to spend, or too little to price within a tick
        assert amount < 1_000_000
        return
    assert got == ref_market(side.value, text(price), text(amount), TICKS[tick])
    terms = check_signed_amounts(side, got.maker, got.taker, OrderType.FOK, tick)
    floored = price - price % tick
    if side is Side.BUY:
        assert terms.price >= floored  # BUY never accepts worse than asked
    else:
        assert terms.price <= floored  # the floored USDC leg never asks more than the price


@settings(max_examples=300, deadline=None)
@given(tick=ticks, side=sides, size=sizes, data=st.data())
def test_fix_is_floor(tick, side, size, data):
    """venue.md 3.1: with the supported ticks fix(v, A) equals floor_dp(v, A) for market BUY."""
    price = data.draw(grid_price(tick))
    _, _, a = ROUNDING[TICKS[tick]]
    with localcontext() as ctx:
        ctx.prec = 80
        v = Decimal(size).scaleb(-6) // Decimal("0.01") * Decimal("0.01") / (Decimal(price).scaleb(-6))
        assert fix(v, a) == floor_dp(v, a)


@settings(max_examples=3000, deadline=None)
@given(data=st.data(), tick=ticks, side=sides, amount=sizes)
def test_market_orders_stay_within_the_venue_decimals_and_the_limit(data, tick, side, amount):
    """For every tick, price and amount: the rounded market order has at most 2 decimals on its
    maker leg and 4 on its taker leg, and its implied price is never worse than the limit (it
    crosses exactly the levels the limit does). Only sub-unit amounts may be too small to price."""
    limit = data.draw(grid_price(tick))
    try:
        got = market_amounts(side, amount, limit, tick)
    except AmountError:
        assert amount < 1_000_000  # below 1 USDC (BUY) or 1 share (SELL)
        return
    assert decimals_of(Decimal(got.maker).scaleb(-6)) <= MARKET_MAKER_DECIMALS
    assert decimals_of(Decimal(got.taker).scaleb(-6)) <= MARKET_TAKER_DECIMALS
    assert got.maker > 0 and got.taker > 0
    if side is Side.BUY:  # pays at most limit per share, to within a tick: maker / taker in [limit, limit + tick)
        assert limit * got.taker <= got.maker * 1_000_000 < (limit + tick) * got.taker
    else:  # receives at least limit per share, to within a tick: taker / maker in (limit - tick, limit]
        assert (limit - tick) * got.maker < got.taker * 1_000_000 <= limit * got.maker
    # the local exchange accepts it, and its worst acceptable price is the limit's level
    terms = check_signed_amounts(side, got.maker, got.taker, OrderType.FOK, tick)
    assert terms.price - terms.price % tick == limit if side is Side.BUY else -(-terms.price // tick) * tick == limit
