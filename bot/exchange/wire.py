"""Wire stamps: when the exchange wrote each market frame and when it received each order
request, both on its own perf counter, for wire-to-wire latency (a book update written to a
subscriber -> the order request it caused, received).

Invariant: stamping only records (bounded: at most ``limit`` frames and ``limit`` requests, the
rest counted as dropped); nothing recorded is read back by the exchange, so a stamped exchange
behaves as an unstamped one. Off unless a ``WireStamps`` is set on the hub.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable
from typing import Any

import msgspec

_decode = msgspec.json.Decoder()
RECEIVED = "pmbot.received_at"  # the ASGI scope key of a request's receipt time (perf counter)


class ReceiptStamp:
    """ASGI middleware: each HTTP request's receipt time put in its scope (``RECEIVED``) as the
    first thing the app does with it, before routing, limits and auth, while ``hub`` has stamps
    on (a request's receipt is then its arrival, not its turn in the handler)."""

    def __init__(self, app: Any, hub: Any) -> None:
        self.app = app
        self.hub = hub

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if self.hub.stamps is not None and scope["type"] == "http":
            scope[RECEIVED] = time.perf_counter()
        await self.app(scope, receive, send)


class WireStamps:
    """Raw stamps (decoded only when asked for the latencies, off the hot path)."""

    def __init__(self, limit: int = 1_000_000) -> None:
        self.limit = limit
        self.frames: list[tuple[float, bytes | str]] = []
        self.requests: list[tuple[float, bytes]] = []
        self.dropped = 0
        #: set while the exchange publishes what a trading request did; its frames are answers
        self.answering = False
        self.answers: set[bytes | str] = set()  # frames a request caused (our own orders' changes)

    def answer(self, payload: bytes | str) -> None:
        """A market frame made by a trading request (an order placed or cancelled): not a book
        update a request can answer, so left out of the latencies."""
        if len(self.answers) < self.limit:
            self.answers.add(payload)

    def frame(self, payload: bytes | str, at: float) -> None:
        """A market-channel frame, written to a subscriber at ``at``."""
        if len(self.frames) < self.limit:
            self.frames.append((at, payload))
        else:
            self.dropped += 1

    def request(self, body: bytes, at: float) -> None:
        """A ``POST /orders`` body, received at ``at``."""
        if len(self.requests) < self.limit:
            self.requests.append((at, body))
        else:
            self.dropped += 1

    def latencies(self) -> list[float]:
        """Wire-to-wire seconds (see ``wire_latencies``) of what was stamped."""
        answers = self.answers
        frames = [(at, frame_tokens(p)) for at, p in self.frames if p not in answers]
        requests = [(at, request_tokens(b)) for at, b in self.requests]
        return wire_latencies(frames, requests)


def frame_tokens(payload: bytes | str) -> tuple[str, ...]:
    """The tokens whose book a ``price_change`` frame changes (none for anything else)."""
    try:
        msg = _decode.decode(payload)
    except msgspec.DecodeError:
        return ()
    if not isinstance(msg, dict) or msg.get("event_type") != "price_change":
        return ()
    return tuple(dict.fromkeys(c.get("asset_id") for c in msg.get("price_changes") or () if isinstance(c, dict)))


def request_tokens(body: bytes) -> tuple[str, ...]:
    """The tokens a ``POST /orders`` body places orders on."""
    try:
        items = _decode.decode(body)
    except msgspec.DecodeError:
        return ()
    if not isinstance(items, list):
        return ()
    out: dict[str, None] = {}
    for it in items:
        order = it.get("order") if isinstance(it, dict) else None
        if isinstance(order, dict) and isinstance(order.get("tokenId"), str):
            out[order["tokenId"]] = None
    return tuple(out)


def wire_latencies(frames: Iterable[tuple[float, Iterable[str]]],
                   requests: Iterable[tuple[float, Iterable[str]]]) -> list[float]:
    """For each request, per token it places on: the time since the latest frame that changed
    that token's book before the request arrived, if no earlier request already answered that
    frame. Each book update is counted at most once, by the first order it caused; requests with
    no unanswered update before them (fills, timers) are not counted."""
    by_token: dict[str, list[float]] = {}
    for at, tokens in sorted(frames, key=lambda f: f[0]):
        for t in tokens:
            by_token.setdefault(t, []).append(at)
    answered: dict[str, float] = {}
    out: list[float] = []
    for at, tokens in sorted(requests, key=lambda r: r[0]):
        for t in tokens:
            times = by_token.get(t)
            if not times:
                continue
            i = bisect.bisect_right(times, at)
            if i == 0:
                continue
            f = times[i - 1]
            if answered.get(t) == f:
                continue
            answered[t] = f
            out.append(at - f)
    return out
