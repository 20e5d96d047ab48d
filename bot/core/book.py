"""Level-2 order books, one per outcome token, kept in integer micro-units.

Invariants:

- ``bids`` and ``asks`` map price -> size (both ``int`` micro-units); a level present has size > 0.
- The best bid is the highest bid price and the best ask the lowest ask price, whatever order the
  wire sent the levels in (never "the first element").
- A snapshot replaces both sides; a level change sets that level's total (0 removes it).
- ``epoch`` counts continuity breaks: it increments on a tick-size change and on the first
  snapshot after the book was marked for resync (a reconnect, a REST fallback). Anything derived
  from a book (queue estimates, quotes) is valid only within one epoch.
- ``hash`` is an opaque change token copied from the venue; it is never validated.

This module is plain Python and is also compiled, when a C compiler is at hand, by Cython with the
types declared in ``book.pxd`` beside it (the compiled module shadows this file; ``COMPILED`` says
which one runs). Both run this same source and build the same books; only the hot path picks the
parsing that is cheapest for each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.core.levels import PriceLevels, pack_levels
from bot.venue.units import MAX_WHOLE_DIGITS, UNIT, UnitsError, parse_units

try:
    import cython

    COMPILED: bool = cython.compiled
except ImportError:  # interpreted, without Cython installed
    import sys as _sys
    import types as _types

    # what this interpreted source reads of the real module (``cython.compiled`` branches)
    _sys.modules.setdefault("cython", _types.SimpleNamespace(compiled=False))  # type: ignore[arg-type]
    import cython

    COMPILED = False

# Cached best prices are ints that make the per-level update one comparison: a new bid becomes the
# best when ``price > _bb``, a new ask when ``price < _ba``. ``_LOW`` is below every price and
# ``_HIGH`` above every price (prices are 0..UNIT), so:
#   best bid ``_bb``: a price; ``_LOW`` when there are no bids; ``_HIGH`` when it must be recomputed;
#   best ask ``_ba``: a price; ``_HIGH`` when there are no asks; ``_LOW`` when it must be recomputed.
_LOW = -1
_HIGH = UNIT + 1
_SCALE = (UNIT, 100_000, 10_000, 1_000, 100, 10, 1)

Levels = Iterable[tuple[int, int]]


class BookError(ValueError):
    """A book message whose prices or sizes are not valid micro-units."""


# Prices are few (at most 10,000 on the finest tick): the string -> units map is shared by all
# books and bounded by the grid, so it never grows without limit on valid input.
_PRICE_CACHE: dict[str, int] = {}
_PRICE_CACHE_MAX = 65_536
# Sizes repeat too (removals are all "0", round sizes recur); the cache keeps the first sizes seen
# up to its bound and then stops growing, so it costs bounded memory on any input. Only the
# interpreted hot path uses it: compiled, parsing a size is cheaper than looking it up.
_SIZE_CACHE: dict[str, int] = {}
_SIZE_CACHE_MAX = 32_768


def plain_units(text: str) -> int:
    """Micro-units of a plain decimal (ASCII digits with at most one dot, at least one digit, at
    most six decimals, below 10**12 whole units); -1 for any other spelling, which the caller
    parses the general way. One pass over the characters: compiled, this is a C loop."""
    value = 0
    digits = 0
    frac = -1  # digits seen after the dot; -1 before any dot
    for ch in text:
        d = ord(ch) - 48
        if 0 <= d <= 9:
            value = value * 10 + d
            digits += 1
            if frac >= 0:
                frac += 1
        elif d == -2 and frac < 0:  # "."
            frac = 0
        else:
            return -1
    if frac < 0:
        frac = 0
    if digits == 0 or frac > 6 or digits - frac > 12:
        return -1
    while frac < 6:
        value *= 10
        frac += 1
    return value


def price_units(text: str) -> int:
    """A price string as micro-units, cached (prices repeat; the grid is small)."""
    try:
        return _PRICE_CACHE[text]
    except KeyError:
        pass
    value = _parse_nonneg(text)
    if value > UNIT:
        raise BookError(f"price above 1: {text!r}")
    if len(_PRICE_CACHE) < _PRICE_CACHE_MAX:
        _PRICE_CACHE[text] = value
    return value


def size_units(text: str) -> int:
    """A size string (``"3300"``, ``"21574.08"``) as non-negative micro-units, exactly."""
    whole, dot, frac = text.partition(".")
    if whole.isdecimal() and len(whole) <= MAX_WHOLE_DIGITS:
        if not dot:
            return int(whole) * UNIT
        n = len(frac)
        if 0 < n <= 6 and frac.isdecimal():
            return int(whole) * UNIT + int(frac) * _SCALE[n]
    return _parse_nonneg(text)


def _parse_nonneg(text: Any) -> int:
    if not isinstance(text, str):
        raise BookError(f"expected a decimal string, got {type(text).__name__}")
    try:
        value = parse_units(text)
    except UnitsError as exc:
        raise BookError(str(exc)) from None
    if value < 0:
        raise BookError(f"negative value: {text!r}")
    return value


def parse_levels(levels: Iterable[Any]) -> list[tuple[int, int]]:
    """Wire levels (objects with ``price``/``size`` strings) as ``(price, size)`` unit pairs."""
    return [(price_units(lv.price), size_units(lv.size)) for lv in levels]


class Book:
    """The L2 book of one token: see the module invariants."""

    __slots__ = (
        "token_id", "market", "bids", "asks", "tick", "min_size", "last_trade_price",
        "epoch", "stale", "resync", "hash", "timestamp_ms", "updates", "snapshots", "_other",
        "_bb", "_ba", "touch",
    )

    def __init__(self, token_id: str, *, tick: int = 10_000, market: str = "") -> None:
        self.token_id = token_id
        self.market = market
        self.bids: dict[int, int] = {}
        self.asks: dict[int, int] = {}
        self.tick = tick
        self.min_size = 0
        self.last_trade_price: int | None = None
        self.epoch = 0
        # A book starts stale and resyncing: nothing is known until the first snapshot.
        self.stale = True
        self.resync = True
        self.hash = ""
        self.timestamp_ms = 0
        self.updates = 0  # level changes applied
        self.snapshots = 0  # snapshots applied
        self._other = 0  # tick and trade-print changes
        self._bb = _LOW
        self._ba = _HIGH
        # bumped by every write that may move the touch (best prices, their sizes, the tick):
        # while it and ``stale`` are unchanged, ``top()`` is unchanged (it may bump without a move)
        self.touch = 0

    # -- writes ---------------------------------------------------------------------------

    def apply_snapshot(
        self,
        bids: Levels,
        asks: Levels,
        *,
        hash: str = "",
        timestamp_ms: int = 0,
        tick: int | None = None,
        last_trade_price: int | None = None,
        min_size: int | None = None,
    ) -> bool:
        """Replace both sides. Returns False (and changes nothing) for a snapshot older than the
        book's last update while the book is live; a resyncing book accepts any snapshot and
        starts a new epoch with it."""
        if not self.resync and timestamp_ms and timestamp_ms < self.timestamp_ms:
            return False
        new_bids = {p: s for p, s in bids if s > 0}
        new_asks = {p: s for p, s in asks if s > 0}
        self.bids = new_bids
        self.asks = new_asks
        self._bb = max(new_bids) if new_bids else _LOW
        self._ba = min(new_asks) if new_asks else _HIGH
        if self.resync:
            self.epoch += 1
            self.resync = False
        self.stale = False
        if tick is not None and tick != self.tick:
            self.tick = tick
        if last_trade_price is not None:
            self.last_trade_price = last_trade_price
        if min_size is not None:
            self.min_size = min_size
        self.hash = hash
        if timestamp_ms:
            self.timestamp_ms = timestamp_ms
        self.snapshots += 1
        self.touch += 1
        return True

    def set_level(self, is_bid: bool, price: int, size: int) -> None:
        """Set the total size at ``price`` on one side; size 0 removes the level."""
        # at or above the best the touch may move (a best cleared to be recomputed was a removal
        # at the best, which moved the counter already)
        if is_bid:
            if price >= self._bb:
                self.touch += 1
            if size:
                self.bids[price] = size
                if price > self._bb:
                    self._bb = price
            else:
                self.bids.pop(price, None)
                if price == self._bb:
                    self._bb = _HIGH
        else:
            if price <= self._ba:
                self.touch += 1
            if size:
                self.asks[price] = size
                if price < self._ba:
                    self._ba = price
            else:
                self.asks.pop(price, None)
                if price == self._ba:
                    self._ba = _LOW
        self.updates += 1

    def set_tick(self, tick: int) -> None:
        """A tick-size change: new grid, new epoch (queue positions and quotes are void)."""
        self.tick = tick
        self.epoch += 1
        self._other += 1
        self.touch += 1

    def set_last_trade(self, price: int, timestamp_ms: int = 0) -> None:
        self.last_trade_price = price
        if timestamp_ms > self.timestamp_ms:
            self.timestamp_ms = timestamp_ms
        self._other += 1

    def mark_stale(self) -> None:
        """The feed for this book broke (stream down, silent, reconnecting): the levels are kept
        for display but are not trusted, and the next snapshot starts a new epoch."""
        self.stale = True
        self.resync = True

    # -- reads ----------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        """Changes of any kind so far (snapshots, level changes, ticks, trade prints): a cheap
        "has anything changed since I last looked" token."""
        return self.updates + self.snapshots + self._other

    @property
    def best_bid(self) -> int | None:
        bb = self._bid()
        return None if bb == _LOW else bb

    @property
    def best_ask(self) -> int | None:
        ba = self._ask()
        return None if ba == _HIGH else ba

    def _bid(self) -> int:
        """The best bid, ``_LOW`` when there is none (recomputed here when it must be)."""
        bb = self._bb
        if bb == _HIGH:
            bb = self._bb = max(self.bids) if self.bids else _LOW
        return bb

    def _ask(self) -> int:
        """The best ask, ``_HIGH`` when there is none (recomputed here when it must be)."""
        ba = self._ba
        if ba == _LOW:
            ba = self._ba = min(self.asks) if self.asks else _HIGH
        return ba

    def crosses(self, is_buy: bool, price: int) -> bool:
        """True when a post-only order at ``price`` would meet this book: a buy at or above the
        best ask, a sell at or below the best bid; a stale book crosses (nothing says it would not)."""
        if self.stale:
            return True
        return price >= self._ask() if is_buy else price <= self._bid()

    @property
    def best_bid_size(self) -> int:
        bb = self.best_bid
        return 0 if bb is None else self.bids[bb]

    @property
    def best_ask_size(self) -> int:
        ba = self.best_ask
        return 0 if ba is None else self.asks[ba]

    def top(self) -> tuple:
        """The touch as one comparable value: best bid and ask, their sizes, staleness and tick
        (what a strategy quoting at the top of the book reads; it changes iff one of them does)."""
        bb = self._bid()
        ba = self._ask()
        return (None if bb == _LOW else bb, None if ba == _HIGH else ba, 0 if bb == _LOW else self.bids[bb],
                0 if ba == _HIGH else self.asks[ba], self.stale, self.tick)

    @property
    def mid(self) -> int | None:
        """Midpoint in micro-units, floored to a whole unit; None unless both sides exist."""
        bb, ba = self.best_bid, self.best_ask
        if bb is None or ba is None:
            return None
        return (bb + ba) // 2

    @property
    def spread(self) -> int | None:
        bb, ba = self.best_bid, self.best_ask
        if bb is None or ba is None:
            return None
        return ba - bb

    @property
    def crossed(self) -> bool:
        """True when best bid >= best ask (possible transiently between deltas, never after a
        snapshot of an uncrossed book)."""
        bb, ba = self.best_bid, self.best_ask
        return bb is not None and ba is not None and bb >= ba

    def depth_to(self, is_bid: bool, limit_price: int) -> int:
        """Total size resting at prices at least as good as ``limit_price`` on one side: bids
        >= limit for the bid side, asks <= limit for the ask side (what a taker could hit)."""
        if is_bid:
            return sum(s for p, s in self.bids.items() if p >= limit_price)
        return sum(s for p, s in self.asks.items() if p <= limit_price)

    def cost_to_fill(self, is_buy: bool, size: int) -> tuple[int, int]:
        """Walk the opposite side for a taker order of ``size``: returns ``(filled, notional)``
        in micro-units, notional floored per level (exact on the tick grid)."""
        if is_buy:
            levels = sorted(self.asks.items())
        else:
            levels = sorted(self.bids.items(), reverse=True)
        filled = notional = 0
        for price, avail in levels:
            take = min(avail, size - filled)
            filled += take
            notional += price * take // UNIT
            if filled >= size:
                break
        return filled, notional

    def levels(self, is_bid: bool, n: int | None = None) -> list[tuple[int, int]]:
        """Levels best first (bids descending, asks ascending), at most ``n``."""
        if is_bid:
            out = sorted(self.bids.items(), reverse=True)
        else:
            out = sorted(self.asks.items())
        return out if n is None else out[:n]

    def __repr__(self) -> str:
        return (f"Book({self.token_id[:10]}…, bid={self.best_bid}, ask={self.best_ask}, "
                f"epoch={self.epoch}, stale={self.stale}, seq={self.seq})")


class Books:
    """All books by token id, and the hot path that applies decoded market events to them.

    Events are duck-typed on the wire field names (``asset_id``, ``price``, ``side``, ``size``,
    ``bids``/``asks`` of ``price``/``size`` strings), so the venue models and any lean decoder
    feed the same code. Events for tokens not tracked are ignored and counted.
    """

    __slots__ = ("_books", "ignored", "errors", "track_all", "_last", "_slot_tokens", "_slot_books")

    def __init__(self, token_ids: Iterable[str] = (), *, track_all: bool = False) -> None:
        self._books: dict[str, Book] = {}
        self.ignored = 0
        self.errors = 0
        self.track_all = track_all  # create books on first sight instead of ignoring
        self._last: Book | None = None  # the book of the last change apply_changes saw
        # the tokens of the last ``PriceLevels`` applied and their books (None: not tracked), kept
        # while no book is added or removed: a market's events name the same tokens again and again
        self._slot_tokens: tuple = ()
        self._slot_books: list = []
        for t in token_ids:
            self.add(t)

    def add(self, token_id: str, *, tick: int = 10_000, market: str = "") -> Book:
        book = self._books.get(token_id)
        if book is None:
            book = self._books[token_id] = Book(token_id, tick=tick, market=market)
            self._forget_slots()
        return book

    def remove(self, token_id: str) -> None:
        self._books.pop(token_id, None)
        self._forget_slots()

    def _forget_slots(self) -> None:
        """The books of the last ``PriceLevels`` tokens are read again next time (a book came or
        went); the tokens and their books go together, so no tokens match books kept from before."""
        self._slot_tokens = ()
        self._slot_books = []

    def get(self, token_id: str) -> Book | None:
        return self._books.get(token_id)

    def __getitem__(self, token_id: str) -> Book:
        return self._books[token_id]

    def __contains__(self, token_id: object) -> bool:
        return token_id in self._books

    def __iter__(self):
        return iter(self._books.values())

    def __len__(self) -> int:
        return len(self._books)

    def token_ids(self) -> list[str]:
        return list(self._books)

    def _book_for(self, token_id: str) -> Book | None:
        book = self._books.get(token_id)
        if book is None and self.track_all:
            book = self.add(token_id)
        return book

    def mark_stale(self, token_ids: Iterable[str] | None = None) -> None:
        """Mark some (default: all) books stale and due for a new epoch."""
        books = self._books
        for t in (books if token_ids is None else token_ids):
            b = books.get(t)
            if b is not None:
                b.mark_stale()

    # -- event application ----------------------------------------------------------------

    def apply_book(self, ev: Any) -> Book | None:
        """Apply a full snapshot (WS ``book`` event or REST book). Bad levels raise BookError
        and leave the book unchanged."""
        book = self._book_for(ev.asset_id)
        if book is None:
            self.ignored += 1
            return None
        bids = parse_levels(ev.bids or ())
        asks = parse_levels(ev.asks or ())
        tick = getattr(ev, "tick_size", None)
        ltp = getattr(ev, "last_trade_price", None)
        mos = getattr(ev, "min_order_size", None)
        book.apply_snapshot(
            bids, asks,
            hash=ev.hash or "",
            timestamp_ms=_ms(getattr(ev, "timestamp", 0)),
            tick=price_units(tick) if isinstance(tick, str) and tick else None,
            last_trade_price=price_units(ltp) if isinstance(ltp, str) and ltp else None,
            min_size=size_units(mos) if isinstance(mos, str) and mos else None,
        )
        if not book.market:
            book.market = getattr(ev, "market", "") or ""
        return book

    def apply_changes(self, changes: Iterable[Any], timestamp_ms: int = 0) -> int:
        """Apply ``price_change`` level changes (``asset_id``, ``price``, ``side``, ``size``,
        ``hash``); returns how many were applied. A bad level raises BookError after the levels
        before it were applied (each level is independent: size is the new total).

        This is the hot path: each level goes through its book's ``set_level`` (a C call when
        compiled), so the books a caller sees are those a ``set_level`` per change leaves.
        Compiled, prices and sizes are parsed in one C pass each; interpreted, they go through
        bounded caches, and a complement token's echo of the previous size is reused."""
        books = self._books
        pcache = _PRICE_CACHE
        scache = _SIZE_CACHE
        scache_room = len(scache) < _SIZE_CACHE_MAX
        applied = 0
        last_id: Any = None
        book: Book | None = None
        # the book before the last one: a market's frame alternates between its two tokens
        prev_id: Any = None
        prev_book: Book | None = None
        prev_sz: Any = _NO_SIZE
        size = 0
        compiled = COMPILED
        try:
            for ch in changes:
                aid = ch.asset_id
                if aid != last_id:
                    if aid == prev_id:
                        prev_id, prev_book, last_id, book = last_id, book, prev_id, prev_book
                    else:
                        prev_id, prev_book, last_id = last_id, book, aid
                        book = books.get(aid)
                    if book is None:
                        if not self.track_all:
                            self.ignored += 1
                            continue
                        book = self.add(aid)
                    if timestamp_ms > book.timestamp_ms:
                        book.timestamp_ms = timestamp_ms
                elif book is None:
                    self.ignored += 1
                    continue
                p = ch.price
                sz = ch.size
                if compiled:
                    price = plain_units(p) if type(p) is str else -1
                    if price < 0 or price > UNIT:
                        price = price_units(p)
                    size = plain_units(sz) if type(sz) is str else -1
                    if size < 0:
                        size = _parse_nonneg(sz)
                else:
                    try:
                        price = pcache[p]
                    except (KeyError, TypeError):
                        price = price_units(p)
                    if sz != prev_sz:  # else the complement token's echo: same size as before
                        prev_sz = sz
                        try:
                            size = scache[sz]
                        except KeyError:
                            size = size_units(sz) if type(sz) is str else _parse_nonneg(sz)
                            if scache_room:
                                scache[sz] = size
                                scache_room = len(scache) < _SIZE_CACHE_MAX
                        except TypeError:  # unhashable: not a size string
                            size = _parse_nonneg(sz)
                side = ch.side
                if side == "BUY":
                    book.set_level(True, price, size)
                elif side == "SELL":
                    book.set_level(False, price, size)
                else:
                    raise BookError(f"unknown side {side!r}")
                h = ch.hash
                if h:
                    book.hash = h
                applied += 1
        finally:
            self._last = book
        return applied

    def apply_levels(self, ev: Any) -> int:
        """Apply a :class:`~bot.core.levels.PriceLevels` (level changes already in micro-units);
        returns how many were applied. The books end as ``apply_changes`` leaves them for the
        ``price_change`` the event was made from: each level through its book's ``set_level``, a
        book's timestamp raised to the event's, its hash set to the last one the frame carried.
        An event with a level out of range raises BookError and changes nothing."""
        cols = level_cells(ev)  # every level checked: nothing is applied from a refused event
        tokens = ev.tokens
        packed = ev.levels
        hashes = ev.hashes
        timestamp_ms = ev.timestamp_ms
        n = len(packed) // 8
        n_tokens = len(tokens)
        if tokens == self._slot_tokens:
            by_slot = self._slot_books
        else:
            books = self._books
            by_slot = []
            for t in tokens:
                book = books.get(t)
                if book is None and self.track_all:
                    book = self.add(t)
                by_slot.append(book)
            self._slot_tokens = tokens
            self._slot_books = by_slot
        for book in by_slot:
            if book is not None and timestamp_ms > book.timestamp_ms:
                book.timestamp_ms = timestamp_ms
        applied = 0
        book = None
        i = 0
        while i < n:
            book = by_slot[cols[i]]
            if book is None:
                self.ignored += 1
            else:
                book.set_level(cols[i + 1] != 0, cols[i + 2], cols[i + 3])
                applied += 1
            i += 4  # FIELDS_PER_LEVEL
        self._last = book
        for slot in range(min(n_tokens, len(hashes))):
            h = hashes[slot]
            if h:
                book = by_slot[slot]
                if book is not None:
                    book.hash = h
        return applied

    def apply_tick_size_change(self, ev: Any) -> Book | None:
        book = self._book_for(ev.asset_id)
        if book is None:
            self.ignored += 1
            return None
        book.set_tick(price_units(ev.new_tick_size))
        return book

    def apply_last_trade(self, ev: Any) -> Book | None:
        book = self._book_for(ev.asset_id)
        if book is None:
            self.ignored += 1
            return None
        book.set_last_trade(price_units(ev.price), _ms(getattr(ev, "timestamp", 0)))
        return book

    def apply_event(self, ev: Any) -> Book | None:
        """Dispatch one decoded market event on its kind (the Struct tag ``event_type``, or an
        ``event_type`` attribute); unknown kinds are ignored. Returns the book touched (the last
        one for a multi-asset ``price_change``).

        Bad input never raises here: a level or snapshot that does not parse is counted in
        ``errors`` and the books it concerns are marked stale (their next snapshot resyncs them)."""
        et = _TAGS.get(type(ev))
        if et is None:
            et = event_type(ev)
        try:
            if et == "price_change":
                if type(ev) is PriceLevels:
                    self.apply_levels(ev)
                else:
                    self.apply_changes(ev.price_changes, _ms(getattr(ev, "timestamp", 0)))
                return self._last
            if et == "book":
                return self.apply_book(ev)
            if et == "tick_size_change":
                return self.apply_tick_size_change(ev)
            if et == "last_trade_price":
                return self.apply_last_trade(ev)
        except BookError:
            self.errors += 1
            if et == "price_change":
                self.mark_stale(ev.tokens if type(ev) is PriceLevels else {ch.asset_id for ch in ev.price_changes})
            else:
                self.mark_stale([ev.asset_id])
            return None
        return None


