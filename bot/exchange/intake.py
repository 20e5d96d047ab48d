"""How the exchange's servers take HTTP requests in: uvicorn's h11 protocol with the request head bounded.

Invariant: a connection waiting for a request head (a new one, or a keep-alive one between
requests) holds at most ``max_head_bytes`` of it, for at most ``head_timeout_s``; of the connections
waiting so, at most ``waiting_per_client`` per client IP and ``waiting_total`` in all stay open (the
total also below half the open-file limit): a newcomer closes the one waiting longest, so a crowd of
slow or silent connections never starves a client that sends its request at once. A head with more
than ``max_headers`` fields or ``max_head_bytes`` bytes is refused before any route sees it. Every
refusal is the venue's error body (JSON: ``{"error"}``, or ``{"type", "error"}`` on the catalog
surface) with ``Connection: close``; a head refused while it may still be coming (too large,
malformed) is drained for up to ``LINGER_S`` (``MAX_LINGERING`` connections at most) so the client
reads the answer instead of a reset.
"""

from __future__ import annotations

import asyncio
import functools
import resource
from collections.abc import Callable
from typing import Any

import h11
import msgspec
from uvicorn.protocols.http.h11_impl import H11Protocol

LINGER_S = 2.0  # how long a refused connection drains the client's bytes before it is closed
MAX_LINGERING = 64  # refused connections draining at once (per server)
_PHRASES = {400: "Bad Request", 408: "Request Timeout", 429: "Too Many Requests",
            431: "Request Header Fields Too Large"}
_CATALOG_KINDS = {400: "bad request", 408: "bad request", 431: "bad request"}
_enc = msgspec.json.Encoder()


