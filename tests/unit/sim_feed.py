"""Market events, orders and a small shell for testing the simulated venue.

The shell plays the engine's side of the contract: orders go to the reconciler
(``on_places_sent`` / ``on_cancels_sent``) before the venue gets them, and every answer the
venue returns is fed to the reconciler exactly as the engine feeds the live shell's answers.
"""

from __future__ import annotations

import msgspec

from typing import Any

from bot.core.book import Books
from bot.core.events import Fill, FillReversal
from bot.core.markets import MarketInfo
from bot.execution.protocol import CancelsAnswered, OrderSeen, PlacesAnswered, TradeSeen
from bot.execution.orders import OwnOrder
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.router import CancelBatch, PlaceBatch
from bot.portfolio import Portfolio
from bot.sim.venue import SimVenue, SimVenueConfig
from bot.venue.enums import OrderType, Side
from bot.venue.models.ws import (
    BookEvent,
    LastTradePriceEvent,
    Level,
    LevelChange,
    PriceChangeEvent,
    TickSizeChangeEvent,
)
from bot.venue.units import UNIT, format_units

M = MarketInfo("0xmkt", ("Y", "N"), tick=10_000, min_size=1_000_000)
BUY, SELL = Side.BUY, Side.SELL
C = 10_000  # one cent, in price units
S = UNIT  # one share


def _levels(levels: dict[int, int]) -> list[Level]:
    return [Level(price=format_units(p), size=format_units(s)) for p, s in levels.items()]


def book(bids: dict[int, int], asks: dict[int, int], token: str = "Y", **extra: Any) -> BookEvent:
    """A snapshot; ``bids``/``asks`` map price units to size units."""
    return BookEvent(market=M.condition_id, asset_id=token, timestamp="1", bids=_levels(bids),
                     asks=_levels(asks), **extra)


def change(*levels: tuple[str, Side, int, int]) -> PriceChangeEvent:
    """Level changes ``(token, side, price, new total)``."""
    return PriceChangeEvent(market=M.condition_id, timestamp="1", price_changes=[
        LevelChange(asset_id=t, price=format_units(p), side=s.value, size=format_units(z))
        for t, s, p, z in levels])


def trade(taker: Side, price: int, size: int, token: str = "Y") -> LastTradePriceEvent:
    return LastTradePriceEvent(asset_id=token, market=M.condition_id, price=format_units(price),
                               side=taker.value, size=format_units(size), timestamp="1")


def tick_change(old: int, new: int, token: str = "Y") -> TickSizeChangeEvent:
    return TickSizeChangeEvent(asset_id=token, market=M.condition_id,
                               old_tick_size=format_units(old), new_tick_size=format_units(new),
                               timestamp="1")


def limit(oid: str, side: Side, price: int, size: int, token: str = "Y", *,
          post_only: bool = False, expiration: int = 0) -> OwnOrder:
    return OwnOrder(oid, token, side, price, size, post_only=post_only, expiration=expiration,
                    order_type=OrderType.GTD if expiration else OrderType.GTC)


def take(oid: str, side: Side, price: int, amount: int, order_type: OrderType = OrderType.FOK,
         token: str = "Y") -> OwnOrder:
    """A market order as the router builds it unsigned: ``size`` is the share estimate."""
    size = amount if side is SELL else amount * UNIT // price
    return OwnOrder(oid, token, side, price, size, order_type=order_type)


class Shell:
    """The venue driven the way an engine drives it, with its answers run through a Reconciler."""

    def __init__(self, config: SimVenueConfig | None = None, *, collateral: int = 1_000 * UNIT,
                 tokens: dict[str, int] | None = None, shared_books: bool = False,
                 **venue_args: Any) -> None:
        """``shared_books``: the feed books are the shell's, updated by it after the venue saw
        each event (as a paper-trading engine shares them)."""
        self.books = Books() if shared_books else None
        config = config or SimVenueConfig()
        # the shell funds the account itself: the config's starting funds are left out
        config = msgspec.structs.replace(config, collateral=0, holdings=0)
        self.venue = SimVenue([M], config, books=self.books, **venue_args)
        self.venue.fund(collateral)
        self.portfolio = Portfolio()
        for t, n in (tokens or {}).items():
            self.venue.grant(t, n)
            self.portfolio.seed(t, n)
        self.rec = Reconciler(ReconcilerConfig(owner=(config or SimVenueConfig()).owner))
        self.answers: list[Any] = []
        self.outputs: list[Any] = []
        self.now = 0.0

    def place(self, *orders: OwnOrder, at: float | None = None) -> None:
        now = self._at(at)
        self.outputs += self.rec.on_places_sent(orders, now)
        self.venue.place(PlaceBatch(tuple(orders)), now)

    def cancel(self, *ids: str, at: float | None = None) -> None:
        now = self._at(at)
        self.outputs += self.rec.on_cancels_sent(ids, now)
        self.venue.cancel(CancelBatch(tuple(ids)), now)

    def cancel_all(self, at: float | None = None) -> None:
        self.venue.cancel_all(self._at(at))

    def market(self, event: Any, at: float | None = None) -> None:
        """Deliver what is due before the event, then the event, as a backtest loop does."""
        now = self._at(at)
        self.until(now)
        self.venue.on_market(event, now)
        if self.books is not None:
            self.books.apply_event(event)
        self.until(now)

    def until(self, t: float) -> None:
        """Deliver every answer due by ``t``, each at its own time."""
        v = self.venue
        while (due := v.next_due()) is not None and due <= t:
            self.now = max(self.now, due)
            for r in v.due(due):
                self.deliver(r, due)
        self.now = max(self.now, t)

    def settle(self) -> None:
        """Run until nothing more is due."""
        while (due := self.venue.next_due()) is not None:
            self.until(due)

    def deliver(self, r: Any, now: float) -> None:
        self.answers.append(r)
        rec = self.rec
        if isinstance(r, PlacesAnswered):
            out = rec.on_acks(r.batch.order_ids, r.results, now)
        elif isinstance(r, CancelsAnswered):
            out = rec.on_cancel_result(r.result, now, requested=r.batch.order_ids)
        elif isinstance(r, TradeSeen):
            out = rec.on_trade_event(r.record, now)
        elif isinstance(r, OrderSeen):
            out = rec.on_order_event(r.record, now)
        else:  # pragma: no cover - the venue answers nothing else
            raise AssertionError(f"unexpected answer {r!r}")
        for x in out:
            if isinstance(x, (Fill, FillReversal)):
                self.portfolio.apply(x)
        self.outputs += out

    def _at(self, at: float | None) -> float:
        if at is not None:
            self.until(at)
            self.now = at
        return self.now

    # --- reads -------------------------------------------------------------------------
    def state(self, oid: str) -> str:
        return self.rec.orders.get(oid).state.value

    def filled(self, oid: str) -> int:
        return self.rec.orders.get(oid).filled

    def results(self) -> dict[str, Any]:
        """Order id -> its place result."""
        return {r.order_id: r for a in self.answers if isinstance(a, PlacesAnswered)
                for r in a.results}

    def trades(self) -> list[Any]:
        return [a.record for a in self.answers if isinstance(a, TradeSeen)]
