"""The request log of ``bot exchange --log-requests``: one line per HTTP request.

Invariant: a line carries the method, the path (no query string), the status, the account (the
address header, ``SERVICE_ADDRESS`` or the venue's ``POLY_ADDRESS``; ``-`` without one) and the latency in ms, and nothing
else of the request: no header value that is a key, a signature or a passphrase, no body.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import structlog
from starlette.datastructures import Headers

from bot.venue.auth import ADDRESS, header_value

log = structlog.get_logger("bot.exchange.requests")
_MAX_ACCOUNT = 42  # 0x + 40 hex digits: anything longer is not an address and is cut


class RequestLog:
    """ASGI middleware writing the line of the module docstring once each HTTP answer is sent."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [0]

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            log.info("request", method=scope["method"], path=scope["path"], status=status[0] or 500,
                     account=account_of(scope), latency_ms=round((time.perf_counter() - start) * 1000, 3))


def account_of(scope: dict) -> str:
    """The request's address header in either spelling (``bot.venue.auth.header_value``; letters
    and digits, at most an address long), else ``-``."""
    value = header_value(Headers(scope=scope), ADDRESS)
    if not value:
        return "-"
    return "".join(ch if ch.isalnum() else "?" for ch in value[:_MAX_ACCOUNT]) or "-"
