"""What a command answers: order results and cancel results, with the venue's exact words.

Invariant: a rejected order has ``success`` false, status ``unmatched`` and a non-empty
``error_msg``; an accepted one has an empty ``error_msg`` and status ``live`` or ``matched``.
Amounts are integer micro-units (the server formats them; ``0`` may be sent as ``""``).
"""

from __future__ import annotations

import msgspec

from bot.venue.units import format_units

# venue.md 10.1, used verbatim
NOT_READY = "the market is not yet ready to process new orders"
INVALID_EXPIRATION = "invalid expiration"
POST_ONLY_CROSSES = "invalid post-only order: order crosses book"
POST_ONLY_MODE = "post-only mode: only post-only orders and cancels are allowed"
FOK_KILLED = "order couldn't be fully filled. FOK orders are fully filled or killed."
FAK_KILLED = (
    "no orders found to match with FAK order. FAK orders are partially filled or killed if no "
    "match is found."
)
NOT_ENOUGH_BALANCE = "not enough balance / allowance"
# engine-specific rejections (any non-empty errorMsg is a rejection)
DUPLICATED = "order is invalid. Duplicated."
POST_ONLY_MARKET = "invalid post-only order: only GTC and GTD orders can be post-only"
UNKNOWN_TOKEN = "invalid token id"
INVALID_AMOUNTS = "invalid order amounts"
# cancel refusals (cancel result ``not_canceled`` reasons)
CANCEL_NOT_FOUND = "order not found"
CANCEL_NOT_OPEN = "order is not open (already matched or canceled)"


def invalid_tick(price: int, tick: int) -> str:
    return (
        f"order is invalid. Price ({format_units(price)}) breaks minimum tick size rule: "
        f"{format_units(tick)}"
    )


def invalid_size(size: int, minimum: int) -> str:
    return f"order is invalid. Size ({format_units(size)}) lower than the minimum: {format_units(minimum)}"


def invalid_lot(size: int) -> str:
    return f"order is invalid. Size ({format_units(size)}) must be a multiple of 0.01"


class OrderResult(msgspec.Struct, gc=False):
    """The answer to one placed order (interface.md 2.2, venue.md 10.1)."""

    success: bool
    error_msg: str
    order_id: str
    status: str  # live | matched | delayed | unmatched
    making_amount: int = 0  # units given by the order's owner in immediate fills
    taking_amount: int = 0  # units received in immediate fills (after taker fees)
    trade_ids: list[str] = []

    @property
    def accepted(self) -> bool:
        return self.success and not self.error_msg and bool(self.order_id) and self.status in (
            "live",
            "matched",
            "delayed",
        )


def rejected(order_id: str, message: str) -> OrderResult:
    return OrderResult(False, message, order_id, "unmatched")


class CancelResult(msgspec.Struct):
    """``{"canceled": [ids], "not_canceled": {id: reason}}`` (venue.md 6)."""

    canceled: list[str] = []
    not_canceled: dict[str, str] = {}
