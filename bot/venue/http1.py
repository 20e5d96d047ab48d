"""HTTP/1.1 on kept-alive connections, without a general-purpose client's layers: a request's
bytes are formatted once and written to the socket the moment a connection is at hand, and the
answer is parsed by a small strict parser.

Invariants:

- one request at a time per connection; a connection is reused only after its previous answer
  was read whole and the server did not ask to close it, and only within ``keepalive_expiry``
  seconds of that answer (less than any plausible server idle timeout, so the client drops an
  idle connection first); one the server closed while idle is known closed at once (the event
  loop reports it) and never reused;
- ``on_written`` is called once the request's last byte has left for the socket (the kernel took
  it), before the answer is awaited;
- every failure is one of the typed errors below: a timeout names its phase (connect, pool,
  write, read), ``ClosedUnanswered`` says the connection closed before any byte of the answer
  came (the caller decides whether the request may go once more), anything malformed is a
  ``ProtocolError``; head and body sizes are bounded, so a server cannot make the client hold
  unbounded memory;
- the parser accepts what RFC 9112 allows a server to send (Content-Length, chunked, or a body
  to the connection's close; interim 1xx answers skipped) and refuses the rest, as ``h11`` does
  (``tests/property`` holds it to ``h11``'s reading).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import deque
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

__all__ = [
    "Answer", "ClosedUnanswered", "ConnectTimeout", "Http1Pool", "HttpError", "PoolTimeout", "ProtocolError",
    "Flight", "ReadTimeout", "ResponseParser", "WriteTimeout", "format_request",
]

MAX_HEAD_BYTES = 64 * 1024  # status line and headers of one answer
MAX_BODY_BYTES = 64 * 1024 * 1024  # one answer's body (the largest venue pages are a few MB)


class HttpError(Exception):
    """A request that did not complete."""


class ProtocolError(HttpError):
    """The server's bytes are not an HTTP/1.1 answer this client accepts."""


class ClosedUnanswered(HttpError):
    """The connection closed (or was reset) before any byte of the answer came."""


class ConnectTimeout(HttpError):
    """No connection within the connect timeout."""


class PoolTimeout(HttpError):
    """Every connection stayed busy for the pool timeout."""


class WriteTimeout(HttpError):
    """The request's bytes were not taken by the socket within the write timeout."""


class ReadTimeout(HttpError):
    """No whole answer within the read timeout."""


class Answer:
    """One HTTP answer: ``status_code``, ``headers`` (lower-case names; repeated ones joined with
    ``", "``), ``content`` (the body) and ``route`` (``"METHOD /path"`` of its request)."""

    __slots__ = ("status_code", "headers", "content", "keep_alive", "route")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes, keep_alive: bool,
                 route: str = "") -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self.keep_alive = keep_alive
        self.route = route

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def __repr__(self) -> str:
        return f"<Answer {self.status_code} {self.route}>"


# --- requests -------------------------------------------------------------------------------------

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\x21-\x7e\x80-\xff]([\x20-\x7e\x80-\xff\t]*[\x21-\x7e\x80-\xff])?|")
_TARGET = re.compile(r"/[\x21-\x7e]*")


def format_request(method: str, target: str, host: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
    """The bytes of one HTTP/1.1 request. A method, target, header name or value that could
    break the framing (a space in the target, CR or LF anywhere) is refused with ``ValueError``."""
    if not _TOKEN.fullmatch(method.encode("latin-1", "replace")):
        raise ValueError(f"not an HTTP method: {method!r}")
    if not _TARGET.fullmatch(target):
        raise ValueError(f"not an origin-form request target: {target!r}")
    lines = [f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n"]
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name.encode("latin-1", "replace")) or not _FIELD_VALUE.fullmatch(value):
            raise ValueError(f"header {name!r} cannot be sent as given")
        lines.append(f"{name}: {value}\r\n")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}\r\n\r\n")
        return "".join(lines).encode("latin-1") + body
    if method in ("POST", "PUT", "PATCH"):
        lines.append("Content-Length: 0\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("latin-1")


# --- answers --------------------------------------------------------------------------------------

_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [\x09\x20-\x7e\x80-\xff]*)?")
_HEADER = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*((?:[\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff\t]*"
                     rb"[\x21-\x7e\x80-\xff])?)?)[ \t]*")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[\x09\x20-\x7e\x80-\xff]*)?")
_DIGITS = re.compile(rb"[0-9]+")


