import pytest

from bot.venue.transport import route_label


@pytest.mark.parametrize(
    "route,label",
    [
        ("GET /data/order/0x" + "ab" * 32, "GET /data/order/{id}"),
        ("GET /markets/0x" + "0" * 64, "GET /markets/{id}"),
        ("GET /events/12345678", "GET /events/{id}"),
        ("GET /comments/user_address/0xFCAd0B19bB29D4674531d6f115237E16AfCE377c", "GET /comments/user_address/{id}"),
        ("POST /orders", "POST /orders"),
        ("GET /book", "GET /book"),
        ("GET /v1/heartbeats", "GET /v1/heartbeats"),
    ],
)
def test_identifiers_never_become_labels(route, label):
    assert route_label(route) == label
