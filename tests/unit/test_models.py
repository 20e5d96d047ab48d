"""Behaviour of the wire models: tolerance, strictness, spellings, frames, encoders."""

from __future__ import annotations

import gc
import json

import msgspec
import pytest

from bot.venue.enums import TradeStatus
from bot.venue.models import (
    ApiCreds, BookEvent, CancelResult, CatalogMarket, ClobMarketInfo, DecodeError, ErrorBody,
    Heartbeat, LastTradePriceEvent, Level, LevelChange, LiveOpenOrder, MarketResolvedEvent, MarketSubscribe,
    OpenOrder, OrderBook, OrderEnvelope, OrderEvent, OrderResult, OrderSubmission, Page, PriceChangeEvent,
    PriceMap, SignedOrder, SubscriptionUpdate, TickSizeResponse, Trade, TradeEvent,
    UserSubscribe, convert, decode, decode_market_frame, decode_order_lookup, decode_user_frame, encode,
    encode_frame, epoch_ms,
)

MARKET = "0xdd22472e552920b8438158ea7238bfadfa4f736aa4cee91a6b86c39ead110917"
TOKEN = "21742633143463906290569050155826241533067272736897614950488156847949938836455"


def dumps(obj) -> bytes:
    return json.dumps(obj).encode()


def book_obj(**extra):
    return {
        "event_type": "book", "market": MARKET, "asset_id": TOKEN, "timestamp": "1725842520990",
        "hash": "abc", "bids": [{"price": "0.48", "size": "10"}], "asks": [{"price": "0.52", "size": "7.5"}],
        **extra,
    }


def open_order_obj(snake: bool) -> dict:
    names = (
        ("associate_trades", "associateTrades"), ("original_size", "originalSize"),
        ("maker_address", "makerAddress"), ("size_matched", "sizeMatched"),
        ("asset_id", "assetId"), ("created_at", "createdAt"),
    )
    values = [["t1"], "100", "0xabc", "25", TOKEN, "2024-09-09T00:42:00Z"]
    obj = {"id": "0x01", "status": "LIVE", "market": MARKET, "price": "0.5", "side": "BUY",
           "outcome": "Yes", "owner": "k", "expiration": "0", "order_type": "GTC"}
    for (s, c), v in zip(names, values):
        obj[s if snake else c] = v
    return obj


def trade_obj(**extra) -> dict:
    return {
        "id": "t-1", "taker_order_id": "0xaa", "market": MARKET, "asset_id": TOKEN, "side": "BUY",
        "size": "5", "price": "0.489", "status": "TRADE_STATUS_CONFIRMED", "match_time": "1726043102",
        "maker_orders": [{"order_id": "0xbb", "matched_amount": "5", "price": "0.489", "asset_id": TOKEN}],
        **extra,
    }


# -- tolerance and strictness -------------------------------------------------------------


def test_unknown_extra_fields_are_ignored():
    book = decode(dumps(book_obj(brand_new_field={"x": 1})), BookEvent)
    assert book.bids == [Level(price="0.48", size="10")]
    assert b"brand_new_field" not in encode(book)


def test_missing_required_field_names_model_and_field():
    obj = book_obj()
    del obj["asset_id"], obj["event_type"]
    with pytest.raises(DecodeError) as exc:
        decode(dumps(obj), OrderBook)
    msg = str(exc.value)
    assert "OrderBook" in msg and "`asset_id`" in msg and "\n" not in msg
    assert exc.value.model == "OrderBook"


def test_missing_field_inside_list_gives_its_path():
    with pytest.raises(DecodeError, match=r"Page\[OpenOrder\].*`id`.*\$\.data\[0\]"):
        decode(b'{"data":[{"status":"LIVE"}],"next_cursor":""}', Page[OpenOrder])


def test_wrong_type_and_bad_json_raise_decode_error():
    with pytest.raises(DecodeError, match="price"):
        decode(dumps({"price": 0.5, "size": "1"}), Level)  # prices are strings on the wire
    with pytest.raises(DecodeError):
        decode(b"{not json", Level)
    with pytest.raises(DecodeError, match="size"):
        convert({"price": "0.5"}, Level)


