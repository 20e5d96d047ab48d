"""HTTP answers of the local exchange: msgspec-encoded bodies and the venue's error shapes.

Invariant: every error leaves the server as one of the venue's bodies: ``{"error": "<class>:
<detail>"}`` (CLOB and account data), ``{"type", "error"}`` (catalog), with these statuses:
400 bad input, 401 bad credentials, 403 IP not allow-listed, 404 unknown resource, 405 method not
served on that path, 425 engine
restarting, 429 throttled (with ``Retry-After``), 500 ``internal_error: <detail>``, 501
``not_implemented: <what>`` for a venue route the local exchange does not serve, 503 post-only
or cancel-only mode.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
from starlette.responses import Response

_encoder = msgspec.json.Encoder()


class Reply(Exception):
    """Raised anywhere in a handler to answer at once with ``status`` and ``body``."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_encoder.encode(body), status_code=status, headers=headers, media_type="application/json")


def error(status: int, text: str, **extra: Any) -> Reply:
    """A CLOB/account-data error: ``{"error": text, ...extra}``."""
    return Reply(status, {"error": text, **extra})


def bad_request(detail: str) -> Reply:
    return error(400, detail)


def unauthorized(detail: str) -> Reply:
    return error(401, f"unauthorized: {detail}")


def not_found(detail: str) -> Reply:
    return error(404, detail)


def internal(detail: str) -> Reply:
    return error(500, f"internal_error: {detail}")


def catalog_error(status: int, kind: str, text: str) -> Reply:
    """A catalog error: ``{"type": "bad request" | "not found error", "error": text}``."""
    return Reply(status, {"type": kind, "error": text})


def throttled(retry_after: float, scope: str) -> Reply:
    """429 with an integer ``Retry-After`` (seconds, rounded up) and the same in the body."""
    seconds = max(1, math.ceil(retry_after))
    return Reply(
        429,
        {"error": f"rate_limited: too many requests ({scope})", "retry_after_seconds": seconds},
        {"Retry-After": str(seconds)},
    )
