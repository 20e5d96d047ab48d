"""A binary market seen from its first outcome (YES): both books as one two-sided market, the
holdings of both tokens as one exposure, and YES-side quotes put on whichever token can carry them.

The venue has no short sales. Offering YES at ``p`` is selling held YES at ``p`` or, with none held,
buying NO at ``1 - p``; bidding for YES at ``p`` is buying YES at ``p`` or selling held NO at
``1 - p``. A YES+NO pair is worth exactly 1, so either leg is the same liquidity: the strategies
here decide in YES terms and ``orders`` picks the leg.

Invariants: prices are on the grid within ``[tick, 1 - tick]`` and a NO leg's price is exactly
``UNIT - p``; a post-only order never crosses the book of the token it rests on; sizes are whole
lots of at least the market minimum; a sell never exceeds what is held.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from bot.core.intents import Quote, QuoteTarget
from bot.core.markets import MarketInfo
from bot.core.vocabulary import LOT, UNIT, Side
from strategies.market_maker import BookView, ceil_to_grid, floor_to_grid

_BUY, _SELL = Side.BUY, Side.SELL


class Level(msgspec.Struct, frozen=True, array_like=True):
    """One wanted quote: ``price`` in YES terms, ``size`` in shares (micro-units)."""

    price: int
    size: int


class YesQuotes(msgspec.Struct, frozen=True):
    """The quotes wanted on a market, in YES terms, best first on each side."""

    bids: tuple[Level, ...] = ()
    asks: tuple[Level, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.bids or self.asks)


def uncrossed(quotes: YesQuotes, resting: YesQuotes) -> YesQuotes:
    """``quotes`` without the levels that would lock or cross one of our own on the other side (a
    bid at or above one of our asks): of two such, the one already wanted before (``resting``:
    the last quotes sent, possibly still on their way) stays and the other is left out; both go
    when neither or both were. A post-only order there is refused by the venue, and any other
    trades with ourselves, so no quote is ever worth sending there."""
    bids, asks = quotes.bids, quotes.asks
    if not bids or not asks or max(b.price for b in bids) < min(a.price for a in asks):
        return quotes
    dropped_bids: set[int] = set()
    dropped_asks: set[int] = set()
    for i, b in enumerate(bids):
        for j, a in enumerate(asks):
            if b.price < a.price:
                continue
            b_old, a_old = b in resting.bids, a in resting.asks
            if not b_old or a_old:
                dropped_bids.add(i)
            if not a_old or b_old:
                dropped_asks.add(j)
    return YesQuotes(tuple(b for i, b in enumerate(bids) if i not in dropped_bids),
                     tuple(a for j, a in enumerate(asks) if j not in dropped_asks))


class Holdings(msgspec.Struct, frozen=True):
    """Shares held of each outcome; ``exposure`` (YES - NO) is what a YES holder is long."""

    yes: int = 0
    no: int = 0

    @property
    def exposure(self) -> int:
        return self.yes - self.no

    @classmethod
    def of(cls, portfolio: Any, market: MarketInfo) -> "Holdings":
        yes, no = market.tokens
        return cls(max(0, portfolio.size(yes)), max(0, portfolio.size(no)))


class Pair(msgspec.Struct, frozen=True):
    """Both books of a market, as values, and the market they belong to."""

    market: MarketInfo
    yes: BookView
    no: BookView

    @classmethod
    def of(cls, books: Any, market: MarketInfo) -> "Pair":
        yes, no = market.tokens
        return cls(market,
                   BookView.of(books.get(yes), token_id=yes, tick=market.tick, min_size=market.min_size),
                   BookView.of(books.get(no), token_id=no, tick=market.tick, min_size=market.min_size))

    @property
    def tick(self) -> int:
        """The coarser live tick of the two books (they move together on the venue)."""
        return max(self.yes.tick, self.no.tick)

    @property
    def min_size(self) -> int:
        return max(self.yes.min_size, self.no.min_size, LOT)

    def touch(self, gross: bool = False) -> BookView:
        """The market's best bid and ask in YES terms, from both books: a NO ask at ``q`` is a YES
        bid at ``1 - q``, a NO bid a YES ask. Stale when neither book gives a side. With ``gross``,
        ``gross_bid`` and ``gross_ask`` are the same with our own orders in, where they differ
        (``None``: the same); without it they are left ``None`` (not read on every quote)."""
        bid = ask = None
        bid_size = ask_size = 0
        candidates = []
        if not self.yes.stale:
            candidates.append((self.yes.best_bid, self.yes.bid_size, self.yes.best_ask, self.yes.ask_size))
        if not self.no.stale:
            no = self.no
            candidates.append((UNIT - no.best_ask if no.best_ask is not None else None, no.ask_size,
                               UNIT - no.best_bid if no.best_bid is not None else None, no.bid_size))
        for b, bs, a, az in candidates:
            if b is not None and (bid is None or b > bid):
                bid, bid_size = b, bs
            elif b is not None and b == bid:
                bid_size = max(bid_size, bs)  # the venue's books mirror each other: one queue
            if a is not None and (ask is None or a < ask):
                ask, ask_size = a, az
            elif a is not None and a == ask:
                ask_size = max(ask_size, az)
        stale = bid is None or ask is None or bid >= ask
        if not gross:
            return BookView(self.market.tokens[0], bid, ask, bid_size, ask_size, self.tick, self.min_size, stale)
        gross_bid, gross_ask = bid, ask  # with our own orders in (each book's ``gross_*``)
        for book, yes in ((self.yes, True), (self.no, False)):
            if book.stale:
                continue
            b = book.gross_bid if yes else (UNIT - book.gross_ask if book.gross_ask is not None else None)
            a = book.gross_ask if yes else (UNIT - book.gross_bid if book.gross_bid is not None else None)
            if b is not None and (gross_bid is None or b > gross_bid):
                gross_bid = b
            if a is not None and (gross_ask is None or a < gross_ask):
                gross_ask = a
        return BookView(self.market.tokens[0], bid, ask, bid_size, ask_size, self.tick, self.min_size, stale,
                        gross_bid if gross_bid != bid else None, gross_ask if gross_ask != ask else None)


def distance_units(distance: float) -> int | None:
    """A model's distance from the mid (price units, a float) in micro-units, rounded away from the
    mid (up); ``None`` when it is not a finite number. Bounded to one whole price unit each way."""
    if not math.isfinite(distance):
        return None
    return math.ceil(max(-1.0, min(1.0, distance)) * UNIT)


def on_grid(touch: BookView, bid: int | None, ask: int | None) -> tuple[int | None, int | None]:
    """Candidate prices (micro-units, anywhere) as quotes: the bid floored and the ask ceiled to
    the grid, within ``[tick, 1 - tick]``, the bid under the best ask and the ask over the best
    bid (so neither takes), and bid < ask (else neither)."""
    tick = touch.tick
    if bid is not None:
        bid = floor_to_grid(bid, tick)
        if touch.best_ask is not None:
            bid = min(bid, touch.best_ask - tick)
        bid = bid if tick <= bid <= UNIT - tick else None
    if ask is not None:
        ask = ceil_to_grid(ask, tick)
        if touch.best_bid is not None:
            ask = max(ask, touch.best_bid + tick)
        ask = ask if tick <= ask <= UNIT - tick else None
    if bid is not None and ask is not None and bid >= ask:
        return None, None
    return bid, ask


def side_sizes(holdings: Holdings, order_size: int, max_inventory: int, min_size: int) -> tuple[int, int]:
    """Sizes of a bid and an ask that keep ``|exposure| <= max_inventory`` if filled: whole lots,
    0 for a side whose room is below the market minimum."""
    exposure = holdings.exposure
    floor_ = max(min_size, LOT)
    bid = floor_to_grid(max(0, min(order_size, max_inventory - exposure)), LOT)
    ask = floor_to_grid(max(0, min(order_size, max_inventory + exposure)), LOT)
    return (bid if bid >= floor_ else 0), (ask if ask >= floor_ else 0)


def two_sided(bid: int | None, ask: int | None, sizes: tuple[int, int]) -> YesQuotes:
    """One bid and one ask (a side without a price or a size is left out)."""
    bids = (Level(bid, sizes[0]),) if bid is not None and sizes[0] > 0 else ()
    asks = (Level(ask, sizes[1]),) if ask is not None and sizes[1] > 0 else ()
    return YesQuotes(bids, asks)


def _crosses(book: BookView, side: Side, price: int) -> bool:
    if side is _BUY:
        return book.best_ask is not None and price >= book.best_ask
    return book.best_bid is not None and price <= book.best_bid


def orders(pair: Pair, quotes: YesQuotes, holdings: Holdings, *, post_only: bool = True,
           expiration: int = 0) -> tuple[QuoteTarget, QuoteTarget]:
    """``quotes`` as the complete targets of the YES and NO tokens: a bid sells held NO at
    ``1 - p`` while enough is held, else buys YES at ``p``; an ask sells held YES at ``p`` while
    enough is held, else buys NO at ``1 - p``. A post-only order that would cross the book of its
    token is left out (the venue would refuse it)."""
    yes_id, no_id = pair.market.tokens
    yes_q: list[Quote] = []
    no_q: list[Quote] = []
    free_yes, free_no = holdings.yes, holdings.no
    for lv, bidding in [(lv, True) for lv in quotes.bids] + [(lv, False) for lv in quotes.asks]:
        held = free_no if bidding else free_yes
        if lv.size <= held:  # sell what is held: the bid sells NO, the ask sells YES
            token, book, side, price = (no_id, pair.no, _SELL, UNIT - lv.price) if bidding else \
                (yes_id, pair.yes, _SELL, lv.price)
        else:
            token, book, side, price = (yes_id, pair.yes, _BUY, lv.price) if bidding else \
                (no_id, pair.no, _BUY, UNIT - lv.price)
        if book.stale or (post_only and _crosses(book, side, price)):
            continue  # risk refuses quotes on a stale book, the venue post-only ones that cross
        if side is _SELL:
            if bidding:
                free_no -= lv.size
            else:
                free_yes -= lv.size
        (yes_q if token == yes_id else no_q).append(Quote(token, side, price, lv.size, post_only, expiration))
    return QuoteTarget(yes_id, tuple(yes_q)), QuoteTarget(no_id, tuple(no_q))


def as_yes(market: MarketInfo, token_id: str, side: Side, price: int) -> tuple[bool, int]:
    """An order on either token in YES terms: ``(is_bid, yes_price)``."""
    if token_id == market.tokens[0]:
        return side is _BUY, price
    return side is _SELL, UNIT - price
