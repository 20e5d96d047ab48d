"""What the engine emits and shows: plain value snapshots the server turns into WS frames and
REST shapes.

Invariant: every price, size and amount is integer micro-units; times are unix seconds (float).
Snapshots are copies: holding one never aliases engine state.
"""

from __future__ import annotations

import msgspec

from bot.venue.enums import OrderStatus, OrderType, Side, TradeStatus


class OrderView(msgspec.Struct, frozen=True, gc=False):
    """An order as shown on REST (open orders) and in user ``order`` events (venue.md 9.3)."""

    id: str
    owner: str
    account: str  # maker_address
    market: str
    asset_id: str
    side: Side
    price: int
    original_size: int
    size_matched: int
    outcome: str
    order_type: OrderType
    status: OrderStatus
    expiration: int
    created_at: float
    associate_trades: tuple[str, ...] = ()
    post_only: bool = False


class MakerOrderView(msgspec.Struct, frozen=True, gc=False):
    """One maker order's part of a trade; ``price`` and ``side`` are in the maker's own token."""

    order_id: str
    owner: str
    account: str
    matched_amount: int
    price: int
    fee_rate_bps: int
    asset_id: str
    outcome: str
    side: Side


class TradeView(msgspec.Struct, frozen=True, gc=False):
    """A trade from the taker's view (interface.md 2.4, venue.md 9.3).

    ``fee`` is what the taker paid: token units on a BUY, collateral units on a SELL.
    """

    id: str
    taker_order_id: str
    market: str
    asset_id: str
    side: Side
    size: int
    price: int
    fee_rate_bps: int
    fee: int
    status: TradeStatus
    match_time: float
    last_update: float
    outcome: str
    owner: str
    account: str  # the taker's maker_address
    bucket_index: int
    transaction_hash: str
    maker_orders: tuple[MakerOrderView, ...]


class BookSnapshot(msgspec.Struct, frozen=True, gc=False):
    """A token's book: bids ascending, asks descending, best level last (venue.md 7.2)."""

    token: str
    market: str
    bids: list[tuple[int, int]]
    asks: list[tuple[int, int]]
    tick: int
    min_size: int
    neg_risk: bool
    last_trade_price: int


class BookLevelChanged(msgspec.Struct, frozen=True, gc=False):
    """``size`` is the new total at ``price`` on ``side`` (BUY = bid level); 0 removes it."""

    token: str
    market: str
    side: Side
    price: int
    size: int


class TradePrint(msgspec.Struct, frozen=True, gc=False):
    """A trade on ``token`` at ``price`` (``side`` is the taker's side in this token)."""

    token: str
    market: str
    price: int
    size: int
    side: Side
    fee_rate_bps: int
    time: float


class OrderEvent(msgspec.Struct, frozen=True, gc=False):
    """``type`` is PLACEMENT, UPDATE or CANCELLATION."""

    order: OrderView
    type: str
    time: float


class TradeEvent(msgspec.Struct, frozen=True, gc=False):
    """A trade at a settlement status; the same trade id comes again on every change."""

    trade: TradeView
    time: float


class TickSizeChanged(msgspec.Struct, frozen=True, gc=False):
    token: str
    market: str
    old: int
    new: int
    time: float


Event = BookLevelChanged | TradePrint | OrderEvent | TradeEvent | TickSizeChanged
