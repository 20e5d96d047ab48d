"""Reconciler: acks, cancel results, user-stream events and REST pages into state and fills."""

from __future__ import annotations

import base64

import pytest

from bot.core.events import Fill, FillReversal, SettlementUpdate
from bot.core.intents import CancelOrder
from bot.execution.orders import OrderState, OwnOrder
from bot.execution.reconciler import OrderUpdate, Reconciler, ReconcilerConfig, advance_status
from bot.execution.protocol import FetchTrades, LookupOrder, ResendOrder
from bot.execution.records import order_record, order_result, trade_record
from bot.venue.enums import OrderType, Side, TradeStatus

S = OrderState
U = 1_000_000
TOK = "111"


def own(oid="0xa", side=Side.BUY, price=400_000, size=10 * U, order_type=OrderType.GTC) -> OwnOrder:
    return OwnOrder(oid, TOK, side, price, size, order_type=order_type, signed={"hash": oid})


def ack(oid, status="live", success=True, error=""):
    return {"success": success, "errorMsg": error, "orderID": oid if success else "", "status": status,
            "makingAmount": "", "takingAmount": "", "orderHash": oid}


def trade(tid, status="MATCHED", taker="0xother", makers=(), side="SELL", size="5", price="0.4"):
    return {
        "id": tid, "taker_order_id": taker, "market": "0xm", "asset_id": TOK, "side": side, "size": size,
        "price": price, "status": status, "match_time": "1700000000", "fee_rate_bps": "0",
        "maker_orders": [
            {"order_id": oid, "matched_amount": amt, "price": px, "asset_id": TOK, "side": mside, "owner": owner}
            for oid, amt, px, mside, owner in makers
        ],
    }


def maker(oid, amt="5", px="0.4", side="BUY", owner=""):
    return (oid, amt, px, side, owner)


def oevent(oid, status="LIVE", typ="UPDATE", matched="0", size="10", price="0.4", side="BUY"):
    return {"id": oid, "asset_id": TOK, "market": "0xm", "side": side, "price": price, "original_size": size,
            "size_matched": matched, "status": status, "type": typ, "associate_trades": None}


def of(out, kind):
    return [x for x in out if isinstance(x, kind)]


def sent(rec, *orders, now=0.0):
    return rec.on_places_sent(list(orders), now)


def test_accepted_rule_follows_venue():
    assert order_result(ack("0xa")).accepted
    assert order_result(ack("0xa", status="delayed")).accepted
    assert not order_result(ack("0xa", status="unmatched")).accepted
    assert not order_result({"success": True, "errorMsg": "", "orderID": "", "status": "live"}).accepted
    assert not order_result({"success": True, "errorMsg": "x", "orderID": "0xa", "status": "live"}).accepted
    assert order_result({"success": True, "errorMsg": None, "orderID": "0xa", "status": "LIVE"}).accepted


def test_ack_makes_live_and_rejection_rejects():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    out = rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb", success=False, error="invalid nonce")], 1.0)
    assert rec.orders.get("0xa").state is S.LIVE
    b = rec.orders.get("0xb")
    assert b.state is S.REJECTED and b.reason == "invalid nonce"
    assert [u.state for u in of(out, OrderUpdate)] == [S.LIVE, S.REJECTED]


def test_market_order_matched_ack_is_terminal():
    rec = Reconciler()
    sent(rec, own("0xa", order_type=OrderType.FOK))
    rec.on_ack("0xa", ack("0xa", status="matched"), 1.0)
    assert rec.orders.get("0xa").state is S.FILLED


def test_taker_and_maker_legs_become_fills_once():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xt", side=Side.SELL, price=390_000))
    rec.on_acks(["0xa", "0xt"], [ack("0xa"), ack("0xt")], 1.0)
    # we are maker (0xa) at our price, and taker (0xt) selling into someone else
    t1 = trade("t1", makers=[maker("0xother", "2", "0.41"), maker("0xa", "3", "0.40")])
    out = rec.on_trade_event(t1, 2.0)
    fills = of(out, Fill)
    assert [(f.order_id, f.size, f.price, f.is_maker, f.side, f.fee) for f in fills] == [
        ("0xa", 3 * U, 400_000, True, Side.BUY, 0)]
    t2 = trade("t2", taker="0xt", makers=[maker("0xzz", "5", "0.40")], side="SELL")
    f2 = of(rec.on_trade_event(t2, 3.0), Fill)
    assert [(f.order_id, f.size, f.price, f.is_maker, f.side) for f in f2] == [("0xt", 5 * U, 400_000, False, Side.SELL)]
    # re-emissions and REST copies of the same trade: no new fill, only settlement moves
    out = rec.on_trade_event(trade("t1", "MINED", makers=[maker("0xother", "2", "0.41"), maker("0xa", "3", "0.40")]), 4.0)
    assert of(out, Fill) == [] and of(out, SettlementUpdate) == [SettlementUpdate("t1", TradeStatus.MINED)]
    out = rec.on_trades_page([t1, t2], 5.0, cursor="MA==", next_cursor="MTAw")
    assert of(out, Fill) == [] and of(out, SettlementUpdate) == []
    assert rec.trade_status("t1") is TradeStatus.MINED  # stale MATCHED copy did not roll it back
    assert rec.trades_cursor == "MA=="  # our trades on that page are not settled: it is read again
    a = rec.orders.get("0xa")
    assert a.state is S.PARTIALLY_FILLED and a.filled == 3 * U and a.trade_ids == ["t1"]


def test_failed_trade_is_reversed_exactly_once():
    rec = Reconciler()
    sent(rec, own("0xa"))
    t = lambda s: trade("t1", s, makers=[maker("0xa", "10")])  # noqa: E731
    rec.on_trade_event(t("MATCHED"), 1.0)
    assert rec.orders.get("0xa").state is S.FILLED
    out = rec.on_trade_event(t("RETRYING"), 2.0) + rec.on_trade_event(t("FAILED"), 3.0)
    out += rec.on_trade_event(t("FAILED"), 4.0) + rec.on_trade_event(t("MINED"), 5.0)
    assert len(of(out, FillReversal)) == 1
    assert of(out, SettlementUpdate)[-1] == SettlementUpdate("t1", TradeStatus.FAILED)
    assert rec.orders.get("0xa").filled == 0
    assert rec.trade_status("t1") is TradeStatus.FAILED


def test_first_sight_failed_still_gives_fill_then_reversal():
    rec = Reconciler()
    sent(rec, own("0xa"))
    out = rec.on_trade_event(trade("t1", "TRADE_STATUS_FAILED", makers=[maker("0xa")]), 1.0)
    kinds = [type(x).__name__ for x in out if not isinstance(x, OrderUpdate)]
    assert kinds == ["Fill", "SettlementUpdate", "FillReversal"]


def test_fill_before_ack_is_held_and_matched_when_the_order_becomes_known():
    rec = Reconciler()
    out = rec.on_trade_event(trade("t1", makers=[maker("0xa", "4")]), 1.0)
    assert of(out, Fill) == [] and rec.held_trades == ["t1"]
    rec.on_trade_event(trade("t1", "MINED", makers=[maker("0xa", "4")]), 1.5)
    out = sent(rec, own("0xa"), now=2.0)
    fills = of(out, Fill)
    assert len(fills) == 1 and fills[0].size == 4 * U and fills[0].status is TradeStatus.MINED
    assert rec.held_trades == [] and rec.orders.get("0xa").updated_at == 2.0
    out = rec.on_ack("0xa", ack("0xa", status="matched"), 3.0)
    assert of(out, Fill) == []
    assert rec.orders.get("0xa").state is S.PARTIALLY_FILLED  # ack cannot roll a fill back to LIVE


def test_known_pending_order_fill_counts_before_ack():
    rec = Reconciler()
    sent(rec, own("0xa"))
    out = rec.on_trade_event(trade("t1", makers=[maker("0xa", "10")]), 1.0)
    assert len(of(out, Fill)) == 1 and rec.orders.get("0xa").state is S.FILLED
    rec.on_ack("0xa", ack("0xa"), 2.0)
    assert rec.orders.get("0xa").state is S.FILLED


def test_owner_marks_our_maker_leg_of_an_unknown_order():
    rec = Reconciler(ReconcilerConfig(owner="key-1"))
    sent(rec, own("0xt", side=Side.SELL))
    t = trade("t1", taker="0xt", makers=[maker("0xm", "5", owner="key-1"), maker("0xz", "5", owner="key-2")])
    rec.on_trade_event(t, 1.0)
    assert rec.held_trades == ["t1"]
    out = sent(rec, own("0xm"), now=2.0)
    assert [f.order_id for f in of(out, Fill)] == ["0xm"]


def test_order_events_case_insensitive_and_any_canceled():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    rec.on_order_event(oevent("0xa", "live", "PLACEMENT"), 1.0)
    assert rec.orders.get("0xa").state is S.LIVE
    rec.on_order_event(oevent("0xa", "LIVE", "UPDATE", matched="4"), 2.0)
    a = rec.orders.get("0xa")
    assert a.state is S.PARTIALLY_FILLED and a.remaining == 6 * U and a.filled == 0
    rec.on_order_event(oevent("0xa", "Canceled_Market_Resolved", "UPDATE", matched="4"), 3.0)
    assert a.state is S.CANCELED
    rec.on_order_event(oevent("0xa", "LIVE", "UPDATE"), 4.0)  # late, stale
    assert a.state is S.CANCELED
    rec.on_order_event(oevent("0xb", "LIVE", "CANCELLATION"), 5.0)
    assert rec.orders.get("0xb").state is S.CANCELED


def test_submit_timeout_goes_unknown_and_is_resolved_not_resent_blindly():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    out = rec.on_place_failed(["0xa", "0xb"], 1.0, unknown=True, reason="timeout")
    assert of(out, LookupOrder) == [LookupOrder("0xa"), LookupOrder("0xb")]
    assert rec.orders.get("0xa").state is S.UNKNOWN
    # 0xa is on the venue: resolved live; 0xb is absent: resend the same signed order
    rec.on_order_lookup("0xa", oevent("0xa", "LIVE", ""), 2.0)
    assert rec.orders.get("0xa").state is S.LIVE
    out = rec.on_order_lookup("0xb", None, 2.0)
    assert out == [ResendOrder("0xb", {"hash": "0xb"})]
    out = rec.on_places_sent([own("0xb")], 3.0)
    assert rec.orders.get("0xb").state is S.PENDING_SUBMIT


def test_a_lookup_asked_before_a_resend_does_not_close_the_resent_order():
    # the venue did not have 0xa when asked: it is resent; a second lookup, asked before the
    # resend (two were asked: the failed POST and a listing), answers "absent" after it left
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_place_failed(["0xa"], 1.0, unknown=True)
    assert rec.on_order_lookup("0xa", None, 2.0) == [ResendOrder("0xa", {"hash": "0xa"})]
    rec.on_places_sent([own("0xa")], 3.0)
    assert rec.on_order_lookup("0xa", None, 3.1) == []  # on its way: absence proves nothing
    assert rec.orders.get("0xa").state is S.PENDING_SUBMIT
    rec.on_acks(["0xa"], [ack("0xa")], 3.2)
    assert rec.on_order_lookup("0xa", None, 3.3, as_of=2.5) == []  # asked before the venue showed it
    assert rec.orders.get("0xa").state is S.LIVE
    # a lookup asked after the venue answered is believed
    assert rec.on_order_lookup("0xa", None, 4.0, as_of=3.5)[0].state is S.CANCELED


def test_plain_http_failure_rejects_nothing_placed():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_place_failed(["0xa"], 1.0, unknown=False, reason="429")
    assert rec.orders.get("0xa").state is S.REJECTED


def test_unknown_order_seen_in_trades_is_resolved_by_the_fill():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_place_failed(["0xa"], 1.0, unknown=True)
    rec.on_trades_page([trade("t1", makers=[maker("0xa", "3")])], 2.0)
    assert rec.orders.get("0xa").state is S.PARTIALLY_FILLED
    assert rec.on_order_lookup("0xa", None, 3.0) == [OrderUpdate("0xa", TOK, S.CANCELED, 3 * U, 0, "")]


