"""Exact conversion between the venue's decimal strings and integer micro-units.

Invariant: every price, size and amount inside the framework is an ``int`` counting millionths
(1 share = 1 USDC = 1_000_000 units). Strings are parsed exactly (never through ``float``); a value
with more than six significant decimals is refused, never rounded silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation

UNIT = 1_000_000
DECIMALS = 6
MICRO = Decimal(1).scaleb(-DECIMALS)  # one micro-unit as a Decimal (0.000001): what amounts are quantized to
LOT = 10_000  # order sizes travel with two decimals: every size an order names is a multiple of 0.01 share
MAX_BATCH = 15  # POST /orders carries 1 to 15 orders (venue.md): the most one request sends at once

_PAD = ("000000", "00000", "0000", "000", "00", "0", "")


class UnitsError(ValueError):
    """A decimal string that is not an exact number of micro-units."""


MAX_WHOLE_DIGITS = 18  # no price, size or amount reaches 10**18 whole units: longer is malformed


def parse_units(text: str) -> int:
    """Parse a decimal string (``"0.52"``, ``"100"``, ``"-3.5"``) into micro-units, exactly;
    anything else, or a magnitude of 10**18 or more, is a ``UnitsError``."""
    whole, dot, frac = text.partition(".")
    if len(whole) <= MAX_WHOLE_DIGITS:
        if dot and 0 < len(frac) <= DECIMALS and frac.isdigit() and (whole.isdigit() or not whole):
            return int(whole or "0") * UNIT + int(frac + _PAD[len(frac)])
        if not dot and whole.isdigit():
            return int(whole) * UNIT
    return _parse_slow(text)


def _parse_slow(text: str) -> int:
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, AttributeError):
        raise UnitsError(f"not a decimal number: {text!r}") from None
    if not value.is_finite():
        raise UnitsError(f"not a finite number: {text!r}")
    if value and value.adjusted() >= MAX_WHOLE_DIGITS:
        raise UnitsError(f"out of range: {text[:40]!r}")
    # from the digits themselves: arithmetic in a decimal context would round past its precision
    sign, digits, exp = value.as_tuple()
    if exp < -DECIMALS:
        cut = -DECIMALS - exp  # the digits finer than a micro-unit: all zero, or refused
        if any(digits[-cut:]):
            raise UnitsError(f"more than {DECIMALS} decimals: {text[:40]!r}")
        digits, exp = digits[:-cut], -DECIMALS
    units = int("".join(map(str, digits)) or "0") * 10 ** (exp + DECIMALS)
    return -units if sign else units


_EXACT = Context(prec=100)  # a product of two bounded decimals, never rounded
MAX_PRICE_TEXT = 40  # a float's shortest spelling has at most 17 significant digits


def traded_price(text: str, size: int) -> tuple[int, int | None]:
    """A traded price as ``(price units, cash units or None)`` for ``size`` share units traded.

    On the 6-decimal grid the price is exact and ``None`` says so: the cash is ``price * size``
    (in ``UNIT * UNIT`` units, exactly). Finer, the venue priced the fill as the ratio of the two
    amounts it settled, USDC over shares, each a whole number of micro-units, printed as a binary
    float (``"0.7210000476613491"`` is 8.199139 USDC for 11.371898 shares): the cash is then
    ``price * size`` rounded half-even to a micro-unit, which gives those settled micro-units back
    exactly for any amount below 10**9 USDC (the float's error is far below half a unit), and the
    price is rounded half-even to 6 decimals (what is shown and checked against limits; the cash
    is what is booked). A negative, non-finite or malformed price is a ``UnitsError``."""
    try:
        return parse_units(text), None
    except UnitsError:
        if len(text) > MAX_PRICE_TEXT:
            raise UnitsError(f"not a price: {text[:MAX_PRICE_TEXT]!r}...") from None
        try:
            value = Decimal(text.strip())
        except InvalidOperation:
            raise UnitsError(f"not a decimal number: {text!r}") from None
        if not value.is_finite() or value < 0 or value.adjusted() >= MAX_WHOLE_DIGITS:
            raise UnitsError(f"not a price: {text!r}") from None
    price = int(_EXACT.scaleb(value, DECIMALS).to_integral_value(ROUND_HALF_EVEN))
    cash = int(_EXACT.multiply(value, size).to_integral_value(ROUND_HALF_EVEN))
    return price, cash


def format_units(units: int) -> str:
    """Format micro-units as the shortest exact decimal string (``520000`` -> ``"0.52"``)."""
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), UNIT)
    if not frac:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:06d}".rstrip("0")


def units_to_decimal(units: int) -> Decimal:
    """Micro-units as an exact ``Decimal`` (for edges that need decimal arithmetic)."""
    return Decimal(units).scaleb(-DECIMALS)


def decimal_to_units(value: Decimal) -> int:
    """An exact ``Decimal`` as micro-units; refuses values finer than one unit."""
    return _parse_slow(str(value))


def notional(price: int, size: int) -> int:
    """USDC micro-units for ``size`` shares at ``price``, floored (exact on the tick grid)."""
    return price * size // UNIT


def fill_cash(price: int, size: int, *, buyer: bool) -> int:
    """The USDC units one maker fill of ``size`` shares at ``price`` moves: the buyer pays the
    price rounded down, the seller is paid it rounded up. Exact for whole lots; a 6-decimal fill
    rounds its last unit in the maker's favour, and the taker gives or gets the same amount. The
    local exchange settles so, and the bot books its fills so (one rule, both sides)."""
    if buyer:
        return price * size // UNIT
    return -(-price * size // UNIT)


def makers_cash(token: str, ends: Iterable[tuple[str, int, int]]) -> int:
    """What the taker of a trade on ``token`` pays (BUY) or gets (SELL) before fees: the sum over
    its makers of ``(maker's token, its cash, its shares)``, each maker's cash, or the other end of
    a minted or merged pair (shares less cash) for a maker on the complement."""
    return sum(cash if maker_token == token else shares - cash for maker_token, cash, shares in ends)


def lot_floor(size: int) -> int:
    """``size`` share units floored to a whole lot: the most of a 6-decimal holding an order can
    sell (venue.md 3.2, 3.5: a SELL's shares leg is a multiple of ``LOT``); the rest, under one
    lot, is dust no order can close."""
    return size - size % LOT
