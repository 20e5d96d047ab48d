"""WebSocket frames of the market and user channels (venue.md 9.2, 9.3) and their fast decoders.

Invariants:
- a frame is one JSON object or a JSON array of them; non-JSON text (``PONG``, invalid UTF-8)
  decodes to ``[]``;
- events are dispatched on ``event_type``; unknown types are skipped; events without
  ``event_type`` are recognised by their keys when the shape is unambiguous, else skipped;
- ``price_change`` always comes out in the current schema (``price_changes[]``): the obsolete one
  (top-level ``asset_id`` with ``changes[]`` or a single price/side/size) is converted;
- a recognised event with a bad shape, or JSON nested deeper than ``MAX_JSON_DEPTH``, raises
  :class:`~bot.venue.models.decoding.DecodeError` (nothing else escapes). Depth is found by a flat
  scan before a free-form decode recurses into the text; the typed decoders tried first recurse
  past their models' fixed depth (``fixed_depth``, checked at import) only to skip what they do
  not hold, under the interpreter's recursion limit, so a frame they decode is not scanned while
  that limit is below ``SAFE_RECURSION_LIMIT``;
- encoding any event with :func:`msgspec.json.encode` yields the venue's field names, with
  ``event_type`` first and unset optional fields left out.
"""

from __future__ import annotations

from sys import getrecursionlimit
from typing import Any, Union

import msgspec

from .book import Level, OrderBook
from .bodies import ApiCreds
from .decoding import MAX_JSON_DEPTH, DecodeError, FastWire, Wire, fixed_depth, too_deep
from .timestamps import epoch_ms
from .trade import Trade

__all__ = [
    "BookEvent", "LevelChange", "PriceChangeEvent", "LastTradePriceEvent", "TickSizeChangeEvent",
    "BestBidAskEvent", "EventMessage", "NewMarketEvent", "MarketResolvedEvent", "OrderEvent",
    "TradeEvent", "MarketEvent", "UserEvent", "MARKET_EVENT_TYPES", "USER_EVENT_TYPES",
    "decode_market_frame", "decode_user_frame", "encode_event", "encode_frame",
    "MarketSubscribe", "UserSubscribe", "SubscriptionUpdate", "Level",
]


class _MarketBase(FastWire, tag_field="event_type", kw_only=True):
    """Common configuration of market-channel events: tagged by ``event_type``."""


class BookEvent(OrderBook, tag_field="event_type", tag="book", kw_only=True):
    """``book``: a full snapshot that replaces the local book for ``asset_id``."""


class LevelChange(FastWire, kw_only=True):
    """One level update: ``size`` is the new total at ``price`` (``"0"`` removes the level).

    ``side`` BUY is a bid level, SELL an ask level.
    """

    # The venue's own key order (side before size): decoding is fastest when fields and keys agree.
    asset_id: str
    price: str
    side: str
    size: str
    hash: str | None = None
    best_bid: str | None = None
    best_ask: str | None = None


class PriceChangeEvent(_MarketBase, tag="price_change", kw_only=True):
    """``price_change`` (schema since 2025-09): level updates, possibly for several assets."""

    market: str
    timestamp: str
    price_changes: list[LevelChange]


class LastTradePriceEvent(_MarketBase, tag="last_trade_price", kw_only=True):
    """``last_trade_price``: a print on the tape."""

    asset_id: str
    market: str
    price: str
    side: str
    size: str
    fee_rate_bps: str | None = None
    timestamp: str
    transaction_hash: str | None = None


class TickSizeChangeEvent(_MarketBase, tag="tick_size_change", kw_only=True):
    """``tick_size_change``: the market's tick moved; resting quotes need re-rounding."""

    asset_id: str
    market: str
    old_tick_size: str
    new_tick_size: str
    timestamp: str


class BestBidAskEvent(_MarketBase, tag="best_bid_ask", kw_only=True):
    """``best_bid_ask`` (custom feature): top of book for one asset."""

    asset_id: str
    market: str
    best_bid: str
    best_ask: str
    spread: str | None = None
    timestamp: str


class EventMessage(Wire, kw_only=True):
    """The parent event carried by ``new_market``."""

    id: str | None = None
    ticker: str | None = None
    slug: str | None = None
    title: str | None = None
    description: str | None = None


class NewMarketEvent(_MarketBase, tag="new_market", kw_only=True):
    """``new_market`` (custom feature): a market was listed."""

    id: str | None = None
    market: str
    question: str | None = None
    slug: str | None = None
    description: str | None = None
    assets_ids: list[str]
    outcomes: list[str] | None = None
    event_message: EventMessage | None = None
    timestamp: str
    tags: list[str] | None = None
    condition_id: str | None = None
    active: bool | None = None
    clob_token_ids: list[str] | None = None
    sports_market_type: str | None = None
    line: str | None = None
    game_start_time: str | None = None
    order_price_min_tick_size: str | None = None
    group_item_title: str | None = None


