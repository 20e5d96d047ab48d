"""The shared HTTP layer: one pooled ``httpx.AsyncClient`` per surface base URL.

Invariant: every request leaves through :meth:`Transport.request`, which (1) waits for the
surface's client-side limits when a limiter is given (a caller waits, it is never refused, and the
wait is recorded), (2) encodes the query exactly as the official client does (``urlencode``:
``MA==`` -> ``MA%3D%3D``), (3) stamps auth headers per attempt over the path without query and the
exact body bytes, (4) turns every non-2xx answer or network failure into a typed
:class:`~bot.venue.errors.VenueError`, and (5) retries a READ only after a 429 whose wait is at
most ``max_retry_wait`` seconds, at most ``max_read_retries`` times, and (6) sends an idempotent
request (a read, or a write the venue's rules make safe to repeat) once more when its connection
closed before any byte of the answer came: a pooled connection the server dropped as idle. Other
writes are never retried. Idle connections are kept ``keepalive_expiry`` seconds, less than any
plausible server idle timeout (uvicorn 5 s, gunicorn 2 s), so the client drops one first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Annotated
from urllib.parse import urlencode

import anyio
import httpx
import msgspec

from bot.venue import http1
from bot.venue.connections import pooled_transport
from bot.venue.errors import (
    RateLimited,
    TransportError,
    TransportTimeout,
    UnexpectedResponse,
    VenueError,
    error_from_response,
)
from bot.venue.limits import RouteLimiter, route_label

__all__ = ["TransportConfig", "RateLimitInfo", "Transport", "encode_query", "read_rate_limit", "decode_body"]

QueryValue = str | int | float | bool | None
HeaderFactory = Callable[[str, str, bytes | None], Mapping[str, str]]
"""``auth(method, path_without_query, body) -> headers``, called once per attempt."""



_Timeout = Annotated[float, msgspec.Meta(gt=0, le=3600)]  # seconds: a wait of 0 or less never succeeds


class TransportConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Timeouts (venue.md 10.2), keep-alive and the read-retry rule for 429s; every number has
    a declared range, so a config file cannot ask for a timeout that can never be met."""

    connect: _Timeout = 5.0
    read: _Timeout = 10.0
    write: _Timeout = 10.0
    pool: _Timeout = 2.0
    # below every common server's idle timeout: a connection is dropped here before the server
    # drops it under a request (which would then fail with "Server disconnected")
    keepalive_expiry: Annotated[float, msgspec.Meta(ge=0, le=3600)] = 1.5
    max_connections: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100
    max_read_retries: Annotated[int, msgspec.Meta(ge=0, le=100)] = 2
    max_retry_wait: Annotated[float, msgspec.Meta(ge=0, le=3600)] = 5.0
    user_agent: str = "pmbot"


class RateLimitInfo(msgspec.Struct, frozen=True):
    """The advisory ``Service-RateLimit-*`` / ``Poly-RateLimit-*`` headers of the last answer."""

    route: str
    remaining: int | None = None
    reset: int | None = None
    tier: str | None = None
    warning: bool = False


