"""Gauges the live loops export that the engine does not see itself: a channel's health.

Invariant: counters only grow by what the stream counted since the last look, so a scrape never
counts a decode error twice.
"""

from __future__ import annotations

from typing import Any


class StreamGauges:
    """A WebSocket channel's decode errors and, for the user channel, the lag of its last message
    (the market channel's lag is observed per frame by the core loop)."""

    def __init__(self, metrics: Any, name: str, stream: Any) -> None:
        self.metrics = metrics
        self.name = name
        self.stream = stream
        self._errors = 0
        self._message: Any = None

    def observe(self) -> None:
        m, c = self.metrics, self.stream.counters
        if c.decode_errors > self._errors:
            m.decode_errors.labels(self.name).inc(c.decode_errors - self._errors)
            self._errors = c.decode_errors
        if self.name == "user" and c.last_message_at != self._message:
            self._message = c.last_message_at
            m.message_lag.labels(self.name).observe(max(c.last_lag_s, 0.0))