def price_levels_of(ev: Any) -> PriceLevels | None:
    """A ``price_change`` event with its levels parsed once, as :class:`~bot.core.levels.PriceLevels`
    (``Books.apply_event`` builds the same books from either); None when a level does not parse or
    names no side: such an event is kept as it is, so its consumer meets the bad level."""
    slots: dict[str, int] = {}
    hashes: list[str] = []
    levels: list[tuple[int, int, int, int]] = []
    try:
        for ch in ev.price_changes:
            aid = ch.asset_id
            slot = slots.get(aid)
            if slot is None:
                slot = slots[aid] = len(hashes)
                hashes.append("")
            side = ch.side
            if side == "BUY":
                is_bid = 1
            elif side == "SELL":
                is_bid = 0
            else:
                return None
            levels.append((slot, is_bid, price_units(ch.price), size_units(ch.size)))
            if ch.hash:
                hashes[slot] = ch.hash
    except BookError:
        return None
    return PriceLevels(ev.market, _ms(ev.timestamp), tuple(slots), pack_levels(levels), tuple(hashes))


def level_cells(ev: Any) -> Any:
    """The packed integers of a :class:`~bot.core.levels.PriceLevels`, four per level change
    (token index, 1 for a bid, price, size), read in place: the one reader of packed levels, for
    the books and the simulated venue alike. Every level is checked before any is handed out: an
    event whose tokens or hashes are not tuples, whose levels are not whole packed levels, or with
    a token index, price (0 to 1) or size (>= 0) out of range raises BookError, so its reader
    reads nothing of it. Compiled, the integers are a pointer into ``ev.levels``, valid while the
    event lives; interpreted, a memoryview of them."""
    given_tokens = ev.tokens
    given_levels = ev.levels
    if type(given_tokens) is not tuple or type(given_levels) is not bytes or type(ev.hashes) is not tuple \
            or len(given_levels) % 32:  # LEVEL_BYTES
        raise BookError("price levels: not tuples of tokens and hashes and whole packed levels")
    packed = given_levels
    n = len(packed) // 8
    if cython.compiled:  # the integers read in place
        cols = cython.cast(cython.p_longlong, cython.cast(cython.p_char, packed))
    else:
        cols = memoryview(packed).cast("q")
    n_tokens = len(given_tokens)
    unit = UNIT
    i = 0
    while i < n:
        slot = cols[i]
        price = cols[i + 2]
        size = cols[i + 3]
        if not 0 <= slot < n_tokens or not 0 <= price <= unit or size < 0:
            raise BookError(f"price levels: token index {slot} of {n_tokens}, price {price}, size {size}")
        i += 4  # FIELDS_PER_LEVEL
    return cols


_TAGS: dict[type, Any] = {}


def event_type(ev: Any) -> Any:
    """The ``event_type`` of a decoded event: its msgspec tag, else an ``event_type`` attribute."""
    cls = type(ev)
    try:
        return _TAGS[cls]
    except KeyError:
        pass
    cfg = getattr(cls, "__struct_config__", None)
    tag = getattr(cfg, "tag", None) if cfg is not None else None
    if tag is None:
        return getattr(ev, "event_type", None)
    _TAGS[cls] = tag
    return tag


_NO_SIZE = object()  # matches no size field (not even a missing one)


def _ms(value: Any) -> int:
    """A venue timestamp (epoch-ms string or int) as a non-negative int below 10**18; 0 when
    absent or malformed. A timestamp orders updates and is never money, so ``int``'s own reading
    of the string is exact enough (and one call on the per-frame path)."""
    if type(value) is str:
        if len(value) > 18:
            return 0
        try:
            ms = int(value)
        except ValueError:
            return 0
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        return 0
    return ms if 0 <= ms < 10**18 else 0
