"""What a WebSocket client can make the exchange hold is bounded, over real sockets: only listed
tokens and markets are kept, connections per client IP are capped (1008, in the venue's words),
frames are bounded, and a closed connection leaves nothing behind."""

from __future__ import annotations

import contextlib
import json

import pytest
import websockets.sync.client as wsc
from websockets.exceptions import ConnectionClosed

from tests.integration.exchange_fixture import start_exchange, wait_for

pytestmark = pytest.mark.integration

CAP = 5
READ_S = 10.0


@pytest.fixture(scope="module")
def ex():
    e = start_exchange(ws_connections_per_client=CAP)
    try:
        yield e
    finally:
        e.stop()


def tokens(ex) -> list[str]:
    return ex.call(lambda: [t for m in ex.exchange.state.catalog.markets for t in m.token_ids])


def held(ex) -> tuple[int, int, list[set[str]]]:
    """(market connections, client IPs counted, each market connection's assets) as the hub holds them."""
    hub = ex.exchange.exchange.hub
    return ex.call(lambda: (len(hub.market_conns) + len(hub.user_conns), len(hub.per_client),
                            [set(c.assets) for c in hub.market_conns]))


@contextlib.contextmanager
def subscribed(ex, assets: list[str]):
    with wsc.connect(ex.urls.ws + "/ws/market", open_timeout=READ_S) as ws:
        ws.send(json.dumps({"type": "market", "assets_ids": assets}))
        yield ws


def until_closed(ws) -> tuple[int, str]:
    with pytest.raises(ConnectionClosed):
        while True:
            ws.recv(timeout=READ_S)
    return ws.close_code, ws.close_reason


def test_unknown_asset_ids_are_not_kept(ex):
    known = tokens(ex)[0]
    junk = [f"{i:078d}" + "x" * 400 for i in range(400)]
    with subscribed(ex, junk + [known]) as ws:
        snap = json.loads(ws.recv(timeout=READ_S))
        assert [b["asset_id"] for b in snap] == [known]
        ws.send(json.dumps({"operation": "subscribe", "assets_ids": junk[:50]}))
        ws.send("PING")
        assert ws.recv(timeout=READ_S) == "PONG"  # the subscribe before it is handled
        assert held(ex)[2] == [{known}]
    wait_for(lambda: held(ex) == (0, 0, []), what="nothing kept once it is gone")


def test_the_user_channel_keeps_only_listed_markets(ex):
    acct = ex.demo_account
    listed = ex.call(lambda: ex.exchange.state.catalog.markets[0].condition_id)
    auth = {"apiKey": acct.creds.apiKey, "secret": acct.creds.secret, "passphrase": acct.creds.passphrase}
    with wsc.connect(ex.urls.ws + "/ws/user", open_timeout=READ_S) as ws:
        ws.send(json.dumps({"type": "user", "auth": auth, "markets": [listed.upper(), "0x" + "ab" * 2000]}))
        ws.send(json.dumps({"operation": "subscribe", "markets": [f"0x{i:064x}" for i in range(300)]}))
        ws.send("PING")
        assert ws.recv(timeout=READ_S) == "PONG"
        hub = ex.exchange.exchange.hub
        assert ex.call(lambda: [c.markets for c in hub.user_conns]) == [{listed.lower()}]


def test_connections_per_client_are_capped_and_freed_on_close(ex):
    known = tokens(ex)[:2]
    with contextlib.ExitStack() as stack:
        for _ in range(CAP):
            stack.enter_context(subscribed(ex, known)).recv(timeout=READ_S)  # the book snapshot: subscribed
        with wsc.connect(ex.urls.ws + "/ws/market", open_timeout=READ_S) as extra:
            assert until_closed(extra) == (1008, f"too many connections (max {CAP} per client)")
        assert held(ex)[:2] == (CAP, 1)
    wait_for(lambda: held(ex) == (0, 0, []), what="nothing kept once they are gone")
    with subscribed(ex, known) as again:  # the slots are free again
        assert {b["asset_id"] for b in json.loads(again.recv(timeout=READ_S))} == set(known)


def test_a_frame_over_the_bound_closes_the_connection(ex):
    with wsc.connect(ex.urls.ws + "/ws/market", open_timeout=READ_S, max_size=None) as ws:
        ws.send(json.dumps({"type": "market", "assets_ids": ["1" * 300_000]}))
        code, _ = until_closed(ws)
    assert code == 1009  # message too big
    wait_for(lambda: held(ex) == (0, 0, []), what="nothing kept once it is gone")


def test_more_than_500_assets_is_refused_in_the_venue_words(ex):
    with subscribed(ex, [str(i) for i in range(501)]) as ws:
        assert until_closed(ws) == (1008, "too many assets (max 500)")


def test_a_client_over_its_input_budget_is_not_read_while_another_client_is_served():
    """A client whose WebSockets sent more than its budget is not read until it has waited for it; a
    client of another address is read meanwhile."""
    ex = start_exchange(ws_input_bytes_per_client_s=2048)
    hub = ex.exchange.exchange.hub
    ex.call(setattr, hub.input, "burst", 0.0)  # no burst: the rate applies from the first byte
    try:
        first, later = tokens(ex)[:2]
        pad = ["9" * 70] * 400  # ~30 KB of ids the catalog does not list: about 15 s of this client's budget
        with wsc.connect(ex.urls.ws + "/ws/market", open_timeout=READ_S) as flood:
            flood.send(json.dumps({"type": "market", "assets_ids": pad + [first]}))
            assert [b["asset_id"] for b in json.loads(flood.recv(timeout=READ_S))] == [first]  # read: then it waits
            flood.send(json.dumps({"operation": "subscribe", "assets_ids": [later]}))
            with wsc.connect(ex.urls.ws + "/ws/market", open_timeout=READ_S,
                             source_address=("127.0.0.2", 0)) as other:
                other.send(json.dumps({"type": "market", "assets_ids": [later]}))
                assert [b["asset_id"] for b in json.loads(other.recv(timeout=READ_S))] == [later]
                # the other client's frame, sent after, was read; the flooding client's is not yet
                subscribed_now = ex.call(lambda: sorted(sorted(c.assets) for c in hub.market_conns))
                assert subscribed_now == sorted([[first], [later]])
                assert ex.call(lambda: hub.input.level["127.0.0.1"][0]) > 20_000
        # gone while it waited: let go (its budget forgotten) once the wait is over
        wait_for(lambda: ex.call(lambda: dict(hub.input.level)) == {}, deadline_s=60,
                 what="the budget forgotten with its client")
    finally:
        ex.stop()
