"""Request heads are bounded over real sockets: slow, silent, huge, crowded or malformed heads are
answered in the venue's error body (JSON) or closed, and never starve a client that asks at once."""

from __future__ import annotations

import json
import socket
import threading
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration

READ_S = 15.0  # how long a socket waits for the answer (the server answers long before; no timing is asserted)


@pytest.fixture(scope="module")
def ex():
    e = start_exchange(header_timeout_s=1.0, max_headers=100, max_header_bytes=16 * 1024)
    try:
        yield e
    finally:
        e.stop()


def address(url: str) -> tuple[str, int]:
    u = urlsplit(url)
    return u.hostname, u.port


def answer_of(sock: socket.socket, allow_silence: bool = False) -> tuple[int, dict[str, str], bytes]:
    """Read until the server closes: the status, the headers (lowercase names) and the body
    (status 0 for a connection closed without an answer, when ``allow_silence``)."""
    sock.settimeout(READ_S)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    if not data and allow_silence:
        return 0, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 "), data[:200]
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:]))
    return int(lines[0].split()[1]), headers, body


def ask(url: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(address(url), timeout=READ_S) as s:
        sender = threading.Thread(target=_send_all, args=(s, raw))
        sender.start()  # a large head is sent while the answer is read
        try:
            return answer_of(s)
        finally:
            sender.join(READ_S)


def _send_all(s: socket.socket, raw: bytes) -> None:
    try:
        s.sendall(raw)
    except OSError:
        pass  # the server closed after answering


def request(extra: bytes = b"", path: bytes = b"/ok") -> bytes:
    return b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n"


def assert_venue_error(status: int, headers: dict[str, str], body: bytes, want: int, words: str) -> None:
    assert status == want, (status, body[:200])
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert words in json.loads(body)["error"]


def test_a_head_sent_too_slowly_is_answered_408_in_the_venue_body(ex):
    with socket.create_connection(address(ex.urls.clob), timeout=READ_S) as s:
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # and nothing more
        status, headers, body = answer_of(s)
    assert_venue_error(status, headers, body, 408, "request timeout")


def test_a_silent_connection_is_closed(ex):
    with socket.create_connection(address(ex.urls.clob), timeout=READ_S) as s:
        s.settimeout(READ_S)
        assert s.recv(100) == b""  # closed by the server, before the read times out


@pytest.mark.parametrize("extra,words", [
    (b"X-Big: " + b"a" * 64 * 1024 + b"\r\n", "max 16384 bytes"),
    (b"".join(b"X-%d: v\r\n" % i for i in range(150)), "max 100 fields"),
    (b"".join(b"X-%d: v\r\n" % i for i in range(10_000)), "request header fields too large"),
    (b"X-Huge: " + b"a" * (1 << 20) + b"\r\n", "max 16384 bytes"),
])
def test_an_oversized_head_is_answered_431_in_the_venue_body(ex, extra, words):
    status, headers, body = ask(ex.urls.clob, request(extra))
    assert_venue_error(status, headers, body, 431, words)


def test_the_catalog_refuses_in_its_own_error_shape(ex):
    status, _, body = ask(ex.urls.catalog, request(b"X-Big: " + b"a" * 64 * 1024 + b"\r\n", b"/markets"))
    assert status == 431 and json.loads(body) == {"type": "bad request", "error": json.loads(body)["error"]}


def test_a_malformed_head_is_answered_400_in_the_venue_body(ex):
    status, headers, body = ask(ex.urls.clob, request(b"X-Nul: a\x00b\r\n"))
    assert_venue_error(status, headers, body, 400, "bad request: malformed HTTP request")


def test_a_head_within_the_bounds_is_served(ex):
    status, _, body = ask(ex.urls.clob, request(b"X-Fine: " + b"a" * 8 * 1024 + b"\r\nConnection: close\r\n"))
    assert status == 200 and body.strip(b'"') == b"OK"


def test_200_slow_connections_leave_ok_served_and_the_waiting_bounded():
    crowd = start_exchange(header_timeout_s=600, waiting_per_client=50)  # none times out: only the cap acts
    host, port = address(crowd.urls.clob)
    waiting = crowd.exchange.waiting["clob"]
    socks = []
    try:
        for i in range(200):
            s = socket.create_connection((host, port), timeout=READ_S)
            s.sendall(b"GET /ok HTTP/1.1\r\nX-Drip-%d: " % i)
            socks.append(s)
        with httpx.Client(timeout=READ_S) as client:
            for _ in range(5):
                assert client.get(crowd.urls.clob + "/ok").status_code == 200
        # the oldest were pushed out: closed, and told why (in the venue's body) when they had begun a head
        for s in socks[:150]:
            status, headers, body = answer_of(s, allow_silence=True)
            if status:
                assert_venue_error(status, headers, body, 408, "too many connections waiting")
        assert crowd.call(lambda: len(waiting)) <= 50 and crowd.call(lambda: waiting.evicted) >= 150
    finally:
        for s in socks:
            s.close()
        crowd.stop()
