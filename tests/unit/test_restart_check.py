"""``check_fills``: at restart the journal's fills answer to the venue's trades, field by field, and
orders the journal lost are rebuilt from the trades that name them."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.events import Fill
from bot.execution.journal import JournalState
from bot.execution.orders import OrderState, OwnOrder
from bot.execution.reconciler import ReconcilerConfig
from bot.execution.records import MakerLeg, TradeRecord
from bot.execution.restart import check_fills
from bot.venue.enums import Side, TradeStatus

U = 1_000_000
ME = "me-key"
CONFIG = ReconcilerConfig(owner=ME)


def order(oid: str, side: Side = Side.BUY, price: int = 480_000, size: int = 10 * U) -> OwnOrder:
    return OwnOrder(oid, "tok", side, price, size, state=OrderState.FILLED, filled=size, sent_at=1.0, updated_at=1.0)


def maker_trade(tid: str, oid: str, side: Side = Side.BUY, price: int = 480_000, size: int = 10 * U,
                status: TradeStatus = TradeStatus.CONFIRMED) -> TradeRecord:
    """A trade where our resting ``oid`` was the maker (the taker another account's order)."""
    return TradeRecord(tid, status, taker_order_id="0xtheirs", token_id="tok", side=side.opposite, size=size,
                       price=price, owner=ME, trader_side="MAKER", match_time=5.0,
                       maker_orders=(MakerLeg(oid, size, price, side, "tok", ME),))


def fill(tid: str, oid: str, side: Side = Side.BUY, price: int = 480_000, size: int = 10 * U) -> Fill:
    return Fill(tid, oid, "tok", side, price, size, status=TradeStatus.MATCHED, ts=5.0)


def state(orders: list[OwnOrder], fills: list[Fill], reversed_: list[tuple[str, str]] = ()) -> JournalState:
    return JournalState(orders, fills, list(reversed_), {f.trade_id: f.status for f in fills}, {"trades": "MA=="})


def test_journal_that_agrees_with_the_venue_is_left_as_it_is():
    s = state([order("0xa")], [fill("t1", "0xa")])
    check = check_fills(s, [maker_trade("t1", "0xa")], [], CONFIG)
    assert check.state is s and check.repairs == [] and check.rebuilt == [] and check.checked == 1


@pytest.mark.parametrize("damage, field", [
    (dict(size=10 * U ^ (1 << 20)), "size"),
    (dict(price=480_000 ^ (1 << 13)), "price"),
    (dict(side=Side.SELL), "side"),
    (dict(order_id="0xb"), "order_id"),
    (dict(token_id="tik"), "token_id"),
])
def test_each_kind_of_damage_is_repaired_from_the_venue_s_record(damage, field):
    true = fill("t1", "0xa")
    s = state([order("0xa")], [msgspec.structs.replace(true, **damage), fill("t2", "0xa", size=U)])
    check = check_fills(s, [maker_trade("t1", "0xa"), maker_trade("t2", "0xa", size=U)], [], CONFIG)
    assert [r.fields for r in check.repairs] == [(field,)]
    assert check.state.fills == [true, fill("t2", "0xa", size=U)]  # the status stays the journal's: the merge moves it
    assert check.repairs[0].venue == true and check.repairs[0].journaled.trade_id == "t1"


def test_a_repaired_fill_keeps_its_reversal():
    s = state([order("0xa")], [fill("t1", "0xb")], [("t1", "0xb")])
    check = check_fills(s, [maker_trade("t1", "0xa", status=TradeStatus.FAILED)], [], CONFIG)
    assert [f.key for f in check.state.fills] == [("t1", "0xa")] and check.state.reversed == [("t1", "0xa")]


def test_fills_outside_the_venue_s_window_or_unexplained_are_kept():
    s = state([order("0xa")], [fill("t0", "0xa"), fill("t1", "0xz")])
    # t0 is older than the venue's window; t1's record names no order of ours that the journal lacks
    check = check_fills(s, [maker_trade("t1", "0xa"), maker_trade("t1b", "0xa")], [], CONFIG)
    assert check.state.fills[0] == fill("t0", "0xa")
    s2 = state([order("0xa")], [fill("t1", "0xa"), fill("t1", "0xz")])
    check = check_fills(s2, [maker_trade("t1", "0xa")], [], CONFIG)
    assert check.repairs == [] and check.state.fills == s2.fills


def test_orders_the_journal_lost_are_rebuilt_from_the_trades_naming_them():
    s = state([order("0xa")], [fill("t1", "0xa")])
    trades = [maker_trade("t1", "0xa"), maker_trade("t2", "0xlost", size=3 * U), maker_trade("t3", "0xlost", size=2 * U),
              maker_trade("t4", "0xopen", size=U),
              # a trade whose maker leg is another account's: not ours, nothing rebuilt
              TradeRecord("t5", TradeStatus.MATCHED, taker_order_id="0xx", token_id="tok", side=Side.BUY, size=U,
                          price=500_000, trader_side="MAKER", maker_orders=(MakerLeg("0xnot", U, 500_000, Side.SELL,
                                                                                     "tok", "someone"),))]
    listed = [{"id": "0xopen", "status": "LIVE", "asset_id": "tok", "side": "BUY", "price": "0.48",
               "original_size": "10", "size_matched": "1", "market": "0xm"}]
    check = check_fills(s, trades, listed, CONFIG)
    assert sorted(check.rebuilt) == ["0xlost", "0xopen"]
    rebuilt = {o.order_id: o for o in check.state.orders}
    assert rebuilt["0xlost"].state is OrderState.FILLED and rebuilt["0xlost"].size == 5 * U
    assert rebuilt["0xlost"].filled == 0  # the merge books its fills (and counts them) once
    assert rebuilt["0xopen"].state is OrderState.PARTIALLY_FILLED and rebuilt["0xopen"].size == 10 * U


def test_nothing_is_rebuilt_when_other_processes_share_the_key():
    """``orphan_policy = "ignore"``: orders the journal does not know may be another process's."""
    shared = msgspec.structs.replace(CONFIG, orphan_policy="ignore")
    check = check_fills(state([order("0xa")], [fill("t1", "0xa")]),
                        [maker_trade("t1", "0xa"), maker_trade("t2", "0xother")], [], shared)
    assert check.rebuilt == [] and [o.order_id for o in check.state.orders] == ["0xa"]


def test_a_taker_fill_is_checked_with_the_fee_the_live_path_books():
    o = OwnOrder("0xt", "tok", Side.BUY, 520_000, 10 * U, state=OrderState.FILLED, filled=10 * U)
    t = TradeRecord("t1", TradeStatus.CONFIRMED, taker_order_id="0xt", token_id="tok", side=Side.BUY, size=10 * U,
                    price=520_000, fee_rate_bps=200, owner=ME, trader_side="TAKER", match_time=5.0,
                    maker_orders=(MakerLeg("0xm", 10 * U, 520_000, Side.SELL, "tok", "them"),))
    booked = check_fills(state([o], []), [t], [], CONFIG)  # what the venue's record books
    assert booked.rebuilt == []
    from bot.execution.reconciler import Reconciler

    r = Reconciler(CONFIG)
    r.load([OwnOrder("0xt", "tok", Side.BUY, 520_000, 10 * U, state=OrderState.LIVE)], (), (), {}, {})
    (true,) = [x for x in r.on_trades_page([t], 0.0) if type(x) is Fill]
    assert true.fee > 0 and true.size < 10 * U
    check = check_fills(state([o], [msgspec.structs.replace(true, status=TradeStatus.MATCHED)]), [t], [], CONFIG)
    assert check.repairs == []
    bad = msgspec.structs.replace(true, size=10 * U, status=TradeStatus.MATCHED)  # the fee shares not taken off
    check = check_fills(state([o], [bad]), [t], [], CONFIG)
    assert [r.fields for r in check.repairs] == [("size",)] and check.state.fills[0].size == true.size


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 50), st.integers(1, 99), st.booleans()), min_size=1, max_size=8),
       st.data())
