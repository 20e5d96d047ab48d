"""The external book as the simulated venue matches against it: the feed's L2 levels of one token
minus what our own takes removed from them.

The recorded or live feed does not know our orders, so after a take it keeps showing the
liquidity we consumed. Invariants: ``gone[(is_bid, price)]`` holds the units our takes removed
from that level since the feed last updated it; the venue sees ``max(0, feed - gone)`` there;
a feed update of a level (or a snapshot of the token) forgets what was removed from it, the
feed's new total being the truth from then on. A take at ``p`` on one token also removes what it
took from the complement's mirrored level (``1 - p``, other side) when the feed mirrors books.
"""

from __future__ import annotations

from bot.core.book import Book
from bot.venue.units import UNIT


class Depth:
    """One token's feed book (``bot.core.book.Book``) seen through our depletion."""

    __slots__ = ("book", "gone", "comp")

    def __init__(self, book: Book) -> None:
        self.book = book
        self.gone: dict[tuple[bool, int], int] = {}
        self.comp: Depth | None = None  # the complement token's view, when depletion is mirrored

    def feed(self, is_bid: bool, price: int) -> int:
        """The feed's total at a level (our depletion not counted)."""
        return (self.book.bids if is_bid else self.book.asks).get(price, 0)

    def visible(self, is_bid: bool, price: int) -> int:
        """What the venue sees at a level: the feed's total less what our takes removed."""
        total = (self.book.bids if is_bid else self.book.asks).get(price, 0)
        gone = self.gone
        if gone:
            total -= gone.get((is_bid, price), 0)
        return total if total > 0 else 0

    def best(self, is_bid: bool) -> int | None:
        """The best price with something visible on one side, or None."""
        book = self.book
        if not self.gone:
            return book.best_bid if is_bid else book.best_ask
        levels = self.walk(not is_bid, 0 if is_bid else UNIT)
        return levels[0][0] if levels else None

    def walk(self, taker_buys: bool, limit: int) -> list[tuple[int, int]]:
        """``(price, visible)`` of the levels a taker may take, best first: asks at or below
        ``limit`` for a buyer, bids at or above it for a seller; empty levels left out."""
        book = self.book
        gone = self.gone
        if taker_buys:
            prices = sorted(p for p in book.asks if p <= limit)
            side = book.asks
        else:
            prices = sorted((p for p in book.bids if p >= limit), reverse=True)
            side = book.bids
        is_bid = not taker_buys
        out = []
        for p in prices:
            v = side[p] - gone.get((is_bid, p), 0) if gone else side[p]
            if v > 0:
                out.append((p, v))
        return out

    def deplete(self, is_bid: bool, price: int, units: int) -> None:
        """Our take removed ``units`` at a level (and at its mirror on the complement)."""
        key = (is_bid, price)
        self.gone[key] = self.gone.get(key, 0) + units
        comp = self.comp
        if comp is not None:
            mkey = (not is_bid, UNIT - price)
            comp.gone[mkey] = comp.gone.get(mkey, 0) + units

    def refresh(self, is_bid: bool, price: int) -> None:
        """The feed updated a level: its total is the truth again."""
        if self.gone:
            self.gone.pop((is_bid, price), None)


def book_state_equal(a: Book, b: Book) -> bool:
    """Whether two feed books hold the same state: every field of ``Book`` (its ``__slots__``:
    levels, tick, epoch, flags, counters) equal."""
    for name in Book.__slots__:
        if getattr(a, name) != getattr(b, name):
            return False
    return True


def copy_book_state(src: Book, dst: Book) -> None:
    """Make ``dst`` an independent copy of ``src``'s state (``book_state_equal`` holds after)."""
    for name in Book.__slots__:
        value = getattr(src, name)
        setattr(dst, name, dict(value) if type(value) is dict else value)