def test_cancel_results():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"), own("0xc"), own("0xd"))
    rec.on_acks(["0xa", "0xb", "0xc"], [ack("0xa"), ack("0xb"), ack("0xc")], 1.0)
    rec.on_cancels_sent(["0xa", "0xb", "0xc", "0xd"], 2.0)
    assert rec.orders.get("0xa").state is S.PENDING_CANCEL
    out = rec.on_cancel_result(
        {"canceled": ["0xa"], "not_canceled": {"0xb": "order already matched", "0xd": "not found"}},
        3.0, requested=["0xa", "0xb", "0xc", "0xd"],
    )
    assert rec.orders.get("0xa").state is S.CANCELED
    assert rec.orders.get("0xb").state is S.CANCELED  # closed on the venue already
    assert rec.orders.get("0xb").reason == "order already matched"
    assert rec.orders.get("0xc").state is S.LIVE  # no answer for it: back to where it was
    assert rec.orders.get("0xd").state is S.PENDING_SUBMIT  # cancel overtook the POST
    assert FetchTrades(("0xb",)) in out
    rec.on_ack("0xd", ack("0xd"), 4.0)
    assert rec.orders.get("0xd").state is S.LIVE


def test_an_order_closed_by_already_matched_is_filled_once_its_fills_show_it():
    """The venue's "already canceled or matched" closes an order before its fills are read; when
    they come and cover its whole size, it is journaled as what happened: FILLED (a part only
    leaves it CANCELED)."""

    class Sink:
        def __init__(self):
            self.states: list[tuple[str, OrderState]] = []

        def order(self, o):
            self.states.append((o.order_id, o.state))

        fill = reversal = trade_status = cursor = commit = lambda self, *a: None

    sink = Sink()
    rec = Reconciler(journal=sink)
    sent(rec, own("0xa"), own("0xb"))
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 1.0)
    rec.on_cancels_sent(["0xa", "0xb"], 2.0)
    answer = {"canceled": [], "not_canceled": {"0xa": "already canceled or matched",
                                               "0xb": "already canceled or matched"}}
    out = rec.on_cancel_result(answer, 3.0, requested=["0xa", "0xb"])
    assert rec.orders.get("0xa").state is S.CANCELED and FetchTrades(("0xa", "0xb")) in out
    rec.on_trades_page([trade("t1", makers=[maker("0xa", "10"), maker("0xb", "4")], size="14")], 4.0)
    assert rec.orders.get("0xa").state is S.FILLED and rec.orders.get("0xa").filled == 10 * U
    assert rec.orders.get("0xb").state is S.CANCELED and rec.orders.get("0xb").filled == 4 * U
    assert sink.states[-1] == ("0xb", S.CANCELED) and ("0xa", S.FILLED) in sink.states


def test_ack_arriving_during_pending_cancel():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_cancels_sent(["0xa"], 1.0)
    rec.on_ack("0xa", ack("0xa"), 2.0)
    assert rec.orders.get("0xa").state is S.PENDING_CANCEL
    rec.on_cancel_failed(["0xa"], 3.0)
    assert rec.orders.get("0xa").state is S.LIVE


def test_open_orders_snapshot_orphans_and_absent():
    rec = Reconciler(ReconcilerConfig(orphan_policy="cancel"))
    sent(rec, own("0xa"), own("0xb"), own("0xc"), now=0.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 1.0)
    sent(rec, own("0xlate"), now=6.0)
    out = rec.on_open_orders([oevent("0xa", "LIVE", ""), oevent("0xorphan", "LIVE", "")], 7.0, as_of=5.0)
    assert CancelOrder("0xorphan") in out
    assert rec.orders.get("0xa").state is S.LIVE
    assert rec.orders.get("0xb").state is S.CANCELED  # we thought it live, venue does not show it
    assert FetchTrades(("0xb",)) in out
    assert rec.orders.get("0xc").state is S.PENDING_SUBMIT  # unanswered: the ack decides
    assert rec.orders.get("0xlate").state is S.PENDING_SUBMIT  # sent after the listing
    out = rec.on_open_orders([oevent("0xorphan", "LIVE", "")], 8.0, as_of=8.0)
    assert CancelOrder("0xorphan") in out  # still open there: asked again (the router paces repeats)
    assert rec.orphans_unknown == 2


def test_a_cancel_that_overtook_its_place_proves_nothing_even_when_answered_after_the_ack():
    rec = Reconciler()
    sent(rec, own("0xa"), now=0.0)
    rec.on_cancels_sent(["0xa"], 0.01)  # the submit is not answered yet
    rec.on_ack("0xa", ack("0xa"), 0.05)  # the place got there (after the cancel did)
    out = rec.on_cancel_result({"canceled": [], "not_canceled": {"0xa": "order not found"}}, 0.08, ["0xa"])
    o = rec.orders.get("0xa")
    assert o.state is S.LIVE and o.is_working  # live at the venue: still ours to cancel
    assert o.answered_at == 0.05
    assert not of(out, FetchTrades)


def test_not_found_for_a_cancel_sent_after_the_ack_closes_the_order():
    rec = Reconciler()
    sent(rec, own("0xa"), now=0.0)
    rec.on_ack("0xa", ack("0xa"), 0.05)
    rec.on_cancels_sent(["0xa"], 0.1)
    out = rec.on_cancel_result({"canceled": [], "not_canceled": {"0xa": "order not found"}}, 0.2, ["0xa"])
    assert rec.orders.get("0xa").state is S.CANCELED
    assert FetchTrades(("0xa",)) in out  # closed there: filled or cancelled, the trades tell


def test_a_listing_does_not_close_an_order_answered_after_it_was_asked_for():
    rec = Reconciler()
    sent(rec, own("0xa"), now=0.0)
    rec.on_ack("0xa", ack("0xa"), 2.0)  # the listing, asked at 1.0, may predate the order
    rec.on_open_orders([], 3.0, as_of=1.0)
    assert rec.orders.get("0xa").state is S.LIVE
    rec.on_open_orders([], 4.0, as_of=3.5)  # this one was asked after the venue showed the order
    assert rec.orders.get("0xa").state is S.CANCELED


def test_a_listing_of_several_pages_looks_up_an_order_it_misses_rather_than_closing_it():
    # pages read at different moments: an order closing on page 1 shifts the offsets, and page 2
    # skips an order still open; only the venue's record of that order can say it closed
    rec = Reconciler()
    for oid in ("0xa", "0xb"):
        sent(rec, own(oid), now=0.0)
        rec.on_ack(oid, ack(oid), 0.1)
    out = rec.on_open_orders([oevent("0xa", "LIVE", "")], 2.0, as_of=1.0, pages=2)
    assert rec.orders.get("0xb").state is S.LIVE and of(out, LookupOrder) == [LookupOrder("0xb")]
    assert not of(out, FetchTrades) and rec.orphans_closed == 0
    out = rec.on_order_lookup("0xb", oevent("0xb", "LIVE", ""), 2.5, as_of=2.1)
    assert rec.orders.get("0xb").state is S.LIVE
    # one page is one reading of the venue: what it does not show is closed
    rec.on_open_orders([oevent("0xa", "LIVE", "")], 3.0, as_of=2.8)
    assert rec.orders.get("0xb").state is S.CANCELED


def wrongly_closed(policy):
    rec = Reconciler(ReconcilerConfig(orphan_policy=policy))
    sent(rec, own("0xa"), now=0.0)
    rec.on_ack("0xa", ack("0xa"), 0.1)
    rec.on_order_event(oevent("0xa", "CANCELED", "CANCELLATION"), 1.0)  # a reading we later learn was wrong
    assert rec.orders.get("0xa").state is S.CANCELED
    return rec


def test_a_listing_sets_right_an_order_closed_before_it_was_asked_for():
    rec = wrongly_closed("cancel")
    out = rec.on_open_orders([oevent("0xa", "LIVE", "")], 2.5, as_of=2.0)
    o = rec.orders.get("0xa")
    assert o.state is S.LIVE and o in rec.orders.working(TOK)  # counted, risk sees it again
    assert CancelOrder("0xa") in out and rec.orphans_closed == 1
    assert of(out, OrderUpdate)[0].state is S.LIVE  # journaled and told to the strategy

    rec = wrongly_closed("adopt")
    out = rec.on_open_orders([oevent("0xa", "LIVE", "", matched="2")], 2.5, as_of=2.0)
    o = rec.orders.get("0xa")
    assert o.state is S.PARTIALLY_FILLED and o.remaining == 8 * U and not of(out, CancelOrder)

    rec = wrongly_closed("ignore")
    out = rec.on_open_orders([oevent("0xa", "LIVE", "")], 2.5, as_of=2.0)
    assert rec.orders.get("0xa").state is S.CANCELED and not out and rec.orphans_closed == 1


def test_a_listing_asked_for_before_the_close_does_not_reopen():
    rec = wrongly_closed("cancel")
    out = rec.on_open_orders([oevent("0xa", "LIVE", "")], 2.5, as_of=0.5)  # may predate the close
    assert rec.orders.get("0xa").state is S.CANCELED and not of(out, CancelOrder)
    assert rec.orphans_closed == 0


def test_orphan_adopted():
    rec = Reconciler(ReconcilerConfig(orphan_policy="adopt"))
    rec.on_order_event(oevent("0xo", "LIVE", "PLACEMENT", matched="2"), 1.0)
    o = rec.orders.get("0xo")
    assert o.state is S.PARTIALLY_FILLED and o.remaining == 8 * U and o.side is Side.BUY


def test_records_accept_venue_models():
    import msgspec

    from bot.venue.models.bodies import OrderResult
    from bot.venue.models.trade import Trade

    t = msgspec.json.decode(msgspec.json.encode(trade("t1", makers=[maker("0xa", "2.5")])), type=Trade)
    r = trade_record(t)
    assert r.maker_orders[0].matched_amount == 2_500_000 and r.status is TradeStatus.MATCHED
    res = msgspec.json.decode(msgspec.json.encode(ack("0xa")), type=OrderResult)
    assert order_result(res).accepted
    assert order_record({"id": "x", "status": "live", "originalSize": "3", "sizeMatched": "1", "assetId": TOK}).size_matched == U


def test_status_only_moves_forward():
    M, R, MI, C, F = (TradeStatus.MATCHED, TradeStatus.RETRYING, TradeStatus.MINED, TradeStatus.CONFIRMED,
                      TradeStatus.FAILED)
    assert advance_status(M, MI) is MI and advance_status(MI, M) is MI and advance_status(MI, R) is MI
    assert advance_status(C, F) is C and advance_status(F, C) is F and advance_status(R, F) is F


def test_taker_fills_book_the_venues_fee_in_what_the_taker_receives():
    from bot.venue.fees import NO_FEE, FeeSchedule, taker_fee

    one = FeeSchedule(rate=10_000)  # r = 1%, e = 1: the rule a record's fee_rate_bps 100 gets with no market's
    assert taker_fee(Side.SELL, 400_000, 10 * U, one) == 24_000  # 10 * 1% * 0.40 * 0.60 USDC
    assert taker_fee(Side.SELL, 900_000, 10 * U, one) == 9_000  # 10 * 1% * 0.9 * 0.1
    assert taker_fee(Side.BUY, 400_000, 10 * U, one) == 60_000  # 0.024 USDC worth = 0.06 share at 0.40
    assert taker_fee(Side.BUY, 400_000, 10 * U, NO_FEE) == 0
    rec = Reconciler()
    sent(rec, own("0xbuy"), own("0xsell", side=Side.SELL))
    t = trade("t1", taker="0xbuy", side="BUY", size="10", price="0.4")
    t["fee_rate_bps"] = "100"
    (buy,) = of(rec.on_trade_event(t, 1.0), Fill)
    assert (buy.size, buy.fee) == (10 * U - 60_000, 24_000)  # the venue kept 0.06 share, worth 0.024
    assert type(buy.fee) is int
    t = trade("t2", taker="0xsell", side="SELL", size="10", price="0.4")
    t["fee_rate_bps"] = "100"
    (sell,) = of(rec.on_trade_event(t, 1.0), Fill)
    assert (sell.size, sell.fee) == (10 * U, 24_000)
    assert rec.orders.get("0xbuy").filled == 10 * U  # the order matched its whole size




