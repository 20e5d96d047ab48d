"""How the router's order requests become orders with ids: signed for a venue, or only numbered.

Invariants: an order's id is known before it is sent (the signed order's hash, or the unsigned
id), unique within a run; the order's timestamp is the engine clock's, so a GTD expiry is judged on
the clock the run lives by; salts come from OS randomness live and from a seeded generator in
simulation, so a simulated run gives the same ids for the same seed and events.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Callable

import msgspec

from bot.core.clock import Clock
from bot.core.markets import MarketIndex
from bot.execution.router import OrderRequest


class Unsigned(msgspec.Struct, frozen=True):
    """An order a simulated venue takes without a signature: only its id (``hash``)."""

    hash: str


def order_signer(builder: Any, markets: MarketIndex, clock: Clock, tick_of: Callable[[str], int],
                 salts: Callable[[], int] | None = None) -> Callable[[OrderRequest], Any]:
    """The router's ``sign``: an ``OrderRequest`` as a ``SignedOrder`` from ``builder``
    (``bot.venue.orders.OrderBuilder``) with the live tick, the market's neg-risk flag and
    condition id, stamped with ``clock``; ``salts`` (None: OS randomness) gives each salt."""

    def sign(req: OrderRequest) -> Any:
        m = markets.by_token(req.token_id)
        stamp = int(clock.now() * 1000)
        salt = salts() if salts is not None else None
        if req.order_type.is_market:
            return builder.market(req.token_id, req.side, req.amount, req.price, tick_of(req.token_id), m.neg_risk,
                                  order_type=req.order_type, condition_id=m.condition_id, salt=salt,
                                  timestamp_ms=stamp)
        return builder.limit(req.token_id, req.side, req.price, req.size, tick_of(req.token_id), m.neg_risk,
                             order_type=req.order_type, expiration=req.expiration, post_only=req.post_only,
                             condition_id=m.condition_id, min_size_units=0, salt=salt, timestamp_ms=stamp)

    return sign


def seeded_salts(seed: int) -> Callable[[], int]:
    """Salts in [0, 2**53) from ``random.Random(seed)``: the same sequence for the same seed."""
    rng = random.Random(seed)
    return lambda: rng.getrandbits(53)


def unsigned_ids(seed: int) -> Callable[[OrderRequest], Unsigned]:
    """The router's ``sign`` for a run that skips signing: ids ``0x`` + 64 hex digits, the first
    48 from the SHA-256 of the seed (hashed once per run), the last 16 an order counter, so unique
    in the run (up to 2**64 orders) and the same for the same seed."""
    head = "0x" + hashlib.sha256(f"unsigned|{seed}".encode()).hexdigest()[:48]
    n = 0

    def sign(req: OrderRequest) -> Unsigned:
        nonlocal n
        n += 1
        return Unsigned(f"{head}{n:016x}")

    return sign
