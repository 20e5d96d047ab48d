"""The backtest's timeline: an engine and a simulated venue on one simulated clock, in a plain loop.

There is no event loop. One timeline, in time order, drives everything:

- each recorded market event reaches the simulated venue at the venue's own time (its exchange
  timestamp, never after the receive time) and the engine at the recorded receive time, so the
  strategy sees the market with the recorded feed delay while its orders meet the book as it is
  at the venue when they arrive;
- the venue's answers (acks, cancels, fills) reach the engine when the venue says they are due;
- the engine's timer runs every ``timer_s`` of simulated time and throttled work is emitted when
  the router says it can be.

While the venue and the engine meet every event at the same instant (no feed delay, nothing
pending for the engine), one feed book serves both: the venue reads it before the engine applies
the event, so each level change is applied once. The venue goes back to books of its own (a copy)
before an event reaches it ahead of the engine, before a snapshot or tick change, and before the
engine marks books stale or fresh on its own (a gap, the feed's verdicts on the timer); it shares
again only once both books hold the same state.

Invariants: at equal times a market event reaches the engine before a venue answer, a venue
answer before the router's wake-up, and that before the timer; the simulated clock never runs
backwards; the timeline holds only events whose receive time has not come. This module is part
of the compiled hot path (``bot.compiled``): the loop runs once per recorded event.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Callable, Iterable

from bot.core.levels import PriceLevels
from bot.engine.engine import Engine
from bot.sim.venue import SimVenue
from bot.venue.models.ws import LastTradePriceEvent, PriceChangeEvent

import cython  # noqa: E402 - after bot.core.book (through the engine), which stands in for it when Cython is absent

_INF = float("inf")
# event class -> True for the replay's own records (a gap, market metadata), which are not market
# events; False for the rest (looked up by name once per class: the replay's types sit above)
_SPECIAL: dict[type, bool] = {}
_SPECIAL_NAMES = ("Gap", "MarketMeta")
# event class -> whether its instances may carry a ``timestamp_ms`` (see ``_may_have_ms``)
_IN_MS: dict[type, bool] = {}
# the events one feed book may serve the venue and the engine for: the venue reads what they
# change before the engine applies them (level changes, trade prints); any other kind (snapshots,
# tick changes) is met by the venue in its own books
_SHARED_KINDS = frozenset((PriceLevels, PriceChangeEvent, LastTradePriceEvent))
SHARE_RETRY_EVENTS = 1024  # events before books found to differ are compared again


def divided(n: Any, unit: float) -> float:
    """``n / unit``, exactly as Python computes it. Compiled, an ``int`` that fits 64 bits is
    divided in C: converting it to a double rounds to nearest as Python's does, so the result is
    the same float; any other ``n`` (a larger int, a float) goes through Python's division."""
    if cython.compiled and type(n) is int:
        over: cython.int = 0
        c = PyLong_AsLongLongAndOverflow(n, cython.address(over))  # noqa: F821 - cimported (timeline.pxd)
        if not over:
            return c / unit
    return n / unit


def exchange_time(ev: Any, received: float) -> float:
    """When the venue produced ``ev`` (its millisecond timestamp), never after it was received."""
    cls = type(ev)
    if cls is PriceLevels:
        ms = ev.timestamp_ms
    else:
        in_ms = _IN_MS.get(cls)
        if in_ms is None:
            in_ms = _IN_MS[cls] = _may_have_ms(cls)
        ms = getattr(ev, "timestamp_ms", None) if in_ms else None
        if ms is None:
            raw = getattr(ev, "timestamp", None)
            try:
                ms = int(raw) if raw else 0
            except (TypeError, ValueError):
                ms = 0
    t = divided(ms, 1000.0) if ms else received
    return t if t < received else received


def _may_have_ms(cls: type) -> bool:
    """False when no instance of ``cls`` can have a ``timestamp_ms`` (the class has none and its
    instances no ``__dict__``, as the venue's event Structs): its lookup is skipped."""
    return hasattr(cls, "timestamp_ms") or cls.__dictoffset__ != 0


def _is_record(cls: type) -> bool:
    """Whether events of ``cls`` are the replay's own records (``Gap``, ``MarketMeta``)."""
    known = _SPECIAL.get(cls)
    if known is None:
        known = _SPECIAL[cls] = cls.__name__ in _SPECIAL_NAMES
    return known


