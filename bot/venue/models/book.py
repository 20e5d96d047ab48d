"""Order book snapshots (REST ``GET /book``, ``POST /books``; the stream's ``book`` shares the fields).

Invariant: prices and sizes stay the wire's decimal strings; level order is kept exactly as received
(the venue lists the best level **last**; consumers take max/min, never ``[0]``).
"""

from __future__ import annotations

from .decoding import FastWire


class Level(FastWire, kw_only=True):
    """One price level: ``size`` is the total resting at ``price``."""

    price: str
    size: str


class OrderBook(FastWire, kw_only=True):
    """A full book for one token; field order is the venue's hash-recipe order (venue.md 7.2)."""

    market: str
    asset_id: str
    timestamp: str
    hash: str | None = None
    bids: list[Level]
    asks: list[Level]
    min_order_size: str | None = None
    tick_size: str | None = None
    neg_risk: bool | None = None
    last_trade_price: str | None = None


class BookHistory(FastWire, kw_only=True):
    """The old order-book-history endpoint: ``{count, data: [book]}`` (format illustration only)."""

    count: int | None = None
    data: list[OrderBook]