class HeadLimits(msgspec.Struct, frozen=True):
    """The bounds on request heads and on the connections waiting for one."""

    head_timeout_s: float = 10.0
    max_head_bytes: int = 16 * 1024
    max_headers: int = 100
    waiting_per_client: int = 256
    waiting_total: int = 1024

    def total_cap(self) -> int:
        """``waiting_total``, kept below half the process's open-file limit (room for live connections)."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return self.waiting_total if soft == resource.RLIM_INFINITY else max(1, min(self.waiting_total, soft // 2))


def error_body(status: int, text: str, catalog: bool) -> bytes:
    """The venue's error body for ``status``: the catalog's ``{type, error}``, else ``{error}``."""
    return _enc.encode({"type": _CATALOG_KINDS[status], "error": text} if catalog else {"error": text})


def raw_answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 answer with a JSON ``body`` that closes the connection (written before, or
    instead of, reading a request)."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"HTTP/1.1 {status} {_PHRASES[status]}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n").encode() + body


class Waiting:
    """The connections waiting for a request head, oldest first, per client and in all."""

    def __init__(self, limits: HeadLimits) -> None:
        self.limits = limits
        self.total_cap = limits.total_cap()
        self.all: dict[IntakeProtocol, None] = {}
        self.by_client: dict[str, dict[IntakeProtocol, None]] = {}
        self.evicted = 0  # connections closed to make room, for audits
        self.lingering = 0  # refused connections draining the client's bytes before they close

    def add(self, conn: "IntakeProtocol") -> None:
        """``conn`` waits now (the newest); the longest waiting ones over a cap are closed."""
        mine = self.by_client.setdefault(conn.ip, {})
        mine[conn] = None
        self.all[conn] = None
        while len(mine) > self.limits.waiting_per_client:
            self._evict(next(iter(mine)))
        while len(self.all) > self.total_cap:
            self._evict(next(iter(self.all)))

    def remove(self, conn: "IntakeProtocol") -> None:
        if conn not in self.all:
            return
        del self.all[conn]
        mine = self.by_client.get(conn.ip)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self.by_client[conn.ip]

    def _evict(self, conn: "IntakeProtocol") -> None:
        self.remove(conn)
        self.evicted += 1
        conn.give_up("request timeout: too many connections waiting to send a request")

    def __len__(self) -> int:
        return len(self.all)


class IntakeProtocol(H11Protocol):
    """uvicorn's h11 protocol, with the bounds of the module docstring on every request head."""

    def __init__(self, *args: Any, waiting: Waiting, catalog: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.waiting = waiting
        self.catalog = catalog
        self.ip = "?"
        self._head_timer: asyncio.TimerHandle | None = None
        self._lingering = False

    # a connection waits for a head from when it is made, and again after each answer
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.ip = self.client[0] if self.client else "?"
        self._await_head()

    def _await_head(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.waiting.limits.head_timeout_s, self._head_timed_out)
        self.waiting.add(self)

    def _got_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.waiting.remove(self)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # refused: what still comes is drained, unread
        super().data_received(data)
        if self._head_timer is not None and (self.conn.their_state is not h11.IDLE
                                             or self.transport.get_protocol() is not self):
            self._got_head()  # a request (or a WebSocket upgrade, now another protocol's) is under way

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE and not self._lingering:
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._got_head()
        if self._lingering:
            self._lingering = False
            self.waiting.lingering -= 1
        super().connection_lost(exc)

    def eof_received(self) -> bool | None:
        if self._lingering:
            self.transport.close()
        return None

    # refusals
    def send_400_response(self, msg: str) -> None:
        """A head h11 cannot take: too long (431) or malformed (400), in the venue's words."""
        buffered = len(self.conn.trailing_data[0])
        limit = self.waiting.limits.max_head_bytes
        if buffered > limit:
            self.refuse(431, f"request header fields too large (max {limit} bytes)")
        else:
            self.refuse(400, "bad request: malformed HTTP request")

    def _head_timed_out(self) -> None:
        self._head_timer = None
        self.give_up(f"request timeout: no complete request head within {self.waiting.limits.head_timeout_s:g} s")

    def give_up(self, text: str) -> None:
        """Close a connection that sent no (complete) head: 408 when it sent part of one, else quietly
        (as a keep-alive connection that stays idle is closed)."""
        self._got_head()
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
            self.transport.close()
        else:
            self.refuse(408, text, linger=False)

    def refuse(self, status: int, text: str, linger: bool = True) -> None:
        """Answer ``status`` with the venue's error body and close; with ``linger`` (a client that may
        still be sending its head), drain it first for up to ``LINGER_S`` (at most ``MAX_LINGERING``
        connections at once: beyond that, closed at once)."""
        self._got_head()
        if self.transport.is_closing():
            return
        self.transport.write(raw_answer(status, error_body(status, text, self.catalog)))
        self._unset_keepalive_if_required()
        waiting = self.waiting
        if not linger or waiting.lingering >= MAX_LINGERING or not self.transport.can_write_eof():
            self.transport.close()
            return
        self._lingering = True
        waiting.lingering += 1
        self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)
        self.transport.resume_reading()


def protocol_factory(limits: HeadLimits, catalog: bool = False) -> Callable[..., IntakeProtocol]:
    """The ``http`` protocol class for ``uvicorn.Config``: one ``Waiting`` shared by a server's connections."""
    return functools.partial(IntakeProtocol, waiting=Waiting(limits), catalog=catalog)


class HeadCheck:
    """ASGI guard: a head h11 took whole but over ``max_headers`` fields or ``max_head_bytes`` bytes
    is answered 431 (a WebSocket handshake is refused) before the app sees it."""

    def __init__(self, app: Any, limits: HeadLimits, catalog: bool = False) -> None:
        self.app, self.limits, self.catalog = app, limits, catalog

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        headers = scope.get("headers")
        if headers is not None and scope["type"] in ("http", "websocket"):
            over = self._over(scope, headers)
            if over:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008, "reason": over})
                    return
                body = error_body(431, over, self.catalog)
                await send({"type": "http.response.start", "status": 431, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def _over(self, scope: dict, headers: list) -> str:
        lim = self.limits
        if len(headers) > lim.max_headers:
            return f"request header fields too large (max {lim.max_headers} fields)"
        size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        size += sum(len(k) + len(v) + 4 for k, v in headers)
        if size > lim.max_head_bytes:
            return f"request header fields too large (max {lim.max_head_bytes} bytes)"
        return ""
