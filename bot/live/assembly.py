"""The live engine's assembly: an engine wired to trade on one venue.

Invariant: the order builder signs with OS-random salts on the wall clock, and the router spends
the venue limiter's write throttles, so what the router grants is what the venue allows.
"""

from __future__ import annotations

from typing import Any

from bot.core.markets import MarketInfo
from bot.engine.engine import Engine
from bot.live.venue import Venue


def make_engine(
    strategy: Any,
    markets: list[MarketInfo],
    venue: Venue,
    *,
    private_key: Any,  # 0x-hex key or a ``Wallet``
    chain_id: int = 137,
    risk_limits: Any = None,
    router_config: Any = None,
    reconciler_config: Any = None,
    engine_config: Any = None,
    feed_config: Any = None,
    metrics: Any = None,
    journal: Any = None,
    day_start: Any = None,
    clock: Any = None,
    signature_type: int = 0,
    funder: str | None = None,
    builder_code: str | None = None,
    log_: Any = None,
) -> Engine:
    """An engine wired for live trading on ``venue`` (``bot.engine.assembly.build_engine``): a
    real ``OrderBuilder`` signs with OS-random salts on the wall clock, the router spends the venue
    limiter's write throttles, the reconciler and the day's PnL journal when ``journal`` is given
    (restored from it: see ``Engine.restore``)."""
    from bot.core.clock import LiveClock
    from bot.engine.assembly import Signing, build_engine
    from bot.venue.eip712 import Wallet
    from bot.venue.orders import OrderBuilder

    wallet = private_key if isinstance(private_key, Wallet) else Wallet(private_key)
    builder = OrderBuilder(wallet, chain_id, maker=funder, signature_type=signature_type,
                           builder_code=builder_code or None)
    if metrics is not None:
        venue.observe(metrics)
    return build_engine(
        strategy, markets, clock=clock or LiveClock(), signing=Signing(builder), throttles=venue.throttles(),
        risk=risk_limits, router=router_config, reconciler=reconciler_config, engine=engine_config, feed=feed_config,
        owner=venue.creds.api_key,
        journal=journal, day_start=day_start, metrics=metrics, log=log_,
    )
