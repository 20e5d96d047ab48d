"""The reconciler's normalized inputs, built from wire dicts or decoded venue models.

Invariant: whatever the source (user WebSocket event, REST page, order result), a record holds
integer micro-units, upper-case statuses and exactly one spelling of each field; conversion
happens here, once, and accepts both interface.md's camelCase and the venue's snake_case names.
A trade whose id, status or side cannot be read is a ``RecordError``; a leg whose amounts cannot
be read keeps the reason in ``fault`` instead, so the rest of the trade (the legs of others, or
ours) still reads: whether that leg matters is the reconciler's call, once it knows whose it is.
A price finer than the 6-decimal grid comes with the leg's ``cash`` (``bot.venue.units.traded_price``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from bot.venue.enums import Side, TradeStatus, order_status
from bot.venue.units import parse_units, traded_price

_ACCEPTED_RESULT_STATUSES = frozenset({"live", "matched", "delayed"})


class RecordError(ValueError):
    """A trade record that cannot be read at all (its id, status or side); ``trade_id`` is what
    could be read of its id ("" when nothing)."""

    def __init__(self, trade_id: str, reason: str) -> None:
        super().__init__(f"trade {trade_id or '?'}: {reason}")
        self.trade_id = trade_id
        self.reason = reason


class MakerLeg(msgspec.Struct, frozen=True):
    """One resting order matched by a trade; ``price`` is that maker order's price.

    ``cash``: the leg's USDC in micro-units when its price is finer than the 6-decimal grid
    (``price`` is then that price rounded), else ``None`` (the cash is ``price * matched_amount``).
    ``fault``: why its side or amounts could not be read ("" when they could; then they are 0)."""

    order_id: str
    matched_amount: int
    price: int
    side: Side | None = None
    token_id: str = ""
    owner: str = ""
    fee_rate_bps: int = 0
    cash: int | None = None
    fault: str = ""


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
    cash: int | None = None  # the taker leg's, as ``MakerLeg.cash``
    fault: str = ""  # why the taker leg's price, size or fee rate could not be read


class OrderRecord(msgspec.Struct, frozen=True):
    """An order as the user stream (``event`` set) or ``GET /data/orders`` tells it."""

    order_id: str
    status: str  # upper case, no ORDER_STATUS_ prefix, e.g. LIVE, MATCHED, CANCELED_EXPIRED_ORDER
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


def _amounts(price: Any, size: Any) -> tuple[int, int, int | None]:
    """``(size, price, cash)`` of a leg: see ``MakerLeg``; a ``ValueError`` when unreadable."""
    units = _units(size)
    if price is None or price == "":
        return units, 0, None
    if isinstance(price, int):
        return units, price, None
    px, cash = traded_price(str(price), units)
    if units < 0 or px < 0:
        raise ValueError(f"negative amount: size {size!r} price {price!r}")
    return units, px, cash


def _fault(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:160]


def _maker_leg(m: Any) -> MakerLeg:
    """One maker order of a trade; its amounts are read, and a failure kept as the leg's fault."""
    order_id = _str(_get(m, "order_id", "orderId", "orderID", default=""))
    token_id = _str(_get(m, "asset_id", "assetId", "token_id", default=""))
    owner = _str(_get(m, "owner", default=""))
    try:
        side = _side(_get(m, "side"))
        size, price, cash = _amounts(_get(m, "price"), _get(m, "matched_amount", "matchedAmount"))
    except (ValueError, TypeError) as exc:
        return MakerLeg(order_id, 0, 0, None, token_id, owner, 0, None, _fault(exc))
    try:  # what a maker pays is no part of its fill (makers pay no fee): never a fault
        bps = _int(_get(m, "fee_rate_bps", "feeRateBps"))
    except (ValueError, TypeError):
        bps = 0
    return MakerLeg(order_id, size, price, side, token_id, owner, bps, cash)


def trade_record(obj: Any) -> TradeRecord:
    """Normalize a user-stream ``trade`` event or a ``/data/trades`` item (dict or Struct).

    Raises ``RecordError`` when the trade's id, status or side cannot be read; unreadable leg
    amounts are kept as that leg's ``fault`` (see the module invariant)."""
    if isinstance(obj, TradeRecord):
        return obj
    trade_id = _str(_get(obj, "id", "trade_id", default=""))
    if not trade_id:
        raise RecordError("", "no trade id")
    try:
        status = TradeStatus.parse(_str(_get(obj, "status", default="MATCHED")))
        side = _side(_get(obj, "side"))
        makers = _get(obj, "maker_orders", "makerOrders", default=()) or ()
        legs = tuple([_maker_leg(m) for m in makers])
    except (ValueError, TypeError, AttributeError) as exc:
        raise RecordError(trade_id, _fault(exc)) from None
    fault = ""
    try:
        size, price, cash = _amounts(_get(obj, "price"), _get(obj, "size"))
        bps = _int(_get(obj, "fee_rate_bps", "feeRateBps"))
    except (ValueError, TypeError) as exc:
        size = price = bps = 0
        cash, fault = None, _fault(exc)
    return TradeRecord(
        trade_id=trade_id,
        status=status,
        taker_order_id=_str(_get(obj, "taker_order_id", "takerOrderId", default="")),
        token_id=_str(_get(obj, "asset_id", "assetId", "token_id", default="")),
        market=_str(_get(obj, "market", default="")),
        side=side,
        size=size,
        price=price,
        fee_rate_bps=bps,
        owner=_str(_get(obj, "owner", default="")),
        trader_side=_str(_get(obj, "trader_side", "traderSide", "type", default="")).upper(),
        maker_orders=legs,
        match_time=_time(_get(obj, "match_time", "matchTime")),
        cash=cash,
        fault=fault,
    )


def trade_names(obj: Any) -> tuple[tuple[str, str, str, bool], ...]:
    """``(order id, token id, owner, is maker)`` of each leg a trade record names, as far as they
    can be read (the taker leg first, its owner never given); never raises: it is what is left to
    know of a record ``trade_record`` refused."""
    out: list[tuple[str, str, str, bool]] = []
    try:
        token = _str(_get(obj, "asset_id", "assetId", "token_id", default=""))
        out.append((_str(_get(obj, "taker_order_id", "takerOrderId", default="")), token, "", False))
        for m in _get(obj, "maker_orders", "makerOrders", default=()) or ():
            out.append((
                _str(_get(m, "order_id", "orderId", "orderID", default="")),
                _str(_get(m, "asset_id", "assetId", "token_id", default="")) or token,
                _str(_get(m, "owner", default="")),
                True,
            ))
    except Exception:  # noqa: BLE001 - whatever was read so far is all there is
        pass
    return tuple(out)


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
        status=order_status(_str(_get(obj, "status", default=""))),
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
        status=order_status(_str(_get(obj, "status", default=""))).lower(),
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