def test_order_updates_are_made_only_when_asked_for():
    def run(updates: bool) -> list:
        rec = Reconciler()
        rec.updates = updates
        out = sent(rec, own("0xa"))
        out += rec.on_acks(["0xa"], [ack("0xa")], 1.0)
        out += rec.on_trade_event(trade("t1", makers=[maker("0xa", amt="4")]), 2.0)
        assert rec.orders.get("0xa").state is S.PARTIALLY_FILLED and rec.orders.get("0xa").remaining == 6 * U
        return out

    told = run(True)
    assert [u.state for u in of(told, OrderUpdate)] == [S.PENDING_SUBMIT, S.LIVE, S.PARTIALLY_FILLED]
    quiet = run(False)
    assert of(quiet, OrderUpdate) == []
    assert quiet == [x for x in told if not isinstance(x, OrderUpdate)]  # the fill and its settlement


def test_a_market_order_acked_during_its_cancel_is_closed_by_the_cancels_answer():
    rec = Reconciler()
    sent(rec, own("0xm", order_type=OrderType.FAK), now=0.0)
    rec.on_cancels_sent(["0xm"], 0.01)  # blind: the take is not answered yet
    rec.on_ack("0xm", ack("0xm", status="matched"), 0.05)  # it never rests
    out = rec.on_cancel_result({"canceled": [], "not_canceled": {"0xm": "order not found"}}, 0.08, ["0xm"])
    assert rec.orders.get("0xm").state.terminal and FetchTrades(("0xm",)) in out


def _fill(tid, oid, status=TradeStatus.MATCHED):
    return Fill(tid, oid, TOK, Side.BUY, 400_000, 5 * U, status=status)


def test_load_restores_what_was_seen_and_it_is_not_seen_again():
    rec = Reconciler()
    a = own("0xa")
    a.state = S.LIVE
    rec.load([a], [_fill("t1", "0xa"), _fill("t2", "0xa", TradeStatus.CONFIRMED)], [("t2", "0xa"), ("t9", "0xa")],
             {"t1": TradeStatus.MINED, "t3": TradeStatus.FAILED}, {"trades": "Mw=="})
    assert rec.orders.get("0xa") is a and rec.trades_cursor == "Mw=="
    assert rec.trade_status("t1") is TradeStatus.MINED and rec.trade_status("t2") is TradeStatus.CONFIRMED
    assert rec.trade_status("t3") is TradeStatus.FAILED and rec.trade_status("t9") is None
    assert rec.fills() == [_fill("t1", "0xa"), _fill("t2", "0xa", TradeStatus.CONFIRMED)]
    assert rec.is_reversed("t2", "0xa") and not rec.is_reversed("t1", "0xa") and not rec.is_reversed("t9", "0xa")
    out = rec.on_trades_page([trade("t1", status="MINED", makers=[maker("0xa")])], now=1.0)
    assert of(out, Fill) == []  # the journal's fill is the one: no second fill of it


def test_state_changes_are_stamped_and_counted_once():
    rec = Reconciler()
    a, b = own("0xa"), own("0xb")
    sent(rec, a, b, now=1.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], now=2.0)
    store = rec.orders
    quoting = store.quoting_revision
    rec.on_cancels_sent(["0xa"], now=3.0)
    assert a.state is S.PENDING_CANCEL and a.updated_at == 3.0 and a.cancel_blind is False
    assert store.quoting_revision == quoting + 1  # it left the quoting orders: counted once
    rec.on_cancel_failed(["0xa"], now=4.0)
    assert a.state is S.LIVE and a.updated_at == 4.0 and store.quoting_revision == quoting + 2
    rec.on_cancels_sent(["0xa"], now=5.0)
    rec.on_cancel_result({"canceled": [], "not_canceled": {}}, now=6.0, requested=["0xa"])
    assert a.state is S.LIVE and a.updated_at == 6.0  # asked but not answered: back
    c, d = own("0xc"), own("0xd")
    sent(rec, c, d, now=7.0)
    out = rec.on_place_failed(["0xc"], now=8.0, unknown=True)
    assert c.state is S.UNKNOWN and c.updated_at == 8.0 and of(out, LookupOrder) == [LookupOrder("0xc")]
    rec.on_place_failed(["0xd", "0xnone"], now=9.0, unknown=False)
    assert d.state is S.REJECTED and d.updated_at == 9.0 and d.reason == "request failed"
    e = own("0xe")
    sent(rec, e, now=10.0)
    rec.on_cancels_sent(["0xe"], now=11.0)
    assert e.cancel_blind is True  # the cancel left before the submit was answered
    rec.on_place_failed(["0xe"], now=12.0, unknown=False, reason="400 bad")
    assert e.state is S.CANCELED and e.updated_at == 12.0 and e.reason == "400 bad"


def test_a_listing_judges_exactly_the_orders_it_could_show():
    rec = Reconciler()
    first = own("0x1")  # still unanswered: never judged by its absence, nor stops the others
    sent(rec, first, now=1.0)
    a, b, c, d = own("0xa"), own("0xb"), own("0xc"), own("0xd")
    sent(rec, d, now=1.0)
    rec.on_cancels_sent(["0xd"], now=1.2)  # a cancel racing its own place: left alone, nor stops the others
    sent(rec, a, now=1.0)
    rec.on_acks(["0xa"], [ack("0xa")], now=1.5)
    sent(rec, b, now=2.0)
    rec.on_acks(["0xb"], [ack("0xb")], now=2.0)  # sent and answered at the very instant asked
    sent(rec, c, now=2.5)  # sent after the listing was asked for
    rec.on_acks(["0xc"], [ack("0xc")], now=2.5)
    out = rec.on_open_orders([], now=3.0, as_of=2.0)
    assert (first.state, a.state, b.state, c.state, d.state) == (
        S.PENDING_SUBMIT, S.CANCELED, S.CANCELED, S.LIVE, S.PENDING_CANCEL)
    assert a.updated_at == 3.0 and of(out, FetchTrades) == [FetchTrades(("0xa", "0xb"))]
    e = own("0xe")
    sent(rec, e, now=4.0)
    rec.on_acks(["0xe"], [ack("0xe")], now=4.0)
    rec.on_cancels_sent(["0xe"], now=4.5)
    rec.on_open_orders([], now=6.0, as_of=5.0)  # a cancel out for an answered order: judged
    assert e.state is S.CANCELED


def test_an_unknown_order_absent_from_a_listing_is_resent_by_default():
    rec = Reconciler()
    u = own("0xu")
    sent(rec, u, now=1.0)
    rec.on_place_failed(["0xu"], now=1.5, unknown=True)
    u.answered_at = 1.6  # the lookup found nothing yet; the venue answered about it
    out = rec.on_open_orders([], now=3.0, as_of=2.0)
    assert [r.order_id for r in of(out, ResendOrder)] == ["0xu"]
    assert not of(out, FetchTrades) and u.state is S.UNKNOWN  # resent, not closed


def test_a_listing_reopens_only_what_closed_before_it_was_asked():
    rec = Reconciler()
    a, b = own("0xa"), own("0xb")
    sent(rec, a, b, now=1.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], now=1.0)
    rec.on_cancels_sent(["0xa", "0xb"], now=2.0)
    rec.on_cancel_result({"canceled": ["0xa"], "not_canceled": {}}, now=2.0)
    rec.on_cancel_result({"canceled": ["0xb"], "not_canceled": {}}, now=5.0)
    rec.on_open_orders([oevent("0xa"), oevent("0xb")], now=6.0, as_of=5.0)
    assert a.state is S.LIVE and a.updated_at == 6.0  # closed at 2.0, listed open at 5.0: the venue wins
    assert b.state is S.CANCELED  # closed at the instant asked: the listing may predate the cancel


def test_an_unknown_order_is_an_orphan_unless_the_event_cancels_it():
    rec = Reconciler()
    assert rec.on_order_event(oevent("0xz", status="LIVE", typ="CANCELLATION"), now=1.0) == []
    assert of(rec.on_order_event(oevent("0xz", status="LIVE", typ="PLACEMENT"), now=1.0), CancelOrder) != []
    assert rec.orphans_unknown == 1


def test_config_bounds_and_words():
    import pytest

    assert ReconcilerConfig(max_held_trades=10_000_000).max_held_trades == 10_000_000
    for bad in (0, 10_000_001):
        with pytest.raises(ValueError, match=rf"^max_held_trades must be within 1..10000000, got {bad}$"):
            ReconcilerConfig(max_held_trades=bad)


def test_a_delayed_or_live_unknown_order_is_an_orphan_and_may_be_adopted():
    rec = Reconciler()
    assert of(rec.on_order_event(oevent("0xq", status="DELAYED", typ="PLACEMENT"), now=1.0), CancelOrder) != []
    assert rec.on_order_event(oevent("0xr", status="MATCHED", typ="UPDATE"), now=1.0) == []
    adopt = Reconciler(ReconcilerConfig(orphan_policy="adopt"))
    adopt.on_order_event(oevent("0xs", status="LIVE", typ="PLACEMENT"), now=2.0)
    adopt.on_order_event(oevent("0xt", status="LIVE", typ="UPDATE", matched="3"), now=2.5)
    s, t = adopt.orders.get("0xs"), adopt.orders.get("0xt")
    assert (s.state, s.market, s.reason, s.answered_at, s.sent_at) == (S.LIVE, "0xm", "adopted", 2.0, 2.0)
    assert t.state is S.PARTIALLY_FILLED and t.venue_matched == 3 * U


def test_a_blind_cancel_of_an_unknown_order_not_cancelled_looks_it_up():
    rec = Reconciler()
    u = own("0xu")
    sent(rec, u, now=1.0)
    rec.on_place_failed(["0xu"], now=1.5, unknown=True)
    rec.on_cancels_sent(["0xu"], now=2.0)
    out = rec.on_cancel_result({"canceled": [], "not_canceled": {"0xu": "not found"}}, now=3.0, requested=["0xu"])
    assert of(out, LookupOrder) == [LookupOrder("0xu")] and None not in out  # its lookup decides
    assert u.state is S.UNKNOWN  # back from its cancel, not stuck in it: a live answer makes it cancellable
    rec.on_order_lookup("0xu", oevent("0xu", "LIVE", ""), now=4.0)
    assert u.state is S.LIVE


def test_the_trades_cursor_stays_at_a_page_holding_an_unsettled_trade_of_ours():
    # the user channel's FAILED event of t1 is lost (a WebSocket drop): the next read of the
    # trades must cover t1's page again, or the bot keeps a fill the venue has reversed
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    rec.on_trades_page([trade("t1", makers=[maker("0xa", "3")])], 1.0, cursor="MA==", next_cursor="MTAw")
    rec.on_trades_page([trade("t2")], 1.0, cursor="MTAw", next_cursor="LTE=")  # not ours, later page
    assert rec.trades_cursor == "MA=="  # t1 is MATCHED: its page is read again
    out = rec.on_trades_page([trade("t1", status="FAILED", makers=[maker("0xa", "3")])], 2.0,
                             cursor="MA==", next_cursor="MTAw")
    assert of(out, FillReversal)
    rec.on_trades_page([trade("t2")], 2.0, cursor="MTAw", next_cursor="LTE=")
    assert rec.trades_cursor == "MTAw"  # settled: the read moves on


def _offset_cursor(offset):
    return base64.b64encode(str(offset).encode()).decode()


def _read_trades(rec, venue_trades, now, page=50):
    """One trades read as the live shell makes it: from the stored cursor to the list's end."""
    out = []
    cursor = rec.trades_cursor
    while True:
        at = int(base64.b64decode(cursor))
        end = at + page
        nxt = _offset_cursor(end) if end < len(venue_trades) else "LTE="
        out += rec.on_trades_page(venue_trades[at:end], now, cursor=cursor, next_cursor=nxt)
        if nxt == "LTE=":
            return out
        cursor = nxt


