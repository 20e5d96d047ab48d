"""One token's own resting orders: price levels with FIFO queues.

Invariants: every level in ``bids``/``asks`` is non-empty and its ``total`` equals the sum of its
orders' ``remaining``; ``bid_prices`` holds exactly the bid level prices, ascending (best last);
``ask_keys`` holds the negated ask level prices, ascending (best ask = ``-ask_keys[-1]``). Within a
level, orders are in arrival order (time priority). The book itself never matches: matching
across a token and its complement is the engine's job.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque

from bot.sim.orders import Order
from bot.venue.enums import Side


class Level:
    """All resting orders at one price, oldest first. ``Level(price)`` starts empty; ``total`` is
    the sum of its orders' ``remaining``."""

    __slots__ = ("price", "orders", "total")

    def __init__(self, price: int) -> None:
        self.price = price
        self.orders: deque[Order] = deque()
        self.total = 0


class Book:
    """The bids and asks of one outcome token (own orders only)."""

    __slots__ = ("token", "market", "bids", "asks", "bid_prices", "ask_keys", "last_trade_price",
                 "last_trade_side", "comp", "state", "outcome")

    def __init__(self, token: str, market: str, outcome: str = "") -> None:
        self.token = token
        self.market = market
        self.outcome = outcome
        self.comp: Book | None = None  # the complement token's book (set by the engine)
        self.state = None  # the engine's market state (set by the engine)
        self.bids: dict[int, Level] = {}
        self.asks: dict[int, Level] = {}
        self.bid_prices: list[int] = []
        self.ask_keys: list[int] = []
        self.last_trade_price = 0
        self.last_trade_side = None  # the taker's side of the last trade in this token (None before one)

    # best prices -------------------------------------------------------------------------
    def best_bid(self) -> int:
        """Best own bid price, 0 when none."""
        bp = self.bid_prices
        return bp[-1] if bp else 0

    def best_ask(self) -> int:
        """Best own ask price, 0 when none."""
        ak = self.ask_keys
        return -ak[-1] if ak else 0

    # changes -----------------------------------------------------------------------------
    def add(self, order: Order) -> None:
        """Append ``order`` at the back of its price level (creating the level)."""
        price = order.price
        if order.side is Side.BUY:
            levels, keys, key = self.bids, self.bid_prices, price
        else:
            levels, keys, key = self.asks, self.ask_keys, -price
        level = levels.get(price)
        if level is None:
            level = levels[price] = Level(price)
            if not keys or key > keys[-1]:
                keys.append(key)
            else:
                insort(keys, key)
        level.orders.append(order)
        level.total += order.remaining

    def drop_level(self, side: Side, price: int) -> None:
        """Forget an emptied level."""
        if side is Side.BUY:
            levels, keys, key = self.bids, self.bid_prices, price
        else:
            levels, keys, key = self.asks, self.ask_keys, -price
        del levels[price]
        if keys[-1] == key:
            keys.pop()
        else:
            del keys[bisect_left(keys, key)]

    def remove(self, order: Order) -> None:
        """Take a resting ``order`` out of its level (cancel/expiry)."""
        levels = self.bids if order.side is Side.BUY else self.asks
        level = levels[order.price]
        level.orders.remove(order)
        level.total -= order.remaining
        if not level.orders:
            self.drop_level(order.side, order.price)

    # views -------------------------------------------------------------------------------
    def level_total(self, side: Side, price: int) -> int:
        level = (self.bids if side is Side.BUY else self.asks).get(price)
        return level.total if level is not None else 0

    def bid_levels(self) -> list[tuple[int, int]]:
        """(price, total) ascending (best last)."""
        bids = self.bids
        return [(p, bids[p].total) for p in self.bid_prices]

    def ask_levels(self) -> list[tuple[int, int]]:
        """(price, total) descending (best last)."""
        asks = self.asks
        return [(-k, asks[-k].total) for k in self.ask_keys]

    def orders_at(self, side: Side, price: int) -> list[Order]:
        level = (self.bids if side is Side.BUY else self.asks).get(price)
        return list(level.orders) if level is not None else []