class ResponseParser:
    """The answer to one request, from the bytes as they come (``feed``; ``eof`` when the
    connection ends). ``started`` is set by the first byte."""

    __slots__ = ("_buf", "_head_request", "started", "_status", "_headers", "_keep", "_length",
                 "_chunked", "_body", "_stage")

    def __init__(self, head_request: bool = False) -> None:
        self._buf = b""
        self._head_request = head_request
        self.started = False
        self._status = 0
        self._headers: dict[str, str] = {}
        self._keep = True
        self._length = -1  # body bytes left to read (Content-Length framing); -1: not that framing
        self._chunked = False
        self._body: list[bytes] = []
        self._stage = "head"  # head, body, chunk-size, chunk-data, chunk-end, trailers, close, done

    def feed(self, data: bytes) -> Answer | None:
        """Take ``data``; the answer once it is whole, else None. Raises ``ProtocolError``."""
        if data:
            self.started = True
        if self._stage == "done":
            if data:
                raise ProtocolError("bytes after the answer, none asked for")
            return None
        self._buf += data
        while True:
            stage = self._stage
            if stage == "head":
                end = self._buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buf) > MAX_HEAD_BYTES:
                        raise ProtocolError("answer head too large")
                    return None
                if end > MAX_HEAD_BYTES:
                    raise ProtocolError("answer head too large")
                head, self._buf = self._buf[:end], self._buf[end + 4:]
                if self._head(head):
                    continue  # an interim 1xx answer: the real one follows
            elif stage == "body":
                if self._take_body():
                    return None
                self._stage = "done"
            elif stage == "chunk-size":
                end = self._buf.find(b"\r\n")
                if end < 0:
                    if len(self._buf) > 1024:
                        raise ProtocolError("chunk size line too long")
                    return None
                m = _CHUNK_SIZE.fullmatch(self._buf[:end])
                if m is None:
                    raise ProtocolError("malformed chunk size")
                self._buf = self._buf[end + 2:]
                self._length = int(m.group(1), 16)
                self._stage = "chunk-data" if self._length else "trailers"
                self._check_size(self._length)
            elif stage == "chunk-data":
                if self._take_body():
                    return None
                self._stage = "chunk-end"
            elif stage == "chunk-end":
                if len(self._buf) < 2:
                    return None
                if self._buf[:2] != b"\r\n":
                    raise ProtocolError("chunk not followed by CRLF")
                self._buf = self._buf[2:]
                self._stage = "chunk-size"
            elif stage == "trailers":
                if self._buf.startswith(b"\r\n"):
                    self._buf = self._buf[2:]
                    self._stage = "done"
                    continue
                end = self._buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buf) > MAX_HEAD_BYTES:
                        raise ProtocolError("trailers too large")
                    return None
                for line in self._buf[:end].split(b"\r\n"):
                    if _HEADER.fullmatch(line) is None:
                        raise ProtocolError("malformed trailer")
                self._buf = self._buf[end + 4:]
                self._stage = "done"
            elif stage == "close":
                self._body.append(self._buf)
                self._buf = b""
                self._check_size(0)
                return None
            if self._stage == "done":
                if self._buf:
                    raise ProtocolError("bytes after the answer, none asked for")
                return self._answer()

    def eof(self) -> Answer:
        """The connection ended: the answer, if it was read to the close; else ``ClosedUnanswered``
        (no byte came) or ``ProtocolError`` (cut short)."""
        if self._stage == "close":
            self._stage = "done"
            return self._answer()
        if not self.started:
            raise ClosedUnanswered("the server closed the connection without an answer")
        raise ProtocolError("the server closed the connection in the middle of its answer")

    def _take_body(self) -> int:
        """Move up to ``_length`` buffered bytes to the body; the bytes still to come."""
        take = self._buf[:self._length]
        self._buf = self._buf[len(take):]
        self._body.append(take)
        self._length -= len(take)
        return self._length

    def _check_size(self, more: int) -> None:
        if sum(map(len, self._body)) + more > MAX_BODY_BYTES:
            raise ProtocolError("answer body too large")

    def _head(self, head: bytes) -> bool:
        """Read a head; True when it was an interim answer (1xx) to skip."""
        lines = head.split(b"\r\n")
        m = _STATUS.fullmatch(lines[0])
        if m is None:
            raise ProtocolError("malformed status line")
        status = int(m.group(2))
        headers: dict[str, str] = {}
        lengths: set[bytes] = set()
        te: list[str] = []
        for line in lines[1:]:
            h = _HEADER.fullmatch(line)
            if h is None:
                raise ProtocolError("malformed header line")
            name = h.group(1).decode("ascii").lower()
            value = h.group(2).decode("latin-1")
            if name == "content-length":
                for part in h.group(2).split(b","):
                    part = part.strip(b" \t")
                    if _DIGITS.fullmatch(part) is None:
                        raise ProtocolError("malformed Content-Length")
                    lengths.add(part.lstrip(b"0") or b"0")
            elif name == "transfer-encoding":
                te += [p.strip(" \t").lower() for p in value.split(",")]
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if 100 <= status < 200:
            if status == 101:
                raise ProtocolError("unexpected protocol switch")
            return True
        if status < 100:
            raise ProtocolError("malformed status code")
        keep = m.group(1) == b"1" and "close" not in [p.strip(" \t").lower()
                                                     for p in headers.get("connection", "").split(",")]
        self._status, self._headers, self._keep = status, headers, keep
        if len(lengths) > 1:
            raise ProtocolError("conflicting Content-Length")
        if self._head_request or status in (204, 304):
            self._stage = "done"
        elif te:
            if te != ["chunked"]:
                raise ProtocolError("unsupported Transfer-Encoding")
            self._chunked = True
            self._stage = "chunk-size"
        elif lengths:
            self._length = int(lengths.pop())
            self._check_size(self._length)
            self._stage = "body" if self._length else "done"
        else:
            self._keep = False  # the body runs to the connection's end
            self._stage = "close"
        return False

    def _answer(self) -> Answer:
        return Answer(self._status, self._headers, b"".join(self._body), self._keep)


