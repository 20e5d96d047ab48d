"""Every reference payload under data/realworld decodes with its model, losslessly.

For each file: decode from bytes with the right model, then walk the model's fields and compare
each one present in the file (after ``json.loads``) value by value, list lengths included.
The table must cover every JSON file that data/INDEX.md lists.
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
    CatalogMarket, ClobMarket, DataTrade, DataTradeV2, ErrorBody, FeeRateResponse,
    HolderGroupV2, LastTradePriceEvent, MarketResolvedEvent, NewMarketEvent, OpenOrder,
    OrderBook, OrderEvent, OrderResult, Page, Position, PositionV2, PriceChangeEvent,
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
    TD + "data_api_positions_response.json": (list[Position], list[Position]),
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
    PY + "positions.json": (list[PositionV2], list[PositionV2]),
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
