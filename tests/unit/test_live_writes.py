"""Which place batches must wait for the cancel of an own order they would cross
(``bot.live.writes``), and wire-to-wire matching (``bot.exchange.wire``)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from bot.execution.protocol import SendPlaces
from bot.exchange.wire import frame_tokens, request_tokens, wire_latencies
from bot.execution.orders import OwnOrder
from bot.execution.router import PlaceBatch
from bot.live.writes import crossed_own, crosses
from bot.venue.enums import Side

YES, NO = "111", "222"
BUY, SELL = Side.BUY, Side.SELL


def order(oid: str, token: str, side: Side, price: int) -> OwnOrder:
    return OwnOrder(oid, token, side, price, 10_000_000)


def complement(t: str) -> str:
    return NO if t == YES else YES


def test_a_new_quote_crossing_the_quote_it_replaces_waits_for_that_cancel():
    cancelling = {"a": order("a", YES, SELL, 500_000), "b": order("b", YES, BUY, 300_000)}
    bid_up = SendPlaces(PlaceBatch((order("n1", YES, BUY, 510_000),)))
    assert crossed_own(bid_up, cancelling, complement) == {"a"}
    inside = SendPlaces(PlaceBatch((order("n2", YES, BUY, 490_000), order("n3", YES, SELL, 320_000))))
    assert crossed_own(inside, cancelling, complement) == set()
    assert crossed_own(bid_up, {}, complement) == set()


def test_complementary_bids_that_add_up_to_a_share_cross():
    assert crosses(order("n", NO, BUY, 600_000), order("r", YES, BUY, 400_000), YES)  # a mint at 1.00
    assert not crosses(order("n", NO, BUY, 590_000), order("r", YES, BUY, 400_000), YES)
    assert crosses(order("n", NO, SELL, 600_000), order("r", YES, SELL, 400_000), YES)  # a merge at 1.00
    assert not crosses(order("n", NO, SELL, 610_000), order("r", YES, SELL, 400_000), YES)
    assert not crosses(order("n", NO, BUY, 600_000), order("r", YES, SELL, 400_000), YES)


@given(st.sampled_from([BUY, SELL]), st.integers(1, 99), st.sampled_from([BUY, SELL]), st.integers(1, 99))
def test_same_token_crossing_is_the_venue_rule(side, p, rside, rp):
    new, resting = order("n", YES, side, p * 10_000), order("r", YES, rside, rp * 10_000)
    trades = side is not rside and (p >= rp if side is BUY else p <= rp)
    assert crosses(new, resting, NO) is trades


def test_wire_to_wire_counts_each_book_update_once_by_the_first_order_after_it():
    frames = [(1.0, ("A",)), (1.5, ("B",)), (2.0, ("A",))]
    requests = [(1.01, ("A",)), (1.02, ("A",)), (1.6, ("A", "B")), (2.05, ("A",)), (0.5, ("A",))]
    got = wire_latencies(frames, requests)
    assert [round(x, 3) for x in got] == [0.01, 0.1, 0.05]  # A@1.0 by 1.01; B@1.5 by 1.6; A@2.0 by 2.05


def test_wire_stamps_read_tokens_from_frames_and_order_bodies():
    frame = json.dumps({"event_type": "price_change", "market": "m", "timestamp": "1", "price_changes": [
        {"asset_id": "A", "price": "0.5", "size": "1", "side": "BUY"},
        {"asset_id": "B", "price": "0.5", "size": "1", "side": "SELL"},
        {"asset_id": "A", "price": "0.4", "size": "1", "side": "BUY"}]})
    assert frame_tokens(frame) == ("A", "B")
    assert frame_tokens(b"[{\"event_type\": \"book\"}]") == () and frame_tokens(b"{not json") == ()
    body = json.dumps([{"order": {"tokenId": "A"}}, {"order": {"tokenId": "B"}}, {"order": {}}]).encode()
    assert request_tokens(body) == ("A", "B") and request_tokens(b"{}") == ()
