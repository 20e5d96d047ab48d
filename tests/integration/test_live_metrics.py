"""The Prometheus endpoint of a live bot exposes what an operator watches, scraped over HTTP."""

from __future__ import annotations

import re
import urllib.request

import pytest

from bot.ops.metrics import Metrics
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import running_bot

pytestmark = pytest.mark.integration


def sample(body: str, name: str, **labels: str) -> float | None:
    """The value of one series in a scrape, or None when it is absent."""
    for line in body.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_live_bot_exports_trading_transport_stream_and_throttle_metrics():
    ex = start_exchange()
    try:
        metrics = Metrics()
        with running_bot(ex, metrics=metrics):
            server, _thread = metrics.serve(port=0)
            url = f"http://127.0.0.1:{server.server_address[1]}/metrics"

            def scrape() -> str:
                return urllib.request.urlopen(url, timeout=5).read().decode()

            def ready() -> str | None:
                body = scrape()
                wanted = (
                    sample(body, "bot_http_request_seconds_count", route="POST /orders", status="200"),
                    sample(body, "bot_throttle_tokens", throttle="orders"),
                    sample(body, "bot_stream_message_lag_seconds_count", stream="market"),
                    sample(body, "bot_tick_to_order_seconds_count"),
                    sample(body, "bot_orders_per_post_count"),
                    re.search(r'bot_book_staleness_seconds\{token="[^"]+"\}', body),
                    # where a book update's way to an order request goes, stage by stage (no journal
                    # here: no "sync" stage)
                    *(sample(body, "bot_live_stage_seconds_count", stage=st) for st in ("wait", "core", "send")),
                )
                return body if all(v for v in wanted) else None

            try:
                body = wait_for(ready, 15.0, "live metrics")
            finally:
                server.shutdown()
        assert sample(body, "bot_orders_submitted_total") is not None
        # every POST carried 1 to 15 orders, and at most the orders sent
        posts = sample(body, "bot_orders_per_post_count")
        assert sample(body, "bot_orders_per_post_bucket", le="15.0") == posts
        submitted = sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
                        if line.startswith("bot_orders_submitted_total{"))
        assert posts <= sample(body, "bot_orders_per_post_sum") <= submitted
        assert sample(body, "bot_throttle_tokens", throttle="orders") <= 2400
        # identifiers never become labels: order lookups are grouped under {id}
        assert "0x" not in "".join(line for line in body.splitlines() if line.startswith("bot_http_request"))
    finally:
        ex.stop()
