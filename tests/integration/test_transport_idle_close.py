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


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> None:
    """Read the body a request's ``head`` announces (its Content-Length)."""
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    if length:
        await reader.readexactly(length)


class LocalServer:
    """A plain HTTP/1.1 server on a free loopback port for one test (``async with``: its URL);
    subclasses answer connections in ``_serve``."""

    server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


class DropsSecondRequest(LocalServer):
    """Answers the first request of each connection (keep-alive) and closes the connection, with
    no answer, when a second request comes on it."""

    def __init__(self) -> None:
        self.requests = 0
        self.dropped = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await _read_body(reader, head)
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


class ClosesIdle(LocalServer):
    """Answers every request and closes a connection left idle for ``idle_s`` (a server's
    keep-alive timeout; None: never), counting the closes."""

    def __init__(self, idle_s: float | None) -> None:
        self.idle_s = idle_s
        self.closed_idle = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_s)
                except asyncio.TimeoutError:
                    self.closed_idle += 1
                    return
                await _read_body(reader, head)
                writer.write(_OK)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


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
        # the server's idle timeout passes, and its close reaches our end of the socket
        while server.closed_idle == 0 or not connections.is_socket_readable(sockets[0]._socket):
            assert asyncio.get_running_loop().time() < deadline, "the server never closed the idle connection"
            await asyncio.sleep(0.02)
        monkeypatch.setattr(connections._Stream, "get_extra_info", counting)
        response = await t.request("POST", "/orders", body=b"[]", write=True)  # never resent: must not meet the closed one
        assert response.status_code == 200 and "is_readable" in looked_up


def test_idle_connections_expire_in_the_client_before_the_server_drops_them():
    server_idle_s = uvicorn.Config(app=None).timeout_keep_alive  # the local exchange's servers keep uvicorn's
    assert TransportConfig().keepalive_expiry < min(server_idle_s, 2.0)  # 2 s: gunicorn's default


# --- the direct client of the trading writes (``bot.venue.http1``) --------------------------------


async def test_direct_a_read_and_an_idempotent_write_are_sent_once_more_and_an_order_write_is_not():
    server = DropsSecondRequest()
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=30), direct=True) as t:
        await t.request("GET", "/data/orders")
        assert (await t.request("GET", "/data/orders")).status_code == 200  # dropped under it, sent again
        assert server.dropped == 1 and server.requests == 3
        assert (await t.request("POST", "/v1/heartbeats", body=b"{}", write=True, idempotent=True)).status_code == 200
        assert server.dropped == 2 and server.requests == 5
        with pytest.raises(TransportError, match="ClosedUnanswered") as caught:  # may have reached the venue
            await t.request("POST", "/orders", body=b"[]", write=True)
        assert caught.value.outcome_unknown
        assert server.dropped == 3 and server.requests == 6


async def test_direct_a_connection_the_server_closed_while_idle_is_never_used_again_even_for_a_write():
    server = ClosesIdle(idle_s=0.2)
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=30), direct=True) as t:
        for _ in range(5):
            await t.request("GET", "/ok")
        pool = t._pool
        assert len(pool._idle) == 1  # one connection, kept alive and reused
        idle = pool._idle[0]
        deadline = asyncio.get_running_loop().time() + 10
        while not idle.closed:  # the server's idle timeout passes and its close reaches us
            assert asyncio.get_running_loop().time() < deadline, "the server never closed the idle connection"
            await asyncio.sleep(0.02)
        assert pool.start("POST", "/orders", {}, b"[]") is None  # nothing idle to write on at once
        response = await t.request("POST", "/orders", body=b"[]", write=True)  # a fresh connection
        assert response.status_code == 200 and server.closed_idle == 1


