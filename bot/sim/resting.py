"""Our resting orders in a book we do not own (paper and backtest venues), and where each stands
in its price level's queue.

The feed shows only each level's total (L2) and never our orders. Each own order keeps ``ahead``,
the units of others queued in front of it, moved by these rules (see
``research/simulation-and-backtesting.md``):

- an order joins the back of its level: ``ahead`` starts at the level's visible total;
- a trade printed at our price consumes the queue from the front, in order, across our orders and
  the others' units between them; whatever reaches one of ours fills it;
- a level decrease is first matched with trades printed there that the feed has not yet shown as
  a decrease; only the rest (cancels) goes to the queue model. A decrease seen *before* its trade
  is handed to the model at once, and the trade then undoes what the model moved: so a trade is
  counted once whichever of the print and the decrease comes first;
- a level growth joins behind us: nobody moves;
- a trade through our price (a seller at a lower price than our bid) or new opposite volume
  crossing it fills our orders in order, without a queue (we are better than anyone there); a
  touch (the opposite side arriving at our price, a trade at our price with others ahead) is not
  a fill.

Invariants: within a level, orders are in arrival order and ``ahead`` never decreases along
them; ``ahead >= 0``; fills are to the unit (a 6-decimal print fills 6 decimals) and their sum never exceeds the volume that was
printed or that crossed. Unpaired trades and decreases are forgotten after ``window`` seconds.
"""

from __future__ import annotations

import msgspec

from bot.sim.orders import Order
from bot.sim.queue import QueueModel
from bot.venue.enums import Side
from bot.venue.units import UNIT

_NO_BID = -1
_NO_ASK = UNIT + 1


class QueuedOrder(Order, gc=False):
    """An own order resting in an external book: ``ahead`` others' units in front of it;
    ``credit`` what the queue model moved it by on decreases not yet paired with a trade."""

    ahead: int = 0
    credit: int = 0


class OwnLevel(msgspec.Struct, gc=False, eq=False):
    """Our orders at one price on one side, oldest first, and the trade/decrease pairing state."""

    price: int
    orders: list[QueuedOrder] = msgspec.field(default_factory=list)
    pending_trade: int = 0  # printed here, not yet seen as a decrease of the level
    pending_shrink: int = 0  # decreases not yet paired with a trade
    pending_at: float = 0.0


Fills = list[tuple[QueuedOrder, int]]


def _expire(level: OwnLevel, now: float, window: float) -> None:
    if (level.pending_trade or level.pending_shrink) and now - level.pending_at > window:
        level.pending_trade = level.pending_shrink = 0
        for o in level.orders:
            o.credit = 0


def on_trade(level: OwnLevel, printed: int, usable: int, total: int, now: float,
             window: float) -> Fills:
    """A trade of ``printed`` units at our price, ``usable`` of which can still reach our orders
    (less when part of it already filled our better-priced orders). ``total`` is the level's
    visible total now. Returns the fills, oldest order first; the caller books them."""
    _expire(level, now, window)
    seen = printed if printed < level.pending_shrink else level.pending_shrink
    if seen:  # the feed showed this trade as a decrease already: undo what the model did with it
        level.pending_shrink -= seen
        for o in level.orders:
            back = o.credit if o.credit < seen else seen
            o.ahead += back
            o.credit -= back
    level.pending_trade += printed - seen
    level.pending_at = now
    fills = consume(level.orders, usable)
    for o in level.orders:
        if o.ahead > total:
            o.ahead = total
    return fills


def consume(orders: list[QueuedOrder], qty: int) -> Fills:
    """``qty`` units traded from the front of a queue holding ``orders``: others' units in front
    of each are consumed first, then the order itself, to the unit."""
    fills: Fills = []
    q = qty
    ext = 0  # others' units consumed so far
    for o in orders:
        gap = o.ahead - ext
        if gap > 0 and q > 0:
            t = q if q < gap else gap
            q -= t
            ext += t
        a = o.ahead - ext
        o.ahead = a if a > 0 else 0
        if a <= 0 and q > 0:
            f = q
            if f > o.remaining:
                f = o.remaining
            if f:
                fills.append((o, f))
                q -= f
    return fills


