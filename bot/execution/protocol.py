"""The protocol between the engine and whatever executes its actions, in one file: every action
the engine emits (what it asks for) and every result it takes back (what happened), one typed
shape each. It sits with execution, below the engine, so every executor (the live venue's, and
the simulated venue of paper trading and backtests) speaks it without importing the engine.

The live executor turns actions into requests and builds results from the venue's answers at
the edge (HTTP responses, user-channel frames, REST pages); the simulated venue builds results
directly. Invariant: the engine sees only these Structs, with integer micro-units and one
spelling of each field (the records of ``bot.execution.records``), never wire dicts; trades
alone may come as the venue's decoded models, each turned into its record by the reconciler, so
one it cannot read is kept aside without stopping the rest.
"""

from __future__ import annotations

from typing import Any

import msgspec

from bot.execution.records import CancelResult, OrderRecord, OrderResult, TradeRecord
from bot.execution.router import CancelBatch, PlaceBatch


# --- actions: what the engine asks of its executor ---------------------------------------


class SendPlaces(msgspec.Struct, frozen=True):
    """POST these orders (already signed and journaled); answer with ``PlacesAnswered`` or
    ``PlacesFailed``. ``tick_at``: perf-counter time of the book update that caused it."""

    batch: PlaceBatch
    tick_at: float | None = None


class SendCancels(msgspec.Struct, frozen=True):
    """DELETE these order ids; answer with ``CancelsAnswered`` or ``CancelsFailed``."""

    batch: CancelBatch


class VenueCancelAll(msgspec.Struct, frozen=True):
    """DELETE /cancel-all (halt or stop): catches anything the order store does not know."""

    reason: str = ""


class SyncOrders(msgspec.Struct, frozen=True):
    """GET /data/orders (complete listing), answered with ``OpenOrders`` stamped with the time
    it was asked for."""


class CheckPositions(msgspec.Struct, frozen=True):
    """GET /positions after ``delay_s`` (retried until read), answered with the holdings for
    ``Engine.reconcile_positions``."""

    delay_s: float = 0.0


class LookupOrder(msgspec.Struct, frozen=True):
    """``GET /data/order/{order_id}``, answered with ``OrderLookup``."""

    order_id: str


class ResendOrder(msgspec.Struct, frozen=True):
    """POST the same signed order again (venue showed it absent after an unknown outcome)."""

    order_id: str
    signed: Any = None


class FetchTrades(msgspec.Struct, frozen=True):
    """Read ``/data/trades`` from the trades cursor (an order closed without all its fills seen),
    answered with ``TradesPage`` values."""

    order_ids: tuple[str, ...] = ()


class TradeUnbooked(msgspec.Struct, frozen=True):
    """A trade record we cannot book yet (told once per trade id): ``tokens`` are those whose fill
    of ours it may hold, which stop quoting until it is booked; ``reason`` is one line."""

    trade_id: str
    reason: str
    tokens: tuple[str, ...] = ()


class TradeBooked(msgspec.Struct, frozen=True):
    """A trade told as ``TradeUnbooked`` before is booked now (or proved none of ours)."""

    trade_id: str
    tokens: tuple[str, ...] = ()


Action = (SendPlaces | SendCancels | VenueCancelAll | SyncOrders | LookupOrder | ResendOrder | FetchTrades
          | CheckPositions | TradeUnbooked | TradeBooked)


# --- results: what comes back ----------------------------------------------------------


class PlacesAnswered(msgspec.Struct, frozen=True):
    """The answer to a ``SendPlaces``: ``results[i]`` answers ``batch.orders[i]``."""

    batch: PlaceBatch
    results: tuple[OrderResult, ...]


WITHDRAWN = "withdrawn"
"""The ``PlacesFailed`` kind of a place held back (behind a cancel it would cross) whose every order
was cancelled before it went out: nothing was sent, and it is no error."""


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
