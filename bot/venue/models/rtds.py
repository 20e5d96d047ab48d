"""Real-time data service (a separate stream of reference prices: crypto, equities).

Modeled minimally so its frames decode; nothing here feeds the book or is traded.
Invariant: ``full_accuracy_value`` (a decimal string) is the exact figure; ``value`` is a float.
"""

from __future__ import annotations

from .decoding import Wire


class RtdsPoint(Wire, kw_only=True):
    timestamp: int
    value: float


class RtdsPayload(Wire, kw_only=True):
    """Either one update (``value``/``full_accuracy_value``) or a history batch (``data``)."""

    symbol: str
    timestamp: int | None = None
    value: float | None = None
    full_accuracy_value: str | None = None
    received_at: int | None = None
    data: list[RtdsPoint] | None = None


class RtdsMessage(Wire, kw_only=True):
    """One frame: ``topic`` (e.g. ``crypto_prices``), ``type`` (e.g. ``update``), ms ``timestamp``."""

    topic: str
    type: str
    timestamp: int
    payload: RtdsPayload
