"""The venue's market-channel frames as ``../shared/bench/naive_mm.py`` types them (prices and
sizes as the venue's decimal strings): the plain loops the backtest benches measure against decode
with these, so they do the decoding naive_mm.py does."""

from __future__ import annotations

from typing import Union

import msgspec


class Lvl(msgspec.Struct):
    price: str
    size: str


class PC(msgspec.Struct):
    asset_id: str
    price: str
    size: str
    side: str
    hash: str = ""
    best_bid: str = ""
    best_ask: str = ""


class Book(msgspec.Struct, tag_field="event_type", tag="book"):
    asset_id: str
    market: str
    bids: list[Lvl]
    asks: list[Lvl]
    timestamp: str
    hash: str = ""


class PriceChange(msgspec.Struct, tag_field="event_type", tag="price_change"):
    market: str
    timestamp: str
    price_changes: list[PC]


class LTP(msgspec.Struct, tag_field="event_type", tag="last_trade_price"):
    asset_id: str
    market: str
    price: str
    side: str
    size: str
    timestamp: str


Frame = Union[Book, PriceChange, LTP]
