"""Open orders from REST (``GET /data/orders`` items, ``GET /data/order/{id}``).

Invariant: the wire's two spellings (interface.md camelCase and the venue's snake_case, venue.md 8)
decode to the same attributes; after decoding, only the camelCase field carries the value, so
re-encoding emits interface.md's spellings. Missing required fields name both spellings.
"""

from __future__ import annotations

import msgspec

from ..enums import is_canceled_status
from .decoding import Wire, decode
from .timestamps import epoch_ms

_F = msgspec.field

# (attribute, camelCase wire name, snake_case attribute, required)
_PAIRS = (
    ("associate_trades", "associateTrades", "associate_trades_snake", False),
    ("original_size", "originalSize", "original_size_snake", True),
    ("maker_address", "makerAddress", "maker_address_snake", False),
    ("size_matched", "sizeMatched", "size_matched_snake", True),
    ("asset_id", "assetId", "asset_id_snake", True),
    ("created_at", "createdAt", "created_at_snake", False),
)


class OpenOrder(Wire, kw_only=True):
    """A live (or recently closed) order of the authenticated account (interface.md 2.3).

    ``created_at`` is ISO 8601 or epoch seconds (number or string); ``expiration`` is ``"0"``,
    a unix-seconds string/number, or null.
    """

    associate_trades: list[str] | None = _F(default=None, name="associateTrades")
    id: str
    status: str
    market: str
    original_size: str | None = _F(default=None, name="originalSize")
    outcome: str | None = None
    maker_address: str | None = _F(default=None, name="makerAddress")
    owner: str | None = None
    price: str
    side: str
    size_matched: str | None = _F(default=None, name="sizeMatched")
    asset_id: str | None = _F(default=None, name="assetId")
    expiration: str | int | None = None
    order_type: str | None = None
    created_at: str | int | float | None = _F(default=None, name="createdAt")
    # The venue's snake_case spellings; folded into the fields above by __post_init__.
    associate_trades_snake: list[str] | None = _F(default=None, name="associate_trades")
    original_size_snake: str | None = _F(default=None, name="original_size")
    maker_address_snake: str | None = _F(default=None, name="maker_address")
    size_matched_snake: str | None = _F(default=None, name="size_matched")
    asset_id_snake: str | None = _F(default=None, name="asset_id")
    created_at_snake: str | int | float | None = _F(default=None, name="created_at")

    def __post_init__(self) -> None:
        for attr, wire, snake, required in _PAIRS:
            alt = getattr(self, snake)
            if alt is not None:
                if getattr(self, attr) is None:
                    setattr(self, attr, alt)
                setattr(self, snake, None)
            if required and getattr(self, attr) is None:
                raise ValueError(f"Object missing required field `{wire}` (or `{snake[:-6]}`)")

    @property
    def created_at_ms(self) -> int | None:
        return epoch_ms(self.created_at)

    @property
    def expiration_s(self) -> int:
        """Expiration in unix seconds; 0 means none (``"0"``, null and ``""`` all read as 0)."""
        if self.expiration in (None, ""):
            return 0
        return int(self.expiration)

    @property
    def canceled(self) -> bool:
        return is_canceled_status(self.status)


class LiveOpenOrder(Wire, omit_defaults=False, kw_only=True):
    """An open order as the live venue writes it (``GET /data/orders`` items, captured 2026-07-24):
    snake_case names in the venue's key order, ``created_at`` in epoch seconds. The local exchange
    encodes it; clients decode it as :class:`OpenOrder`, which reads both spellings."""

    id: str
    status: str
    owner: str
    maker_address: str
    market: str
    asset_id: str
    side: str
    original_size: str
    size_matched: str
    price: str
    outcome: str
    expiration: str
    order_type: str
    associate_trades: list[str]
    created_at: int


class OrderEnvelope(Wire, kw_only=True):
    """``GET /data/order/{id}`` as the seed writes it: ``{order: <open order>}`` (the live venue
    sends the bare order: :func:`decode_order_lookup` reads both)."""

    order: OpenOrder


def decode_order_lookup(data: bytes) -> OpenOrder:
    """A ``GET /data/order/{id}`` body in either spelling: ``{order: ...}`` (the seed) or the bare
    order (the live venue); a body of neither shape raises ``DecodeError``."""
    parts = decode(data, dict[str, msgspec.Raw])
    inner = parts.get("order")
    return decode(bytes(inner) if inner is not None else data, OpenOrder)
