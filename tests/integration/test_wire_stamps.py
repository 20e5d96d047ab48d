"""Wire stamps at the exchange: an order request counts as received when it enters the exchange,
before anything the exchange then does with it (routing, limits, a hold, authentication)."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

import pytest

from bot.exchange.wire import WireStamps
from tests.integration.exchange_fixture import exchange, wait_for  # noqa: F401

pytestmark = pytest.mark.integration


def _post(url: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=20).read()
    except urllib.error.HTTPError:
        pass  # unauthenticated: refused, after it was stamped


def test_an_order_request_is_stamped_as_it_enters_the_exchange_not_when_its_handler_runs(exchange):
    stamps = WireStamps()
    hub = exchange.exchange.exchange.hub
    exchange.call(setattr, hub, "stamps", stamps)
    try:
        held = exchange.hold("POST", "/orders", "before")  # held after it entered, before it is handled
        sent = time.perf_counter()
        client = threading.Thread(target=_post, args=(exchange.urls.clob + "/orders", b"[]"))
        client.start()
        try:
            wait_for(held.held, 20, "the POST /orders held at the exchange", interval=0.01)
            released = time.perf_counter()
        finally:
            held.release()
        wait_for(held.done, 20, "the held POST /orders done", interval=0.01)
        client.join(20)
        assert len(stamps.requests) == 1
        at, body = stamps.requests[0]
        assert body == b"[]" and sent <= at <= released  # the exchange and this test share one perf counter
    finally:
        exchange.call(setattr, hub, "stamps", None)


def test_frames_an_order_request_caused_are_not_book_updates_a_request_answers():
    import json

    stamps = WireStamps()
    flow = json.dumps({"event_type": "price_change", "price_changes": [{"asset_id": "T"}]}).encode()
    own = json.dumps({"event_type": "price_change", "timestamp": "2", "price_changes": [{"asset_id": "T"}]}).encode()
    order = json.dumps([{"order": {"tokenId": "T"}}]).encode()
    stamps.frame(flow, 1.0)  # the synthetic flow moved the book
    stamps.request(order, 1.004)  # our cancel's answer, published as it was handled
    stamps.answer(own)
    stamps.frame(own, 1.005)
    stamps.request(order, 1.006)  # the order answering the flow's frame, 6 ms on
    assert [round(x, 6) for x in stamps.latencies()] == [0.004]  # the second one answers nothing new
    stamps.answers.clear()
    assert [round(x, 6) for x in stamps.latencies()] == [0.004, 0.001]  # counted so, our own change looks like news
