"""The venue's trading fee (order protocol version 2): one rule for the matching engines, the
simulated venue, our books and the strategies' edge.

Invariant: a fill of ``size`` shares at price ``p`` carries a fee worth ``size * r * (p * (1 - p))
** e`` USDC, with ``r`` and ``e`` the market's (``GET /clob-markets/{condition_id}``, ``fd.r`` and
``fd.e``). The taker pays it in what it receives: shares on a BUY (that worth divided by ``p``),
USDC on a SELL. A maker pays nothing and, where the market grants a rebate, earns ``rebate`` times
the same worth of its own fill, in USDC. Every amount is computed exactly on integers and floored
to whole micro-units (never rounded up, so nothing is charged that the rule does not owe).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

import msgspec

from bot.venue.enums import Side
from bot.venue.units import UNIT

RATE_SCALE = 1_000_000
"""Fee rates and rebate shares count millionths: ``r = 0.25`` is 250_000, one basis point 100."""
BPS = 100
"""Millionths per basis point (a trade record's ``fee_rate_bps``)."""
MAX_EXPONENT = 8


class FeeError(ValueError):
    """A fee rate, exponent or rebate that is not a valid schedule."""


class FeeSchedule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A market's fee parameters: ``rate`` (r) and ``rebate`` in millionths, ``exponent`` (e).

    ``taker_only`` is the venue's ``fd.to`` and is informative: makers never pay here.
    """

    rate: int = 0
    exponent: int = 1
    rebate: int = 0
    taker_only: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= RATE_SCALE:
            raise FeeError(f"fee rate must be within 0..{RATE_SCALE} millionths, got {self.rate}")
        if not 1 <= self.exponent <= MAX_EXPONENT:
            raise FeeError(f"fee exponent must be within 1..{MAX_EXPONENT}, got {self.exponent}")
        if not 0 <= self.rebate <= RATE_SCALE:
            raise FeeError(f"maker rebate must be within 0..{RATE_SCALE} millionths, got {self.rebate}")

    @property
    def bps(self) -> int:
        """The rate in whole basis points, as trade records carry it (floored)."""
        return self.rate // BPS

    def with_bps(self, bps: int) -> FeeSchedule:
        """The same schedule at a trade record's rate (``fee_rate_bps``)."""
        return msgspec.structs.replace(self, rate=bps * BPS)

    @classmethod
    def from_bps(cls, rate_bps: int, exponent: int = 1, rebate_bps: int = 0) -> FeeSchedule:
        """A schedule from whole basis points, as configs write it."""
        return cls(rate=rate_bps * BPS, exponent=exponent, rebate=rebate_bps * BPS)

    def or_default(self, default: FeeSchedule | None) -> FeeSchedule:
        """This market's rule, or ``default`` (a simulated venue's) when it charges none."""
        return self if self.rate or default is None else default


NO_FEE = FeeSchedule()


def fee_value(price: int, size: int, schedule: FeeSchedule) -> Fraction:
    """The exact fee worth, in USDC micro-units, of ``size`` share units at ``price`` (units)."""
    e = schedule.exponent
    return Fraction(size * schedule.rate * (price * (UNIT - price)) ** e, RATE_SCALE * UNIT ** (2 * e))


def fee_worth(price: int, size: int, schedule: FeeSchedule) -> int:
    """The fee worth in USDC micro-units, floored: what a taker SELL pays."""
    if price <= 0 or price >= UNIT or not schedule.rate:
        return 0
    e = schedule.exponent
    return size * schedule.rate * (price * (UNIT - price)) ** e // (RATE_SCALE * UNIT ** (2 * e))


def taker_fee(side: Side, price: int, size: int, schedule: FeeSchedule) -> int:
    """The taker's fee in micro-units of what it receives: shares on a BUY, USDC on a SELL."""
    if side is Side.SELL:
        return fee_worth(price, size, schedule)
    if price <= 0 or price >= UNIT or not schedule.rate:
        return 0
    e = schedule.exponent
    return size * schedule.rate * (price * (UNIT - price)) ** e * UNIT // (
        RATE_SCALE * UNIT ** (2 * e) * price)


def maker_rebate(price: int, size: int, schedule: FeeSchedule) -> int:
    """USDC micro-units a maker earns on a fill of ``size`` at ``price``: the rebate share of
    the fill's fee worth, floored."""
    if price <= 0 or price >= UNIT or not schedule.rate or not schedule.rebate:
        return 0
    e = schedule.exponent
    return size * schedule.rate * schedule.rebate * (price * (UNIT - price)) ** e // (
        RATE_SCALE * RATE_SCALE * UNIT ** (2 * e))


def builder_fee(price: int, size: int, builder_rate: int) -> int:
    """A builder's fee on a fill (``GET /fees/builder-fees/{code}``): ``builder_rate`` millionths of
    the notional ``size * price``, in USDC micro-units, floored; on top of the market's fee."""
    return size * price * builder_rate // (UNIT * RATE_SCALE)


def booked_fee(side: Side, price: int, size: int, schedule: FeeSchedule, is_maker: bool) -> tuple[int, int]:
    """A fill as our books hold it: ``(shares received or given, fee in USDC units)``.

    A taker BUY receives ``size`` less the fee shares, booked at their worth at ``price``
    (floored); a taker SELL pays the fee in USDC; a maker pays nothing and books its rebate as a
    negative fee.
    """
    if is_maker:
        return size, -maker_rebate(price, size, schedule)
    fee = taker_fee(side, price, size, schedule)
    if side is Side.BUY:
        return size - fee, price * fee // UNIT
    return size, fee


def _millionths(value: Any, what: str) -> int:
    """A decimal number (text, int or float read through its shortest repr) as exact millionths."""
    try:
        d = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        raise FeeError(f"{what} is not a number: {value!r}") from None
    scaled = d * RATE_SCALE if d.is_finite() else d
    if not d.is_finite() or scaled != scaled.to_integral_value():
        raise FeeError(f"{what} is not a number of millionths: {value!r}")
    return int(scaled)


def schedule_from_wire(rate: Any, exponent: Any, rebate: Any = None, taker_only: Any = None) -> FeeSchedule:
    """``fd`` of ``GET /clob-markets`` (``r``, ``e``, ``to``, and the rebate share when served)
    as a schedule; raises :class:`FeeError` on values the rule cannot use."""
    if isinstance(exponent, bool) or not isinstance(exponent, int | None):
        raise FeeError(f"fee exponent is not an integer: {exponent!r}")
    return FeeSchedule(
        rate=_millionths(rate, "fee rate") if rate is not None else 0,
        exponent=1 if exponent is None else exponent,
        rebate=_millionths(rebate, "maker rebate") if rebate is not None else 0,
        taker_only=True if taker_only is None else bool(taker_only),
    )


def record_schedule(market: FeeSchedule | None, fee_rate_bps: int) -> FeeSchedule:
    """The schedule a trade record is booked with: the market's, at the record's own rate when
    it carries another one (a record without a rate, or with 0, reads as 0 and gets the market's;
    one that carries the market's rate in whole bps gets the market's exact rate)."""
    base = market if market is not None else NO_FEE
    if fee_rate_bps <= 0 or fee_rate_bps == base.bps:
        return base
    return base.with_bps(fee_rate_bps)