# -- open orders: both spellings ------------------------------------------------------------


def test_open_order_accepts_both_spellings_and_emits_interface_names():
    camel = decode(dumps(open_order_obj(snake=False)), OpenOrder)
    snake = decode(dumps(open_order_obj(snake=True)), OpenOrder)
    assert camel == snake
    assert (snake.original_size, snake.size_matched, snake.asset_id) == ("100", "25", TOKEN)
    assert snake.associate_trades == ["t1"] and snake.maker_address == "0xabc"
    wire = json.loads(encode(snake))
    assert {"originalSize", "sizeMatched", "assetId", "createdAt", "makerAddress"} <= wire.keys()
    assert not {"original_size", "size_matched", "asset_id", "created_at"} & wire.keys()


@pytest.mark.parametrize("created", ["2024-09-09T00:42:00Z", 1725842520, "1725842520", 1725842520.0])
def test_open_order_created_at_forms(created):
    obj = open_order_obj(snake=True) | {"created_at": created}
    order = decode(dumps(obj), OpenOrder)
    assert order.created_at_ms == 1725842520000


@pytest.mark.parametrize("expiration,seconds", [("0", 0), (None, 0), ("1767225600", 1767225600)])
def test_open_order_expiration_forms(expiration, seconds):
    order = decode(dumps(open_order_obj(snake=False) | {"expiration": expiration}), OpenOrder)
    assert order.expiration_s == seconds


def test_live_open_order_is_read_back_as_the_same_order():
    """What the local exchange writes in the live venue's spelling decodes to the order the seed's
    spelling gives (created_at: epoch seconds there, ISO 8601 here)."""
    live = LiveOpenOrder(id="0x1", status="LIVE", owner="k", maker_address="0xabc", market="0xm", asset_id=TOKEN,
                         side="BUY", original_size="100", size_matched="25", price="0.5", outcome="Yes",
                         expiration="0", order_type="GTC", associate_trades=["t1"], created_at=1725842520)
    raw = encode(live)
    assert raw.startswith(b'{"id":"0x1","status":"LIVE","owner":"k","maker_address":"0xabc"')
    got = decode(raw, OpenOrder)
    seed = decode(dumps(open_order_obj(snake=False) | {"id": "0x1", "createdAt": "2024-09-09T00:42:00Z",
                                                       "outcome": "Yes", "owner": "k"}), OpenOrder)
    assert (got.id, got.original_size, got.size_matched, got.asset_id, got.maker_address, got.associate_trades,
            got.created_at_ms) == (seed.id, seed.original_size, seed.size_matched, seed.asset_id,
                                   seed.maker_address, seed.associate_trades, seed.created_at_ms)
    assert decode(b'{"order":' + raw + b"}", OrderEnvelope).order == got
    assert decode_order_lookup(raw) == got == decode_order_lookup(b'{"order":' + raw + b"}")  # bare or wrapped
    with pytest.raises(DecodeError):
        decode_order_lookup(b'{"order":{"id":"0x1"}}')


def test_open_order_missing_size_names_both_spellings():
    obj = open_order_obj(snake=True)
    del obj["size_matched"]
    with pytest.raises(DecodeError, match="`sizeMatched` \\(or `size_matched`\\)"):
        decode(dumps(obj), OpenOrder)


# -- trades ---------------------------------------------------------------------------------


def test_trade_status_prefix_role_and_times():
    t = decode(dumps(trade_obj(type="TAKER", last_update="2024-09-11T08:28:02Z")), Trade)
    assert t.trade_status is TradeStatus.CONFIRMED
    assert t.role == "TAKER"  # no trader_side: read from type
    assert t.match_time_ms == 1726043102000
    assert t.last_update_ms == 1726043282000
    t2 = decode(dumps(trade_obj(type="TRADE", trader_side="maker")), Trade)
    assert t2.role == "MAKER"
    assert t2.maker_orders[0].side is None  # older captures omit a maker order's side


def test_trade_missing_maker_order_field():
    obj = trade_obj()
    del obj["maker_orders"][0]["matched_amount"]
    with pytest.raises(DecodeError, match="matched_amount"):
        decode(dumps(obj), Trade)


