"""Work bounded by the inputs, over real sockets: no client-supplied number, range, list or body size
makes a route allocate or loop beyond a fixed bound; out-of-range values get the venue's 400 body.

The deadlines here are generous (seconds); only an unbounded answer (minutes, gigabytes) misses them.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from bot.exchange.bodies import MAX_BODY_BYTES
from bot.exchange.clob_routes import BATCH_TOKENS, HISTORY_POINTS
from tests.integration.exchange_fixture import exchange  # noqa: F401

pytestmark = pytest.mark.integration
DEADLINE_S = 20.0


def a_token(ex) -> tuple[str, str]:
    m = httpx.get(ex.urls.clob + "/markets").json()["data"][0]
    return m["condition_id"], m["tokens"][0]["token_id"]


def get(url: str, **params) -> httpx.Response:
    return httpx.get(url, params=params, timeout=DEADLINE_S)


def test_prices_history_work_is_bounded_by_the_answer_not_the_window(exchange):
    _, token = a_token(exchange)
    url = exchange.urls.clob + "/prices-history"
    # the request that once grew the server to 24 GB: a 30-digit end, fidelity 0
    r = get(url, market=token, startTs="0", endTs="9" * 30, fidelity="0")
    assert r.status_code == 400 and isinstance(r.json()["error"], str), r.text
    # a valid window of 29 million one-minute points: the latest HISTORY_POINTS, computed directly
    now = int(time.time())
    r = get(url, market=token, startTs="0", endTs=str(now), fidelity="1")
    assert r.status_code == 200, r.text
    points = [p["t"] for p in r.json()["history"]]
    assert len(points) == HISTORY_POINTS and points[-1] <= now < points[-1] + 60
    assert all(b - a == 60 for a, b in zip(points, points[1:])) and points[0] % 60 == 0
    r = get(url, market=token, interval="max", fidelity="1")
    assert r.status_code == 200 and len(r.json()["history"]) == HISTORY_POINTS
    for bad in ({"fidelity": "0"}, {"startTs": "10", "endTs": "5"}, {"endTs": "1" + "0" * 19},
                {"interval": "1y"}, {"interval": "1d", "startTs": "0"}):
        r = get(url, market=token, **bad)
        assert r.status_code == 400 and set(r.json()) == {"error"}, (bad, r.text)


def test_bodies_and_batches_are_capped(exchange):
    url = exchange.urls.clob
    _, token = a_token(exchange)
    # a declared body over the cap is refused before it is read; a streamed one once it passes the cap
    big = b"[" + b" " * (MAX_BODY_BYTES + 10) + b"]"
    r = httpx.post(url + "/books", content=big, timeout=DEADLINE_S)
    assert r.status_code == 400 and "too large" in r.json()["error"]

    def chunks():
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    r = httpx.post(url + "/prices", content=chunks(), timeout=DEADLINE_S)
    assert r.status_code == 400 and "too large" in r.json()["error"]
    # a body declared too large is refused from its headers alone: no byte of it is ever sent
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=DEADLINE_S) as sock:
        sock.sendall(b"POST /books HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 2000000000\r\n\r\n")
        answer = b""
        while b"}" not in answer:  # the JSON error body ends the answer
            chunk = sock.recv(4096)
            assert chunk, answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"too large" in answer, answer
    # batch lengths: at most BATCH_TOKENS tokens per POST /books or /prices
    many = [{"token_id": token}] * (BATCH_TOKENS + 1)
    for path in ("/books", "/prices"):
        r = httpx.post(url + path, json=many, timeout=DEADLINE_S)
        assert r.status_code == 400 and str(BATCH_TOKENS) in r.json()["error"], r.text
    r = httpx.post(url + "/books", json=many[:BATCH_TOKENS], timeout=DEADLINE_S)
    assert r.status_code == 200 and len(r.json()) == BATCH_TOKENS


def test_holders_answers_each_market_once(exchange):
    cond, _ = a_token(exchange)
    r = get(exchange.urls.data + "/holders", market=",".join([cond] * 200))
    assert r.status_code == 200, r.text
    assert [g["token"] for g in r.json()] == [f"{cond}:0", f"{cond}:1"]
