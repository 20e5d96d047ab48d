"""Order amounts: what a price and a size become in the signed ``makerAmount``/``takerAmount``.

Invariant: every result equals the exact-decimal rules of venue.md section 3 for the four
supported ticks (0.1, 0.01, 0.001, 0.0001), computed here with integers only, except that a
market order's taker leg never carries more than 4 decimals (production refuses more on 0.001 and
0.0001 ticks, where section 3.3 would give 5 and 6). Inputs are
micro-units (1 share = 1 USDC = 1_000_000; a price of 0.52 is 520_000). Nothing is ever rounded
up: shares and amounts are floored, so an order never spends or sells more than asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from fractions import Fraction
from typing import NamedTuple

from bot.venue.enums import OrderType, Side
from bot.venue.units import MAX_WHOLE_DIGITS, UNIT

SHARE_STEP = 10_000
"""Sizes are floored to 2 decimals: a shares leg is always a multiple of 10_000 units."""
MARKET_TAKER_STEP = 100
"""A market order's taker leg carries at most 4 decimals, whatever the tick: the venue refuses
more (its maker leg at most 2, ``SHARE_STEP``)."""


class AmountError(ValueError):
    """A price, size or amount that the venue's rules refuse."""


class NoMatch(AmountError):
    """A FOK market order that the visible book cannot fill."""


class MarketAccuracyError(AmountError):
    """A market order's legs with more decimals than the venue accepts; the message is the
    venue's own refusal (HTTP 400 ``{"error": ...}``)."""

    def __init__(self, side: Side) -> None:
        super().__init__(f"invalid amounts, the market {side.value.lower()} orders maker amount supports a max "
                         "accuracy of 2 decimals, taker amount a max of 4 decimals")


class TickRule(NamedTuple):
    """The rounding row of venue.md 3.1 for one tick, with the tick in micro-units."""

    tick: int
    price_decimals: int
    amount_decimals: int

    @property
    def amount_step(self) -> int:
        """Units per last amount decimal: amounts are floored to a multiple of this."""
        return 10 ** (6 - self.amount_decimals)


TICK_RULES: dict[int, TickRule] = {
    100_000: TickRule(100_000, 1, 3),
    10_000: TickRule(10_000, 2, 4),
    1_000: TickRule(1_000, 3, 5),
    100: TickRule(100, 4, 6),
}
"""The supported ticks, keyed by tick in micro-units (0.005 and 0.0025 are not supported)."""


def tick_rule(tick: int) -> TickRule:
    """The rounding row of a supported tick given in micro-units; refuses any other tick."""
    rule = TICK_RULES.get(tick)
    if rule is None:
        raise AmountError(f"unsupported tick size: {tick} units (supported: 0.1, 0.01, 0.001, 0.0001)")
    return rule


def parse_tick(text: str | Decimal | float) -> int:
    """A tick size as the venue writes it (``"0.01"``, ``0.001``) -> micro-units, if supported."""
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        raise AmountError(f"not a tick size: {text!r}") from None
    units = value * UNIT
    if not value.is_finite() or units != units.to_integral_value() or int(units) not in TICK_RULES:
        raise AmountError(f"unsupported tick size: {text} (supported: 0.1, 0.01, 0.001, 0.0001)")
    return int(units)


class Amounts(NamedTuple):
    """The two signed legs, in units: what the maker gives and what it receives."""

    maker: int
    taker: int


# --------------------------------------------------------------------------------------------
# Limit orders (GTC, GTD): venue.md 3.2


def check_limit_price(price: int, tick: int) -> None:
    """Refuse a limit price off the tick grid or outside ``[tick, 1 - tick]``."""
    if price % tick:
        raise AmountError(f"price {price} units is not a multiple of the tick {tick}")
    if price < tick or price > UNIT - tick:
        raise AmountError(f"price {price} units outside [{tick}, {UNIT - tick}]")


def limit_shares(size: int, min_size: int = 0) -> int:
    """Shares actually signed: ``size`` floored to 2 decimals, refused when zero or too small."""
    shares = size - size % SHARE_STEP
    if shares <= 0:
        raise AmountError(f"size {size} units is below 0.01 share")
    if shares < min_size:
        raise AmountError(f"size {shares} units is below the market minimum {min_size}")
    return shares