# -- frames ---------------------------------------------------------------------------------


def test_array_frame_decodes_every_event_in_order():
    frame = dumps([book_obj(), book_obj(asset_id="2"), {"event_type": "tick_size_change",
                   "asset_id": "2", "market": MARKET, "old_tick_size": "0.01",
                   "new_tick_size": "0.001", "timestamp": "1"}])
    events = decode_market_frame(frame)
    assert [type(e).__name__ for e in events] == ["BookEvent", "BookEvent", "TickSizeChangeEvent"]
    assert events[1].asset_id == "2"


def test_pong_and_non_json_yield_nothing():
    assert decode_market_frame(b"PONG") == []
    assert decode_market_frame("PONG") == []
    assert decode_user_frame(b"PONG") == []
    assert decode_market_frame(b"42") == []


def test_unknown_event_types_are_skipped_others_kept():
    frame = dumps([{"event_type": "something_new", "x": 1}, book_obj(), "junk", {"no": "shape"}])
    events = decode_market_frame(frame)
    assert len(events) == 1 and isinstance(events[0], BookEvent)
    # user events on the market decoder (and vice versa) are not market events
    assert decode_market_frame(dumps(trade_obj(event_type="trade"))) == []
    assert decode_user_frame(dumps(book_obj())) == []


def test_recognised_event_with_bad_shape_raises():
    bad = book_obj()
    del bad["bids"]
    with pytest.raises(DecodeError, match="BookEvent.*bids"):
        decode_market_frame(dumps([bad, {"event_type": "unknown"}]))


def test_events_without_event_type_are_recognised_by_shape():
    untagged = book_obj()
    del untagged["event_type"]
    ltp = {"asset_id": TOKEN, "market": MARKET, "price": "0.5", "side": "BUY", "size": "3",
           "fee_rate_bps": "0", "timestamp": "1"}
    events = decode_market_frame(dumps([untagged, ltp]))
    assert isinstance(events[0], BookEvent) and isinstance(events[1], LastTradePriceEvent)
    user = decode_user_frame(dumps([trade_obj(), {k: v for k, v in {
        "id": "0x1", "market": MARKET, "asset_id": TOKEN, "side": "BUY", "price": "0.5",
        "original_size": "5", "size_matched": "0", "status": "LIVE", "type": "PLACEMENT"}.items()}]))
    assert isinstance(user[0], TradeEvent) and isinstance(user[1], OrderEvent)


def test_legacy_single_level_price_change_is_converted():
    legacy = {"event_type": "price_change", "asset_id": TOKEN, "market": MARKET, "price": "0.514",
              "side": "SELL", "size": "21574.08", "hash": "h1", "timestamp": "1723967931411"}
    (event,) = decode_market_frame(dumps(legacy))
    assert isinstance(event, PriceChangeEvent)
    assert event.price_changes == [LevelChange(asset_id=TOKEN, price="0.514", size="21574.08",
                                               side="SELL", hash="h1")]
    assert (event.market, event.timestamp) == (MARKET, "1723967931411")


def test_legacy_changes_array_price_change_is_converted():
    legacy = {"event_type": "price_change", "asset_id": TOKEN, "market": MARKET, "hash": "h",
              "timestamp": "5", "changes": [{"price": "0.4", "side": "BUY", "size": "0"},
                                            {"price": "0.6", "side": "SELL", "size": "12"}]}
    (event,) = decode_market_frame(dumps([legacy]))
    assert [(c.asset_id, c.price, c.side, c.size, c.hash) for c in event.price_changes] == [
        (TOKEN, "0.4", "BUY", "0", "h"), (TOKEN, "0.6", "SELL", "12", "h")]


def test_current_price_change_fans_out_per_asset():
    frame = {"event_type": "price_change", "market": MARKET, "timestamp": "9", "price_changes": [
        {"asset_id": "1", "price": "0.5", "size": "10", "side": "BUY", "hash": "a", "best_bid": "0.5", "best_ask": "0.6"},
        {"asset_id": "2", "price": "0.5", "size": "0", "side": "SELL", "hash": "b", "best_bid": "0.4", "best_ask": "0.5"}]}
    (event,) = decode_market_frame(dumps(frame))
    assert [c.asset_id for c in event.price_changes] == ["1", "2"]
    assert event.price_changes[1].best_ask == "0.5"


