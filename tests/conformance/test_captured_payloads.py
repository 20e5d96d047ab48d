"""Every reference payload under data/realworld decodes with its model, losslessly.

For each file: decode from bytes with the right model, then walk the model's fields and compare
each one present in the file (after ``json.loads``) value by value, list lengths included.
The table must cover every JSON file that data/INDEX.md lists. Then every capture the booking
reads (``PATH``) goes the whole way: decoder, records, reconciler, positions (or the books, for the
market channel), counted in ``test_every_capture_on_the_path_is_booked_end_to_end``.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from bot.venue.models import (
    BalanceAllowance, BestBidAskEvent, BookEvent, BookHistory, CancelResult, CatalogEvent,
    CatalogMarket, ClobMarket, DataPosition, DataPositionV2, DataTrade, DataTradeV2, ErrorBody,
    FeeRateResponse, HolderGroupV2, LastTradePriceEvent, MarketResolvedEvent, NewMarketEvent,
    OpenOrder, OrderBook, OrderEvent, OrderResult, Page, PriceChangeEvent,
    PriceHistory, RtdsMessage, SearchResponse, SignedOrder, Tag, TickSizeChangeEvent, Trade,
    TradeEvent, decode, decode_market_frame, decode_user_frame, encode,
)

N = "realworld/nautechsystems__nautilus_trader/"
WS = N + "tests/integration_tests/adapters/polymarket/resources/ws_messages/"
HTTP = N + "tests/integration_tests/adapters/polymarket/resources/http_responses/"
TD = N + "crates/adapters/polymarket/test_data/"
PY = "realworld/Polymarket__py-sdk/tests/fixtures/data_v2/"

MARKET, USER = "market-frame", "user-frame"

# path (relative to data_dir) -> (decoder, expected model); decoder is a frame kind or the model.
TABLE: dict[str, tuple[Any, Any]] = {
    WS + "book.json": (MARKET, BookEvent),
    WS + "price_change.json": (MARKET, PriceChangeEvent),
    WS + "price_change_v2.json": (MARKET, PriceChangeEvent),
    WS + "last_trade_price.json": (MARKET, LastTradePriceEvent),
    WS + "tick_size_change.json": (MARKET, TickSizeChangeEvent),
    WS + "order_placement.json": (USER, OrderEvent),
    WS + "order_cancel.json": (USER, OrderEvent),
    WS + "user_trade1.json": (USER, TradeEvent),
    WS + "user_trade2.json": (USER, TradeEvent),
    WS + "user_trade3.json": (USER, TradeEvent),
    WS + "user_trade4.json": (USER, TradeEvent),
    WS + "trades.json": (Trade, Trade),
    HTTP + "book.json": (OrderBook, OrderBook),
    HTTP + "market.json": (ClobMarket, ClobMarket),
    HTTP + "markets.json": (Page[ClobMarket], Page[ClobMarket]),
    HTTP + "market_slug.json": (CatalogMarket, CatalogMarket),
    HTTP + "event.json": (CatalogEvent, CatalogEvent),
    HTTP + "events_list.json": (list[CatalogEvent], list[CatalogEvent]),
    HTTP + "markets_list.json": (list[CatalogMarket], list[CatalogMarket]),
    HTTP + "trades.json": (list[DataTrade], list[DataTrade]),
    HTTP + "orderbook_history.json": (BookHistory, BookHistory),
    HTTP + "price_history.json": (PriceHistory, PriceHistory),
    TD + "ws_market_best_bid_ask_msg.json": (MARKET, BestBidAskEvent),
    TD + "ws_market_new_market_msg.json": (MARKET, NewMarketEvent),
    TD + "ws_market_resolved_msg.json": (MARKET, MarketResolvedEvent),
    TD + "ws_market_book_msg.json": (MARKET, BookEvent),
    TD + "ws_market_price_change_msg.json": (MARKET, PriceChangeEvent),
    TD + "ws_market_last_trade_msg.json": (MARKET, LastTradePriceEvent),
    TD + "ws_market_tick_size_msg.json": (MARKET, TickSizeChangeEvent),
    TD + "ws_book_snapshot.json": (MARKET, BookEvent),
    TD + "ws_last_trade.json": (MARKET, LastTradePriceEvent),
    TD + "ws_quotes.json": (MARKET, PriceChangeEvent),
    TD + "ws_tick_size_change.json": (MARKET, TickSizeChangeEvent),
    TD + "ws_user_order_msg.json": (USER, OrderEvent),
    TD + "ws_user_order_placement.json": (USER, OrderEvent),
    TD + "ws_user_order_update.json": (USER, OrderEvent),
    TD + "ws_user_order_matched.json": (USER, OrderEvent),
    TD + "ws_user_order_cancellation.json": (USER, OrderEvent),
    TD + "ws_user_order_fok_killed.json": (USER, OrderEvent),
    TD + "ws_user_order_venue_cancel.json": (USER, OrderEvent),
    TD + "ws_user_trade.json": (USER, TradeEvent),
    TD + "ws_user_trade_msg.json": (USER, TradeEvent),
    TD + "clob_book_response.json": (OrderBook, OrderBook),
    TD + "clob_fee_rate_response_nonzero.json": (FeeRateResponse, FeeRateResponse),
    TD + "clob_fee_rate_response_zero.json": (FeeRateResponse, FeeRateResponse),
    TD + "clob_market_closed_binary_accepting_false.json": (ClobMarket, ClobMarket),
    TD + "clob_market_closed_binary_accepting_true.json": (ClobMarket, ClobMarket),
    TD + "gamma_market.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_live.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_closed_binary_accepting_false.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_closed_binary_accepting_true.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_closed_nonbinary_legacy.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_closed_zero_zero_legacy.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_sports_market_map_handicap.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_market_sports_market_money_line.json": (CatalogMarket, CatalogMarket),
    TD + "gamma_event.json": (list[CatalogEvent], list[CatalogEvent]),
    TD + "gamma_tags.json": (list[Tag], list[Tag]),
    TD + "search_response.json": (SearchResponse, SearchResponse),
    TD + "data_api_positions_response.json": (list[DataPosition], list[DataPosition]),
    TD + "data_api_trades_response.json": (list[DataTrade], list[DataTrade]),
    TD + "http_balance_allowance_collateral.json": (BalanceAllowance, BalanceAllowance),
    TD + "http_balance_allowance_no_allowance.json": (BalanceAllowance, BalanceAllowance),
    TD + "http_order_response_ok.json": (OrderResult, OrderResult),
    TD + "http_order_response_failed.json": (OrderResult, OrderResult),
    TD + "http_order_response_error_500.json": (ErrorBody, ErrorBody),
    TD + "http_cancel_response_ok.json": (CancelResult, CancelResult),
    TD + "http_cancel_response_failed.json": (CancelResult, CancelResult),
    TD + "http_batch_cancel_response.json": (CancelResult, CancelResult),
    TD + "http_open_order.json": (OpenOrder, OpenOrder),
    TD + "http_open_order_sell_fok.json": (OpenOrder, OpenOrder),
    TD + "http_open_orders_page.json": (Page[OpenOrder], Page[OpenOrder]),
    TD + "http_signed_order.json": (SignedOrder, SignedOrder),
    TD + "http_trade_report.json": (Trade, Trade),
    TD + "http_trades_page.json": (Page[Trade], Page[Trade]),
    TD + "rtds_crypto_prices_subscribe.json": (RtdsMessage, RtdsMessage),
    TD + "rtds_crypto_prices_update.json": (RtdsMessage, RtdsMessage),
    TD + "rtds_equity_prices_subscribe.json": (RtdsMessage, RtdsMessage),
    TD + "rtds_equity_prices_update.json": (RtdsMessage, RtdsMessage),
    PY + "positions.json": (list[DataPositionV2], list[DataPositionV2]),
    PY + "holders.json": (list[HolderGroupV2], list[HolderGroupV2]),
    PY + "trades.json": (list[DataTradeV2], list[DataTradeV2]),
}

# Fields a model folds into another attribute while decoding (alternate spellings).
FOLDED = {"asset_ids": "assets_ids"}

LEGACY_PRICE_CHANGE = {WS + "price_change.json"}


def index_rows(data_dir: Path) -> dict[str, str]:
    """INDEX.md's JSON rows: path -> provenance label."""
    rows = {}
    for line in (data_dir / "INDEX.md").read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 5 and cells[1].startswith("realworld/") and cells[1].endswith(".json"):
            rows[cells[1]] = cells[4]
    return rows


