"""Desired quotes against live own orders: what to cancel and what to place, nothing else.

Invariant: applying the result (cancel every id in ``cancels``, then place every quote in
``places``) leaves exactly one live order per desired quote; a live order that already matches a
desired quote (same side, same price on the tick grid, remaining size within tolerance) is kept,
so it keeps its place in the queue. Pure: values in, values out.
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from bot.core.intents import Quote, QuoteTarget
from bot.venue.enums import Side


class LiveOrder(Protocol):
    """What the diff needs of a live order (``OwnOrder`` satisfies it)."""

    @property
    def order_id(self) -> str: ...
    @property
    def side(self) -> Side: ...
    @property
    def price(self) -> int: ...
    @property
    def remaining(self) -> int: ...


def on_tick(price: int, tick: int) -> int:
    """``price`` rounded half-up to the ``tick`` grid (all micro-units)."""
    if tick <= 1:
        return price
    return (price + tick // 2) // tick * tick


def diff(
    targets: QuoteTarget | Iterable[Quote],
    live_orders: Sequence[LiveOrder],
    tick: int,
    size_tolerance: int = 0,
) -> tuple[list[str], list[Quote]]:
    """Cancels (order ids, in live-order order) and places (quotes, in target order) for one token.

    Each desired quote claims the oldest unclaimed live order that matches it (``live_orders``
    are given oldest first); live orders left unclaimed are cancelled, quotes left unmatched are
    placed. Quotes with a non-positive size are ignored (nothing desired).
    """
    quotes = targets.quotes if isinstance(targets, QuoteTarget) else tuple(targets)
    claimed: set[int] = set()
    places: list[Quote] = []
    # index live orders by (side, price on grid) so big books stay linear
    buckets: dict[tuple[Side, int], list[int]] = {}
    half = tick // 2  # ``on_tick``, inlined: prices are bucketed once per live order and quote
    for i, o in enumerate(live_orders):
        side = o.side
        if type(side) is not Side:
            side = Side(side)
        p = o.price if tick <= 1 else (o.price + half) // tick * tick
        key = (side, p)
        b = buckets.get(key)
        if b is None:
            buckets[key] = [i]
        else:
            b.append(i)
    for q in quotes:
        if q.size <= 0:
            continue
        found = -1
        p = q.price if tick <= 1 else (q.price + half) // tick * tick
        for i in buckets.get((q.side, p), ()):
            if i not in claimed and abs(live_orders[i].remaining - q.size) <= size_tolerance:
                found = i
                break
        if found >= 0:
            claimed.add(found)
        else:
            places.append(q)
    cancels = [o.order_id for i, o in enumerate(live_orders) if i not in claimed]
    return cancels, places
