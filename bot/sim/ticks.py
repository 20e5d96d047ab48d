"""Tick-size changes near the price extremes (venue.md 9.2 ``tick_size_change``).

Rule: when a market's YES best bid goes above ``high`` or its best ask below ``low`` (the NO book
mirrors this: NO best ask below ``1 - high`` or best bid above ``1 - low``), the market's tick
becomes ``fine``. With ``revert`` it goes back to the market's base tick once both best prices
are inside [low, high] again. Resting orders are never touched: a price on the coarse grid is
also on the fine grid, and after a revert the finer resting prices simply keep matching; only
new orders must be on the grid in force when they arrive.
"""

from __future__ import annotations

import msgspec


class TickConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    enabled: bool = True
    high: int = 960_000  # 0.96
    low: int = 40_000  # 0.04
    fine: int = 1_000  # 0.001
    revert: bool = False


def next_tick(config: TickConfig, base: int, current: int, best_bid: int, best_ask: int) -> int:
    """The tick a market should use given its YES best bid/ask (0 = no such side)."""
    if not config.enabled or base <= config.fine:
        return current
    extreme = best_bid > config.high or (best_ask and best_ask < config.low)
    if extreme:
        return config.fine
    if config.revert and current != base:
        return base
    return current
