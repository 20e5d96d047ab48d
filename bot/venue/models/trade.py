"""Trades: REST ``GET /data/trades`` / ``/builder/trades`` items and the user stream's ``trade``.

Invariant: one model for both sources; amounts stay decimal strings; ``match_time`` and
``last_update`` keep the wire text (ISO 8601 or epoch seconds) and are read through
:func:`~bot.venue.models.timestamps.epoch_ms`.
"""

from __future__ import annotations

from ..enums import TradeStatus
from .decoding import FastWire
from .timestamps import epoch_ms


class MakerOrder(FastWire, kw_only=True):
    """One resting order filled by a trade; ``matched_amount`` is in shares."""

    order_id: str
    owner: str | None = None
    maker_address: str | None = None
    matched_amount: str
    price: str
    fee_rate_bps: str | None = None
    asset_id: str
    outcome: str | None = None
    side: str | None = None


class Trade(FastWire, kw_only=True):
    """A trade as the account sees it (interface.md 2.4 plus ``trader_side``)."""

    id: str
    taker_order_id: str
    market: str
    asset_id: str
    side: str
    size: str
    fee_rate_bps: str | None = None
    price: str
    status: str
    match_time: str
    last_update: str | None = None
    outcome: str | None = None
    maker_address: str | None = None
    owner: str | None = None
    transaction_hash: str | None = None
    bucket_index: int | None = None
    maker_orders: list[MakerOrder]
    type: str | None = None
    trader_side: str | None = None

    @property
    def role(self) -> str | None:
        """``TAKER`` or ``MAKER``: ``trader_side``, else a ``type`` carrying one of those words."""
        if self.trader_side:
            return self.trader_side.upper()
        if self.type and self.type.upper() in ("TAKER", "MAKER"):
            return self.type.upper()
        return None

    @property
    def trade_status(self) -> TradeStatus:
        """The status with any ``TRADE_STATUS_`` prefix stripped."""
        return TradeStatus.parse(self.status)

    @property
    def match_time_ms(self) -> int | None:
        return epoch_ms(self.match_time)

    @property
    def last_update_ms(self) -> int | None:
        return epoch_ms(self.last_update)
