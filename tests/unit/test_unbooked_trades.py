"""A trade record the bot cannot book, end to end in the core and the live shell's trades poll
(the venue client reading ``GET /data/trades`` over a real socket from a server answering the
pages): counted once, logged once with its id, read again at each poll, and its token quoted
again only once it is booked; the rest of its page is booked all the same."""

from __future__ import annotations

import json

import anyio
from structlog.testing import capture_logs

from bot.core.clock import SimClock
from bot.core.events import Fill
from bot.execution.protocol import SendCancels, TradesPage, all_live
from bot.execution.orders import OrderState
from bot.execution.protocol import TradeBooked, TradeUnbooked
from bot.live.shell import LiveShell
from bot.ops.metrics import Metrics
from bot.venue.models import Page, Trade, decode
from tests.unit.test_engine import COND, NO, OWNER, YES, book, places, start

U = 1_000_000


def record(tid: str, order_id: str, price: str, size: str = "4", token: str = YES) -> dict:
    """A V2 maker record of ours as ``/data/trades`` sends it (legs' ``fee_rate_bps`` empty)."""
    return {"id": tid, "taker_order_id": "0x" + "77" * 32, "market": COND, "asset_id": token, "side": "SELL",
            "size": size, "fee_rate_bps": "0", "price": price, "status": "MATCHED", "match_time": "1000",
            "owner": OWNER, "trader_side": "MAKER",
            "maker_orders": [{"order_id": order_id, "owner": OWNER, "matched_amount": size, "price": price,
                              "fee_rate_bps": "", "asset_id": token, "side": "BUY"}]}


def page(*records: dict, next_cursor: str = "LTE=") -> Page:
    return decode(json.dumps({"data": list(records), "next_cursor": next_cursor}).encode(), Page[Trade])


def quoting(clock: SimClock, metrics: Metrics | None = None):
    """An engine quoting both tokens, its orders acked: (engine, our YES bid, our NO bid)."""
    eng, out = start(clock, metrics=metrics)
    bids = {}
    for a in out:
        if hasattr(a, "batch"):
            eng.on_result(all_live(a.batch))
            for o in a.batch.orders:
                bids.setdefault(o.token_id, o)
    return eng, bids[YES], bids[NO]


def test_the_core_counts_it_once_stops_its_token_and_quotes_again_once_booked():
    clock = SimClock(1_000.0)
    metrics = Metrics()
    eng, yes_bid, no_bid = quoting(clock, metrics)
    bad = record("t-bad", yes_bid.order_id, "0.48x")
    good = record("t-good", no_bid.order_id, "0.4799999112272578", "2.365591", token=NO)
    clock.advance(1)
    acts = eng.on_result(TradesPage((*page(bad, good).data,), "MA==", "LTE="))
    assert [f.trade_id for f in eng.recent_fills] == ["t-good"]  # the rest of the page is booked
    assert eng.portfolio.position(NO).cash_e12 == -round(0.4799999112272578 * 2_365_591) * U
    assert [a.trade_id for a in acts if isinstance(a, TradeUnbooked)] == ["t-bad"]
    assert eng.stats.unbooked == 1 and metrics.trades_unbooked._value.get() == 1
    assert eng.blocked == {YES} and metrics.blocked_tokens._value.get() == 1
    cancels = [oid for a in acts if isinstance(a, SendCancels) for oid in a.batch.order_ids]
    assert yes_bid.order_id in cancels  # (the NO bid is requoted for the fill: the strategy's call)
    # the book moves: nothing new on YES, NO quoted as ever
    clock.advance(1)
    out = eng.on_market([book(YES, [("0.47", "100")], [("0.51", "100")], ts=5)])
    out += eng.on_market([book(NO, [("0.47", "100")], [("0.51", "100")], ts=5)])
    assert {o.token_id for o in places(out)} <= {NO}
    # read again: not told twice, not counted twice
    again = eng.on_result(TradesPage((*page(bad).data,), "MA==", "LTE="))
    assert not [a for a in again if isinstance(a, TradeUnbooked)] and eng.stats.unbooked == 1
    # the venue sends it readable: booked, and YES is quoted again at the next book
    fixed = eng.on_result(TradesPage((*page(record("t-bad", yes_bid.order_id, "0.48")).data,), "MA==", "LTE="))
    assert [a.trade_id for a in fixed if isinstance(a, TradeBooked)] == ["t-bad"]
    assert eng.portfolio.size(YES) == 4 * U and eng.blocked == frozenset()
    assert metrics.blocked_tokens._value.get() == 0
    out = eng.on_market([book(YES, [("0.46", "100")], [("0.50", "100")], ts=9)])
    assert YES in {o.token_id for o in places(out)}


