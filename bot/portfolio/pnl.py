"""PnL figures over a portfolio: marks from books, a snapshot, and the day's PnL.

Invariant: the trading day ends at UTC midnight as read from the run's ``Clock``; the day's PnL
is the total PnL (realized + unrealized - fees) minus the total at the day's start, which survives
a restart on the same UTC day (it is journaled) and is exact (integer micro-units).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Protocol

import msgspec

from bot.core.clock import DayStart, utc_day


class _Marked(Protocol):
    token_id: str

    @property
    def mid(self) -> int | None: ...


class _PnlSource(Protocol):
    @property
    def realized_pnl(self) -> int: ...

    @property
    def fees(self) -> int: ...

    def unrealized_pnl(self, marks: Mapping[str, int | None]) -> int: ...

    def total_pnl(self, marks: Mapping[str, int | None]) -> int: ...


def marks_from_books(books: Iterable[_Marked]) -> dict[str, int]:
    """Token -> mid for every book that has both sides."""
    return {b.token_id: b.mid for b in books if b.mid is not None}


class PnlSnapshot(msgspec.Struct, frozen=True):
    """PnL at one instant, micro-units; ``total = realized + unrealized - fees``."""

    ts: float
    realized: int
    unrealized: int
    fees: int
    total: int
    daily: int


class DailyPnl:
    """Tracks the start-of-day total so the day's PnL resets at UTC midnight.

    The first observation of a day with no known start sets the baseline to the total seen (a
    fresh run starts the day at 0); on the first observation of a new UTC day the baseline becomes
    the last total seen on the previous day, so moves between that sighting and midnight count
    against the new day (conservative for limits). A ``start`` restored from the journal continues
    that day only if the first observation falls on it; ``on_new_day`` hears every new start.
    """

    __slots__ = ("_day", "_baseline", "_last", "_on_new_day")

    def __init__(
        self, start: DayStart | None = None, *, on_new_day: Callable[[DayStart], None] | None = None
    ) -> None:
        self._day: int | None = start.day if start is not None else None
        self._baseline = start.total if start is not None else 0
        self._last: int | None = None  # the last total this run saw
        self._on_new_day = on_new_day

    @classmethod
    def resume(
        cls, start: DayStart | None, now: float, *, on_new_day: Callable[[DayStart], None] | None = None
    ) -> "DailyPnl":
        """Continue the journaled day ``start`` if it is the UTC day of ``now``, else begin afresh."""
        if start is not None and start.day != utc_day(now):
            start = None
        return cls(start, on_new_day=on_new_day)

    def observe(self, now: float, total: int) -> int:
        """Record ``total`` at ``now`` and return the day's PnL."""
        day = utc_day(now)
        if day != self._day:
            # the previous day's last total when this run saw one, else the total now
            self._day, self._baseline = day, (total if self._last is None else self._last)
            if self._on_new_day is not None:
                self._on_new_day(DayStart(day, self._baseline))
        self._last = total
        return total - self._baseline

    @property
    def baseline(self) -> int:
        return self._baseline

    @property
    def pnl(self) -> int:
        """The day's PnL at the last observation (0 before any)."""
        return self._last - self._baseline if self._last is not None else 0

    @property
    def start(self) -> DayStart | None:
        """The current day's start (``None`` before the first observation of a fresh run)."""
        return DayStart(self._day, self._baseline) if self._day is not None else None


def snapshot(pf: _PnlSource, marks: Mapping[str, int | None], now: float, daily: DailyPnl) -> PnlSnapshot:
    """Read every PnL figure of ``pf`` at ``now`` and advance ``daily``."""
    total = pf.total_pnl(marks)
    return PnlSnapshot(
        ts=now,
        realized=pf.realized_pnl,
        unrealized=pf.unrealized_pnl(marks),
        fees=pf.fees,
        total=total,
        daily=daily.observe(now, total),
    )
