"""The venue's closed vocabularies, as string enums that serialize to the wire spelling."""

from __future__ import annotations

import enum


class Side(str, enum.Enum):
    BUY = "BUY"
    SELL = "SELL"

    @property
    def opposite(self) -> "Side":
        return Side.SELL if self is Side.BUY else Side.BUY

    @property
    def uint8(self) -> int:
        """The value signed in the EIP-712 order (0 = BUY, 1 = SELL)."""
        return 0 if self is Side.BUY else 1


class OrderType(str, enum.Enum):
    GTC = "GTC"
    GTD = "GTD"
    FOK = "FOK"
    FAK = "FAK"

    is_market: bool  # FOK and FAK: filled at once or not at all, never resting


# Per-member flags are plain attributes, not properties: the order path reads them per order.
for _t in OrderType:
    _t.is_market = _t is OrderType.FOK or _t is OrderType.FAK


class SignatureType(enum.IntEnum):
    EOA = 0
    POLY_PROXY = 1
    POLY_GNOSIS_SAFE = 2
    POLY_1271 = 3


class TradeStatus(str, enum.Enum):
    MATCHED = "MATCHED"
    MATCHED_NOT_BROADCASTED = "MATCHED_NOT_BROADCASTED"
    MINED = "MINED"
    CONFIRMED = "CONFIRMED"
    RETRYING = "RETRYING"
    FAILED = "FAILED"

    @classmethod
    def parse(cls, text: str) -> "TradeStatus":
        """Accept the REST ``TRADE_STATUS_`` prefix and any letter case."""
        t = text.upper()
        if t.startswith("TRADE_STATUS_"):
            t = t[len("TRADE_STATUS_"):]
        return cls(t)

    @property
    def terminal(self) -> bool:
        return self in (TradeStatus.CONFIRMED, TradeStatus.FAILED)


class OrderStatus(str, enum.Enum):
    LIVE = "LIVE"
    MATCHED = "MATCHED"
    DELAYED = "DELAYED"
    UNMATCHED = "UNMATCHED"
    CANCELED = "CANCELED"
    CANCELED_MARKET_RESOLVED = "CANCELED_MARKET_RESOLVED"
    CANCELED_NOT_ENOUGH_BALANCE = "CANCELED_NOT_ENOUGH_BALANCE"
    CANCELED_MARKET_NOT_FOUND = "CANCELED_MARKET_NOT_FOUND"
    CANCELED_EXPIRED_ORDER = "CANCELED_EXPIRED_ORDER"
    CANCELED_ORDER_TIMED_OUT = "CANCELED_ORDER_TIMED_OUT"
    INVALID = "INVALID"


ORDER_STATUS_PREFIX = "ORDER_STATUS_"  # the venue's documentation spells ``ORDER_STATUS_LIVE``


def order_status(text: str) -> str:
    """An order status in its one spelling: upper case, any ``ORDER_STATUS_`` prefix taken off
    (``ORDER_STATUS_CANCELED`` and ``canceled`` both read ``CANCELED``); a status with words after
    it (``CANCELED_order couldn't be fully filled...``) keeps them, upper-cased."""
    t = text.upper()
    if t.startswith(ORDER_STATUS_PREFIX):
        t = t[len(ORDER_STATUS_PREFIX):]
    return t


def is_canceled_status(text: str) -> bool:
    """Any status that starts with CANCELED (any case, with or without ``ORDER_STATUS_``) means
    the order is gone."""
    return order_status(text).startswith("CANCELED")
