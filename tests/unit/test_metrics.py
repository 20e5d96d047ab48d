import socket
import urllib.request

import pytest

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


def test_busy_metrics_port_names_the_port_and_the_setting():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        with pytest.raises(OSError) as info:
            Metrics().serve("127.0.0.1", port)
    message = str(info.value)
    assert f"metrics port {port} on 127.0.0.1 is in use" in message and "[metrics] port" in message
    assert "\n" not in message