def is_captured(label: str) -> bool:
    return "captured" in label or "real identifiers" in label


def decode_file(path: Path, decoder: Any, model: Any) -> Any:
    data = path.read_bytes()
    if decoder in (MARKET, USER):
        events = (decode_market_frame if decoder == MARKET else decode_user_frame)(data)
        assert len(events) == 1, f"{path.name}: expected one event, got {events!r}"
        assert type(events[0]) is model
        return events[0]
    return decode(data, model)


def assert_survives(obj: Any, orig: Any, where: str = "$") -> None:
    """Every modeled field present in ``orig`` has the same value in ``obj`` (recursively)."""
    if isinstance(obj, msgspec.Struct):
        assert isinstance(orig, dict), f"{where}: expected an object"
        cfg = type(obj).__struct_config__
        if cfg.tag is not None and cfg.tag_field in orig:
            assert orig[cfg.tag_field] == cfg.tag, where
        for attr, wire in zip(obj.__struct_fields__, obj.__struct_encode_fields__):
            if wire not in orig or orig[wire] is None:
                continue
            value = getattr(obj, attr)
            if value is None:  # an alternate spelling, folded into its main attribute
                target = FOLDED.get(attr) or re.sub(r"_(snake|alt)$", "", attr)
                assert target != attr, f"{where}.{wire}: value lost"
                value = getattr(obj, target)
            assert_survives(value, orig[wire], f"{where}.{wire}")
    elif isinstance(obj, list):
        assert isinstance(orig, list) and len(obj) == len(orig), f"{where}: list length"
        for i, (a, b) in enumerate(zip(obj, orig)):
            assert_survives(a, b, f"{where}[{i}]")
    elif isinstance(obj, dict):
        assert isinstance(orig, dict) and obj.keys() == orig.keys(), f"{where}: keys"
        for k in obj:
            assert_survives(obj[k], orig[k], f"{where}.{k}")
    elif isinstance(obj, Decimal):  # an exact figure: the very number the file holds
        assert type(orig) in (Decimal, int) and str(obj) == str(orig), f"{where}: {obj!r} != {orig!r}"
    elif isinstance(orig, Decimal):  # an informational float field
        assert type(obj) is float and obj == float(orig), f"{where}: {obj!r} != {orig!r}"
    else:
        assert type(obj) is type(orig) and obj == orig, f"{where}: {obj!r} != {orig!r}"