def limit_amounts(side: Side, price: int, size: int, tick: int, min_size: int = 0) -> Amounts:
    """Signed legs of a limit order of ``size`` shares at ``price`` (all micro-units).

    BUY gives USDC = shares * price and receives shares; SELL the reverse. With an on-grid price
    the USDC leg is exact (never rounded), so the implied price equals ``price``.
    """
    rule = tick_rule(tick)
    check_limit_price(price, tick)
    shares = limit_shares(size, min_size)
    step = rule.amount_step
    usdc = price * shares // (UNIT * step) * step
    if side is Side.BUY:
        return Amounts(usdc, shares)
    return Amounts(shares, usdc)


# --------------------------------------------------------------------------------------------
# Market orders (FOK, FAK): venue.md 3.3


def market_amounts(side: Side, amount: int, price: int, tick: int) -> Amounts:
    """Signed legs of a market order. BUY: ``amount`` is USDC to spend; SELL: shares to sell.

    ``price`` is the worst acceptable price; it is floored to the tick, ``amount`` to 2
    decimals. BUY receives ``floor(amount / price)`` shares, SELL ``floor(amount * price)``
    USDC, both floored to the tick's amount decimals but never to more than 4 (what the venue
    accepts of a market order's taker leg). Invariant: the implied price is never worse than
    ``price`` by a tick, so the order crosses exactly the levels its limit does (BUY: ``price <=
    maker / taker < price + tick``; SELL: ``price - tick < taker / maker <= price``); an amount too
    small to keep it there is refused.
    """
    rule = tick_rule(tick)
    price -= price % tick
    if price < tick or price > UNIT - tick:
        raise AmountError(f"price {price} units outside [{tick}, {UNIT - tick}]")
    amt = amount - amount % SHARE_STEP
    if amt <= 0:
        raise AmountError(f"amount {amount} units is below 0.01")
    step = max(rule.amount_step, MARKET_TAKER_STEP)
    if side is Side.BUY:
        legs = Amounts(amt, amt * UNIT // (price * step) * step)
        if amt * UNIT >= (price + tick) * legs.taker:
            raise AmountError(f"amount {amt} units is too small to buy at {price} within a tick")
        return legs
    legs = Amounts(amt, amt * price // (UNIT * step) * step)
    if legs.taker * UNIT <= (price - tick) * amt:
        raise AmountError(f"amount {amt} units is too small to sell at {price} within a tick")
    return legs


def market_price(
    side: Side, levels: Sequence[tuple[int, int]], amount: int, order_type: OrderType = OrderType.FOK
) -> int:
    """The price a market order needs to fill ``amount`` against one side of a book.

    ``levels`` are ``(price, size)`` pairs in units, ordered as the venue sends them: the best
    level is the **last** one (asks for a BUY, bids for a SELL). BUY sums ``price * size`` (USDC)
    until it reaches ``amount``; SELL sums sizes. If the book is too thin a FOK raises
    :class:`NoMatch` and a FAK takes the worst (first-listed) level.
    """
    if not levels:
        raise NoMatch("no match")
    need = amount * UNIT if side is Side.BUY else amount
    total = 0
    for price, size in reversed(levels):
        total += price * size if side is Side.BUY else size
        if total >= need:
            return price
    if order_type is OrderType.FAK:
        return levels[0][0]
    raise NoMatch("no match")


def fee_per_usdc(
    price: int, fee_rate: Decimal | str, fee_exponent: Decimal | str | int, builder_fee_rate: Decimal | str = "0"
) -> Fraction:
    """Fees owed per USDC spent by a BUY at ``price``: ``r * (p * (1 - p)) ** e / p + b``, exact.

    (Platform fee = ``amount / p * r * (p * (1 - p)) ** e``; builder fee = ``amount * b``.) An
    integer exponent is exact; a fractional one goes through 50-digit decimals.
    """
    if price <= 0 or price >= UNIT:
        raise AmountError(f"price {price} units outside (0, {UNIT})")
    p = Fraction(price, UNIT)
    r = Fraction(Decimal(str(fee_rate)))
    b = Fraction(Decimal(str(builder_fee_rate)))
    e = Decimal(str(fee_exponent))
    base = p * (1 - p)
    if e == e.to_integral_value():
        weight = base ** int(e)
    else:
        with localcontext() as ctx:
            ctx.prec = 50
            weight = Fraction((Decimal(base.numerator) / Decimal(base.denominator)) ** e)
    return r * weight / p + b


def fee_adjusted_buy_amount(
    amount: int,
    balance: int,
    price: int,
    fee_rate: Decimal | str,
    fee_exponent: Decimal | str | int,
    builder_fee_rate: Decimal | str = "0",
) -> int:
    """USDC units to spend so that the amount plus its fees stays within ``balance``.

    Unchanged when ``amount`` plus fees fits; otherwise ``floor(balance / (1 + fee_per_usdc))``,
    the largest amount whose total cost does not exceed the balance.
    """
    per_usdc = fee_per_usdc(price, fee_rate, fee_exponent, builder_fee_rate)
    if amount * (1 + per_usdc) <= balance:
        return amount
    adjusted = Fraction(balance) / (1 + per_usdc)
    return adjusted.numerator // adjusted.denominator


# --------------------------------------------------------------------------------------------
# Exchange side: venue.md 3.5


class SignedTerms(NamedTuple):
    """What a received order's amounts mean: its price and its legs in units.

    For GTC/GTD ``price`` is the exact implied price. For FOK/FAK it is the worst acceptable
    price as an integer bound: BUY accepts asks ``<= price``, SELL accepts bids ``>= price``.
    """

    price: int
    shares: int
    usdc: int


def check_signed_amounts(
    side: Side, maker_amount: int, taker_amount: int, order_type: OrderType, tick: int
) -> SignedTerms:
    """The exchange's check of a signed order's amounts (venue.md 3.5); raises AmountError."""
    if maker_amount <= 0 or taker_amount <= 0:
        raise AmountError("order amounts must be positive")
    if side is Side.BUY:
        usdc, shares = maker_amount, taker_amount
    else:
        shares, usdc = maker_amount, taker_amount
    if order_type.is_market:
        if maker_amount % SHARE_STEP or taker_amount % MARKET_TAKER_STEP:
            raise MarketAccuracyError(side)
        if side is Side.BUY:
            return SignedTerms(usdc * UNIT // shares, shares, usdc)
        return SignedTerms(-(-usdc * UNIT // shares), shares, usdc)
    tick_rule(tick)
    if shares % SHARE_STEP:
        raise AmountError(f"shares amount {shares} is not a multiple of {SHARE_STEP}")
    price, rest = divmod(usdc * UNIT, shares)
    if rest:
        raise AmountError("implied price is not on the tick grid")
    if price % tick or price < tick or price > UNIT - tick:
        raise AmountError(f"implied price {price} units is not a valid price for tick {tick}")
    return SignedTerms(price, shares, usdc)


# --------------------------------------------------------------------------------------------
# Decimal edge (CLI, config, vectors)


def decimal_units(value: str | Decimal | int | float, what: str, decimals: int = 6) -> int:
    """A decimal input floored to ``decimals`` places, as micro-units; floats go through str()."""
    try:
        d = Decimal(str(value)) if not isinstance(value, Decimal) else value
    except InvalidOperation:
        raise AmountError(f"{what} is not a number: {value!r}") from None
    if not d.is_finite():
        raise AmountError(f"{what} is not a finite number: {value!r}")
    if d < 0:
        raise AmountError(f"{what} is negative: {value}")
    if d and d.adjusted() >= MAX_WHOLE_DIGITS:
        raise AmountError(f"{what} is out of range: {str(value)[:40]}")
    return int(d.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_FLOOR).scaleb(6))


def exact_price_units(value: str | Decimal | float, tick: int) -> int:
    """A limit price as units; refuses a price that is not an exact multiple of the tick."""
    try:
        d = Decimal(str(value)) if not isinstance(value, Decimal) else value
    except InvalidOperation:
        raise AmountError(f"price is not a number: {value!r}") from None
    scaled = d.scaleb(6) if d.is_finite() else d
    if not d.is_finite() or scaled != scaled.to_integral_value():
        raise AmountError(f"price {value} is not a multiple of the tick {Decimal(tick).scaleb(-6).normalize()}")
    price = int(scaled)
    check_limit_price(price, tick)
    return price


def levels_from_wire(levels: Iterable[dict]) -> list[tuple[int, int]]:
    """Book levels ``[{"price": "0.5", "size": "100"}, ...]`` as ``(price, size)`` units pairs."""
    return [(decimal_units(lv["price"], "price"), decimal_units(lv["size"], "size")) for lv in levels]