def test_settled_trades_behind_the_cursor_leave_memory_and_are_never_booked_twice():
    rec = Reconciler(ReconcilerConfig(trade_retention_s=300.0))
    sent(rec, own("0xa", size=10**9 * U))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    venue, fills, dt, per_read = [], 0, 20.0, 15
    for i in range(300):  # 6000 s, 4500 trades, each MATCHED at first sight, CONFIRMED a read later
        now = 1.0 + i * dt
        for t in venue[-per_read:]:
            t["status"] = "CONFIRMED"
        venue += [trade(f"t{i}-{k}", makers=[maker("0xa", "1")]) for k in range(per_read)]
        out = _read_trades(rec, venue, now)
        # a late duplicate of a user event within the retention window books nothing again
        out += rec.on_trade_event(dict(venue[max(0, len(venue) - 2 * per_read)], status="CONFIRMED"), now)
        fills += len(of(out, Fill))
    assert fills == len(venue)  # each fill exactly once, none missed, none twice
    bound = (300.0 / dt + 3) * per_read + 2 * 50  # the retention window's trades, and two pages
    assert len(rec.fills()) <= bound < len(venue) / 10


def test_a_settled_trade_is_kept_while_a_read_can_still_bring_it_back():
    rec = Reconciler(ReconcilerConfig(trade_retention_s=60.0))
    sent(rec, own("0xa"))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    # at the stored cursor (the last page is read again), and one known from the user channel only
    rec.on_trades_page([trade("t1", status="CONFIRMED", makers=[maker("0xa", "1")])], 1.0,
                       cursor="MA==", next_cursor="LTE=")
    rec.on_trade_event(trade("t2", status="CONFIRMED", makers=[maker("0xa", "1")]), 1.0)
    assert rec.forget_settled(10_000.0) == 0
    assert rec.trade_status("t1") is rec.trade_status("t2") is TradeStatus.CONFIRMED
    out = rec.on_trades_page([trade("t1", status="CONFIRMED", makers=[maker("0xa", "1")])], 10_001.0,
                             cursor="MA==", next_cursor="LTE=")
    assert not of(out, Fill)


def test_with_no_trade_listing_a_settled_trade_leaves_memory_after_its_retention():
    """A simulated venue answers each trade once: no cursor is needed to forget it (the default
    keeps it, as a listing could bring it back)."""
    for listed in (True, False):
        rec = Reconciler(ReconcilerConfig(trade_retention_s=60.0, trades_listed=listed))
        sent(rec, own("0xa"))
        rec.on_acks(["0xa"], [ack("0xa")], 0.5)
        rec.on_trade_event(trade("t2", status="CONFIRMED", makers=[maker("0xa", "1")]), 1.0)
        assert rec.forget_settled(60.0) == 0  # within its retention: kept either way
        assert rec.forget_settled(62.0) == (0 if listed else 1)
        assert (rec.trade_status("t2") is TradeStatus.CONFIRMED) is listed
        assert len(rec.fills()) == (1 if listed else 0)


def test_trade_retention_is_bounded_in_config():
    for bad in (0.0, -1.0, 0.999, 30 * 86400.0 + 0.5, 1e9):
        with pytest.raises(ValueError, match="trade_retention_s"):
            ReconcilerConfig(trade_retention_s=bad)
    for good in (1.0, 30 * 86400.0):  # a second to thirty days, both ends in
        assert ReconcilerConfig(trade_retention_s=good).trade_retention_s == good


def test_a_booked_trade_read_again_after_its_order_left_memory_is_not_held():
    rec = Reconciler(ReconcilerConfig(owner="me"))
    sent(rec, own("0xa"))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    t = trade("t1", makers=[maker("0xa", "10", owner="me")])
    assert len(of(rec.on_trades_page([t], 1.0, cursor="MA==", next_cursor="LTE="), Fill)) == 1
    assert rec.orders.forget_closed(1000.0) == 1  # filled, closed long ago: out of memory
    out = rec.on_trades_page([t], 1001.0, cursor="MA==", next_cursor="LTE=")  # the page is read again
    assert not of(out, Fill) and rec.held_trades == []  # nothing waits for an order that will not come


def test_a_held_trade_claimed_by_its_order_leaves_no_index_behind():
    rec = Reconciler()
    for i in range(50):  # fill before ack, three other accounts' makers in each trade
        oid = f"0xa{i}"
        rec.on_trade_event(trade(f"t{i}", taker=oid, makers=[maker(f"0xo{i}-{k}", "1") for k in range(3)],
                                 side="BUY", size="3"), 0.1)
        assert len(of(sent(rec, own(oid), now=0.2), Fill)) == 1
    assert rec.held_trades == [] and rec._held_by_order == {}


def test_config_refuses_an_unknown_orphan_policy_and_takes_the_smallest_hold():
    import pytest

    with pytest.raises(ValueError, match=r"^orphan_policy must be adopt, cancel or ignore, not 'keep'$"):
        ReconcilerConfig(orphan_policy="keep")
    assert ReconcilerConfig(max_held_trades=1).max_held_trades == 1


def test_a_status_of_the_same_rank_does_not_replace_the_one_seen():
    assert advance_status(TradeStatus.MATCHED, TradeStatus.MATCHED_NOT_BROADCASTED) is TradeStatus.MATCHED
    assert advance_status(TradeStatus.MATCHED_NOT_BROADCASTED, TradeStatus.MATCHED) is (
        TradeStatus.MATCHED_NOT_BROADCASTED)


def test_an_adopted_orphan_keeps_its_order_type_price_and_trades():
    rec = Reconciler(ReconcilerConfig(orphan_policy="adopt"))
    gtd = dict(oevent("0xg", "LIVE", "PLACEMENT", price="0.37"), order_type="gtd", associate_trades=["tr9"])
    out = rec.on_order_event(gtd, now=3.0)
    g = rec.orders.get("0xg")
    assert (g.order_type, g.price, g.token_id, g.trade_ids, g.updated_at) == (OrderType.GTD, 370_000, TOK, ["tr9"], 3.0)
    assert of(out, OrderUpdate) == [OrderUpdate("0xg", TOK, S.LIVE, 0, 10 * U, "adopted")]
    rec.on_order_event(dict(oevent("0xh", "LIVE", "PLACEMENT"), order_type="ICEBERG"), now=3.0)
    assert rec.orders.get("0xh").order_type is OrderType.GTC  # a type we do not know: resting, GTC
    rec.on_order_event(oevent("0xi", "LIVE", "PLACEMENT", matched="0.000001"), now=3.0)
    assert rec.orders.get("0xi").state is S.PARTIALLY_FILLED  # one micro-share matched is matched


def test_an_adopted_orphan_claims_the_trades_held_for_it():
    rec = Reconciler(ReconcilerConfig(orphan_policy="adopt"))
    rec.on_trade_event(trade("t1", makers=[maker("0xo", "2")]), 1.0)
    assert rec.held_trades == ["t1"]
    out = rec.on_order_event(oevent("0xo", "LIVE", "PLACEMENT"), now=2.0)
    assert [(f.order_id, f.size) for f in of(out, Fill)] == [("0xo", 2 * U)] and rec.held_trades == []
    o = rec.orders.get("0xo")
    assert (o.state, o.updated_at) == (S.PARTIALLY_FILLED, 2.0)


def test_the_reconciler_keeps_the_store_it_is_given():
    from bot.execution.orders import OrderStore

    store = OrderStore()
    rec = Reconciler(store=store)
    sent(rec, own("0xa"))
    assert rec.orders is store and store.get("0xa").state is S.PENDING_SUBMIT


def test_the_first_trades_read_moves_the_cursor_on():
    rec = Reconciler()
    rec.on_trades_page([trade("t1")], 1.0, next_cursor="MTAw")
    assert rec.trades_cursor == "MTAw"
    rec.on_trades_page([], 2.0, cursor="MTAw", next_cursor="LTE=")  # the end: stay at the last page
    assert rec.trades_cursor == "MTAw"


def test_a_read_that_starts_at_the_default_cursor_is_a_new_read():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_trades_page([trade("t1", makers=[maker("0xa", "3")])], 1.0, cursor="MA==", next_cursor="MTAw")
    rec.on_trades_page([trade("t1", "CONFIRMED", makers=[maker("0xa", "3")])], 2.0, cursor="MA==",
                       next_cursor="MTAw")
    assert rec.trades_cursor == "MTAw"  # the held read ended where it began: it moves on again


def test_trade_legs_read_sides_and_tokens_the_venue_leaves_out():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb", side=Side.SELL))
    t = trade("t1", side="SELL", makers=[("", "1", "0.4", "BUY", ""), maker("0xa", "3")])
    t["maker_orders"][1]["side"] = None  # the taker sold: our maker leg bought
    t["maker_orders"][1]["asset_id"] = ""
    (fill,) = of(rec.on_trade_event(t, 1.0), Fill)
    assert (fill.order_id, fill.side, fill.token_id, fill.size, fill.ts) == ("0xa", Side.BUY, TOK, 3 * U, 1_700_000_000)
    nameless = trade("t2", taker="", side="BUY", makers=[maker("0xb", "2", side="SELL")])
    out = rec.on_trade_event(nameless, 2.0)
    assert [(f.order_id, f.side) for f in of(out, Fill)] == [("0xb", Side.SELL)] and rec.held_trades == []
    sideless = trade("t3", taker="0xb", side="", makers=[("0xq", "2", "0.4", "", "")])
    assert of(rec.on_trade_event(sideless, 3.0), Fill) == [] and rec.held_trades == []


def test_a_trade_naming_no_taker_order_waits_only_for_its_makers():
    rec = Reconciler()
    rec.on_trade_event(trade("t1", taker="", side="SELL", makers=[maker("0xa", "3")]), 1.0)
    assert rec.held_trades == ["t1"]
    out = sent(rec, own("0xa"), now=2.0)
    assert [f.order_id for f in of(out, Fill)] == ["0xa"] and rec.held_trades == []


def test_held_trades_are_bounded_oldest_first():
    rec = Reconciler(ReconcilerConfig(max_held_trades=2))
    for i, oid in enumerate(("0x1", "0x2", "0x3")):
        rec.on_trade_event(trade(f"t{i}", makers=[maker(oid, "1")]), float(i))
    assert rec.held_trades == ["t1", "t2"]
    out = sent(rec, own("0x1"), own("0x2"), own("0x3"), now=5.0)
    assert [f.order_id for f in of(out, Fill)] == ["0x2", "0x3"]  # the oldest was let go


def test_a_held_trade_is_let_go_when_a_restart_knows_its_order():
    rec = Reconciler()
    rec.on_trade_event(trade("t1", makers=[maker("0xa", "3")]), 1.0)
    a = own("0xa")
    a.state = S.LIVE
    rec.load([a], [], [], {}, {})
    out = rec.on_trade_event(trade("t1", "MINED", makers=[maker("0xa", "3")]), 2.0)
    assert [f.order_id for f in of(out, Fill)] == ["0xa"] and rec.held_trades == []
    assert sent(rec, own("0xa"), now=3.0) == []  # known: nothing replayed


def test_fills_make_an_order_filled_exactly_when_its_size_is_matched():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xc"))
    rec.on_acks(["0xa", "0xc"], [ack("0xa"), ack("0xc")], 1.0)
    a = rec.orders.get("0xa")
    rec.on_trade_event(trade("t1", makers=[maker("0xa", "3")]), 2.0)
    rec.on_trade_event(trade("t2", makers=[maker("0xa", "3")]), 3.0)
    assert (a.state, a.filled, a.updated_at) == (S.PARTIALLY_FILLED, 6 * U, 2.0)
    rec.on_trade_event(trade("t3", makers=[maker("0xa", "4")]), 4.0)
    assert (a.state, a.updated_at) == (S.FILLED, 4.0)
    c = rec.orders.get("0xc")
    rec.on_cancels_sent(["0xc"], 5.0)
    rec.on_trade_event(trade("t4", makers=[maker("0xc", "4")]), 6.0)
    assert c.state is S.PENDING_CANCEL  # a part filled: its cancel is still out
    rec.on_trade_event(trade("t5", makers=[maker("0xc", "6")]), 7.0)
    assert (c.state, c.updated_at) == (S.FILLED, 7.0)