def test_table_covers_every_indexed_json_file(data_dir: Path) -> None:
    rows = index_rows(data_dir)
    assert len(rows) >= 81
    assert sorted(set(rows) - set(TABLE)) == []
    captured = [p for p, label in rows.items() if is_captured(label)]
    assert len(captured) >= 40
    on_disk = {
        str(p.relative_to(data_dir)) for p in (data_dir / "realworld").rglob("*.json")
    }
    assert sorted(on_disk - set(TABLE)) == []


@pytest.mark.parametrize("rel", sorted(TABLE))
def test_payload_decodes_losslessly(data_dir: Path, rel: str) -> None:
    decoder, model = TABLE[rel]
    path = data_dir / rel
    decoded = decode_file(path, decoder, model)
    orig = json.loads(path.read_bytes(), parse_float=Decimal)  # each number as its exact text says
    if rel in LEGACY_PRICE_CHANGE:
        (change,) = decoded.price_changes
        assert (decoded.market, decoded.timestamp) == (orig["market"], orig["timestamp"])
        assert (change.asset_id, change.price, change.side, change.size, change.hash) == (
            orig["asset_id"], orig["price"], orig["side"], orig["size"], orig["hash"]
        )
    else:
        assert_survives(decoded, orig)
    # what we encode decodes back to the same model (the local exchange emits these bytes)
    again = decode(encode(decoded), model if decoder not in (MARKET, USER) else type(decoded))
    assert again == decoded


# The account-data figures and the price history: interface.md shows JSON numbers, and other
# clients' captures spell the same fields as strings. Both spellings decode to the same model.
NUMERIC_FIGURES = [
    HTTP + "trades.json", HTTP + "price_history.json", TD + "data_api_positions_response.json",
    TD + "data_api_trades_response.json", PY + "positions.json", PY + "holders.json", PY + "trades.json",
]


def numbers_as_strings(raw: bytes) -> tuple[bytes, int]:
    """``raw`` with every JSON number turned into a string of its exact text, and how many there were."""
    count = 0

    def text(s: str) -> str:
        nonlocal count
        count += 1
        return s

    return json.dumps(json.loads(raw, parse_int=text, parse_float=text)).encode(), count


