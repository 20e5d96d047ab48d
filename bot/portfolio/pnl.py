"""PnL figures over a portfolio: marks from books, a snapshot, and the day's PnL.

Invariant: the trading day ends at UTC midnight as read from the run's ``Clock``; the day's PnL
is the total PnL (realized + unrealized - fees) minus the total last seen before that midnight.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol

import msgspec

from bot.core.clock import utc_day


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

    The first observation sets the baseline (a fresh run starts the day at 0); on the first
    observation of a new UTC day the baseline becomes the last total seen on the previous day, so
    moves between that sighting and midnight count against the new day (conservative for limits).
    """

    __slots__ = ("_day", "_baseline", "_last")

    def __init__(self) -> None:
        self._day: int | None = None
        self._baseline = 0
        self._last = 0

    def observe(self, now: float, total: int) -> int:
        """Record ``total`` at ``now`` and return the day's PnL."""
        day = utc_day(now)
        if self._day is None:
            self._day, self._baseline = day, total
        elif day != self._day:
            self._day, self._baseline = day, self._last
        self._last = total
        return total - self._baseline

    @property
    def baseline(self) -> int:
        return self._baseline


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