def test_an_order_of_no_size_is_never_full_and_one_micro_share_is():
    rec = Reconciler()
    m = own("0xm", size=0, order_type=OrderType.FOK)  # a market buy at no price: no share estimate
    tiny = own("0xt", size=1)
    sent(rec, m, tiny)
    rec.on_trade_event(trade("t1", taker="0xm", side="BUY", size="2"), 1.0)
    assert m.state is S.PARTIALLY_FILLED and m.filled == 2 * U
    rec.on_open_orders([], 2.0, as_of=1.5)
    assert m.state is S.CANCELED  # gone from the book: closed, not filled
    rec.on_trade_event(trade("t2", makers=[maker("0xt", "0.000001")]), 3.0)
    assert tiny.state is S.FILLED
    z = own("0xz", size=0)
    sent(rec, z, now=4.0)
    rec.on_order_event(oevent("0xz", "LIVE", "UPDATE"), 5.0)
    assert z.state is S.LIVE


def test_an_ack_during_a_blind_cancel_remembers_a_fill_of_one_micro_share():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_cancels_sent(["0xa"], 1.0)  # before the ack: blind
    rec.on_trade_event(trade("t1", makers=[maker("0xa", "0.000001")]), 1.5)
    rec.on_ack("0xa", ack("0xa"), 2.0)
    rec.on_cancel_failed(["0xa"], 3.0)
    assert rec.orders.get("0xa").state is S.PARTIALLY_FILLED


def test_a_refused_ack_names_its_reason_and_never_undoes_a_fill():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"), own("0xc"), own("0xd"))
    refused = {"success": False, "errorMsg": "", "orderID": "", "status": ""}
    rec.on_acks(["0xa", "0xb"], [refused, dict(refused, status="unmatched")], 1.0)
    assert rec.orders.get("0xa").reason == "rejected" and rec.orders.get("0xb").reason == "unmatched"
    rec.on_cancels_sent(["0xc"], 1.0)
    rec.on_ack("0xc", refused, 2.0)
    assert rec.orders.get("0xc").state is S.CANCELED  # refused while its cancel was out
    rec.on_trade_event(trade("t1", makers=[maker("0xd", "0.000001")]), 2.5)
    rec.on_ack("0xd", refused, 3.0)
    assert rec.orders.get("0xd").state is S.PARTIALLY_FILLED


def test_an_accepted_ack_of_an_order_read_as_unmatched_with_a_fill_restores_its_fill():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    rec.on_order_event(oevent("0xa", "UNMATCHED", "UPDATE", matched="0.000001"), 1.0)
    rec.on_order_event(oevent("0xb", "UNMATCHED", "UPDATE", matched="10"), 1.0)
    assert rec.orders.get("0xa").state is S.REJECTED and rec.orders.get("0xa").reason == "UNMATCHED"
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 2.0)
    assert rec.orders.get("0xa").state is S.PARTIALLY_FILLED and rec.orders.get("0xb").state is S.FILLED


def test_order_records_set_state_reason_market_trades_and_first_answer():
    rec = Reconciler()
    a, b, c, d, e = (own(x) for x in ("0xa", "0xb", "0xc", "0xd", "0xe"))
    sent(rec, a, b, c, d, e)
    rec.on_order_event(dict(oevent("0xa", "DELAYED", "PLACEMENT"), associate_trades=["tr1", "tr2"]), 1.0)
    assert (a.state, a.market, a.trade_ids, a.answered_at) == (S.LIVE, "0xm", ["tr1", "tr2"], 1.0)
    rec.on_order_event(dict(oevent("0xa", "", "UPDATE"), associate_trades=["tr2", "tr3"], market="0xn"), 2.0)
    assert (a.state, a.market, a.trade_ids, a.answered_at) == (S.LIVE, "0xm", ["tr1", "tr2", "tr3"], 1.0)
    rec.on_order_event(oevent("0xb", "MATCHED", "UPDATE"), 1.0)
    assert b.state is S.FILLED
    rec.on_order_event(oevent("0xc", "CANCELED", "CANCELLATION", matched="10"), 1.0)
    assert (c.state, c.reason) == (S.FILLED, "CANCELED")  # matched whole before the cancel
    rec.on_order_event(oevent("0xd", "LIVE", "UPDATE", matched="10"), 1.0)
    assert d.state is S.FILLED
    rec.on_order_event(oevent("0xe", "LIVE", "UPDATE", matched="0.000001"), 1.0)
    assert e.state is S.PARTIALLY_FILLED


def test_unmatched_or_invalid_rejects_an_unanswered_order_and_cancels_a_live_one():
    rec = Reconciler()
    a, b, u = own("0xa"), own("0xb"), own("0xu")
    sent(rec, a, b, u)
    rec.on_ack("0xb", ack("0xb"), 1.0)
    rec.on_place_failed(["0xu"], 1.0, unknown=True)
    rec.on_order_event(oevent("0xa", "INVALID", "UPDATE"), 2.0)
    rec.on_order_event(oevent("0xb", "INVALID", "UPDATE"), 2.0)
    rec.on_order_event(oevent("0xu", "UNMATCHED", "UPDATE"), 2.0)
    assert [(o.state, o.reason) for o in (a, b, u)] == [
        (S.REJECTED, "INVALID"), (S.CANCELED, "INVALID"), (S.REJECTED, "UNMATCHED")]


def test_a_venue_record_during_a_blind_cancel_tells_what_the_order_was():
    rec = Reconciler()
    a, b, c = own("0xa"), own("0xb"), own("0xc")
    sent(rec, a, b, c)
    rec.on_cancels_sent(["0xa", "0xb", "0xc"], 1.0)
    rec.on_order_event(oevent("0xa", "LIVE", "PLACEMENT"), 2.0)
    rec.on_order_event(oevent("0xb", "LIVE", "UPDATE", matched="0.000001"), 2.0)
    rec.on_order_event(oevent("0xc", "LIVE", "UPDATE", matched="10"), 2.0)
    assert (a.state, b.state, c.state) == (S.PENDING_CANCEL, S.PENDING_CANCEL, S.FILLED)
    rec.on_cancel_failed(["0xa", "0xb"], 3.0)
    assert (a.state, b.state) == (S.LIVE, S.PARTIALLY_FILLED)


def test_sending_orders_counts_each_new_order_once_for_the_diff():
    rec = Reconciler()
    store = rec.orders
    before = store.quoting_revision
    sent(rec, own("0xa"), own("0xb"))
    assert store.quoting_revision == before + 2
    rec.on_place_failed(["0xa"], 1.0, unknown=True)
    counted = store.quoting_revision
    rec.on_places_sent([own("0xa")], 2.0)  # the resend: UNKNOWN -> PENDING_SUBMIT, both quoting
    assert rec.orders.get("0xa").state is S.PENDING_SUBMIT and rec.orders.get("0xa").updated_at == 2.0
    assert store.quoting_revision == counted


def test_a_listing_status_left_empty_reads_as_open():
    rec = wrongly_closed("cancel")
    out = rec.on_open_orders([oevent("0xa", "", "")], 2.5, as_of=2.0)
    assert rec.orders.get("0xa").state is S.LIVE and CancelOrder("0xa") in out


def test_a_maker_leg_without_an_order_id_is_never_waited_for():
    rec = Reconciler(ReconcilerConfig(owner="k1"))
    sent(rec, own("0xt", side=Side.SELL))
    rec.on_trade_event(trade("t1", taker="0xt", makers=[("", "5", "0.4", "BUY", "k1")]), 1.0)
    assert rec.held_trades == []


def test_fills_are_booked_with_their_markets_rule_unless_the_record_carries_a_rate():
    from bot.venue.fees import FeeSchedule

    rec = Reconciler()
    rec.fees = {TOK: FeeSchedule(rate=20_000, exponent=2, rebate=500_000)}  # r = 0.02, e = 2, rebate a half
    sent(rec, own("0xbuy"), own("0xbid"))
    # no rate on the record: the market's rule, 10 * 0.02 * 0.24^2 = 0.01152 USDC = 0.0288 share at 0.40
    (buy,) = of(rec.on_trade_event(trade("t1", taker="0xbuy", side="BUY", size="10", price="0.4"), 1.0), Fill)
    assert (buy.size, buy.fee) == (10 * U - 28_800, 11_520)
    # a maker leg carrying its own rate (100 bps) where the trade carries none: that rate, the
    # market's exponent and rebate share: 0.5 * 10 * 0.01 * 0.24^2 = 0.00288 USDC earned
    t = trade("t2", makers=[maker("0xbid", "10")])
    t["maker_orders"][0]["fee_rate_bps"] = "100"
    (bid,) = of(rec.on_trade_event(t, 1.0), Fill)
    assert (bid.size, bid.fee, bid.is_maker) == (10 * U, -2_880, True)


def test_the_taker_fee_is_booked_only_when_asked():
    rec = Reconciler(ReconcilerConfig(taker_fee=False))
    sent(rec, own("0xbuy"))
    t = trade("t1", taker="0xbuy", side="BUY", size="10", price="0.4")
    t["fee_rate_bps"] = "100"
    (fill,) = of(rec.on_trade_event(t, 1.0), Fill)
    assert (fill.size, fill.fee) == (10 * U, 0)


def test_a_refused_ack_leaves_an_order_the_venue_showed_or_filled_during_its_cancel():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xe"))
    refused = {"success": False, "errorMsg": "", "orderID": "", "status": ""}
    rec.on_order_event(oevent("0xa", "LIVE", "PLACEMENT"), 0.5)
    rec.on_ack("0xa", refused, 1.0)
    assert rec.orders.get("0xa").state is S.LIVE
    rec.on_cancels_sent(["0xe"], 1.0)
    rec.on_trade_event(trade("t1", makers=[maker("0xe", "0.000001")]), 1.5)
    rec.on_ack("0xe", refused, 2.0)
    assert rec.orders.get("0xe").state is S.PENDING_CANCEL


def test_venue_records_of_a_one_micro_share_order_and_an_empty_status():
    rec = Reconciler()
    tiny, a = own("0xt", size=1), own("0xa")
    sent(rec, tiny, a)
    rec.on_order_event(oevent("0xt", "LIVE", "UPDATE", matched="0.000001"), 1.0)
    assert tiny.state is S.FILLED
    rec.on_order_lookup("0xa", oevent("0xa", "", ""), 1.0)
    assert a.state is S.LIVE
    rec.on_order_lookup("0xa", oevent("0xa", "CANCELED", ""), 2.0)
    assert a.state is S.CANCELED


def test_a_held_trade_is_replayed_from_its_record_that_names_the_makers():
    rec = Reconciler()
    taker_view = trade("t1", taker="0xsomeone")
    taker_view["maker_orders"] = []
    rec.on_trade_event(taker_view, 1.0)
    rec.on_trade_event(trade("t1", "MINED", makers=[maker("0xa", "2")]), 2.0)
    assert rec.held_trades == ["t1"]
    out = sent(rec, own("0xa"), now=3.0)
    assert [(f.order_id, f.size) for f in of(out, Fill)] == [("0xa", 2 * U)]


def test_a_failed_trade_reverses_a_leg_claimed_after_another_was_reversed():
    rec = Reconciler(ReconcilerConfig(owner="k1"))
    sent(rec, own("0xa"))
    t = trade("t1", "FAILED", makers=[maker("0xa", "2"), maker("0xb", "3", owner="k1")])
    out = rec.on_trade_event(t, 1.0)
    assert [x.fill.order_id for x in of(out, FillReversal)] == ["0xa"] and rec.held_trades == ["t1"]
    out = sent(rec, own("0xb"), now=2.0)
    assert [x.fill.order_id for x in of(out, FillReversal)] == ["0xb"]
    assert rec.orders.get("0xb").filled == 0


def test_a_trade_of_a_forgotten_order_is_not_held_again():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_trade_event(trade("t1", makers=[maker("0xa", "10")]), 1.0)
    assert rec.orders.get("0xa").state is S.FILLED
    assert rec.orders.forget_closed(before=5.0) == 1
    out = rec.on_trade_event(trade("t1", "MINED", makers=[maker("0xa", "10")]), 6.0)
    assert of(out, Fill) == [] and rec.held_trades == []


