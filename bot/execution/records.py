"""The reconciler's normalized inputs, built from wire dicts or decoded venue models.

Invariant: whatever the source (user WebSocket event, REST page, order result), a record holds
integer micro-units, upper-case statuses and exactly one spelling of each field; conversion
happens here, once, and accepts both interface.md's camelCase and the venue's snake_case names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from bot.venue.enums import Side, TradeStatus
from bot.venue.units import parse_units

_ACCEPTED_RESULT_STATUSES = frozenset({"live", "matched", "delayed"})


class MakerLeg(msgspec.Struct, frozen=True):
    """One resting order matched by a trade; ``price`` is that maker order's price."""

    order_id: str
    matched_amount: int
    price: int
    side: Side | None = None
    token_id: str = ""
    owner: str = ""
    fee_rate_bps: int = 0


class TradeRecord(msgspec.Struct, frozen=True):
    """A trade as the user stream or ``GET /data/trades`` tells it (``side`` is the taker's)."""

    trade_id: str
    status: TradeStatus
    taker_order_id: str = ""
    token_id: str = ""
    market: str = ""
    side: Side | None = None
    size: int = 0
    price: int = 0
    fee_rate_bps: int = 0
    owner: str = ""
    trader_side: str = ""
    maker_orders: tuple[MakerLeg, ...] = ()
    match_time: float = 0.0


class OrderRecord(msgspec.Struct, frozen=True):
    """An order as the user stream (``event`` set) or ``GET /data/orders`` tells it."""

    order_id: str
    status: str  # upper case, e.g. LIVE, MATCHED, CANCELED_EXPIRED_ORDER
    token_id: str = ""
    market: str = ""
    side: Side | None = None
    price: int = 0
    original_size: int = 0
    size_matched: int = 0
    associate_trades: tuple[str, ...] = ()
    event: str = ""  # PLACEMENT / UPDATE / CANCELLATION, or "" for REST
    order_type: str = ""
    owner: str = ""


class OrderResult(msgspec.Struct, frozen=True):
    """One element of a POST /order(s) response (venue.md 10.1)."""

    success: bool = False
    error_msg: str = ""
    order_id: str = ""
    status: str = ""  # lower case: live / matched / delayed / unmatched
    making_amount: int = 0
    taking_amount: int = 0
    order_hash: str = ""
    trade_ids: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        """Accepted iff success, no errorMsg, a non-empty orderID and an accepting status."""
        return (
            self.success
            and not self.error_msg
            and bool(self.order_id)
            and self.status in _ACCEPTED_RESULT_STATUSES
        )


class CancelResult(msgspec.Struct, frozen=True):
    canceled: tuple[str, ...] = ()
    not_canceled: dict[str, str] = {}


# --- converters ------------------------------------------------------------------------------


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    if type(obj) is dict or isinstance(obj, Mapping):
        for n in names:
            v = obj.get(n)
            if v is not None:
                return v
        return default
    for n in names:
        v = getattr(obj, n, None)
        if v is not None:
            return v
    return default


def _units(v: Any) -> int:
    if v is None or v == "":
        return 0
    if isinstance(v, int):
        return v
    return parse_units(str(v))


def _int(v: Any) -> int:
    if v is None or v == "":
        return 0
    try:
        return int(v)
    except (TypeError, ValueError):
        return int(float(v))


def _side(v: Any) -> Side | None:
    if v is None or v == "":
        return None
    if isinstance(v, Side):
        return v
    return Side(str(getattr(v, "value", v)).upper())


def _time(v: Any) -> float:
    """Epoch seconds from epoch seconds/ms (number or string) or ISO 8601; 0.0 when unknown."""
    if v is None or v == "":
        return 0.0
    if isinstance(v, (int, float)):
        x = float(v)
    else:
        s = str(v)
        try:
            x = float(s)
        except ValueError:
            from datetime import datetime

            try:
                return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return 0.0
    return x / 1000.0 if x >= 1e12 else x


def _str(v: Any) -> str:
    if v is None:
        return ""
    return str(getattr(v, "value", v))


