"""Reconciler properties: any interleaving, duplication or reordering of trade events, REST pages
and acks gives each fill exactly once, the final settlement status, and one reversal per FAILED fill."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.events import Fill, FillReversal, SettlementUpdate
from bot.execution.orders import OwnOrder
from bot.execution.reconciler import Reconciler
from bot.venue.enums import Side, TradeStatus

U = 1_000_000
TOK = "tok"
OURS = ("0xa", "0xb", "0xc")

PATHS = {
    "CONFIRMED": ["MATCHED", "MINED", "CONFIRMED"],
    "CONFIRMED_RETRY": ["MATCHED", "RETRYING", "MINED", "CONFIRMED"],
    "FAILED": ["MATCHED", "RETRYING", "FAILED"],
    "FAILED_FAST": ["MATCHED", "FAILED"],
}

trade_st = st.tuples(
    st.sampled_from(OURS),  # our order in it
    st.booleans(),  # we are the taker (else a maker among others)
    st.integers(1, 5),  # size
    st.sampled_from(sorted(PATHS)),
    st.booleans(),  # include a REST copy with the TRADE_STATUS_ prefix
)


def trade_dict(tid, ours, taker, size, status, prefix):
    makers = [{"order_id": "0xnotours", "matched_amount": "1", "price": "0.5", "asset_id": TOK, "side": "BUY"}]
    if not taker:
        makers.append({"order_id": ours, "matched_amount": str(size), "price": "0.5", "asset_id": TOK, "side": "BUY"})
    return {
        "id": tid, "taker_order_id": ours if taker else "0xsomeone", "asset_id": TOK, "side": "SELL",
        "size": str(size), "price": "0.5", "market": "0xm", "match_time": "1700000000",
        "status": ("TRADE_STATUS_" + status) if prefix else status, "maker_orders": makers,
    }


@settings(max_examples=150, deadline=None)
@given(st.lists(trade_st, min_size=1, max_size=8), st.data())
def test_any_interleaving_gives_each_fill_once(trades, data):
    events = []
    expected_final = {}
    expected_fill = {}
    for i, (ours, taker, size, path, rest) in enumerate(trades):
        tid = f"t{i}"
        statuses = PATHS[path]
        expected_final[tid] = TradeStatus(statuses[-1])
        expected_fill[(tid, ours)] = size * U
        for s in statuses:
            events.append(("ws", trade_dict(tid, ours, taker, size, s, False)))
            if rest:
                events.append(("rest", trade_dict(tid, ours, taker, size, s, True)))
    # duplicates
    events += data.draw(st.lists(st.sampled_from(events), max_size=6))
    # our orders become known (sent) and acked at arbitrary points
    for oid in OURS:
        events.append(("sent", oid))
        events.append(("ack", oid))
    order = data.draw(st.permutations(range(len(events))))
    events = [events[i] for i in order]
    # an ack cannot come before its send
    for oid in OURS:
        si = events.index(("sent", oid))
        ai = events.index(("ack", oid))
        if ai < si:
            events[si], events[ai] = events[ai], events[si]

    rec = Reconciler()
    out = []
    for i, (kind, payload) in enumerate(events):
        now = float(i)
        if kind == "ws":
            out += rec.on_trade_event(payload, now)
        elif kind == "rest":
            out += rec.on_trades_page([payload], now, cursor="MA==", next_cursor="LTE=")
        elif kind == "sent":
            out += rec.on_places_sent([OwnOrder(payload, TOK, Side.BUY, 500_000, 100 * U)], now)
        else:
            out += rec.on_ack(payload, {"success": True, "errorMsg": "", "orderID": payload, "status": "live"}, now)

    fills = [x for x in out if isinstance(x, Fill)]
    keys = Counter(f.key for f in fills)
    assert set(keys) == set(expected_fill) and all(n == 1 for n in keys.values())
    assert all(f.size == expected_fill[f.key] for f in fills)
    reversals = Counter(x.fill.key for x in out if isinstance(x, FillReversal))
    failed = {k for k in expected_fill if expected_final[k[0]] is TradeStatus.FAILED}
    assert set(reversals) == failed and all(n == 1 for n in reversals.values())
    last = {}
    for x in out:
        if isinstance(x, SettlementUpdate):
            last[x.trade_id] = x.status
    assert last == expected_final
    assert rec.held_trades == []
    for oid in OURS:
        want = sum(v for (tid, o), v in expected_fill.items() if o == oid and expected_final[tid] is not TradeStatus.FAILED)
        assert rec.orders.get(oid).filled == want
