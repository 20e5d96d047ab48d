"""A bands market maker: orders in bands around the centre, each replaced only when it leaves its
band, so a resting order keeps its place in the queue while the mid wanders inside the band.

Each band has a minimum, a target and a maximum distance from the centre (in ticks) and a size. A
band's bid (or ask) is placed at the target distance; it stays where it is while its distance
from the centre is within ``[min_ticks, max_ticks]`` and it does not cross the book; otherwise it
goes back to the target. The centre is the mid (or the micro-price) moved against the inventory by
up to ``skew_ticks`` at ``max_inventory``. Sizes shrink to what the inventory limit leaves room
for, inner bands first; a side pauses altogether once the exposure reaches ``pause_inventory``.

Everything is decided in YES terms, so buying YES and selling NO are the same liquidity: a bid is
a BUY of YES or a SELL of held NO at ``1 - p``, an ask a SELL of held YES or a BUY of NO
(``strategies.pairs``). The decision is the pure ``quote(pair, holdings, params, resting)``; the
``BandsMarketMaker`` only remembers each market's bands between calls.
"""

from __future__ import annotations

from typing import Any

import msgspec

from bot.core.vocabulary import LOT, UNIT, OrderSize, Shares
from bot.strategy import StrategyContext
from strategies.market_maker import BookView, ceil_to_grid, fair_price, floor_to_grid
from strategies.pair_maker import PairMaker, PairParams
from strategies.pairs import Holdings, Level, Pair, YesQuotes


class Band(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One band: where its orders may sit (ticks from the centre) and their size (shares)."""

    min_ticks: int
    target_ticks: int
    max_ticks: int
    size: OrderSize

    def __post_init__(self) -> None:
        if not 0 <= self.min_ticks <= self.target_ticks <= self.max_ticks:
            raise ValueError("a band needs 0 <= min_ticks <= target_ticks <= max_ticks")
        if self.target_ticks < 1:
            raise ValueError("a band's target_ticks must be at least 1")
        if self.size <= 0:
            raise ValueError("a band's size must be positive")


DEFAULT_BANDS = (
    Band(min_ticks=1, target_ticks=2, max_ticks=3, size=10_000_000),
    Band(min_ticks=4, target_ticks=5, max_ticks=7, size=20_000_000),
)


class Params(PairParams, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Bands parameters: ``bands`` inner first; ``pause_inventory`` 0 means ``max_inventory``."""

    bands: tuple[Band, ...] = DEFAULT_BANDS
    skew_ticks: int = 2
    pause_inventory: Shares = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.bands:
            raise ValueError("bands must list at least one band")
        for inner, outer in zip(self.bands, self.bands[1:]):
            if outer.target_ticks <= inner.target_ticks:
                raise ValueError("bands must be listed inner first, with growing target_ticks")
        if self.skew_ticks < 0 or self.pause_inventory < 0:
            raise ValueError("skew_ticks and pause_inventory must not be negative")


class BandQuotes(msgspec.Struct, frozen=True):
    """Each band's bid and ask in YES terms (``None``: none in that band)."""

    bids: tuple[Level | None, ...] = ()
    asks: tuple[Level | None, ...] = ()

    def quotes(self) -> YesQuotes:
        return YesQuotes(tuple(lv for lv in self.bids if lv is not None),
                         tuple(lv for lv in self.asks if lv is not None))


def centre(touch: BookView, exposure: int, params: Params) -> int:
    """The fair price moved down when long (up when short), ``skew_ticks`` at ``max_inventory``."""
    clipped = max(-params.max_inventory, min(params.max_inventory, exposure))
    shift = params.skew_ticks * touch.tick * abs(clipped) // params.max_inventory
    return fair_price(touch, params.fair) - (shift if clipped > 0 else -shift)


def _side(touch: BookView, mid: int, bands: tuple[Band, ...], room: int, min_size: int, paused: bool,
          resting: tuple[Level | None, ...], bid: bool) -> tuple[Level | None, ...]:
    tick = touch.tick
    out: list[Level | None] = []
    for i, band in enumerate(bands):
        size = floor_to_grid(max(0, min(band.size, room)), LOT)
        if paused or size < min_size:
            out.append(None)
            continue
        room -= size
        old = resting[i] if i < len(resting) else None
        if old is not None and old.size == size and _in_band(old.price, mid, band, touch, bid):
            out.append(old)
            continue
        if bid:
            price = floor_to_grid(mid - band.target_ticks * tick, tick)
            if touch.best_ask is not None:
                price = min(price, touch.best_ask - tick)
        else:
            price = ceil_to_grid(mid + band.target_ticks * tick, tick)
            if touch.best_bid is not None:
                price = max(price, touch.best_bid + tick)
        out.append(Level(price, size) if tick <= price <= UNIT - tick else None)
    return tuple(out)


def _in_band(price: int, mid: int, band: Band, touch: BookView, bid: bool) -> bool:
    """A resting price still within its band and on the right side of the book."""
    tick = touch.tick
    if price % tick or not tick <= price <= UNIT - tick:
        return False  # the grid changed under it
    distance = (mid - price) if bid else (price - mid)
    if not band.min_ticks * tick <= distance <= band.max_ticks * tick:
        return False
    if bid:
        return touch.best_ask is None or price < touch.best_ask
    return touch.best_bid is None or price > touch.best_bid


def quote(pair: Pair, holdings: Holdings, params: Params, resting: BandQuotes | None = None) -> BandQuotes:
    """The bands wanted on ``pair.market``.

    Invariants: prices on the grid within ``[tick, 1 - tick]``, bids under the best ask and asks
    over the best bid, every bid under every ask; a resting band order whose distance from the
    centre is within its band (and size unchanged) keeps its price; sizes are lots of at least
    the market minimum and the bids (asks) together never take the exposure past
    ``max_inventory`` (``-max_inventory``); a side pauses at ``pause_inventory``; a stale or
    one-sided market gives no quotes.
    """
    touch = pair.touch()
    if touch.stale:
        return BandQuotes()
    exposure = holdings.exposure
    mid = centre(touch, exposure, params)
    pause = params.pause_inventory or params.max_inventory
    old = resting or BandQuotes()
    min_size = pair.min_size
    bids = _side(touch, mid, params.bands, params.max_inventory - exposure, min_size, exposure >= pause,
                 old.bids, True)
    asks = _side(touch, mid, params.bands, params.max_inventory + exposure, min_size, exposure <= -pause,
                 old.asks, False)
    top_bid = max((lv.price for lv in bids if lv is not None), default=None)
    low_ask = min((lv.price for lv in asks if lv is not None), default=None)
    if top_bid is not None and low_ask is not None and top_bid >= low_ask:
        # a kept order and a new one met (the centre jumped): the kept ones go back to target
        return quote(pair, holdings, params, None) if resting is not None else BandQuotes()
    return BandQuotes(bids, asks)


class BandsMarketMaker(PairMaker):
    """Quotes every selected binary market in bands; see the module docstring."""

    Params = Params

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._bands: dict[str, BandQuotes] = {}

    def decide(self, ctx: StrategyContext, pair: Pair, holdings: Holdings) -> YesQuotes:
        cid = pair.market.condition_id
        bands = quote(pair, holdings, self.params, self._bands.get(cid))
        self._bands[cid] = bands
        return bands.quotes()

    def on_start(self, ctx: StrategyContext) -> list[Any]:
        self._bands.clear()
        return super().on_start(ctx)