def test_price_change_fast_path_decodes_like_the_general_decoder():
    from bot.venue.models.ws import _market_fast

    changes = [{"asset_id": "1", "price": "0.5", "size": "10", "side": "BUY", "hash": "a",
                "best_bid": "0.5", "best_ask": "0.6"}]
    tag_last = {"market": MARKET, "price_changes": changes, "timestamp": "9", "event_type": "price_change"}
    tag_first = {"event_type": "price_change", "market": MARKET, "timestamp": "9", "price_changes": changes}
    untagged = {"market": MARKET, "timestamp": "9", "price_changes": changes}
    expected = _market_fast.decode(dumps(tag_first))
    for obj in (tag_last, tag_first, untagged):
        data = dumps(obj)
        assert decode_market_frame(data) == [expected]
        assert decode_market_frame(data.decode()) == [expected]  # text frames too
        assert decode_market_frame(b"[" + data + b"]") == [expected]
    # another event type that merely mentions "price_change" is not taken for one
    (book,) = decode_market_frame(dumps(book_obj(market="price_change")))
    assert isinstance(book, BookEvent) and book.market == "price_change"
    ltp = {"event_type": "last_trade_price", "asset_id": TOKEN, "market": MARKET, "price": "0.5",
           "side": "BUY", "size": "3", "timestamp": "1", "fee_rate_bps": "price_change"}
    (trade,) = decode_market_frame(dumps(ltp))
    assert isinstance(trade, LastTradePriceEvent)
    # a bad price_change still fails the same way on the fast path
    with pytest.raises(DecodeError):
        decode_market_frame(dumps(tag_last | {"price_changes": [{"asset_id": "1"}]}))
    assert decode_market_frame(b'{"event_type": "price_change"') == []  # truncated JSON


def test_hot_path_events_are_not_gc_tracked():
    (event,) = decode_market_frame(dumps(book_obj()))
    assert not gc.is_tracked(event) and not gc.is_tracked(event.bids[0])


def test_market_resolved_accepts_both_token_list_spellings():
    base = {"event_type": "market_resolved", "market": MARKET, "winning_asset_id": "1",
            "winning_outcome": "Yes", "timestamp": "1"}
    (a,) = decode_market_frame(dumps(base | {"assets_ids": ["1", "2"]}))
    (b,) = decode_market_frame(dumps(base | {"asset_ids": ["1", "2"]}))
    assert isinstance(a, MarketResolvedEvent) and a == b and b.assets_ids == ["1", "2"]


# -- encoders -------------------------------------------------------------------------------


def test_price_change_encodes_venue_shape_and_omits_unset():
    event = PriceChangeEvent(market="m", timestamp="1", price_changes=[
        LevelChange(asset_id="a", price="0.5", size="10", side="BUY", hash="h", best_bid="0.5", best_ask="0.6"),
        LevelChange(asset_id="a", price="0.4", size="0", side="BUY")])
    assert encode(event) == (
        b'{"event_type":"price_change","market":"m","timestamp":"1","price_changes":['
        b'{"asset_id":"a","price":"0.5","side":"BUY","size":"10","hash":"h","best_bid":"0.5","best_ask":"0.6"},'
        b'{"asset_id":"a","price":"0.4","side":"BUY","size":"0"}]}')  # key order of the captured frames
    assert decode_market_frame(encode_frame([event, event])) == [event, event]


def test_book_encodes_in_hash_recipe_order():
    book = OrderBook(market="m", asset_id="a", timestamp="1", hash="", bids=[], asks=[],
                     min_order_size="5", tick_size="0.01", neg_risk=False, last_trade_price="0.5")
    assert list(json.loads(encode(book))) == [
        "market", "asset_id", "timestamp", "hash", "bids", "asks", "min_order_size", "tick_size",
        "neg_risk", "last_trade_price"]