@pytest.mark.parametrize("rel", NUMERIC_FIGURES, ids=lambda rel: "/".join(rel.split("/")[-2:]))
def test_figures_spelled_as_strings_decode_to_the_same_model(data_dir: Path, rel: str) -> None:
    _, model = TABLE[rel]
    raw = (data_dir / rel).read_bytes()
    spelled, count = numbers_as_strings(raw)
    assert count >= 6, "the capture has figures to respell"
    from_numbers, from_strings = decode(raw, model), decode(spelled, model)
    assert from_strings == from_numbers
    assert encode(from_strings) == encode(from_numbers)  # the same exact figures, digit for digit


def test_account_figures_keep_their_exact_values(data_dir: Path) -> None:
    first = decode((data_dir / HTTP / "trades.json").read_bytes(), list[DataTrade])[0]
    # "size": 5.4, "price": 0.998, "timestamp": 1729000180, "outcomeIndex": 0 in the capture
    assert (first.size, first.price) == (Decimal("5.4"), Decimal("0.998"))
    assert (first.timestamp, first.outcome_index) == (1729000180, 0)
    assert type(first.timestamp) is int and type(first.outcome_index) is int
    history = decode((data_dir / HTTP / "price_history.json").read_bytes(), PriceHistory).history
    assert [(p.t, p.p) for p in history[:2]] == [(1729000000, Decimal("0.51")), (1729000060, Decimal("0.52"))]


# --- the whole path: decoder -> records -> reconciler -> positions ---------------------------
# Each capture the bot's booking reads goes from its bytes through the decoder, the records
# (``bot.execution.records``), the reconciler and, for what moves holdings, the positions; the
# market channel's through the books. Path kinds:
PATH: dict[str, str] = {
    WS + "user_trade1.json": "user-trade", WS + "user_trade2.json": "user-trade",
    WS + "user_trade3.json": "user-trade", WS + "user_trade4.json": "user-trade",
    TD + "ws_user_trade.json": "user-trade", TD + "ws_user_trade_msg.json": "user-trade",
    WS + "trades.json": "rest-trade", TD + "http_trade_report.json": "rest-trade",
    TD + "http_trades_page.json": "rest-trades-page",
    WS + "order_placement.json": "user-order", WS + "order_cancel.json": "user-order",
    TD + "ws_user_order_msg.json": "user-order", TD + "ws_user_order_placement.json": "user-order",
    TD + "ws_user_order_update.json": "user-order", TD + "ws_user_order_matched.json": "user-order",
    TD + "ws_user_order_cancellation.json": "user-order", TD + "ws_user_order_fok_killed.json": "user-order",
    TD + "ws_user_order_venue_cancel.json": "user-order",
    TD + "http_open_order.json": "open-order", TD + "http_open_order_sell_fok.json": "open-order",
    TD + "http_open_orders_page.json": "open-orders-page",
    TD + "http_order_response_ok.json": "order-result", TD + "http_order_response_failed.json": "order-result",
    TD + "http_order_response_error_500.json": "order-error",
    TD + "http_cancel_response_ok.json": "cancel-result", TD + "http_cancel_response_failed.json": "cancel-result",
    TD + "http_batch_cancel_response.json": "cancel-result",
    TD + "data_api_positions_response.json": "positions", PY + "positions.json": "positions",
    **{rel: "market" for rel, (decoder, _) in TABLE.items() if decoder == MARKET},
}
# The rest is decoded (above) but read by nothing that books: market metadata and search (Gamma,
# CLOB markets), the Data API's public trade tape and holders, fee rates and balances, price
# histories, signed-order bodies and the RTDS price feeds.
OFF_THE_PATH = {rel for rel in TABLE if rel not in PATH}
_OFF_THE_PATH_MODELS = {
    ClobMarket, Page[ClobMarket], CatalogMarket, CatalogEvent, list[CatalogEvent], list[CatalogMarket],
    list[DataTrade], list[DataTradeV2], BookHistory, PriceHistory, list[Tag], SearchResponse,
    FeeRateResponse, BalanceAllowance, SignedOrder, RtdsMessage, list[HolderGroupV2], OrderBook,
}

OWNER = "our-api-key"


def _own(oid: str, token: str, side: Any, price: int, size: int = 10**12) -> Any:
    from bot.execution.orders import OwnOrder

    return OwnOrder(oid, token, side, price, size, signed={})