# --- connections ----------------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """One socket: one request in flight at most, its answer parsed as the bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser: ResponseParser | None = None
        self._answer: asyncio.Future[Answer] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._paused = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=0)  # type: ignore[attr-defined]  # pause on any byte left

    def data_received(self, data: bytes) -> None:
        parser, answer = self._parser, self._answer
        if parser is None or answer is None or answer.done():
            self.close()  # bytes nobody asked for: the connection's framing cannot be trusted
            return
        try:
            got = parser.feed(data)
        except HttpError as exc:
            answer.set_exception(exc)
            self.close()
            return
        if got is not None:
            self._parser = None
            answer.set_result(got)

    def eof_received(self) -> bool:
        self._end(None)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- use
    def _end(self, exc: Exception | None) -> None:
        self.closed = True
        parser, answer = self._parser, self._answer
        self._parser = None
        if answer is not None and not answer.done() and parser is not None:
            try:
                answer.set_result(parser.eof())
            except HttpError as err:
                if exc is not None and not isinstance(err, ClosedUnanswered):
                    err = ProtocolError(f"{err} ({type(exc).__name__})")
                answer.set_exception(err)
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(ClosedUnanswered("the connection closed while the request was written"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def send(self, data: bytes, head_request: bool) -> asyncio.Future[Answer]:
        """Write ``data`` now (the socket takes what it can at once); the answer's future."""
        loop = asyncio.get_running_loop()
        self._parser = ResponseParser(head_request)
        self._answer = loop.create_future()
        self._answer.add_done_callback(_consume)  # a failure nobody awaits is not "never retrieved"
        self.transport.write(data)  # type: ignore[union-attr]
        return self._answer

    async def drained(self) -> None:
        """Until the socket has taken every byte written (the write buffer's high-water mark is
        0, so any byte left waiting pauses writing, and its drain resumes it)."""
        while self._paused:
            if self.closed:
                raise ClosedUnanswered("the connection closed while the request was written")
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained


def _expire(answer: asyncio.Future, seconds: float) -> None:
    if not answer.done():
        answer.set_exception(ReadTimeout(f"no answer within {seconds:g} s"))


def _consume(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


class Flight:
    """A request written on a connection, its answer to come (``Http1Pool.start``)."""

    __slots__ = ("conn", "answer", "written", "started")

    def __init__(self, conn: _Connection, answer: asyncio.Future[Answer], written: bool, started: float) -> None:
        self.conn = conn
        self.answer = answer
        self.written = written  # the socket took every byte at once (``on_written`` was called)
        self.started = started  # perf counter when it was written


class Http1Pool:
    """Kept-alive HTTP/1.1 connections to one origin (``http://`` or ``https://``), at most
    ``max_connections`` requests at once; see the module invariants."""

    def __init__(self, base_url: str, *, connect: float, read: float, write: float, pool: float,
                 keepalive_expiry: float, max_connections: int,
                 default_headers: Mapping[str, str] = (), ssl_context: ssl.SSLContext | None = None,  # type: ignore[assignment]
                 clock: Callable[[], float] = time.monotonic) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.host_header = parts.netloc.rpartition("@")[2]
        self.prefix = parts.path.rstrip("/")
        self._ssl: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self._ssl = ssl_context or _tls_context()
        self.timeouts = (connect, read, write, pool)
        self.keepalive_expiry = keepalive_expiry
        self.default_headers = dict(default_headers)
        self._idle: list[_Connection] = []
        self._max = max_connections
        self._in_use = 0  # requests holding a connection (or about to)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._clock = clock
        self._closed = False

    def start(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None,
              on_written: Callable[[], None] | None = None) -> Flight | None:
        """Write the request now, without suspending, when a kept-alive connection is idle and the
        pool has room (``on_written`` is called at once if the socket took every byte); None
        when not (then ``request`` sends it). Its answer: ``finish``."""
        if self._closed or self._in_use >= self._max or not self._idle:
            return None
        data = self._format(method, target, headers, body)
        conn = self._take_idle()
        if conn is None:
            return None
        self._in_use += 1
        return self._send(conn, data, method, on_written)

    async def request(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None,
                      on_written: Callable[[], None] | None = None) -> Answer:
        """Send one request (``target``: the path and query under the base URL) and read its
        answer; raises one of the module's errors."""
        data = self._format(method, target, headers, body)
        await self._slot()
        try:
            conn = self._take_idle() or await self._connect(self.timeouts[0])
        except BaseException:
            self._release()
            raise
        return await self.finish(self._send(conn, data, method, on_written), on_written)

    async def finish(self, flight: Flight, on_written: Callable[[], None] | None = None) -> Answer:
        """The answer of a request written (``start``); the connection back to the idle ones when
        the answer leaves it reusable, closed otherwise."""
        conn: _Connection | None = flight.conn
        _, read, write, _ = self.timeouts
        try:
            if not flight.written:
                try:
                    await asyncio.wait_for(conn.drained(), write)  # type: ignore[union-attr]
                except (asyncio.TimeoutError, TimeoutError):
                    raise WriteTimeout(f"request not written within {write:g} s") from None
                if on_written is not None:
                    on_written()
            expiry = asyncio.get_running_loop().call_later(read, _expire, flight.answer, read)
            try:
                got = await flight.answer
            finally:
                expiry.cancel()
            if got.keep_alive and not conn.closed and not self._closed:  # type: ignore[union-attr]
                conn.idle_since = self._clock()  # type: ignore[union-attr]
                self._idle.append(conn)  # type: ignore[arg-type]
            else:
                conn.close()  # type: ignore[union-attr]
            conn = None
            return got
        finally:
            if conn is not None:  # failed or cancelled mid-request: its framing is lost
                conn.abort()
            self._release()

    def _format(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        return format_request(method, self.prefix + target, self.host_header, {**self.default_headers, **headers},
                              body)

    def _send(self, conn: _Connection, data: bytes, method: str, on_written: Callable[[], None] | None) -> Flight:
        answer = conn.send(data, method == "HEAD")
        written = not conn._paused
        if written and on_written is not None:
            on_written()
        return Flight(conn, answer, written, time.perf_counter())

    async def _slot(self) -> None:
        """Room for one more request, waited for at most the pool timeout."""
        if self._in_use < self._max and not self._waiters:
            self._in_use += 1
            return
        pool = self.timeouts[3]
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, pool)
        except (asyncio.TimeoutError, TimeoutError):
            raise PoolTimeout(f"no free connection within {pool:g} s") from None
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release()  # it was handed the room as it was cancelled: pass it on
            raise

    def _release(self) -> None:
        """One request done: its room to the first waiter, if any (the count stays), else freed."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._in_use -= 1

    def _take_idle(self) -> _Connection | None:
        """The most recently used idle connection still open and not expired (older ones closed)."""
        now = self._clock()
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.keepalive_expiry:
                return conn
            conn.close()
        return None

    async def _connect(self, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Connection, self.host, self.port, ssl=self._ssl,
                                       server_hostname=self.host if self._ssl is not None else None),
                timeout)
        except (asyncio.TimeoutError, TimeoutError):
            raise ConnectTimeout(f"no connection to {self.host}:{self.port} within {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {type(exc).__name__}: {exc}") from None
        return conn

    async def keep_warm(self, count: int, interval: float = 0.1) -> None:
        """Keep ``count`` kept-alive connections idle and ready (opened ahead, an idle one
        closed a little before it would expire and replaced), so a request is written at once
        (``start``) instead of waiting for a connection; runs until the pool closes. A failed
        connect is tried again at the next round."""
        connect = self.timeouts[0]
        while not self._closed:
            horizon = self._clock() - (self.keepalive_expiry - 2 * interval)
            for conn in [c for c in self._idle if c.closed or c.idle_since <= horizon]:
                self._idle.remove(conn)
                conn.close()
            while len(self._idle) < count and len(self._idle) + self._in_use < self._max and not self._closed:
                try:
                    conn = await self._connect(connect)
                except HttpError:
                    break
                if self._closed:
                    conn.close()
                    break
                conn.idle_since = self._clock()
                self._idle.insert(0, conn)  # behind the ones in use lately (``_take_idle`` takes the last)
            await asyncio.sleep(interval)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _tls_context() -> ssl.SSLContext:
    """The system's trust store, certificates and host names verified, HTTP/1.1 offered."""
    ctx = ssl.create_default_context()
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
