"""The venue's taker fee: one formula for the matching engines and for our own books.

Invariant: the fee on ``size`` shares at ``price`` is worth ``bps / 10**4 * min(p, 1 - p) * size``
USDC and is collected in what the taker receives: shares on a BUY (that worth divided by the
price), USDC on a SELL; floored to whole micro-units, exact integer arithmetic. Makers pay none.
"""

from __future__ import annotations

from bot.venue.enums import Side
from bot.venue.units import UNIT

BPS = 10_000


def taker_fee(side: Side, price: int, size: int, fee_rate_bps: int) -> int:
    """The taker's fee in micro-units of what it receives (shares on a BUY, USDC on a SELL)."""
    if fee_rate_bps <= 0 or price <= 0:
        return 0
    base = fee_rate_bps * min(price, UNIT - price) * size
    if side is Side.BUY:
        return base // (BPS * price)
    return base // (BPS * UNIT)
