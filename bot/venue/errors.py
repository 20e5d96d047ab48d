"""Typed venue errors, built from each surface's error body.

Invariant: every failure at the venue edge surfaces as one :class:`VenueError` subclass whose
``str()`` is a single line carrying the venue's own words (whitespace collapsed, length capped,
known secrets redacted); bad caller input is a :class:`ParameterError` raised before anything is
sent. Whether a failed write may have taken effect is stated by ``outcome_unknown``.
"""

from __future__ import annotations

import email.utils
import enum
import math
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

__all__ = [
    "VenueError",
    "ParameterError",
    "BadRequest",
    "Unauthorized",
    "NotFound",
    "EngineRestarting",
    "RateLimited",
    "PostOnlyMode",
    "CancelOnlyMode",
    "ServerError",
    "TransportError",
    "TransportTimeout",
    "OrderRejected",
    "RejectReason",
    "VersionMismatch",
    "UnexpectedResponse",
    "classify_rejection",
    "error_from_response",
    "parse_retry_after",
    "one_line",
]

_MAX_MESSAGE = 300
_SPACES = re.compile(r"\s+")


def one_line(text: str, redact: Iterable[str] = ()) -> str:
    """``text`` on one line, at most 300 characters, with every non-empty ``redact`` value masked."""
    for secret in redact:
        if secret:
            text = text.replace(secret, "***")
    text = _SPACES.sub(" ", text).strip()
    if len(text) > _MAX_MESSAGE:
        text = text[: _MAX_MESSAGE - 1] + "…"
    return text


class VenueError(Exception):
    """A failure reported by (or on the way to) the venue.

    ``message`` is the venue's text; ``status`` the HTTP status (None off the wire); ``route``
    ``"METHOD /path"`` without query; ``code`` the machine code when the body has one;
    ``kind`` the ``<class>`` part of an ``"<class>: <detail>"`` message; ``fields`` the body's
    other top-level scalar values (e.g. the expected ``heartbeat_id``).
    """

    outcome_unknown: bool = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        route: str | None = None,
        code: str | None = None,
        fields: Mapping[str, object] | None = None,
    ) -> None:
        self.message = one_line(message)
        self.status = status
        self.route = route
        self.code = code
        self.fields: dict[str, object] = dict(fields or {})
        head, sep, _ = self.message.partition(": ")
        self.kind = head if sep and " " not in head else None
        super().__init__(self.message)

    def __str__(self) -> str:
        where = " ".join(str(p) for p in (self.status, self.route) if p is not None)
        return f"{where}: {self.message}" if where else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class ParameterError(VenueError, ValueError):
    """A caller-supplied value is invalid; nothing was sent. ``parameter`` names it."""

    def __init__(self, parameter: str, detail: str) -> None:
        self.parameter = parameter
        super().__init__(f"{parameter}: {detail}")


class BadRequest(VenueError):
    """HTTP 400 (or another 4xx without a more specific class): the request was refused."""


class Unauthorized(VenueError):
    """HTTP 401/403: credentials, signature, freshness or IP allow-list refused."""


class NotFound(VenueError):
    """HTTP 404: the resource does not exist."""


class EngineRestarting(VenueError):
    """HTTP 425: the matching engine is restarting; nothing was placed. Back off and resubmit."""


class RateLimited(VenueError):
    """HTTP 429: nothing was done. ``retry_after`` is the venue's wait in seconds, if given."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class PostOnlyMode(VenueError):
    """HTTP 503 ``code=post_only_mode``: only post-only orders and cancels are accepted."""


class CancelOnlyMode(VenueError):
    """HTTP 503 with ``cancel-only`` in the error: only cancels are accepted."""


class ServerError(VenueError):
    """HTTP 5xx: on a write the outcome is unknown (look the order up before resending)."""

    outcome_unknown = True


class TransportError(VenueError):
    """The request did not complete (connection, protocol); on a write the outcome is unknown.
    ``base_url`` is where it went, when known (the host an error line names)."""

    outcome_unknown = True

    def __init__(self, message: str, *, base_url: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.base_url = base_url


class TransportTimeout(TransportError):
    """The request timed out; on a write the outcome is unknown."""


class UnexpectedResponse(VenueError):
    """A 2xx response whose body does not have the documented shape."""


class VersionMismatch(VenueError):
    """The venue answered ``order_version_mismatch``: re-read ``GET /version`` before resending."""


class RejectReason(str, enum.Enum):
    """Why the venue refused one order (venue.md 10.1)."""

    NOT_READY = "not_ready"
    INVALID_NONCE = "invalid_nonce"
    INVALID_EXPIRATION = "invalid_expiration"
    POST_ONLY_CROSSES = "post_only_crosses"
    POST_ONLY_MODE = "post_only_mode"
    FOK_KILLED = "fok_killed"
    FAK_KILLED = "fak_killed"
    INSUFFICIENT_BALANCE = "insufficient_balance"
    VERSION_MISMATCH = "version_mismatch"
    OTHER = "other"


_REJECTIONS: tuple[tuple[str, RejectReason], ...] = (
    ("the market is not yet ready to process new orders", RejectReason.NOT_READY),
    ("invalid nonce", RejectReason.INVALID_NONCE),
    ("invalid expiration", RejectReason.INVALID_EXPIRATION),
    ("invalid post-only order: order crosses book", RejectReason.POST_ONLY_CROSSES),
    ("post-only mode: only post-only orders and cancels are allowed", RejectReason.POST_ONLY_MODE),
    ("fok orders are fully filled or killed", RejectReason.FOK_KILLED),
    ("fak orders are partially filled or killed", RejectReason.FAK_KILLED),
    ("not enough balance / allowance", RejectReason.INSUFFICIENT_BALANCE),
    ("allowance is not enough", RejectReason.INSUFFICIENT_BALANCE),
    ("order_version_mismatch", RejectReason.VERSION_MISMATCH),
)


def classify_rejection(error_msg: str | None) -> RejectReason:
    """Map an order result's ``errorMsg`` to a :class:`RejectReason` (case-insensitive)."""
    text = (error_msg or "").lower()
    for needle, reason in _REJECTIONS:
        if needle in text:
            return reason
    return RejectReason.OTHER