def test_cancel_answers_for_unknown_closed_and_blind_orders_do_not_stop_the_rest():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"), own("0xc"), own("0xblind"))
    rec.on_acks(["0xa", "0xb", "0xc"], [ack("0xa"), ack("0xb"), ack("0xc")], 1.0)
    rec.on_cancels_sent(["0xa", "0xb", "0xblind"], 2.0)
    rec.on_cancel_result({"canceled": ["0xa"], "not_canceled": {}}, 2.5)
    answer = {"canceled": [], "not_canceled": {"0xnone": "not found", "0xa": "not found", "0xblind": "not found",
                                               "0xb": "order already matched"}}
    out = rec.on_cancel_result(answer, 3.0, requested=["0xb", "0xblind"])
    assert rec.orders.get("0xb").state is S.CANCELED and of(out, FetchTrades) == [FetchTrades(("0xb",))]
    assert rec.orders.get("0xblind").state is S.PENDING_SUBMIT


def test_a_repeated_not_found_for_an_unanswered_order_still_proves_nothing():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_cancels_sent(["0xa"], 1.0)
    answer = {"canceled": [], "not_canceled": {"0xa": "order not found"}}
    rec.on_cancel_result(answer, 1.5, ["0xa"])
    rec.on_cancel_result(answer, 1.6, ["0xa"])  # the same answer twice (a replayed response)
    assert rec.orders.get("0xa").state is S.PENDING_SUBMIT


def test_a_failed_submit_during_a_blind_cancel_is_looked_up_and_comes_back_unknown():
    rec = Reconciler()
    a, b = own("0xa"), own("0xb")
    sent(rec, a, b)
    rec.on_ack("0xb", ack("0xb"), 0.5)
    rec.on_cancels_sent(["0xa", "0xb"], 1.0)
    out = rec.on_place_failed(["0xnone", "0xa", "0xb"], 2.0, unknown=True)
    assert of(out, LookupOrder) == [LookupOrder("0xa")]  # 0xb was acked: nothing to look up
    rec.on_cancel_failed(["0xa", "0xb"], 3.0)
    assert (a.state, b.state) == (S.UNKNOWN, S.LIVE) and a.updated_at == 3.0


def test_a_plain_failure_leaves_an_answered_order_and_its_reason_alone():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    rec.on_ack("0xa", ack("0xa"), 1.0)
    rec.on_place_failed(["0xnone", "0xa", "0xb"], 2.0, unknown=False, reason="429")
    assert (rec.orders.get("0xa").state, rec.orders.get("0xa").reason) == (S.LIVE, "")
    assert rec.orders.get("0xb").state is S.REJECTED


def test_a_listing_that_may_not_resend_closes_an_unknown_order():
    rec = Reconciler()
    u = own("0xu")
    sent(rec, u, now=1.0)
    rec.on_place_failed(["0xu"], now=1.5, unknown=True)
    u.answered_at = 1.6
    out = rec.on_open_orders([], now=3.0, as_of=2.0, resend_unknown=False)
    assert not of(out, ResendOrder) and u.state is S.CANCELED


def test_a_lookup_judges_absence_only_for_orders_answered_before_it_was_asked():
    rec = Reconciler()
    a, b = own("0xa"), own("0xb")
    sent(rec, a, b, now=1.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 3.0)
    rec.on_order_lookup("0xa", None, 4.0, as_of=2.0)  # asked before the venue answered
    assert a.state is S.LIVE
    rec.on_order_lookup("0xa", None, 4.0, as_of=3.0)  # asked at the instant it answered
    rec.on_order_lookup("0xb", None, 4.0, as_of=1.0)  # asked at the instant it was sent, answered later
    assert (a.state, b.state) == (S.CANCELED, S.LIVE)
    c = own("0xc")
    sent(rec, c, now=5.0)
    rec.on_ack("0xc", ack("0xc"), 5.0)
    rec.on_order_lookup("0xc", None, 6.0, as_of=5.0)  # sent and answered at the instant asked: believed
    assert c.state is S.CANCELED


def test_a_reopened_order_is_told_with_its_reason_counted_and_closed_filled_when_matched():
    rec = Reconciler(ReconcilerConfig(orphan_policy="adopt"))
    a, b = own("0xa", size=1), own("0xb")
    sent(rec, a, b, now=0.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 0.1)
    rec.on_order_event(oevent("0xa", "CANCELED", "CANCELLATION"), 1.0)
    rec.on_order_event(oevent("0xb", "CANCELED", "CANCELLATION"), 1.0)
    quoting = rec.orders.quoting_revision
    out = rec.on_open_orders([oevent("0xa", "LIVE", "", matched="0.000001"), oevent("0xb", "LIVE", "", matched="0.000001")],
                             2.5, as_of=2.0)
    assert rec.orphans_closed == 2 and rec.orders.quoting_revision == quoting + 2  # one each
    assert (b.state, b.reason) == (S.PARTIALLY_FILLED, "listed open after close")
    assert of(out, OrderUpdate)[-1] == OrderUpdate("0xb", TOK, S.PARTIALLY_FILLED, 0, 10 * U - 1, "listed open after close")
    rec.on_open_orders([oevent("0xb", "LIVE", "", matched="0.000001")], 3.5, as_of=3.0)
    assert a.state is S.FILLED  # matched whole and gone from the book: filled


def test_state_moves_that_only_leave_or_join_the_quoting_orders_count_once():
    rec = Reconciler(ReconcilerConfig(orphan_policy="adopt"))
    store = rec.orders
    q = store.quoting_revision
    rec.on_order_event(oevent("0xo", "LIVE", "PLACEMENT"), 1.0)  # adopted: a new order
    assert store.quoting_revision == q + 1
    sent(rec, own("0xa"), now=2.0)
    rec.on_cancels_sent(["0xa"], 3.0)
    q = store.quoting_revision
    rec.on_cancel_result({"canceled": [], "not_canceled": {"0xa": "not found"}}, 4.0, ["0xa"])  # back: blind
    assert store.quoting_revision == q + 1
    rec.on_cancels_sent(["0xa"], 5.0)
    rec.on_ack("0xa", {"success": False, "errorMsg": "no", "orderID": "", "status": ""}, 6.0)
    q = store.quoting_revision
    sent(rec, own("0xc"), now=7.0)
    rec.on_place_failed(["0xc"], 8.0, unknown=False)
    assert store.quoting_revision == q + 2  # filed, then closed


def test_a_trades_read_that_starts_again_from_the_beginning_is_a_new_read():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_trades_page([trade("t1", makers=[maker("0xa", "3")])], 1.0, next_cursor="MTAw")  # no cursor given
    assert rec.cursor_held
    rec.on_trades_page([trade("t1", "CONFIRMED", makers=[maker("0xa", "3")])], 2.0, cursor="MA==", next_cursor="MTAw")
    assert rec.trades_cursor == "MTAw"
    rec.on_trades_page([trade("t2")], 3.0, cursor="MTAw", next_cursor="MjAw")
    assert rec.trades_cursor == "MjAw"
    rec.on_trades_page([trade("t3", makers=[maker("0xa", "1")])], 4.0, cursor="MA==", next_cursor="MTAw")
    assert rec.trades_cursor == "MA=="  # a full re-read met an unsettled trade of ours: back to its page
    rec.on_trades_page([trade("t3", "CONFIRMED", makers=[maker("0xa", "1")])], 5.0, cursor="MA==",
                       next_cursor="MTAw")
    rec.on_trades_page([trade("t4", makers=[maker("0xa", "1")])], 6.0, cursor="MTAw", next_cursor="MjAw")
    rec.on_trades_page([], 6.5, cursor="MjAw", next_cursor="LTE=")
    assert rec.trades_cursor == "MTAw"
    rec.on_trades_page([trade("t4", "CONFIRMED", makers=[maker("0xa", "1")])], 7.0, cursor="MTAw",
                       next_cursor="MjAw")
    assert rec.trades_cursor == "MjAw"  # the stored cursor starts a new read


def test_a_listing_of_several_pages_looks_up_every_order_it_did_not_show():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"), now=0.0)
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 0.1)
    out = rec.on_open_orders([], 2.0, as_of=1.0, pages=2)
    assert of(out, LookupOrder) == [LookupOrder("0xa"), LookupOrder("0xb")]
    assert rec.orders.get("0xa").state is S.LIVE and rec.orders.get("0xb").state is S.LIVE


def test_a_fill_read_after_its_cancelled_order_left_memory_is_booked_once():
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    rec.on_cancels_sent(["0xa"], 1.0)
    rec.on_cancel_result({"canceled": ["0xa"], "not_canceled": {}}, 1.5)
    assert rec.orders.get("0xa").state is S.CANCELED  # the user event of its partial fill was lost
    assert rec.orders.forget_closed(200.0) == 1
    # the trade read later from /data/trades, with another account's maker beside ours
    t = trade("t1", makers=[maker("0xother", "1"), maker("0xa", "3")])
    out = rec.on_trades_page([t], 250.0, cursor="MA==", next_cursor="LTE=")
    assert [(f.order_id, f.token_id, f.size, f.side, f.is_maker) for f in of(out, Fill)] == [
        ("0xa", TOK, 3 * U, Side.BUY, True)]
    assert of(out, SettlementUpdate) == [SettlementUpdate("t1", TradeStatus.MATCHED)]
    assert rec.held_trades == [] and of(out, OrderUpdate) == []
    # read again, told again by the user channel, then failed: booked once, reversed once
    assert not of(rec.on_trades_page([t], 251.0, cursor="MA==", next_cursor="LTE="), Fill)
    assert not of(rec.on_trade_event(dict(t, status="MINED"), 252.0), Fill)
    out = rec.on_trade_event(dict(t, status="FAILED"), 253.0) + rec.on_trade_event(dict(t, status="FAILED"), 254.0)
    assert [(r.fill.order_id, r.fill.size) for r in of(out, FillReversal)] == [("0xa", 3 * U)]
    # a sweep of two of our levels, the first order forgotten, the other still live
    sent(rec, own("0xb"))
    rec.on_acks(["0xb"], [ack("0xb")], 255.0)
    t2 = trade("t2", makers=[maker("0xother", "1"), maker("0xa", "1"), maker("0xb", "2")])
    out = rec.on_trades_page([t2], 256.0, cursor="MA==", next_cursor="LTE=")
    assert [(f.order_id, f.size) for f in of(out, Fill)] == [("0xa", 1 * U), ("0xb", 2 * U)]
    assert [(u.order_id, u.filled) for u in of(out, OrderUpdate)] == [("0xb", 2 * U)] and rec.held_trades == []


def _confirmed(tid, oid="0xa", amt="1", owner=""):
    return trade(tid, status="CONFIRMED", makers=[maker(oid, amt, owner=owner)])


def test_forget_settled_counts_what_it_forgets_from_the_lists_first_position_on():
    rec = Reconciler(ReconcilerConfig(trade_retention_s=10.0))
    sent(rec, own("0xa", size=100 * U))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    assert rec.forget_settled(100.0) == 0  # nothing settled yet
    rec.on_trades_page([_confirmed(f"t{i}") for i in range(3)], 1.0, cursor="MA==", next_cursor=_offset_cursor(3))
    assert rec.trades_cursor == _offset_cursor(3)
    assert rec.forget_settled(5.0) == 0
    assert rec.forget_settled(11.5) == 3  # positions 0, 1 and 2, all behind the cursor
    assert [rec.trade_status(f"t{i}") for i in range(3)] == [None, None, None] and rec.fills() == []


def test_forget_settled_goes_on_past_the_trades_it_keeps():
    rec = Reconciler(ReconcilerConfig(trade_retention_s=10.0))
    sent(rec, own("0xa", size=100 * U))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    rec.on_trade_event(_confirmed("tu"), 1.0)  # known from the user channel only: no position
    rec.on_trades_page([_confirmed("t0"), _confirmed("t1")], 2.0, cursor="MA==", next_cursor=_offset_cursor(2))
    assert rec.forget_settled(20.0) == 2  # tu, first due, is kept: no read shows it behind the cursor
    assert rec.trade_status("tu") is TradeStatus.CONFIRMED and rec.trade_status("t1") is None


