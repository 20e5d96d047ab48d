"""Trading writes and our own orders: the router emits a replace as cancels then places in one
poll, but requests race on the wire, so a new quote can reach the venue before the cancel of the
order it replaces and cross it (refused post-only, or a trade with ourselves); the live shell
also keeps a cancel behind the unanswered POST of its order.

Invariant: ``crossed_own`` names the orders of ours, their cancels on the wire, that a place
batch would trade with; the live shell holds such a batch until those cancels are answered (only
such batches wait, only for cancels sent before them: other writes, and every cancel, go at once).
"""

from __future__ import annotations

from typing import Any

from bot.execution.protocol import SendPlaces
from bot.venue.enums import Side
from bot.venue.units import UNIT


def crosses(order: Any, resting: Any, complement: str | None) -> bool:
    """Whether ``order`` would trade with our ``resting`` order: the same token on the other side
    at a crossing price, or the complementary token on the same side at prices that add up past
    one share (two bids: a mint; two asks: a merge)."""
    if resting.token_id == order.token_id:
        if resting.side is order.side:
            return False
        return order.price >= resting.price if order.side is Side.BUY else order.price <= resting.price
    if complement is not None and resting.token_id == complement and resting.side is order.side:
        total = order.price + resting.price
        return total >= UNIT if order.side is Side.BUY else total <= UNIT
    return False


def crossed_own(action: SendPlaces, cancelling: dict[str, Any], complement_of: Any) -> set[str]:
    """The ids of ``cancelling`` (order id -> our order whose cancel is on the wire) that an order
    of ``action`` would cross; ``complement_of(token)`` names the other token of its market."""
    out: set[str] = set()
    for o in action.batch.orders:
        other = complement_of(o.token_id)
        for oid, r in cancelling.items():
            if crosses(o, r, other):
                out.add(oid)
    return out
