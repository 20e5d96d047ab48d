"""The HTTP client's connections: httpx's pooled transport, with a cheaper idle-connection check.

Before it reuses or keeps a connection, the pool asks every connection it holds whether the server
has closed it ("is the idle socket readable?"), on every request and every answer. Asked of an
anyio stream, that question rebuilds the stream's whole attribute table (a ``getpeername`` system
call) before the one ``poll`` that answers it: with dozens of connections open under a stream of
order writes, those calls were a tenth of the live loop's time. Here each stream finds its socket
once and answers with the ``poll`` alone.

Invariant: the pool sees the same answers (a server-closed idle connection is still found and
dropped before a request goes on it); only the cost of asking changes.
"""

from __future__ import annotations

import typing

import httpcore
import httpx
from httpcore._utils import is_socket_readable  # the pool's own readability test, reused as is

_UNSET: typing.Any = object()


class _Stream(httpcore.AsyncNetworkStream):
    """A network stream that finds its socket once."""

    __slots__ = ("_inner", "_socket")

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket = _UNSET

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":
            sock = self._socket
            if sock is _UNSET:
                sock = self._socket = self._inner.get_extra_info("socket")
            return is_socket_readable(sock)
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    """The pool's network backend, its streams wrapped in ``_Stream``."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def pooled_transport(limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's HTTP/1.1 transport with ``limits``, its pool's idle checks made cheap (a pool
    without the expected backend attribute, from another httpcore, is left as it is)."""
    transport = httpx.AsyncHTTPTransport(limits=limits)
    pool = transport._pool
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.AsyncNetworkBackend):
        pool._network_backend = _Backend(backend)
    return transport