async def test_direct_idle_connections_expire_in_the_client_and_a_written_request_is_answered_as_sent():
    server = ClosesIdle(idle_s=30)
    now = [0.0]
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=1.5), direct=True) as t:
        t._pool._clock = lambda: now[0]
        await t.request("GET", "/ok")
        first = t._pool._idle[0]
        now[0] = 1.0  # within the expiry: written at once on the kept-alive connection
        written: list[bool] = []
        flight = t.start("POST", "/orders", body=b"[]", on_written=lambda: written.append(True))
        assert flight is not None and flight.conn is first and written == [True]
        assert (await t.request("POST", "/orders", body=b"[]", write=True, flight=flight)).status_code == 200
        assert written == [True]  # once
        now[0] = 2.6  # idle past the expiry: closed by the client, never written on
        assert t.start("POST", "/orders", body=b"[]") is None and first.closed


class Silent(LocalServer):
    """Reads requests and never answers."""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()
        finally:
            writer.close()


async def test_direct_an_unanswered_write_times_out_typed_with_its_outcome_unknown():
    from bot.venue.errors import TransportTimeout

    async with Silent() as url, Transport(url, config=TransportConfig(read=0.2), direct=True) as t:
        with pytest.raises(TransportTimeout, match="ReadTimeout") as caught:
            await t.request("POST", "/orders", body=b"[]", write=True)
        assert caught.value.outcome_unknown and t._pool._in_use == 0 and not t._pool._idle


async def test_direct_connections_are_kept_warm_so_a_write_never_waits_for_a_connect():
    server = ClosesIdle(idle_s=1.0)  # a server that drops idle connections within a second
    async with server as url, Transport(url, config=TransportConfig(keepalive_expiry=30), direct=True) as t:
        pool = t._pool
        warm = asyncio.get_running_loop().create_task(t.keep_warm(2))
        try:
            deadline = asyncio.get_running_loop().time() + 10
            while server.closed_idle < 2 or len([c for c in pool._idle if not c.closed]) < 2:
                assert asyncio.get_running_loop().time() < deadline, "the dropped connections were not replaced"
                await asyncio.sleep(0.02)
            written: list[bool] = []  # the server dropped the first two; fresh ones stand ready
            flight = t.start("POST", "/orders", body=b"[]", on_written=lambda: written.append(True))
            assert flight is not None and written == [True]
            response = await t.request("POST", "/orders", body=b"[]", write=True, flight=flight)
            assert response.status_code == 200
        finally:
            warm.cancel()


class Answers(ClosesIdle):
    """Answers every request on a kept-alive connection, never closing it, over TLS when given a context."""

    def __init__(self, tls=None) -> None:
        super().__init__(idle_s=None)
        self.tls = tls

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return f"https://localhost:{self.server.sockets[0].getsockname()[1]}"


async def test_direct_speaks_tls_with_the_certificate_and_host_name_verified(tmp_path):
    import shutil
    import ssl
    import subprocess

    from bot.venue import http1

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    async with Answers(server_tls) as url:
        trusting = ssl.create_default_context(cafile=str(cert))
        pool = http1.Http1Pool(url, connect=5, read=5, write=5, pool=5, keepalive_expiry=30, max_connections=2,
                               ssl_context=trusting)
        for _ in range(2):  # the second on the kept-alive TLS connection
            answer = await pool.request("POST", "/orders", {}, b"[]")
            assert answer.status_code == 200 and answer.content == b"{}"
        assert len(pool._idle) == 1
        await pool.aclose()
        by_address = http1.Http1Pool(url.replace("localhost", "127.0.0.1"), connect=5, read=5, write=5, pool=5,
                                     keepalive_expiry=30, max_connections=2, ssl_context=trusting)
        with pytest.raises(http1.HttpError, match="CERTIFICATE_VERIFY_FAILED"):  # not the name it was issued to
            await by_address.request("GET", "/ok", {}, None)
        # the system's trust store does not know the certificate: refused, typed, nothing sent
        async with Transport(url, direct=True) as t:
            with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
                await t.request("POST", "/orders", body=b"[]", write=True)