class OrderRejected(VenueError):
    """One order was refused (``success`` false or a non-empty ``errorMsg``); never retried."""

    def __init__(self, message: str, *, order_id: str | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.order_id = order_id
        self.reason = classify_rejection(message)


# -- building errors from responses -----------------------------------------------------------


def parse_retry_after(
    headers: Mapping[str, str], body: Mapping[str, object] | None = None, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or HTTP-date) or JSON ``retry_after_seconds``.

    ``now`` is the wall-clock epoch used for HTTP dates; a date in the past gives 0.0.
    """
    raw = headers.get("retry-after") or headers.get("Retry-After")
    if raw:
        raw = raw.strip()
        try:
            seconds = float(raw)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None:
                wall = time.time() if now is None else now
                return max(0.0, when.timestamp() - wall)
        else:
            if math.isfinite(seconds):
                return max(0.0, seconds)
    if body:
        value = body.get("retry_after_seconds")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return max(0.0, float(value))
        if isinstance(value, str):
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None


def _decode_body(content: bytes) -> tuple[dict[str, object] | None, str]:
    """The body as a JSON object (if it is one) and its text."""
    text = content.decode("utf-8", errors="replace")
    try:
        obj = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return None, text
    return (obj if isinstance(obj, dict) else None), text


def _message(obj: dict[str, object] | None, text: str) -> str:
    if obj is not None:
        for key in ("error", "error_msg", "errorMsg", "message", "detail"):
            value = obj.get(key)
            if isinstance(value, str) and value:
                return value
    return text or "(empty body)"


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    content: bytes,
    *,
    route: str | None = None,
    redact: Iterable[str] = (),
    now: float | None = None,
) -> VenueError:
    """The typed error for a non-2xx response (any surface's body shape)."""
    obj, text = _decode_body(content)
    message = one_line(_message(obj, text), redact)
    code = obj.get("code") if obj is not None else None
    code = code if isinstance(code, str) else None
    fields: dict[str, object] = {}
    if obj is not None:
        fields = {
            k: v
            for k, v in obj.items()
            if isinstance(v, (str, int, float, bool)) and k not in ("error", "error_msg", "errorMsg")
        }
        for k, v in fields.items():
            if isinstance(v, str):
                fields[k] = one_line(v, redact)
    kw = {"status": status, "route": route, "code": code, "fields": fields}
    low = message.lower()
    kind = (obj or {}).get("type")
    if "order_version_mismatch" in low:
        return VersionMismatch(message, **kw)
    if status == 429:
        return RateLimited(message, retry_after=parse_retry_after(headers, obj, now=now), **kw)
    if status == 425:
        return EngineRestarting(message, **kw)
    if status == 503:
        if code == "post_only_mode":
            return PostOnlyMode(message, **kw)
        if "cancel-only" in low:
            return CancelOnlyMode(message, **kw)
        return ServerError(message, **kw)
    if status >= 500:
        return ServerError(message, **kw)
    if status in (401, 403):
        return Unauthorized(message, **kw)
    if status == 404 or kind == "not found error":
        return NotFound(message, **kw)
    if status == 400 and classify_rejection(message) is RejectReason.INSUFFICIENT_BALANCE:
        return OrderRejected(message, **kw)
    if 400 <= status < 500:
        return BadRequest(message, **kw)
    return UnexpectedResponse(message, **kw)


def error_kind(error: BaseException) -> str:
    """A bounded label for an error (metrics, the kill switch): ``rate_limited``, ``transport``,
    ``server``, or the error's class name."""
    if isinstance(error, RateLimited):
        return "rate_limited"
    if isinstance(error, TransportError):
        return "transport"
    if isinstance(error, ServerError):
        return "server"
    return type(error).__name__.lower()[:40]
