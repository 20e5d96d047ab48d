"""What a strategy asks for. Intents are values: the router and risk decide what is sent.

Invariant: prices and sizes are integer micro-units on the token's tick grid; a strategy never
talks to the venue, it only returns these.
"""

from __future__ import annotations

import msgspec

from bot.venue.amounts import AmountError, market_amounts
from bot.venue.enums import OrderType, Side
from bot.venue.units import UNIT, lot_floor

CENT = 10_000  # a market BUY's USDC amount is a whole number of cents (venue.md: 2 decimals)


class Quote(msgspec.Struct, frozen=True):
    """One resting order the strategy wants live (GTC unless ``expiration`` is set)."""

    token_id: str
    side: Side
    price: int
    size: int
    post_only: bool = False
    expiration: int = 0  # unix seconds; non-zero makes it GTD


class QuoteTarget(msgspec.Struct, frozen=True):
    """The complete desired set of resting quotes for one token; empty means none."""

    token_id: str
    quotes: tuple[Quote, ...] = ()


class Take(msgspec.Struct, frozen=True):
    """An immediate order: BUY spends ``amount`` USDC units, SELL sells ``amount`` share units.

    ``price`` is the worst acceptable price in micro-units. Takes of one hook that share a
    non-empty ``group`` are one set (the legs of an arbitrage): the router sends them in one POST,
    when the throttles grant all of them at once, never some now and the rest later; a set has
    at most ``MAX_BATCH`` legs (``bot.core.vocabulary``).
    """

    token_id: str
    side: Side
    price: int
    amount: int
    order_type: OrderType = OrderType.FOK
    group: str = ""



def whole_lots(x: Quote | Take) -> Quote | Take:
    """``x`` with its shares cut to whole lots (``lot_floor``): the most an order may sell of a
    6-decimal holding (venue.md 3.2, 3.5). Every other field is kept; ``x`` itself when its shares
    are whole lots already."""
    if type(x) is Take:
        whole = lot_floor(x.amount)
        return x if whole == x.amount else msgspec.structs.replace(x, amount=whole)
    whole = lot_floor(x.size)
    return x if whole == x.size else msgspec.structs.replace(x, size=whole)


class CancelOrder(msgspec.Struct, frozen=True):
    order_id: str


class CancelAll(msgspec.Struct, frozen=True):
    """Cancel every own order on ``token_id``, or everywhere when it is ``None``."""

    token_id: str | None = None


Intent = QuoteTarget | Take | CancelOrder | CancelAll


def unsendable(take: Take, tick: int) -> str | None:
    """Why no order can carry ``take`` on a ``tick`` grid, or ``None``: its amounts cannot keep
    its price within a tick of its limit (``bot.venue.amounts.market_amounts``: too small an
    amount at that price), which the venue refuses and signing cannot build."""
    try:
        market_amounts(take.side, take.amount, take.price, tick)
    except AmountError as exc:
        return str(exc)
    return None


def buy_at_least(token_id: str, price: int, shares: int) -> Take:
    """A FAK buy of at least ``shares`` at ``price`` or better: the USDC amount in whole cents,
    rounded up until it buys ``shares`` at ``price``."""
    amount = -(-shares * price // UNIT // CENT) * CENT
    if amount * UNIT // price < shares:
        amount += CENT
    return Take(token_id, Side.BUY, price, amount, OrderType.FAK)