def test_a_settled_trade_seen_again_is_kept_for_the_retention_from_then():
    rec = Reconciler(ReconcilerConfig(trade_retention_s=10.0))
    sent(rec, own("0xa", size=100 * U))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    rec.on_trades_page([_confirmed("t0")], 1.0, cursor="MA==", next_cursor=_offset_cursor(1))
    rec.on_trades_page([_confirmed("t1")], 2.0, cursor=_offset_cursor(1), next_cursor=_offset_cursor(2))
    assert not of(rec.on_trade_event(_confirmed("t0"), 5.0), Fill)  # a late duplicate of its event
    assert rec.forget_settled(15.0) == 1  # t0 was seen the retention ago, not more: only t1 goes
    assert rec.trade_status("t0") is TradeStatus.CONFIRMED and rec.trade_status("t1") is None
    assert rec.forget_settled(15.5) == 1 and rec.trade_status("t0") is None


def test_a_settled_trade_held_for_another_order_is_kept_until_that_order_books_its_fill():
    rec = Reconciler(ReconcilerConfig(owner="me", trade_retention_s=10.0))
    sent(rec, own("0xa"))
    rec.on_acks(["0xa"], [ack("0xa")], 0.5)
    t = trade("t1", status="CONFIRMED", makers=[maker("0xa", "2", owner="me"), maker("0xb", "3", owner="me")])
    assert len(of(rec.on_trades_page([t], 1.0, cursor="MA==", next_cursor=_offset_cursor(1)), Fill)) == 1
    assert rec.held_trades == ["t1"]
    assert rec.forget_settled(100.0) == 0 and rec.trade_status("t1") is TradeStatus.CONFIRMED
    out = sent(rec, own("0xb"), now=101.0)
    assert [(f.order_id, f.size) for f in of(out, Fill)] == [("0xb", 3 * U)] and rec.held_trades == []
    assert rec.forget_settled(200.0) == 1


def test_a_trades_page_reads_on_past_a_record_without_an_id():
    rec = Reconciler()
    sent(rec, own("0xa"))
    out = rec.on_trades_page([trade("", makers=[maker("0xa", "1")]), trade("t1", makers=[maker("0xa", "2")])],
                             1.0, cursor="MA==", next_cursor="LTE=")
    assert [(f.trade_id, f.size) for f in of(out, Fill)] == [("t1", 2 * U)]


def test_a_claimed_trade_still_waiting_becomes_the_newest_held():
    rec = Reconciler(ReconcilerConfig(owner="me", max_held_trades=2))

    def two(tid, a, b):  # two maker legs of ours, their orders not known yet
        return trade(tid, makers=[maker(a, "1", owner="me"), maker(b, "2", owner="me")])

    rec.on_trade_event(two("tA", "0xa1", "0xa2"), 1.0)
    rec.on_trade_event(two("tB", "0xb1", "0xb2"), 2.0)
    assert rec.held_trades == ["tA", "tB"]
    assert len(of(sent(rec, own("0xa1"), now=3.0), Fill)) == 1  # tA books one leg, waits for the other
    assert rec.held_trades == ["tB", "tA"]
    rec.on_trade_event(two("tC", "0xc1", "0xc2"), 4.0)  # the bound lets the oldest go: tB
    assert rec.held_trades == ["tA", "tC"]
    out = sent(rec, own("0xa2"), now=5.0)
    assert [(f.trade_id, f.order_id, f.size) for f in of(out, Fill)] == [("tA", "0xa2", 2 * U)]


def _tokenless(t):
    """``t`` as a venue record that names no token, for the trade nor its makers."""
    return dict(t, asset_id="", maker_orders=[dict(m, asset_id="") for m in t["maker_orders"]])


def test_a_trade_that_names_no_token_books_the_fill_on_its_orders_token():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    rec.on_acks(["0xa", "0xb"], [ack("0xa"), ack("0xb")], 0.5)
    rec.on_cancel_result({"canceled": ["0xb"], "not_canceled": {}}, 1.0)
    assert rec.orders.forget_closed(5.0) == 1  # 0xb left memory
    out = rec.on_trade_event(_tokenless(trade("t1", makers=[maker("0xa", "1"), maker("0xb", "2")])), 6.0)
    assert [(f.order_id, f.token_id) for f in of(out, Fill)] == [("0xa", TOK), ("0xb", TOK)]


def test_a_record_of_a_booked_trade_that_names_none_of_our_legs_holds_nothing():
    rec = Reconciler()
    sent(rec, own("0xa"))
    assert len(of(rec.on_trade_event(trade("t1", makers=[maker("0xa", "3")]), 1.0), Fill)) == 1
    out = rec.on_trade_event(trade("t1", "MINED"), 2.0)  # the taker's view: the makers left out
    assert of(out, Fill) == [] and of(out, SettlementUpdate) == [SettlementUpdate("t1", TradeStatus.MINED)]
    assert rec.held_trades == []


def test_a_record_naming_no_leg_does_not_let_a_held_trade_go():
    rec = Reconciler()
    rec.on_trade_event(trade("t1", taker="0xa", side="BUY", size="2"), 1.0)  # fill before ack
    assert rec.held_trades == ["t1"]
    assert rec.on_trade_event(trade("t1", "MINED", taker=""), 2.0) == []  # no leg named
    assert rec.held_trades == ["t1"]
    out = sent(rec, own("0xa"), now=3.0)
    assert [(f.order_id, f.size, f.status) for f in of(out, Fill)] == [("0xa", 2 * U, TradeStatus.MINED)]


# --- prices off the grid, records that cannot be booked, status spellings ---------------------
from bot.execution.reconciler import trade_legs  # noqa: E402
from bot.execution.protocol import TradeBooked, TradeUnbooked


def test_an_offgrid_leg_books_the_cash_the_venue_settled():
    rec = Reconciler()
    sent(rec, own("0xa", price=721_000, size=20 * U))
    out = rec.on_trade_event(trade("t1", makers=[maker("0xa", "11.371898", "0.7210000476613491")]), 1.0)
    (fill,) = of(out, Fill)
    assert (fill.size, fill.price, fill.notional_e12) == (11_371_898, 721_000, 8_199_139 * U)
    ongrid = of(rec.on_trade_event(trade("t2", makers=[maker("0xa", "1.000001", "0.72")]), 2.0), Fill)[0]
    # on the grid, but 0.72000072 USDC: the venue moves whole units, a maker buyer's rounded down
    assert ongrid.notional_e12 == 720_000 * U and ongrid.price == 720_000
    whole = of(rec.on_trade_event(trade("t3", makers=[maker("0xa", "1", "0.72")]), 3.0), Fill)[0]
    assert whole.notional_e12 is None  # price x size is exact as it is