class MarketResolvedEvent(_MarketBase, tag="market_resolved", kw_only=True):
    """``market_resolved`` (custom feature): ``winning_asset_id`` settles at 1, the others at 0.

    The capture spells the token list ``assets_ids``; ``asset_ids`` is accepted and folded into it.
    """

    id: str | None = None
    market: str
    assets_ids: list[str] | None = None
    asset_ids: list[str] | None = None
    winning_asset_id: str
    winning_outcome: str | None = None
    timestamp: str
    tags: list[str] | None = None

    def __post_init__(self) -> None:
        if self.assets_ids is None and self.asset_ids is not None:
            self.assets_ids, self.asset_ids = self.asset_ids, None


class OrderEvent(FastWire, tag_field="event_type", tag="order", kw_only=True):
    """User ``order`` event: ``type`` is PLACEMENT, UPDATE or CANCELLATION.

    ``created_at`` is epoch seconds and ``timestamp`` epoch ms (both as the wire text);
    ``associate_trades`` may be null; ``status`` may carry free text after ``CANCELED``.
    """

    id: str
    owner: str | None = None
    order_owner: str | None = None
    market: str
    asset_id: str
    side: str
    price: str
    original_size: str
    size_matched: str
    outcome: str | None = None
    order_type: str | None = None
    status: str
    maker_address: str | None = None
    associate_trades: list[str] | None = None
    created_at: str | int | None = None
    expiration: str | int | None = None
    timestamp: str | None = None
    type: str

    @property
    def created_at_ms(self) -> int | None:
        return epoch_ms(self.created_at)


class TradeEvent(Trade, tag_field="event_type", tag="trade", kw_only=True):
    """User ``trade`` event: re-emitted under the same ``id`` on every status change."""

    trade_owner: str | None = None
    timestamp: str | None = None


MarketEvent = Union[
    BookEvent, PriceChangeEvent, LastTradePriceEvent, TickSizeChangeEvent, BestBidAskEvent,
    NewMarketEvent, MarketResolvedEvent,
]
UserEvent = Union[OrderEvent, TradeEvent]

MARKET_EVENT_TYPES: dict[str, type] = {
    "book": BookEvent,
    "price_change": PriceChangeEvent,
    "last_trade_price": LastTradePriceEvent,
    "tick_size_change": TickSizeChangeEvent,
    "best_bid_ask": BestBidAskEvent,
    "new_market": NewMarketEvent,
    "market_resolved": MarketResolvedEvent,
}
USER_EVENT_TYPES: dict[str, type] = {"order": OrderEvent, "trade": TradeEvent}

_market_fast = msgspec.json.Decoder(Union[list[MarketEvent], MarketEvent])  # type: ignore[valid-type]
_user_fast = msgspec.json.Decoder(Union[list[UserEvent], UserEvent])  # type: ignore[valid-type]
_any_json = msgspec.json.Decoder()
# Only a free-form decode recurses once per level of the text (a deep enough frame would exhaust
# the C stack): the typed decoders tried first must stay of fixed depth to go unscanned.
_TYPED_FIXED = fixed_depth(Union[list[MarketEvent], MarketEvent]) and fixed_depth(Union[list[UserEvent], UserEvent])
# What a typed decoder skips (a value it does not hold) it walks level by level under the
# interpreter's recursion limit: a RecursionError, well within the C stack, while the limit stays
# below this; a process that lifts it past this gets every frame scanned first.
SAFE_RECURSION_LIMIT = 20_000


# the recursion limit up to which a frame goes to the typed decoders unscanned (none: -1)
_UNSCANNED_UP_TO = SAFE_RECURSION_LIMIT if _TYPED_FIXED else -1
_TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


# ``price_change`` frames are most of the market channel's traffic and arrive as one object whose
# ``event_type`` tag comes last (after the levels): a tagged union must scan the whole object for
# the tag before decoding it, so such a frame is decoded straight into PriceChangeEvent (which
# checks the tag itself). Only the frame's tail is searched for the tag, so the check costs the
# same on every frame, large book snapshots included; a frame with its tag first goes to the
# general decoder, which dispatches on a leading tag without a rescan. Anything that does not fit
# falls through to the general decoder, so the result is the same either way; only speed differs.
_decode_price_change = msgspec.json.Decoder(PriceChangeEvent).decode
_PC_TAG = b'"price_change"'
_PC_TAIL = -160  # the tag and what may follow it (a timestamp) fit in this many closing bytes


def decode_market_frame(data: bytes | str) -> list[MarketEvent]:
    """All market-channel events of one frame, in order (see the module invariants). A
    ``price_change`` frame is decoded in this one call: no depth scan, no further Python frame."""
    if getrecursionlimit() > _UNSCANNED_UP_TO and too_deep(data):
        raise DecodeError("frame", _TOO_DEEP)
    try:
        if data.rfind(_PC_TAG, _PC_TAIL) > 0:  # a str frame raises TypeError: general decoder
            return [_decode_price_change(data)]  # an array, or another tag, fails and falls through
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError, UnicodeDecodeError):
        pass
    except RecursionError:  # a value it does not hold, nested past the interpreter's limit
        raise DecodeError("frame", _TOO_DEEP) from None
    try:
        return _market_frame(data)
    except RecursionError:
        raise DecodeError("frame", _TOO_DEEP) from None


