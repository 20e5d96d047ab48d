"""Execution events the core passes between reconciler, portfolio, risk and strategy.

Invariant: every amount is integer micro-units; a fill is identified by ``(trade_id, order_id)``
and is delivered once, at first sight; a later ``FAILED`` settlement arrives as a ``FillReversal``
of that same key.
"""

from __future__ import annotations

import msgspec

from bot.venue.enums import Side, TradeStatus
from bot.venue.units import UNIT


class Fill(msgspec.Struct, frozen=True):
    """Our order ``order_id`` traded ``size`` shares of ``token_id`` at ``price`` in trade ``trade_id``."""

    trade_id: str
    order_id: str
    token_id: str
    side: Side  # our side
    price: int
    size: int  # shares that changed hands for us (a BUY taker receives its match less the fee shares)
    fee: int = 0  # USDC units paid, or the worth at ``price`` of the fee shares kept (negative: rebate)
    is_maker: bool = True
    status: TradeStatus = TradeStatus.MATCHED
    ts: float = 0.0  # venue time, unix seconds
    # what the shares cost or fetched, in ``price * size`` units (micro-USDC times UNIT), when it
    # is not ``price * size``: a fill priced off the 6-decimal grid, or of a size off the lot grid,
    # booked at the USDC the venue settled (``bot.venue.units.traded_price``, ``fill_cash``; ``price``
    # is then that price rounded). None: price * size
    notional_e12: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.trade_id, self.order_id)

    @property
    def notional(self) -> int:
        """The USDC units the shares cost or fetched (floored where not whole)."""
        return (self.price * self.size if self.notional_e12 is None else self.notional_e12) // UNIT


class FillReversal(msgspec.Struct, frozen=True):
    """A fill whose trade ended FAILED: its effect on balances is undone."""

    fill: Fill


class SettlementUpdate(msgspec.Struct, frozen=True):
    """A known trade moved to a new settlement status (MINED, CONFIRMED, RETRYING...)."""

    trade_id: str
    status: TradeStatus