def trade_record(obj: Any) -> TradeRecord:
    """Normalize a user-stream ``trade`` event or a ``/data/trades`` item (dict or Struct)."""
    if isinstance(obj, TradeRecord):
        return obj
    legs = []
    for m in _get(obj, "maker_orders", "makerOrders", default=()) or ():
        legs.append(
            MakerLeg(
                order_id=_str(_get(m, "order_id", "orderId", "orderID", default="")),
                matched_amount=_units(_get(m, "matched_amount", "matchedAmount")),
                price=_units(_get(m, "price")),
                side=_side(_get(m, "side")),
                token_id=_str(_get(m, "asset_id", "assetId", "token_id", default="")),
                owner=_str(_get(m, "owner", default="")),
                fee_rate_bps=_int(_get(m, "fee_rate_bps", "feeRateBps")),
            )
        )
    return TradeRecord(
        trade_id=_str(_get(obj, "id", "trade_id")),
        status=TradeStatus.parse(_str(_get(obj, "status", default="MATCHED"))),
        taker_order_id=_str(_get(obj, "taker_order_id", "takerOrderId", default="")),
        token_id=_str(_get(obj, "asset_id", "assetId", "token_id", default="")),
        market=_str(_get(obj, "market", default="")),
        side=_side(_get(obj, "side")),
        size=_units(_get(obj, "size")),
        price=_units(_get(obj, "price")),
        fee_rate_bps=_int(_get(obj, "fee_rate_bps", "feeRateBps")),
        owner=_str(_get(obj, "owner", default="")),
        trader_side=_str(_get(obj, "trader_side", "traderSide", "type", default="")).upper(),
        maker_orders=tuple(legs),
        match_time=_time(_get(obj, "match_time", "matchTime")),
    )


def order_record(obj: Any) -> OrderRecord:
    """Normalize a user-stream ``order`` event or a ``/data/orders`` item (dict or Struct)."""
    if isinstance(obj, OrderRecord):
        return obj
    event = _str(_get(obj, "type", "event", default="")).upper()
    if event not in ("PLACEMENT", "UPDATE", "CANCELLATION"):
        event = ""
    trades = _get(obj, "associate_trades", "associateTrades", default=()) or ()
    return OrderRecord(
        order_id=_str(_get(obj, "id", "order_id", "orderID")),
        status=_str(_get(obj, "status", default="")).upper(),
        token_id=_str(_get(obj, "asset_id", "assetId", "token_id", default="")),
        market=_str(_get(obj, "market", default="")),
        side=_side(_get(obj, "side")),
        price=_units(_get(obj, "price")),
        original_size=_units(_get(obj, "original_size", "originalSize")),
        size_matched=_units(_get(obj, "size_matched", "sizeMatched")),
        associate_trades=tuple(str(t) for t in trades),
        event=event,
        order_type=_str(_get(obj, "order_type", "orderType", default="")).upper(),
        owner=_str(_get(obj, "owner", default="")),
    )


def order_result(obj: Any) -> OrderResult:
    """Normalize one POST /order(s) result element (dict or Struct)."""
    if isinstance(obj, OrderResult):
        return obj
    return OrderResult(
        success=bool(_get(obj, "success", default=False)),
        error_msg=_str(_get(obj, "errorMsg", "error_msg", default="")),
        order_id=_str(_get(obj, "orderID", "orderId", "order_id", default="")),
        status=_str(_get(obj, "status", default="")).lower(),
        making_amount=_units(_get(obj, "makingAmount", "making_amount")),
        taking_amount=_units(_get(obj, "takingAmount", "taking_amount")),
        order_hash=_str(_get(obj, "orderHash", "order_hash", default="")),
        trade_ids=tuple(str(t) for t in (_get(obj, "tradeIDs", "trade_ids", default=()) or ())),
    )


def cancel_result(obj: Any) -> CancelResult:
    """Normalize a cancel response ``{canceled: [...], not_canceled: {id: reason}}``."""
    if isinstance(obj, CancelResult):
        return obj
    canceled = _get(obj, "canceled", default=()) or ()
    nc = _get(obj, "not_canceled", "notCanceled", default={}) or {}
    if not isinstance(nc, Mapping):
        nc = {str(k): "" for k in nc}
    return CancelResult(canceled=tuple(str(c) for c in canceled), not_canceled={str(k): str(v) for k, v in nc.items()})
