"""The comparison of two runs: pairing orders and fills, their causes, and our own live orders
taken out of a recorded book."""

from __future__ import annotations

from pathlib import Path

import msgspec

from bot.backtest.compare import align_fills, align_orders, compare_runs, own_orders_out, resting_levels
from bot.results.read import FillRecord, OrderChange, RunOrder, RunResults
from bot.execution.orders import OrderState as S
from bot.venue.enums import Side, TradeStatus
from bot.venue.models.ws import decode_market_frame

REPO = Path(__file__).resolve().parents[2]

U = 1_000_000


def order(oid, t, price=490_000, size=10 * U, side=Side.BUY, live_at=None, end=None, end_state=S.CANCELED,
          filled=0):
    changes = [OrderChange(S.PENDING_SUBMIT, 0, t), OrderChange(S.LIVE, 0, live_at if live_at is not None else t + 0.01)]
    if end is not None:
        changes.append(OrderChange(end_state, filled, end))
    return RunOrder(oid, "tok", side, price, size, t, tuple(changes))


def fill(oid, ts, price=490_000, size=10 * U, side=Side.BUY, tid=None):
    return FillRecord(tid or f"t-{oid}-{ts}", oid, "tok", side, price, size, 0, True, TradeStatus.CONFIRMED, ts)


def run(orders, fills):
    return RunResults("x", "live", tuple(orders), tuple(fills))


def test_orders_pair_by_token_side_price_size_nearest_in_time():
    live = [order("a", 10.0), order("b", 11.0, price=500_000)]
    bt = [order("x", 10.9), order("y", 10.1), order("z", 11.05, price=500_000), order("w", 30.0)]
    pairs = {(p.live.order_id if p.live else None, p.backtest.order_id if p.backtest else None)
             for p in align_orders(live, bt, window_s=2.0)}
    assert pairs == {("a", "y"), ("b", "z"), (None, "x"), (None, "w")}


def test_fills_pair_on_the_same_price_and_side_within_the_window():
    a = [fill("a", 10.0), fill("a", 20.0)]
    b = [fill("x", 10.8), fill("x", 25.0), fill("y", 10.5, side=Side.SELL)]
    assert [(p.ts, q.ts) for p, q in align_fills(a, b, 2.0)] == [(10.0, 10.8)]


def test_an_unpaired_fill_is_latency_when_its_twin_was_not_resting_and_queue_when_it_was():
    live = run([order("a", 10.0, end=15.0), order("b", 20.0, end=25.0)], [fill("a", 12.0), fill("b", 22.0)])
    # twin of a arrived after the print (latency); twin of b rested through it (queue)
    bt = run([order("x", 10.0, live_at=13.5, end=15.0), order("y", 20.0, end=25.0)], [])
    c = compare_runs(live, bt, fill_window_s=1.0, mark={"tok": 500_000})
    assert {g.fill.order_id: g.cause for g in c.gaps} == {"a": "latency", "b": "queue"}
    assert c.agreement == 0.0 and c.main_cause in ("latency", "queue")
    assert c.pnl_by_cause["latency"] == c.pnl_by_cause["queue"] == 100_000  # 10 shares 0.01 under the mark


def test_our_live_orders_leave_the_recorded_levels_while_they_rested():
    o = order("a", 10.0, price=480_000, size=30 * U, end=20.0)
    levels = resting_levels([o], [fill("a", 15.0, price=480_000, size=10 * U)])
    spans = levels[("tok", True, 480_000)].spans
    assert spans == [(10.0, 15.0, 30 * U), (15.0, 20.0, 20 * U)]
    view = own_orders_out([o], [fill("a", 15.0, price=480_000, size=10 * U)])
    frame = (b'{"event_type":"price_change","market":"m","timestamp":"1","price_changes":'
             b'[{"asset_id":"tok","price":"0.48","side":"BUY","size":"50"}]}')
    (ev,) = decode_market_frame(frame)
    assert view(int(12e9), ev).price_changes[0].size == "20"  # 50 shown, 30 of them ours
    assert view(int(16e9), ev).price_changes[0].size == "30"  # 20 of ours left after the fill
    assert view(int(25e9), ev).price_changes[0].size == "50"  # gone: the level is all others'


