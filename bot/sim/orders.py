"""Orders as the engine sees them: the request a caller submits and the live order it becomes.

Invariants: all prices and sizes are integer micro-units. An order's ``size`` is a positive
multiple of ``LOT`` (0.01 share); its ``remaining`` is positive while it rests and may leave
the lot grid once a market BUY (filled to the unit) takes part of it;
``matched + remaining + canceled == size``.
For FOK/FAK BUY the request's ``size`` is the USDC amount to spend and ``price`` the worst price
per share (venue.md 3.3); for every other order ``size`` is shares.
"""

from __future__ import annotations

import msgspec

from bot.venue.enums import OrderStatus, OrderType, Side
from bot.venue.units import LOT, UNIT


BUY = Side.BUY
SELL = Side.SELL


class AmountsError(ValueError):
    """makerAmount/takerAmount that do not describe an order the engine can take."""


class NewOrder(msgspec.Struct, frozen=True, gc=False):
    """One order as submitted. ``order_id`` is the order hash given by the caller.

    ``account`` holds the funds (the maker address); ``owner`` labels who placed it (the API key)
    and defaults to ``account``. ``expiration`` is unix seconds, ``0`` for none (GTD requires it).
    The matching engine unpacks the fields in this order (``msgspec.structs.astuple``).
    """

    order_id: str
    account: str
    token: str
    side: Side
    price: int
    size: int
    order_type: OrderType = OrderType.GTC
    post_only: bool = False
    expiration: int = 0
    owner: str = ""

    @classmethod
    def from_amounts(
        cls,
        order_id: str,
        account: str,
        token: str,
        side: Side,
        maker_amount: int,
        taker_amount: int,
        order_type: OrderType = OrderType.GTC,
        post_only: bool = False,
        expiration: int = 0,
        owner: str = "",
    ) -> "NewOrder":
        """Build a request from the signed amounts (venue.md 3.2/3.3/3.5).

        Limit BUY: maker = USDC, taker = shares; the price must be exact (tick checks happen
        in the engine). Limit SELL: maker = shares, taker = USDC. Market BUY: size = maker (USDC)
        and the worst price is floor(maker/taker); market SELL: size = maker (shares) and the worst
        price is ceil(taker/maker) (the least the seller accepts).
        """
        if maker_amount <= 0 or taker_amount <= 0:
            raise AmountsError("amounts must be positive")
        if order_type.is_market:
            if side is BUY:
                price, size = maker_amount * UNIT // taker_amount, maker_amount
            else:
                price, size = -(-taker_amount * UNIT // maker_amount), maker_amount
            price = min(max(price, 1), UNIT - 1)
        else:
            usdc, shares = (maker_amount, taker_amount) if side is BUY else (taker_amount, maker_amount)
            price, rem = divmod(usdc * UNIT, shares)
            if rem:
                raise AmountsError("implied price is not an exact number of units")
            size = shares
        return cls(order_id, account, token, side, price, size, order_type, post_only, expiration, owner)


class Order(msgspec.Struct, gc=False):
    """A live (or finished) order inside the engine. Mutable; owned by the engine.

    A msgspec Struct rather than a plain class: construction is several times cheaper, and the
    engine builds one per accepted order. ``remaining`` starts equal to ``size`` (the caller
    passes both).
    """

    id: str
    account: str
    owner: str
    token: str
    market: str
    side: Side
    price: int
    size: int
    remaining: int
    order_type: OrderType
    post_only: bool
    expiration: int
    created_at: float
    outcome: str
    matched: int = 0
    making: int = 0  # units given in fills taken as a taker (USDC on a BUY, shares on a SELL)
    taking: int = 0  # units received in those fills, after taker fees
    status: OrderStatus = OrderStatus.LIVE
    seq: int = 0
    trade_ids: list[str] = []

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (
            f"Order({self.id!r}, {self.account!r}, {self.side.value} {self.remaining}/{self.size}"
            f" @ {self.price}, {self.status.value})"
        )