class TradesServer:
    """``GET /data/trades`` over a real socket: the page of the ``next_cursor`` asked, as bytes."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlparse

        asked = self.asked = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the server's hook
                url = urlparse(self.path)
                cursor = parse_qs(url.query).get("next_cursor", ["MA=="])[0]
                asked.append(cursor)
                body = pages[cursor] if url.path == "/data/trades" else b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def page_bytes(*records: dict, next_cursor: str = "LTE=") -> bytes:
    return json.dumps({"data": list(records), "next_cursor": next_cursor}).encode()


def test_the_shell_poll_hands_a_page_with_an_unbookable_record_to_the_core_and_logs_it_once():
    from bot.live.venue import Venue
    from bot.venue.auth import Credentials

    clock = SimClock(1_000.0)
    eng, yes_bid, no_bid = quoting(clock, Metrics())
    server = TradesServer({
        "MA==": page_bytes(record("t-a", no_bid.order_id, "0.47", token=NO),
                           record("t-bad", yes_bid.order_id, "0.48x"), next_cursor="MQ=="),
        "MQ==": page_bytes(record("t-c", no_bid.order_id, "0.4600000476613491", "1.5", token=NO)),
    })
    creds = Credentials("key", "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", "pass")
    shell = LiveShell(eng, Venue(clob_url=server.url, data_url=server.url, ws_url="ws://127.0.0.1:9",
                                 creds=creds, address="0x" + "11" * 20))

    shell.executor.open(None, None, shell._send.send)  # its answers into the shell's inbox, no task started

    def poll() -> list:
        """One trades poll of the executor, then the inbox into the core as the core loop does."""
        async def fetch() -> None:
            await shell.executor._fetch_trades()

        anyio.run(fetch)
        actions = []
        while True:
            try:
                msg = shell._inbox.receive_nowait()
            except anyio.WouldBlock:
                return actions
            actions += shell._handle(msg)

    with capture_logs() as logs:
        for _ in range(2):
            shell._dispatch(poll())
    unbooked = [e for e in logs if e["event"] == "trade_unbooked"]
    assert [(e["trade_id"], e["log_level"]) for e in unbooked] == [("t-bad", "error")]  # once
    assert "0.48x" in unbooked[0]["reason"] and not [e for e in logs if e["event"] == "core_error"]
    assert sorted(f.trade_id for f in eng.recent_fills) == ["t-a", "t-c"]  # both pages booked
    assert eng.portfolio.position(NO).cash_e12 == -(470_000 * 4 * U + 690_000 * U)  # 0.690000 USDC settled
    anyio.run(shell.venue.aclose)
    server.close()
    assert server.asked == ["MA==", "MQ==", "MA==", "MQ=="]  # read again from before it
    assert eng.reconciler.trades_cursor == "MA==" and eng.stats.unbooked == 1
    assert eng.metrics.trades_unbooked._value.get() == 1
    assert eng.blocked == {YES} and eng.orders.get(yes_bid.order_id).state is OrderState.PENDING_CANCEL
    assert all(isinstance(f, Fill) for f in eng.recent_fills)
