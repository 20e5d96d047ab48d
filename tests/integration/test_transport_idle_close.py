"""A server that drops a kept-alive connection as a request arrives on it (its idle timeout
racing the client's reuse): a read and a heartbeat are sent once more on a fresh connection and
succeed; an order write is not resent. Idle connections expire in the client before a server's
idle timeout (uvicorn's, the local exchange's server) drops them."""

from __future__ import annotations

import asyncio

import pytest
import uvicorn

from bot.venue import connections
from bot.venue.errors import TransportError
from bot.venue.transport import Transport, TransportConfig

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

_OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class DropsSecondRequest:
    """Answers the first request of each connection (keep-alive) and closes the connection, with
    no answer, when a second request comes on it."""

    def __init__(self) -> None:
        self.requests = 0
        self.dropped = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                if length:
                    await reader.readexactly(length)
                self.requests += 1
                if answered:
                    self.dropped += 1
                    return
                writer.write(_OK)
                await writer.drain()
                answered += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def test_a_read_whose_kept_alive_connection_closes_unanswered_is_sent_once_more():
    server = DropsSecondRequest()
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=30)) as t:
        await t.request("GET", "/data/orders")
        response = await t.request("GET", "/data/orders")  # the pooled connection is dropped under it
        assert response.status_code == 200
        assert server.dropped == 1 and server.requests == 3


async def test_an_idempotent_write_is_sent_once_more_and_an_order_write_is_not():
    server = DropsSecondRequest()
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=30)) as t:
        await t.request("POST", "/v1/heartbeats", body=b"{}", write=True, idempotent=True)
        response = await t.request("POST", "/v1/heartbeats", body=b"{}", write=True, idempotent=True)
        assert response.status_code == 200 and server.dropped == 1
        with pytest.raises(TransportError, match="disconnected"):  # may have reached the venue: not resent
            await t.request("POST", "/orders", body=b"[]", write=True)
        assert server.dropped == 2 and server.requests == 4


class ClosesIdle:
    """Answers every request and closes a connection left idle for ``idle_s`` (a server's
    keep-alive timeout), counting the closes."""

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self.closed_idle = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_s)
                except asyncio.TimeoutError:
                    self.closed_idle += 1
                    return
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                if length:
                    await reader.readexactly(length)
                writer.write(_OK)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def test_a_connection_the_server_closed_while_idle_is_never_used_again_even_for_a_write(monkeypatch):
    looked_up: list[str] = []
    inner_info = connections._Stream.get_extra_info

    def counting(self, info):
        looked_up.append(info)
        return inner_info(self, info)

    server = ClosesIdle(idle_s=0.2)
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=30)) as t:
        for _ in range(20):  # one connection, reused: its socket is found once, not per check
            await t.request("GET", "/ok")
        sockets = [s for s in (getattr(c._connection, "_network_stream", None)
                               for c in t._client._transport._pool.connections) if s is not None]
        assert len(sockets) == 1 and sockets[0]._socket is not connections._UNSET
        deadline = asyncio.get_running_loop().time() + 10
        while server.closed_idle == 0:  # the server's idle timeout passes
            assert asyncio.get_running_loop().time() < deadline, "the server never closed the idle connection"
            await asyncio.sleep(0.02)
        monkeypatch.setattr(connections._Stream, "get_extra_info", counting)
        response = await t.request("POST", "/orders", body=b"[]", write=True)  # never resent: must not meet the closed one
        assert response.status_code == 200 and "is_readable" in looked_up


def test_idle_connections_expire_in_the_client_before_the_server_drops_them():
    server_idle_s = uvicorn.Config(app=None).timeout_keep_alive  # the local exchange's servers keep uvicorn's
    assert TransportConfig().keepalive_expiry < min(server_idle_s, 2.0)  # 2 s: gunicorn's default