def _query_text(value: QueryValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def encode_query(params: Mapping[str, QueryValue] | Iterable[tuple[str, QueryValue]] | None) -> str:
    """``k=v&...`` in the given order, ``None`` values dropped, booleans ``true``/``false``,
    reserved characters percent-encoded (``=`` -> ``%3D``, ``,`` -> ``%2C``)."""
    if not params:
        return ""
    items = params.items() if isinstance(params, Mapping) else params
    return urlencode([(k, _query_text(v)) for k, v in items if v is not None])


def _int_header(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def read_rate_limit(route: str, headers: Mapping[str, str]) -> RateLimitInfo | None:
    """The advisory rate-limit headers, under either spelling; None when none are present."""
    found: dict[str, str] = {}
    for prefix in ("service-ratelimit-", "poly-ratelimit-"):
        for key in ("remaining", "reset", "tier", "warning"):
            value = headers.get(prefix + key)
            if value is not None and key not in found:
                found[key] = value
    if not found:
        return None
    return RateLimitInfo(
        route=route,
        remaining=_int_header(found.get("remaining")),
        reset=_int_header(found.get("reset")),
        tier=found.get("tier"),
        warning=found.get("warning", "").strip().lower() == "true",
    )


class Transport:
    """One surface's HTTP client. Use as an async context manager or call :meth:`aclose`."""

    def __init__(
        self,
        base_url: str,
        *,
        limiter: RouteLimiter | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        config: TransportConfig | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        wall_clock: Callable[[], float] | None = None,
        redact: Sequence[str] = (),
        on_rate_limit: Callable[[RateLimitInfo], None] | None = None,
        direct: bool = False,
    ) -> None:
        """``transport``: an httpx transport to send through (tests inject one); ``direct``
        (without one): requests written straight to kept-alive connections (``bot.venue.http1``)
        instead of through httpx, for the trading writes whose latency counts."""
        self.config = config or TransportConfig()
        self.base_url = base_url.rstrip("/")
        self.limiter = limiter
        self._sleep = sleep or anyio.sleep
        self._wall_clock = wall_clock
        self._redact = tuple(redact)
        self.on_rate_limit = on_rate_limit
        #: The last advisory rate-limit reading, if the venue sent one.
        self.rate_limit: RateLimitInfo | None = None
        #: Automatic read retries done after a 429, for metrics.
        self.retries = 0
        #: Called as ``on_response(route, status, seconds)`` after every exchange with the
        #: venue; ``status`` is 0 when no response came (timeout, connection error).
        self.on_response: Callable[[str, int, float], None] | None = None
        c = self.config
        limits = httpx.Limits(
            max_connections=c.max_connections,
            max_keepalive_connections=c.max_connections,
            keepalive_expiry=c.keepalive_expiry,
        )
        self._pool: http1.Http1Pool | None = None
        if direct and transport is None:
            self._pool = http1.Http1Pool(
                self.base_url, connect=c.connect, read=c.read, write=c.write, pool=c.pool,
                keepalive_expiry=c.keepalive_expiry, max_connections=c.max_connections,
                default_headers={"User-Agent": c.user_agent, "Accept": "*/*"})
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            transport=transport if transport is not None else pooled_transport(limits),
            timeout=httpx.Timeout(connect=c.connect, read=c.read, write=c.write, pool=c.pool),
            limits=limits,
            headers={"User-Agent": c.user_agent, "Accept": "*/*"},
            follow_redirects=False,
        )

    def add_redaction(self, *values: str) -> None:
        """Mask these strings (e.g. a passphrase) in every error text from now on."""
        self._redact = self._redact + tuple(v for v in values if v)

    async def __aenter__(self) -> "Transport":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
        await self._client.aclose()

    def _observe(self, route: str, status: int, started: float) -> None:
        if self.on_response is not None:
            self.on_response(route_label(route), status, time.perf_counter() - started)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, QueryValue] | Iterable[tuple[str, QueryValue]] | None = None,
        body: bytes | None = None,
        auth: HeaderFactory | None = None,
        write: bool = False,
        items: int = 1,
        on_written: Callable[[], None] | None = None,
        idempotent: bool | None = None,
        flight: http1.Flight | None = None,
    ) -> httpx.Response | http1.Answer:
        """Send one request and return its 2xx response, or raise a typed ``VenueError``.

        ``write`` marks a request whose repetition could act twice (never retried); ``items``
        is the number of orders or ids it carries, charged to per-item scopes; ``on_written`` is
        called the moment the request's last byte has been written to the connection;
        ``idempotent`` (default: not ``write``) allows one resend on a connection closed before
        any byte of the answer; ``flight``: the request already written by :meth:`start` (its
        answer is awaited instead of a first send).
        """
        resend_closed = (not write) if idempotent is None else idempotent
        method = method.upper()
        query = encode_query(params)
        url = f"{path}?{query}" if query else path
        route = f"{method} {path}"
        attempt = 0
        while True:
            if flight is None:
                if self.limiter is not None:
                    await self.limiter.acquire(method, path, items)
                headers = _headers(method, path, body, auth)
                started = time.perf_counter()
            else:
                started = flight.started
            try:
                if flight is not None:
                    response, flight = await self._pool.finish(flight, on_written), None  # type: ignore[union-attr]
                    response.route = route
                elif self._pool is not None:
                    response = await self._pool.request(method, url, headers, body, on_written)
                    response.route = route
                elif on_written is None:
                    response = await self._client.request(method, url, content=body, headers=headers)
                else:
                    response = await self._client.request(method, url, content=body, headers=headers,
                                                          extensions={"trace": _written_trace(on_written)})
            except _TIMEOUTS as exc:
                self._observe(route, 0, started)
                raise TransportTimeout(f"timeout ({type(exc).__name__})", route=route, base_url=self.base_url) from None
            except _CLOSED_UNANSWERED as exc:
                self._observe(route, 0, started)
                if resend_closed:
                    resend_closed = False  # once: a second close is not an idle connection's
                    continue
                raise TransportError(f"{type(exc).__name__}: {exc}", route=route, base_url=self.base_url) from None
            except (httpx.HTTPError, http1.HttpError, ValueError) as exc:
                self._observe(route, 0, started)
                raise TransportError(f"{type(exc).__name__}: {exc}", route=route, base_url=self.base_url) from None
            self._observe(route, response.status_code, started)
            info = read_rate_limit(route, response.headers)
            if info is not None:
                self.rate_limit = info
                if self.on_rate_limit is not None:
                    self.on_rate_limit(info)
            if response.is_success:
                return response
            now = self._wall_clock() if self._wall_clock is not None else None
            error = error_from_response(
                response.status_code, response.headers, response.content, route=route, redact=self._redact, now=now
            )
            if self._should_retry(error, write, attempt):
                attempt += 1
                self.retries += 1
                await self._sleep(error.retry_after)  # type: ignore[union-attr]
                continue
            raise error

    def start(self, method: str, path: str, *, body: bytes | None = None, auth: HeaderFactory | None = None,
              on_written: Callable[[], None] | None = None) -> http1.Flight | None:
        """Write the request at once, without suspending, when this is a direct client without a
        limiter and a kept-alive connection is free (``on_written`` called as the socket takes
        it); ``None`` otherwise. Either way :meth:`request` (given the flight) gives the answer,
        typed as ever: the caller's task can start after the request has left."""
        if self._pool is None or self.limiter is not None:
            return None
        method = method.upper()
        try:
            return self._pool.start(method, path, _headers(method, path, body, auth), body, on_written)
        except ValueError:
            return None  # ``request`` reports it

    async def keep_warm(self, count: int) -> None:
        """A direct client: keep ``count`` connections open and ready (``Http1Pool.keep_warm``)
        until it closes; any other client: nothing to do."""
        if self._pool is not None:
            await self._pool.keep_warm(count)

    def _should_retry(self, error: VenueError, write: bool, attempt: int) -> bool:
        """Reads only, 429 only, a stated wait within ``max_retry_wait``, limited attempts."""
        if write or not isinstance(error, RateLimited) or error.retry_after is None:
            return False
        if not math.isfinite(error.retry_after) or error.retry_after > self.config.max_retry_wait:
            return False
        return attempt < self.config.max_read_retries


