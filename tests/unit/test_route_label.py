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


def test_the_limiter_remembers_routes_not_order_ids():
    import anyio

    from bot.venue.limits import LimitsConfig, RouteLimiter

    now = [0.0]
    waited: list[str] = []

    async def sleep(seconds):
        now[0] += seconds

    lim = RouteLimiter(LimitsConfig(scale=0.001), "clob", clock=lambda: now[0], sleep=sleep,
                       on_wait=lambda route, s: waited.append(route))

    async def lookups():
        for i in range(300):  # a lookup of every order, most of them held by the throttle
            await lim.acquire("GET", f"/data/order/0x{i:064x}")

    anyio.run(lookups)
    assert waited and set(waited) == {"GET /data/order/{id}"}
    assert len(lim._cache) == 1 and list(lim.waits) == ["GET /data/order/{id}"]
