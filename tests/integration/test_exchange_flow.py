"""Synthetic flow on the server loop: books move and trades print on the market channel."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import websockets.sync.client as wsc

from bot.exchange.config import ExchangeConfig, ServerFlowConfig
from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration


def levels(ex, tokens) -> list:
    """The price levels (not the timestamped hash) of every book."""
    books = httpx.post(ex.urls.clob + "/books", json=[{"token_id": t} for t in tokens]).json()
    return [(b["asset_id"], b["bids"], b["asks"]) for b in books]


def test_flow_is_on_by_default():
    assert ExchangeConfig().flow.enabled is True


def test_flow_moves_books_and_prints_trades():
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, interval_s=0.05))
    try:
        markets = httpx.get(ex.urls.clob + "/markets").json()["data"]
        tokens = [t["token_id"] for m in markets for t in m["tokens"]]
        first = levels(ex, tokens)
        kinds: set[str] = set()
        with wsc.connect(ex.urls.ws + "/ws/market") as ws:
            ws.send(json.dumps({"type": "market", "assets_ids": tokens}))
            end = time.monotonic() + 20
            while not {"last_trade_price", "price_change"} <= kinds:
                left = end - time.monotonic()
                assert left > 0, f"no flow trade on the market channel in time (saw {kinds})"
                frame = json.loads(ws.recv(timeout=left))
                for ev in frame if isinstance(frame, list) else [frame]:
                    kinds.add(ev["event_type"])
                    if ev["event_type"] == "last_trade_price":
                        assert ev["asset_id"] in tokens and 0 < float(ev["price"]) < 1 and float(ev["size"]) > 0
        assert levels(ex, tokens) != first
    finally:
        ex.stop()


def test_a_synthetic_trader_acts_when_due_not_at_the_next_flow_interval():
    """The flow interval is only the longest wait: with a 60 s interval and busy traders, trades
    print on the market channel long before the second interval would begin, each frame stamped
    no earlier than the previous one (actions go out as they happen, not back-dated in a batch)."""
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, interval_s=60.0, speed=50.0))
    try:
        tokens = [t["token_id"] for m in httpx.get(ex.urls.clob + "/markets").json()["data"] for t in m["tokens"]]
        stamps: list[int] = []
        with wsc.connect(ex.urls.ws + "/ws/market") as ws:
            ws.send(json.dumps({"type": "market", "assets_ids": tokens}))
            end = time.monotonic() + 30
            while len(stamps) < 3:
                left = end - time.monotonic()
                assert left > 0, f"the flow waited for its interval: {len(stamps)} trades printed"
                frame = json.loads(ws.recv(timeout=left))
                for ev in frame if isinstance(frame, list) else [frame]:
                    if ev["event_type"] == "last_trade_price":
                        stamps.append(int(ev["timestamp"]))
        assert stamps == sorted(stamps)
    finally:
        ex.stop()