def _headers(method: str, path: str, body: bytes | None, auth: HeaderFactory | None) -> dict[str, str]:
    """A request's own headers: the body's type, and the auth headers stamped now."""
    headers: dict[str, str] = {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if auth is not None:
        headers.update(auth(method, path, body))
    return headers


# the connection failed before an answer was read (httpx raises these before any response object):
# closed by the server ("Server disconnected without sending a response"), reset, or unwritable
_CLOSED_UNANSWERED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, http1.ClosedUnanswered)
_TIMEOUTS = (httpx.TimeoutException, http1.ConnectTimeout, http1.PoolTimeout, http1.WriteTimeout, http1.ReadTimeout)

_BODY_WRITTEN = frozenset({"http11.send_request_body.complete", "http2.send_request_body.complete"})


def _written_trace(on_written: Callable[[], None]) -> Callable[[str, dict], Awaitable[None]]:
    """An httpcore ``trace`` extension calling ``on_written`` once the request body is written."""

    async def trace(event: str, info: dict) -> None:
        if event in _BODY_WRITTEN:
            on_written()

    return trace


def decode_body(response: httpx.Response | http1.Answer, model: object) -> object:
    """``response``'s JSON as ``model``; a mismatch is an :class:`UnexpectedResponse`."""
    from bot.venue.models import DecodeError, decode

    try:
        return decode(response.content, model)
    except DecodeError as exc:
        route = response.route if isinstance(response, http1.Answer) else \
            f"{response.request.method} {response.request.url.path}"
        raise UnexpectedResponse(str(exc), status=response.status_code, route=route) from None