def test_any_single_flipped_bit_is_repaired(trades, data):
    """One bit flipped in one journaled fill's size or price: the fills after the check are the
    venue's, exactly, and the one repair names that field."""
    orders = [order(f"0x{i:02x}", Side.BUY if buy else Side.SELL, p * 10_000, n * U)
              for i, (n, p, buy) in enumerate(trades)]
    records = [maker_trade(f"t{i}", o.order_id, o.side, o.price, o.size) for i, o in enumerate(orders)]
    true = [fill(f"t{i}", o.order_id, o.side, o.price, o.size) for i, o in enumerate(orders)]
    k = data.draw(st.integers(0, len(true) - 1))
    field = data.draw(st.sampled_from(["size", "price"]))
    bit = data.draw(st.integers(0, 40))
    damaged = list(true)
    damaged[k] = msgspec.structs.replace(true[k], **{field: getattr(true[k], field) ^ (1 << bit)})
    check = check_fills(state(orders, damaged), records, [], CONFIG)
    assert check.state.fills == true
    assert [(r.trade_id, r.fields) for r in check.repairs] == [(f"t{k}", (field,))]


def test_a_maker_fill_with_a_rebate_is_checked_with_the_markets_rule_and_not_repaired():
    """The check books the venue's records with each market's fee rule, as the live path does: a
    journaled maker fill carrying its rebate (a negative fee) agrees, and is left as it is."""
    from bot.execution.reconciler import Reconciler
    from bot.venue.fees import FeeSchedule

    fees = {"tok": FeeSchedule(rate=20_000, exponent=1, rebate=250_000)}
    live = Reconciler(CONFIG)
    live.fees = fees
    live.load([OwnOrder("0xa", "tok", Side.BUY, 480_000, 10 * U, state=OrderState.LIVE)], (), (), {}, {})
    (booked,) = [x for x in live.on_trades_page([maker_trade("t1", "0xa")], 0.0) if type(x) is Fill]
    assert booked.fee < 0  # the rebate
    journaled = msgspec.structs.replace(booked, status=TradeStatus.MATCHED)
    check = check_fills(state([order("0xa")], [journaled]), [maker_trade("t1", "0xa")], [], CONFIG, fees)
    assert check.repairs == [] and check.checked == 1
    without = check_fills(state([order("0xa")], [journaled]), [maker_trade("t1", "0xa")], [], CONFIG)
    assert [r.fields for r in without.repairs] == [("fee",)]  # what a check blind to the rule would do


def test_an_unreadable_record_in_the_venues_list_does_not_stop_the_check():
    bad = {"id": "t0", "status": "CONFIRMED", "taker_order_id": "0xtheirs", "asset_id": "tok", "side": "SELL",
           "size": "1.2.3", "price": "0.48", "match_time": "5", "maker_orders": []}
    s = state([order("0xa")], [fill("t1", "0xa", size=9 * U)])
    check = check_fills(s, [bad, maker_trade("t1", "0xa")], [], CONFIG)
    assert [r.fields for r in check.repairs] == [("size",)]


def test_a_repaired_trade_is_replaced_with_its_fills_and_reversals():
    s = state([order("0xa")], [fill("t1", "0xa", size=9 * U), fill("t2", "0xa")], [("t1", "0xa")])
    check = check_fills(s, [maker_trade("t1", "0xa")], [], CONFIG)
    (fills, reversed_ids), = check.replaced().values()
    assert list(check.replaced()) == ["t1"] and [f.size for f in fills] == [10 * U] and reversed_ids == {"0xa"}