def decode_user_frame(data: bytes | str) -> list[UserEvent]:
    """All user-channel events of one frame, in order (see the module invariants)."""
    if getrecursionlimit() > _UNSCANNED_UP_TO and too_deep(data):
        raise DecodeError("frame", _TOO_DEEP)
    try:
        return _user_frame(data)
    except RecursionError:
        raise DecodeError("frame", _TOO_DEEP) from None


def _market_frame(data: bytes | str) -> list[MarketEvent]:
    """What is not a ``price_change`` frame tagged last (``decode_market_frame`` tried that)."""
    try:
        out = _market_fast.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return _decode_slow(data, MARKET_EVENT_TYPES, _infer_market_type)
    return out if type(out) is list else [out]


def _user_frame(data: bytes | str) -> list[UserEvent]:
    try:
        out = _user_fast.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return _decode_slow(data, USER_EVENT_TYPES, _infer_user_type)
    return out if type(out) is list else [out]


def _decode_slow(data: bytes | str, table: dict[str, type], infer: Any) -> list:
    if too_deep(data):  # before the free-form decoder recurses into it
        raise DecodeError("frame", _TOO_DEEP)
    try:
        parsed = _any_json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return []  # PONG and other non-JSON text (invalid UTF-8 is not JSON)
    items = parsed if isinstance(parsed, list) else [parsed]
    events = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("event_type")
        if kind is None:
            kind = infer(item)
        model = table.get(kind) if isinstance(kind, str) else None
        if model is None:
            continue
        if model is PriceChangeEvent and "price_changes" not in item:
            item = legacy_price_change(item)
        try:
            events.append(msgspec.convert(item, model))
        except msgspec.ValidationError as exc:
            raise DecodeError(model.__name__, str(exc)) from None
    return events


def legacy_price_change(item: dict) -> dict:
    """Rewrite an obsolete ``price_change`` (top-level ``asset_id``; ``changes[]`` or a single
    price/side/size) as the current schema, one ``price_changes`` entry per level."""
    asset_id = item.get("asset_id")
    top_hash = item.get("hash")
    changes = item.get("changes")
    if not isinstance(changes, list):
        changes = [{k: item[k] for k in ("price", "side", "size") if k in item}]
    levels = []
    for ch in changes:
        level = {"asset_id": ch.get("asset_id", asset_id)}
        level.update((k, ch[k]) for k in ("price", "side", "size") if k in ch)
        h = ch.get("hash", top_hash)
        if h is not None:
            level["hash"] = h
        levels.append(level)
    out = {"market": item.get("market"), "price_changes": levels}
    if "timestamp" in item:
        out["timestamp"] = item["timestamp"]
    return out


def _infer_market_type(item: dict) -> str | None:
    if "price_changes" in item or "changes" in item:
        return "price_change"
    if "bids" in item or "asks" in item:
        return "book"
    if "new_tick_size" in item:
        return "tick_size_change"
    if "winning_asset_id" in item:
        return "market_resolved"
    if "best_bid" in item and "best_ask" in item and "spread" in item:
        return "best_bid_ask"
    if "question" in item and ("assets_ids" in item or "clob_token_ids" in item):
        return "new_market"
    if "fee_rate_bps" in item and "price" in item and "original_size" not in item:
        return "last_trade_price" if "maker_orders" not in item else None
    return None


def _infer_user_type(item: dict) -> str | None:
    if "maker_orders" in item or "taker_order_id" in item:
        return "trade"
    if "original_size" in item and "size_matched" in item:
        return "order"
    return None


_encoder = msgspec.json.Encoder()


def encode_event(event: MarketEvent | UserEvent) -> bytes:
    """One event as the venue sends it (``event_type`` first)."""
    return _encoder.encode(event)


def encode_frame(events: list) -> bytes:
    """Several events as one array frame (the initial book dump is sent this way)."""
    return _encoder.encode(events)


class MarketSubscribe(Wire, omit_defaults=False, kw_only=True):
    """First frame on the market channel (note the venue's spelling ``assets_ids``)."""

    type: str = "market"
    assets_ids: list[str]
    custom_feature_enabled: bool = False


class UserSubscribe(Wire, omit_defaults=False, kw_only=True):
    """First frame on the user channel; ``markets`` left unset means all markets (key omitted)."""

    type: str = "user"
    auth: ApiCreds
    markets: list[str] | msgspec.UnsetType = msgspec.UNSET


class SubscriptionUpdate(Wire, kw_only=True):
    """A later ``subscribe``/``unsubscribe`` on either channel."""

    operation: str
    assets_ids: list[str] | None = None
    markets: list[str] | None = None
    custom_feature_enabled: bool | None = None