def test_an_offgrid_taker_buy_paying_fee_shares_keeps_the_cash_pro_rata(monkeypatch):
    import bot.execution.reconciler as r

    monkeypatch.setattr(r, "booked_fee", lambda side, price, size, schedule, is_maker: (size - U, price))  # one share kept
    rec = Reconciler()
    sent(rec, own("0xt", side=Side.BUY, price=310_000, size=20 * U))
    t = trade("t1", taker="0xt", side="BUY", size="2.365591", price="0.3099999112272578")
    (fill,) = of(rec.on_trade_event(t, 1.0), Fill)
    kept = 733_333 * U * 1_365_591 // 2_365_591
    assert (fill.size, fill.notional_e12, fill.fee) == (1_365_591, kept, (733_333 * U - kept) // U)
    monkeypatch.setattr(r, "booked_fee", lambda side, price, size, schedule, is_maker: (size, 0))
    (free,) = of(rec.on_trade_event(dict(t, id="t2"), 2.0), Fill)
    assert (free.size, free.notional_e12, free.fee) == (2_365_591, 733_333 * U, 0)


def test_an_unreadable_leg_of_ours_is_told_once_kept_and_booked_when_readable():
    rec = Reconciler()
    sent(rec, own("0xa"), own("0xb"))
    bad = trade("t1", "MATCHED", makers=[maker("0xa", "2", "0.4.1"), maker("0xb", "1", "0.4")])
    out = rec.on_trades_page([bad], 1.0, cursor="MA==", next_cursor="LTE=")
    assert [f.order_id for f in of(out, Fill)] == ["0xb"]  # the readable leg of ours is booked
    (told,) = of(out, TradeUnbooked)
    assert told.trade_id == "t1" and told.tokens == (TOK,) and told.reason.startswith("order 0xa: ")
    assert "0.4.1" in told.reason
    assert rec.blocked_tokens() == {TOK} and rec.unbooked["t1"].since == 1.0
    assert rec.trades_cursor == "MA=="  # the next read starts no later than it
    again = rec.on_trades_page([dict(bad, status="MINED")], 2.0, cursor="MA==", next_cursor="LTE=")
    assert of(again, TradeUnbooked) == [] and of(again, Fill) == []  # told once, booked once
    assert rec.unbooked["t1"].item.status is TradeStatus.MINED  # the latest record is kept
    fixed = trade("t1", "MINED", makers=[maker("0xa", "2", "0.4"), maker("0xb", "1", "0.4")])
    out = rec.on_trades_page([fixed], 3.0, cursor="MA==", next_cursor="LTE=")
    assert [(f.order_id, f.size) for f in of(out, Fill)] == [("0xa", 2 * U)]
    assert of(out, TradeBooked) == [TradeBooked("t1", (TOK,))]
    assert rec.unbooked == {} and rec.blocked_tokens() == set()


def test_a_page_with_nothing_unsettled_but_an_unreadable_record_is_read_again():
    rec = Reconciler()
    sent(rec, own("0xa"))
    page = [trade("t1", "CONFIRMED", makers=[maker("0xa", "2")]), trade("t2", "WHATEVER")]
    rec.on_trades_page(page, 1.0, cursor="MA==", next_cursor="MTAw")
    assert rec.trades_cursor == "MA==" and set(rec.unbooked) == {"t2"}
    rec.on_trades_page(page[:1], 2.0, cursor="MA==", next_cursor="MTAw")
    assert rec.trades_cursor == "MTAw"  # without it the read moves on


def test_an_unreadable_leg_of_another_key_is_no_concern_of_ours():
    rec = Reconciler(ReconcilerConfig(owner="me"))
    sent(rec, own("0xa"))
    t = trade("t1", makers=[maker("0xq", "1", "bad", owner="them"), maker("0xa", "2", "0.4", owner="me")])
    out = rec.on_trade_event(t, 1.0)
    assert [f.order_id for f in of(out, Fill)] == ["0xa"] and rec.unbooked == {}
    # nothing of ours known yet: an unreadable leg of another key still is not ours, one of
    # ours (our key) or of no key may be, and holds its token until the trade is read
    fresh = Reconciler(ReconcilerConfig(owner="me"))
    fresh.on_trade_event(dict(t, id="t2"), 1.0)
    assert fresh.unbooked == {} and fresh.held_trades == ["t2"]
    mine = trade("t3", makers=[maker("0xm", "1", "bad", owner="me")])
    assert of(fresh.on_trade_event(mine, 2.0), TradeUnbooked) == [TradeUnbooked("t3", mine_reason(fresh, "t3"), (TOK,))]
    keyless = Reconciler()
    out = keyless.on_trade_event(trade("t4", makers=[maker("0xm", "1", "bad")]), 1.0)
    assert [u.trade_id for u in of(out, TradeUnbooked)] == ["t4"] and keyless.held_trades == ["t4"]
    # the order turns out to be another leg's: the unreadable one was not ours after all
    out = sent(keyless, own("0xt"), now=2.0)
    assert keyless.unbooked["t4"].tokens == (TOK,)
    keyless.on_trade_event(trade("t4", taker="0xt", makers=[maker("0xm", "1", "bad")]), 3.0)
    assert keyless.unbooked == {}


def mine_reason(rec, tid):
    return rec.unbooked[tid].reason


def test_an_unreadable_leg_of_ours_naming_no_token_stops_its_orders_token():
    rec = Reconciler()
    sent(rec, own("0xa"))
    t = trade("t1", makers=[maker("0xa", "2", "?")])
    t["maker_orders"][0]["asset_id"] = ""
    t["asset_id"] = ""
    (told,) = of(rec.on_trade_event(t, 1.0), TradeUnbooked)
    assert told.tokens == (TOK,)
    forgotten = Reconciler()
    sent(forgotten, own("0xf"))
    forgotten.on_order_event(oevent("0xf", status="CANCELED", typ="CANCELLATION"), 1.0)
    forgotten.orders.forget_closed(2.0)
    assert forgotten.orders.get("0xf") is None
    odd = dict(trade("t2", "?", taker="0xzz", makers=[maker("0xf")]), asset_id="222")
    forgotten.on_trade_event(odd, 3.0)
    assert forgotten.unbooked["t2"].tokens == (TOK,)  # the leg of an order of ours, forgotten since


def test_an_unreadable_taker_leg_of_ours_is_unbooked():
    rec = Reconciler()
    sent(rec, own("0xt", side=Side.SELL))
    out = rec.on_trade_event(trade("t1", taker="0xt", size="1e", makers=[maker("0xq")]), 1.0)
    assert of(out, Fill) == [] and [u.tokens for u in of(out, TradeUnbooked)] == [(TOK,)]


def test_a_record_that_cannot_be_read_never_stops_the_page():
    rec = Reconciler(ReconcilerConfig(owner="me"))
    sent(rec, own("0xa"), own("0xb"))
    unknown_status = trade("t1", "SETTLING", makers=[maker("0xa", "2")])
    out = rec.on_trades_page([unknown_status, trade("t2", makers=[maker("0xb", "1")])], 1.0,
                             cursor="MA==", next_cursor="MTAw")
    assert [f.trade_id for f in of(out, Fill)] == ["t2"]
    (told,) = of(out, TradeUnbooked)
    assert told.trade_id == "t1" and "SETTLING" in told.reason and told.tokens == (TOK,)
    kept = rec.unbooked["t1"]
    assert (kept.trade_id, kept.item, kept.since) == ("t1", unknown_status, 1.0)  # the item as it came
    assert rec.trades_cursor == "MA=="
    # what it names of ours decides its tokens; our key counts; nothing of ours: every token named
    other = dict(trade("t3", "?", taker="0xzz", makers=[maker("0xr", owner="me")]), asset_id="222")
    other["maker_orders"][0]["asset_id"] = "333"
    rec.on_trade_event(other, 2.0)
    assert rec.unbooked["t3"].tokens == ("333",)
    strange = dict(trade("t4", "?", taker="0xzz", makers=[maker("0xr", owner="them")]), asset_id="222")
    rec.on_trade_event(strange, 2.0)
    assert rec.unbooked["t4"].tokens == (TOK, "222")
    assert rec.blocked_tokens() == {TOK, "222", "333"}


def test_a_record_without_an_id_is_kept_under_a_name_of_its_own():
    rec = Reconciler()
    nameless = trade("", makers=[maker("0xa")])
    out = rec.on_trades_page([nameless, 42], 1.0, cursor="MA==", next_cursor="LTE=")
    ids = [u.trade_id for u in of(out, TradeUnbooked)]
    assert len(ids) == 2 and all(i.startswith("?") and len(i) == 17 for i in ids) and ids[0] != ids[1]
    assert rec.unbooked[ids[0]].tokens == (TOK,)  # the tokens it names, no empty one
    assert of(rec.on_trades_page([nameless], 2.0), TradeUnbooked) == []  # the same name again
    assert rec.unbooked[ids[1]].tokens == ()


def test_a_kept_trade_is_not_forgotten():
    rec = Reconciler(ReconcilerConfig(trade_retention_s=1.0))
    sent(rec, own("0xa"), own("0xb"))
    bad = trade("t1", "CONFIRMED", makers=[maker("0xb", "1"), maker("0xa", "2", "?")])
    rec.on_trades_page([bad], 1.0, cursor="MA==", next_cursor="MQ==")
    assert rec.trades_cursor == "MA=="  # settled, but a leg of ours is not booked: read it again
    rec.cursors["trades"] = "MTAw"
    assert rec.forget_settled(10.0) == 0 and rec.trade_status("t1") is TradeStatus.CONFIRMED


def test_a_maker_leg_naming_no_side_on_the_complement_took_the_takers_side():
    t = trade_record(dict(trade("t1", side="BUY", makers=[maker("0xa", side="")]),
                          maker_orders=[{"order_id": "0xa", "matched_amount": "2", "price": "0.6",
                                         "asset_id": "NO"}, {"order_id": "0xb", "matched_amount": "1",
                                                             "price": "0.4", "asset_id": TOK}]))
    assert [(leg.order_id, leg.side, leg.token_id) for leg in trade_legs(t)] == [
        ("0xother", Side.BUY, TOK), ("0xa", Side.BUY, "NO"), ("0xb", Side.SELL, TOK)]


@pytest.mark.parametrize("status", ["ORDER_STATUS_CANCELED", "order_status_canceled", "CANCELED",
                                    "CANCELED_order couldn't be fully filled. FOK orders are fully filled or killed."])
def test_a_canceled_status_in_any_spelling_closes_the_order(status):
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_ack("0xa", ack("0xa"), 0.5)
    rec.on_order_event(oevent("0xa", status=status, typ="UPDATE"), 1.0)
    assert rec.orders.get("0xa").state is S.CANCELED


@pytest.mark.parametrize("status, state", [("ORDER_STATUS_LIVE", S.LIVE), ("ORDER_STATUS_MATCHED", S.FILLED),
                                           ("ORDER_STATUS_INVALID", S.CANCELED), ("order_status_live", S.LIVE)])
def test_order_statuses_read_with_the_documented_prefix(status, state):
    rec = Reconciler()
    sent(rec, own("0xa"))
    rec.on_ack("0xa", ack("0xa"), 0.5)
    rec.on_open_orders([oevent("0xa", status=status, typ="")], 1.0, as_of=0.9)
    assert rec.orders.get("0xa").state is state
    assert order_result(ack("0xb", status="ORDER_STATUS_LIVE")).accepted


def test_the_reason_names_the_first_unreadable_leg_by_its_order_id_cut_to_eighteen():
    rec = Reconciler()
    oid = "0x" + "ab" * 32
    sent(rec, own(oid))
    (told,) = of(rec.on_trade_event(trade("t1", makers=[maker(oid, "2", "0.4.1")]), 1.0), TradeUnbooked)
    assert told.reason.startswith(f"order {oid[:18]}: ") and not told.reason.startswith(f"order {oid[:19]}")


def test_which_unreadable_legs_may_be_ours_when_nothing_of_ours_is_known():
    # no owner key configured: a maker leg under any key may be ours
    keyless = Reconciler()
    out = keyless.on_trade_event(trade("t1", makers=[maker("0xm", "1", "bad", owner="them")]), 1.0)
    assert [u.trade_id for u in of(out, TradeUnbooked)] == ["t1"]
    # with our key: a taker leg (which names no key) may be ours
    keyed = Reconciler(ReconcilerConfig(owner="me"))
    out = keyed.on_trade_event(trade("t2", taker="0xt", size="bad"), 1.0)
    assert [u.trade_id for u in of(out, TradeUnbooked)] == ["t2"]


def test_a_maker_leg_keeps_the_side_it_names_when_the_taker_names_none():
    rec = Reconciler()
    sent(rec, own("0xa", side=Side.SELL))
    (fill,) = of(rec.on_trade_event(trade("t1", taker="", side="", makers=[maker("0xa", side="SELL")]), 1.0), Fill)
    assert fill.side is Side.SELL


def test_a_six_decimal_fill_books_the_cash_the_venue_moves_for_each_leg():
    """A maker BUY of 4.254901 shares at 0.51 pays 2.16999951 USDC rounded down, a maker SELL is
    paid it rounded up; the taker gives or gets the sum of its makers' ends (the local exchange's
    settlement, ``fill_cash``), so the books and the venue's ledger agree to the micro-unit."""
    rec = Reconciler()
    sent(rec, own("0xm", side=Side.BUY, price=510_000, size=10 * U), own("0xs", side=Side.SELL, price=510_000, size=10 * U))
    buy = trade("t1", taker="0xother", side="SELL", size="4.254901", price="0.51",
                makers=[maker("0xm", "4.254901", "0.51")])
    (fill,) = of(rec.on_trade_event(buy, 1.0), Fill)
    assert fill.notional_e12 == 2_169_999 * U  # floored: 2.16999951
    sell = trade("t2", taker="0xother", side="BUY", size="4.254901", price="0.51",
                 makers=[maker("0xs", "4.254901", "0.51", side="SELL")])
    (fill,) = of(rec.on_trade_event(sell, 2.0), Fill)
    assert fill.notional_e12 == 2_170_000 * U  # ceiled
    taker = Reconciler()
    sent(taker, own("0xt", side=Side.BUY, price=520_000, size=10 * U))
    t = trade("t3", taker="0xt", side="BUY", size="6.529411", price="0.51",
              makers=[maker("0xa", "4.254901", "0.51", side="SELL"), maker("0xb", "2.27451", "0.51", side="SELL")])
    (fill,) = of(taker.on_trade_event(t, 3.0), Fill)
    assert fill.notional_e12 == (2_170_000 + 1_160_001) * U  # each maker's end, ceiled


def test_a_takers_cash_is_its_makers_ends_when_they_cover_it_else_its_own_rounded_against_it():
    """The taker gives or gets the sum of its makers' ends (a whole-lot maker's ``price * size``,
    an off-lot one's rounded end) when the record's makers cover its size and all read; otherwise
    its own ``price * size``, a buyer's rounded up and a seller's down. A trade whose every leg is
    whole books ``price * size`` as it is (no cash carried)."""
    def taker_fill(side, size, makers, price="0.51"):
        rec = Reconciler()
        sent(rec, own("0xt", side=Side.BUY if side == "BUY" else Side.SELL, price=600_000 if side == "BUY" else 400_000,
                      size=10 * U))
        (fill,) = [f for f in of(rec.on_trade_event(trade("t", taker="0xt", side=side, size=size, price=price,
                                                            makers=makers), 1.0), Fill) if f.order_id == "0xt"]
        return fill

    mside = {"BUY": "SELL", "SELL": "BUY"}
    # whole taker, off-lot makers: 1.254901 and 0.745099 at 0.51 -> 0.63999951 and 0.38000049
    for side, ends in (("BUY", 640_000 + 380_001), ("SELL", 639_999 + 380_000)):
        f = taker_fill(side, "2", [maker("0xa", "1.254901", "0.51", mside[side]), maker("0xb", "0.745099", "0.51", mside[side])])
        assert f.notional_e12 == ends * U and type(f.notional_e12) is int
    # a whole-lot maker beside an off-lot one: its end is price x size as it is
    f = taker_fill("BUY", "6.254901", [maker("0xa", "5", "0.51", "SELL"), maker("0xb", "1.254901", "0.51", "SELL")])
    assert f.notional_e12 == (2_550_000 + 640_000) * U and type(f.notional_e12) is int
    # makers that do not cover the taker's size: its own price x size, rounded against it
    f = taker_fill("BUY", "6.254901", [maker("0xa", "5", "0.51", "SELL")])
    assert f.notional_e12 == 3_190_000 * U  # 3.18999951 rounded up
    f = taker_fill("SELL", "6.254901", [maker("0xa", "5", "0.51", "BUY")])
    assert f.notional_e12 == 3_189_999 * U  # rounded down
    f = taker_fill("SELL", "6.254901", [])
    assert f.notional_e12 == 3_189_999 * U
    # a maker leg that cannot be read: the makers do not tell the cash, the taker's own price does
    f = taker_fill("BUY", "6.254901", [maker("0xa", "6.254901", "0.5", "SELL"), maker("0xb", "1.2.3", "0.5", "SELL")])
    assert f.notional_e12 == 3_190_000 * U
    # every leg whole: nothing carried
    assert taker_fill("BUY", "5", [maker("0xa", "3", "0.51", "SELL"), maker("0xb", "2", "0.51", "SELL")]).notional_e12 is None
