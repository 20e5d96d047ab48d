"""SQLite journal: restore after a crash (even kill -9), and the pure restart merge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter

import msgspec

from bot.core.events import Fill, FillReversal
from bot.core.intents import CancelOrder
from bot.execution.journal import Journal, JournalState
from bot.execution.orders import OrderState, OwnOrder
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.restart import restore
from bot.portfolio.pnl import DailyPnl, DayStart
from bot.venue.enums import Side, TradeStatus

S = OrderState
U = 1_000_000
TOK = "tok"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FakeSigned(msgspec.Struct, frozen=True):
    hash: str
    salt: int


def own(oid, side=Side.BUY, size=10 * U):
    return OwnOrder(oid, TOK, side, 500_000, size, signed=FakeSigned(oid, 7))


def trade(tid, oid, size, status="MATCHED"):
    return {"id": tid, "taker_order_id": "0xsomeone", "asset_id": TOK, "side": "SELL", "size": str(size),
            "price": "0.5", "status": status, "market": "0xm", "match_time": "1700000000",
            "maker_orders": [{"order_id": oid, "matched_amount": str(size), "price": "0.5", "asset_id": TOK,
                              "side": "BUY"}]}


def live(oid, matched="0"):
    return {"id": oid, "status": "LIVE", "asset_id": TOK, "market": "0xm", "side": "BUY", "price": "0.5",
            "original_size": "10", "size_matched": matched}


def ack(oid):
    return {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}


def test_wal_and_synchronous(tmp_path):
    j = Journal(tmp_path / "j.sqlite")
    assert j._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert j._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    j.close()


def test_restore_after_connection_dropped_without_close(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path, signed_type=FakeSigned)
    rec = Reconciler(journal=j)
    rec.on_places_sent([own("0xa"), own("0xb")], 1.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 2.0)
    rec.on_trade_event(trade("t1", "0xa", 4), 3.0)
    rec.on_trade_event(trade("t2", "0xa", 1, "FAILED"), 3.5)
    rec.on_trades_page([], 4.0, cursor="MA==", next_cursor="NTA=")
    rec.on_cancels_sent(["0xb"], 5.0)
    # uncommitted writes after the last commit are lost, committed ones are not
    j._db.execute("INSERT INTO cursors (name, value) VALUES ('x', 'lost')")
    del rec, j  # dropped, never closed

    j2 = Journal(path, signed_type=FakeSigned)
    state = j2.restore()
    orders = {o.order_id: o for o in state.orders}
    assert orders["0xa"].state is S.PARTIALLY_FILLED and orders["0xa"].filled == 4 * U
    assert orders["0xa"].signed == FakeSigned("0xa", 7)
    assert orders["0xb"].state is S.PENDING_CANCEL
    assert [f.key for f in state.fills] == [("t1", "0xa"), ("t2", "0xa")]
    assert state.reversed == [("t2", "0xa")]
    assert state.trade_statuses == {"t1": TradeStatus.MATCHED, "t2": TradeStatus.FAILED}
    assert state.cursors == {"trades": "NTA="}
    assert j2.state_history("0xa") == [
        ("PENDING_SUBMIT", 0), ("LIVE", 0), ("PARTIALLY_FILLED", 4 * U), ("PARTIALLY_FILLED", 5 * U),
        ("PARTIALLY_FILLED", 4 * U),  # t2 filled then reversed
    ]
    # a reconciler loaded from it never delivers a seen fill again
    rec2 = Reconciler(journal=j2)
    rec2.load(state.orders, state.fills, state.reversed, state.trade_statuses, state.cursors)
    out = rec2.on_trades_page([trade("t1", "0xa", 4), trade("t2", "0xa", 1, "FAILED")], 6.0)
    assert not [x for x in out if isinstance(x, (Fill, FillReversal))]
    j2.close()


def test_restore_after_kill_9(tmp_path):
    path = tmp_path / "k.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {REPO!r})
        from bot.execution.journal import Journal
        from bot.execution.orders import OwnOrder
        from bot.execution.reconciler import Reconciler
        from bot.venue.enums import Side
        j = Journal({str(path)!r})
        rec = Reconciler(journal=j)
        rec.on_places_sent([OwnOrder("0xa", "tok", Side.BUY, 500000, 10000000, signed={{"hash": "0xa"}})], 1.0)
        rec.on_trade_event({{"id": "t1", "taker_order_id": "0xa", "asset_id": "tok", "side": "BUY",
                             "size": "3", "price": "0.5", "status": "MINED", "maker_orders": []}}, 2.0)
        from bot.portfolio.pnl import DailyPnl
        daily = DailyPnl(on_new_day=j.day_start)
        daily.observe(19000 * 86400 + 7, -1234567)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], timeout=30)
    assert proc.returncode == -signal.SIGKILL
    state = Journal(path).restore()
    assert [(o.order_id, o.state, o.filled, o.signed) for o in state.orders] == [
        ("0xa", S.PARTIALLY_FILLED, 3 * U, {"hash": "0xa"})
    ]
    assert [(f.key, f.is_maker, f.status) for f in state.fills] == [(("t1", "0xa"), False, TradeStatus.MINED)]
    assert state.day_start == DayStart(19000, -1234567)


def test_day_start_round_trip_keeps_one_exact_row(tmp_path):
    path = tmp_path / "d.sqlite"
    j = Journal(path)
    assert j.restore().day_start is None
    j.day_start(DayStart(19000, 7))
    big = 9_000_000_000_000_123_457  # exact beyond a float's 53 bits
    j.day_start(DayStart(19001, -big))
    del j  # dropped without close: each day start is committed as it is written

    j2 = Journal(path)
    assert j2.restore().day_start == DayStart(19001, -big)
    assert j2._db.execute("SELECT COUNT(*) FROM day_start").fetchone()[0] == 1
    j2.close()


def test_day_start_survives_a_restart_the_same_day_and_not_the_next(tmp_path):
    path = tmp_path / "r.sqlite"
    day = 19000
    j = Journal(path)
    first = DailyPnl.resume(j.restore().day_start, day * 86400 + 3600, on_new_day=j.day_start)
    assert first.observe(day * 86400 + 3600, 10 * U) == 0
    assert first.observe(day * 86400 + 7200, 4 * U) == -6 * U
    del first, j  # the run dies

    j = Journal(path)
    again = DailyPnl.resume(j.restore().day_start, day * 86400 + 7300, on_new_day=j.day_start)
    assert again.observe(day * 86400 + 7300, 4 * U) == -6 * U  # not 0: the day goes on
    j.close()

    j = Journal(path)
    tomorrow = (day + 1) * 86400 + 60
    fresh = DailyPnl.resume(j.restore().day_start, tomorrow, on_new_day=j.day_start)
    assert fresh.observe(tomorrow, 4 * U) == 0  # a new UTC day starts afresh
    assert j.restore().day_start == DayStart(day + 1, 4 * U)
    j.close()


def position(fills, reversed_keys):
    return sum(f.size if f.side is Side.BUY else -f.size for f in fills if f.key not in reversed_keys)


def test_restart_merge_no_duplicate_fill_no_orphan_no_lost_position():
    # journal: a live (t1 fill seen), b live, c pending cancel, d pending submit at the crash
    a, b, c, d = own("0xa"), own("0xb"), own("0xc"), own("0xd")
    a.state, a.filled = S.PARTIALLY_FILLED, 2 * U
    b.state = S.LIVE
    c.state = S.PENDING_CANCEL
    d.state = S.PENDING_SUBMIT
    seen = Fill("t1", "0xa", TOK, Side.BUY, 500_000, 2 * U, status=TradeStatus.MATCHED)
    state = JournalState([a, b, c, d], [seen], [], {"t1": TradeStatus.MATCHED}, {"trades": "MA=="})
    # exchange: t1 confirmed, t2 new on a, t3 failed on b, b filled away; c still live; an orphan
    trades = [trade("t1", "0xa", 2, "CONFIRMED"), trade("t2", "0xa", 3, "MINED"), trade("t3", "0xb", 10, "FAILED"),
              trade("t4", "0xb", 10, "CONFIRMED")]
    open_orders = [live("0xa", "5"), live("0xc"), live("0xorphan")]
    r = Reconciler(ReconcilerConfig(orphan_policy="cancel"))
    out = restore(r, state, open_orders, trades, now=100.0, trades_cursor="MA==", next_cursor="LTE=")
    new_fills = [x for x in out if isinstance(x, Fill)]
    assert sorted(f.key for f in new_fills) == [("t2", "0xa"), ("t3", "0xb"), ("t4", "0xb")]  # t1 not again
    rev = {x.fill.key for x in out if isinstance(x, FillReversal)}
    assert rev == {("t3", "0xb")}
    assert CancelOrder("0xorphan") in out
    assert r.orders.get("0xa").state is S.PARTIALLY_FILLED and r.orders.get("0xa").filled == 5 * U
    assert r.orders.get("0xb").state is S.FILLED
    assert r.orders.get("0xc").state is S.LIVE  # its cancel was lost in the crash: the router may cancel again
    assert r.orders.get("0xd").state is S.CANCELED  # never reached the venue; not resent
    assert r.trade_status("t1") is TradeStatus.CONFIRMED
    # no lost position: journal + new - reversed == what the exchange's trades say
    all_fills = [seen] + new_fills
    exchange = Counter()
    for t in trades:
        if t["status"] != "FAILED":
            exchange[t["maker_orders"][0]["order_id"]] += int(t["size"]) * U
    assert position(all_fills, rev) == sum(exchange.values())
    # the journal state given in is untouched (pure)
    assert a.filled == 2 * U and c.state is S.PENDING_CANCEL and d.state is S.PENDING_SUBMIT
    # merging the same again finds nothing new
    again = restore(
        Reconciler(),
        JournalState(list(r.orders), r.fills(), [k for k in rev], {"t1": TradeStatus.CONFIRMED,
                     "t2": TradeStatus.MINED, "t3": TradeStatus.FAILED, "t4": TradeStatus.CONFIRMED}, {}),
        open_orders[:2], trades, now=200.0,
    )
    assert not [x for x in again if isinstance(x, (Fill, FillReversal))]


def test_what_the_journal_remembers_of_orders_is_bounded_by_the_working_ones(tmp_path):
    # a long run journals orders by the hundred thousand: closed ones are not kept in memory
    j = Journal(tmp_path / "j.sqlite", synchronous="NORMAL")
    for i in range(500):
        o = own(f"0x{i:04x}")
        for state in (OrderState.PENDING_SUBMIT, OrderState.LIVE, OrderState.CANCELED):
            o.state = state
            j.order(o)
    still = own("0xffff")
    still.state = OrderState.LIVE
    j.order(still)
    j.commit()
    assert len(j._last_state) == 1
    assert j.state_history("0x0007") == [("PENDING_SUBMIT", 0), ("LIVE", 0), ("CANCELED", 0)]
    j.close()


def test_a_fill_off_the_price_grid_keeps_its_cash_through_a_restart(tmp_path):
    import sqlite3

    from bot.execution.journal import _SCHEMA
    from bot.venue.enums import Side

    path = tmp_path / "j.sqlite"
    j = Journal(path)
    off = Fill("t1", "0xa", "111", Side.BUY, 721_000, 11_371_898, notional_e12=8_199_139 * 1_000_000)
    on = Fill("t2", "0xa", "111", Side.BUY, 720_000, 4_000_000)
    j.fill(off)
    j.fill(on)
    j.commit()
    j.close()
    assert Journal(path).restore().fills == [off, on]
    # a journal written before the column existed: it is added, its fills read as on the grid
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.executescript(_SCHEMA.replace("    notional_e12 INTEGER,\n", ""))
    db.execute("INSERT INTO fills (trade_id, order_id, token_id, side, price, size, fee, is_maker, status, ts, seq)"
               " VALUES ('t9', '0xb', '111', 'SELL', 500000, 1000000, 0, 1, 'CONFIRMED', 1.0, 1)")
    db.commit()
    db.close()
    (fill,) = Journal(old).restore().fills
    assert (fill.trade_id, fill.notional_e12) == ("t9", None)


def test_replaced_fills_keep_the_cash_they_were_booked_at(tmp_path):
    """A restart's repair writes a trade's fills anew: every field, the off-grid cash included."""
    from bot.venue.enums import Side

    path = tmp_path / "j.sqlite"
    j = Journal(path)
    j.fill(Fill("t1", "0xa", "111", Side.BUY, 721_000, 11_000_000))
    j.commit()
    off = Fill("t1", "0xa", "111", Side.BUY, 721_000, 11_371_898, notional_e12=8_199_139 * 1_000_000)
    j.replace_fills("t1", [off], set())
    j.close()
    assert Journal(path).restore().fills == [off]
