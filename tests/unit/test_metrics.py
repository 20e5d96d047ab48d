import urllib.request

from bot.ops.metrics import Metrics


def test_metrics_served_over_http():
    m = Metrics()
    m.orders_submitted.labels(token="t1").inc(3)
    m.tick_to_order.observe(120e-6)
    server, thread = m.serve(port=0)
    try:
        port = server.server_address[1]
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        server.shutdown()
    assert 'bot_orders_submitted_total{token="t1"} 3.0' in body
    assert "bot_tick_to_order_seconds_bucket" in body