def test_user_events_round_trip_with_event_type():
    order = OrderEvent(id="0x1", owner="k", market=MARKET, asset_id=TOKEN, side="BUY", price="0.5",
                       original_size="5", size_matched="0", status="LIVE", type="PLACEMENT",
                       created_at="1725842520", expiration="0", timestamp="1725842520990")
    wire = json.loads(encode(order))
    assert wire["event_type"] == "order" and "associate_trades" not in wire
    assert decode_user_frame(encode(order)) == [order]
    assert order.created_at_ms == 1725842520000


def test_subscription_frames():
    assert encode(MarketSubscribe(assets_ids=["1", "2"])) == (
        b'{"type":"market","assets_ids":["1","2"],"custom_feature_enabled":false}')
    creds = ApiCreds(api_key="k", secret="s", passphrase="p")
    assert encode(UserSubscribe(auth=creds)) == (
        b'{"type":"user","auth":{"apiKey":"k","secret":"s","passphrase":"p"}}')
    assert json.loads(encode(UserSubscribe(auth=creds, markets=[MARKET])))["markets"] == [MARKET]
    assert encode(SubscriptionUpdate(operation="unsubscribe", assets_ids=["1"])) == (
        b'{"operation":"unsubscribe","assets_ids":["1"]}')


def test_signed_order_body_keeps_client_key_order():
    order = SignedOrder(salt=123, maker="0xM", signer="0xS", token_id="7", condition_id="0xc",
                        maker_amount="5000000", taker_amount="10000000", side="BUY",
                        signature_type=0, timestamp="1767225600123", metadata="0x00",
                        builder="0x00", signature="0xaf")
    body = OrderSubmission(order=order, owner="uuid", order_type="GTC", defer_exec=False, post_only=False)
    assert encode(body) == (
        b'{"order":{"salt":123,"maker":"0xM","signer":"0xS","tokenId":"7","conditionId":"0xc",'
        b'"makerAmount":"5000000","takerAmount":"10000000","side":"BUY","signatureType":0,'
        b'"timestamp":"1767225600123","metadata":"0x00","builder":"0x00","signature":"0xaf"},'
        b'"owner":"uuid","orderType":"GTC","deferExec":false,"postOnly":false}')
    gtd = msgspec.structs.replace(order, expiration="1767229200")
    assert b'"side":"BUY","expiration":"1767229200","signatureType":0' in encode(gtd)
    assert decode(b'{"salt":"99","maker":"m","signer":"s","tokenId":"1","makerAmount":"1",'
                  b'"takerAmount":"2","side":"SELL","signatureType":1,"timestamp":"1",'
                  b'"metadata":"0x","builder":"0x","signature":"0x"}', SignedOrder).salt == "99"


# -- bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("body,accepted", [
    ({"success": True, "errorMsg": "", "orderID": "0x1", "status": "live"}, True),
    ({"success": True, "errorMsg": None, "orderID": "0x1", "status": "matched"}, True),
    ({"success": True, "orderID": "0x1", "status": "delayed"}, True),
    ({"success": True, "errorMsg": "", "orderID": "0x1", "status": "unmatched"}, False),
    ({"success": True, "errorMsg": "invalid expiration", "orderID": "0x1", "status": "live"}, False),
    ({"success": True, "errorMsg": "", "orderID": "", "status": "live"}, False),
    ({"success": False, "orderID": None, "errorMsg": "Insufficient balance"}, False),
])
def test_order_result_accepted(body, accepted):
    assert decode(dumps(body), OrderResult).accepted is accepted


def test_order_result_extras_and_empty_amounts():
    r = decode(dumps({"success": True, "errorMsg": "", "orderID": "0x1", "status": "matched",
                      "makingAmount": "", "takingAmount": "", "orderHash": "0x1",
                      "tradeIDs": ["t"], "transactionsHashes": ["0xh"]}), OrderResult)
    assert (r.making_amount, r.trade_ids, r.transactions_hashes) == ("", ["t"], ["0xh"])
    assert json.loads(encode(r))["tradeIDs"] == ["t"]