def _our_legs(rec: Any, raw: Any) -> list[Any]:
    """The legs of ``rec`` that are the capture owner's: the taker's when it traded as taker; as
    maker, the maker legs under the record's owner key or the user channel's ``trade_owner``, else
    those at the record's ``maker_address`` (the account whose view it is), else (captures edited
    upstream name neither) every maker leg: a maker's view holds one of ours."""
    from bot.execution.reconciler import trade_legs

    legs = trade_legs(rec)
    if rec.trader_side == "TAKER":
        return [leg for leg in legs if not leg.is_maker]
    makers = [leg for leg in legs if leg.is_maker]
    keys = {rec.owner, getattr(raw, "trade_owner", None)} - {None, ""}
    address = {m.order_id: (m.maker_address or "").lower() for m in raw.maker_orders}
    return ([leg for leg in makers if leg.owner in keys]
            or [leg for leg in makers if address[leg.order_id] == (raw.maker_address or "").lower()]
            or makers)


def _book_trades(items: list[Any], page: bool) -> tuple[int, int]:
    """The trades into a reconciler that knows the capture owner's orders, its fills into a
    portfolio: every leg of ours is booked once, exactly. Returns (fills, legs of ours)."""
    from bot.core.events import Fill
    from bot.execution.reconciler import Reconciler, ReconcilerConfig
    from bot.execution.records import trade_record
    from bot.portfolio.positions import Portfolio
    from bot.venue.enums import Side

    legs = [leg for t in items for leg in _our_legs(trade_record(t), t)]
    # fees have their own rule and tests (bot.venue.fees): here the fill is the leg, share for share
    rec = Reconciler(ReconcilerConfig(owner=OWNER, taker_fee=False))
    rec.on_places_sent([_own(leg.order_id, leg.token_id, leg.side, leg.price) for leg in legs], 0.0)
    out = rec.on_trades_page(items, 1.0, "MA==", "LTE=") if page else [
        x for t in items for x in rec.on_trade_event(t, 1.0)]
    fills = [x for x in out if isinstance(x, Fill)]
    assert rec.unbooked == {}
    assert sorted((f.order_id, f.size, f.price) for f in fills) == sorted((g.order_id, g.size, g.price) for g in legs)
    pf = Portfolio()
    for f in fills:
        assert pf.apply(f)
    for token in {g.token_id for g in legs}:
        mine = [g for g in legs if g.token_id == token]
        signed = [(g.size if g.side is Side.BUY else -g.size, g.price) for g in mine]
        assert pf.size(token) == sum(s for s, _ in signed)
        assert pf.position(token).cash_e12 == -sum(s * p for s, p in signed)
    return len(fills), len(legs)


def _order_state(event: Any, status: str | None = None) -> Any:
    """The state a known live order of the capture's reaches on the order event (its status
    respelled to ``status`` when given)."""
    from bot.execution.reconciler import Reconciler
    from bot.execution.records import order_record

    if status is not None:
        event = msgspec.structs.replace(event, status=status)
    r = order_record(event)
    rec = Reconciler()
    rec.on_places_sent([_own(r.order_id, r.token_id, r.side, r.price, r.original_size)], 0.0)
    rec.on_acks([r.order_id], [{"success": True, "orderID": r.order_id, "status": "live"}], 0.5)
    rec.on_order_event(r, 1.0)
    return rec.orders.get(r.order_id).state


