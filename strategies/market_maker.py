"""A two-sided market maker: bid and ask around the mid (or the micro-price), skewed by inventory.

The decision is the pure ``quote(book, inventory, params, now)``; the ``MarketMaker`` strategy only
gathers its inputs and re-quotes when the target moved by at least ``requote_ticks`` (so resting
orders keep their queue place). The venue does not allow short sales, so the ask is a SELL of held
shares: quote both outcome tokens of a market to make the full two-sided market (a bid on NO at
``1 - p`` is an offer of YES at ``p``), with inventory skew on the net YES-NO exposure.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from bot.core.intents import Intent, Quote, QuoteTarget
from bot.core.touch import Touch
from bot.core.vocabulary import LOT, UNIT, OrderSize, Shares, Side
from bot.strategy import Strategy, StrategyContext

_BUY, _SELL = Side.BUY, Side.SELL


class Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Market-maker parameters (the ``[strategy.params]`` table); prices in ticks, sizes in shares
    (``order_size = 10``; micro-units inside: 1 share = 1,000,000).

    - ``tokens``: the tokens to quote; empty: every token of every market.
    - ``fair``: ``"mid"``, or ``"micro"`` (the mid weighted by the sizes at the touch).
    - ``half_spread_ticks``: each quote's distance from the fair price, at least 1.
    - ``order_size``: each quote's size (10 shares by default).
    - ``max_inventory``: the position at which no more bids go out and the skew is full.
    - ``skew_ticks``: how far the centre moves against the inventory at ``max_inventory``.
    - ``min_top_size``: a touch thinner than this counts as missing (no quote).
    - ``requote_ticks``: a quote is replaced only when its price moves by at least this.
    - ``post_only``: quotes never take liquidity (the venue refuses one that would cross).
    - ``order_ttl_s``: above 0, GTD orders expiring after this many seconds (venue minimum 180).
    - ``net_complement``: skew on the token's position net of its complement's, not its own alone.
    """

    tokens: tuple[str, ...] = ()  # tokens to quote; empty: every token of every market
    fair: Literal["mid", "micro"] = "mid"  # micro: mid weighted by the sizes at the touch
    half_spread_ticks: int = 2
    order_size: OrderSize = 10_000_000  # 10 shares per side
    max_inventory: Shares = 100_000_000  # no more bids at this exposure; full skew here
    skew_ticks: int = 2  # how far the centre moves against the inventory at max_inventory
    min_top_size: Shares = 0  # a touch thinner than this counts as missing (no quote)
    requote_ticks: int = 1  # re-quote only when a price moves by at least this
    post_only: bool = True
    order_ttl_s: int = 0  # >0: GTD orders expiring after this many seconds (venue minimum 180)
    net_complement: bool = True  # skew on (token - complement) position, not the token's alone

    def __post_init__(self) -> None:
        if self.half_spread_ticks < 1:
            raise ValueError("half_spread_ticks must be at least 1")
        if self.order_size <= 0 or self.max_inventory <= 0:
            raise ValueError("order_size and max_inventory must be positive")
        if self.requote_ticks < 1:
            raise ValueError("requote_ticks must be at least 1")
        if self.skew_ticks < 0 or self.min_top_size < 0 or self.order_ttl_s < 0:
            raise ValueError("skew_ticks, min_top_size and order_ttl_s must not be negative")


class BookView(msgspec.Struct, frozen=True):
    """What quoting needs of a book, as a value: the touch net of our own orders (the market's
    prices, which quotes are centred on) and ``gross_bid`` / ``gross_ask``, the touch with our
    orders in (which a post-only order must not cross; ``None``: the same as the net one)."""

    token_id: str
    best_bid: int | None
    best_ask: int | None
    bid_size: int = 0
    ask_size: int = 0
    tick: int = 10_000
    min_size: int = 0
    stale: bool = False
    gross_bid: int | None = None
    gross_ask: int | None = None

    @classmethod
    def of(cls, book: Any, *, token_id: str, tick: int, min_size: int) -> "BookView":
        """From a live book or a ``bot.core.touch.Touch`` (or None: a stale, empty view)."""
        if book is None:
            return cls(token_id, None, None, tick=tick, min_size=min_size, stale=True)
        if type(book) is Touch:  # every field there: read directly
            return cls(token_id, book.best_bid, book.best_ask, book.best_bid_size, book.best_ask_size,
                       book.tick or tick, max(min_size, book.min_size or 0), bool(book.stale),
                       book.gross_bid, book.gross_ask)
        return cls(
            token_id,
            book.best_bid,
            book.best_ask,
            getattr(book, "best_bid_size", 0),
            getattr(book, "best_ask_size", 0),
            book.tick or tick,  # the live tick (it changes near the extremes)
            max(min_size, getattr(book, "min_size", 0) or 0),
            bool(book.stale),
            getattr(book, "gross_bid", None),
            getattr(book, "gross_ask", None),
        )