class Backtest:
    """One run: an engine and a simulated venue on one simulated clock."""

    def __init__(self, engine: Engine, venue: SimVenue, clock: Any, *, timer_s: float, feed_delay: bool,
                 on_sample: Callable[[float], None] | None = None,
                 venue_view: Callable[[int, Any], Any] | None = None) -> None:
        """``venue_view(recv_ns, event)``: the event as the simulated venue should meet it, when
        that differs from what the strategy sees (a recording of our own live session: its books
        without our live orders, so the queue there is ours)."""
        self.engine = engine
        # the engine's tick-to-order stamps read the wall clock, which times nothing in a replay
        engine.perf = None
        self.venue = venue
        self.clock = clock
        self.timer_s = timer_s
        self.feed_delay = feed_delay
        self.on_sample = on_sample
        self.venue_view = venue_view
        self.events = 0
        self.first_t: float | None = None  # receive times of the first and last events
        self.last_t: float | None = None
        self._pending: deque[tuple[float, Any]] = deque()  # (receive time, event) the engine has not seen
        self._next_timer = _INF  # when the engine's timer runs next (none before the first event)
        self._shared = False  # the venue meets the market in the engine's books
        self._share_at = 0  # events read before sharing is tried (again)

    # --- the loop ------------------------------------------------------------------------
    def run(self, events: Iterable[tuple[int, Any]], progress: Callable[[int, float], None] | None = None) -> None:
        """Feed every ``(receive ns, event)`` and drain what follows the last one. ``progress(n,
        t)`` is called with the events read so far and the last receive time at the first event
        and every 4096 after it."""
        venue = self.venue
        eng = self.engine
        clock = self.clock
        view = self.venue_view
        pending = self._pending
        feed_delay = self.feed_delay
        started = False
        n = self.events
        t = 0.0
        for ns, ev in events:
            t = divided(ns, 1e9)
            if not started:
                self._start(t)
                started = True
                self.first_t = t
            n += 1
            self.events = n
            if _is_record(type(ev)):
                self._advance(t, False)
                self._special(ev)
            else:
                at = exchange_time(ev, t) if feed_delay else t
                self._advance(at, False)
                if at == t and not pending and view is None:
                    # the venue and the engine meet it now, the engine right after the venue
                    if type(ev) in _SHARED_KINDS:
                        if not self._shared and n >= self._share_at:
                            self._share(n)
                    elif self._shared:
                        self._unshare(n)
                    venue.on_market(ev, at)
                    if t > clock.now():
                        clock.set(t)
                    self._dispatch(eng.on_market([ev]))
                else:
                    if self._shared:
                        self._unshare(n)
                    venue.on_market(ev if view is None else view(ns, ev), at)
                    pending.append((t, ev))
            if progress is not None and (n - 1) & 4095 == 0:
                self.last_t = t
                progress(n, t)
        if started:
            self.last_t = t
            self._advance(_INF, True)

    def skip_timers(self, until: float) -> None:
        """No timer runs before ``until`` (a stretch in which the source says nothing, such as a
        polled dataset's collector stopping): the next one is the first of the timer's grid at or
        after it. Venue answers and throttled sends due meanwhile still happen on time."""
        if self._next_timer < until:
            self._next_timer += math.ceil((until - self._next_timer) / self.timer_s) * self.timer_s

    def _start(self, t: float) -> None:
        self.clock.set(t)
        self._next_timer = t + self.timer_s
        eng = self.engine
        self._dispatch(eng.resync([tok for m in eng.markets for tok in m.tokens]))
        self._dispatch(eng.start())

    def _advance(self, until: float, drain: bool = False) -> None:
        """Run everything due before ``until``, in time order: venue answers, the engine's view of
        market events, timers and throttled sends. ``drain``: until nothing is left but timers."""
        eng = self.engine
        venue = self.venue
        clock = self.clock
        pending = self._pending
        while True:
            t = until
            kind = 0
            t_venue = venue.next_due()
            if t_venue is not None and t_venue < t:
                t = t_venue
                kind = 1
            if pending:
                t_event = pending[0][0]
                if t_event <= t:
                    t = t_event
                    kind = 2
            t_wake = eng.next_wakeup()
            if t_wake is not None and t_wake < t:
                t = t_wake
                kind = 3
            if not drain and self._next_timer < t:
                t = self._next_timer
                kind = 4
            if kind == 0:
                return
            if t > clock.now():
                clock.set(t)
            if kind == 2:
                ev = pending.popleft()[1]
                self._dispatch(eng.on_market([ev]))
            elif kind == 1:
                for r in venue.due(t):
                    self._dispatch(eng.on_result(r))
            elif kind == 3:
                self._dispatch(eng.poll())
            else:
                self._next_timer += self.timer_s
                if self._shared:  # the feed's verdicts mark the engine's books, not the venue's
                    self._timer_unshared()
                else:
                    self._dispatch(eng.on_timer())
                if self.on_sample is not None:
                    self.on_sample(t)

    def _special(self, ev: Any) -> None:
        if type(ev).__name__ == "Gap":  # the books were not continuous: stale until their next snapshot
            if self._shared:
                self._unshare(self.events)
            self._dispatch(self.engine.resync(ev.tokens))

    # --- one feed book for both ------------------------------------------------------------
    def _share(self, n: int) -> None:
        """Let the venue meet the market in the engine's books if they hold its books' state."""
        self._shared = self.venue.share_books(self.engine.books)
        if not self._shared:
            self._share_at = n + SHARE_RETRY_EVENTS

    def _unshare(self, n: int) -> None:
        self.venue.own_books()
        self._shared = False
        self._share_at = n + 1

    def _timer_unshared(self) -> None:
        """The engine's timer while books are shared: should it mark a book stale or fresh, the
        venue goes on with a copy of the books as they were before (its own never change so)."""
        books = self.engine.books
        before = {b.token_id: (b.stale, b.resync, b.epoch) for b in books}
        actions = self.engine.on_timer()
        if {b.token_id: (b.stale, b.resync, b.epoch) for b in books} != before:
            self.venue.own_books()
            for b in self.venue.books:
                b.stale, b.resync, b.epoch = before[b.token_id]
            self._shared = False
            self._share_at = self.events + 1
        self._dispatch(actions)

    def _dispatch(self, actions: list[Any]) -> None:
        """The engine's actions to the simulated venue, sent now (``SimVenue.execute``)."""
        if actions:
            self.venue.execute(actions, self.clock.now())
