"""A sliding count of events over the last ``window`` seconds (order rate, error rate)."""

from __future__ import annotations

from collections import deque


class SlidingWindow:
    """Invariant: ``count(now)`` is the number of events recorded in ``(now - window, now]``."""

    __slots__ = ("window", "_times")

    def __init__(self, window: float) -> None:
        if window <= 0:
            raise ValueError("window must be positive")
        self.window = window
        self._times: deque[float] = deque()

    def _expire(self, now: float) -> None:
        cutoff = now - self.window
        times = self._times
        while times and times[0] <= cutoff:
            times.popleft()

    def count(self, now: float) -> int:
        self._expire(now)
        return len(self._times)

    def record(self, now: float, n: int = 1) -> None:
        self._expire(now)
        self._times.extend([now] * n)

    def clear(self) -> None:
        self._times.clear()