def run_path(data_dir: Path, rel: str) -> int:
    """``rel`` along its path; returns the fills it booked."""
    from bot.core.book import Books
    from bot.execution.orders import OrderState as S
    from bot.execution.reconciler import Reconciler
    from bot.execution.protocol import LookupOrder
    from bot.execution.records import order_record
    from bot.portfolio.positions import Portfolio
    from bot.venue.units import decimal_to_units

    kind = PATH[rel]
    decoder, model = TABLE[rel]
    decoded = decode_file(data_dir / rel, decoder, model)
    if kind in ("user-trade", "rest-trade"):
        fills, legs = _book_trades([decoded], page=kind == "rest-trade")
        assert fills == legs >= 1
        return fills
    if kind == "rest-trades-page":
        fills, legs = _book_trades(list(decoded.data), page=True)
        assert fills == legs >= 1
        return fills
    if kind == "user-order":
        status = order_record(decoded).status
        state = _order_state(decoded)
        if decoded.type == "CANCELLATION" or status.startswith("CANCELED") or status == "INVALID":
            assert state in (S.CANCELED, S.FILLED)
        elif status == "MATCHED":
            assert state is S.FILLED
        else:
            assert state in (S.LIVE, S.PARTIALLY_FILLED)
        # the venue's documented spelling of the same status reads the same
        assert _order_state(decoded, "ORDER_STATUS_" + decoded.status) is state
        return 0
    if kind in ("open-order", "open-orders-page"):
        items = list(decoded.data) if kind == "open-orders-page" else [decoded]
        rec = Reconciler()
        records = [order_record(i) for i in items]
        rec.on_places_sent([_own(r.order_id, r.token_id, r.side, r.price, r.original_size) for r in records], 0.0)
        rec.on_acks([r.order_id for r in records], [{"success": True, "orderID": r.order_id, "status": "live"}
                                                    for r in records], 0.5)
        rec.on_open_orders(items, 2.0, as_of=1.0)
        for r in records:
            o = rec.orders.get(r.order_id)
            assert o.venue_matched == r.size_matched
            assert o.state is (S.FILLED if r.status == "MATCHED" else S.PARTIALLY_FILLED if r.size_matched else S.LIVE)
        return 0
    if kind in ("order-result", "order-error"):
        from bot.venue.enums import Side

        rec = Reconciler()
        oid = getattr(decoded, "order_id", None) or "0x" + "ab" * 32
        rec.on_places_sent([_own(oid, "1", Side.BUY, 500_000, 10**6)], 0.0)
        if kind == "order-error":  # a 500: the outcome is unknown, so the order is looked up
            assert LookupOrder(oid) in rec.on_place_failed([oid], 1.0, unknown=True, reason=decoded.error)
        else:
            from bot.execution.records import order_result

            rec.on_acks([oid], [decoded], 1.0)  # accepted only with an accepting status (venue.md 10.1)
            assert rec.orders.get(oid).state is (S.LIVE if order_result(decoded).accepted else S.REJECTED)
        return 0
    if kind == "cancel-result":
        from bot.execution.records import cancel_result
        from bot.venue.enums import Side

        r = cancel_result(decoded)
        ids = [*r.canceled, *r.not_canceled]
        rec = Reconciler()
        rec.on_places_sent([_own(i, "1", Side.BUY, 500_000, 10**6) for i in ids], 0.0)
        rec.on_acks(ids, [{"success": True, "orderID": i, "status": "live"} for i in ids], 0.5)
        rec.on_cancels_sent(ids, 0.6)
        rec.on_cancel_result(decoded, 1.0, requested=ids)
        assert all(rec.orders.get(i).state is S.CANCELED for i in r.canceled)
        return 0
    if kind == "positions":
        venue = {}
        for p in decoded:
            token = getattr(p, "asset", None) or p.token_id
            venue[token] = decimal_to_units(p.size if hasattr(p, "size") else p.current_size)
        pf = Portfolio()
        for token, size in venue.items():
            pf.seed(token, size)
        assert pf.reconcile(venue) == [] and pf.sizes() == {t: s for t, s in venue.items() if s}
        return 0
    assert kind == "market"
    books = Books()
    for token in ("71321045679252212594626385532706912750332728571942532289631379312455583992563",):
        books.add(token)
    books.apply_event(decoded)
    return 0


def test_path_table_covers_every_capture_the_booking_reads() -> None:
    assert set(PATH) <= set(TABLE)
    assert {TABLE[rel][1] for rel in OFF_THE_PATH} <= _OFF_THE_PATH_MODELS


@pytest.mark.parametrize("rel", sorted(PATH))
def test_capture_goes_the_whole_path(data_dir: Path, rel: str) -> None:
    run_path(data_dir, rel)


def test_every_capture_on_the_path_is_booked_end_to_end(data_dir: Path) -> None:
    """The count: every capture on the path goes through it without an error, and every trade
    capture books each leg of ours."""
    failed: dict[str, str] = {}
    fills = 0
    for rel in sorted(PATH):
        try:
            fills += run_path(data_dir, rel)
        except Exception as exc:  # noqa: BLE001 - counted, then shown
            failed[rel] = f"{type(exc).__name__}: {exc}"[:200]
    assert failed == {}
    # 9 trade captures (16 legs of ours), 9 order events, 3 open-order reads, 3 order answers,
    # 3 cancel answers, 2 position listings, 16 market-channel frames
    assert len(PATH) == 45 and len(PATH) + len(OFF_THE_PATH) == len(TABLE)
    assert len([rel for rel, kind in PATH.items() if "trade" in kind]) == 9 and fills == 16