@pytest.mark.parametrize("body,message,cls,detail", [
    ({"error": "unknown_field: sortBy"}, "unknown_field: sortBy", "unknown_field", "sortBy"),
    ({"error": "unauthorized: ip_not_allowlisted"}, "unauthorized: ip_not_allowlisted", "unauthorized", "ip_not_allowlisted"),
    ({"type": "not found error", "error": "id not found"}, "id not found", None, "id not found"),
    ({"error_msg": "Invalid Heartbeat ID", "heartbeat_id": "hb-2"}, "Invalid Heartbeat ID", None, "Invalid Heartbeat ID"),
    ({"error": "post-only mode", "code": "post_only_mode"}, "post-only mode", None, "post-only mode"),
])
def test_error_bodies(body, message, cls, detail):
    err = decode(dumps(body), ErrorBody)
    assert (err.message, err.error_class, err.detail) == (message, cls, detail)


def test_error_body_extras():
    assert decode(b'{"error_msg":"Invalid Heartbeat ID","heartbeat_id":"x"}', ErrorBody).heartbeat_id == "x"
    assert decode(b'{"error":"post-only","code":"post_only_mode"}', ErrorBody).code == "post_only_mode"
    assert decode(b'{"error":"rate limited","retry_after_seconds":2}', ErrorBody).retry_after_seconds == 2
    assert decode(b'{"type":"bad request","error":"q is required"}', ErrorBody).type == "bad request"


def test_cancel_result_and_heartbeat():
    r = decode(b'{"canceled":["0x1"],"not_canceled":{"0x2":"already canceled or matched"}}', CancelResult)
    assert r.canceled == ["0x1"] and r.not_canceled == {"0x2": "already canceled or matched"}
    assert encode(CancelResult()) == b'{"canceled":[],"not_canceled":{}}'
    assert encode(Heartbeat()) == b'{"heartbeat_id":""}'
    assert decode(b'{"heartbeat_id":"abc"}', Heartbeat).heartbeat_id == "abc"


@pytest.mark.parametrize("cursor,last", [("", True), ("LTE=", True), (None, True), ("MA==", False), ("MTAw", False)])
def test_page_end(cursor, last):
    body = {"data": [], "next_cursor": cursor} if cursor is not None else {"data": []}
    assert decode(dumps(body), Page[Level]).is_last is last


def test_price_map_and_tick_size():
    prices = decode(b'{"1":{"BUY":"0.52","SELL":"0.53"},"2":{"SELL":"0.1"}}', PriceMap)
    assert (prices["1"].buy, prices["1"].sell, prices["2"].buy) == ("0.52", "0.53", None)
    assert decode(b'{"minimum_tick_size":0.001}', TickSizeResponse).tick == "0.001"
    assert decode(b'{"minimum_tick_size":"0.01"}', TickSizeResponse).tick == "0.01"


# -- markets and catalog --------------------------------------------------------------------


def test_catalog_market_json_in_a_string_and_real_lists():
    as_text = {"conditionId": "0xc", "outcomes": "[\"Yes\", \"No\"]", "clobTokenIds": "[\"1\", \"2\"]"}
    m = decode(dumps(as_text), CatalogMarket)
    assert m.outcome_list == ["Yes", "No"] and m.token_ids == ["1", "2"]
    assert json.loads(encode(m))["clobTokenIds"] == "[\"1\", \"2\"]"  # raw string kept
    m2 = decode(dumps({"conditionId": "0xc", "clobTokenIds": ["1", "2"]}), CatalogMarket)
    assert m2.token_ids == ["1", "2"] and m2.outcome_list == []
    m3 = decode(dumps({"conditionId": "0xc", "questionId": "0xq"}), CatalogMarket)
    assert m3.question_id == "0xq"
    with pytest.raises(DecodeError, match="conditionId"):
        decode(b'{"id":"1"}', CatalogMarket)