class Inventory(msgspec.Struct, frozen=True):
    """``position``: shares held (caps the ask); ``exposure``: signed shares that drive skew."""

    position: int
    exposure: int


def floor_to_grid(price: int, tick: int) -> int:
    return price // tick * tick


def ceil_to_grid(price: int, tick: int) -> int:
    return -(-price // tick) * tick


def fair_price(book: BookView, kind: str) -> int:
    """Mid, or the micro-price ``(bid * ask_size + ask * bid_size) / (bid_size + ask_size)``."""
    bid, ask = book.best_bid, book.best_ask
    assert bid is not None and ask is not None
    depth = book.bid_size + book.ask_size
    if kind == "micro" and book.bid_size > 0 and book.ask_size > 0:
        return (bid * book.ask_size + ask * book.bid_size) // depth
    return (bid + ask) // 2


def quote(book: BookView, inventory: Inventory | int, params: Params, now: float) -> QuoteTarget:
    """The quotes wanted on ``book.token_id``.

    Invariants: prices are on the tick grid within ``[tick, 1 - tick]``, the bid is floored and
    the ask ceiled, neither crosses the book (net of our orders, nor with them: a post-only order
    that would meet one of our own is rejected too) and bid < ask; sizes are lots of 0.01 share at least
    the market minimum, the bid stops at ``max_inventory`` exposure and the ask never sells more
    than is held; a stale book or a missing or thin touch gives no quotes.
    """
    if isinstance(inventory, int):
        inventory = Inventory(inventory, inventory)
    token_id = book.token_id
    bid_px, ask_px = book.best_bid, book.best_ask
    if book.stale or bid_px is None or ask_px is None or bid_px >= ask_px:
        return QuoteTarget(token_id)
    min_top = params.min_top_size
    if book.bid_size < min_top or book.ask_size < min_top:
        return QuoteTarget(token_id)
    tick = book.tick
    max_inventory = params.max_inventory
    held = inventory.exposure
    exposure = max(-max_inventory, min(max_inventory, held))
    shift = params.skew_ticks * tick * abs(exposure) // max_inventory
    centre = fair_price(book, params.fair) - (shift if exposure > 0 else -shift)
    half = params.half_spread_ticks * tick

    gross_bid, gross_ask = book.gross_bid, book.gross_ask
    if gross_ask is not None and gross_ask < ask_px:
        ask_px = gross_ask  # our own order (a mirrored complement bid) is the best ask
    if gross_bid is not None and gross_bid > bid_px:
        bid_px = gross_bid
    bid = min(floor_to_grid(centre - half, tick), ask_px - tick)
    ask = max(ceil_to_grid(centre + half, tick), bid_px + tick)
    bid = max(tick, min(bid, UNIT - tick))
    ask = max(tick, min(ask, UNIT - tick))

    min_size = max(book.min_size, LOT)
    order_size = params.order_size
    bid_size = floor_to_grid(min(order_size, max_inventory - held), LOT)
    ask_size = floor_to_grid(min(order_size, inventory.position), LOT)
    ttl = params.order_ttl_s
    expiration = int(now) + ttl if ttl else 0
    post_only = params.post_only

    bids = bid_size >= min_size and bid < ask_px and bid < ask
    asks = ask_size >= min_size and ask > bid_px and ask > bid
    if bids and asks:
        return QuoteTarget(token_id, (Quote(token_id, _BUY, bid, bid_size, post_only, expiration),
                                      Quote(token_id, _SELL, ask, ask_size, post_only, expiration)))
    if bids:
        return QuoteTarget(token_id, (Quote(token_id, _BUY, bid, bid_size, post_only, expiration),))
    if asks:
        return QuoteTarget(token_id, (Quote(token_id, _SELL, ask, ask_size, post_only, expiration),))
    return QuoteTarget(token_id, ())


def should_requote(current: QuoteTarget | None, target: QuoteTarget, tick: int, threshold_ticks: int) -> bool:
    """True when ``target`` differs enough from what is resting to be worth losing queue place:
    a side appears or disappears, a size changes, or a price moves by ``threshold_ticks`` or more."""
    if current is None:
        return bool(target.quotes)
    if current.quotes == target.quotes and threshold_ticks * tick > 0:
        return False  # the same quotes: no side, size or price moved
    now_sides: dict[Side, Quote] = {}
    new_sides: dict[Side, Quote] = {}
    for q in current.quotes:  # by side, the last quote of a side standing for it
        now_sides[q.side] = q
    for q in target.quotes:
        new_sides[q.side] = q
    if now_sides.keys() != new_sides.keys():
        return True
    for side, q in new_sides.items():
        old = now_sides[side]
        if q.size != old.size or abs(q.price - old.price) >= threshold_ticks * tick:
            return True
    return False


class MarketMaker(Strategy):
    """Quotes every configured token with ``quote``; re-quotes on book changes, fills and timers."""

    Params = Params
    reads = "top"  # quotes from the touch only (best prices and sizes)

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._resting: dict[str, QuoteTarget] = {}

    def book_tokens(self) -> tuple[str, ...] | None:
        return self.params.tokens or None  # the configured tokens, else every token

    def _tokens(self, ctx: StrategyContext) -> list[str]:
        if self.params.tokens:
            return list(self.params.tokens)
        return [t for m in ctx.markets for t in m.tokens]

    def _inventory(self, ctx: StrategyContext, token_id: str, market: Any = None) -> Inventory:
        pf = ctx.portfolio
        position = max(0, pf.size(token_id))
        exposure = position
        if market is None:
            market = ctx.markets.get(token_id)
        if self.params.net_complement and market is not None:
            exposure = position - max(0, pf.size(market.complement(token_id)))
        return Inventory(position, exposure)

    def target(self, ctx: StrategyContext, token_id: str) -> QuoteTarget:
        return self._target(ctx, token_id, ctx.touch(token_id), ctx.markets.get(token_id))

    def _target(self, ctx: StrategyContext, token_id: str, touch: Any, market: Any) -> QuoteTarget:
        """The quotes wanted from ``touch``: the book net of our own orders (``ctx.touch``)."""
        tick = market.tick if market is not None else 10_000
        min_size = market.min_size if market is not None else 0
        view = BookView.of(touch, token_id=token_id, tick=tick, min_size=min_size)
        return quote(view, self._inventory(ctx, token_id, market), self.params, ctx.clock.now())

    def refresh(self, ctx: StrategyContext, token_id: str) -> list[Intent]:
        touch = ctx.touch(token_id)
        market = ctx.markets.get(token_id)
        target = self._target(ctx, token_id, touch, market)
        tick = touch.tick if touch is not None else (market.tick if market is not None else 10_000)
        if not should_requote(self._resting.get(token_id), target, tick, self.params.requote_ticks):
            return []
        self._resting[token_id] = target
        ctx.log.debug("requote", token_id=token_id, quotes=len(target.quotes))
        return [target]

    def on_start(self, ctx: StrategyContext) -> list[Intent]:
        self._resting.clear()
        return [i for t in self._tokens(ctx) for i in self.refresh(ctx, t)]

    def on_book(self, ctx: StrategyContext, token_id: str) -> list[Intent]:
        if self.params.tokens and token_id not in self.params.tokens:
            return []
        if not self.params.tokens and ctx.markets.get(token_id) is None:
            return []
        return self.refresh(ctx, token_id)

    def on_fill(self, ctx: StrategyContext, fill: Any) -> list[Intent]:
        tokens = [fill.token_id]
        market = ctx.markets.get(fill.token_id)
        if market is not None:
            tokens.append(market.complement(fill.token_id))
        quoted = set(self._tokens(ctx))
        return [i for t in tokens if t in quoted for i in self.refresh(ctx, t)]

    def on_timer(self, ctx: StrategyContext) -> list[Intent]:
        return [i for t in self._tokens(ctx) for i in self.refresh(ctx, t)]

    def on_stop(self, ctx: StrategyContext) -> list[Intent]:
        out: list[Intent] = [QuoteTarget(t) for t, q in self._resting.items() if q.quotes]
        self._resting.clear()
        return out
