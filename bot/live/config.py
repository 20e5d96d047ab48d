"""Settings of the live shell (``[shell]`` in the bot config): the cadences of its periodic tasks
and the WebSocket connections' keepalive and reconnect timings.

Invariant: every interval is a positive number of seconds, except the polls a zero switches off
(``orders_sync_s``, ``trades_poll_s``, ``positions_poll_s``, ``book_poll_s``); the stream's
``url`` is not set here: it is the venue's ``ws_url``.
"""

from __future__ import annotations

import msgspec

from bot.venue.stream import StreamConfig

# tighter than the venue's minimum keepalive: a dead connection is noticed within seconds
LIVE_STREAM = StreamConfig(ping_interval_s=5.0, stale_after_s=15.0, check_interval_s=1.0,
                           backoff_base_s=0.1, backoff_cap_s=2.0)
_OPTIONAL = ("orders_sync_s", "trades_poll_s", "positions_poll_s", "book_poll_s")
_MAX_S = 86_400.0


class ShellConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Cadences of the shell's periodic tasks, in seconds, and the streams' settings."""

    timer_interval_s: float = 0.5
    heartbeat_interval_s: float = 5.0
    heartbeats: bool = True
    trades_poll_s: float = 3.0
    orders_sync_s: float = 5.0  # the complete open-order listing, checked against ours (0 = never)
    positions_poll_s: float = 10.0
    book_poll_s: float = 1.0
    stop_timeout_s: float = 5.0
    stream: StreamConfig = LIVE_STREAM

    def __post_init__(self) -> None:
        for name in ("timer_interval_s", "heartbeat_interval_s", "stop_timeout_s") + _OPTIONAL:
            value = getattr(self, name)
            low_ok = value >= 0 if name in _OPTIONAL else value > 0
            if not (low_ok and value <= _MAX_S):
                bound = ">= 0" if name in _OPTIONAL else "> 0"
                raise ValueError(f"shell.{name} must be {bound} and at most {_MAX_S:g} seconds, got {value}")
