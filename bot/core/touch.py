"""The touch of a book as the rest of the market makes it: our own resting orders taken out.

The venue's book shows our orders beside everyone else's, and a binary market's books mirror each
other (a BUY of one token at ``p`` shows on its complement's book as a SELL at ``1 - p``). A quote
centred on a touch that includes our own orders chases itself: our bid lifts the mid, the next bid
goes higher, and so on until it crosses. ``net_touch`` is what quoting reads instead.

Invariants: a level's net size is its size less our size there, never below zero, and a level
left at zero is not a price of the touch; the gross touch (``gross_bid`` / ``gross_ask``: every
order the book shows, and ours whether the book shows them yet or not) is kept beside it, because
a post-only order is judged against that one: a quote that would meet one of our own orders,
resting or on its way (a replaced quote's cancel not yet through, the complement's new quote not
yet in the book), is rejected as crossing.
"""

from __future__ import annotations

from typing import Any, Iterable

import msgspec

from bot.core.vocabulary import UNIT, Side

OwnLevel = tuple[bool, int, int]  # (on the bid side, price, size) of one of our orders as a book shows it


class Touch(msgspec.Struct, frozen=True, gc=False):
    """Best prices and sizes of one token's book (``None`` / 0: that side is empty), its tick,
    minimum size and staleness; ``gross_bid`` / ``gross_ask``: the touch with every order of ours
    in (those the book does not show yet too)."""

    best_bid: int | None
    best_ask: int | None
    best_bid_size: int = 0
    best_ask_size: int = 0
    tick: int = 10_000
    min_size: int = 0
    stale: bool = True
    gross_bid: int | None = None
    gross_ask: int | None = None


def own_levels(token_orders: Iterable[Any], complement_orders: Iterable[Any] = ()) -> list[OwnLevel]:
    """Where our working orders show on one token's book: its own orders on their side, and its
    complement's mirrored (a BUY at ``p`` there is a SELL at ``1 - p`` here). Orders are read
    for ``side``, ``price`` and ``remaining``."""
    out: list[OwnLevel] = []
    for o in token_orders:
        size = o.remaining
        if size > 0:
            out.append((o.side is Side.BUY, o.price, size))
    for o in complement_orders:
        size = o.remaining
        if size > 0:
            out.append((o.side is not Side.BUY, UNIT - o.price, size))
    return out


def _best_net(levels: dict[int, int], own: dict[int, int], best: int | None, bids: bool) -> tuple[int | None, int]:
    """The best price of one side whose size exceeds ours there, and the size left to others."""
    if best is None:
        return None, 0
    mine = own.get(best, 0)
    if mine < levels[best]:
        return best, levels[best] - mine
    for price in sorted(levels, reverse=bids):  # our order is at the top: walk down the side
        left = levels[price] - own.get(price, 0)
        if left > 0:
            return price, left
    return None, 0


def net_touch(book: Any, own: Iterable[OwnLevel] = (), shown: bool = True) -> Touch | None:
    """``book``'s touch without ``own`` (``None`` for no book). ``book`` reads as a
    ``bot.core.book.Book``: best prices and sizes, and its levels (``bids`` / ``asks``: price ->
    size) when one of our orders is on that side. ``shown`` false: the book does not show our
    orders (paper trading, a backtest on books recorded without us), so none is taken out of it;
    the gross touch still counts them."""
    if book is None:
        return None
    bid, ask = book.best_bid, book.best_ask
    bids_own: dict[int, int] = {}
    asks_own: dict[int, int] = {}
    for is_bid, price, size in own:
        side = bids_own if is_bid else asks_own
        side[price] = side.get(price, 0) + size
    if bids_own and shown:
        net_bid, bid_size = _best_net(book.bids, bids_own, bid, True)
    else:
        net_bid, bid_size = bid, getattr(book, "best_bid_size", 0)
    if asks_own and shown:
        net_ask, ask_size = _best_net(book.asks, asks_own, ask, False)
    else:
        net_ask, ask_size = ask, getattr(book, "best_ask_size", 0)
    gross_bid, gross_ask = bid, ask
    if bids_own:
        top = max(bids_own)
        if gross_bid is None or top > gross_bid:
            gross_bid = top
    if asks_own:
        low = min(asks_own)
        if gross_ask is None or low < gross_ask:
            gross_ask = low
    return Touch(net_bid, net_ask, bid_size, ask_size, book.tick, getattr(book, "min_size", 0) or 0,
                 bool(book.stale), gross_bid, gross_ask)