def test_clob_market_info_short_keys():
    info = decode(dumps({"gst": "2026-01-01T00:00:00Z", "c": "0xc", "nr": True, "rfqe": False,
                         "itode": False, "ibce": True,
                         "t": [{"t": "1", "o": "Yes"}, {"t": "2", "o": "No", "mirror_token_id": "9"}],
                         "mts": 0.01, "mos": 5, "fd": {"r": 0.02, "e": 2, "to": True},
                         "mbf": 0, "tbf": 0, "oas": 3,
                         "r": {"rates": [{"asset_address": "0xa", "rewards_daily_rate": 1}], "min_size": 50, "max_spread": 3.5}}),
                  ClobMarketInfo)
    assert (info.condition_id, info.neg_risk, info.tick_size, info.min_order_size) == ("0xc", True, "0.01", 5)
    assert info.token_ids == ["1", "2"] and info.tokens[1].mirror_token_id == "9"
    assert (info.fee.rate, info.fee.exponent, info.fee.taker_only) == (0.02, 2, True)
    assert info.blockaid_check_enabled is True and info.order_age_seconds == 3
    assert json.loads(encode(info))["fd"] == {"r": 0.02, "e": 2, "to": True}


def test_epoch_ms_forms():
    assert epoch_ms("1725842520") == epoch_ms(1725842520) == epoch_ms("1725842520000") == 1725842520000
    assert epoch_ms("2024-09-09T00:42:00Z") == 1725842520000
    assert epoch_ms("2024-03-07 20:44:01.258+00") == 1709844241258
    assert epoch_ms("") is None and epoch_ms(None) is None
    with pytest.raises(ValueError):
        epoch_ms("yesterday")


def test_comment_creator_position_holder_shapes():
    from bot.venue.models import Comment, DataPosition, EventCreator, HolderGroup

    comment = decode(dumps([{
        "id": "1", "body": "hi", "parentEntityType": "Event", "parentEntityID": 903,
        "userAddress": "0xu", "createdAt": "2024-01-01T00:00:00Z", "reportCount": 0,
        "reactionCount": 2, "replyCount": 0, "reactions": [{"x": 1}], "replies": [],
        "profile": {"name": "n", "isMod": False, "profileImageOptimized": {"a": 1},
                    "positions": [{"tokenId": "1", "positionSize": "12.5"}]},
    }]), list[Comment])
    assert comment[0].parent_entity_id == 903
    assert comment[0].profile.positions[0].position_size == "12.5"
    creator = decode(b'[{"id":"7","creatorName":"c","creatorHandle":"h","createdAt":"2024-01-01T00:00:00Z"}]',
                     list[EventCreator])
    assert (creator[0].creator_name, creator[0].creator_handle) == ("c", "h")
    pos = decode(dumps([{"proxyWallet": "0xw", "asset": "0xc:0", "conditionId": "0xc", "size": 10,
                         "avgPrice": 0.5, "redeemable": True, "outcomeIndex": 0, "timestamp": 1700000000}]),
                 list[DataPosition])
    assert (pos[0].size, pos[0].redeemable, pos[0].timestamp) == (10, True, 1700000000)
    groups = decode(dumps([{"token": "0xc:1", "holders": [{"proxyWallet": "0xw", "amount": 3.5,
                                                            "outcomeIndex": 1, "displayUsernamePublic": True}]}]),
                    list[HolderGroup])
    assert groups[0].holders[0].amount == 3.5
    with pytest.raises(DecodeError, match="HolderGroup.*`holders`"):
        decode(b'[{"token":"0xc:1"}]', list[HolderGroup])


def test_invalid_utf8_and_deep_nesting_are_decode_errors_or_nothing():
    from bot.venue.models import OrderBook, decode_user_frame
    from bot.venue.models.decoding import DecodeError

    with pytest.raises(DecodeError, match="invalid UTF-8"):
        decode(b'{"market": "\xff"}', OrderBook)
    with pytest.raises(DecodeError, match="nested deeper than 32 levels"):
        decode(b'{"market": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", OrderBook)
    assert decode(b'{"market": "[[[[' + b"[" * 40 + b'", "asset_id": "1", "timestamp": "1", "bids": [], "asks": []}',
                  OrderBook).market.startswith("[[[[")  # brackets in strings are no nesting
    for frame_decoder in (decode_market_frame, decode_user_frame):
        assert frame_decoder(b'{"event_type": "book", "market": "\xff"}') == []  # not JSON
        for deep in (b"[" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
            with pytest.raises(DecodeError, match="nested deeper than 32 levels"):
                frame_decoder(deep)
