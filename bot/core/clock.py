"""Where the core reads the time: one ``Clock`` per run, passed in, never the wall clock directly.

Invariant: the core and strategies read time only through ``Clock.now()`` (unix seconds), so the
same code is deterministic under a ``SimClock`` in backtests; a ``SimClock`` never runs backwards.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import msgspec

SECONDS_PER_DAY = 86_400


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Current time in unix seconds."""
        ...


class LiveClock:
    """The host's wall clock (unix seconds)."""

    __slots__ = ()

    def now(self) -> float:
        return time.time()


class SimClock:
    """A clock the backtest moves by hand: ``set`` to an absolute time or ``advance`` by a delta."""

    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def set(self, ts: float) -> None:
        if ts < self._now:
            raise ValueError(f"SimClock cannot go back from {self._now} to {ts}")
        self._now = float(ts)

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"SimClock cannot advance by a negative {seconds}")
        self._now += seconds
        return self._now


def utc_day(ts: float) -> int:
    """The UTC calendar day of ``ts`` as days since 1970-01-01 (changes at UTC midnight)."""
    return int(ts // SECONDS_PER_DAY)


class DayStart(msgspec.Struct, frozen=True):
    """Where a trading day's PnL counts from: the UTC ``day`` (``utc_day``) and the ``total`` PnL
    (micro-units) at its start. The journal keeps it, so a restart the same day resumes it."""

    day: int
    total: int