def test_a_fill_without_a_twin_is_latency_while_the_other_run_was_cancelling_at_its_price():
    # the other run had an order at 0.49 whose cancel was on the wire at 12.0 (it places no order
    # beside one it is cancelling): its latency, not its quotes, kept it from the fill; at 0.48 it
    # had nothing at all
    live = run([order("a", 10.0, end=15.0), order("b", 10.0, price=480_000, end=15.0)],
               [fill("a", 12.0), fill("b", 12.0, price=480_000)])
    cancelling = RunOrder("x", "tok", Side.BUY, 490_000, 4 * U, 10.2,  # not a's twin: another size
                             (OrderChange(S.PENDING_SUBMIT, 0, 10.2), OrderChange(S.LIVE, 0, 10.3),
                              OrderChange(S.PENDING_CANCEL, 0, 11.0), OrderChange(S.CANCELED, 0, 13.5)))
    bt = run([cancelling], [])
    c = compare_runs(live, bt, fill_window_s=1.0, mark={"tok": 500_000})
    assert {g.fill.order_id: g.cause for g in c.gaps} == {"a": "latency", "b": "quotes"}


def test_a_fill_without_a_twin_is_latency_while_the_other_run_had_an_order_on_that_side_on_its_way_in():
    # the other run's bid at 0.47 was sent at 11.5 and rested only at 12.6 (the bot quotes around
    # its own orders on the wire, so its quote at 0.49 waited on that round trip): latency; a
    # fill at 14.0, long after it rested and with nothing else on the wire, is the quotes'
    live = run([order("a", 10.0, end=15.0), order("b", 13.9, end=15.0)], [fill("a", 12.0), fill("b", 14.0)])
    arriving = RunOrder("y", "tok", Side.BUY, 470_000, 10 * U, 11.5,
                           (OrderChange(S.PENDING_SUBMIT, 0, 11.5), OrderChange(S.LIVE, 0, 12.6)))
    c = compare_runs(live, run([arriving], []), fill_window_s=0.5, mark={"tok": 500_000})
    assert sorted((g.fill.ts, g.cause) for g in c.gaps) == [(12.0, "latency"), (14.0, "quotes")]
    # an order on the other side on its way in says nothing of this side
    other_side = msgspec.structs.replace(arriving, side=Side.SELL, price=530_000)
    c = compare_runs(live, run([other_side], []), fill_window_s=0.5, mark={"tok": 500_000})
    assert [g.cause for g in c.gaps] == ["quotes", "quotes"]


def test_a_recording_that_misses_part_of_the_session_is_named_with_the_missing_span():
    from bot.backtest.compare import missing_span

    t0 = 1_780_000_000.0
    assert missing_span((t0, t0 + 60), (t0 - 1, t0 + 61)) is None
    assert missing_span((t0, t0 + 60), (t0 + 4, t0 + 56)) is None  # within the slack at both ends
    assert missing_span(None, None) is None  # no orders: nothing to compare, nothing missing
    late = missing_span((t0, t0 + 60), (t0 + 30, t0 + 90))
    assert "missing 2026-05-28 20:26:40 UTC to 2026-05-28 20:27:10 UTC" in late
    other_day = missing_span((t0, t0 + 60), (t0 - 86_400, t0 - 86_000))
    assert other_day.startswith("the recording (2026-05-27") and "missing 2026-05-28 20:26:40 UTC to 2026-05-28 20:27:40 UTC" in other_day
    both = missing_span((t0, t0 + 60), (t0 + 10, t0 + 50))
    assert both.count(" to ") == 4 and " and " in both
    assert "holds no events" in missing_span((t0, t0 + 60), None)


def test_the_recordings_span_is_read_from_its_events():
    from bot.backtest.compare import recording_span
    from bot.backtest.replay import replay

    sample = REPO / "data" / "sample"
    times = [t for t, _ in replay([sample], cache=False)]
    assert recording_span([sample]) == (times[0] / 1e9, times[-1] / 1e9)