def sweep(orders: list[QueuedOrder], qty: int) -> Fills:
    """``qty`` units reach ``orders`` with nobody in front (a trade through the price or volume
    crossing it): oldest first, to the unit."""
    fills: Fills = []
    q = qty
    for o in orders:
        if q <= 0:
            break
        f = q
        if f > o.remaining:
            f = o.remaining
        if f:
            fills.append((o, f))
            q -= f
    return fills


def on_depth(level: OwnLevel, old: int, new: int, model: QueueModel, now: float,
             window: float) -> None:
    """The level's visible total went from ``old`` to ``new`` (a feed update or snapshot)."""
    if new >= old:  # growth joins behind us
        return
    _expire(level, now, window)
    d = old - new
    explained = d if d < level.pending_trade else level.pending_trade
    level.pending_trade -= explained
    rest = d - explained
    orders = level.orders
    if rest:
        level.pending_shrink += rest
        level.pending_at = now
        base = old - explained
        prev = 0
        for o in orders:
            a = model.on_depth(o.ahead, base, new)
            if a < prev:
                a = prev
            if a < o.ahead:
                o.credit += o.ahead - a
                o.ahead = a
            prev = o.ahead
    else:
        for o in orders:
            if o.ahead > new:
                o.ahead = new


class OwnBook:
    """Our resting orders on one token: levels by price per side, and our best prices."""

    __slots__ = ("bids", "asks", "top_bid", "top_ask")

    def __init__(self) -> None:
        self.bids: dict[int, OwnLevel] = {}
        self.asks: dict[int, OwnLevel] = {}
        self.top_bid = _NO_BID  # our highest bid price, -1 with none
        self.top_ask = _NO_ASK  # our lowest ask price, UNIT + 1 with none

    def __bool__(self) -> bool:
        return bool(self.bids or self.asks)

    def add(self, order: QueuedOrder, visible_total: int) -> None:
        """``order`` joins the back of its level, behind ``visible_total`` units of others."""
        price = order.price
        if order.side is Side.BUY:
            levels = self.bids
            if price > self.top_bid:
                self.top_bid = price
        else:
            levels = self.asks
            if price < self.top_ask:
                self.top_ask = price
        level = levels.get(price)
        if level is None:
            level = levels[price] = OwnLevel(price)
        order.ahead = visible_total if visible_total > 0 else 0
        level.orders.append(order)

    def remove(self, order: QueuedOrder) -> None:
        """Take ``order`` out of its level (filled, canceled or expired)."""
        buy = order.side is Side.BUY
        levels = self.bids if buy else self.asks
        level = levels[order.price]
        level.orders.remove(order)
        if not level.orders:
            del levels[order.price]
            if buy:
                if order.price == self.top_bid:
                    self.top_bid = max(levels) if levels else _NO_BID
            elif order.price == self.top_ask:
                self.top_ask = min(levels) if levels else _NO_ASK

    def level(self, is_bid: bool, price: int) -> OwnLevel | None:
        return (self.bids if is_bid else self.asks).get(price)

    def crossed_by(self, is_bid: bool, price: int) -> list[OwnLevel]:
        """Our levels on the other side that a feed level at ``price`` on ``is_bid``'s side
        strictly crosses, best first: our asks below a bid, our bids above an ask."""
        if is_bid:
            return [self.asks[p] for p in sorted(self.asks) if p < price]
        return [self.bids[p] for p in sorted(self.bids, reverse=True) if p > price]

    def through(self, taker_side: Side, price: int) -> tuple[list[OwnLevel], OwnLevel | None]:
        """For a trade at ``price`` whose taker is on ``taker_side``: our levels it went through
        (bids above a sell's price, asks below a buy's, best first) and our level at ``price`` on
        the side it hit, if any."""
        if taker_side is Side.SELL:  # the taker sold: our bids at or above the price
            better = [self.bids[p] for p in sorted(self.bids, reverse=True) if p > price]
            return better, self.bids.get(price)
        better = [self.asks[p] for p in sorted(self.asks) if p < price]
        return better, self.asks.get(price)
