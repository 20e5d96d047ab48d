"""Engine snapshots (bot/sim/events.py) rendered as the venue's wire models.

Invariant: money leaves as exact decimal strings (``format_units``); books list bids ascending
and asks descending (best last) and carry the SHA-1 hash of venue.md 7.2; WS timestamps are
epoch-ms strings, user ``order.created_at`` and trade ``match_time``/``last_update`` are epoch
seconds; REST ``match_time`` is an epoch-second string, and an open order's creation time is
ISO 8601 ``createdAt`` in the seed's spelling or epoch-second ``created_at`` in the live venue's.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import msgspec

from bot.exchange.seed import iso
from bot.sim.events import BookSnapshot, OrderView, TradeView
from bot.venue.models.book import Level, OrderBook
from bot.venue.models.orders import LiveOpenOrder, OpenOrder
from bot.venue.models.trade import MakerOrder, Trade
from bot.venue.models.ws import BookEvent, OrderEvent, TradeEvent
from bot.venue.units import format_units

_enc = msgspec.json.Encoder()


def ms(t: float) -> str:
    return str(int(t * 1000))


def secs(t: float) -> str:
    return str(int(t))


def book_hash(book: OrderBook) -> str:
    """SHA-1 hex of the compact JSON of the book with ``hash`` = "" (field order = recipe order)."""
    blank = book if book.hash == "" else msgspec.structs.replace(book, hash="")
    return hashlib.sha1(_enc.encode(blank)).hexdigest()


_LEVELS: dict[tuple[int, int], Level] = {}  # (price, size) -> its wire level (shared: never mutated)
_LEVELS_MAX = 200_000  # the cache starts over past this many distinct levels


def _level(level: tuple[int, int]) -> Level:
    """The wire level of ``(price, size)`` units, formatted once: books repeat the same levels
    on every render (a flow step or an order changes one or two of them)."""
    out = _LEVELS.get(level)
    if out is None:
        if len(_LEVELS) >= _LEVELS_MAX:
            _LEVELS.clear()
        out = _LEVELS[level] = Level(price=format_units(level[0]), size=format_units(level[1]))
    return out


def _levels(levels: list[tuple[int, int]]) -> list[Level]:
    get = _LEVELS.get
    return [get(lv) or _level(lv) for lv in levels]


def book(snap: BookSnapshot, now: float, event: bool = False) -> OrderBook:
    cls = BookEvent if event else OrderBook
    b = cls(
        market=snap.market, asset_id=snap.token, timestamp=ms(now), hash="", bids=_levels(snap.bids),
        asks=_levels(snap.asks), min_order_size=format_units(snap.min_size), tick_size=format_units(snap.tick),
        neg_risk=snap.neg_risk, last_trade_price=format_units(snap.last_trade_price),
    )
    if event:
        plain = OrderBook(**msgspec.structs.asdict(b))
        return msgspec.structs.replace(b, hash=book_hash(plain))
    return msgspec.structs.replace(b, hash=book_hash(b))


def open_order(o: OrderView) -> OpenOrder:
    return OpenOrder(
        associate_trades=list(o.associate_trades), id=o.id, status=o.status.value, market=o.market,
        original_size=format_units(o.original_size), outcome=o.outcome, maker_address=o.account,
        owner=o.owner, price=format_units(o.price), side=o.side.value, size_matched=format_units(o.size_matched),
        asset_id=o.asset_id, expiration=str(o.expiration), order_type=o.order_type.value,
        created_at=iso(datetime.fromtimestamp(o.created_at, timezone.utc)),
    )


def live_open_order(o: OrderView) -> LiveOpenOrder:
    """The open order as the live venue writes it (snake_case, its key order, epoch seconds)."""
    return LiveOpenOrder(
        id=o.id, status=o.status.value, owner=o.owner, maker_address=o.account, market=o.market,
        asset_id=o.asset_id, side=o.side.value, original_size=format_units(o.original_size),
        size_matched=format_units(o.size_matched), price=format_units(o.price), outcome=o.outcome,
        expiration=str(o.expiration), order_type=o.order_type.value, associate_trades=list(o.associate_trades),
        created_at=int(o.created_at),
    )


def order_event(o: OrderView, kind: str, now: float) -> OrderEvent:
    return OrderEvent(
        id=o.id, owner=o.owner, order_owner=o.owner, market=o.market, asset_id=o.asset_id, side=o.side.value,
        price=format_units(o.price), original_size=format_units(o.original_size),
        size_matched=format_units(o.size_matched), outcome=o.outcome, order_type=o.order_type.value,
        status=o.status.value, maker_address=o.account, associate_trades=list(o.associate_trades),
        created_at=secs(o.created_at), expiration=str(o.expiration), timestamp=ms(now), type=kind,
    )


def _makers(t: TradeView) -> list[MakerOrder]:
    return [
        MakerOrder(order_id=m.order_id, owner=m.owner, maker_address=m.account,
                   matched_amount=format_units(m.matched_amount), price=format_units(m.price),
                   fee_rate_bps=str(m.fee_rate_bps), asset_id=m.asset_id, outcome=m.outcome, side=m.side.value)
        for m in t.maker_orders
    ]


def role_of(t: TradeView, accounts: tuple[str, ...]) -> str:
    """TAKER when one of ``accounts`` (checksummed wallets of one owner) placed the taker order."""
    return "TAKER" if t.account in accounts else "MAKER"


def trade(t: TradeView, role: str = "TAKER") -> Trade:
    return Trade(
        id=t.id, taker_order_id=t.taker_order_id, market=t.market, asset_id=t.asset_id, side=t.side.value,
        size=format_units(t.size), fee_rate_bps=str(t.fee_rate_bps), price=format_units(t.price),
        status=t.status.value, match_time=secs(t.match_time), last_update=secs(t.last_update),
        outcome=t.outcome, maker_address=t.account, owner=t.owner, transaction_hash=t.transaction_hash,
        bucket_index=t.bucket_index, maker_orders=_makers(t), type=role, trader_side=role,
    )


def trade_event(t: TradeView, role: str, trade_owner: str, now: float) -> TradeEvent:
    return TradeEvent(
        id=t.id, taker_order_id=t.taker_order_id, market=t.market, asset_id=t.asset_id, side=t.side.value,
        size=format_units(t.size), fee_rate_bps=str(t.fee_rate_bps), price=format_units(t.price),
        status=t.status.value, match_time=secs(t.match_time), last_update=secs(t.last_update),
        outcome=t.outcome, maker_address=t.account, owner=trade_owner, transaction_hash=t.transaction_hash,
        bucket_index=t.bucket_index, maker_orders=_makers(t), type="TRADE", trader_side=role,
        trade_owner=trade_owner, timestamp=ms(now),
    )
