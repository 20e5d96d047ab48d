"""The protocol between the engine and whatever executes its actions: what comes back, one typed
shape per event. It sits with execution, below the engine, so the simulated venue (paper and
backtest) speaks it without importing the engine.

The live shell builds these from the venue's answers at the edge (HTTP responses, user-channel
frames, REST pages); the simulated venue of paper trading and backtests builds them directly.
Invariant: the engine sees only these Structs, with integer micro-units and one spelling of each
field (the records of ``bot.execution.records``), never wire dicts; trades alone may come as the
venue's decoded models, each turned into its record by the reconciler, so one it cannot read is
kept aside without stopping the rest.
"""

from __future__ import annotations

from typing import Any

import msgspec

from bot.execution.records import CancelResult, OrderRecord, OrderResult, TradeRecord
from bot.execution.router import CancelBatch, PlaceBatch


class PlacesAnswered(msgspec.Struct, frozen=True):
    """The answer to a ``SendPlaces``: ``results[i]`` answers ``batch.orders[i]``."""

    batch: PlaceBatch
    results: tuple[OrderResult, ...]


class PlacesFailed(msgspec.Struct, frozen=True):
    """A ``SendPlaces`` failed as a whole. ``outcome_unknown``: timeout, 5xx or reset, the
    orders may have reached the venue (they are looked up, never resent blindly); ``kind`` is a
    bounded label (``rate_limited``, ``transport``, ``server``, an error class name)."""

    batch: PlaceBatch
    kind: str
    outcome_unknown: bool = False
    detail: str = ""


class CancelsAnswered(msgspec.Struct, frozen=True):
    """The answer to a ``SendCancels`` (or to a venue-wide cancel-all, with an empty batch)."""

    batch: CancelBatch
    result: CancelResult


class CancelsFailed(msgspec.Struct, frozen=True):
    """A ``SendCancels`` failed as a whole: the orders are back where they were."""

    batch: CancelBatch
    kind: str
    detail: str = ""


class OrderSeen(msgspec.Struct, frozen=True):
    """An own order as the venue tells it unasked (user channel ``order`` event)."""

    record: OrderRecord


class TradeSeen(msgspec.Struct, frozen=True):
    """A trade of ours as the venue tells it unasked (user channel ``trade`` event), at each
    settlement status; ``record`` is a ``TradeRecord`` or the event as decoded (the reconciler
    reads it, and keeps one it cannot book)."""

    record: TradeRecord | Any


class TradesPage(msgspec.Struct, frozen=True):
    """One ``/data/trades`` page read from ``cursor``; ``next_cursor`` is where the next begins.
    ``records``: ``TradeRecord`` values or the items as decoded (see ``TradeSeen``)."""

    records: tuple[TradeRecord | Any, ...]
    cursor: str | None = None
    next_cursor: str | None = None


class OpenOrders(msgspec.Struct, frozen=True):
    """A complete listing of the account's open orders, asked for at ``as_of`` (engine clock),
    read in ``pages`` pages (more than one: not a snapshot, ``Reconciler.on_open_orders``)."""

    records: tuple[OrderRecord, ...]
    as_of: float
    pages: int = 1


class OrderLookup(msgspec.Struct, frozen=True):
    """One order looked up by id: its record, or ``None`` when the venue does not have it."""

    order_id: str
    record: OrderRecord | None
    as_of: float | None = None  # when the lookup was asked (engine clock)


class RequestFailed(msgspec.Struct, frozen=True):
    """A read or a heartbeat failed (counts towards the error-rate kill switch)."""

    kind: str


def all_live(batch: PlaceBatch) -> PlacesAnswered:
    """The answer of a venue that took every order of ``batch`` and rests it (tests, benches)."""
    return PlacesAnswered(batch, tuple(OrderResult(True, order_id=o.order_id, status="live") for o in batch.orders))


Result = (
    PlacesAnswered | PlacesFailed | CancelsAnswered | CancelsFailed | OrderSeen | TradeSeen | TradesPage
    | OpenOrders | OrderLookup | RequestFailed
)
